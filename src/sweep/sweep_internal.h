/* sweep_internal.h — what the files of src/sweep share:
 *   sweep.c      scheduling, protocol, teams
 *   sweep_plan.c the cost model, longest-first order, shards, the dry-run plan
 *   sweep_spec.c one spec on every rank
 *   sweep_reuse.c gate-independent cells trained once
 *   synthetic.c  synthetic cells for engine benchmarks (docs/SCALING.md) */
#ifndef CURVSWEEP_SWEEP_INTERNAL_H
#define CURVSWEEP_SWEEP_INTERNAL_H

#include "curvsweep/sweep.h"
#include "curvsweep/train.h"

/* A cell and its estimated cost (FLOPs, sweep_cell_cost). */
typedef struct {
  int64_t id;
  double cost;
} cell_cost;

/* Every cell of the spec, longest first (ties by id): a pure function of
 * the spec. *out is allocated (free() it). */
int sweep_sorted_cells(const cs_spec *spec, cell_cost **out);

/* A synthetic cell: sleep `seconds` in short steps (hooks between them),
 * then a done result of finite values depending only on cell_id. */
int sweep_synthetic_cell(const cs_config *cfg, int64_t cell_id, double seconds,
                         const train_hooks *hooks, cs_cell_result *r);

/* Cells that differ only in `gate` and whose arch has no gate share one
 * training (sweep_reuse.c). todo[id] = 1 for the cells to run; *out is
 * NULL when the grid has no gate axis of two or more values (every query
 * below then answers "no reuse"). */
typedef struct sweep_reuse sweep_reuse;
int sweep_reuse_create(const cs_spec *spec, const unsigned char *todo, sweep_reuse **out);
void sweep_reuse_free(sweep_reuse *R);
/* The cell whose result cell id copies, or -1 when id trains itself. */
int64_t sweep_reuse_rep(const sweep_reuse *R, int64_t id);
/* The followers of representative id into ids (room for
 * sweep_reuse_gate_values entries); returns their count. */
int sweep_reuse_followers(const sweep_reuse *R, int64_t id, int64_t *ids);
int sweep_reuse_gate_values(const sweep_reuse *R);

#endif

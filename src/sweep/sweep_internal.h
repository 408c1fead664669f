/* sweep_internal.h — what the files of src/sweep share:
 *   sweep.c      scheduling, protocol, teams
 *   sweep_plan.c the cost model, longest-first order, shards, the dry-run plan
 *   sweep_spec.c one spec on every rank
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

#endif

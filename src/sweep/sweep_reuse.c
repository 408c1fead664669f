/* sweep_reuse.c — gate-independent cells trained once (docs/SWEEP.md,
 * "Cells that do not depend on gate"). An arch without a gate ignores the
 * `gate` key (docs/MODELS.md: its results at the five gate values are the
 * same bits), so of the cells to run that differ only in the gate axis the
 * sweep trains one, the group's representative (the lowest cell id), and
 * records a copy of its result under each other cell's id (the followers).
 * A pure function of the spec and of which cells are to run, so the
 * scheduler and the dry-run plan agree. */
#include "sweep_internal.h"

#include "curvsweep/error.h"

#include <stdlib.h>

struct sweep_reuse {
  int64_t n;        /* cells of the spec */
  int64_t stride;   /* cell-id step of one gate value */
  int G;            /* gate values in the grid */
  int64_t *rep;     /* per cell: the representative whose result it copies, or -1 */
};

int sweep_reuse_create(const cs_spec *spec, const unsigned char *todo, sweep_reuse **out) {
  *out = NULL;
  int axis = spec_find_axis(spec, "gate");
  if (axis < 0 || spec_axis_length(spec, axis) < 2) return CS_OK; /* nothing to share */
  sweep_reuse *R;
  CS_CHECK(CS_CALLOC(R, 1));
  R->n = spec_cell_count(spec), R->G = spec_axis_length(spec, axis), R->stride = 1;
  for (int a = axis + 1; a < spec_axis_count(spec); a++) R->stride *= spec_axis_length(spec, a);
  int rc = CS_CALLOC(R->rep, R->n);
  for (int64_t id = 0; !rc && id < R->n; id++) {
    R->rep[id] = -1;
    if (!todo[id]) continue;
    cs_config cfg;
    rc = spec_cell_config(spec, id, &cfg);
    if (rc || config_arch_gated(cfg.arch)) continue;
    /* the group: the same coordinates at every gate value; the first cell
     * of it to run is the representative (ids ascend with the gate index) */
    int64_t base = id - spec_axis_value_index(spec, axis, id) * R->stride;
    for (int k = 0; k < R->G; k++) {
      int64_t c = base + k * R->stride;
      if (c == id) break;
      if (todo[c]) {
        R->rep[id] = c;
        break;
      }
    }
  }
  if (rc) sweep_reuse_free(R), R = NULL;
  *out = R;
  return rc;
}

void sweep_reuse_free(sweep_reuse *R) {
  if (!R) return;
  free(R->rep);
  free(R);
}

int64_t sweep_reuse_rep(const sweep_reuse *R, int64_t id) {
  return R && id >= 0 && id < R->n ? R->rep[id] : -1;
}

int sweep_reuse_followers(const sweep_reuse *R, int64_t id, int64_t *ids) {
  if (!R || id < 0 || id >= R->n || R->rep[id] >= 0) return 0;
  int64_t base = id - (id / R->stride % R->G) * R->stride;
  int k = 0;
  for (int g = 0; g < R->G; g++) {
    int64_t c = base + g * R->stride;
    if (R->rep[c] == id) ids[k++] = c;
  }
  return k;
}

int sweep_reuse_gate_values(const sweep_reuse *R) { return R ? R->G : 0; }

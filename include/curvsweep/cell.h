/* cell.h — running one whole cell (src/train/cell.c): data → model → train →
 * curvature at every prefix → cs_cell_result. The sweep, verify and the
 * command line's `train` call it. */
#ifndef CURVSWEEP_CELL_H
#define CURVSWEEP_CELL_H

#include "curvsweep/config.h"
#include "curvsweep/geom.h"
#include "curvsweep/model.h"
#include "curvsweep/result.h"
#include "curvsweep/train.h"

typedef struct {
  int save_points;  /* per-point curvature and inputs into the result */
  int save_params;  /* trained tensors into the result */
} cell_options;

/* Curvature of the model's representation after every layer (docs/NUMERICS.md):
 * cfg->points evaluation points from the task's test distribution (their
 * own stream), jets through the model, geom at every prefix l = 1..L; for
 * m = 2 also ∫K dA from as many uniform points in the task's input box.
 * Fills res->depth, res->curv, with save_points the per-point arrays, and
 * with cfg->field = N > 0 (m = 2) the curvature field: the same quantities
 * and the predicted class on the N × N grid of the input box (result.h). */
int cell_measure_curvature(const cs_model *model, const cs_config *cfg, int save_points,
                           cs_cell_result *res);

/* Curvature at every prefix of n points x (n × m), with calibrated rounding
 * errors (docs/NUMERICS.md, "Rounding error"): jets and geometry under
 * round-to-nearest, then the doubtful points and every 32nd point again
 * under upward and downward rounding (all points if those show the
 * a-priori estimate too small for this model). stream_name keys the Monte
 * Carlo frames. work: a jet workspace (model_acts_create with jet_order 2)
 * to reuse, or NULL to allocate one for the call. out: L × n geom_points,
 * prefix-major. */
int cell_curvature_points(const cs_model *model, cs_acts *work, const cs_config *cfg, int n,
                          const double *x, const char *stream_name, geom_point *out);

/* Run one cell end to end: generate data, build and train the model,
 * measure curvature at every prefix. The result depends only on cfg. */
int cell_run(const cs_config *cfg, int64_t cell_id, const cell_options *opt,
             const la_team *team, const train_hooks *hooks, cs_cell_result *res);

#endif

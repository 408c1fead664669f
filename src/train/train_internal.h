/* train_internal.h — what the files of src/train share (not a public header).
 *
 *   train.c   Adam and the classification training loop (train.h)
 *   estim.c   the estimator of the teacher task (estim.h): restarts of
 *             full-batch Adam to convergence, the planted teacher
 *   voronoi.c the identifiable quantities of an mha model and the Voronoi
 *             loss between two (estim.h)
 *   cellstats.c  the per-cell measures besides curvature (cellstats.h):
 *             calibration sums, loss spikes, gate-score summaries
 *   cell.c    one whole cell (cell.h) */
#ifndef CURVSWEEP_TRAIN_INTERNAL_H
#define CURVSWEEP_TRAIN_INTERNAL_H

#include "curvsweep/model.h"
#include "curvsweep/result.h"

#include <stdint.h>

/* One Adam step (β = 0.9, 0.999, ε = 1e-8) of learning rate lr at step t ≥ 1
 * over the parameters θ, run by run of equal weight-decay flag (runs:
 * n_runs + 1 boundaries, run_decays one flag per run; decoupled decay wd),
 * moments m, v; leaves g zero for the next backward. */
void train_adam_step(int n_runs, const int64_t *runs, const unsigned char *run_decays,
                     double *theta, double *g, double *m, double *v, double lr, double wd,
                     int64_t t);

/* estim.c: copies of the model's tensors appended to res->tensors, each
 * named prefix + its name (the trained parameters of save_params). */
int train_copy_tensors(cs_model *M, const char *prefix, cs_cell_result *res);

#endif

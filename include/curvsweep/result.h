/* result.h — what one cell produces: status, metrics, training curve,
 * per-prefix curvature statistics, and optionally per-point curvature and
 * the trained parameters. Produced by train + geom, shipped to rank 0,
 * written by archive. */
#ifndef CURVSWEEP_RESULT_H
#define CURVSWEEP_RESULT_H

#include "curvsweep/geom.h"
#include "curvsweep/tensor.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
  CELL_PENDING = 0,
  CELL_DONE = 1,
  CELL_FAILED = 2,
  CELL_DIVERGED = 3
} cs_cell_status;

const char *result_status_name(cs_cell_status s); /* "pending", "done", ... */

typedef struct {
  int epoch;
  double train_loss, train_acc, test_acc;
} cs_curve_point;

typedef struct {
  int64_t cell_id;
  cs_cell_status status;
  int rank;            /* world rank of the team leader that ran it */
  int attempts;
  double wall_s;
  double train_loss, train_acc, test_acc;
  int64_t n_params;
  char message[256];   /* why it failed or diverged; empty when done */

  int n_curve;
  cs_curve_point *curve;

  int depth;           /* L; curv has L entries, curv[l-1] is prefix l */
  geom_stats *curv;

  /* optional (save_points): n_points evaluation inputs and L × n_points values
   * (NaN at degenerate points; pt_class says which points those are) */
  int n_points, m;
  double *pt_x;        /* n_points × m */
  double *pt_S, *pt_S_err, *pt_S_tilde, *pt_tr_g, *pt_logdet_g, *pt_H_norm; /* L × n_points each */
  int8_t *pt_class;    /* L × n_points geom_class codes */

  /* optional (save_params) */
  int n_tensors;
  cs_tensor *tensors;
} cs_cell_result;

void result_free(cs_cell_result *r);  /* frees the arrays, keeps the struct */

/* The per-point float64 arrays (L × n_points each) in one fixed order, and
 * their dataset names under /points/<cell_id>/ ("S", "S_err", "S_tilde",
 * "tr_g", "logdet_g", "H_norm"). pt_x and pt_class are separate. */
#define RESULT_N_POINT_ARRAYS 6
extern const char *const RESULT_POINT_NAMES[RESULT_N_POINT_ARRAYS];
void result_point_arrays(cs_cell_result *r, double **out[RESULT_N_POINT_ARRAYS]);

/* Flat byte serialisation (for MPI transfer). *buf is malloc'ed. */
int result_pack(const cs_cell_result *r, unsigned char **buf, size_t *len);
int result_unpack(const unsigned char *buf, size_t len, cs_cell_result *r);

#endif

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

/* The estimator's record of a cell of family mha, task teacher
 * (docs/MODELS.md, "Estimation"; the archive's /estimation table). Every
 * other cell has present = 0 and stores no row. */
typedef struct {
  int present;         /* 1: an estimation cell */
  int restarts;        /* restarts run */
  int kept;            /* the restart of the lowest training loss (0: near the teacher) */
  int converged;       /* 1: the kept restart stopped on the gradient norm or the
                          loss plateau, 0: on the step cap */
  int misspecified;    /* 1: fewer student heads than teacher heads (H < H*):
                          not a point of the rate */
  int64_t steps;       /* Adam steps of the kept restart */
  int64_t steps_total; /* over every restart */
  double grad_norm;    /* ‖∇ train_mse‖ at the kept parameters */
  double train_mse;    /* mean squared error on the n training sets (the loss) */
  double teacher_mse;  /* the teacher's own mean squared error there (the noise, ≈ σ²) */
  double fn_error;     /* ‖f − f*‖ in L2: root mean square over test_points fresh sets */
  double param_error;  /* the Voronoi loss of docs/MODELS.md */
} cs_estimation;

/* The gate scores of one gated block over held-out inputs (docs/MODELS.md,
 * "Gate scores and attention entropy"; the archive's /gates table): the
 * values σ of the block's gate at every position of cfg->points evaluation
 * inputs (src/train/cellstats.c, cellstats_gate_scores). */
#define RESULT_GATE_BINS 20
#define RESULT_GATE_LOW 0.1 /* frac_low counts the gate values below it */
typedef struct {
  int prefix;            /* the block, 1..L */
  int64_t n_scores;      /* values summarised: inputs × positions × channels */
  double mean, median, q10, q90; /* quantiles of type 7 */
  double frac_low;       /* share of the values below RESULT_GATE_LOW */
  double var_query;      /* share of their variance between positions (queries): the
                            row means of the (input, position) × channel table */
  double var_channel;    /* share between channels (the column means); the rest is
                            their interaction; both 0 when the values do not vary */
  double hist[RESULT_GATE_BINS]; /* share of the values in [k/20, (k+1)/20), the last bin
                                    closed at 1 */
} cs_gate_scores;

/* Calibration of the test predictions and stability of training
 * (docs/MODELS.md, "Calibration" and "Stability"; the archive's /cellstats
 * table). present = 0 for a cell of family mha and for a failed cell;
 * a diverged cell has its stability and NaN calibration. */
typedef struct {
  int present;
  int spikes;            /* loss spikes of the training curve (cellstats_loss_spikes) */
  double loss_ratio_max; /* its largest loss ratio to the best of the preceding window
                            (NaN with fewer than two finite evaluations) */
  double test_nll;       /* mean negative log-likelihood of the test targets */
  double test_brier;     /* mean Σ_k (p_k − y_k)² (the multi-class Brier score) */
  double test_ece;       /* expected calibration error, 15 equal-width confidence bins */
} cs_cell_stats;

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
  /* bit k: field k of GEOM_STATS_FIELDS is not stored by the archive this
   * result was read from (a column an older format_version lacks, read as
   * NaN); 0 for a result computed here */
  uint64_t stats_absent;

  /* optional (save_points): n_points evaluation inputs and L × n_points values
   * (NaN at degenerate points; pt_class says which points those are) */
  int n_points, m;
  double *pt_x;        /* n_points × m */
  double *pt_S, *pt_S_err, *pt_S_tilde, *pt_tr_g, *pt_logdet_g, *pt_H_norm; /* L × n_points each */
  int8_t *pt_class;    /* L × n_points geom_class codes */

  /* optional ([curvature] field = N > 0, m = 2): the curvature field on an
   * N × N grid over the task's input box [field_lo, field_hi]², grid point
   * g = i·N + j at x = (field_lo + (j + ½)·h, field_lo + (i + ½)·h),
   * h = (field_hi − field_lo)/N (docs/ARCHIVE.md, "/fields"). L × N² values
   * each, prefix-major; NaN at degenerate points, values kept as computed at
   * unresolved ones (fd_class says which points those are). */
  int field_n;         /* N, 0..RESULT_FIELD_MAX (= CONFIG_FIELD_MAX of config.h) */
  double field_lo, field_hi;
  double *fd_K, *fd_K_tilde, *fd_K_hat, *fd_logdet_g, *fd_aniso, *fd_S_err; /* L × N² each */
  int8_t *fd_class;    /* L × N² geom_class codes */
  int8_t *fd_pred;     /* N² predicted class (argmax of the logits) */

  /* family mha (task teacher): the estimator's numbers; present = 0 otherwise */
  cs_estimation est;

  /* calibration and stability (present = 0: not measured) */
  cs_cell_stats cstats;
  /* the gate scores of every gated block (n_gates = L for a gated arch with
   * attention blocks, else 0), in block order */
  int n_gates;
  cs_gate_scores *gates;

  /* optional (save_params) */
  int n_tensors;
  cs_tensor *tensors;
} cs_cell_result;

void result_free(cs_cell_result *r);  /* frees the arrays, keeps the struct */
void result_free_tensors(cs_cell_result *r); /* frees the trained tensors only */

/* The per-point float64 arrays (L × n_points each) in one fixed order, and
 * their dataset names under /points/<cell_id>/ ("S", "S_err", "S_tilde",
 * "tr_g", "logdet_g", "H_norm"). pt_x and pt_class are separate. */
#define RESULT_N_POINT_ARRAYS 6
extern const char *const RESULT_POINT_NAMES[RESULT_N_POINT_ARRAYS];
void result_point_arrays(cs_cell_result *r, double **out[RESULT_N_POINT_ARRAYS]);

/* The field's float64 arrays (L × N² each) in one fixed order, and their
 * dataset names under /fields/<cell_id>/ ("K", "K_tilde", "K_hat",
 * "logdet_g", "aniso", "S_err"). fd_class and fd_pred are separate. */
#define RESULT_N_FIELD_ARRAYS 6
#define RESULT_FIELD_MAX 512
extern const char *const RESULT_FIELD_NAMES[RESULT_N_FIELD_ARRAYS];
void result_field_arrays(cs_cell_result *r, double **out[RESULT_N_FIELD_ARRAYS]);
/* Grid coordinate k (0..N-1) of a field along either axis: lo + (k + ½)·h,
 * h = (hi − lo)/N (in that order of operations). */
double result_field_coord(const cs_cell_result *r, int k);

/* Flat byte serialisation (for MPI transfer). *buf is malloc'ed. */
int result_pack(const cs_cell_result *r, unsigned char **buf, size_t *len);
int result_unpack(const unsigned char *buf, size_t len, cs_cell_result *r);

#endif

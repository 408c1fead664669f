/* estimation.h — estimation rates (analysis/VERDICTS.md, "Estimation
 * rates"): how fast a teacher–student cell's errors fall with the number
 * of training points n, per (arch, gate, H, H*) group; the numbers
 * (estimation_fit.c), the section (estimation.c) and its figure
 * (plots_estimation.c). Internal to analysis/; a row of the section table
 * (sections.c), its state in the row's slot (analysis_section_state).
 *
 * The statistics read plain rows (analysis_est_row), one per done cell, so
 * that they can be driven without an archive (the calibration test). */
#ifndef CURVSWEEP_ANALYSIS_ESTIMATION_H
#define CURVSWEEP_ANALYSIS_ESTIMATION_H

#include "data.h"
#include "sections.h"

#include <stdio.h>

#define ANALYSIS_ESTIMATION_NAME "estimation rates"
/* The claim (and Holm family) of the verdict and its checks. */
#define ANALYSIS_EST_CLAIM "estimation-rate"

/* The polynomial bound of the verdict: an over-specified group estimates
 * at a polynomial rate when the slope of log error on log n over the upper
 * half of the n range is below this (error falling at least as n^{-1/4};
 * analysis/VERDICTS.md, "Estimation rates"). */
#define ANALYSIS_EST_POLY_SLOPE (-0.25)
/* The parametric rate of the function error and the band around it that
 * the exact-H control's slope interval must reach. */
#define ANALYSIS_EST_PARAMETRIC (-0.5)
#define ANALYSIS_EST_PARAMETRIC_TOL 0.1

/* The two errors of a cell (docs/MODELS.md): the L2 function error on fresh
 * inputs and the Voronoi loss on the identifiable parameters. */
typedef enum { EE_FUNCTION = 0, EE_VORONOI, EE_COUNT } analysis_est_error;

/* The three fits of each error: the whole n range, its lower and its upper half. */
typedef enum { EF_FULL = 0, EF_LOWER, EF_UPPER, EF_COUNT } analysis_est_fit;
/* The range the exact-H control is read on: the upper half, where the
 * verdict reads its slopes (at the smallest n a least-squares fit has not
 * reached its n^-1/2 regime yet: analysis/VERDICTS.md, "Estimation rates"). */
#define ANALYSIS_EST_CONTROL_FIT EF_UPPER

/* H = H* (the control), H > H* (where the theory separates the archs),
 * H < H* (misspecified: never in a rate, reported apart). */
typedef enum { ER_EXACT = 0, ER_OVER, ER_MISSPECIFIED, ER_COUNT } analysis_est_regime;

/* One done cell. */
typedef struct {
  int unit;          /* the setting of every other axis (task, depth, …): index of its name */
  cs_arch arch;
  int gate;          /* cs_gate_pos; -1 for ungated (it ignores the gate) */
  int heads, teacher_heads, n;
  int seed;          /* index of the seed, 0 .. n_seed − 1 */
  double err[EE_COUNT]; /* NaN: not measured */
  int converged;     /* the estimator's stopping rule was met */
  int misspecified;  /* the cell says H < H* */
} analysis_est_row;

/* One error's fit over a range of n: the slope of the mean over seeds of
 * log error on log n with its seed-bootstrap interval (boot), and the
 * seeds' own slopes (slope_seed, NaN where a seed has under two points in
 * the range), their mean with its t interval (seed_ci). */
typedef struct {
  analysis_boot boot;
  analysis_ci seed_ci;
  double *slope_seed; /* (n_seed) */
} analysis_est_slope;

/* Per n of a group and error: seeds with a finite positive error, their
 * median with its order-statistic interval, the mean with its t interval,
 * the geometric mean with the t interval of the mean log, exponentiated. */
typedef struct {
  analysis_ci median, mean, gmean;
  double median_coverage;
} analysis_est_point;

typedef struct {
  int unit;
  cs_arch arch;
  int gate;                      /* -1: ungated */
  int heads, teacher_heads;
  analysis_est_regime regime;
  int n_x;
  int *x;                        /* (n_x) n ascending */
  int *cells, *unconverged;      /* (n_x) done cells, of them not converged */
  int n_cells, n_unconverged, n_seeds; /* n_seeds: seeds with a cell */
  double *err[EE_COUNT];         /* [i·n_seed + s], NaN: none */
  analysis_est_point *pt[EE_COUNT];        /* (n_x) */
  analysis_est_slope fit[EE_COUNT][EF_COUNT]; /* none for misspecified groups */
  int lo_end, up_start;          /* the lower half is x[0 .. lo_end], the upper x[up_start .. n_x − 1] */
  double log_ref_upper;          /* the slope 1/log n has on the upper half's n */
  int parametric;                /* exact groups (estimation.c): the function error's seed-slope
                                    interval reaches the parametric band (1), misses it (0), none (-1) */
} analysis_est_group;

/* The (task, regime) of the table the figure is drawn at (the first with an estimation cell). */
typedef struct {
  int t, r;
} analysis_estimation_place;

typedef struct {
  int n_seed;
  int n_unit;
  char (*unit_name)[ANALYSIS_NAME_LEN]; /* "all", or the other axes' values ("noise=0.1") */
  int n_group;
  analysis_est_group *group;     /* sorted by regime, arch, gate, H*, H */
  int n_cells, n_misspecified, n_unconverged; /* done cells (ungated once), of them H < H*, not converged */
  int n_flag_mismatch;           /* cells whose misspecified flag disagrees with H < H* */
  analysis_estimation_place plot; /* where the figure is drawn (set by estimation.c) */
  /* the verdict's preconditions (estimation.c): why it cannot be tested ("": it can) */
  char untestable[512];
  char too_few[256];
} analysis_estimation;

/* Build the groups of rows[0..n-1] (seeds 0..n_seed−1, units
 * 0..n_unit−1, named "unit 0", … until the caller names them) and every
 * statistic of them (B bootstrap replicates, streams keyed by
 * bootstrap_seed); *out freed by analysis_estimation_state_free. */
int analysis_estimation_build(const analysis_est_row *rows, int n, int n_seed, int n_unit, int B,
                              uint64_t bootstrap_seed, analysis_estimation **out);
void analysis_estimation_state_free(analysis_estimation *E);

/* The group's name in scopes and tables: "gated g1 H 2/H* 1", "ungated H
 * 1/H* 1", after its unit's name ("noise=0.1: …") when there are several. */
const char *analysis_est_group_name(char *buf, size_t len, const analysis_estimation *E,
                                    const analysis_est_group *g);
const char *analysis_est_regime_name(analysis_est_regime r);
const char *analysis_est_error_name(analysis_est_error e); /* "fn", "voronoi" */

/* E (built) as the section's state of D, owned by it from now on (freed
 * on failure too), with the verdict's preconditions: what compute does
 * with the sweep's cells, and the tests with rows of their own. */
int analysis_estimation_set(analysis_data *D, analysis_estimation *E);

/* The state of the section (NULL: the sweep has no estimation cells). */
const analysis_estimation *analysis_estimation_of(const analysis_data *D);

/* Its row of the section table (estimation.csv, estimation_slopes.csv);
 * its figure, analysis_estimation_plot, is plots_estimation.c. */
ANALYSIS_SECTION_DECLARE(estimation);

#endif

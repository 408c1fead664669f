/* learning.h — sample efficiency of a sweep with a train_points axis
 * (analysis/README.md, "Sample efficiency"): the numbers (learning.c)
 * shared with its figure (plots_learning.c). Internal to analysis/; a row
 * of the section table (sections.c), its state in the row's slot
 * (analysis_section_state). */
#ifndef CURVSWEEP_ANALYSIS_LEARNING_H
#define CURVSWEEP_ANALYSIS_LEARNING_H

#include "data.h"
#include "sections.h"

#include <stdio.h>

#define ANALYSIS_LEARNING_NAME "sample efficiency"

/* One learning curve (analysis/README.md, "Sample efficiency"): the cells of
 * one (task, depth, base regime) across the values of the train_points axis,
 * where the base regime is the regime without its train_points component.
 * Index arrays by arch a (0..n_arch-1) and train_points value i (0..n_x-1). */
typedef struct {
  int t, d;
  char base[ANALYSIS_NAME_LEN];     /* "residual=no" or "all" */
  char file_tag[ANALYSIS_NAME_LEN]; /* base made safe for file names */
  int64_t cell_id;                  /* a representative cell (its base regime values) */
  int n_x;
  int *x, *regime;                  /* (n_x) train_points ascending; the regime of each */
  int n_seeds;                      /* seeds with a done cell somewhere in the curve */
  double best_acc;                  /* best mean test accuracy of any arch at any x */
  double target;                    /* the target accuracy */
  int target_given;                 /* 1: --target-acc; 0: 95% of best_acc */
  analysis_ci *acc;                 /* [a·n_x + i] test accuracy over seeds */
  analysis_boot *samples;           /* [a] training points to reach the target (inf: not reached) */
  int *reached;                     /* [a] 1 within the grid, 2 at the smallest x already, 0 not, -1 no data */
  analysis_boot *ratio;             /* [a] samples(ungated) / samples(a), bootstrap paired by seed */
} analysis_lcurve;

/* Share of the best mean accuracy that is the default target. */
#define ANALYSIS_TARGET_SHARE 0.95

/* The section's state: set only when the spec has a train_points axis. */
typedef struct {
  int ax_train;        /* the train_points axis */
  int n_lc;
  analysis_lcurve *lc; /* one per (task, depth, base regime) with a done cell */
} analysis_learning;

/* Training points at which the curve (x[i], y[i]) (x ascending, NaN y: no
 * data) first reaches target, by monotone interpolation: y replaced by its
 * running maximum, log x interpolated linearly between the last point below
 * the target and the first at or above it. x[first finite] when the first
 * point already reaches it (*where = 2), +inf when none does (*where = 0),
 * NaN without data (*where = -1); else *where = 1. */
double analysis_samples_to_target(int n, const int *x, const double *y, double target, int *where);

/* Its row of the section table (learning_curve.csv, samples_to_target.csv);
 * its figure, analysis_learning_plot, is plots_learning.c (learning_curve_*:
 * per task and base regime, one panel per depth). */
ANALYSIS_SECTION_DECLARE(learning);

#endif

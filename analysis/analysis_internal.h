/* analysis_internal.h — data shared by the files of the analysis module
 * (load.c, tables.c, plots.c, report.c); not a public header.
 *
 * The done cells are arranged in a 5-D table indexed by
 * (arch, task, depth, regime, seed), each index into the sorted list of the
 * values present in the archives. A regime is one combination of the values
 * of every axis other than arch, task, depth and seed ("residual=no;slots=3",
 * or "all" when there is no such axis). */
#ifndef CURVSWEEP_ANALYSIS_INTERNAL_H
#define CURVSWEEP_ANALYSIS_INTERNAL_H

#include "curvsweep/analysis.h"
#include "curvsweep/archive.h"
#include "curvsweep/config.h"
#include "curvsweep/result.h"
#include "curvsweep/spec.h"

#include <stdio.h>

#define ANALYSIS_NAME_LEN 256

typedef struct {
  char name[ANALYSIS_NAME_LEN];  /* "residual=no;slots=3" or "all" */
  char file_tag[ANALYSIS_NAME_LEN]; /* the name made safe for file names */
  int64_t cell_id;               /* a representative cell (its settings) */
  cs_config cfg;                 /* that cell's settings (arch/task/depth/seed aside) */
  int skeleton;                  /* heads 1, slots = input_dim + 1, residual no, norm none */
} analysis_regime;

/* Per-group (arch, task, depth, regime) statistics over seeds, at the deepest prefix. */
typedef struct {
  int n_cells, n_done, n_failed, n_diverged;
  analysis_ci acc, K, Kt, Kt_signed, intK, logdet;
} analysis_group;

/* Per-group, per-prefix statistics over seeds. */
typedef struct {
  analysis_ci K, Kt, Kt_signed, logdet;
  double Kt_max;  /* max over seeds of mean |K̃| */
} analysis_prefix;

/* Per (arch, task, regime) amplification. */
typedef struct {
  int n_depths, depth_min, depth_max, n_seeds, prefix_depth;
  analysis_boot K_depth, Kt_depth, logdet_depth;
  analysis_boot K_prefix, Kt_prefix, logdet_prefix;
  double K_ratio, Kt_ratio, K_prefix_ratio, Kt_prefix_ratio;
  double Kt_max;  /* max over done cells and prefixes of mean |K̃| */
  int present;    /* some done cell */
} analysis_amp;

/* One (arch vs ungated, task, depth, regime) paired comparison. */
typedef struct {
  int n;               /* finite differences */
  analysis_ci ci;
  int n_pos, n_neg;
  double sign_p;
} analysis_diff;

typedef struct {
  int arch;            /* index into data->arch of the compared arch */
  int task, depth, regime;
  int n_pairs;         /* seeds with both cells done */
  analysis_diff acc, K, Kt;
} analysis_gap;

typedef struct {
  /* inputs */
  int n_paths;
  const char *const *paths;
  cs_spec *spec;
  int n_results;
  cs_cell_result **results_per_path;
  int64_t *n_per_path;
  /* counts */
  int64_t cells_total, cells_selected, done, pending, failed, diverged;
  /* axes present */
  int n_arch, n_task, n_depth, n_regime, n_seed;
  cs_arch arch[ARCH_COUNT];
  cs_task_kind task[TASK_COUNT];
  int *depth;
  int64_t *seed;
  analysis_regime *regime;
  int ax_arch, ax_task, ax_depth, ax_seed; /* axis indices or -1 */
  int n_other;                              /* axes in the regime */
  int *other_axis;
  /* the table: cell[((((a·T + t)·D + d)·R + r)·S + s)] done result or NULL */
  const cs_cell_result **cell;
  analysis_group *group;     /* [a][t][d][r] */
  analysis_prefix **prefix;  /* [a][t][d][r] -> depth entries (NULL when no done cell) */
  analysis_amp *amp;         /* [a][t][r] */
  int n_gap;
  analysis_gap *gap;
  int has_points;            /* some done cell carries /points */
  analysis_options opt;
} analysis_data;

static inline size_t analysis_gidx(const analysis_data *D, int a, int t, int d, int r) {
  return (((size_t)a * D->n_task + t) * D->n_depth + d) * D->n_regime + r;
}
static inline size_t analysis_cidx(const analysis_data *D, int a, int t, int d, int r, int s) {
  return analysis_gidx(D, a, t, d, r) * D->n_seed + s;
}
static inline size_t analysis_aidx(const analysis_data *D, int a, int t, int r) {
  return ((size_t)a * D->n_task + t) * D->n_regime + r;
}

/* load.c */
int analysis_load(const char *const *paths, int n_paths, analysis_data *D);
void analysis_data_free(analysis_data *D);
/* Index of arch in D->arch, or -1. */
int analysis_find_arch(const analysis_data *D, cs_arch arch);

/* tables.c */
int analysis_compute(analysis_data *D);
/* Deepest-prefix value of a result's statistics: which = 0 K_absmean,
 * 1 Kt_absmean, 2 Kt_mean, 3 intK, 4 logdet_mean; NaN if missing. */
double analysis_cell_value(const cs_cell_result *r, int prefix, int which);
int analysis_write_tables(const analysis_data *D, const char *dir);
/* "%.15g", "nan"/"inf" for non-finite values, into buf. */
const char *analysis_fmt(char *buf, size_t len, double v);

/* plots.c — writes .gp/.dat (always) and renders them when gnuplot is
 * available (*rendered = PNG count); appends warnings to out. Each plot
 * written is listed in plots (name without extension) for index.md. */
typedef struct {
  char name[ANALYSIS_NAME_LEN + 64];
  char caption[ANALYSIS_NAME_LEN + 768];
  int rendered;
} analysis_plot;

int analysis_write_plots(const analysis_data *D, const char *dir, analysis_plot **plots, int *n_plots,
                         analysis_outcome *out);

/* report.c */
void analysis_warn(analysis_outcome *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A file written atomically: written as dir/.name.tmp, renamed on commit, so
 * a failure never leaves a half-written file under the final name. */
typedef struct {
  FILE *f;
  char tmp[4096], path[4096];
} analysis_file;

int analysis_file_open(analysis_file *o, const char *dir, const char *name);
/* fclose, check for write errors, rename into place. */
int analysis_file_commit(analysis_file *o);
/* fclose and remove the temporary (after an error). */
void analysis_file_abort(analysis_file *o);

#endif

/* data.h — the analysis module's data (internal to analysis/): the table of
 * done cells and the per-group statistics computed from it, and its loading
 * (load.c). Every other file of the module reads this; it reads only public
 * headers.
 *
 * The done cells are arranged in a 5-D table indexed by
 * (arch, task, depth, regime, seed), each index into the sorted list of the
 * values present in the archives. A regime is one combination of the values
 * of every axis other than arch, task, depth and seed ("residual=no;slots=3",
 * or "all" when there is no such axis). */
#ifndef CURVSWEEP_ANALYSIS_DATA_H
#define CURVSWEEP_ANALYSIS_DATA_H

#include "curvsweep/analysis.h"
#include "curvsweep/archive.h"
#include "curvsweep/config.h"
#include "curvsweep/result.h"
#include "curvsweep/spec.h"

#include "measures.h"

#define ANALYSIS_NAME_LEN 256
/* Rows of the section table (sections.c) at most. */
#define ANALYSIS_MAX_SECTIONS 16

typedef struct {
  char name[ANALYSIS_NAME_LEN];  /* "residual=no;slots=3" or "all" */
  char file_tag[ANALYSIS_NAME_LEN]; /* the name made safe for file names */
  int64_t cell_id;               /* a representative cell (its settings) */
  cs_config cfg;                 /* that cell's settings (arch/task/depth/seed aside) */
  int skeleton;                  /* heads 1, slots = input_dim + 1, residual no, norm none */
} analysis_regime;

/* Points above this share of the non-degenerate points unresolved: the
 * report says so (claim 1, analysis/README.md). */
#define ANALYSIS_UNRESOLVED_WARN 0.01

/* Per-group (arch, task, depth, regime) statistics over seeds, at the deepest
 * prefix: m[k] for every measure k of summary.csv (measures.c; the others
 * are unset). */
typedef struct {
  int n_cells, n_done, n_failed, n_diverged;
  analysis_ci m[ANALYSIS_N_MEASURES];
  double unresolved_share;  /* Σ unresolved / Σ non-degenerate points over seeds (NaN: unclassified) */
} analysis_group;

/* Per-group, per-prefix statistics over seeds: m[k] for every measure k of
 * prefix.csv, max[k] the largest seed value of those flagged
 * ANALYSIS_MEASURE_SEED_MAX (NaN: no finite one). */
typedef struct {
  analysis_ci m[ANALYSIS_N_MEASURES];
  double max[ANALYSIS_N_MEASURES];
  double unresolved_share;  /* Σ unresolved / Σ non-degenerate points over seeds */
  int n_classified;         /* seeds whose statistics carry the classification */
} analysis_prefix;

/* The quantities of amplification.csv, its measures in their column order
 * (measures.c: AQ_K is the measure of order 1, …); y is the log of the seed
 * mean for those flagged ANALYSIS_MEASURE_LOG_SLOPE (the first four,
 * positive by construction), the seed mean itself for the last two. */
typedef enum { AQ_K = 0, AQ_KT, AQ_KH, AQ_INTABSK, AQ_LOGDET, AQ_ANISO, AQ_COUNT } analysis_amp_q;

/* Per (arch, task, regime) amplification: slopes against log depth (deepest
 * prefix of each model) and against log prefix (deepest models), indexed by
 * analysis_amp_q; ratio = seed mean at the deepest / at the shallowest;
 * first/last = the seed means themselves at the two ends. */
typedef struct {
  int n_depths, depth_min, depth_max, n_seeds, prefix_depth;
  analysis_boot depth[AQ_COUNT], prefix[AQ_COUNT];
  double ratio[AQ_COUNT], prefix_ratio[AQ_COUNT];
  double first[AQ_COUNT], last[AQ_COUNT], prefix_first[AQ_COUNT], prefix_last[AQ_COUNT];
  double Kt_max;  /* max over done cells and prefixes of mean |K̃| */
  int present;    /* some done cell */
} analysis_amp;

/* One (arch vs ungated, task, depth, regime) paired comparison. */
typedef struct {
  int n;               /* finite differences */
  analysis_ci ci;
  int n_pos, n_neg;
  double sign_p;
  analysis_ci dz;      /* paired standardised effect d_z with its interval (inference.c) */
} analysis_diff;

typedef struct {
  int arch;            /* index into data->arch of the compared arch */
  int task, depth, regime;
  int n_pairs;         /* seeds with both cells done */
  analysis_diff d[ANALYSIS_N_MEASURES]; /* every measure of gap.csv (measures.c) */
} analysis_gap;

/* The regimes of one base: those whose values differ only in the gate
 * (gates.c, sinks.c; analysis_gate_group_add, values.c), their gate values ascending. */
typedef struct {
  char name[ANALYSIS_NAME_LEN];  /* the regime without the gate: "residual=yes" or "all" */
  char tag[ANALYSIS_NAME_LEN];   /* name made safe for file names */
  int64_t cell_id;               /* a representative cell (its base regime values) */
  cs_family family;              /* the model family of its first regime */
  int n_pos;
  cs_gate_pos gate[GATE_COUNT];  /* the gate values present, ascending */
  int regime[GATE_COUNT];        /* the regime of each */
} analysis_gate_group;

/* A section's state, found by the section's name (values.c). */
typedef struct {
  const char *name; /* NULL: a free slot */
  void *state;
} analysis_section_slot;

typedef struct {
  /* inputs */
  int n_paths;
  const char *const *paths;
  cs_spec *spec;
  cs_cell_result **results_per_path;
  int64_t *n_per_path;
  /* (n_paths) per archive whose spec numbers its cells differently (specs
   * that differ only in [grid] values: D->spec is the union of their grids,
   * docs/ARCHIVE.md "Merge"), its results' cell ids as the archive numbers
   * them (results_per_path holds D->spec's ids); NULL otherwise */
  int64_t **archive_ids;
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
  /* the same table of the cells that ended in training, done or diverged
   * (failed and pending: NULL): where stability is read (a diverged cell
   * is an outcome, not a missing one) */
  const cs_cell_result **ended;
  analysis_group *group;     /* [a][t][d][r] */
  analysis_prefix **prefix;  /* [a][t][d][r] -> depth entries (NULL when no done cell) */
  analysis_amp *amp;         /* [a][t][r] */
  int n_gap;
  analysis_gap *gap;
  int has_points;            /* some done cell carries /points */
  int has_point_class;       /* some such cell also carries pt_class */
  int borrowed;              /* results_per_path not owned (analysis_run_results) */
  analysis_options opt;
  /* the state of every section of the section table, found by its name
   * (sections.h, analysis_section_state): a section needs no field here */
  analysis_section_slot section_state[ANALYSIS_MAX_SECTIONS];
  /* the checks and verdicts of every claim (checks.c; verdicts.csv) */
  analysis_checks checks;
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

/* ---- load.c ---- */

/* Read n_paths archives of one spec into D (zeroed by the caller, options
 * set): merge their cells and arrange the done ones in the table. */
int analysis_load(const char *const *paths, int n_paths, analysis_data *D);
/* The same for results in memory (borrowed) of the spec spec_text; label[0]
 * names them in messages and index.md. */
int analysis_load_results(const char *spec_text, const cs_cell_result *results, int64_t n,
                          const char *const *label, analysis_data *D);
void analysis_data_free(analysis_data *D);
/* Index of arch in D->arch, or -1 (values.c). */
int analysis_find_arch(const analysis_data *D, cs_arch arch);

#endif

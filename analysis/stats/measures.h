/* measures.h — the report's per-cell measures: ONE table (measures.c), a
 * row per measure, from which the value lookup (analysis_cell_value,
 * values.c), the per-group and per-prefix statistics (compute.c), the
 * columns of summary.csv, prefix.csv, amplification.csv, gap.csv (csv.c),
 * gates.csv (gates.c) and sinks.csv (sinks.c), their lines of COLUMNS.md
 * (columns.c) and the /curvature units of the Python loader
 * (python/curvsweep_archive, checked by test_analysis_measures) are made.
 * Adding a measure: docs/ARCHITECTURE.md, "A new per-cell measure".
 * Internal to analysis/; reads only public headers. */
#ifndef CURVSWEEP_ANALYSIS_MEASURES_H
#define CURVSWEEP_ANALYSIS_MEASURES_H

#include "curvsweep/result.h"

#include <stddef.h>

/* The rows of the table: each measure's name in code. */
typedef enum {
  MEASURE_ACC = 0,     /* the cell's test accuracy (no geom_stats field) */
  MEASURE_K_ABS,       /* K_absmean: mean |K|, raw (1/length²) */
  MEASURE_KT_ABS,      /* Kt_absmean: mean |K̃|, K̃ = K·tr(g)/m */
  MEASURE_KT_MEAN,     /* Kt_mean: mean signed K̃ */
  MEASURE_INTK,        /* intK: ∫K dA (m = 2) */
  MEASURE_LOGDET,      /* logdet_mean: mean log det g */
  MEASURE_KH_ABS,      /* Kh_absmean: mean |K̂|, K̂ = K·det(g)^{1/m} */
  MEASURE_KH_MEAN,     /* Kh_mean: mean signed K̂ */
  MEASURE_ANISO,       /* aniso_median: median log(AM/GM of g's eigenvalues) ≥ 0 */
  MEASURE_INTABSK,     /* intabsK: ∫|K| dA (m = 2) */
  MEASURE_UNRESOLVED,  /* unresolved_frac */
  MEASURE_FLAT,        /* flat_frac */
  MEASURE_CURVED,      /* curved_frac */
  MEASURE_SINK_MASS,   /* sink_mass: attention on the first token, mean over heads */
  MEASURE_MAX_ATTN,    /* max_attn: mean largest attention weight of a query */
  MEASURE_SINK_HEADMAX, /* sink_headmax: largest per-head first-token share */
  MEASURE_MASSIVE_ACT, /* massive_act: max |h| / median |h| */
  MEASURE_VALUE_DRAIN, /* value_drain: ‖v_first‖ / median ‖v_t‖ */
  MEASURE_RESID_PEAK,  /* resid_peak: ‖h_first‖ / median ‖h_t‖ */
  MEASURE_ATTN_ENTROPY, /* attn_entropy: mean attention entropy / log(keys) */
  MEASURE_ABLATE_FIRST, /* ablate_first: Δ test loss without the first-token attention (lm) */
  MEASURE_ABLATE_ATTN,  /* ablate_attn: Δ test loss without the attention output (lm) */
  MEASURE_TEST_NLL,     /* test_nll (/cellstats): mean NLL of the test targets */
  MEASURE_TEST_BRIER,   /* test_brier (/cellstats): multi-class Brier score */
  MEASURE_TEST_ECE,     /* test_ece (/cellstats): expected calibration error, 15 bins */
  ANALYSIS_N_MEASURES
} analysis_measure_id;

/* Where a measure is reported: one table of the report each. */
typedef enum {
  ANALYSIS_USE_SUMMARY = 0, /* summary.csv: seed means at the last layer (analysis_group) */
  ANALYSIS_USE_PREFIX,      /* prefix.csv: seed means after every layer (analysis_prefix) */
  ANALYSIS_USE_AMP,         /* amplification.csv: slopes against log depth and log prefix */
  ANALYSIS_USE_GAP,         /* gap.csv: arch − ungated at the last layer, paired by seed */
  ANALYSIS_USE_GATES,       /* gates.csv (gates.c): per gate position, last layer */
  ANALYSIS_USE_SINKS,       /* sinks.csv (sinks.c): per layer of the lm family */
  ANALYSIS_USE_COUNT
} analysis_use;

/* A measure's place in one use: its column name there (NULL: not used)
 * and its position among the use's measures (1, 2, …: the column order). */
typedef struct {
  const char *column;
  int order;
} analysis_measure_use;

/* Flags of a measure. */
enum {
  ANALYSIS_MEASURE_CLASSIFIED = 1, /* NaN unless the prefix row carries the point classification */
  ANALYSIS_MEASURE_CLIP01 = 2,     /* a proportion: its seed intervals are clipped to [0, 1] */
  ANALYSIS_MEASURE_SEED_MAX = 4,   /* prefix.csv also gives its largest seed value, <column>_max */
  ANALYSIS_MEASURE_LOG_SLOPE = 8,  /* amplification.csv fits the log of its seed mean (> 0) */
  ANALYSIS_MEASURE_ATTENTION = 16, /* an attention statistic: gates.csv shows ungated's beside */
  ANALYSIS_MEASURE_CELL = 32,      /* a value of the cell, not of a prefix: field names a column
                                      of /cellstats (cs_cell_stats), the same at every prefix */
};

typedef struct {
  const char *field;   /* its geom_stats field, a name of GEOM_STATS_FIELDS (geom.h), or with
                          ANALYSIS_MEASURE_CELL one of ANALYSIS_CELL_FIELDS;
                          NULL: the cell's test accuracy */
  const char *unit;    /* what its values are measured in */
  const char *meaning; /* one line for COLUMNS.md */
  int flags;           /* ANALYSIS_MEASURE_* */
  analysis_measure_use use[ANALYSIS_USE_COUNT];
} analysis_measure;

extern const analysis_measure ANALYSIS_MEASURES[ANALYSIS_N_MEASURES];

/* The doubles of cs_cell_stats (result.h) by name, as /cellstats names them:
 * the fields of the ANALYSIS_MEASURE_CELL rows. */
#define ANALYSIS_N_CELL_FIELDS 4
typedef struct {
  const char *name;
  size_t offset;
} analysis_cell_field;
extern const analysis_cell_field ANALYSIS_CELL_FIELDS[ANALYSIS_N_CELL_FIELDS];

/* The report table of each use ("summary.csv", …). */
extern const char *const ANALYSIS_USE_TABLE[ANALYSIS_USE_COUNT];

/* The measures of use u in its column order into ids (ANALYSIS_N_MEASURES
 * at most); returns their count. */
int analysis_measures_of(analysis_use u, analysis_measure_id *ids);

/* 1 when a prefix row carries the point classification: its four fractions
 * are finite and add up to 1 (geom_stats_compute). */
int analysis_stats_classified(const geom_stats *g);

/* Measure `which` of a done cell at prefix l (l = 1..L; 0: the deepest,
 * l = L): its geom_stats field, read by name through GEOM_STATS_FIELDS, or
 * its test accuracy, or (ANALYSIS_MEASURE_CELL) its /cellstats value at any
 * prefix; NaN if missing (a cell without /cellstats: not measured), and for
 * a classified measure of an unclassified row. */
double analysis_cell_value(const cs_cell_result *r, int prefix, analysis_measure_id which);

#endif

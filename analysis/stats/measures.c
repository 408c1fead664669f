/* measures.c — the table of the report's per-cell measures (measures.h)
 * and the value lookup every part of the report reads through it. A row
 * names its geom_stats field as GEOM_STATS_FIELDS does (the field's offset
 * is that table's), says what it is, and where the report shows it: per
 * use its column name and its place among that use's columns. Column
 * meanings: analysis/README.md, "Report tables". */
#include "measures.h"

#include "curvsweep/geom.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define CLASSIFIED ANALYSIS_MEASURE_CLASSIFIED
#define CLIP01 ANALYSIS_MEASURE_CLIP01
#define SEED_MAX ANALYSIS_MEASURE_SEED_MAX
#define LOG_SLOPE ANALYSIS_MEASURE_LOG_SLOPE
#define ATTENTION ANALYSIS_MEASURE_ATTENTION
#define CELL ANALYSIS_MEASURE_CELL
#define SUMMARY ANALYSIS_USE_SUMMARY
#define PREFIX ANALYSIS_USE_PREFIX
#define AMP ANALYSIS_USE_AMP
#define GAP ANALYSIS_USE_GAP
#define GATES ANALYSIS_USE_GATES
#define SINKS ANALYSIS_USE_SINKS

const char *const ANALYSIS_USE_TABLE[ANALYSIS_USE_COUNT] = {
    [SUMMARY] = "summary.csv", [PREFIX] = "prefix.csv", [AMP] = "amplification.csv",
    [GAP] = "gap.csv",         [GATES] = "gates.csv",   [SINKS] = "sinks.csv",
};

/* {field, unit, meaning, flags, {per use: {column, order}}} */
const analysis_measure ANALYSIS_MEASURES[ANALYSIS_N_MEASURES] = {
    [MEASURE_ACC] = {NULL, "fraction of the test set", "test accuracy", CLIP01,
                     {[SUMMARY] = {"acc", 1}, [GAP] = {"acc", 1}, [GATES] = {"acc", 1}}},
    [MEASURE_K_ABS] = {"K_absmean", "1/length²", "mean |K|, the raw Gaussian curvature (units 1/length²)",
                       LOG_SLOPE,
                       {[SUMMARY] = {"K_absmean", 2}, [PREFIX] = {"K_absmean", 1}, [AMP] = {"K", 1},
                        [GAP] = {"K", 2}}},
    [MEASURE_KT_ABS] = {"Kt_absmean", "scale-free", "mean |K̃|, the trace-normalised (scale-free) curvature",
                        SEED_MAX | LOG_SLOPE,
                        {[SUMMARY] = {"Kt_absmean", 3}, [PREFIX] = {"Kt_absmean", 2}, [AMP] = {"Kt", 2},
                         [GAP] = {"Kt", 3}, [GATES] = {"Kt", 3}}},
    [MEASURE_KT_MEAN] = {"Kt_mean", "scale-free", "mean signed K̃ (positive: on average positively curved)", 0,
                         {[SUMMARY] = {"Kt_mean", 4}, [PREFIX] = {"Kt_mean", 3}}},
    [MEASURE_INTK] = {"intK", "scale-free", "∫K dA over the input plane (input_dim 2)", 0,
                      {[SUMMARY] = {"intK", 5}}},
    [MEASURE_LOGDET] = {"logdet_mean", "log of the metric's determinant", "mean log det g of the pulled-back metric", 0,
                        {[SUMMARY] = {"logdet", 6}, [PREFIX] = {"logdet", 4}, [AMP] = {"logdet", 5}}},
    [MEASURE_KH_ABS] = {"Kh_absmean", "scale-free", "mean |K̂|, the area-normalised curvature",
                        CLASSIFIED | LOG_SLOPE,
                        {[SUMMARY] = {"Kh_absmean", 7}, [PREFIX] = {"Kh_absmean", 5}, [AMP] = {"Kh", 3},
                         [GAP] = {"Kh", 4}, [GATES] = {"Kh", 2}}},
    [MEASURE_KH_MEAN] = {"Kh_mean", "scale-free", "mean signed K̂", CLASSIFIED,
                         {[SUMMARY] = {"Kh_mean", 8}, [PREFIX] = {"Kh_mean", 6}}},
    [MEASURE_ANISO] = {"aniso_median", "log (≥ 0)", "median anisotropy index log(AM/GM) of g's eigenvalues",
                       CLASSIFIED,
                       {[SUMMARY] = {"aniso", 9}, [PREFIX] = {"aniso", 7}, [AMP] = {"aniso", 6}}},
    [MEASURE_INTABSK] = {"intabsK", "scale-free", "∫|K| dA (input_dim 2)", CLASSIFIED | LOG_SLOPE,
                         {[SUMMARY] = {"intabsK", 10}, [PREFIX] = {"intabsK", 8}, [AMP] = {"intabsK", 4}}},
    [MEASURE_UNRESOLVED] = {"unresolved_frac", "fraction of the points",
                            "fraction of the points whose curvature is unresolved (rounding)", CLASSIFIED,
                            {[SUMMARY] = {"unresolved_frac", 11}, [PREFIX] = {"unresolved_frac", 9}}},
    [MEASURE_FLAT] = {"flat_frac", "fraction of the points", "fraction of the points classified flat", CLASSIFIED,
                      {[SUMMARY] = {"flat_frac", 12}, [PREFIX] = {"flat_frac", 10}}},
    [MEASURE_CURVED] = {"curved_frac", "fraction of the points", "fraction of the points classified curved",
                        CLASSIFIED | SEED_MAX,
                        {[SUMMARY] = {"curved_frac", 13}, [PREFIX] = {"curved_frac", 11}}},
    [MEASURE_SINK_MASS] = {"sink_mass", "attention weight",
                           "first-token share: mean attention weight of the queries after the first token "
                           "on it (the CLS token of the self family, BOS of the lm family), over heads",
                           CLIP01 | ATTENTION, {[GATES] = {"sink_mass", 4}, [SINKS] = {"share", 1}}},
    [MEASURE_MAX_ATTN] = {"max_attn", "attention weight",
                          "mean largest attention weight of a query after the first token, over heads "
                          "(older archives: docs/ARCHIVE.md)",
                          CLIP01 | ATTENTION, {[GATES] = {"max_attn", 5}}},
    [MEASURE_SINK_HEADMAX] = {"sink_headmax", "attention weight",
                              "largest over heads of a head's first-token share (older archives: "
                              "docs/ARCHIVE.md)",
                              CLIP01 | ATTENTION, {[SINKS] = {"headmax", 2}}},
    [MEASURE_MASSIVE_ACT] = {"massive_act", "ratio",
                             "massive activation max |h| / median |h| of the residual stream", 0,
                             {[SINKS] = {"massive", 3}}},
    [MEASURE_VALUE_DRAIN] = {"value_drain", "ratio", "value drain ‖v_BOS‖ / median ‖v_t‖", 0,
                             {[SINKS] = {"drain", 4}}},
    [MEASURE_RESID_PEAK] = {"resid_peak", "ratio", "residual peak ‖h_BOS‖ / median ‖h_t‖", 0,
                            {[SINKS] = {"peak", 5}}},
    [MEASURE_ATTN_ENTROPY] = {"attn_entropy", "fraction of log(keys)",
                              "mean attention entropy of a query over its keys divided by log(number "
                              "of keys): 1 uniform, 0 on one key",
                              CLIP01 | ATTENTION,
                              {[PREFIX] = {"entropy", 12}, [GATES] = {"entropy", 6},
                               [SINKS] = {"entropy", 6}}},
    [MEASURE_ABLATE_FIRST] = {"ablate_first", "nats",
                              "test loss with the block's first-token attention removed (rows "
                              "renormalised) minus the intact test loss (lm)",
                              0, {[SINKS] = {"ablfirst", 7}}},
    [MEASURE_ABLATE_ATTN] = {"ablate_attn", "nats",
                             "test loss with the block's attention output removed minus the intact "
                             "test loss (lm)",
                             0, {[SINKS] = {"ablattn", 8}}},
    [MEASURE_TEST_NLL] = {"test_nll", "nats", "mean negative log-likelihood of the test targets", CELL,
                          {[SUMMARY] = {"nll", 14}, [GAP] = {"nll", 5}}},
    [MEASURE_TEST_BRIER] = {"test_brier", "Brier score (0 to 2)",
                            "mean Σ_k (p_k − y_k)² over the test targets (multi-class Brier score)", CELL,
                            {[SUMMARY] = {"brier", 15}, [GAP] = {"brier", 6}}},
    [MEASURE_TEST_ECE] = {"test_ece", "fraction (0 to 1)",
                          "expected calibration error of the test predictions, 15 equal-width "
                          "confidence bins",
                          CLIP01 | CELL, {[SUMMARY] = {"ece", 16}, [GAP] = {"ece", 7}}},
};

const analysis_cell_field ANALYSIS_CELL_FIELDS[ANALYSIS_N_CELL_FIELDS] = {
    {"loss_ratio_max", offsetof(cs_cell_stats, loss_ratio_max)},
    {"test_nll", offsetof(cs_cell_stats, test_nll)},
    {"test_brier", offsetof(cs_cell_stats, test_brier)},
    {"test_ece", offsetof(cs_cell_stats, test_ece)},
};

int analysis_measures_of(analysis_use u, analysis_measure_id *ids) {
  int n = 0;
  for (int order = 1; order <= ANALYSIS_N_MEASURES; order++)
    for (int m = 0; m < ANALYSIS_N_MEASURES; m++)
      if (ANALYSIS_MEASURES[m].use[u].column && ANALYSIS_MEASURES[m].use[u].order == order)
        ids[n++] = (analysis_measure_id)m;
  return n;
}

int analysis_stats_classified(const geom_stats *g) {
  double f[4] = {g->degenerate_frac, g->unresolved_frac, g->flat_frac, g->curved_frac}, sum = 0;
  for (int i = 0; i < 4; i++) {
    if (!isfinite(f[i]) || f[i] < 0) return 0;
    sum += f[i];
  }
  return fabs(sum - 1.0) <= 1e-9;
}

/* The GEOM_STATS_FIELDS row of field name, or NULL. */
static const geom_stats_field *measure_field(const char *name) {
  for (int k = 0; k < GEOM_STATS_N_FIELDS; k++)
    if (!strcmp(GEOM_STATS_FIELDS[k].name, name)) return &GEOM_STATS_FIELDS[k];
  return NULL;
}

double analysis_cell_value(const cs_cell_result *r, int prefix, analysis_measure_id which) {
  if (!r || (int)which < 0 || which >= ANALYSIS_N_MEASURES) return NAN;
  const analysis_measure *M = &ANALYSIS_MEASURES[which];
  if (!M->field) return r->test_acc;
  if (M->flags & ANALYSIS_MEASURE_CELL) {
    if (!r->cstats.present || prefix > r->depth) return NAN;
    for (int k = 0; k < ANALYSIS_N_CELL_FIELDS; k++)
      if (!strcmp(ANALYSIS_CELL_FIELDS[k].name, M->field))
        return *(const double *)((const char *)&r->cstats + ANALYSIS_CELL_FIELDS[k].offset);
    return NAN;
  }
  if (r->depth < 1 || !r->curv) return NAN;
  int l = prefix > 0 ? prefix : r->depth;
  if (l > r->depth) return NAN;
  const geom_stats *g = &r->curv[l - 1];
  if ((M->flags & ANALYSIS_MEASURE_CLASSIFIED) && !analysis_stats_classified(g)) return NAN;
  const geom_stats_field *F = measure_field(M->field);
  return F ? *(const double *)((const char *)g + F->offset) : NAN;
}

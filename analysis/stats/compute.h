/* compute.h — the numbers of the report (compute.c, internal to analysis/):
 * per-group means and t intervals over seeds, amplification slopes with
 * paired bootstrap intervals, gated − ungated gaps; and the per-cell values
 * below them that every part of the report reads (values.c). */
#ifndef CURVSWEEP_ANALYSIS_COMPUTE_H
#define CURVSWEEP_ANALYSIS_COMPUTE_H

#include "data.h"

/* Fill D->group, D->prefix, D->amp and D->gap from the loaded table, then
 * every section's numbers and every check and verdict (D->checks). */
int analysis_compute(analysis_data *D);
/* Regime r into its base among g[0..*n-1] (values.c): a new base g[*n]
 * when none has its name without axis ax_gate, then r in gate order. */
void analysis_gate_group_add(const analysis_data *D, int r, int ax_gate, analysis_gate_group *g, int *n);

/* run(D, v) with v one double per seed (at least one), freed after
 * (values.c): the scratch of every per-seed computation. */
int analysis_with_seed_scratch(analysis_data *D, int (*run)(analysis_data *D, double *v));

/* The CSV name of an amplification quantity: "K", "Kt", "Kh", "intabsK", "logdet", "aniso". */
const char *analysis_amp_q_name(int q);

/* ---- decomposition.c ---- */
/* The deepest depth index with a done cell of row (a, t, r), or -1. */
int analysis_deepest_done(const analysis_data *D, int a, int t, int r);
/* The decomposition of row (a, t, r) in one direction (prefix 0: across
 * depths; 1: along the layers of the deepest models): seed means at the
 * two ends (shallowest/deepest depth, or layer 1/L) of log mean |K̃|, log
 * mean |K̂| and the effective anisotropy log(mean |K̃| / mean |K̂|), each
 * over the same cells, so that Δ log K̃ = Δ log K̂ + Δ anisotropy exactly
 * (analysis/README.md). */
typedef struct {
  double kt[2], kh[2], an[2];
  int n;  /* cells behind each end (the smaller) */
} analysis_decomp;
void analysis_amp_decomp(const analysis_data *D, int a, int t, int r, int prefix, analysis_decomp *out);

/* ---- values.c ---- */
/* An accuracy interval clipped to [0, 1] (the t interval of a mean of
 * proportions can leave it; analysis/README.md). */
static inline void analysis_ci_clip01(analysis_ci *c) {
  if (c->lo < 0) c->lo = 0;
  if (c->hi > 1) c->hi = 1;
}
/* Differences (paired values b − a, NaN where missing): mean and t interval,
 * signs, two-sided sign test. */
void analysis_diff_stats(const double *diff, int n, analysis_diff *out);
/* The name ("residual=no;slots=3", or "all") of regime r without the
 * component of axis skip, and that name made safe for file names. */
void analysis_regime_base(const analysis_data *D, int r, int skip, char *name, size_t len, char *tag,
                          size_t tlen);

#endif

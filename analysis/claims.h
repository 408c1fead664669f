/* claims.h — what the claims' computations (claim1.c, claims.c) share with
 * index.md's verdict lines (verdicts.c, verdicts_claim4.c). Internal to
 * analysis/; rules in analysis/README.md. */
#ifndef CURVSWEEP_ANALYSIS_CLAIMS_H
#define CURVSWEEP_ANALYSIS_CLAIMS_H

#include "data.h"

#include <stdio.h>

/* claim1.c — 1 when the ungated skeleton cells of (t, r) are flat by claim
 * 1's rule; claim 1's verdict row; its section of index.md. */
int analysis_ungated_flat(const analysis_data *D, int t, int r);
int analysis_claim1_verdict(analysis_data *D);
int analysis_md_claim1(FILE *f, const analysis_data *D);

/* verdicts_claim4.c — claim 4's section of index.md. */
void analysis_md_claim4(FILE *f, const analysis_data *D);

/* claims.c — the measures of claim 4's checks and their scope names. */
typedef enum { C4M_KH = 0, C4M_INTABSK, C4M_KT, C4M_COUNT } analysis_c4_measure;
const char *analysis_c4_measure_name(int m);   /* "Kh", "intabsK", "Kt" */
const char *analysis_c4_dir_name(int prefix);  /* "across-depths", "along-layers" */
/* The scope of claim 4's check of row (a, t, r), direction and measure. */
void analysis_c4_scope(const analysis_data *D, int a, int t, int r, int prefix, int m, char *buf,
                       size_t len);
/* The scope of claim 3's row check of a gap row, and of claim 2's check. */
void analysis_c3_scope(const analysis_data *D, const analysis_gap *G, char *buf, size_t len);

/* Claim 4's decomposition of one row and direction: seed means at the two
 * ends (shallowest/deepest depth, or layer 1/L of the deepest models) of
 * log mean |K̃|, log mean |K̂| and their difference, the effective
 * anisotropy log(mean |K̃| / mean |K̂|), each over the same cells, so that
 * Δ log K̃ = Δ log K̂ + Δ anisotropy exactly (analysis/README.md). */
typedef struct {
  double kt[2], kh[2], an[2];
  int n;  /* cells behind each end (the smaller) */
} analysis_decomp;
void analysis_c4_decomp(const analysis_data *D, int a, int t, int r, int prefix, analysis_decomp *out);

#endif

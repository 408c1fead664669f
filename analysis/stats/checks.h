/* checks.h — the checks and verdicts of every claim (D->checks; checks.c),
 * internal to analysis/: adding a check, the per-seed test and the TOST
 * that fill one, Holm over the families, the lookup index.md uses and the
 * shared text of its verdict lines. Rules: analysis/VERDICTS.md,
 * "Statistics of the verdicts". */
#ifndef CURVSWEEP_ANALYSIS_CHECKS_H
#define CURVSWEEP_ANALYSIS_CHECKS_H

#include "data.h"

#include <stdio.h>

/* Append a check (verdict 0) or a verdict (1) of claim in Holm family
 * `family` (NULL or "": a family of one) with scope from scope_fmt (',' is
 * replaced by ';'); *out points into D->checks until the next add. */
int analysis_check_add(analysis_data *D, const char *claim, const char *family, int verdict,
                       analysis_check **out, const char *scope_fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The check of claim with exactly this scope, or NULL. */
const analysis_check *analysis_check_find(const analysis_data *D, const char *claim, const char *scope);
/* The first check of claim with this key (set by the claim after adding
 * it: the check's place in the claim's own grid), or NULL; never a check
 * of key −1. */
const analysis_check *analysis_check_keyed(const analysis_data *D, const char *claim, int key);

/* Fill c from the per-seed values d[0..n-1] (NaN: seed left out), oriented
 * so > 0 is the claim: sign-flip test (stream keyed by key), mean with 95% t
 * interval, d_z with interval. */
int analysis_check_seed(const analysis_data *D, analysis_check *c, const double *d, int n,
                        analysis_side side, const char *key);
/* Fill c with the paired TOST of d against ±D->opt.margin. */
void analysis_check_tost(const analysis_data *D, analysis_check *c, const double *d, int n);

/* Holm over each family of the checks added so far; every check's p_adj,
 * family_size, adjust, needs and decision. */
int analysis_checks_adjust(analysis_data *D);

/* "p = 0.03, Holm-adjusted 0.12 (family of 4)"; "p = 0.03" without a family. */
const char *analysis_check_p_text(char *buf, size_t len, const analysis_check *c);
/* "supported", …, or "too few seeds (n = 3; needs ≥ 5)". */
const char *analysis_check_decision_text(char *buf, size_t len, const analysis_check *c);
/* "0.02 [0.01, 0.03], d_z 1.2 [0.3, 2.1]". */
const char *analysis_check_effect_text(char *buf, size_t len, const analysis_check *c);

/* A verdict row of claim built from its checks in family `family` whose
 * scope ends with `suffix` (NULL: any): ANY: supported when some check
 * is (p = the smallest, adjust min-holm); ALL: supported when every check
 * is (p = the largest); too few when every check is too few; not
 * supported otherwise; inconclusive (n = 0) without checks. */
typedef enum { ANALYSIS_ANY = 0, ANALYSIS_ALL } analysis_combine;
int analysis_verdict_from(analysis_data *D, const char *claim, const char *family, const char *suffix,
                          analysis_combine how, const char *scope, analysis_check **out);

/* The reading of a two-sided check (effects oriented so > 0 is the
 * claim): supported (> 0 with p_adj < α), not supported (< 0 with p_adj <
 * α), inconclusive, or too few. */
analysis_decision analysis_check_two_sided(const analysis_data *D, const analysis_check *c);
/* The verdict row of one check: a copy of it (scope kept) with verdict 1
 * and the two-sided reading as its decision. */
int analysis_verdict_of_check(analysis_data *D, const analysis_check *c);

/* index.md's line of one check: "n = 5 seeds: effect [lo, hi], d_z …; p …
 * (test) → **decision**", and a caution when the statistic is drawn from
 * under half of the points. */
void analysis_md_check(FILE *f, const analysis_check *c);

/* Options outside their range replaced by the defaults (alpha, margin). */
void analysis_options_check(analysis_options *o);

#endif

/* claim2.c — claim 2, gating makes the representation curved
 * (analysis/VERDICTS.md, "Statistics of the verdicts", "Verdicts in
 * index.md"): per seed, the net share of (task, depth, regime) rows where
 * the gated cell is more curved than the ungated one (+1 more, −1 less),
 * on K̃ and on K̂; one-sided sign-flip, Holm over the gated archs within
 * each normalisation; the claim holds when both normalisations support it
 * (intersection-union). Its checks, its verdicts and its part of index.md
 * (the rows descriptive, the per-seed test): a row of the section table
 * (claims.h). */
#include "claims.h"

#include "checks.h"
#include "compute.h"
#include "output.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys of claim 2's checks (analysis_check_keyed): the verdict of each
 * normalisation (hat = 0: K̃, 1: K̂), then one check per gated arch g and
 * normalisation. */
enum { C2_KEY_NORM = 0, C2_KEY_ARCH = 2 };
static int claim2_arch_key(int g, int hat) { return C2_KEY_ARCH + 2 * g + hat; }

/* Per seed s: mean over the (task, depth, regime) rows where both cells are
 * done with finite values of sign(value(g) − value(u)). */
static int claim2_check(analysis_data *D, int g, int u, int hat, double *v) {
  analysis_measure_id q = hat ? MEASURE_KH_ABS : MEASURE_KT_ABS;
  double res = 0;
  int nres = 0, any = 0;
  for (int s = 0; s < D->n_seed; s++) {
    double sum = 0;
    int k = 0;
    for (int t = 0; t < D->n_task; t++)
      for (int d = 0; d < D->n_depth; d++)
        for (int r = 0; r < D->n_regime; r++) {
          const cs_cell_result *cg = D->cell[analysis_cidx(D, g, t, d, r, s)];
          const cs_cell_result *cu = D->cell[analysis_cidx(D, u, t, d, r, s)];
          double a = analysis_cell_value(cg, 0, q), b = analysis_cell_value(cu, 0, q);
          if (!isfinite(a) || !isfinite(b)) continue;
          sum += (a > b) - (a < b), k++;
          double fr = analysis_cell_value(cg, 0, MEASURE_FLAT) + analysis_cell_value(cg, 0, MEASURE_CURVED);
          if (isfinite(fr)) res += fr, nres++;
        }
    v[s] = k ? sum / k : NAN;
    any |= k > 0;
  }
  if (!any) return CS_OK;
  analysis_check *c;
  const char *name = config_arch_name(D->arch[g]), *m = hat ? "Kh" : "Kt";
  char fam[8];
  snprintf(fam, sizeof fam, "2:%s", m);
  CS_CHECK(analysis_check_add(D, "2", fam, 0, &c, "%s;%s", name, m));
  c->key = claim2_arch_key(g, hat);
  char key[96];
  snprintf(key, sizeof key, "2|%s|%s", name, m);
  CS_CHECK(analysis_check_seed(D, c, v, D->n_seed, ANALYSIS_GREATER, key));
  c->resolved = nres ? res / nres : NAN;
  return CS_OK;
}

static int claim2_checks_run(analysis_data *D, double *v) {
  int rc = CS_OK, u = analysis_find_arch(D, ARCH_UNGATED);
  for (int g = 0; !rc && u >= 0 && g < D->n_arch; g++)
    for (int hat = 0; !rc && hat < 2 && config_arch_gated(D->arch[g]); hat++)
      rc = claim2_check(D, g, u, hat, v);
  return rc;
}

int analysis_claim2_checks(analysis_data *D) { return analysis_with_seed_scratch(D, claim2_checks_run); }

int analysis_claim2_verdicts(analysis_data *D) {
  analysis_check *kt = NULL, *kh = NULL, *v;
  int has2 = 0;
  for (int i = 0; i < D->checks.n; i++) has2 |= strcmp(D->checks.c[i].claim, "2") == 0;
  if (!has2) return CS_OK;
  CS_CHECK(analysis_verdict_from(D, "2", "2:Kt", NULL, ANALYSIS_ANY, "Kt", &kt));
  kt->key = C2_KEY_NORM;
  analysis_decision dt = kt->decision;
  CS_CHECK(analysis_verdict_from(D, "2", "2:Kh", NULL, ANALYSIS_ANY, "Kh", &kh));
  kh->key = C2_KEY_NORM + 1;
  analysis_decision dh = kh->decision;
  int nh = kh->n;
  double keep_kh_p = kh->p_adj;
  /* both normalisations agree, or the verdict is inconclusive (they disagree) */
  analysis_check copy = *kt;
  CS_CHECK(analysis_check_add(D, "2", NULL, 1, &v, "verdict"));
  analysis_check keep = *v;
  *v = copy;
  memcpy(v->scope, keep.scope, sizeof v->scope);
  v->key = keep.key;
  v->decision = nh == 0 || dt == dh ? dt : ANALYSIS_INCONCLUSIVE;
  snprintf(v->test, sizeof v->test, "Kt and Kh agree");
  snprintf(v->adjust, sizeof v->adjust, "intersection-union");
  if (nh > 0 && isfinite(keep_kh_p) && keep_kh_p > v->p_adj) v->p_raw = v->p_adj = keep_kh_p;
  return CS_OK;
}

/* Claim 2 for one gated arch against ungated on one normalisation (hat = 0:
 * mean |K̃|, 1: mean |K̂|): the rows (task, depth, regime), descriptive, and
 * the per-seed test. */
static int claim2_md_arch(FILE *f, const analysis_data *D, int g, int u, int hat) {
  size_t cap = (size_t)D->n_task * D->n_depth * D->n_regime;
  double *ratio;
  CS_CHECK(CS_CALLOC(ratio, cap));
  int n = 0, k = 0, nr = 0, skel_pairs = 0;
  for (int t = 0; t < D->n_task; t++)
    for (int d = 0; d < D->n_depth; d++)
      for (int r = 0; r < D->n_regime; r++) {
        const analysis_group *G = &D->group[analysis_gidx(D, g, t, d, r)];
        const analysis_group *U = &D->group[analysis_gidx(D, u, t, d, r)];
        double vg = hat ? G->m[MEASURE_KH_ABS].mean : G->m[MEASURE_KT_ABS].mean, vu = hat ? U->m[MEASURE_KH_ABS].mean : U->m[MEASURE_KT_ABS].mean;
        if (!isfinite(vg) || !isfinite(vu)) continue;
        n++;
        k += vg > vu;
        skel_pairs += D->regime[r].skeleton;
        if (vu > 0) ratio[nr++] = vg / vu;
      }
  const char *name = config_arch_name(D->arch[g]), *sym = hat ? "K̂" : "K̃";
  analysis_ci med;
  double cover;
  int rc = n ? analysis_median_ci(ratio, nr, ANALYSIS_LEVEL, &med, &cover) : CS_OK;
  free(ratio);
  CS_CHECK(rc);
  if (n == 0) {
    if (!hat)
      fprintf(f, "- %s: no (task, depth, regime) with both %s and ungated done.\n", name, name);
    return CS_OK;
  }
  fprintf(f, "- %s: mean |%s| (last layer, summary.csv `%s_absmean_mean`) above ungated on **%d of "
             "%d** (task, depth, regime) rows; median ratio %s/ungated **%s** [%s, %s] "
             "(order-statistic interval over rows, coverage %s; rows share seeds, so this is "
             "descriptive).",
          name, sym, hat ? "Kh" : "Kt", k, n, name, F4(med.mean), F4(med.lo), F4(med.hi), F4(cover));
  if (skel_pairs) fprintf(f, " (%d rows are affine-skeleton ones, where ungated is flat to rounding: "
                             "there the ratio only says \"curved vs flat\".)", skel_pairs);
  const analysis_check *c = analysis_check_keyed(D, "2", claim2_arch_key(g, hat));
  if (c) {
    fprintf(f, " Per seed, the net share of rows where %s is more curved: ", name);
    analysis_md_check(f, c);
    fprintf(f, ".");
  }
  fprintf(f, "\n");
  return CS_OK;
}

int analysis_claim2_write_md(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 2 — gating makes the representation curved\n\n");
  int u = analysis_find_arch(D, ARCH_UNGATED), any = 0;
  for (int g = 0; g < D->n_arch; g++) {
    if (!config_arch_gated(D->arch[g]) || u < 0) continue;
    any = 1;
    CS_CHECK(claim2_md_arch(f, D, g, u, 0));
    CS_CHECK(claim2_md_arch(f, D, g, u, 1));
  }
  const analysis_check *kt = analysis_check_keyed(D, "2", C2_KEY_NORM);
  const analysis_check *kh = analysis_check_keyed(D, "2", C2_KEY_NORM + 1);
  if (!any || !kt) {
    fprintf(f, "**Not testable with this archive**: it needs both ungated and gated (or "
               "gated-headwise) cells.\n\n");
    return CS_OK;
  }
  char b1[96], b2[96], b3[160];
  fprintf(f, "\nThe test: per seed, +1 for every (task, depth, regime) row where the gated cell is more "
             "curved than the ungated one of the same seed, −1 where less, averaged over the rows: one "
             "value per seed, one-sided sign-flip test, Holm over the archs within each normalisation "
             "(α = %g); the claim holds when both normalisations support it (intersection-union).\n\n",
          D->opt.alpha);
  fprintf(f, "Verdict (n = %d seeds) on K̃: **%s** (%s); on K̂: **%s**%s%s%s.\n\n", kt->n,
          analysis_check_decision_text(b1, sizeof b1, kt), analysis_check_p_text(b3, sizeof b3, kt),
          kh && kh->n ? analysis_check_decision_text(b2, sizeof b2, kh) : "not testable (no K̂ in this archive)",
          kh && kh->n ? " (" : "", kh && kh->n ? analysis_check_p_text((char[160]){0}, 160, kh) : "",
          kh && kh->n ? ")" : "");
  if (kh && kh->n && kh->decision != kt->decision)
    fprintf(f, "**The normalisations disagree**: K̃/K̂ is the AM/GM of g's eigenvalues, so the two "
               "differ by how anisotropic the metric is (analysis/README.md, \"Measures\"); the report "
               "does not pick one.\n\n");
  return CS_OK;
}

ANALYSIS_CLAIM_ABOUT(claim2, "2", "gating makes the representation curved", "Claim 2 ");

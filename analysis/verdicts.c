/* verdicts.c — the section of index.md on the four claims, printed from
 * the computed verdicts (checks.c, claims.c; printed with %.4g, the tables
 * with %.15g). The rules, and what the measures mean and when they disagree,
 * are in analysis/README.md ("Measures", "Statistics of the verdicts",
 * "Verdicts in index.md"): claim 1 is claim1.c, claim 4 verdicts_claim4.c;
 * here
 *   2  gated more curved than ungated, on K̃ and on K̂ (per-seed net share)
 *   3  accuracy gain of gating on nonlinear-boundary tasks, equivalence on
 *      linear ones. */
#include "checks.h"
#include "claims.h"
#include "compute.h"
#include "output.h"
#include "writers.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* Claim 2 for one gated arch against ungated on one normalisation (hat = 0:
 * mean |K̃|, 1: mean |K̂|): the rows (task, depth, regime), descriptive, and
 * the per-seed test of checks.c. */
static int analysis_md_claim2_arch(FILE *f, const analysis_data *D, int g, int u, int hat) {
  size_t cap = (size_t)D->n_task * D->n_depth * D->n_regime;
  double *ratio;
  CS_CHECK(CS_CALLOC(ratio, cap));
  int n = 0, k = 0, nr = 0, skel_pairs = 0;
  for (int t = 0; t < D->n_task; t++)
    for (int d = 0; d < D->n_depth; d++)
      for (int r = 0; r < D->n_regime; r++) {
        const analysis_group *G = &D->group[analysis_gidx(D, g, t, d, r)];
        const analysis_group *U = &D->group[analysis_gidx(D, u, t, d, r)];
        double vg = hat ? G->m[MEASURE_KH_ABS].mean : G->m[MEASURE_KT_ABS].mean,
               vu = hat ? U->m[MEASURE_KH_ABS].mean : U->m[MEASURE_KT_ABS].mean;
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
  char scope[64];
  snprintf(scope, sizeof scope, "%s;%s", name, hat ? "Kh" : "Kt");
  const analysis_check *c = analysis_check_find(D, "2", scope);
  if (c) {
    fprintf(f, " Per seed, the net share of rows where %s is more curved: ", name);
    analysis_md_check(f, c);
    fprintf(f, ".");
  }
  fprintf(f, "\n");
  return CS_OK;
}

static int analysis_md_claim2(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 2 — gating makes the representation curved\n\n");
  int u = analysis_find_arch(D, ARCH_UNGATED), any = 0;
  for (int g = 0; g < D->n_arch; g++) {
    if (!config_arch_gated(D->arch[g]) || u < 0) continue;
    any = 1;
    CS_CHECK(analysis_md_claim2_arch(f, D, g, u, 0));
    CS_CHECK(analysis_md_claim2_arch(f, D, g, u, 1));
  }
  const analysis_check *kt = analysis_check_find(D, "2", "Kt"), *kh = analysis_check_find(D, "2", "Kh");
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

static void analysis_md_claim3(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 3 — gating improves accuracy on nonlinear-boundary tasks, not on linear ones\n\n");
  int g = analysis_find_arch(D, ARCH_GATED);
  const char *bname[2] = {"nonlinear", "linear"};
  const analysis_check *v = analysis_check_find(D, "3", "verdict");
  if (g < 0 || analysis_find_arch(D, ARCH_UNGATED) < 0 || !v) {
    fprintf(f, "**Not testable with this archive**: it needs gated and ungated cells.\n\n");
    return;
  }
  fprintf(f, "Gated − ungated test accuracy, paired by seed (gap.csv, comparison `gated-ungated`; "
             "verdicts.csv): per row the seeds' differences; nonlinear rows a one-sided sign-flip test "
             "(gated more accurate), linear rows a paired TOST against ±%g (the %g%% interval shown), "
             "Holm within each boundary type (α = %g):\n\n",
          D->opt.margin, 100.0 * (1.0 - 2.0 * D->opt.alpha), D->opt.alpha);
  for (int i = 0; i < D->n_gap; i++) {
    const analysis_gap *G = &D->gap[i];
    if (G->arch != g) continue;
    int b = strcmp(task_boundary(D->task[G->task]), "linear") == 0;
    char scope[320];
    analysis_c3_scope(D, G, scope, sizeof scope);
    const analysis_check *c = analysis_check_find(D, "3", scope);
    fprintf(f, "- %s (%s), depth %d, %s: %d pair%s, Δacc %s [%s, %s] (95%% t); Δ mean |K̃| %s, Δ mean "
               "|K̂| %s; ",
            config_task_name(D->task[G->task]), bname[b], D->depth[G->depth], D->regime[G->regime].name,
            G->n_pairs, G->n_pairs == 1 ? "" : "s", F4(G->d[MEASURE_ACC].ci.mean), F4(G->d[MEASURE_ACC].ci.lo),
            F4(G->d[MEASURE_ACC].ci.hi), F4(G->d[MEASURE_KT_ABS].ci.mean), F4(G->d[MEASURE_KH_ABS].ci.mean));
    if (c) analysis_md_check(f, c);
    if (b && (G->d[MEASURE_ACC].ci.lo > 0 || G->d[MEASURE_ACC].ci.hi < 0))
      fprintf(f, " — **the 95%% interval of this linear row excludes 0**");
    fprintf(f, "\n");
  }
  fprintf(f, "\n");
  for (int b = 0; b < 2; b++) {
    char scope[32];
    snprintf(scope, sizeof scope, "%s;pooled", bname[b]);
    const analysis_check *c = analysis_check_find(D, "3", scope);
    if (!c) {
      fprintf(f, "- %s tasks: none in this archive.\n", bname[b]);
      continue;
    }
    fprintf(f, "- %s tasks, pooled (per seed, its mean difference over the %s rows): ", bname[b], bname[b]);
    analysis_md_check(f, c);
    fprintf(f, "\n");
  }
  char b1[96];
  fprintf(f, "\nVerdict (n = %d seeds; both halves must hold, an intersection-union test: p = %s): **%s**",
          v->n, F4(v->p_adj), analysis_check_decision_text(b1, sizeof b1, v));
  const analysis_check *nl = analysis_check_find(D, "3", "nonlinear;pooled");
  const analysis_check *li = analysis_check_find(D, "3", "linear;pooled");
  if (!nl)
    fprintf(f, ": no nonlinear-boundary task, not testable.\n\n");
  else if (nl->decision != ANALYSIS_SUPPORTED)
    fprintf(f, ": the accuracy gain on nonlinear-boundary tasks is %s.\n\n",
            nl->decision == ANALYSIS_TOO_FEW ? "not testable with so few seeds" : "not significant");
  else if (!li)
    fprintf(f, ": gating gains accuracy on nonlinear-boundary tasks; the linear-boundary half is not "
               "testable (no linear task in the grid).\n\n");
  else
    fprintf(f, ": gating gains accuracy on nonlinear-boundary tasks; on linear ones the difference is "
               "**%s** to within ±%g.\n\n",
            analysis_decision_name(li->decision), D->opt.margin);
}

int analysis_md_claims(FILE *f, const analysis_data *D) {
  CS_CHECK(analysis_md_claim1(f, D));
  CS_CHECK(analysis_md_claim2(f, D));
  analysis_md_claim3(f, D);
  analysis_md_claim4(f, D);
  return CS_OK;
}


/* claim3.c — claim 3, gating improves accuracy on nonlinear-boundary tasks,
 * not on linear ones (analysis/VERDICTS.md, "Statistics of the verdicts",
 * "Verdicts in index.md"): per (task, depth, regime) row of gap.csv the
 * seed's accuracy difference gated − ungated; nonlinear rows a one-sided
 * sign-flip, linear rows a TOST against ±margin, Holm within each boundary
 * type; pooled per boundary type as the seed's mean difference over the
 * rows; the verdict an intersection-union of "nonlinear gain" and "linear
 * equivalent". Its checks, its verdict and its part of index.md: a row of
 * the section table (claims.h). */
#include "claims.h"

#include "checks.h"
#include "compute.h"
#include "output.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys of claim 3's checks (analysis_check_keyed): the verdict, the
 * pooled check of each boundary type (lin = 0 nonlinear, 1 linear), then
 * one per gap row (its index in D->gap). */
enum { C3_KEY_VERDICT = 0, C3_KEY_POOLED = 1, C3_KEY_ROW = 3 };

static const char *const C3_BOUNDARY[2] = {"nonlinear", "linear"};

/* The boundary type of G's task: 1 linear, 0 nonlinear, -1 neither (a
 * sequence or regression task has no decision boundary in its input: not
 * claim 3's). */
static int claim3_linear(const analysis_data *D, const analysis_gap *G) {
  const char *b = task_boundary(D->task[G->task]);
  return !strcmp(b, C3_BOUNDARY[1]) ? 1 : !strcmp(b, C3_BOUNDARY[0]) ? 0 : -1;
}

/* The seed's accuracy difference arch − ungated of gap row G (NaN: not both done). */
static double claim3_gap_seed(const analysis_data *D, const analysis_gap *G, int u, int s) {
  const cs_cell_result *cu = D->cell[analysis_cidx(D, u, G->task, G->depth, G->regime, s)];
  const cs_cell_result *cg = D->cell[analysis_cidx(D, G->arch, G->task, G->depth, G->regime, s)];
  return cu && cg ? cg->test_acc - cu->test_acc : NAN;
}

static int claim3_checks_run(analysis_data *D, double *v) {
  int g = analysis_find_arch(D, ARCH_GATED), u = analysis_find_arch(D, ARCH_UNGATED);
  if (g < 0 || u < 0) return CS_OK;
  for (int lin = 0; lin < 2; lin++) {
    double *pool = NULL;
    int *cnt = NULL;
    int rows = 0, rc = CS_CALLOC(pool, D->n_seed);
    if (!rc) rc = CS_CALLOC(cnt, D->n_seed);
    for (int i = 0; !rc && i < D->n_gap; i++) {
      const analysis_gap *G = &D->gap[i];
      if (G->arch != g || claim3_linear(D, G) != lin) continue;
      for (int s = 0; s < D->n_seed; s++) {
        v[s] = claim3_gap_seed(D, G, u, s);
        if (isfinite(v[s])) pool[s] += v[s], cnt[s]++;
      }
      char scope[320], key[340];
      snprintf(scope, sizeof scope, "%s;%s;depth %d;%s", task_boundary(D->task[G->task]),
               config_task_name(D->task[G->task]), D->depth[G->depth], D->regime[G->regime].name);
      analysis_check *c;
      rc = analysis_check_add(D, "3", lin ? "3:linear-rows" : "3:nonlinear-rows", 0, &c, "%s", scope);
      if (rc) break;
      c->key = C3_KEY_ROW + i;
      rows++;
      if (lin) {
        analysis_check_tost(D, c, v, D->n_seed);
      } else {
        snprintf(key, sizeof key, "3|%s", scope);
        rc = analysis_check_seed(D, c, v, D->n_seed, ANALYSIS_GREATER, key);
      }
    }
    if (!rc && rows) {
      for (int s = 0; s < D->n_seed; s++) v[s] = cnt[s] ? pool[s] / cnt[s] : NAN;
      analysis_check *c;
      rc = analysis_check_add(D, "3", NULL, 0, &c, "%s;pooled", C3_BOUNDARY[lin]);
      if (!rc) c->key = C3_KEY_POOLED + lin;
      if (!rc && lin) analysis_check_tost(D, c, v, D->n_seed);
      if (!rc && !lin) rc = analysis_check_seed(D, c, v, D->n_seed, ANALYSIS_GREATER, "3|nonlinear|pooled");
    }
    free(pool), free(cnt);
    CS_CHECK(rc);
  }
  return CS_OK;
}

int analysis_claim3_checks(analysis_data *D) { return analysis_with_seed_scratch(D, claim3_checks_run); }

/* Supported when the nonlinear gain is and the linear tasks are equivalent
 * (intersection-union: both at level α, p the larger). */
int analysis_claim3_verdicts(analysis_data *D) {
  const analysis_check *nl0 = analysis_check_keyed(D, "3", C3_KEY_POOLED);
  const analysis_check *li0 = analysis_check_keyed(D, "3", C3_KEY_POOLED + 1);
  if (!nl0 && !li0) return CS_OK;
  analysis_check nl = nl0 ? *nl0 : (analysis_check){0}, li = li0 ? *li0 : (analysis_check){0};
  analysis_check *v;
  CS_CHECK(analysis_check_add(D, "3", NULL, 1, &v, "verdict"));
  v->key = C3_KEY_VERDICT;
  snprintf(v->test, sizeof v->test, "nonlinear gain and linear equivalence");
  snprintf(v->adjust, sizeof v->adjust, "intersection-union");
  if (!nl0) {
    v->decision = ANALYSIS_INCONCLUSIVE; /* no nonlinear task: not testable */
    return CS_OK;
  }
  v->n = nl.n, v->needs = nl.needs;
  v->effect = nl.effect, v->effect_lo = nl.effect_lo, v->effect_hi = nl.effect_hi;
  v->dz = nl.dz, v->dz_lo = nl.dz_lo, v->dz_hi = nl.dz_hi;
  v->p_raw = li0 && isfinite(li.p_raw) && li.p_raw > nl.p_raw ? li.p_raw : nl.p_raw;
  v->p_adj = v->p_raw;
  if (li0 && li.n < v->n) v->n = li.n;
  if (nl.decision == ANALYSIS_TOO_FEW)
    v->decision = ANALYSIS_TOO_FEW;
  else if (nl.decision != ANALYSIS_SUPPORTED)
    v->decision = ANALYSIS_NOT_SUPPORTED;
  else if (!li0)
    v->decision = ANALYSIS_INCONCLUSIVE;
  else if (li.decision == ANALYSIS_EQUIVALENT)
    v->decision = ANALYSIS_SUPPORTED;
  else if (li.decision == ANALYSIS_NOT_EQUIVALENT)
    v->decision = ANALYSIS_NOT_SUPPORTED;
  else
    v->decision = ANALYSIS_INCONCLUSIVE;
  return CS_OK;
}

int analysis_claim3_write_md(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 3 — gating improves accuracy on nonlinear-boundary tasks, not on linear ones\n\n");
  int g = analysis_find_arch(D, ARCH_GATED);
  const analysis_check *v = analysis_check_keyed(D, "3", C3_KEY_VERDICT);
  if (g < 0 || analysis_find_arch(D, ARCH_UNGATED) < 0 || !v) {
    fprintf(f, "**Not testable with this archive**: it needs gated and ungated cells of a point task "
               "(a linear or nonlinear decision boundary; sequence and regression tasks have none).\n\n");
    return CS_OK;
  }
  fprintf(f, "Gated − ungated test accuracy, paired by seed (gap.csv, comparison `gated-ungated`; "
             "verdicts.csv): per row the seeds' differences; nonlinear rows a one-sided sign-flip test "
             "(gated more accurate), linear rows a paired TOST against ±%g (the %g%% interval shown), "
             "Holm within each boundary type (α = %g):\n\n",
          D->opt.margin, 100.0 * (1.0 - 2.0 * D->opt.alpha), D->opt.alpha);
  for (int i = 0; i < D->n_gap; i++) {
    const analysis_gap *G = &D->gap[i];
    int b = claim3_linear(D, G);
    if (G->arch != g || b < 0) continue;
    const analysis_check *c = analysis_check_keyed(D, "3", C3_KEY_ROW + i);
    fprintf(f, "- %s (%s), depth %d, %s: %d pair%s, Δacc %s [%s, %s] (95%% t); Δ mean |K̃| %s, Δ mean "
               "|K̂| %s; ",
            config_task_name(D->task[G->task]), C3_BOUNDARY[b], D->depth[G->depth],
            D->regime[G->regime].name, G->n_pairs, G->n_pairs == 1 ? "" : "s", F4(G->d[MEASURE_ACC].ci.mean),
            F4(G->d[MEASURE_ACC].ci.lo), F4(G->d[MEASURE_ACC].ci.hi), F4(G->d[MEASURE_KT_ABS].ci.mean), F4(G->d[MEASURE_KH_ABS].ci.mean));
    if (c) analysis_md_check(f, c);
    if (b && (G->d[MEASURE_ACC].ci.lo > 0 || G->d[MEASURE_ACC].ci.hi < 0))
      fprintf(f, " — **the 95%% interval of this linear row excludes 0**");
    fprintf(f, "\n");
  }
  fprintf(f, "\n");
  for (int b = 0; b < 2; b++) {
    const analysis_check *c = analysis_check_keyed(D, "3", C3_KEY_POOLED + b);
    if (!c) {
      fprintf(f, "- %s tasks: none in this archive.\n", C3_BOUNDARY[b]);
      continue;
    }
    fprintf(f, "- %s tasks, pooled (per seed, its mean difference over the %s rows): ", C3_BOUNDARY[b],
            C3_BOUNDARY[b]);
    analysis_md_check(f, c);
    fprintf(f, "\n");
  }
  char b1[96];
  fprintf(f, "\nVerdict (n = %d seeds; both halves must hold, an intersection-union test: p = %s): **%s**",
          v->n, F4(v->p_adj), analysis_check_decision_text(b1, sizeof b1, v));
  const analysis_check *nl = analysis_check_keyed(D, "3", C3_KEY_POOLED);
  const analysis_check *li = analysis_check_keyed(D, "3", C3_KEY_POOLED + 1);
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
  return CS_OK;
}

ANALYSIS_CLAIM_ABOUT(claim3, "3",
                     "gating improves accuracy on nonlinear-boundary tasks, not on linear ones",
                     "Claim 3 ");

/* claims.c — the checks and verdicts of claims 2–4 (analysis/README.md,
 * "Statistics of the verdicts"), one value per seed behind every test:
 *   2  per seed, the net share of (task, depth, regime) rows where gated is
 *      more curved than ungated (+1 more, −1 less), on K̃ and on K̂;
 *      one-sided sign-flip, Holm over archs × normalisations;
 *   3  per (task, depth, regime) row the seed's accuracy difference gated −
 *      ungated; nonlinear rows one-sided sign-flip, linear rows TOST
 *      against ±margin, Holm within each; pooled per boundary type as the
 *      seed's mean difference over the rows; the verdict an
 *      intersection-union of "nonlinear gain" and "linear equivalent";
 *   4  per (arch, task, regime) row, direction (across depths / along the
 *      layers of the deepest models) and measure (K̂, ∫|K| dA; K̃ apart)
 *      the seed's least-squares slope of log value on log depth (or log
 *      layer); one-sided sign-flip, Holm over the gated rows × directions ×
 *      measures; supported when some check is after Holm.
 * Claim 1 (no test) is claim1.c. */
#include "checks.h"
#include "claims.h"
#include "compute.h"
#include "sections.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- claim 2 ---- */

/* Per seed s: mean over the (task, depth, regime) rows where both cells are
 * done with finite values of sign(value(g) − value(u)). */
static int analysis_claim2_check(analysis_data *D, int g, int u, int hat, double *v) {
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
  char key[96];
  snprintf(key, sizeof key, "2|%s|%s", name, m);
  CS_CHECK(analysis_check_seed(D, c, v, D->n_seed, ANALYSIS_GREATER, key));
  c->resolved = nres ? res / nres : NAN;
  return CS_OK;
}

/* ---- claim 3 ---- */

void analysis_c3_scope(const analysis_data *D, const analysis_gap *G, char *buf, size_t len) {
  snprintf(buf, len, "%s;%s;depth %d;%s", task_boundary(D->task[G->task]), config_task_name(D->task[G->task]),
           D->depth[G->depth], D->regime[G->regime].name);
}

/* The seed's accuracy difference arch − ungated of gap row G (NaN: not both done). */
static double analysis_gap_seed(const analysis_data *D, const analysis_gap *G, int u, int s) {
  const cs_cell_result *cu = D->cell[analysis_cidx(D, u, G->task, G->depth, G->regime, s)];
  const cs_cell_result *cg = D->cell[analysis_cidx(D, G->arch, G->task, G->depth, G->regime, s)];
  return cu && cg ? cg->test_acc - cu->test_acc : NAN;
}

static int analysis_claim3_checks(analysis_data *D, double *v) {
  int g = analysis_find_arch(D, ARCH_GATED), u = analysis_find_arch(D, ARCH_UNGATED);
  if (g < 0 || u < 0) return CS_OK;
  for (int lin = 0; lin < 2; lin++) {
    double *pool = NULL;
    int *cnt = NULL;
    int rows = 0, rc = CS_CALLOC(pool, D->n_seed);
    if (!rc) rc = CS_CALLOC(cnt, D->n_seed);
    for (int i = 0; !rc && i < D->n_gap; i++) {
      const analysis_gap *G = &D->gap[i];
      if (G->arch != g || (strcmp(task_boundary(D->task[G->task]), "linear") == 0) != lin) continue;
      for (int s = 0; s < D->n_seed; s++) {
        v[s] = analysis_gap_seed(D, G, u, s);
        if (isfinite(v[s])) pool[s] += v[s], cnt[s]++;
      }
      char scope[320], key[340];
      analysis_c3_scope(D, G, scope, sizeof scope);
      analysis_check *c;
      rc = analysis_check_add(D, "3", lin ? "3:linear-rows" : "3:nonlinear-rows", 0, &c, "%s", scope);
      if (rc) break;
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
      rc = analysis_check_add(D, "3", NULL, 0, &c, "%s;pooled", lin ? "linear" : "nonlinear");
      if (!rc && lin) analysis_check_tost(D, c, v, D->n_seed);
      if (!rc && !lin) rc = analysis_check_seed(D, c, v, D->n_seed, ANALYSIS_GREATER, "3|nonlinear|pooled");
    }
    free(pool), free(cnt);
    CS_CHECK(rc);
  }
  return CS_OK;
}

/* Supported when the nonlinear gain is and the linear tasks are equivalent
 * (intersection-union: both at level α, p the larger). */
static int analysis_claim3_verdict(analysis_data *D) {
  const analysis_check *nl0 = analysis_check_find(D, "3", "nonlinear;pooled");
  const analysis_check *li0 = analysis_check_find(D, "3", "linear;pooled");
  if (!nl0 && !li0) return CS_OK;
  analysis_check nl = nl0 ? *nl0 : (analysis_check){0}, li = li0 ? *li0 : (analysis_check){0};
  analysis_check *v;
  CS_CHECK(analysis_check_add(D, "3", NULL, 1, &v, "verdict"));
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

/* ---- claim 4 ---- */

static const analysis_measure_id C4_VALUE[C4M_COUNT] = {MEASURE_KH_ABS, MEASURE_INTABSK, MEASURE_KT_ABS};

const char *analysis_c4_measure_name(int m) {
  static const char *const N[C4M_COUNT] = {"Kh", "intabsK", "Kt"};
  return N[m];
}

const char *analysis_c4_dir_name(int prefix) { return prefix ? "along-layers" : "across-depths"; }

void analysis_c4_scope(const analysis_data *D, int a, int t, int r, int prefix, int m, char *buf,
                       size_t len) {
  snprintf(buf, len, "%s;%s;%s;%s;%s", config_arch_name(D->arch[a]), config_task_name(D->task[t]),
           D->regime[r].name, analysis_c4_dir_name(prefix), analysis_c4_measure_name(m));
}

/* The deepest depth index with a done cell of row (a, t, r), or -1. */
static int analysis_c4_deepest(const analysis_data *D, int a, int t, int r) {
  for (int d = D->n_depth - 1; d >= 0; d--)
    if (D->group[analysis_gidx(D, a, t, d, r)].n_done > 0) return d;
  return -1;
}

/* Seed s's slope of log value on log depth (prefix 0) or on log layer of
 * its deepest model (prefix 1); NaN with fewer than two positive values.
 * *res accumulates the resolved share of the cells used, *nres their count. */
static double analysis_c4_seed_slope(const analysis_data *D, int a, int t, int r, int prefix,
                                     analysis_measure_id q, int s, double *x, double *y, double *res,
                                     int *nres) {
  int k = 0;
  if (!prefix) {
    for (int d = 0; d < D->n_depth; d++) {
      const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
      double val = analysis_cell_value(c, 0, q);
      if (!(val > 0) || !isfinite(val)) continue;
      x[k] = log((double)D->depth[d]), y[k++] = log(val);
      double fr = analysis_cell_value(c, 0, MEASURE_FLAT) + analysis_cell_value(c, 0, MEASURE_CURVED);
      if (isfinite(fr)) *res += fr, (*nres)++;
    }
  } else {
    int d = analysis_c4_deepest(D, a, t, r);
    const cs_cell_result *c = d >= 0 ? D->cell[analysis_cidx(D, a, t, d, r, s)] : NULL;
    for (int l = 1; c && l <= c->depth; l++) {
      double val = analysis_cell_value(c, l, q);
      if (!(val > 0) || !isfinite(val)) continue;
      x[k] = log((double)l), y[k++] = log(val);
      double fr = analysis_cell_value(c, l, MEASURE_FLAT) + analysis_cell_value(c, l, MEASURE_CURVED);
      if (isfinite(fr)) *res += fr, (*nres)++;
    }
  }
  return analysis_ls_slope(x, y, k, NULL);
}

static int analysis_claim4_checks(analysis_data *D, double *v) {
  int maxx = D->n_depth;
  for (int d = 0; d < D->n_depth; d++)
    if (D->depth[d] > maxx) maxx = D->depth[d];
  double *x = NULL, *y = NULL;
  int rc = CS_CALLOC(x, maxx);
  if (!rc) rc = CS_CALLOC(y, maxx);
  for (int a = 0; !rc && a < D->n_arch; a++)
    for (int t = 0; !rc && t < D->n_task; t++)
      for (int r = 0; !rc && r < D->n_regime; r++) {
        const analysis_amp *A = &D->amp[analysis_aidx(D, a, t, r)];
        int gated = config_arch_gated(D->arch[a]);
        if (!A->present || (!gated && D->regime[r].skeleton && analysis_ungated_flat(D, t, r))) continue;
        for (int prefix = 0; !rc && prefix < 2; prefix++)
          for (int m = 0; !rc && m < C4M_COUNT; m++) {
            double res = 0;
            int nres = 0, any = 0;
            for (int s = 0; s < D->n_seed; s++) {
              v[s] = analysis_c4_seed_slope(D, a, t, r, prefix, C4_VALUE[m], s, x, y, &res, &nres);
              any |= isfinite(v[s]);
            }
            if (!any) continue;
            char scope[320], fam[32];
            analysis_c4_scope(D, a, t, r, prefix, m, scope, sizeof scope);
            snprintf(fam, sizeof fam, "4%s%s", gated ? "" : ":ungated", m == C4M_KT ? ":Kt" : "");
            analysis_check *c;
            rc = analysis_check_add(D, "4", fam, 0, &c, "%s", scope);
            if (!rc) rc = analysis_check_seed(D, c, v, D->n_seed, ANALYSIS_GREATER, scope);
            if (!rc) c->resolved = nres ? res / nres : NAN;
          }
      }
  free(x), free(y);
  return rc;
}

void analysis_c4_decomp(const analysis_data *D, int a, int t, int r, int prefix, analysis_decomp *out) {
  int dlast = analysis_c4_deepest(D, a, t, r), dfirst = -1;
  for (int d = 0; d < D->n_depth && dfirst < 0; d++)
    if (D->group[analysis_gidx(D, a, t, d, r)].n_done > 0) dfirst = d;
  out->n = 0;
  for (int e = 0; e < 2; e++) {
    double skt = 0, skh = 0;
    int k = 0;
    for (int s = 0; dlast >= 0 && s < D->n_seed; s++) {
      int d = prefix ? dlast : e ? dlast : dfirst;
      const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
      int l = prefix ? (e ? (c ? c->depth : 0) : 1) : 0;
      double kt = analysis_cell_value(c, l, MEASURE_KT_ABS), kh = analysis_cell_value(c, l, MEASURE_KH_ABS);
      if (!(kt > 0) || !(kh > 0) || !isfinite(kt) || !isfinite(kh)) continue;
      skt += log(kt), skh += log(kh), k++;
    }
    out->kt[e] = k ? skt / k : NAN, out->kh[e] = k ? skh / k : NAN;
    out->an[e] = out->kt[e] - out->kh[e];
    if (e == 0 || k < out->n) out->n = k;
  }
}

/* ---- the driver ---- */

static int analysis_claims_checks_run(analysis_data *D, double *v) {
  int rc = CS_OK, u = analysis_find_arch(D, ARCH_UNGATED);
  for (int g = 0; !rc && u >= 0 && g < D->n_arch; g++)
    for (int hat = 0; !rc && hat < 2 && config_arch_gated(D->arch[g]); hat++)
      rc = analysis_claim2_check(D, g, u, hat, v);
  if (!rc) rc = analysis_claim3_checks(D, v);
  if (!rc) rc = analysis_claim4_checks(D, v);
  return rc;
}

int analysis_claims_checks(analysis_data *D) { return analysis_with_seed_scratch(D, analysis_claims_checks_run); }

int analysis_claims_verdicts(analysis_data *D) {
  CS_CHECK(analysis_claim1_verdict(D));
  analysis_check *kt = NULL, *kh = NULL, *v;
  int has2 = 0;
  for (int i = 0; i < D->checks.n; i++) has2 |= strcmp(D->checks.c[i].claim, "2") == 0;
  if (has2) {
    CS_CHECK(analysis_verdict_from(D, "2", "2:Kt", NULL, ANALYSIS_ANY, "Kt", &kt));
    analysis_decision dt = kt->decision;
    CS_CHECK(analysis_verdict_from(D, "2", "2:Kh", NULL, ANALYSIS_ANY, "Kh", &kh));
    analysis_decision dh = kh->decision;
    int nh = kh->n;
    double keep_kh_p = kh->p_adj;
    /* both normalisations agree, or the verdict is inconclusive (they disagree) */
    analysis_check copy = *kt;
    CS_CHECK(analysis_check_add(D, "2", NULL, 1, &v, "verdict"));
    analysis_check keep = *v;
    *v = copy;
    memcpy(v->scope, keep.scope, sizeof v->scope);
    v->decision = nh == 0 || dt == dh ? dt : ANALYSIS_INCONCLUSIVE;
    snprintf(v->test, sizeof v->test, "Kt and Kh agree");
    snprintf(v->adjust, sizeof v->adjust, "intersection-union");
    if (nh > 0 && isfinite(keep_kh_p) && keep_kh_p > v->p_adj) v->p_raw = v->p_adj = keep_kh_p;
  }
  CS_CHECK(analysis_claim3_verdict(D));
  int has4 = 0;
  for (int i = 0; i < D->checks.n; i++)
    has4 |= strcmp(D->checks.c[i].claim, "4") == 0 && strcmp(D->checks.c[i].family, "4") == 0;
  if (has4) return analysis_verdict_from(D, "4", "4", NULL, ANALYSIS_ANY, "verdict", &v);
  /* rows, but no K̂ or ∫|K| dA to test (no classification) or no gated row */
  int rows = 0;
  for (size_t i = 0; D->amp && i < (size_t)D->n_arch * D->n_task * D->n_regime; i++) rows += D->amp[i].present;
  if (!rows) return CS_OK;
  CS_CHECK(analysis_check_add(D, "4", NULL, 1, &v, "verdict"));
  snprintf(v->test, sizeof v->test, "no Kh or intabsK to test");
  v->decision = ANALYSIS_INCONCLUSIVE;
  return CS_OK;
}

/* Claims 1–4 in the order of index.md and verdicts.csv (sections.h): what
 * each says in the summary table, the start of its section's heading. */
const analysis_claim_info ANALYSIS_CORE_CLAIMS[] = {
    {"1", "ungated attention is flat in the affine skeleton", "Claim 1 "},
    {"2", "gating makes the representation curved", "Claim 2 "},
    {"3", "gating improves accuracy on nonlinear-boundary tasks, not on linear ones", "Claim 3 "},
    {"4", "depth amplifies curvature", "Claim 4 "},
    {NULL, NULL, NULL},
};

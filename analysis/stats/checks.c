/* checks.c — the machine-readable verdicts (analysis/VERDICTS.md,
 * "verdicts.csv"): the list of checks and verdicts every claim adds to
 * (D->checks), the per-seed test that fills a check, Holm's adjustment
 * over each family and the decisions it implies, the lookup index.md's
 * writers use. verdicts.csv itself is written by csv.c, the driver that
 * runs the checks is compute.c. The claims' own rules are in their
 * section files (claim1.c … claim4.c, learning.c, …); index.md prints
 * from these structs. */
#include "checks.h"

#include "compute.h"
#include "output.h"
#include "sections.h"
#include "writers.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const DECISION_NAME[ANALYSIS_DECISION_COUNT] = {
    "supported", "not supported", "equivalent", "not equivalent", "inconclusive", "too few", "not testable"};

const char *analysis_decision_name(analysis_decision d) {
  return d >= 0 && d < ANALYSIS_DECISION_COUNT ? DECISION_NAME[d] : "?";
}

void analysis_checks_free(analysis_checks *v) {
  free(v->c);
  v->c = NULL, v->n = v->cap = 0;
}

int analysis_check_add(analysis_data *D, const char *claim, const char *family, int verdict,
                       analysis_check **out, const char *scope_fmt, ...) {
  analysis_checks *v = &D->checks;
  if (v->n == v->cap) {
    int cap = v->cap ? 2 * v->cap : 64;
    analysis_check *c = realloc(v->c, (size_t)cap * sizeof *c);
    if (!c) return cs_error(CS_ERR_NOMEM, "analyze: out of memory (verdicts)");
    v->c = c, v->cap = cap;
  }
  analysis_check *c = &v->c[v->n++];
  memset(c, 0, sizeof *c);
  snprintf(c->claim, sizeof c->claim, "%s", claim);
  snprintf(c->family, sizeof c->family, "%s", family ? family : "");
  va_list ap;
  va_start(ap, scope_fmt);
  vsnprintf(c->scope, sizeof c->scope, scope_fmt, ap);
  va_end(ap);
  for (char *p = c->scope; *p; p++)
    if (*p == ',' || *p == '\n') *p = ';'; /* the CSV has no quoting */
  snprintf(c->unit, sizeof c->unit, "seed");
  snprintf(c->adjust, sizeof c->adjust, "none");
  c->verdict = verdict;
  c->effect = c->effect_lo = c->effect_hi = NAN;
  c->dz = c->dz_lo = c->dz_hi = NAN;
  c->p_raw = c->p_adj = NAN;
  c->resolved = NAN;
  c->decision = ANALYSIS_INCONCLUSIVE;
  c->key = -1;
  *out = c;
  return CS_OK;
}

const analysis_check *analysis_check_keyed(const analysis_data *D, const char *claim, int key) {
  for (int i = 0; key >= 0 && i < D->checks.n; i++)
    if (D->checks.c[i].key == key && strcmp(D->checks.c[i].claim, claim) == 0) return &D->checks.c[i];
  return NULL;
}

const analysis_check *analysis_check_find(const analysis_data *D, const char *claim, const char *scope) {
  for (int i = 0; i < D->checks.n; i++)
    if (strcmp(D->checks.c[i].claim, claim) == 0 && strcmp(D->checks.c[i].scope, scope) == 0)
      return &D->checks.c[i];
  return NULL;
}

static const char *analysis_side_name(analysis_side s) {
  return s == ANALYSIS_GREATER ? "one-sided greater" : s == ANALYSIS_LESS ? "one-sided less" : "two-sided";
}

int analysis_check_seed(const analysis_data *D, analysis_check *c, const double *d, int n,
                        analysis_side side, const char *key) {
  rng_stream rng = rng_stream_make(D->opt.bootstrap_seed, "analysis:signflip", 0, key);
  analysis_perm P;
  CS_CHECK(analysis_signflip(d, n, side, &rng, &P));
  analysis_ci m, dz;
  analysis_mean_ci(d, n, ANALYSIS_LEVEL, &m);
  analysis_dz(d, n, ANALYSIS_LEVEL, &dz);
  c->side = side, c->tost = 0;
  c->n = P.n;
  c->p_raw = P.p, c->mc_se = P.mc_se;
  c->effect = m.mean, c->effect_lo = m.lo, c->effect_hi = m.hi;
  c->dz = dz.mean, c->dz_lo = dz.lo, c->dz_hi = dz.hi;
  snprintf(c->test, sizeof c->test, "sign-flip %s %s", P.n <= ANALYSIS_EXACT_MAX ? "exact" : "monte-carlo",
           analysis_side_name(side));
  return CS_OK;
}

void analysis_check_tost(const analysis_data *D, analysis_check *c, const double *d, int n) {
  analysis_tost T;
  analysis_tost_t(d, n, D->opt.margin, D->opt.alpha, &T);
  analysis_ci dz;
  analysis_dz(d, n, ANALYSIS_LEVEL, &dz);
  c->tost = 1, c->margin = D->opt.margin, c->side = ANALYSIS_TWO_SIDED;
  c->n = T.ci.n;
  c->p_raw = T.p;
  c->effect = T.ci.mean, c->effect_lo = T.ci.lo, c->effect_hi = T.ci.hi;
  c->dz = dz.mean, c->dz_lo = dz.lo, c->dz_hi = dz.hi;
  snprintf(c->test, sizeof c->test, "TOST t (margin %g)", D->opt.margin);
}

/* The decision of a tested check from its adjusted p. */
static void analysis_check_decide(const analysis_data *D, analysis_check *c) {
  double a = D->opt.alpha;
  if (c->tost) {
    if (c->n < 2)
      c->decision = ANALYSIS_TOO_FEW;
    else if (c->p_adj < a)
      c->decision = ANALYSIS_EQUIVALENT;
    else if (c->effect_lo > c->margin || c->effect_hi < -c->margin)
      c->decision = ANALYSIS_NOT_EQUIVALENT;
    else
      c->decision = ANALYSIS_INCONCLUSIVE;
    return;
  }
  if (c->n < c->needs)
    c->decision = ANALYSIS_TOO_FEW;
  else if (c->p_adj < a && c->effect > 0)
    c->decision = ANALYSIS_SUPPORTED;
  else
    c->decision = ANALYSIS_NOT_SUPPORTED;
}

/* Holm over every family of the tested checks added so far, then each
 * check's decision. A check without a family is a family of one. */
int analysis_checks_adjust(analysis_data *D) {
  analysis_checks *v = &D->checks;
  double *p = NULL, *adj = NULL;
  int *mem = NULL;
  int rc = CS_CALLOC(p, v->n + 1);
  if (!rc) rc = CS_CALLOC(adj, v->n + 1);
  if (!rc) rc = CS_CALLOC(mem, v->n + 1);
  for (int i = 0; !rc && i < v->n; i++) {
    analysis_check *c = &v->c[i];
    if (c->verdict || c->family_size) continue; /* done (a verdict, or adjusted already) */
    int k = 0;
    for (int j = i; j < v->n; j++) {
      analysis_check *o = &v->c[j];
      if (o->verdict || o->family_size) continue;
      if (j != i && (!c->family[0] || strcmp(o->family, c->family) != 0)) continue;
      mem[k] = j, p[k] = o->p_raw, k++;
    }
    int m = analysis_holm(p, k, adj);
    if (m < 0) rc = cs_error(CS_ERR_NOMEM, "analyze: out of memory (Holm)");
    for (int j = 0; j < k; j++) {
      analysis_check *o = &v->c[mem[j]];
      o->family_size = m > 0 ? m : 1;
      o->p_adj = adj[j];
      snprintf(o->adjust, sizeof o->adjust, m > 1 ? "holm(%d)" : "none", m);
      o->needs = o->tost ? 2 : analysis_seeds_needed(D->opt.alpha, o->family_size, o->side);
      analysis_check_decide(D, o);
    }
  }
  free(p), free(adj), free(mem);
  return rc;
}

static int analysis_ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

analysis_decision analysis_check_two_sided(const analysis_data *D, const analysis_check *c) {
  if (c->decision == ANALYSIS_TOO_FEW) return ANALYSIS_TOO_FEW;
  if (c->p_adj < D->opt.alpha) return c->effect > 0 ? ANALYSIS_SUPPORTED : ANALYSIS_NOT_SUPPORTED;
  return ANALYSIS_INCONCLUSIVE;
}

int analysis_verdict_of_check(analysis_data *D, const analysis_check *check) {
  analysis_check c = *check, *v; /* check points into D->checks, which the add may move */
  CS_CHECK(analysis_check_add(D, c.claim, c.family, 1, &v, "%s", c.scope));
  char scope[sizeof v->scope];
  memcpy(scope, v->scope, sizeof scope);
  *v = c;
  memcpy(v->scope, scope, sizeof scope);
  v->verdict = 1;
  v->decision = analysis_check_two_sided(D, &c);
  return CS_OK;
}

int analysis_verdict_from(analysis_data *D, const char *claim, const char *family, const char *suffix,
                          analysis_combine how, const char *scope, analysis_check **out) {
  int k = 0, sup = 0, few = 0, best = -1;
  for (int i = 0; i < D->checks.n; i++) {
    const analysis_check *c = &D->checks.c[i];
    if (c->verdict || strcmp(c->claim, claim) || strcmp(c->family, family)) continue;
    if (suffix && !analysis_ends_with(c->scope, suffix)) continue;
    k++;
    sup += c->decision == ANALYSIS_SUPPORTED;
    few += c->decision == ANALYSIS_TOO_FEW;
    /* the deciding check: ANY the smallest adjusted p, ALL the largest */
    if (best < 0 || (how == ANALYSIS_ANY ? c->p_adj < D->checks.c[best].p_adj
                                          : !(c->p_adj <= D->checks.c[best].p_adj)))
      best = i;
  }
  analysis_check b = best >= 0 ? D->checks.c[best] : (analysis_check){0};
  analysis_check *v;
  CS_CHECK(analysis_check_add(D, claim, family, 1, &v, "%s", scope));
  if (k == 0) return *out = v, CS_OK;
  v->n = b.n, v->needs = b.needs, v->family_size = b.family_size;
  v->effect = b.effect, v->effect_lo = b.effect_lo, v->effect_hi = b.effect_hi;
  v->dz = b.dz, v->dz_lo = b.dz_lo, v->dz_hi = b.dz_hi;
  v->p_raw = b.p_raw, v->p_adj = b.p_adj, v->mc_se = b.mc_se, v->resolved = b.resolved;
  v->side = b.side;
  snprintf(v->test, sizeof v->test, "%s of %d checks", how == ANALYSIS_ANY ? "any" : "all", k);
  snprintf(v->adjust, sizeof v->adjust, "%s", b.adjust);
  if (how == ANALYSIS_ANY ? sup > 0 : sup == k)
    v->decision = ANALYSIS_SUPPORTED;
  else if (few == k)
    v->decision = ANALYSIS_TOO_FEW;
  else
    v->decision = ANALYSIS_NOT_SUPPORTED;
  *out = v;
  return CS_OK;
}

/* ---- text shared by the verdict lines of index.md ---- */

const char *analysis_check_p_text(char *buf, size_t len, const analysis_check *c) {
  if (c->mc_se > 0)
    snprintf(buf, len, "p = %s ± %s (Monte Carlo), Holm-adjusted %s", F4(c->p_raw), F4(c->mc_se),
             F4(c->p_adj));
  else if (c->family_size > 1)
    snprintf(buf, len, "p = %s, Holm-adjusted %s (family of %d)", F4(c->p_raw), F4(c->p_adj),
             c->family_size);
  else
    snprintf(buf, len, "p = %s", F4(c->p_raw));
  return buf;
}

const char *analysis_check_decision_text(char *buf, size_t len, const analysis_check *c) {
  if (c->decision == ANALYSIS_TOO_FEW)
    snprintf(buf, len, "too few seeds (n = %d; needs ≥ %d)", c->n, c->needs);
  else
    snprintf(buf, len, "%s", analysis_decision_name(c->decision));
  return buf;
}

const char *analysis_check_effect_text(char *buf, size_t len, const analysis_check *c) {
  if (isfinite(c->dz))
    snprintf(buf, len, "%s [%s, %s], d_z %s [%s, %s]", F4(c->effect), F4(c->effect_lo), F4(c->effect_hi),
             F4(c->dz), F4(c->dz_lo), F4(c->dz_hi));
  else
    snprintf(buf, len, "%s [%s, %s]", F4(c->effect), F4(c->effect_lo), F4(c->effect_hi));
  return buf;
}

/* One check's line: "n = 5 seeds: effect [lo, hi], d_z …; p …; decision",
 * and the resolved-share caution when the statistic rests on under half of
 * the points (analysis/README.md). */
void analysis_md_check(FILE *f, const analysis_check *c) {
  char b1[160], b2[160], b3[96];
  fprintf(f, "n = %d seed%s: %s; %s (%s) → **%s**", c->n, c->n == 1 ? "" : "s",
          analysis_check_effect_text(b1, sizeof b1, c), analysis_check_p_text(b2, sizeof b2, c), c->test,
          analysis_check_decision_text(b3, sizeof b3, c));
  if (c->resolved < 0.5)
    fprintf(f, " (drawn from under half of the points: resolved share %s)", F4(c->resolved));
}

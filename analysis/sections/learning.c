/* learning.c — sample efficiency (analysis/README.md, "Sample efficiency"):
 * when the sweep has a train_points axis, one learning curve per (task,
 * depth, base regime): test accuracy over seeds at each training-set size,
 * per arch; the training points each arch needs to reach the target
 * accuracy (default ANALYSIS_TARGET_SHARE of the best mean accuracy any arch
 * reaches on the curve; analysis_options.target_acc sets it) by monotone
 * interpolation; and the ratio ungated / arch of those counts. Intervals
 * and the verdict: per seed, its own count and its log ratio (paired by
 * seed: cells with one seed share their initial tensors), t intervals on
 * the log scale, a two-sided sign-flip test per comparison, Holm over them
 * (checks.c). Also its tables (learning_curve.csv, samples_to_target.csv)
 * and its section of index.md; a row of the section table (sections.c). */
#include "learning.h"

#include "checks.h"
#include "compute.h"
#include "output.h"
#include "sections.h"
#include "writers.h"

#include "curvsweep/error.h"
#include "curvsweep/quantile.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The section's state, or NULL (no train_points axis). */
static const analysis_learning *analysis_learning_of(const analysis_data *D) {
  return analysis_section_get(D, ANALYSIS_LEARNING_NAME);
}

double analysis_samples_to_target(int n, const int *x, const double *y, double target, int *where) {
  int prev = -1;      /* the last finite point, below the target */
  double run = -INFINITY;
  *where = -1;
  for (int i = 0; i < n; i++) {
    if (!isfinite(y[i]) || !(x[i] > 0)) continue;
    if (y[i] >= target && y[i] > run) {
      if (prev < 0) {
        *where = 2; /* reached at the smallest size with data: at most x[i] */
        return x[i];
      }
      /* log n = log x_j + (T − M_j)/(y_i − M_j) · (log x_i − log x_j), M_j the running max */
      double f = (target - run) / (y[i] - run);
      *where = 1;
      return exp(log((double)x[prev]) + f * (log((double)x[i]) - log((double)x[prev])));
    }
    if (y[i] > run) run = y[i];
    prev = i;
  }
  if (prev < 0) return NAN;
  *where = 0;
  return INFINITY;
}

/* Mean test accuracy of arch a at every size of c over the seeds draw[0..S-1]
 * (indices into D->seed; NULL with S = n_seed: every seed once). */
static void analysis_lc_means(const analysis_data *D, const analysis_lcurve *c, int a, int S,
                              const int *draw, double *y) {
  for (int i = 0; i < c->n_x; i++) {
    double sum = 0;
    int k = 0;
    for (int j = 0; j < S; j++) {
      const cs_cell_result *r = D->cell[analysis_cidx(D, a, c->t, c->d, c->regime[i], draw ? draw[j] : j)];
      if (r && isfinite(r->test_acc)) sum += r->test_acc, k++;
    }
    y[i] = k ? sum / k : NAN;
  }
}

/* samples(ungated) / samples(a): inf/finite = inf, finite/inf = 0, inf/inf undefined (NaN). */
static double analysis_lc_ratio(double nu, double na) {
  if (isinf(nu) && isinf(na)) return NAN;
  return nu / na;
}

/* log of the training points seed s of arch a needs on curve c, by the
 * same monotone interpolation on the seed's own accuracies; censored at
 * twice the largest size when the seed never reaches the target
 * (analysis/README.md, "samples_to_target.csv"); NaN without data. y: n_x scratch. */
static double analysis_lc_seed_log_samples(const analysis_data *D, const analysis_lcurve *c, int a, int s,
                                           double *y) {
  for (int i = 0; i < c->n_x; i++) {
    const cs_cell_result *r = D->cell[analysis_cidx(D, a, c->t, c->d, c->regime[i], s)];
    y[i] = r ? r->test_acc : NAN;
  }
  int where;
  double n = analysis_samples_to_target(c->n_x, c->x, y, c->target, &where);
  if (isinf(n)) n = 2.0 * c->x[c->n_x - 1];
  return n > 0 ? log(n) : NAN;
}

/* Per seed, log samples(ungated) − log samples(a) (NaN unless both have data). */
static void analysis_lc_seed_log_ratios(const analysis_data *D, const analysis_lcurve *c, int u, int a,
                                        double *v, double *y) {
  for (int s = 0; s < D->n_seed; s++)
    v[s] = analysis_lc_seed_log_samples(D, c, u, s, y) - analysis_lc_seed_log_samples(D, c, a, s, y);
}

/* Scratch of one curve's estimates. */
typedef struct {
  int *ssel;          /* (n_seed) the seeds with data */
  double *col;        /* (n_seed) one size's accuracies; per-seed values */
  double *y;          /* (n_x) */
} analysis_lc_work;

/* Point estimates and intervals of curve c. */
static int analysis_lc_estimate(const analysis_data *D, analysis_lcurve *c, analysis_lc_work *W) {
  int A = D->n_arch, u = analysis_find_arch(D, ARCH_UNGATED);
  /* the seeds with a done cell somewhere on the curve (resampled by the bootstrap) */
  int S = 0;
  for (int s = 0; s < D->n_seed; s++) {
    int any = 0;
    for (int a = 0; a < A && !any; a++)
      for (int i = 0; i < c->n_x && !any; i++)
        any = D->cell[analysis_cidx(D, a, c->t, c->d, c->regime[i], s)] != NULL;
    if (any) W->ssel[S++] = s;
  }
  c->n_seeds = S;
  /* accuracy per size and arch; the target */
  c->best_acc = NAN;
  for (int a = 0; a < A; a++)
    for (int i = 0; i < c->n_x; i++) {
      analysis_ci *ci = &c->acc[(size_t)a * c->n_x + i];
      for (int s = 0; s < D->n_seed; s++) {
        const cs_cell_result *r = D->cell[analysis_cidx(D, a, c->t, c->d, c->regime[i], s)];
        W->col[s] = r ? r->test_acc : NAN;
      }
      analysis_mean_ci(W->col, D->n_seed, ANALYSIS_LEVEL, ci);
      analysis_ci_clip01(ci);
      if (isfinite(ci->mean) && !(ci->mean <= c->best_acc)) c->best_acc = ci->mean;
    }
  c->target_given = isfinite(D->opt.target_acc);
  c->target = c->target_given ? D->opt.target_acc : ANALYSIS_TARGET_SHARE * c->best_acc;
  /* point estimates */
  for (int a = 0; a < A; a++) {
    analysis_lc_means(D, c, a, D->n_seed, NULL, W->y);
    c->samples[a].estimate = analysis_samples_to_target(c->n_x, c->x, W->y, c->target, &c->reached[a]);
    c->samples[a].lo = c->samples[a].hi = NAN;
  }
  for (int a = 0; a < A; a++) {
    c->ratio[a].estimate = u >= 0 && a != u ? analysis_lc_ratio(c->samples[u].estimate, c->samples[a].estimate) : NAN;
    c->ratio[a].lo = c->ratio[a].hi = NAN;
  }
  if (S < 2 || !isfinite(c->target)) return CS_OK;
  /* intervals: t on the log of each seed's own count (censored), exponentiated */
  for (int a = 0; a < A; a++) {
    for (int s = 0; s < D->n_seed; s++) W->col[s] = analysis_lc_seed_log_samples(D, c, a, s, W->y);
    analysis_ci ci;
    analysis_mean_ci(W->col, D->n_seed, ANALYSIS_LEVEL, &ci);
    c->samples[a].lo = exp(ci.lo), c->samples[a].hi = exp(ci.hi), c->samples[a].n_valid = ci.n;
    if (u < 0 || a == u) continue;
    analysis_lc_seed_log_ratios(D, c, u, a, W->col, W->y);
    analysis_mean_ci(W->col, D->n_seed, ANALYSIS_LEVEL, &ci);
    c->ratio[a].lo = exp(ci.lo), c->ratio[a].hi = exp(ci.hi), c->ratio[a].n_valid = ci.n;
  }
  return CS_OK;
}

/* Regimes sorted by (base name, train_points) through a context-free key. */
typedef struct {
  int r, x;
  char base[ANALYSIS_NAME_LEN], tag[ANALYSIS_NAME_LEN];
} analysis_lc_key;

static int analysis_cmp_lc_key(const void *pa, const void *pb) {
  const analysis_lc_key *a = pa, *b = pb;
  int c = strcmp(a->base, b->base);
  if (c) return c;
  return (a->x > b->x) - (a->x < b->x);
}

/* One curve per (task, depth, base regime) with a done cell: its sizes and regimes. */
static int analysis_lc_build(const analysis_data *D, analysis_learning *L, analysis_lc_key *keys) {
  int R = D->n_regime;
  for (int r = 0; r < R; r++) {
    keys[r].r = r;
    keys[r].x = D->regime[r].cfg.train_points;
    analysis_regime_base(D, r, L->ax_train, keys[r].base, sizeof keys[r].base, keys[r].tag,
                         sizeof keys[r].tag);
  }
  qsort(keys, R, sizeof *keys, analysis_cmp_lc_key);
  int n_base = 0;
  for (int r = 0; r < R; r++) n_base += r == 0 || strcmp(keys[r].base, keys[r - 1].base) != 0;
  CS_CHECK(CS_CALLOC(L->lc, (size_t)D->n_task * D->n_depth * n_base));
  for (int t = 0; t < D->n_task; t++)
    for (int d = 0; d < D->n_depth; d++)
      for (int r0 = 0; r0 < R;) {
        int r1 = r0;
        while (r1 < R && strcmp(keys[r1].base, keys[r0].base) == 0) r1++;
        int any = 0;
        for (int k = r0; k < r1; k++)
          for (int a = 0; a < D->n_arch; a++) any |= D->group[analysis_gidx(D, a, t, d, keys[k].r)].n_done > 0;
        if (any) {
          analysis_lcurve *c = &L->lc[L->n_lc++];
          c->t = t, c->d = d, c->n_x = r1 - r0;
          snprintf(c->base, sizeof c->base, "%s", keys[r0].base);
          snprintf(c->file_tag, sizeof c->file_tag, "%s", keys[r0].tag);
          c->cell_id = D->regime[keys[r0].r].cell_id;
          CS_CHECK(CS_CALLOC(c->x, c->n_x));
          CS_CHECK(CS_CALLOC(c->regime, c->n_x));
          for (int k = r0; k < r1; k++) c->x[k - r0] = keys[k].x, c->regime[k - r0] = keys[k].r;
          CS_CHECK(CS_CALLOC(c->acc, (size_t)D->n_arch * c->n_x));
          CS_CHECK(CS_CALLOC(c->samples, D->n_arch));
          CS_CHECK(CS_CALLOC(c->reached, D->n_arch));
          CS_CHECK(CS_CALLOC(c->ratio, D->n_arch));
        }
        r0 = r1;
      }
  return CS_OK;
}

/* The longest curve's sizes (at least 1): the length of the per-size scratch. */
static int analysis_lc_max_x(const analysis_learning *L) {
  int max_x = 1;
  for (int i = 0; i < L->n_lc; i++)
    if (L->lc[i].n_x > max_x) max_x = L->lc[i].n_x;
  return max_x;
}

static int analysis_learning_pipeline(const analysis_data *D, analysis_learning *L, analysis_lc_key **keys,
                                      analysis_lc_work *W) {
  CS_CHECK(CS_CALLOC(*keys, D->n_regime));
  CS_CHECK(analysis_lc_build(D, L, *keys));
  CS_CHECK(CS_CALLOC(W->ssel, D->n_seed));
  CS_CHECK(CS_CALLOC(W->col, D->n_seed));
  CS_CHECK(CS_CALLOC(W->y, analysis_lc_max_x(L)));
  for (int i = 0; i < L->n_lc; i++) CS_CHECK(analysis_lc_estimate(D, &L->lc[i], W));
  return CS_OK;
}

int analysis_learning_compute(analysis_data *D) {
  int ax_train = spec_find_axis(D->spec, "train_points");
  if (ax_train < 0) return CS_OK;
  void **slot = analysis_section_state(D, ANALYSIS_LEARNING_NAME);
  analysis_learning *L = NULL;
  analysis_lc_key *keys = NULL;
  analysis_lc_work W = {0};
  int rc = CS_CALLOC(L, 1);
  if (!rc) *slot = L, L->ax_train = ax_train;
  if (!rc) rc = analysis_learning_pipeline(D, L, &keys, &W);
  free(keys), free(W.ssel), free(W.col), free(W.y);
  return rc;
}

void analysis_learning_free(analysis_data *D) {
  void **slot = analysis_section_state(D, ANALYSIS_LEARNING_NAME);
  analysis_learning *L = slot ? *slot : NULL;
  if (!L) return;
  for (int i = 0; i < L->n_lc; i++) {
    analysis_lcurve *c = &L->lc[i];
    free(c->x), free(c->regime), free(c->acc), free(c->samples), free(c->reached), free(c->ratio);
  }
  free(L->lc), free(L);
  *slot = NULL;
}

/* ---- the checks and the verdict (verdicts.csv) ---- */

static void analysis_lc_scope(const analysis_data *D, const analysis_lcurve *c, int a, char *buf, size_t len) {
  snprintf(buf, len, "%s;depth %d;%s;%s", config_task_name(D->task[c->t]), D->depth[c->d], c->base,
           config_arch_name(D->arch[a]));
}

int analysis_learning_checks(analysis_data *D) {
  const analysis_learning *L = analysis_learning_of(D);
  int u = analysis_find_arch(D, ARCH_UNGATED);
  if (u < 0 || !L || L->n_lc == 0) return CS_OK;
  double *v = NULL, *y = NULL;
  int rc = CS_CALLOC(v, D->n_seed > 0 ? D->n_seed : 1);
  if (!rc) rc = CS_CALLOC(y, analysis_lc_max_x(L));
  for (int i = 0; !rc && i < L->n_lc; i++) {
    const analysis_lcurve *c = &L->lc[i];
    if (c->n_x < 2 || !isfinite(c->target) || c->reached[u] < 0) continue;
    for (int a = 0; !rc && a < D->n_arch; a++) {
      if (!config_arch_gated(D->arch[a]) || c->reached[a] < 0) continue;
      analysis_lc_seed_log_ratios(D, c, u, a, v, y);
      char scope[320];
      analysis_lc_scope(D, c, a, scope, sizeof scope);
      analysis_check *k;
      rc = analysis_check_add(D, "sample-efficiency", "sample-efficiency", 0, &k, "%s", scope);
      if (!rc) rc = analysis_check_seed(D, k, v, D->n_seed, ANALYSIS_TWO_SIDED, scope);
    }
  }
  free(v), free(y);
  return rc;
}

/* After Holm: every check's effect becomes the ratio samples(ungated) /
 * samples(arch), exp of the mean log ratio, with its interval from the log
 * scale; the verdict: supported when some comparison is (gated needs
 * significantly fewer) and none goes the other way significantly, not
 * supported when none is supported, inconclusive when both happen. */
int analysis_learning_verdicts(analysis_data *D) {
  int any = 0, rev = 0;
  for (int i = 0; i < D->checks.n; i++) {
    analysis_check *c = &D->checks.c[i];
    if (c->verdict || strcmp(c->claim, "sample-efficiency")) continue;
    any = 1;
    rev += c->p_adj < D->opt.alpha && c->effect < 0 && c->decision != ANALYSIS_TOO_FEW;
    c->effect = exp(c->effect), c->effect_lo = exp(c->effect_lo), c->effect_hi = exp(c->effect_hi);
  }
  if (!any) return CS_OK;
  analysis_check *v;
  CS_CHECK(analysis_verdict_from(D, "sample-efficiency", "sample-efficiency", NULL, ANALYSIS_ANY,
                                 "verdict", &v));
  if (rev && v->decision == ANALYSIS_SUPPORTED) v->decision = ANALYSIS_INCONCLUSIVE;
  return CS_OK;
}

/* The geometric mean over seeds of the ratio samples(ungated)/samples(a),
 * the centre of ratio_ci_* (its check's effect); NaN without a check. */
static double analysis_lc_ratio_gmean(const analysis_data *D, const analysis_lcurve *c, int a) {
  char scope[320];
  analysis_lc_scope(D, c, a, scope, sizeof scope);
  const analysis_check *k = analysis_check_find(D, "sample-efficiency", scope);
  return k ? k->effect : NAN;
}

/* The verdict of gated arch a on learning curve c: "yes", "no", "too few" or "inconclusive". */
static const char *analysis_lc_verdict(const analysis_data *D, const analysis_lcurve *c, int a) {
  char scope[320];
  analysis_lc_scope(D, c, a, scope, sizeof scope);
  const analysis_check *k = analysis_check_find(D, "sample-efficiency", scope);
  if (!k) return "inconclusive";
  if (k->decision == ANALYSIS_TOO_FEW) return "too few";
  if (k->p_adj < D->opt.alpha) return k->effect > 1 ? "yes" : "no";
  return "inconclusive";
}

/* ---- learning_curve.csv and samples_to_target.csv (columns: analysis/README.md) ---- */

/* The key columns of a learning-curve row: arch, task, boundary, depth, the
 * regime axes other than train_points and the base regime name. */
static void analysis_csv_lc_key_header(FILE *f, const analysis_data *D, const analysis_learning *L) {
  fprintf(f, "arch,task,boundary,depth");
  for (int k = 0; k < D->n_other; k++)
    if (D->other_axis[k] != L->ax_train) fprintf(f, ",%s", spec_axis_name(D->spec, D->other_axis[k]));
  fprintf(f, ",regime");
}

static void analysis_csv_lc_key(FILE *f, const analysis_data *D, const analysis_learning *L,
                                const analysis_lcurve *c, int a) {
  fprintf(f, "%s,%s,%s,%d", config_arch_name(D->arch[a]), config_task_name(D->task[c->t]),
          task_boundary(D->task[c->t]), D->depth[c->d]);
  for (int k = 0; k < D->n_other; k++) {
    if (D->other_axis[k] == L->ax_train) continue;
    char val[128];
    spec_axis_value_text(D->spec, D->other_axis[k], c->cell_id, val, sizeof val);
    fprintf(f, ",%s", val);
  }
  fprintf(f, ",%s", c->base);
}

/* learning_curve.csv: accuracy per (arch, curve, train_points). */
static void analysis_write_learning_curve(FILE *f, const analysis_data *D, const analysis_learning *L) {
  analysis_csv_lc_key_header(f, D, L);
  fprintf(f, ",train_points,n_seeds");
  analysis_csv_ci_header(f, "acc");
  fprintf(f, "\n");
  for (int i = 0; i < L->n_lc; i++) {
    const analysis_lcurve *c = &L->lc[i];
    for (int a = 0; a < D->n_arch; a++)
      for (int k = 0; k < c->n_x; k++) {
        const analysis_ci *ci = &c->acc[(size_t)a * c->n_x + k];
        if (ci->n == 0) continue;
        analysis_csv_lc_key(f, D, L, c, a);
        fprintf(f, ",%d,%d", c->x[k], ci->n);
        analysis_csv_ci(f, ci);
        fprintf(f, "\n");
      }
  }
}

/* samples_to_target.csv: per (arch, curve) the samples to reach the target and the ratio. */
static void analysis_write_samples(FILE *f, const analysis_data *D, const analysis_learning *L) {
  static const char *const REACHED[] = {"no", "yes", "at_smallest"};
  analysis_csv_lc_key_header(f, D, L);
  fprintf(f, ",n_sizes,train_points_min,train_points_max,n_seeds,best_acc,target_acc,target_source,"
             "reached,samples,samples_ci_low,samples_ci_high,ratio_ungated_over_arch,ratio_ci_low,"
             "ratio_ci_high,ratio_seed_gmean,verdict\n");
  int u = analysis_find_arch(D, ARCH_UNGATED);
  for (int i = 0; i < L->n_lc; i++) {
    const analysis_lcurve *c = &L->lc[i];
    for (int a = 0; a < D->n_arch; a++) {
      if (c->reached[a] < 0) continue;
      analysis_csv_lc_key(f, D, L, c, a);
      fprintf(f, ",%d,%d,%d,%d", c->n_x, c->x[0], c->x[c->n_x - 1], c->n_seeds);
      analysis_csv_num(f, c->best_acc);
      analysis_csv_num(f, c->target);
      fprintf(f, ",%s,%s", c->target_given ? "given" : "best", REACHED[c->reached[a]]);
      analysis_csv_boot(f, &c->samples[a]);
      analysis_csv_boot(f, &c->ratio[a]);
      analysis_csv_num(f, analysis_lc_ratio_gmean(D, c, a));
      fprintf(f, ",%s\n", a == u || u < 0 ? "n/a" : analysis_lc_verdict(D, c, a));
    }
  }
}

int analysis_learning_write_tables(const analysis_data *D, const analysis_outdir *dir) {
  const analysis_learning *L = analysis_learning_of(D);
  if (!L || L->n_lc == 0) return CS_OK;
  static const char *names[2] = {"learning_curve.csv", "samples_to_target.csv"};
  void (*writers[2])(FILE *, const analysis_data *, const analysis_learning *) = {
      analysis_write_learning_curve, analysis_write_samples};
  for (int i = 0; i < 2; i++) {
    analysis_file o;
    CS_CHECK(analysis_file_open(&o, dir, names[i]));
    writers[i](o.f, D, L);
    CS_CHECK(analysis_file_commit(&o));
  }
  return CS_OK;
}

void analysis_learning_list_tables(FILE *f, const analysis_data *D) {
  const analysis_learning *L = analysis_learning_of(D);
  if (L && L->n_lc > 0)
    fprintf(f, "- [learning_curve.csv](learning_curve.csv): per (arch, task, depth, regime, "
               "train_points): test accuracy over seeds\n"
               "- [samples_to_target.csv](samples_to_target.csv): per (arch, task, depth, regime): "
               "training points to reach the target accuracy, ratio ungated/arch, verdict\n");
}

/* ---- the section of index.md ---- */


/* A sample count: "412.3", "≤ 64" (reached at the smallest size), "not reached (> 2048)". */
static const char *analysis_samples_text(char *buf, size_t len, const analysis_lcurve *c, double v,
                                         int where) {
  if (where == 2 && v == c->x[0])
    snprintf(buf, len, "≤ %d", c->x[0]);
  else if (isinf(v))
    snprintf(buf, len, "not reached (> %d)", c->x[c->n_x - 1]);
  else
    snprintf(buf, len, "%s", F4(v));
  return buf;
}

/* "[lo, hi]" of a sample count or ratio interval, inf as ∞. */
static const char *analysis_interval_text(char *buf, size_t len, const analysis_boot *b) {
  if (isnan(b->lo) || isnan(b->hi))
    snprintf(buf, len, "no interval");
  else
    snprintf(buf, len, "[%s, %s]", isinf(b->lo) ? "∞" : F4(b->lo), isinf(b->hi) ? "∞" : F4(b->hi));
  return buf;
}

/* One curve's line; counts its verdicts into n[0] yes, n[1] no, n[2] inconclusive. */
static void analysis_md_learning_curve(FILE *f, const analysis_data *D, const analysis_lcurve *c,
                                       int *n) {
  int u = analysis_find_arch(D, ARCH_UNGATED);
  fprintf(f, "- %s, depth %d, regime `%s` (train_points %d … %d, %d value%s, %d seed%s, target %s): ",
          config_task_name(D->task[c->t]), D->depth[c->d], c->base, c->x[0], c->x[c->n_x - 1],
          c->n_x, c->n_x == 1 ? "" : "s", c->n_seeds, c->n_seeds == 1 ? "" : "s", F4(c->target));
  if (c->n_x < 2) {
    fprintf(f, "only one train_points value: no learning curve, no verdict.\n");
    n[2]++;
    return;
  }
  char b1[64], b2[64];
  for (int a = 0; a < D->n_arch; a++) {
    if (c->reached[a] < 0) continue;
    fprintf(f, "%s %s %s", config_arch_name(D->arch[a]),
            analysis_samples_text(b1, sizeof b1, c, c->samples[a].estimate, c->reached[a]),
            analysis_interval_text(b2, sizeof b2, &c->samples[a]));
    fprintf(f, "; ");
  }
  if (u < 0 || c->reached[u] < 0) {
    fprintf(f, "no ungated cells on this curve: no ratio, no verdict.\n");
    n[2]++;
    return;
  }
  int any = 0;
  for (int a = 0; a < D->n_arch; a++) {
    if (!config_arch_gated(D->arch[a]) || c->reached[a] < 0) continue;
    const char *v = analysis_lc_verdict(D, c, a);
    fprintf(f, "%sratio ungated/%s %s %s per seed (geometric mean; %s on the mean curves) → **%s**",
            any++ ? "; " : "", config_arch_name(D->arch[a]), F4(analysis_lc_ratio_gmean(D, c, a)),
            analysis_interval_text(b2, sizeof b2, &c->ratio[a]),
            isinf(c->ratio[a].estimate) ? "∞" : F4(c->ratio[a].estimate), v);
    n[v[0] == 'y' ? 0 : v[0] == 'n' ? 1 : 2]++;
  }
  if (!any) fprintf(f, "no gated arch on this curve: no verdict");
  if (c->n_seeds < 2) fprintf(f, " (one seed: no interval, so no verdict)");
  fprintf(f, ".\n");
}

int analysis_learning_write_md(FILE *f, const analysis_data *D) {
  const analysis_learning *L = analysis_learning_of(D);
  if (!L) return CS_OK;
  fprintf(f, "## Is gating more sample-efficient? (learning curves)\n\n");
  int len = spec_axis_length(D->spec, L->ax_train);
  fprintf(f, "Test accuracy against the number of training points (the `train_points` axis, %d "
             "value%s) per arch: [learning_curve.csv](learning_curve.csv). Per curve (task, depth, "
             "regime without train_points) the target accuracy is %s; the training points an arch "
             "needs to reach it come from monotone interpolation of its mean accuracy (running "
             "maximum, linear in log train_points between the sizes around the target). The test is "
             "per seed: each seed's own curve gives its count (censored at twice the largest size "
             "when it never reaches the target), the seed's log ratio samples(ungated)/samples(gated) "
             "is one value, a two-sided sign-flip test with Holm over every (curve, gated arch) "
             "comparison (α = %g) decides, and the ratio's 95%% interval is the t interval of the "
             "mean log ratio, exponentiated ([samples_to_target.csv](samples_to_target.csv)). Above 1 "
             "gating needs fewer.\n\n",
          len, len == 1 ? "" : "s",
          isfinite(D->opt.target_acc) ? "given by `--target-acc`" : "95% of the best mean accuracy any arch reaches on it",
          D->opt.alpha);
  int n[3] = {0, 0, 0};
  for (int i = 0; i < L->n_lc; i++) analysis_md_learning_curve(f, D, &L->lc[i], n);
  const analysis_check *V = analysis_check_find(D, "sample-efficiency", "verdict");
  char b1[96], b2[160];
  if (!V)
    fprintf(f, "\nVerdict: **gated reaches the target with fewer samples: not testable**%s\n\n",
            len < 2 ? ": the train_points axis has fewer than two values, there is no learning curve."
                    : ": no curve with both ungated and gated cells.");
  else
    fprintf(f, "\nVerdict: **gated reaches the target with fewer samples: %s** (%d yes, %d no, %d "
               "neither of %d comparisons; strongest: %s, n = %d seeds)%s\n\n",
            analysis_check_decision_text(b1, sizeof b1, V), n[0], n[1], n[2], n[0] + n[1] + n[2],
            analysis_check_p_text(b2, sizeof b2, V), V->n,
            n[0] && n[1] ? ": the curves disagree." : ".");
  return CS_OK;
}

/* ---- its row's claims, tables and columns (sections.h) ---- */

static const analysis_claim_info LEARNING_CLAIMS[] = {
    {"sample-efficiency", "gating needs fewer training points to reach the target accuracy",
     "Is gating more sample-efficient"},
    {NULL, NULL, NULL},
};

static const analysis_table_info LEARNING_TABLES[] = {
    {"learning_curve.csv", "a train_points axis",
     "per (arch, task, depth, regime, train_points): test accuracy over seeds"},
    {"samples_to_target.csv", "a train_points axis",
     "per (arch, task, depth, regime): training points to reach the target accuracy, ratio "
     "ungated/arch, verdict"},
    {NULL, NULL, NULL},
};

static const analysis_column_rule LEARNING_COLUMNS[] = {
    /* samples_to_target.csv */
    {"samples_to_target.csv", "n_sizes", "training-set sizes on the curve"},
    {"samples_to_target.csv", "train_points_min", "the smallest size"},
    {"samples_to_target.csv", "train_points_max", "the largest size"},
    {"samples_to_target.csv", "best_acc", "the best mean accuracy of any arch at any size"},
    {"samples_to_target.csv", "target_acc", "the target accuracy"},
    {"samples_to_target.csv", "target_source", "`best` (95% of best_acc) or `given` (--target-acc)"},
    {"samples_to_target.csv", "reached", "`yes` (interpolated), `at_smallest` (an upper bound), `no` "
                                         "(not within the grid)"},
    {"samples_to_target.csv", "samples*", "training points to reach the target (monotone "
                                          "interpolation in log size) and its interval over seeds"},
    {"samples_to_target.csv", "ratio_seed_gmean", "the geometric mean of the seeds' own ratios "
                                                  "samples(ungated)/samples(arch)"},
    {"samples_to_target.csv", "ratio*", "samples(ungated) / samples(arch) (> 1: the arch needs "
                                        "fewer) and its interval"},
    {"samples_to_target.csv", "verdict", "the row's check in verdicts.csv: `yes`, `no`, `too few`, "
                                         "`inconclusive`, `n/a` for ungated"},
    {NULL, NULL, NULL},
};

const analysis_section_about analysis_learning_about = {LEARNING_CLAIMS, LEARNING_TABLES, LEARNING_COLUMNS};

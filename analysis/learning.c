/* learning.c — sample efficiency (analysis/README.md, "Sample efficiency"):
 * when the sweep has a train_points axis, one learning curve per (task,
 * depth, base regime): test accuracy over seeds at each training-set size,
 * per arch; the training points each arch needs to reach the target
 * accuracy (default ANALYSIS_TARGET_SHARE of the best mean accuracy any arch
 * reaches on the curve; analysis_options.target_acc sets it) by monotone
 * interpolation; and the ratio ungated / arch of those counts. Intervals:
 * percentile bootstrap over seeds, one draw of seeds shared by every arch
 * and size (paired by seed: cells with one seed share their initial
 * tensors), from a counter-based stream keyed by the curve. The CSV
 * writing is csv.c, the verdict lines verdicts.c. */
#include "compute.h"

#include "curvsweep/error.h"
#include "curvsweep/quantile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Type-7 quantile of sorted v[0..n-1] that may end in +inf: a position that
 * touches an infinite value is infinite (the count is beyond the grid). */
static double analysis_quantile_inf(const double *v, int n, double q) {
  double h = (n - 1) * q;
  int lo = (int)floor(h);
  if (lo >= n - 1) return v[n - 1];
  if (isinf(v[lo]) || (h > lo && isinf(v[lo + 1]))) return INFINITY;
  return cs_quantile_sorted(v, n, q);
}

/* The base regime of regime r: its name without the component of axis skip
 * (train_points here, gate in gates.c). */
void analysis_regime_base(const analysis_data *D, int r, int skip, char *name, size_t len, char *tag,
                          size_t tlen) {
  size_t used = 0;
  int k_out = 0;
  name[0] = '\0';
  for (int k = 0; k < D->n_other; k++) {
    int ax = D->other_axis[k];
    if (ax == skip) continue;
    char val[128];
    spec_axis_value_text(D->spec, ax, D->regime[r].cell_id, val, sizeof val);
    int w = snprintf(name + used, len - used, "%s%s=%s", k_out++ ? ";" : "", spec_axis_name(D->spec, ax), val);
    if (w > 0) used += (size_t)w;
    if (used >= len) used = len - 1;
  }
  if (k_out == 0) snprintf(name, len, "all");
  size_t i = 0;
  for (const char *c = name; *c && i + 1 < tlen; c++) {
    char ch = *c;
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '-';
    tag[i++] = ok ? ch : '_';
  }
  tag[i] = '\0';
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

/* Scratch of one curve's bootstrap. */
typedef struct {
  int *ssel, *draw;   /* (n_seed) the seeds with data; one replicate's draw */
  double *col;        /* (n_seed) one size's accuracies */
  double *y;          /* (n_x) */
  double *reps;       /* (n_arch × B) samples per arch, then reused for the ratios */
  double *rat;        /* (n_arch × B) */
} analysis_lc_work;

/* The percentile interval of the nv values v (sorted here), NaN with fewer than B/2. */
static void analysis_lc_interval(double *v, int nv, int B, analysis_boot *out) {
  out->n_valid = nv;
  out->lo = out->hi = NAN;
  if (nv == 0 || 2 * nv < B) return;
  qsort(v, nv, sizeof *v, cs_compare_doubles);
  out->lo = analysis_quantile_inf(v, nv, 0.5 * (1.0 - ANALYSIS_LEVEL));
  out->hi = analysis_quantile_inf(v, nv, 0.5 * (1.0 + ANALYSIS_LEVEL));
}

/* Point estimates and bootstrap intervals of curve c. */
static int analysis_lc_estimate(const analysis_data *D, analysis_lcurve *c, analysis_lc_work *W) {
  int A = D->n_arch, B = D->opt.bootstrap, u = analysis_find_arch(D, ARCH_UNGATED);
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
  /* bootstrap: one stream per curve, one draw of seeds per replicate for every arch and size */
  char key[3 * ANALYSIS_NAME_LEN];
  snprintf(key, sizeof key, "%s|%d|%s|samples", config_task_name(D->task[c->t]), D->depth[c->d], c->base);
  rng_stream rng = rng_stream_make(D->opt.bootstrap_seed, "analysis:learning", 0, key);
  for (int b = 0; b < B; b++) {
    for (int j = 0; j < S; j++) W->draw[j] = W->ssel[rng_below(&rng, (uint64_t)S)];
    for (int a = 0; a < A; a++) {
      analysis_lc_means(D, c, a, S, W->draw, W->y);
      int where;
      W->reps[(size_t)a * B + b] = analysis_samples_to_target(c->n_x, c->x, W->y, c->target, &where);
    }
  }
  for (int a = 0; a < A; a++) {
    int nr = 0, ns = 0;
    for (int b = 0; b < B; b++) {
      double na = W->reps[(size_t)a * B + b];
      if (u >= 0 && a != u) {
        double r = analysis_lc_ratio(W->reps[(size_t)u * B + b], na);
        if (!isnan(r)) W->rat[nr++] = r;
      }
    }
    if (u >= 0 && a != u) analysis_lc_interval(W->rat, nr, B, &c->ratio[a]);
    for (int b = 0; b < B; b++) {
      double na = W->reps[(size_t)a * B + b];
      if (!isnan(na)) W->rat[ns++] = na;
    }
    analysis_lc_interval(W->rat, ns, B, &c->samples[a]);
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
static int analysis_lc_build(analysis_data *D, analysis_lc_key *keys) {
  int R = D->n_regime;
  for (int r = 0; r < R; r++) {
    keys[r].r = r;
    keys[r].x = D->regime[r].cfg.train_points;
    analysis_regime_base(D, r, D->ax_train, keys[r].base, sizeof keys[r].base, keys[r].tag,
                         sizeof keys[r].tag);
  }
  qsort(keys, R, sizeof *keys, analysis_cmp_lc_key);
  int n_base = 0;
  for (int r = 0; r < R; r++) n_base += r == 0 || strcmp(keys[r].base, keys[r - 1].base) != 0;
  CS_CHECK(CS_CALLOC(D->lc, (size_t)D->n_task * D->n_depth * n_base));
  for (int t = 0; t < D->n_task; t++)
    for (int d = 0; d < D->n_depth; d++)
      for (int r0 = 0; r0 < R;) {
        int r1 = r0;
        while (r1 < R && strcmp(keys[r1].base, keys[r0].base) == 0) r1++;
        int any = 0;
        for (int k = r0; k < r1; k++)
          for (int a = 0; a < D->n_arch; a++) any |= D->group[analysis_gidx(D, a, t, d, keys[k].r)].n_done > 0;
        if (any) {
          analysis_lcurve *c = &D->lc[D->n_lc++];
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

static int analysis_learning_pipeline(analysis_data *D, analysis_lc_key **keys, analysis_lc_work *W) {
  CS_CHECK(CS_CALLOC(*keys, D->n_regime));
  CS_CHECK(analysis_lc_build(D, *keys));
  int max_x = 1, B = D->opt.bootstrap;
  for (int i = 0; i < D->n_lc; i++)
    if (D->lc[i].n_x > max_x) max_x = D->lc[i].n_x;
  CS_CHECK(CS_CALLOC(W->ssel, D->n_seed));
  CS_CHECK(CS_CALLOC(W->draw, D->n_seed));
  CS_CHECK(CS_CALLOC(W->col, D->n_seed));
  CS_CHECK(CS_CALLOC(W->y, max_x));
  CS_CHECK(CS_CALLOC(W->reps, (size_t)D->n_arch * B));
  CS_CHECK(CS_CALLOC(W->rat, (size_t)B));
  for (int i = 0; i < D->n_lc; i++) CS_CHECK(analysis_lc_estimate(D, &D->lc[i], W));
  return CS_OK;
}

int analysis_compute_learning(analysis_data *D) {
  D->ax_train = spec_find_axis(D->spec, "train_points");
  if (D->ax_train < 0) return CS_OK;
  analysis_lc_key *keys = NULL;
  analysis_lc_work W = {0};
  int rc = analysis_learning_pipeline(D, &keys, &W);
  free(keys), free(W.ssel), free(W.draw), free(W.col), free(W.y), free(W.reps), free(W.rat);
  return rc;
}

void analysis_learning_free(analysis_data *D) {
  for (int i = 0; i < D->n_lc; i++) {
    analysis_lcurve *c = &D->lc[i];
    free(c->x), free(c->regime), free(c->acc), free(c->samples), free(c->reached), free(c->ratio);
  }
  free(D->lc);
  D->lc = NULL, D->n_lc = 0;
}

const char *analysis_lc_verdict(const analysis_data *D, const analysis_lcurve *c, int a) {
  if (c->n_x < 2 || c->n_seeds < 2 || analysis_find_arch(D, ARCH_UNGATED) < 0) return "inconclusive";
  const analysis_boot *q = &c->ratio[a];
  if (q->lo > 1.0) return "yes";
  if (q->hi < 1.0) return "no";
  return "inconclusive";
}

/* estimation_fit.c — the numbers of the estimation rates (estimation.h;
 * analysis/VERDICTS.md, "Estimation rates"): the rows of done teacher–student
 * cells grouped by (regime, arch, gate, H*, H), per n each error's median,
 * mean and geometric mean over seeds, and per error and range of n (all of
 * it, its lower and its upper half) the slope of log error on log n: the
 * slope of the seeds' mean log error with a seed-bootstrap interval
 * (analysis_bootstrap_slope, the same draw of seeds at every n), and every
 * seed's own slope, whose mean is that slope when no value is missing. The
 * checks and the verdict that read them are estimation.c. */
#include "estimation.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *analysis_est_regime_name(analysis_est_regime r) {
  static const char *const NAME[ER_COUNT] = {"exact", "over-specified", "misspecified"};
  return r >= 0 && r < ER_COUNT ? NAME[r] : "?";
}

const char *analysis_est_error_name(analysis_est_error e) {
  static const char *const NAME[EE_COUNT] = {"fn", "voronoi"};
  return e >= 0 && e < EE_COUNT ? NAME[e] : "?";
}

const char *analysis_est_group_name(char *buf, size_t len, const analysis_estimation *E,
                                    const analysis_est_group *g) {
  char unit[ANALYSIS_NAME_LEN + 2] = "";
  if (E->n_unit > 1) snprintf(unit, sizeof unit, "%s: ", E->unit_name[g->unit]);
  if (g->gate < 0)
    snprintf(buf, len, "%s%s H %d/H* %d", unit, config_arch_name(g->arch), g->heads, g->teacher_heads);
  else
    snprintf(buf, len, "%s%s %s H %d/H* %d", unit, config_arch_name(g->arch),
             config_gate_name((cs_gate_pos)g->gate), g->heads, g->teacher_heads);
  return buf;
}

/* A row's regime: misspecified when the cell says so or H < H*. */
static analysis_est_regime analysis_est_row_regime(const analysis_est_row *r) {
  if (r->misspecified || r->heads < r->teacher_heads) return ER_MISSPECIFIED;
  return r->heads == r->teacher_heads ? ER_EXACT : ER_OVER;
}

/* Rows ordered by group (unit, regime, arch, gate, H*, H), then n, then seed. */
static int analysis_est_cmp_row(const void *pa, const void *pb) {
  const analysis_est_row *a = pa, *b = pb;
  int k[7][2] = {{a->unit, b->unit},
                 {analysis_est_row_regime(a), analysis_est_row_regime(b)},
                 {(int)a->arch, (int)b->arch},
                 {a->gate, b->gate},
                 {a->teacher_heads, b->teacher_heads},
                 {a->heads, b->heads},
                 {a->n, b->n}};
  for (int i = 0; i < 7; i++)
    if (k[i][0] != k[i][1]) return k[i][0] < k[i][1] ? -1 : 1;
  return (a->seed > b->seed) - (a->seed < b->seed);
}

static int analysis_est_same_group(const analysis_est_row *a, const analysis_est_row *b) {
  return a->unit == b->unit && analysis_est_row_regime(a) == analysis_est_row_regime(b) && a->arch == b->arch &&
         a->gate == b->gate &&
         a->teacher_heads == b->teacher_heads && a->heads == b->heads;
}

/* log of a positive finite error, else NaN. */
static double analysis_est_log(double e) { return isfinite(e) && e > 0 ? log(e) : NAN; }

/* Group g from its rows r[0..k-1] (sorted; of two rows of one n and seed,
 * as ungated cells at several gate values, the first): sizes, counts,
 * errors; *mismatch counts the rows whose flag disagrees with H < H*. */
static int analysis_est_group_fill(analysis_est_group *g, const analysis_est_row *r, int k, int S, int *mismatch) {
  g->unit = r[0].unit, g->arch = r[0].arch, g->gate = r[0].gate;
  g->parametric = -1;
  g->heads = r[0].heads, g->teacher_heads = r[0].teacher_heads;
  g->regime = analysis_est_row_regime(&r[0]);
  for (int i = 0; i < k; i++) g->n_x += i == 0 || r[i].n != r[i - 1].n;
  CS_CHECK(CS_CALLOC(g->x, g->n_x));
  CS_CHECK(CS_CALLOC(g->cells, g->n_x));
  CS_CHECK(CS_CALLOC(g->unconverged, g->n_x));
  for (int e = 0; e < EE_COUNT; e++) {
    CS_CHECK(CS_CALLOC(g->err[e], (size_t)g->n_x * S));
    for (size_t j = 0; j < (size_t)g->n_x * S; j++) g->err[e][j] = NAN;
    CS_CHECK(CS_CALLOC(g->pt[e], g->n_x));
  }
  unsigned char *seen;
  CS_CHECK(CS_CALLOC(seen, S > 0 ? S : 1));
  for (int i = 0, xi = -1; i < k; i++) {
    if (i == 0 || r[i].n != r[i - 1].n) g->x[++xi] = r[i].n;
    int s = r[i].seed;
    if (s < 0 || s >= S || (i > 0 && r[i].n == r[i - 1].n && r[i].seed == r[i - 1].seed)) continue;
    g->cells[xi]++, g->n_cells++;
    *mismatch += r[i].misspecified != (r[i].heads < r[i].teacher_heads);
    g->unconverged[xi] += !r[i].converged, g->n_unconverged += !r[i].converged;
    if (!seen[s]) seen[s] = 1, g->n_seeds++;
    for (int e = 0; e < EE_COUNT; e++) g->err[e][(size_t)xi * S + s] = r[i].err[e];
  }
  free(seen);
  return CS_OK;
}

/* Per n the median, mean and geometric mean of error e over seeds. */
static int analysis_est_points(analysis_est_group *g, int e, int S, double *v) {
  for (int i = 0; i < g->n_x; i++) {
    analysis_est_point *p = &g->pt[e][i];
    const double *col = &g->err[e][(size_t)i * S];
    for (int s = 0; s < S; s++) v[s] = isfinite(col[s]) && col[s] > 0 ? col[s] : NAN;
    CS_CHECK(analysis_median_ci(v, S, ANALYSIS_LEVEL, &p->median, &p->median_coverage));
    analysis_mean_ci(v, S, ANALYSIS_LEVEL, &p->mean);
    for (int s = 0; s < S; s++) v[s] = analysis_est_log(v[s]);
    analysis_mean_ci(v, S, ANALYSIS_LEVEL, &p->gmean);
    p->gmean.mean = exp(p->gmean.mean), p->gmean.lo = exp(p->gmean.lo), p->gmean.hi = exp(p->gmean.hi);
  }
  return CS_OK;
}

/* The fit of error e over sizes i0..i1 of g: bootstrap slope of the mean
 * log error (on log n: analysis_bootstrap_slope takes n itself) and the
 * seeds' own slopes. ly: n_x·S scratch; xn, lx, pair_y: n_x. */
static int analysis_est_fit_range(analysis_est_group *g, int e, int f, int i0, int i1, int S, int B, uint64_t seed,
                                  double *ly, double *xn, double *lx, double *pair_y) {
  analysis_est_slope *F = &g->fit[e][f];
  int G = i1 - i0 + 1;
  for (int i = i0; i <= i1; i++) {
    xn[i - i0] = g->x[i], lx[i - i0] = log((double)g->x[i]);
    for (int s = 0; s < S; s++) ly[(size_t)(i - i0) * S + s] = analysis_est_log(g->err[e][(size_t)i * S + s]);
  }
  char name[64];
  snprintf(name, sizeof name, "%d %d %d %d %d %d", g->unit, (int)g->arch, g->gate, g->heads, g->teacher_heads,
           (int)g->regime);
  rng_stream rng = rng_stream_make(seed, "analysis:estimation", e * EF_COUNT + f, name);
  CS_CHECK(analysis_bootstrap_slope(G, S, xn, ly, 0, B, ANALYSIS_LEVEL, &rng, &F->boot));
  CS_CHECK(CS_CALLOC(F->slope_seed, S > 0 ? S : 1));
  for (int s = 0; s < S; s++) {
    for (int i = 0; i < G; i++) pair_y[i] = ly[(size_t)i * S + s];
    F->slope_seed[s] = analysis_ls_slope(lx, pair_y, G, NULL);
  }
  analysis_mean_ci(F->slope_seed, S, ANALYSIS_LEVEL, &F->seed_ci);
  return CS_OK;
}

/* The halves of the n range: the first ⌈n_x/2⌉ sizes and the last ⌈n_x/2⌉
 * (sharing the middle one when n_x is odd); the slope of 1/log n on the upper. */
static void analysis_est_halves(analysis_est_group *g, double *lx, double *ly) {
  int h = (g->n_x + 1) / 2;
  g->lo_end = h - 1, g->up_start = g->n_x - h;
  int k = 0;
  for (int i = g->up_start; i < g->n_x; i++, k++) {
    lx[k] = log((double)g->x[i]);
    ly[k] = g->x[i] > 1 ? -log(log((double)g->x[i])) : NAN;
  }
  g->log_ref_upper = analysis_ls_slope(lx, ly, k, NULL);
}

/* Every statistic of group g. */
static int analysis_est_group_stats(analysis_est_group *g, int S, int B, uint64_t seed) {
  double *v = NULL, *ly = NULL, *lx = NULL, *px = NULL, *py = NULL;
  int rc = CS_CALLOC(v, S > 0 ? S : 1);
  if (!rc) rc = CS_CALLOC(ly, (size_t)g->n_x * (S > 0 ? S : 1));
  if (!rc) rc = CS_CALLOC(lx, g->n_x);
  if (!rc) rc = CS_CALLOC(px, g->n_x);
  if (!rc) rc = CS_CALLOC(py, g->n_x);
  if (!rc) analysis_est_halves(g, px, py);
  int range[EF_COUNT][2] = {{0, g->n_x - 1}, {0, g->lo_end}, {g->up_start, g->n_x - 1}};
  for (int e = 0; !rc && e < EE_COUNT; e++) {
    rc = analysis_est_points(g, e, S, v);
    for (int f = 0; !rc && f < EF_COUNT && g->regime != ER_MISSPECIFIED; f++)
      rc = analysis_est_fit_range(g, e, f, range[f][0], range[f][1], S, B, seed, ly, lx, px, py);
  }
  free(v), free(ly), free(lx), free(px), free(py);
  return rc;
}

static int analysis_est_build_groups(analysis_estimation *E, analysis_est_row *r, int n, int B, uint64_t seed) {
  qsort(r, n, sizeof *r, analysis_est_cmp_row);
  int n_group = 0;
  for (int i = 0; i < n; i++) n_group += i == 0 || !analysis_est_same_group(&r[i], &r[i - 1]);
  CS_CHECK(CS_CALLOC(E->group, n_group > 0 ? n_group : 1));
  for (int i0 = 0; i0 < n;) {
    int i1 = i0;
    while (i1 < n && analysis_est_same_group(&r[i1], &r[i0])) i1++;
    analysis_est_group *g = &E->group[E->n_group++];
    CS_CHECK(analysis_est_group_fill(g, &r[i0], i1 - i0, E->n_seed, &E->n_flag_mismatch));
    CS_CHECK(analysis_est_group_stats(g, E->n_seed, B, seed));
    i0 = i1;
  }
  for (int i = 0; i < E->n_group; i++) {
    const analysis_est_group *g = &E->group[i];
    E->n_cells += g->n_cells, E->n_unconverged += g->n_unconverged;
    E->n_misspecified += g->regime == ER_MISSPECIFIED ? g->n_cells : 0;
  }
  return CS_OK;
}

int analysis_estimation_build(const analysis_est_row *rows, int n, int n_seed, int n_unit, int B,
                              uint64_t bootstrap_seed, analysis_estimation **out) {
  analysis_estimation *E = NULL;
  analysis_est_row *r = NULL;
  int rc = CS_CALLOC(E, 1);
  if (!rc) rc = CS_CALLOC(E->unit_name, n_unit > 0 ? n_unit : 1);
  if (!rc) rc = CS_CALLOC(r, n > 0 ? n : 1);
  if (!rc) {
    E->n_unit = n_unit;
    for (int u = 0; u < n_unit; u++) snprintf(E->unit_name[u], sizeof E->unit_name[u], "unit %d", u);
    memcpy(r, rows, sizeof *r * (size_t)n);
    E->n_seed = n_seed;
    rc = analysis_est_build_groups(E, r, n, B, bootstrap_seed);
  }
  free(r);
  if (rc) analysis_estimation_state_free(E), E = NULL;
  *out = E;
  return rc;
}

void analysis_estimation_state_free(analysis_estimation *E) {
  if (!E) return;
  for (int i = 0; i < E->n_group; i++) {
    analysis_est_group *g = &E->group[i];
    free(g->x), free(g->cells), free(g->unconverged);
    for (int e = 0; e < EE_COUNT; e++) {
      free(g->err[e]), free(g->pt[e]);
      for (int f = 0; f < EF_COUNT; f++) free(g->fit[e][f].slope_seed);
    }
  }
  free(E->group), free(E->unit_name), free(E);
}

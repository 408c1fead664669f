/* test_analysis_estimation.c — the estimation-rates section of `curvsweep
 * analyze` (analysis/VERDICTS.md, "Estimation rates") on rows and results
 * whose rates are known by construction:
 *   - noise-free C_s · n^-1/2: every slope (whole range, halves, bootstrap
 *     replicates, every seed's own) is −0.5 to rounding, the medians are
 *     the hand values;
 *   - noisy curves: the slopes against a closed-form least-squares fit
 *     written here (Σ(x − x̄)(y − ȳ)/Σ(x − x̄)² on the per-n mean log error
 *     and on each seed's own points), the mean of the seeds' slopes equal
 *     to the slope of the mean curve, the 1/log n reference by hand, and
 *     the bootstrap interval against a second implementation here (the
 *     same seed draws, its own means, fits and type-7 quantiles);
 *   - groups: misspecified cells apart and never fitted, a flag that
 *     disagrees with H < H* counted, an ungated cell repeated at several
 *     gate values counted once;
 *   - the verdict: supported (G1/G2 at n^-1/2, ungated at 1/log n), not
 *     supported (ungated at n^-1/2 too), not testable (a control at n^-1/4;
 *     no ungated over-specified group), too few (three sizes; three seeds);
 *   - the whole report in memory from results of a family = mha spec: the
 *     section, its tables and its summary row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "../analysis/stats/checks.h"
#include "../analysis/sections/estimation.h"
#include "curvsweep/analysis.h"
#include "curvsweep/error.h"
#include "curvsweep/quantile.h"
#include "curvsweep/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ROWS = 4096, NX = 7, S = 10 };
static const int XS[NX] = {64, 128, 256, 512, 1024, 2048, 4096};

/* The error of a curve at n: 0 n^-1/2, 1 1/log n, 2 n^-1/4, 3 n^-1/2 with
 * a finite-n excess (1 + 64/n) that the smallest n still carry (local slope
 * about -0.78 on 64 … 512, -0.55 on 512 … 4096, -0.66 over the whole range). */
static double curve(int kind, int n) {
  return kind == 0   ? pow(n, -0.5)
         : kind == 1 ? 1.0 / log((double)n)
         : kind == 2 ? pow(n, -0.25)
                     : pow(n, -0.5) * (1 + 64.0 / n);
}

typedef struct {
  analysis_est_row r[MAX_ROWS];
  int n;
} rows;

/* Rows of one group over the first nx sizes and ns seeds: error
 * C_s · curve(kind) · exp(noise · z), the function error by fn_kind,
 * the Voronoi loss by vo_kind, z from the stream of key. */
static void add_group(rows *R, cs_arch arch, int gate, int H, int Hs, int nx, int ns, int fn_kind, int vo_kind,
                      double noise, const char *key) {
  rng_stream rng = rng_stream_make(7, "test:estimation", H * 10 + Hs, key);
  for (int s = 0; s < ns; s++) {
    double c = exp(0.3 * rng_normal(&rng));
    for (int i = 0; i < nx; i++) {
      analysis_est_row *r = &R->r[R->n++];
      *r = (analysis_est_row){.arch = arch, .gate = gate, .heads = H, .teacher_heads = Hs, .n = XS[i], .seed = s,
                              .converged = 1, .misspecified = H < Hs};
      r->err[EE_FUNCTION] = c * curve(fn_kind, XS[i]) * exp(noise * rng_normal(&rng));
      r->err[EE_VORONOI] = 2 * c * curve(vo_kind, XS[i]) * exp(noise * rng_normal(&rng));
    }
  }
}

static analysis_estimation *build(const rows *R, int ns, int B) {
  analysis_estimation *E = NULL;
  assert_ok(analysis_estimation_build(R->r, R->n, ns, 1, B, 0, &E));
  assert_non_null(E);
  return E;
}

static const analysis_est_group *group_of(const analysis_estimation *E, cs_arch arch, int gate, int H, int Hs) {
  for (int i = 0; i < E->n_group; i++) {
    const analysis_est_group *g = &E->group[i];
    if (g->arch == arch && g->gate == gate && g->heads == H && g->teacher_heads == Hs) return g;
  }
  fail_msg("no group %d %d %d %d", (int)arch, gate, H, Hs);
  return NULL;
}

/* Closed-form least squares slope of y on x (k points, all finite). */
static double ols(const double *x, const double *y, int k) {
  double mx = 0, my = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < k; i++) mx += x[i] / k, my += y[i] / k;
  for (int i = 0; i < k; i++) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  return sxy / sxx;
}

static void test_exact_power(void **state) {
  (void)state;
  static rows R;
  R.n = 0;
  add_group(&R, ARCH_GATED, GATE_G1, 1, 1, NX, S, 0, 0, 0.0, "exact");
  analysis_estimation *E = build(&R, S, 200);
  const analysis_est_group *g = group_of(E, ARCH_GATED, GATE_G1, 1, 1);
  assert_int_equal(g->regime, ER_EXACT);
  assert_int_equal(g->n_x, NX);
  assert_int_equal(g->lo_end, 3);
  assert_int_equal(g->up_start, 3);
  for (int e = 0; e < EE_COUNT; e++)
    for (int f = 0; f < EF_COUNT; f++) {
      const analysis_est_slope *F = &g->fit[e][f];
      assert_close(F->boot.estimate, -0.5, 1e-12);
      assert_close(F->boot.lo, -0.5, 1e-12);
      assert_close(F->boot.hi, -0.5, 1e-12);
      assert_int_equal(F->seed_ci.n, S);
      assert_close(F->seed_ci.mean, -0.5, 1e-12);
      for (int s = 0; s < S; s++) assert_close(F->slope_seed[s], -0.5, 1e-12);
    }
  /* the median at n = 256: of the ten C_s / 16, the mean of the 5th and 6th */
  double v[S];
  for (int s = 0; s < S; s++) v[s] = R.r[s * NX + 2].err[EE_FUNCTION];
  qsort(v, S, sizeof *v, cs_compare_doubles);
  assert_close(g->pt[EE_FUNCTION][2].median.mean, (v[4] + v[5]) / 2, 1e-15);
  assert_int_equal(g->pt[EE_FUNCTION][2].median.n, S);
  analysis_estimation_state_free(E);
}

/* The bootstrap of estimation_fit.c done again: replicate b draws S seeds
 * from the stream of the group's key, the mean log error per n over the
 * drawn seeds, its closed-form slope; the 2.5% and 97.5% type-7 quantiles. */
static void second_bootstrap(const analysis_est_group *g, int e, int f, int i0, int i1, int B, double *lo,
                             double *hi) {
  char key[64];
  snprintf(key, sizeof key, "%d %d %d %d %d %d", g->unit, (int)g->arch, g->gate, g->heads, g->teacher_heads,
           (int)g->regime);
  rng_stream rng = rng_stream_make(0, "analysis:estimation", e * EF_COUNT + f, key);
  double *rep = calloc((size_t)B, sizeof *rep), x[NX], y[NX];
  int draw[S];
  for (int b = 0; b < B; b++) {
    for (int s = 0; s < S; s++) draw[s] = (int)rng_below(&rng, S);
    for (int i = i0; i <= i1; i++) {
      x[i - i0] = log((double)g->x[i]), y[i - i0] = 0;
      for (int s = 0; s < S; s++) y[i - i0] += log(g->err[e][(size_t)i * S + draw[s]]) / S;
    }
    rep[b] = ols(x, y, i1 - i0 + 1);
  }
  qsort(rep, (size_t)B, sizeof *rep, cs_compare_doubles);
  double h = (B - 1) * 0.025, k = (B - 1) * 0.975;
  *lo = rep[(int)h] + (h - floor(h)) * (rep[(int)h + 1] - rep[(int)h]);
  *hi = rep[(int)k] + (k - floor(k)) * (rep[(int)k + 1] - rep[(int)k]);
  free(rep);
}

static void test_closed_form(void **state) {
  (void)state;
  static rows R;
  R.n = 0;
  add_group(&R, ARCH_UNGATED, -1, 2, 1, NX, S, 0, 1, 0.3, "noisy");
  const int B = 500;
  analysis_estimation *E = build(&R, S, B);
  const analysis_est_group *g = group_of(E, ARCH_UNGATED, -1, 2, 1);
  assert_int_equal(g->regime, ER_OVER);
  int range[EF_COUNT][2] = {{0, NX - 1}, {0, 3}, {3, NX - 1}};
  for (int e = 0; e < EE_COUNT; e++)
    for (int f = 0; f < EF_COUNT; f++) {
      int i0 = range[f][0], k = range[f][1] - i0 + 1;
      double x[NX], y[NX], ys[NX], mean_seed = 0;
      for (int i = 0; i < k; i++) {
        x[i] = log((double)XS[i0 + i]), y[i] = 0;
        for (int s = 0; s < S; s++) y[i] += log(R.r[s * NX + i0 + i].err[e]) / S;
      }
      const analysis_est_slope *F = &g->fit[e][f];
      assert_close(F->boot.estimate, ols(x, y, k), 1e-12);
      for (int s = 0; s < S; s++) {
        for (int i = 0; i < k; i++) ys[i] = log(R.r[s * NX + i0 + i].err[e]);
        assert_close(F->slope_seed[s], ols(x, ys, k), 1e-12);
        mean_seed += ols(x, ys, k) / S;
      }
      /* no value missing: the mean of the seeds' slopes is the mean curve's slope */
      assert_close(F->seed_ci.mean, mean_seed, 1e-12);
      assert_close(F->seed_ci.mean, F->boot.estimate, 1e-12);
      double lo, hi;
      second_bootstrap(g, e, f, i0, range[f][1], B, &lo, &hi);
      assert_close(F->boot.lo, lo, 1e-12);
      assert_close(F->boot.hi, hi, 1e-12);
      assert_true(F->boot.lo < F->boot.estimate && F->boot.estimate < F->boot.hi);
    }
  /* the Voronoi loss at 1/log n flattens: its upper-half slope is above its lower-half slope */
  double x[4], y[4];
  for (int i = 0; i < 4; i++) x[i] = log((double)XS[3 + i]), y[i] = -log(log((double)XS[3 + i]));
  assert_close(g->log_ref_upper, ols(x, y, 4), 1e-12);
  assert_close(g->log_ref_upper, -1 / log(sqrt(512.0 * 4096)), 0.002); /* −1/log n at the half's middle */
  analysis_estimation_state_free(E);
}

static void test_groups(void **state) {
  (void)state;
  static rows R;
  R.n = 0;
  add_group(&R, ARCH_GATED, GATE_G1, 1, 2, NX, S, 0, 0, 0.1, "mis");
  add_group(&R, ARCH_UNGATED, -1, 1, 1, NX, S, 0, 0, 0.1, "ung");
  int n0 = R.n;
  for (int i = 0; i < n0; i++)
    if (R.r[i].arch == ARCH_UNGATED) R.r[R.n++] = R.r[i]; /* the same ungated cells at a second gate value */
  R.r[0].misspecified = 0;                              /* a flag that disagrees with H < H* */
  R.r[NX * S].converged = 0;
  analysis_estimation *E = build(&R, S, 50);
  assert_int_equal(E->n_group, 2);
  const analysis_est_group *m = group_of(E, ARCH_GATED, GATE_G1, 1, 2), *u = group_of(E, ARCH_UNGATED, -1, 1, 1);
  assert_int_equal(m->regime, ER_MISSPECIFIED);
  assert_null(m->fit[EE_FUNCTION][EF_FULL].slope_seed);
  assert_int_equal(u->n_cells, NX * S);
  assert_int_equal(u->n_unconverged, 1);
  assert_int_equal(u->unconverged[0], 1);
  assert_int_equal(E->n_cells, 2 * NX * S);
  assert_int_equal(E->n_misspecified, NX * S);
  assert_int_equal(E->n_flag_mismatch, 1);
  analysis_estimation_state_free(E);
}

/* The verdict of rows R (ns seeds): checks, Holm, verdicts as compute.c runs them. */
static analysis_decision verdict_of(const rows *R, int ns, analysis_data *D) {
  memset(D, 0, sizeof *D);
  D->opt = analysis_options_default();
  assert_ok(analysis_estimation_set(D, build(R, ns, 50)));
  assert_ok(analysis_estimation_checks(D));
  assert_ok(analysis_checks_adjust(D));
  assert_ok(analysis_estimation_verdicts(D));
  const analysis_check *v = analysis_check_find(D, ANALYSIS_EST_CLAIM, "verdict");
  assert_non_null(v);
  return v->decision;
}

static void release(analysis_data *D) {
  analysis_estimation_free(D);
  analysis_checks_free(&D->checks);
}

/* A grid: exact and over-specified (H 2, H* 1) groups of ungated, gated g1
 * and g2; the over-specified Voronoi losses of gated and ungated by kind,
 * the exact function errors by ctl. */
static void grid(rows *R, int nx, int ns, int gated_kind, int ungated_kind, int ctl, int with_ungated_over) {
  R->n = 0;
  const int gates[3] = {-1, GATE_G1, GATE_G2};
  for (int k = 0; k < 3; k++) {
    cs_arch a = k ? ARCH_GATED : ARCH_UNGATED;
    add_group(R, a, gates[k], 1, 1, nx, ns, ctl, 0, 0.2, k ? "g-exact" : "u-exact");
    if (k || with_ungated_over)
      add_group(R, a, gates[k], 2, 1, nx, ns, 0, k ? gated_kind : ungated_kind, 0.2, k ? "g-over" : "u-over");
  }
}

static void test_verdicts(void **state) {
  (void)state;
  static rows R;
  analysis_data D;
  grid(&R, NX, S, 0, 1, 0, 1);
  assert_int_equal(verdict_of(&R, S, &D), ANALYSIS_SUPPORTED);
  const analysis_est_group *g = group_of(analysis_estimation_of(&D), ARCH_GATED, GATE_G1, 2, 1);
  char scope[160];
  snprintf(scope, sizeof scope, "polynomial: %s", analysis_est_group_name((char[128]){0}, 128,
                                                                          analysis_estimation_of(&D), g));
  const analysis_check *c = analysis_check_find(&D, ANALYSIS_EST_CLAIM, scope);
  assert_non_null(c);
  /* the check's effect is the mean of the seeds' upper-half Voronoi slopes; 10 seeds all below the
   * bound: the exact one-sided sign-flip p is 2^-10, Holm over the three checks */
  assert_close(c->effect, g->fit[EE_VORONOI][EF_UPPER].seed_ci.mean, 1e-12);
  assert_close(c->p_raw, 1.0 / 1024, 1e-15);
  assert_int_equal(c->family_size, 3);
  release(&D);
  grid(&R, NX, S, 0, 0, 0, 1); /* ungated polynomial as well */
  assert_int_equal(verdict_of(&R, S, &D), ANALYSIS_NOT_SUPPORTED);
  release(&D);
  grid(&R, NX, S, 0, 1, 2, 1); /* the controls' function error at n^-1/4 */
  assert_int_equal(verdict_of(&R, S, &D), ANALYSIS_NOT_TESTABLE);
  assert_has(analysis_estimation_of(&D)->untestable, "not parametric");
  release(&D);
  /* the controls at n^-1/2 with a finite-n excess at the smallest n: parametric where the verdict
   * reads (the upper half), although their whole-range slope misses the band */
  grid(&R, NX, S, 0, 1, 3, 1);
  assert_int_equal(verdict_of(&R, S, &D), ANALYSIS_SUPPORTED);
  const analysis_est_group *ctl = group_of(analysis_estimation_of(&D), ARCH_GATED, GATE_G1, 1, 1);
  assert_int_equal(ctl->parametric, 1);
  assert_true(ctl->fit[EE_FUNCTION][EF_FULL].seed_ci.hi < ANALYSIS_EST_PARAMETRIC - ANALYSIS_EST_PARAMETRIC_TOL);
  assert_true(ctl->fit[EE_FUNCTION][EF_UPPER].seed_ci.lo <= ANALYSIS_EST_PARAMETRIC + ANALYSIS_EST_PARAMETRIC_TOL &&
              ctl->fit[EE_FUNCTION][EF_UPPER].seed_ci.hi >= ANALYSIS_EST_PARAMETRIC - ANALYSIS_EST_PARAMETRIC_TOL);
  release(&D);
  grid(&R, NX, S, 0, 1, 0, 0); /* no ungated over-specified group */
  assert_int_equal(verdict_of(&R, S, &D), ANALYSIS_NOT_TESTABLE);
  assert_has(analysis_estimation_of(&D)->untestable, "no over-specified (H > H*) ungated cells");
  release(&D);
  grid(&R, 3, S, 0, 1, 0, 1); /* three sizes */
  assert_int_equal(verdict_of(&R, S, &D), ANALYSIS_TOO_FEW);
  assert_has(analysis_estimation_of(&D)->too_few, "needs ≥ 4");
  release(&D);
  grid(&R, NX, 3, 0, 1, 0, 1); /* three seeds: a one-sided family of 3 needs 6 */
  assert_int_equal(verdict_of(&R, 3, &D), ANALYSIS_TOO_FEW);
  release(&D);
}

/* ---- the whole report, in memory ---- */

static const char *SPEC_MHA = "[sweep]\nname = est\n[grid]\narch = ungated, gated-headwise\ngate = g1, g2\n"
                              "heads = 1, 2\ntrain_points = 64, 128, 256, 512, 1024, 2048, 4096\nseed = 0..9\n"
                              "task = teacher\n[model]\nfamily = mha\nwidth = 2\n[task]\nteacher_heads = 1\n";

static void fill_mha(const void *ctx, const cs_config *c, cs_cell_result *r) {
  (void)ctx;
  rng_stream rng = rng_stream_make(11, "test:estimation-cell", c->seed * 100 + c->heads, config_arch_name(c->arch));
  for (int k = 0; k < c->train_points % 97; k++) rng_normal(&rng);
  int ung = c->arch == ARCH_UNGATED;
  r->est.present = 1, r->est.converged = 1, r->est.restarts = 4;
  r->est.fn_error = pow(c->train_points, -0.5) * exp(0.1 * rng_normal(&rng));
  r->est.param_error = (c->heads > 1 && ung ? 1.0 / log(c->train_points) : pow(c->train_points, -0.5)) *
                       exp(0.1 * rng_normal(&rng));
}

static void test_report(void **state) {
  (void)state;
  int64_t n;
  cs_cell_result *res = make_spec_results(SPEC_MHA, fill_mha, NULL, &n);
  char dir[64], path[200];
  char *md = analyse_results(SPEC_MHA, res, n, NULL, "est", dir, sizeof dir);
  assert_has(md, "## Estimation rates (teacher–student)");
  assert_has(md, "different teachers");
  assert_has(md, "G1/G2 estimate experts at a polynomial rate where ungated attention does not: supported**");
  assert_has(md, "| [estimation-rate](#");
  snprintf(path, sizeof path, "%s/report/estimation.csv", dir);
  assert_close(csv_number(path, "all,gated-headwise,g1,2,1,over-specified,64,", "fn_seeds"), 10, 0);
  assert_close(csv_number(path, "all,ungated,-,1,1,exact,4096,", "cells"), 10, 0);
  snprintf(path, sizeof path, "%s/report/estimation_slopes.csv", dir);
  assert_close(csv_number(path, "all,gated-headwise,g1,1,1,exact,", "fn_full_slope"), -0.5, 0.05);
  assert_close(csv_number(path, "all,ungated,-,2,1,over-specified,", "voronoi_upper_slope"), -0.137, 0.05);
  assert_csv_text(path, "all,gated-headwise,g2,1,1,exact,", "control", "parametric");
  snprintf(path, sizeof path, "%s/report/COLUMNS.md", dir);
  char *cols = read_text(path);
  assert_has(cols, "| voronoi\\_upper\\_slope, voronoi\\_upper\\_slope\\_ci\\_low");
  assert_has(cols, "| specification | `exact`");
  free(cols), free(md);
  remove_tree(dir);
  free_result_array(res, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact_power), cmocka_unit_test(test_closed_form), cmocka_unit_test(test_groups),
      cmocka_unit_test(test_verdicts),    cmocka_unit_test(test_report),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_analysis_learning.c — the sample-efficiency section of `curvsweep
 * analyze` (analysis/README.md, "Sample efficiency") on synthetic results
 * whose learning curves are known by construction, analysed in memory:
 *   - the monotone interpolation itself against hand values (non-monotone
 *     curves, gaps, a curve that starts above or never reaches the target);
 *   - gated reaches the target earlier: sample counts 128·2^0.625 and
 *     128·2^0.9375, ratio 2^1.3125; per seed (6 seeds, offsets δ_s) the
 *     log ratio ln 2 (1.3125 + δ_s/0.16), all positive: two-sided exact
 *     sign-flip p = 2/64, the t interval of the mean log ratio by hand,
 *     verdict yes (supported);
 *   - the curves cross: at the default target ungated reaches it and gated
 *     never does (censored at 2 × 512: verdict no); with --target-acc 0.85
 *     gated is first (yes);
 *   - one seed: no interval, too few seeds (n = 1; needs ≥ 6);
 *   - the same results as two shard archives (passed together) and as their
 *     merge give the in-memory tables byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "../analysis/sections/learning.h"
#include "curvsweep/analysis.h"
#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>




/* ---- the interpolation ---- */

static void test_samples_to_target(void **state) {
  (void)state;
  const int x[4] = {64, 128, 256, 512};
  int where;
  /* crossing between 128 (0.9) and 256 (0.98): log-linear, 128·2^((0.95−0.9)/(0.98−0.9)) */
  double y1[4] = {0.7, 0.9, 0.98, 1.0};
  assert_close(analysis_samples_to_target(4, x, y1, 0.95, &where), 128 * pow(2, 0.625), 1e-9);
  assert_int_equal(where, 1);
  /* a dip: the running maximum 0.9 carries over 256, so the crossing is between 256 and 512 */
  double y2[4] = {0.5, 0.9, 0.7, 0.95};
  assert_close(analysis_samples_to_target(4, x, y2, 0.92, &where), 256 * pow(2, 0.4), 1e-9);
  /* a missing size is skipped: 64 (0.5) to 256 (0.9) spans two octaves */
  double y3[4] = {0.5, NAN, 0.9, 1.0};
  assert_close(analysis_samples_to_target(4, x, y3, 0.8, &where), 64 * pow(4, 0.75), 1e-9);
  /* reached at the first size: at most 64 */
  double y4[4] = {0.99, 1.0, 1.0, 1.0};
  assert_close(analysis_samples_to_target(4, x, y4, 0.95, &where), 64, 0);
  assert_int_equal(where, 2);
  /* never reached: +inf; no data: NaN */
  double y5[4] = {0.5, 0.6, 0.7, 0.8};
  assert_true(isinf(analysis_samples_to_target(4, x, y5, 0.95, &where)));
  assert_int_equal(where, 0);
  double y6[4] = {NAN, NAN, NAN, NAN};
  assert_true(isnan(analysis_samples_to_target(4, x, y6, 0.95, &where)));
  assert_int_equal(where, -1);
}

/* ---- synthetic sweeps ---- */

/* arch × train_points × seed, circles, depth 1; cell id = (a·4 + i)·S + s. */
static const char *SPEC4 = "[sweep]\nname = learning\n[grid]\narch = ungated, gated\n"
                           "train_points = 64, 128, 256, 512\nseed = 0..5\n";
static const char *SPEC1 = "[sweep]\nname = learning\n[grid]\narch = ungated, gated\n"
                           "train_points = 64, 128, 256, 512\nseed = 7\n";
enum { N_X = 4, MAX_SEED = 6 };
/* seed offsets δ_s of the accuracy (mean 0), every curve moved by its seed's */
static const double OFFSET[MAX_SEED] = {-0.01, -0.005, 0.0, 0.0, 0.005, 0.01};

/* The t interval (95%) of the mean of v[0..5], exponentiated: [lo, hi]. */
static void exp_t_interval(const double *v, double *lo, double *hi) {
  double m = 0, ss = 0;
  for (int s = 0; s < 6; s++) m += v[s] / 6;
  for (int s = 0; s < 6; s++) ss += (v[s] - m) * (v[s] - m);
  double half = 2.570581835636314 * sqrt(ss / 5 / 6); /* t_{0.975,5}, table value */
  *lo = exp(m - half), *hi = exp(m + half);
}

/* The 2 · N_X · S cells of curves ungated and gated over S seeds (SPEC4: 6, SPEC1: 1). */
static cs_cell_result *make(cs_cell_result *res, int S, const double *ungated, const double *gated) {
  for (int a = 0; a < 2; a++)
    for (int i = 0; i < N_X; i++)
      for (int s = 0; s < S; s++) {
        int id = (a * N_X + i) * S + s;
        res[id] = make_result(id, 1, (a ? gated : ungated)[i] + (S > 1 ? OFFSET[s] : 0.0));
        res[id].curv[0].n_points = 8;
      }
  return res;
}

/* The cells of make(res, S, ...) analysed with target (NAN: the default) into a fresh dir[64];
 * path[300]: its samples_to_target.csv. Returns index.md's text. */
static char *run(cs_cell_result *res, int S, double target, char *dir, char *path) {
  analysis_options opt = analysis_options_default();
  opt.render = 0;
  opt.target_acc = target;
  char *md = analyse_results(S > 1 ? SPEC4 : SPEC1, res, 2 * N_X * S, &opt, "analysis_learning", dir, 64);
  snprintf(path, 300, "%s/report/learning_curve_circles.gp", dir);
  assert_true(file_exists(path));
  snprintf(path, 300, "%s/report/samples_to_target.csv", dir);
  return md;
}

/* gated g = (0.70, 0.90, 0.98, 1.00), ungated u = (0.50, 0.60, 0.80, 0.96): target 0.95 (95% of
 * 1.00). Gated: 128·2^((0.05−δ)/0.08); ungated: 256·2^((0.15−δ)/0.16); ratio 2^(1.3125 + δ/0.16). */
static void test_gated_fewer(void **state) {
  (void)state;
  const double u[N_X] = {0.50, 0.60, 0.80, 0.96}, g[N_X] = {0.70, 0.90, 0.98, 1.00};
  enum { N = 2 * N_X * 6 };
  cs_cell_result res[N];
  char dir[64], path[300];
  char *md = run(make(res, 6, u, g), 6, NAN, dir, path);
  assert_close(csv_number(path, "gated,circles,", "target_acc"), 0.95, 1e-12);
  assert_close(csv_number(path, "gated,circles,", "best_acc"), 1.0, 1e-12);
  assert_close(csv_number(path, "gated,circles,", "samples"), 128 * pow(2, 0.625), 1e-6);
  assert_close(csv_number(path, "ungated,circles,", "samples"), 256 * pow(2, 0.9375), 1e-6);
  assert_close(csv_number(path, "gated,circles,", "ratio_ungated_over_arch"), pow(2, 1.3125), 1e-9);
  /* intervals: the t interval of the mean over seeds of each seed's log count (gated:
   * ln 2 (7 + (0.05 − δ)/0.08)) and log ratio (ln 2 (1.3125 + δ/0.16)), exponentiated */
  double ls[6], lr[6], lo, hi;
  for (int s = 0; s < 6; s++)
    ls[s] = log(2) * (7 + (0.05 - OFFSET[s]) / 0.08), lr[s] = log(2) * (1.3125 + OFFSET[s] / 0.16);
  exp_t_interval(ls, &lo, &hi);
  assert_close(csv_number(path, "gated,circles,", "samples_ci_low"), lo, 1e-9);
  assert_close(csv_number(path, "gated,circles,", "samples_ci_high"), hi, 1e-9);
  exp_t_interval(lr, &lo, &hi);
  assert_close(csv_number(path, "gated,circles,", "ratio_ci_low"), lo, 1e-12);
  assert_close(csv_number(path, "gated,circles,", "ratio_ci_high"), hi, 1e-12);
  /* its centre: exp of the mean log ratio (the offsets δ_s average to 0) */
  assert_close(csv_number(path, "gated,circles,", "ratio_seed_gmean"), pow(2, 1.3125), 1e-12);
  /* the check: every seed's log ratio positive, two-sided exact sign-flip 2/2^6 */
  analysis_options opt = analysis_options_default();
  analysis_checks V = verdicts_of(SPEC4, res, N, &opt);
  const analysis_check *c = find_check(&V, "sample-efficiency", "circles;depth 1;all;gated", 0);
  assert_int_equal(c->n, 6);
  assert_close(c->p_raw, 2.0 / 64, 0.0);
  assert_close(c->effect, pow(2, 1.3125), 1e-12); /* exp of the mean log ratio */
  assert_close(c->effect_lo, lo, 1e-12);
  assert_int_equal(c->decision, ANALYSIS_SUPPORTED);
  assert_int_equal(find_check(&V, "sample-efficiency", "verdict", 1)->decision, ANALYSIS_SUPPORTED);
  analysis_checks_free(&V);
  assert_csv_text(path, "gated,circles,", "verdict", "yes");
  assert_csv_text(path, "ungated,circles,", "verdict", "n/a");
  /* learning_curve.csv: the mean over seeds is the curve itself */
  snprintf(path, sizeof path, "%s/report/learning_curve.csv", dir);
  assert_close(csv_number(path, "gated,circles,nonlinear,1,all,128,", "acc_mean"), 0.90, 1e-12);
  assert_close(csv_number(path, "ungated,circles,nonlinear,1,all,512,", "n_seeds"), 6, 0);
  assert_has(md, "## Is gating more sample-efficient? (learning curves)");
  assert_has(md, "ratio ungated/gated 2.484");
  free(md);
  snprintf(path, sizeof path, "%s/report/verdicts.csv", dir);
  assert_csv_text(path, "sample-efficiency,verdict,", "decision", "supported");
  remove_tree(dir);
  free_results(res, N);
}

/* The curves cross: gated (0.80, 0.86, 0.88, 0.90) leads at small sizes and plateaus;
 * ungated (0.60, 0.80, 0.96, 1.00). Target 0.95: ungated 128·2^(0.15/0.16), gated never →
 * ratio 0, no. Target 0.85: gated 64·2^(5/6), ungated 128·2^(0.3125), ratio
 * 2^(1 − (0.05 − δ)(1/0.06 − 1/0.16)) ∈ [2^0.375, 2^0.5833] → yes. */
static void test_curves_cross(void **state) {
  (void)state;
  const double u[N_X] = {0.60, 0.80, 0.96, 1.00}, g[N_X] = {0.80, 0.86, 0.88, 0.90};
  enum { N = 2 * N_X * 6 };
  cs_cell_result res[N];
  char dir[64], path[300];
  char *md = run(make(res, 6, u, g), 6, NAN, dir, path);
  assert_close(csv_number(path, "ungated,circles,", "samples"), 128 * pow(2, 0.9375), 1e-6);
  assert_true(isinf(csv_number(path, "gated,circles,", "samples")));
  assert_csv_text(path, "gated,circles,", "reached", "no");
  assert_close(csv_number(path, "gated,circles,", "ratio_ungated_over_arch"), 0.0, 0);
  /* per seed: gated censored at 1024, ungated ln 2 (7 + (0.15 − δ)/0.16): log ratio < 0 */
  double lr[6], lo, hi;
  for (int s = 0; s < 6; s++) lr[s] = log(2) * (7 + (0.15 - OFFSET[s]) / 0.16 - 10);
  exp_t_interval(lr, &lo, &hi);
  assert_close(csv_number(path, "gated,circles,", "ratio_ci_high"), hi, 1e-12);
  assert_true(hi < 1);
  assert_csv_text(path, "gated,circles,", "verdict", "no");
  assert_has(md, "gated not reached (> 512)");
  free(md);
  snprintf(path, sizeof path, "%s/report/verdicts.csv", dir);
  assert_csv_text(path, "sample-efficiency,verdict,", "decision", "not supported");
  assert_close(csv_number(path, "sample-efficiency,circles;depth 1;all;gated,", "p_raw"), 2.0 / 64, 0.0);
  remove_tree(dir);

  md = run(res, 6, 0.85, dir, path);
  assert_csv_text(path, "gated,circles,", "target_source", "given");
  assert_close(csv_number(path, "gated,circles,", "samples"), 64 * pow(2, 5.0 / 6.0), 1e-6);
  assert_close(csv_number(path, "ungated,circles,", "samples"), 128 * pow(2, 0.3125), 1e-6);
  /* per seed log2 ratio 1 − (0.05 − δ)(1/0.06 − 1/0.16) > 0 */
  for (int s = 0; s < 6; s++) lr[s] = log(2) * (1 - (0.05 - OFFSET[s]) * (1 / 0.06 - 1 / 0.16));
  exp_t_interval(lr, &lo, &hi);
  assert_close(csv_number(path, "gated,circles,", "ratio_ci_low"), lo, 1e-12);
  assert_close(csv_number(path, "gated,circles,", "ratio_ci_high"), hi, 1e-12);
  assert_true(lo > 1.0);
  assert_has(md, "the target accuracy is given by `--target-acc`");
  free(md);
  snprintf(path, sizeof path, "%s/report/verdicts.csv", dir);
  assert_csv_text(path, "sample-efficiency,verdict,", "decision", "supported");
  remove_tree(dir);
  free_results(res, N);
}

/* One seed: point estimates, no interval, and the section says why there is no verdict. */
static void test_one_seed(void **state) {
  (void)state;
  const double u[N_X] = {0.50, 0.60, 0.80, 0.96}, g[N_X] = {0.70, 0.90, 0.98, 1.00};
  enum { N = 2 * N_X };
  cs_cell_result res[N];
  char dir[64], path[300];
  char *md = run(make(res, 1, u, g), 1, NAN, dir, path);
  assert_close(csv_number(path, "gated,circles,", "samples"), 128 * pow(2, 0.625), 1e-6);
  assert_true(isnan(csv_number(path, "gated,circles,", "samples_ci_low")));
  assert_csv_text(path, "gated,circles,", "verdict", "too few");
  assert_has(md, "(one seed: no interval, so no verdict)");
  free(md);
  analysis_checks V = verdicts_of(SPEC1, res, N, NULL);
  const analysis_check *c = find_check(&V, "sample-efficiency", "verdict", 1);
  assert_int_equal(c->decision, ANALYSIS_TOO_FEW);
  assert_int_equal(c->n, 1);
  assert_int_equal(c->needs, 6); /* two-sided: 2 · 2^−6 < 0.05 */
  analysis_checks_free(&V);
  remove_tree(dir);
  free_results(res, N);
}

/* test_gated_fewer's sweep written as two shard archives (cells split by
 * parity), and merged: analyze of both shards together and of the merge
 * writes learning_curve.csv and samples_to_target.csv identical to the
 * in-memory run, with the same verdict. */
static void test_archives(void **state) {
  (void)state;
  /* with the seed offsets within [0, 1], as accuracies are (a done cell
   * outside is damage to the archive readers) */
  const double u[N_X] = {0.50, 0.60, 0.80, 0.96}, g[N_X] = {0.70, 0.90, 0.98, 0.99};
  enum { N = 2 * N_X * 6 };
  cs_cell_result res[N];
  char dir[64], path[300];
  char *md = run(make(res, 6, u, g), 6, NAN, dir, path);
  free(md);
  char out[2][160];
  analyse_shards_and_merge(SPEC4, res, N, dir, out);
  const char *tables[3] = {"learning_curve.csv", "samples_to_target.csv", "verdicts.csv"};
  assert_same_tables(dir, out, tables, 3);
  remove_tree(dir);
  free_results(res, N);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_samples_to_target),
      cmocka_unit_test(test_gated_fewer),
      cmocka_unit_test(test_curves_cross),
      cmocka_unit_test(test_one_seed),
      cmocka_unit_test(test_archives),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_analysis_learning.c — the sample-efficiency section of `curvsweep
 * analyze` (analysis/README.md, "Sample efficiency") on synthetic results
 * whose learning curves are known by construction, analysed in memory:
 *   - the monotone interpolation itself against hand values (non-monotone
 *     curves, gaps, a curve that starts above or never reaches the target);
 *   - gated reaches the target earlier: sample counts 128·2^0.625 and
 *     128·2^0.9375, ratio 2^1.3125, bootstrap intervals inside the bounds the
 *     seed offsets allow, verdict yes;
 *   - the curves cross: at the default target ungated reaches it and gated
 *     never does (verdict no); with --target-acc 0.85 gated is first (yes);
 *   - one seed: no interval, the section says so, inconclusive;
 *   - the same results as two shard archives (passed together) and as their
 *     merge give the in-memory tables byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "../analysis/compute.h"
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
                           "train_points = 64, 128, 256, 512\nseed = 0..3\n";
static const char *SPEC1 = "[sweep]\nname = learning\n[grid]\narch = ungated, gated\n"
                           "train_points = 64, 128, 256, 512\nseed = 7\n";
enum { N_X = 4, MAX_SEED = 4 };
/* seed offsets of the accuracy: the bootstrap's replicate means move by their mean δ ∈ [−0.01, 0.01] */
static const double OFFSET[MAX_SEED] = {-0.01, 0.0, 0.0, 0.01};

static void make(cs_cell_result *res, int S, const double *ungated, const double *gated) {
  for (int a = 0; a < 2; a++)
    for (int i = 0; i < N_X; i++)
      for (int s = 0; s < S; s++) {
        cs_cell_result *r = &res[(a * N_X + i) * S + s];
        memset(r, 0, sizeof *r);
        r->cell_id = (a * N_X + i) * S + s;
        r->status = CELL_DONE;
        r->test_acc = r->train_acc = (a ? gated : ungated)[i] + (S > 1 ? OFFSET[s] : 0.0);
        r->depth = 1;
        r->curv = calloc(1, sizeof *r->curv);
        r->curv[0].n_points = 8;
      }
}

static char *run(const char *spec, cs_cell_result *res, int n, double target, char *dir, size_t len) {
  analysis_options opt = analysis_options_default();
  opt.render = 0;
  opt.target_acc = target;
  char *md = analyse_results(spec, res, n, &opt, "analysis_learning", dir, len);
  char path[300];
  snprintf(path, sizeof path, "%s/report/learning_curve_circles.gp", dir);
  assert_true(file_exists(path));
  return md;
}

static void free_all(cs_cell_result *res, int n) {
  for (int i = 0; i < n; i++) result_free(&res[i]);
}

/* gated g = (0.70, 0.90, 0.98, 1.00), ungated u = (0.50, 0.60, 0.80, 0.96): target 0.95 (95% of
 * 1.00). Gated: 128·2^((0.05−δ)/0.08); ungated: 256·2^((0.15−δ)/0.16); ratio 2^(1.3125 + δ/0.16). */
static void test_gated_fewer(void **state) {
  (void)state;
  const double u[N_X] = {0.50, 0.60, 0.80, 0.96}, g[N_X] = {0.70, 0.90, 0.98, 1.00};
  enum { N = 2 * N_X * 4 };
  cs_cell_result res[N];
  make(res, 4, u, g);
  char dir[64], path[300];
  char *md = run(SPEC4, res, N, NAN, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/report/samples_to_target.csv", dir);
  assert_close(csv_number(path, "gated,circles,", "target_acc"), 0.95, 1e-12);
  assert_close(csv_number(path, "gated,circles,", "best_acc"), 1.0, 1e-12);
  assert_close(csv_number(path, "gated,circles,", "samples"), 128 * pow(2, 0.625), 1e-6);
  assert_close(csv_number(path, "ungated,circles,", "samples"), 256 * pow(2, 0.9375), 1e-6);
  assert_close(csv_number(path, "gated,circles,", "ratio_ungated_over_arch"), pow(2, 1.3125), 1e-9);
  /* intervals: inside what δ ∈ [−0.01, 0.01] allows, around the estimate */
  double lo = csv_number(path, "gated,circles,", "samples_ci_low");
  double hi = csv_number(path, "gated,circles,", "samples_ci_high");
  assert_true(lo >= 128 * pow(2, 0.5) - 1e-9 && lo <= 128 * pow(2, 0.625));
  assert_true(hi >= 128 * pow(2, 0.625) && hi <= 128 * pow(2, 0.75) + 1e-9);
  lo = csv_number(path, "gated,circles,", "ratio_ci_low");
  hi = csv_number(path, "gated,circles,", "ratio_ci_high");
  assert_true(lo >= pow(2, 1.25) - 1e-9 && lo <= pow(2, 1.3125));
  assert_true(hi >= pow(2, 1.3125) && hi <= pow(2, 1.375) + 1e-9);
  char *v = csv_field(path, "gated,circles,", "verdict");
  assert_string_equal(v, "yes");
  free(v);
  v = csv_field(path, "ungated,circles,", "verdict");
  assert_string_equal(v, "n/a");
  free(v);
  /* learning_curve.csv: the mean over seeds is the curve itself */
  snprintf(path, sizeof path, "%s/report/learning_curve.csv", dir);
  assert_close(csv_number(path, "gated,circles,nonlinear,1,all,128,", "acc_mean"), 0.90, 1e-12);
  assert_close(csv_number(path, "ungated,circles,nonlinear,1,all,512,", "n_seeds"), 4, 0);
  assert_has(md, "## Is gating more sample-efficient? (learning curves)");
  assert_has(md, "ratio ungated/gated 2.484");
  assert_has(md, "Verdict: **gated reaches the target with fewer samples: yes** (1 yes, 0 no");
  free(md);
  remove_tree(dir);
  free_all(res, N);
}

/* The curves cross: gated (0.80, 0.86, 0.88, 0.90) leads at small sizes and plateaus;
 * ungated (0.60, 0.80, 0.96, 1.00). Target 0.95: ungated 128·2^(0.15/0.16), gated never →
 * ratio 0, no. Target 0.85: gated 64·2^(5/6), ungated 128·2^(0.3125), ratio
 * 2^(1 − (0.05 − δ)(1/0.06 − 1/0.16)) ∈ [2^0.375, 2^0.5833] → yes. */
static void test_curves_cross(void **state) {
  (void)state;
  const double u[N_X] = {0.60, 0.80, 0.96, 1.00}, g[N_X] = {0.80, 0.86, 0.88, 0.90};
  enum { N = 2 * N_X * 4 };
  cs_cell_result res[N];
  make(res, 4, u, g);
  char dir[64], path[300];
  char *md = run(SPEC4, res, N, NAN, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/report/samples_to_target.csv", dir);
  assert_close(csv_number(path, "ungated,circles,", "samples"), 128 * pow(2, 0.9375), 1e-6);
  assert_true(isinf(csv_number(path, "gated,circles,", "samples")));
  char *v = csv_field(path, "gated,circles,", "reached");
  assert_string_equal(v, "no");
  free(v);
  assert_close(csv_number(path, "gated,circles,", "ratio_ungated_over_arch"), 0.0, 0);
  assert_close(csv_number(path, "gated,circles,", "ratio_ci_high"), 0.0, 0);
  v = csv_field(path, "gated,circles,", "verdict");
  assert_string_equal(v, "no");
  free(v);
  assert_has(md, "gated not reached (> 512)");
  assert_has(md, "Verdict: **gated reaches the target with fewer samples: no**");
  free(md);
  remove_tree(dir);

  md = run(SPEC4, res, N, 0.85, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/report/samples_to_target.csv", dir);
  v = csv_field(path, "gated,circles,", "target_source");
  assert_string_equal(v, "given");
  free(v);
  assert_close(csv_number(path, "gated,circles,", "samples"), 64 * pow(2, 5.0 / 6.0), 1e-6);
  assert_close(csv_number(path, "ungated,circles,", "samples"), 128 * pow(2, 0.3125), 1e-6);
  double lo = csv_number(path, "gated,circles,", "ratio_ci_low");
  double hi = csv_number(path, "gated,circles,", "ratio_ci_high");
  assert_true(lo >= pow(2, 0.375) - 1e-9 && hi <= pow(2, 1 - 0.04 * (1 / 0.06 - 1 / 0.16)) + 1e-9);
  assert_true(lo > 1.0);
  assert_has(md, "the target accuracy is given by `--target-acc`");
  assert_has(md, "Verdict: **gated reaches the target with fewer samples: yes**");
  free(md);
  remove_tree(dir);
  free_all(res, N);
}

/* One seed: point estimates, no interval, and the section says why there is no verdict. */
static void test_one_seed(void **state) {
  (void)state;
  const double u[N_X] = {0.50, 0.60, 0.80, 0.96}, g[N_X] = {0.70, 0.90, 0.98, 1.00};
  enum { N = 2 * N_X };
  cs_cell_result res[N];
  make(res, 1, u, g);
  char dir[64], path[300];
  char *md = run(SPEC1, res, N, NAN, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/report/samples_to_target.csv", dir);
  assert_close(csv_number(path, "gated,circles,", "samples"), 128 * pow(2, 0.625), 1e-6);
  assert_true(isnan(csv_number(path, "gated,circles,", "samples_ci_low")));
  char *v = csv_field(path, "gated,circles,", "verdict");
  assert_string_equal(v, "inconclusive");
  free(v);
  assert_has(md, "(one seed: no interval, so no verdict)");
  assert_has(md, "Verdict: **gated reaches the target with fewer samples: inconclusive**");
  free(md);
  remove_tree(dir);
  free_all(res, N);
}

/* test_gated_fewer's sweep written as two shard archives (cells split by
 * parity), and merged: analyze of both shards together and of the merge
 * writes learning_curve.csv and samples_to_target.csv identical to the
 * in-memory run, with the same verdict. */
static void test_archives(void **state) {
  (void)state;
  const double u[N_X] = {0.50, 0.60, 0.80, 0.96}, g[N_X] = {0.70, 0.90, 0.98, 1.00};
  enum { N = 2 * N_X * 4 };
  cs_cell_result res[N];
  make(res, 4, u, g);
  char dir[64];
  char *md = run(SPEC4, res, N, NAN, dir, sizeof dir);
  free(md);
  char out[2][160], p0[300], p1[400];
  analyse_shards_and_merge(SPEC4, res, N, dir, out);
  const char *tables[2] = {"learning_curve.csv", "samples_to_target.csv"};
  for (int t = 0; t < 2; t++) {
    snprintf(p0, sizeof p0, "%s/report/%s", dir, tables[t]);
    char *want = read_text(p0);
    for (int k = 0; k < 2; k++) {
      snprintf(p1, sizeof p1, "%s/%s", out[k], tables[t]);
      char *got = read_text(p1);
      assert_string_equal(got, want);
      free(got);
    }
    free(want);
  }
  for (int k = 0; k < 2; k++) {
    snprintf(p1, sizeof p1, "%s/index.md", out[k]);
    char *got = read_text(p1);
    assert_has(got, "Verdict: **gated reaches the target with fewer samples: yes** (1 yes, 0 no");
    free(got);
  }
  remove_tree(dir);
  free_all(res, N);
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

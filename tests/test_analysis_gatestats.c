/* test_analysis_gatestats.c — the sections on what else gates do
 * (analysis/VERDICTS.md, "Gate scores", "Calibration error", "Stability",
 * "What a sink does") on fabricated results whose answers are known by
 * construction:
 *   - calibration (memory family, ungated vs gated × depth 1, 2 × 8 seeds):
 *     ECE ungated 0.05 + 0.001·seed + 0.002·depth, gated 0.02 lower at every
 *     unit; accuracy 0.80 ungated, 0.83 gated: per seed ECE ungated − gated
 *     = 0.02 exactly, all 8 positive → exact two-sided sign-flip p = 2/256,
 *     a family of 1 → supported; the accuracy difference 0.03;
 *   - gate scores (the same cells): gated blocks with 70% of their scores
 *     below 0.1 → share minus 0.5 = 0.2 at every seed, one-sided p =
 *     1/256 → sparse (supported); a spec with gated-headwise at 30% too:
 *     Holm over the two G1 rows, 2/256, and headwise p = 1; the mean
 *     histogram of gatescores.csv is the cells' (one block each: theirs);
 *   - stability (ungated vs gated × lr 1e-3, 1e-2, 1e-1 × 8 seeds):
 *     ungated unstable at 0.1 (diverged on even seeds, a loss spike on odd
 *     ones), gated stable everywhere: log10 lr* −2 against −1, per seed
 *     +1 → supported, p = 2/256; stability.csv's counts; gated unstable
 *     already at 1e-3 reads one grid step below (log10 lr* = −4);
 *   - results without /cellstats and /gates (an archive of format_version
 *     5 or older): each section says what is not stored, and no verdict;
 *   - the heads table: gated accuracy 0.01 · H above ungated at H = 1, 2, 4
 *     (width 16: head dims 16, 8, 4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/analysis.h"
#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SPEC_CAL = "[sweep]\nname = calib\n[grid]\narch = ungated, gated\ndepth = 1..2\n"
                              "seed = 0..7\ntask = circles\n";
static const char *SPEC_GS2 = "[sweep]\nname = gs2\n[grid]\narch = ungated, gated, gated-headwise\n"
                              "depth = 1\nseed = 0..7\ntask = circles\n";
static const char *SPEC_STAB = "[sweep]\nname = stab\n[grid]\narch = ungated, gated\n"
                               "lr = 1e-3, 1e-2, 1e-1\ndepth = 1\nseed = 0..7\ntask = circles\n";

/* What the fill writes: 1 the measures of format_version 6, 0 none. */
typedef struct {
  int measured;
  int gated_unstable_low; /* stability: gated unstable already at the smallest lr */
} fill_ctx;

/* A done memory-family cell: accuracy, curvature, calibration and gate scores. */
static void fill(const void *vctx, const cs_config *c, cs_cell_result *r) {
  const fill_ctx *ctx = vctx;
  int gated = c->arch != ARCH_UNGATED;
  double s = (double)c->seed;
  r->test_acc = r->train_acc = gated ? 0.83 : 0.80;
  r->train_loss = 0.3;
  r->n_params = 100;
  for (int l = 0; l < c->depth; l++) {
    geom_stats *g = &r->curv[l];
    g->n_points = 16, g->curved_frac = 1.0, g->S_se = NAN;
    g->K_absmean = g->Kt_absmean = g->Kh_absmean = 1.0;
    g->attn_entropy = ctx->measured ? (gated ? 0.4 : 0.5) : NAN;
  }
  if (!ctx->measured) return;
  double ece = 0.05 + 0.001 * s + 0.002 * c->depth - (gated ? 0.02 : 0.0);
  r->cstats = (cs_cell_stats){1, 0, 1.0, 0.2, 0.1, ece};
  /* stability: ungated unstable at lr 0.1, gated (optionally) at 1e-3 */
  if (c->arch == ARCH_UNGATED && c->lr > 0.05) {
    if (c->seed % 2 == 0) r->status = CELL_DIVERGED, r->cstats.test_nll = r->cstats.test_brier = r->cstats.test_ece = NAN;
    else r->cstats.spikes = 1;
  }
  if (gated && ctx->gated_unstable_low && c->lr < 0.005) r->cstats.spikes = 2;
  if (!gated) return;
  /* one gate-score row per block: 70% below 0.1 (gated), 30% (headwise) */
  double low = c->arch == ARCH_GATED ? 0.7 : 0.3;
  r->n_gates = c->depth;
  r->gates = calloc((size_t)c->depth, sizeof *r->gates);
  assert_non_null(r->gates);
  for (int l = 0; l < c->depth; l++) {
    cs_gate_scores *q = &r->gates[l];
    *q = (cs_gate_scores){l + 1, 64, 0.2, 0.05, 0.01, 0.6, low, 0.6, 0.1, {0}};
    q->hist[0] = low, q->hist[19] = 1 - low;
  }
}

static void test_calibration_and_gate_scores(void **state) {
  (void)state;
  fill_ctx ctx = {1, 0};
  int64_t n;
  cs_cell_result *res = make_spec_results(SPEC_CAL, fill, &ctx, &n);
  analysis_checks v = verdicts_of(SPEC_CAL, res, n, NULL);
  const analysis_check *c = find_check(&v, "calib-ece", "memory gated", 1);
  assert_check(c, ANALYSIS_SUPPORTED, 8, 0.02, 2.0 / 256, 2.0 / 256, 1);
  c = find_check(&v, "gate-sparse", "memory gated", 1);
  assert_check(c, ANALYSIS_SUPPORTED, 8, 0.2, 1.0 / 256, 1.0 / 256, 1);
  analysis_checks_free(&v);
  char dir[256];
  char *md = analyse_results(SPEC_CAL, res, n, NULL, "gatestats", dir, sizeof dir);
  assert_has(md, "## Does gating lower the calibration error?");
  assert_has(md, "- Gating lowers the ECE, memory gated: **gating lowered the ECE**");
  assert_has(md, "accuracy gated − ungated 0.03");
  assert_has(md, "## Are the gate scores sparse and query-dependent?");
  assert_has(md, "- G1's gate scores are sparse, memory gated: **sparse**");
  char path[512];
  snprintf(path, sizeof path, "%s/report/calibration.csv", dir);
  assert_close(csv_number(path, "gated,-,memory,", "dece_mean"), 0.02, 1e-12);
  assert_close(csv_number(path, "gated,-,memory,", "dacc_mean"), 0.03, 1e-12);
  assert_close(csv_number(path, "gated,-,memory,", "entropy_gated_mean"), 0.4, 1e-12);
  assert_close(csv_number(path, "gated,-,memory,", "n_pairs"), 16, 0);
  /* ECE ungated: mean over seeds of 0.05 + 0.001 s + 0.003 (the two depths' mean) */
  assert_close(csv_number(path, "gated,-,memory,", "ece_ungated_mean"), 0.05 + 0.0035 + 0.003, 1e-12);
  snprintf(path, sizeof path, "%s/report/gatescores.csv", dir);
  assert_close(csv_number(path, "gated,-,memory,", "frac_low_mean"), 0.7, 1e-12);
  assert_close(csv_number(path, "gated,-,memory,", "hist_00"), 0.7, 1e-12);
  assert_close(csv_number(path, "gated,-,memory,", "hist_19"), 0.3, 1e-12);
  assert_close(csv_number(path, "gated,-,memory,", "n_cells"), 16, 0);
  free(md);
  remove_tree(dir);
  free_result_array(res, n);

  /* two G1 rows: Holm over both; the headwise one at 30% is no evidence of sparsity */
  res = make_spec_results(SPEC_GS2, fill, &ctx, &n);
  v = verdicts_of(SPEC_GS2, res, n, NULL);
  assert_check(find_check(&v, "gate-sparse", "memory gated", 1), ANALYSIS_SUPPORTED, 8, 0.2, 1.0 / 256,
               2.0 / 256, 2);
  /* the verdict row reads as the section: the excess's interval lies below 0 */
  c = find_check(&v, "gate-sparse", "memory gated-headwise", 1);
  assert_int_equal(c->decision, ANALYSIS_NOT_SUPPORTED);
  assert_close(c->effect, -0.2, 1e-12);
  assert_close(c->p_raw, 1.0, 0);
  analysis_checks_free(&v);
  /* the one-sided test cannot say "not sparse"; the excess's interval, [-0.2, -0.2], can */
  md = analyse_results(SPEC_GS2, res, n, NULL, "gatestats2", dir, sizeof dir);
  assert_has(md, "- G1's gate scores are sparse, memory gated: **sparse**");
  assert_has(md, "- G1's gate scores are sparse, memory gated-headwise: **not sparse (most scores at or above 0.1)**");
  free(md);
  remove_tree(dir);
  free_result_array(res, n);
}

static void test_stability(void **state) {
  (void)state;
  fill_ctx ctx = {1, 0};
  int64_t n;
  cs_cell_result *res = make_spec_results(SPEC_STAB, fill, &ctx, &n);
  analysis_checks v = verdicts_of(SPEC_STAB, res, n, NULL);
  assert_check(find_check(&v, "stab-lr", "memory gated", 1), ANALYSIS_SUPPORTED, 8, 1.0, 2.0 / 256,
               2.0 / 256, 1);
  analysis_checks_free(&v);
  char dir[256], path[512];
  char *md = analyse_results(SPEC_STAB, res, n, NULL, "stability", dir, sizeof dir);
  assert_has(md, "## Does gating tolerate larger learning rates?");
  assert_has(md, "Of the 48 ended cells, 4 diverged and 4 spiked.");
  assert_has(md, "| ungated | - | memory | 0/8 (0 diverged) | 0/8 (0 diverged) | 8/8 (4 diverged) |");
  assert_has(md, "**gating tolerated larger learning rates**");
  snprintf(path, sizeof path, "%s/report/stability.csv", dir);
  assert_close(csv_number(path, "ungated,-,memory,0.1,", "n_diverged"), 4, 0);
  assert_close(csv_number(path, "ungated,-,memory,0.1,", "n_spiked"), 4, 0);
  assert_close(csv_number(path, "ungated,-,memory,0.1,", "share_unstable"), 1.0, 0);
  assert_close(csv_number(path, "gated,-,memory,0.1,", "share_unstable"), 0.0, 0);
  free(md);
  remove_tree(dir);
  free_result_array(res, n);

  /* gated unstable already at 1e-3: one grid step below, log10 lr* = -4 against -2 */
  ctx.gated_unstable_low = 1;
  res = make_spec_results(SPEC_STAB, fill, &ctx, &n);
  v = verdicts_of(SPEC_STAB, res, n, NULL);
  assert_check(find_check(&v, "stab-lr", "memory gated", 1), ANALYSIS_NOT_SUPPORTED, 8, -2.0, 2.0 / 256,
               2.0 / 256, 1);
  analysis_checks_free(&v);
  free_result_array(res, n);
}

/* Results of an archive before format_version 6: each section says what
 * is not stored, and adds no verdict. */
static void test_not_stored(void **state) {
  (void)state;
  fill_ctx ctx = {0, 0};
  int64_t n;
  cs_cell_result *res = make_spec_results(SPEC_CAL, fill, &ctx, &n);
  analysis_checks v = verdicts_of(SPEC_CAL, res, n, NULL);
  for (int i = 0; i < v.n; i++)
    if (!strcmp(v.c[i].claim, "calib-ece") || !strcmp(v.c[i].claim, "gate-sparse"))
      fail_msg("a %s check without the measures", v.c[i].claim);
  analysis_checks_free(&v);
  char dir[256];
  char *md = analyse_results(SPEC_CAL, res, n, NULL, "notstored", dir, sizeof dir);
  assert_has(md, "The archives store no calibration: none of their 32 done cells has a /cellstats row");
  assert_has(md, "The archives store no gate scores: none of their 16 done gated cells has /gates rows");
  free(md);
  remove_tree(dir);
  free_result_array(res, n);
}

/* The heads table: gated accuracy 0.01 · heads above ungated, per head
 * count at width 16 (head dims 16, 8, 4). */
static void fill_heads(const void *vctx, const cs_config *c, cs_cell_result *r) {
  fill(vctx, c, r);
  if (c->arch != ARCH_UNGATED) r->test_acc = r->train_acc = 0.80 + 0.01 * c->heads;
}

static void test_heads_table(void **state) {
  (void)state;
  static const char *SPEC_HEADS = "[sweep]\nname = heads\n[grid]\narch = ungated, gated\nheads = 1, 2, 4\n"
                                  "depth = 1\nseed = 0..3\ntask = circles\n[model]\nwidth = 16\n";
  fill_ctx ctx = {1, 0};
  int64_t n;
  cs_cell_result *res = make_spec_results(SPEC_HEADS, fill_heads, &ctx, &n);
  char dir[256], path[512];
  char *md = analyse_results(SPEC_HEADS, res, n, NULL, "heads", dir, sizeof dir);
  assert_has(md, "## Does the gate's gain grow as the head dimension shrinks?");
  assert_has(md, "| gated | - | circles | 1 | all | 4 | 4 | 4 | 0.04 [0.04, 0.04] |");
  snprintf(path, sizeof path, "%s/report/heads.csv", dir);
  assert_close(csv_number(path, "gated,-,circles,1,all,2,", "dacc_mean"), 0.02, 1e-12);
  assert_close(csv_number(path, "gated,-,circles,1,all,1,", "head_dim"), 16, 0);
  assert_close(csv_number(path, "gated,-,circles,1,all,4,", "dece_mean"), -0.02, 1e-12);
  free(md);
  remove_tree(dir);
  free_result_array(res, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_calibration_and_gate_scores),
      cmocka_unit_test(test_stability),
      cmocka_unit_test(test_not_stored),
      cmocka_unit_test(test_heads_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_analysis_gates.c — the gate-position section of `curvsweep analyze`
 * (analysis/VERDICTS.md, "Gate positions") on synthetic results of a self
 * family sweep (arch ungated, gated × gate g1..g5 × depth 1, 2 × 8 seeds)
 * whose answer is known by construction. Accuracy of a gated cell = 0.80 +
 * bonus of its gate + a seed offset shared by every cell of the seed, so
 * every per-seed difference has the sign of the bonus difference. 8 seeds:
 * the fewest with which a two-sided exact sign-flip test (p ≥ 2/2^n) can
 * pass Holm over G1's family of 4 comparisons (4 · 2/256 = 0.03125):
 *   - g1 best (bonus 0.10 against 0.06, 0.02, 0.03, 0.05): each comparison
 *     p = 2/256, Holm-adjusted 4 · 2/256 → supported; sink 0.485 → 0.085
 *     reduced; (g1, g2) beat (g3, g4): supported; ranks, means and paired
 *     differences of gates.csv against the construction;
 *   - g3/g4 ahead (bonus 0.02, 0.03, 0.08, 0.09, 0.04): G1 best not
 *     supported, (g1, g2) beat (g3, g4) not supported;
 *   - ties: g1 ahead on 3 seeds, behind on 5 (±0.01): p = 1 − C(8,4)/256 by
 *     enumeration, inconclusive; equal sinks: p = 1, no significant change;
 *   - one seed, or two seeds of one depth: too few seeds (needs ≥ 8 for G1,
 *     ≥ 6 for the sink, a family of one); a one-value gate axis: nothing to
 *     rank;
 *   - the same results as two shard archives, as their merge, and in
 *     memory give the same gates.csv and verdicts.csv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/analysis.h"
#include "curvsweep/archive.h"
#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SPEC5 = "[sweep]\nname = gates\n[grid]\narch = ungated, gated\n"
                           "gate = g1, g2, g3, g4, g5\ndepth = 1, 2\nseed = 0..7\n"
                           "[model]\nfamily = self\nresidual = yes\nnorm = pre\n";
static const char *SPEC1 = "[sweep]\nname = gates\n[grid]\narch = ungated, gated\n"
                           "gate = g1, g2, g3, g4, g5\ndepth = 1, 2\nseed = 3\n"
                           "[model]\nfamily = self\nresidual = yes\nnorm = pre\n";
static const char *SPEC2 = "[sweep]\nname = gates\n[grid]\narch = ungated, gated\n"
                           "gate = g1, g2, g3, g4, g5\ndepth = 1\nseed = 0..1\n"
                           "[model]\nfamily = self\nresidual = yes\nnorm = pre\n";
static const char *SPEC_G1 = "[sweep]\nname = gates\n[grid]\narch = ungated, gated\n"
                             "gate = g1\ndepth = 1, 2\nseed = 0..4\n"
                             "[model]\nfamily = self\nresidual = yes\nnorm = pre\n";

/* mean |K̂| by gate (ranks g5 1, g2 2, g1 3, g3 4, g4 5); |K̃| = 10 |K̂| */
static const double KH[5] = {2.0, 3.0, 1.0, 0.5, 4.0};

typedef struct {
  double bonus[5];     /* accuracy bonus of the gated arch per gate */
  int tie;             /* g1's bonus is +0.01 on seeds 0..2, −0.01 on 3, 4; the others 0 */
  double sink_u, sink_g1, sink_other; /* sink_mass (plus 0.01·seed) */
} scenario;

static double acc_of(const scenario *S, const cs_config *c) {
  double off = 0.002 * (double)c->seed;
  if (c->arch == ARCH_UNGATED) return 0.80 + off;
  if (S->tie) return 0.85 + off + (c->gate == GATE_G1 ? (c->seed < 3 ? 0.01 : -0.01) : 0.0);
  return 0.80 + S->bonus[c->gate] + off;
}

/* A cell with the scenario's values at every layer (make_spec_results). */
static void fill(const void *ctx, const cs_config *c, cs_cell_result *r) {
  const scenario *S = ctx;
  r->test_acc = r->train_acc = acc_of(S, c);
  r->train_loss = 0.3;
  r->n_params = 100;
  for (int l = 0; l < c->depth; l++) {
    geom_stats *g = &r->curv[l];
    double kh = c->arch == ARCH_UNGATED ? 0.25 : KH[c->gate];
    g->n_points = 16;
    g->curved_frac = 1.0; /* classified: the four fractions add up to 1 */
    g->Kh_absmean = g->Kh_mean = kh * (l + 1);
    g->Kt_absmean = g->Kt_mean = 10 * kh * (l + 1);
    g->K_absmean = g->K_mean = kh;
    g->S_se = NAN;
    double sink = c->arch == ARCH_UNGATED ? S->sink_u : c->gate == GATE_G1 ? S->sink_g1 : S->sink_other;
    g->sink_mass = sink + 0.01 * (double)c->seed;
    g->max_attn = 0.5 + g->sink_mass / 2;
  }
}

/* Every cell of spec, done, with the scenario's values. */
static cs_cell_result *make(const char *text, const scenario *S, int64_t *n_out) {
  return make_spec_results(text, fill, S, n_out);
}

/* Analyse in memory into DIR/report; index.md's text. */
static char *run(const char *spec, const cs_cell_result *res, int64_t n, char *dir, size_t len) {
  return analyse_results(spec, res, n, NULL, "analysis_gates", dir, len);
}

/* The section "## Where should the gate sit?" of index.md. */
static char *section(const char *md) {
  const char *a = strstr(md, "## Where should the gate sit?");
  assert_non_null(a);
  const char *b = strstr(a + 1, "\n## ");
  size_t k = b ? (size_t)(b - a) : strlen(a);
  char *s = malloc(k + 1);
  memcpy(s, a, k);
  s[k] = '\0';
  return s;
}

/* One analysed scenario: the results, DIR/report, index.md and its gate
 * section. */
typedef struct {
  cs_cell_result *res;
  int64_t n;
  char dir[64];
  char *md, *sec;
} gate_report;

static void report_open(gate_report *r, const char *spec, const scenario *S) {
  r->res = make(spec, S, &r->n);
  r->md = run(spec, r->res, r->n, r->dir, sizeof r->dir);
  r->sec = section(r->md);
}

static void report_close(gate_report *r) {
  free(r->sec), free(r->md);
  remove_tree(r->dir);
  free_result_array(r->res, r->n);
}

static const scenario G1_BEST = {{0.10, 0.06, 0.02, 0.03, 0.05}, 0, 0.45, 0.05, 0.30};

/* The verdicts of the scenario's results as structs. */
static analysis_checks verdicts(const char *spec, const scenario *S) {
  int64_t n;
  cs_cell_result *res = make(spec, S, &n);
  analysis_checks V = verdicts_of(spec, res, n, NULL);
  free_result_array(res, n);
  return V;
}

static void test_g1_best(void **state) {
  (void)state;
  gate_report r;
  report_open(&r, SPEC5, &G1_BEST);
  char path[300];
  snprintf(path, sizeof path, "%s/report/gates.csv", r.dir);
  /* means over seeds 0..7: offset 0.002·3.5 = 0.007 */
  assert_close(csv_number(path, "gated,circles,nonlinear,2,all,g1,", "acc_mean"), 0.907, 1e-12);
  assert_close(csv_number(path, "ungated,circles,nonlinear,2,all,-,", "acc_mean"), 0.807, 1e-12);
  assert_close(csv_number(path, "gated,circles,nonlinear,2,all,g1,", "n_seeds"), 8, 0);
  /* ranks among the positions */
  const char *gates[5] = {"g1", "g2", "g3", "g4", "g5"};
  const double rank_acc[5] = {1, 2, 5, 4, 3}, rank_kh[5] = {3, 2, 4, 5, 1};
  for (int g = 0; g < 5; g++) {
    char pre[64];
    snprintf(pre, sizeof pre, "gated,circles,nonlinear,1,all,%s,", gates[g]);
    assert_close(csv_number(path, pre, "rank_acc"), rank_acc[g], 0);
    assert_close(csv_number(path, pre, "rank_Kh"), rank_kh[g], 0);
    assert_close(csv_number(path, pre, "rank_Kt"), rank_kh[g], 0);
    /* last layer: depth 1 → K̂ = KH, K̃ = 10 KH */
    assert_close(csv_number(path, pre, "Kh_mean"), KH[g], 1e-12);
    assert_close(csv_number(path, pre, "Kt_mean"), 10 * KH[g], 1e-12);
    /* paired by seed: constant differences, interval of zero width */
    assert_close(csv_number(path, pre, "dacc_vs_ungated_mean"), G1_BEST.bonus[g], 1e-12);
    assert_close(csv_number(path, pre, "dacc_vs_ungated_ci_low"), G1_BEST.bonus[g], 1e-12);
    assert_close(csv_number(path, pre, "dacc_vs_ungated_npos"), 8, 0);
    assert_close(csv_number(path, pre, "dacc_vs_ungated_sign_p"), 2.0 / 256, 1e-15);
    assert_close(csv_number(path, pre, "ungated_sink_mass"), 0.485, 1e-12);
    if (g == 0) {
      assert_close(csv_number(path, pre, "n_pairs_g1"), 0, 0);
      continue;
    }
    assert_close(csv_number(path, pre, "n_pairs_g1"), 8, 0);
    assert_close(csv_number(path, pre, "dacc_vs_g1_mean"), G1_BEST.bonus[g] - 0.10, 1e-12);
    assert_close(csv_number(path, pre, "dacc_vs_g1_nneg"), 8, 0);
    assert_close(csv_number(path, pre, "dKh_vs_g1_mean"), KH[g] - KH[0], 1e-12);
    assert_close(csv_number(path, pre, "dsink_mass_vs_g1_mean"), 0.25, 1e-12);
  }
  assert_close(csv_number(path, "gated,circles,nonlinear,2,all,g1,", "sink_mass_mean"), 0.085, 1e-12);
  assert_close(csv_number(path, "gated,circles,nonlinear,2,all,g1,", "max_attn_mean"), 0.5425, 1e-12);
  assert_close(csv_number(path, "gated,circles,nonlinear,2,all,g1,", "dsink_mass_vs_ungated_mean"), -0.40,
               1e-12);
  /* the verdicts: one value per seed (its mean over the 2 depths), 8 seeds all one sign */
  analysis_checks V = verdicts(SPEC5, &G1_BEST);
  for (int g = 1; g < 5; g++) {
    char scope[32];
    snprintf(scope, sizeof scope, "g1 vs %s", gates[g]);
    const analysis_check *c = find_check(&V, "gate-g1-best", scope, 0);
    assert_int_equal(c->n, 8);
    assert_close(c->effect, 0.10 - G1_BEST.bonus[g], 1e-12);
    assert_close(c->p_raw, 2.0 / 256, 0.0);
    assert_close(c->p_adj, 4 * 2.0 / 256, 0.0);
    assert_string_equal(c->adjust, "holm(4)");
  }
  const analysis_check *v = find_check(&V, "gate-g1-best", "verdict", 1);
  assert_int_equal(v->decision, ANALYSIS_SUPPORTED);
  assert_close(v->p_adj, 4 * 2.0 / 256, 0.0);
  v = find_check(&V, "gate-sink", "gated", 1);
  assert_int_equal(v->decision, ANALYSIS_SUPPORTED);
  assert_close(v->effect, 0.40, 1e-12); /* ungated − gated at g1: reduced */
  assert_close(v->p_adj, 2.0 / 256, 0.0);
  v = find_check(&V, "gate-ov-qk", "g1 g2 vs g3 g4", 1);
  assert_int_equal(v->decision, ANALYSIS_SUPPORTED);
  assert_close(v->effect, 0.08 - 0.025, 1e-12);
  analysis_checks_free(&V);
  /* the headline word follows the test */
  assert_has(r.sec, "- **attention sink at G1 (gated): 0.485 → 0.085, reduced**");
  assert_has(r.md, "[gates.csv](gates.csv)");
  snprintf(path, sizeof path, "%s/report/gates.gp", r.dir);
  assert_true(file_exists(path));
  report_close(&r);
}

static void test_qk_ahead(void **state) {
  (void)state;
  const scenario S = {{0.02, 0.03, 0.08, 0.09, 0.04}, 0, 0.45, 0.05, 0.30};
  analysis_checks V = verdicts(SPEC5, &S);
  /* g1 behind g2..g5 on every seed: each significant the wrong way after Holm */
  const analysis_check *c = find_check(&V, "gate-g1-best", "g1 vs g4", 0);
  assert_close(c->effect, -0.07, 1e-12);
  assert_close(c->p_adj, 4 * 2.0 / 256, 0.0);
  assert_int_equal(c->decision, ANALYSIS_NOT_SUPPORTED);
  assert_int_equal(find_check(&V, "gate-g1-best", "verdict", 1)->decision, ANALYSIS_NOT_SUPPORTED);
  c = find_check(&V, "gate-ov-qk", "g1 g2 vs g3 g4", 1);
  assert_int_equal(c->decision, ANALYSIS_NOT_SUPPORTED);
  assert_close(c->effect, 0.025 - 0.085, 1e-12);
  analysis_checks_free(&V);
}

static void test_ties(void **state) {
  (void)state;
  const scenario S = {{0}, 1, 0.2, 0.2, 0.2};
  gate_report r;
  report_open(&r, SPEC5, &S);
  char path[300];
  analysis_checks V = verdicts(SPEC5, &S);
  /* g1 − q = +0.01 on seeds 0..2, −0.01 on 3..7: T = −0.02; a sign pattern gives
   * 0.01 (2k − 8), k its + signs, at least as extreme unless k = 4: p = 1 − C(8,4)/2^8 */
  double p = 1.0 - 70.0 / 256.0;
  const analysis_check *c = find_check(&V, "gate-g1-best", "g1 vs g2", 0);
  assert_close(c->p_raw, p, 1e-15);
  assert_close(c->p_adj, 1.0, 0.0); /* Holm: min(1, 4p) */
  assert_int_equal(find_check(&V, "gate-g1-best", "verdict", 1)->decision, ANALYSIS_INCONCLUSIVE);
  c = find_check(&V, "gate-ov-qk", "g1 g2 vs g3 g4", 1);
  assert_close(c->p_raw, p, 1e-15);
  assert_int_equal(c->decision, ANALYSIS_INCONCLUSIVE);
  /* equal sinks: every difference 0, p = 1 */
  c = find_check(&V, "gate-sink", "gated", 1);
  assert_close(c->p_raw, 1.0, 0.0);
  assert_int_equal(c->decision, ANALYSIS_INCONCLUSIVE);
  analysis_checks_free(&V);
  assert_has(r.sec, ", no significant difference** (mean attention mass");
  /* equal accuracies share a rank: g1 (mean bonus −0.0025) behind g2..g5 */
  snprintf(path, sizeof path, "%s/report/gates.csv", r.dir);
  assert_close(csv_number(path, "gated,circles,nonlinear,1,all,g1,", "rank_acc"), 5, 0);
  assert_close(csv_number(path, "gated,circles,nonlinear,1,all,g4,", "rank_acc"), 1, 0);
  assert_close(csv_number(path, "gated,circles,nonlinear,1,all,g5,", "rank_acc"), 1, 0);
  report_close(&r);
}

static void test_too_few(void **state) {
  (void)state;
  analysis_checks V = verdicts(SPEC1, &G1_BEST);
  const analysis_check *c = find_check(&V, "gate-g1-best", "verdict", 1);
  assert_int_equal(c->decision, ANALYSIS_TOO_FEW);
  assert_int_equal(c->n, 1);
  assert_int_equal(c->needs, 8);
  assert_int_equal(find_check(&V, "gate-ov-qk", "g1 g2 vs g3 g4", 1)->decision, ANALYSIS_TOO_FEW);
  analysis_checks_free(&V);
  gate_report r;
  report_open(&r, SPEC1, &G1_BEST);
  assert_has(r.sec, "Only one seed: no intervals, and too few seeds for any verdict");
  assert_has(r.sec, "- **G1 best on accuracy: too few seeds (n = 1; needs ≥ 8)**");
  report_close(&r);

  /* two seeds, one depth */
  V = verdicts(SPEC2, &G1_BEST);
  c = find_check(&V, "gate-g1-best", "verdict", 1);
  assert_int_equal(c->decision, ANALYSIS_TOO_FEW);
  assert_int_equal(c->n, 2);
  c = find_check(&V, "gate-sink", "gated", 1);
  assert_int_equal(c->decision, ANALYSIS_TOO_FEW);
  assert_int_equal(c->needs, 6); /* a family of one, two-sided: 2 · 2^−6 < 0.05 */
  analysis_checks_free(&V);

  report_open(&r, SPEC_G1, &G1_BEST);
  assert_has(r.sec, "The gate axis has one value: there is nothing to rank and no verdict.");
  assert_null(strstr(r.sec, "G1 best on accuracy"));
  report_close(&r);
  V = verdicts(SPEC_G1, &G1_BEST);
  for (int i = 0; i < V.n; i++) assert_true(strncmp(V.c[i].claim, "gate-", 5) != 0);
  analysis_checks_free(&V);
}

/* Shards, their merge and the results in memory: one gates.csv, one verdicts.csv. */
static void test_archives(void **state) {
  (void)state;
  int64_t n;
  cs_cell_result *res = make(SPEC5, &G1_BEST, &n);
  char dir[64];
  char *md = run(SPEC5, res, n, dir, sizeof dir);
  free(md);
  char out[2][160];
  analyse_shards_and_merge(SPEC5, res, n, dir, out);
  const char *tables[2] = {"gates.csv", "verdicts.csv"};
  assert_same_tables(dir, out, tables, 2);
  remove_tree(dir);
  free_result_array(res, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_g1_best), cmocka_unit_test(test_qk_ahead), cmocka_unit_test(test_ties),
      cmocka_unit_test(test_too_few), cmocka_unit_test(test_archives),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_analysis_gates.c — the gate-position section of `curvsweep analyze`
 * (analysis/README.md, "Gate positions") on synthetic results of a self
 * family sweep (arch ungated, gated × gate g1..g5 × depth 1, 2 × seeds) whose
 * answer is known by construction. Accuracy of a gated cell = 0.80 + bonus
 * of its gate + a seed offset shared by every cell of the seed, so every
 * paired difference has the sign of the bonus difference:
 *   - g1 best (bonus 0.10 against 0.06, 0.02, 0.03, 0.05): 10 of 10 pairs
 *     per position, p = 2·2⁻¹⁰ → "yes (p = 0.001953)"; sink 0.47 → 0.07;
 *     (g1, g2) beat (g3, g4): yes; ranks, means and paired differences of
 *     gates.csv against the construction; the pooled counts in index.md
 *     equal the sums of the table's sign counts;
 *   - g3/g4 ahead (bonus 0.02, 0.03, 0.08, 0.09, 0.04): G1 best "no" with
 *     Bonferroni p = 4·2·2⁻¹⁰, (g1, g2) beat (g3, g4) "no";
 *   - ties: g1 ahead on 3 seeds, behind on 2: 6 of 10, p = 0.7539 → "tie";
 *     equal sinks → no significant change;
 *   - one seed, or two seeds of one depth (2 pairs per test, below the 6 a
 *     sign test needs for p < 0.05): the section says so and gives no
 *     verdict; a one-value gate axis: nothing to rank;
 *   - the same results as two shard archives, as their merge, and in
 *     memory give the same gates.csv. */
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
                           "gate = g1, g2, g3, g4, g5\ndepth = 1, 2\nseed = 0..4\n"
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

/* Every cell of spec, done, with the scenario's values at every layer. */
static cs_cell_result *make(const char *text, const scenario *S, int64_t *n_out) {
  cs_spec *spec = spec_from(text);
  int64_t n = spec_cell_count(spec);
  cs_cell_result *res = calloc((size_t)n, sizeof *res);
  for (int64_t id = 0; id < n; id++) {
    cs_config c;
    assert_ok(spec_cell_config(spec, id, &c));
    cs_cell_result *r = &res[id];
    r->cell_id = id;
    r->status = CELL_DONE;
    r->test_acc = r->train_acc = acc_of(S, &c);
    r->train_loss = 0.3;
    r->n_params = 100;
    r->depth = c.depth;
    r->curv = calloc((size_t)c.depth, sizeof *r->curv);
    for (int l = 0; l < c.depth; l++) {
      geom_stats *g = &r->curv[l];
      double kh = c.arch == ARCH_UNGATED ? 0.25 : KH[c.gate];
      g->n_points = 16;
      g->curved_frac = 1.0; /* classified: the four fractions add up to 1 */
      g->Kh_absmean = g->Kh_mean = kh * (l + 1);
      g->Kt_absmean = g->Kt_mean = 10 * kh * (l + 1);
      g->K_absmean = g->K_mean = kh;
      g->S_se = NAN;
      double sink = c.arch == ARCH_UNGATED ? S->sink_u : c.gate == GATE_G1 ? S->sink_g1 : S->sink_other;
      g->sink_mass = sink + 0.01 * (double)c.seed;
      g->max_attn = 0.5 + g->sink_mass / 2;
    }
  }
  spec_free(spec);
  *n_out = n;
  return res;
}

static void free_all(cs_cell_result *res, int64_t n) {
  for (int64_t i = 0; i < n; i++) result_free(&res[i]);
  free(res);
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
  free_all(r->res, r->n);
}

static const scenario G1_BEST = {{0.10, 0.06, 0.02, 0.03, 0.05}, 0, 0.45, 0.05, 0.30};

static void test_g1_best(void **state) {
  (void)state;
  gate_report r;
  report_open(&r, SPEC5, &G1_BEST);
  const char *sec = r.sec;
  char path[300];
  snprintf(path, sizeof path, "%s/report/gates.csv", r.dir);
  /* means over seeds 0..4: offset 0.002·2 = 0.004 */
  assert_close(csv_number(path, "gated,circles,nonlinear,2,all,g1,", "acc_mean"), 0.904, 1e-12);
  assert_close(csv_number(path, "ungated,circles,nonlinear,2,all,-,", "acc_mean"), 0.804, 1e-12);
  assert_close(csv_number(path, "gated,circles,nonlinear,2,all,g1,", "n_seeds"), 5, 0);
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
    assert_close(csv_number(path, pre, "dacc_vs_ungated_npos"), 5, 0);
    assert_close(csv_number(path, pre, "dacc_vs_ungated_sign_p"), 0.0625, 1e-15);
    assert_close(csv_number(path, pre, "ungated_sink_mass"), 0.47, 1e-12);
    if (g == 0) {
      assert_close(csv_number(path, pre, "n_pairs_g1"), 0, 0);
      continue;
    }
    assert_close(csv_number(path, pre, "n_pairs_g1"), 5, 0);
    assert_close(csv_number(path, pre, "dacc_vs_g1_mean"), G1_BEST.bonus[g] - 0.10, 1e-12);
    assert_close(csv_number(path, pre, "dacc_vs_g1_nneg"), 5, 0);
    assert_close(csv_number(path, pre, "dKh_vs_g1_mean"), KH[g] - KH[0], 1e-12);
    assert_close(csv_number(path, pre, "dsink_mass_vs_g1_mean"), 0.25, 1e-12);
  }
  assert_close(csv_number(path, "gated,circles,nonlinear,2,all,g1,", "sink_mass_mean"), 0.07, 1e-12);
  assert_close(csv_number(path, "gated,circles,nonlinear,2,all,g1,", "max_attn_mean"), 0.535, 1e-12);
  assert_close(csv_number(path, "gated,circles,nonlinear,2,all,g1,", "dsink_mass_vs_ungated_mean"), -0.40,
               1e-12);
  /* the pooled counts are the table's: 2 depths × 5 seeds per position */
  int pooled = 0;
  for (int d = 1; d <= 2; d++) {
    char pre[64];
    snprintf(pre, sizeof pre, "gated,circles,nonlinear,%d,all,g3,", d);
    pooled += (int)csv_number(path, pre, "dacc_vs_g1_nneg");
  }
  assert_int_equal(pooled, 10);
  assert_has(sec, "g3: ahead in 10, behind in 0 of 10 pairs");
  assert_has(sec, "- **G1 best on accuracy: yes (p = 0.001953)**");
  assert_has(sec, "- **sink reduced by G1: from 0.47 to 0.07** (gated;");
  assert_has(sec, "reduced in 10, increased in 0, p 0.001953: reduced)");
  assert_has(sec, "- **SDPA-output/value gates (g1, g2) beat query/key gates (g3, g4): yes (p = 0.001953)**");
  assert_has(r.md, "[gates.csv](gates.csv)");
  snprintf(path, sizeof path, "%s/report/gates.gp", r.dir);
  assert_true(file_exists(path));
  report_close(&r);
}

static void test_qk_ahead(void **state) {
  (void)state;
  const scenario S = {{0.02, 0.03, 0.08, 0.09, 0.04}, 0, 0.45, 0.05, 0.30};
  gate_report r;
  report_open(&r, SPEC5, &S);
  const char *sec = r.sec;
  /* g1 behind g2..g5 in all 10 pairs each: Bonferroni 4 · 2·2⁻¹⁰ */
  assert_has(sec, "- **G1 best on accuracy: no (p = 0.007812)**");
  assert_has(sec, "g4: ahead in 0, behind in 10 of 10 pairs");
  assert_has(sec, "- **SDPA-output/value gates (g1, g2) beat query/key gates (g3, g4): no (p = 0.001953)**");
  report_close(&r);
}

static void test_ties(void **state) {
  (void)state;
  const scenario S = {{0}, 1, 0.2, 0.2, 0.2};
  gate_report r;
  report_open(&r, SPEC5, &S);
  const char *sec = r.sec;
  char path[300];
  /* 6 ahead, 4 behind of 10: p = 2·(1 + 10 + 45 + 120 + 210)/1024 */
  double p = 2.0 * 386.0 / 1024.0;
  char want[128];
  snprintf(want, sizeof want, "- **G1 best on accuracy: tie (p = %.4g)**", p);
  assert_has(sec, want);
  assert_has(sec, "g2: ahead in 6, behind in 4 of 10 pairs");
  snprintf(want, sizeof want, "(g3, g4): tie (p = %.4g)**", p);
  assert_has(sec, want);
  assert_has(sec, "reduced in 0, increased in 0, p n/a: no significant change)");
  /* equal accuracies share a rank: g2..g5 all behind g1's mean on seeds 0..4 (+0.002 mean) */
  snprintf(path, sizeof path, "%s/report/gates.csv", r.dir);
  assert_close(csv_number(path, "gated,circles,nonlinear,1,all,g1,", "rank_acc"), 1, 0);
  assert_close(csv_number(path, "gated,circles,nonlinear,1,all,g4,", "rank_acc"), 2, 0);
  assert_close(csv_number(path, "gated,circles,nonlinear,1,all,g5,", "rank_acc"), 2, 0);
  report_close(&r);
}

static void test_too_few(void **state) {
  (void)state;
  gate_report r;
  report_open(&r, SPEC1, &G1_BEST);
  assert_has(r.sec, "Only one seed: no intervals, and no verdict");
  assert_has(r.sec, "- **G1 best on accuracy: no verdict** (only one seed");
  assert_has(r.sec, "(g3, g4): no verdict** (only one seed");
  report_close(&r);

  /* two seeds, one depth: 2 pairs per pooled test, below the 6 a p < 0.05 needs */
  report_open(&r, SPEC2, &G1_BEST);
  assert_has(r.sec, "- **G1 best on accuracy: no verdict** (only 2 paired differences (a sign test needs 6 "
                    "for p < 0.05))");
  assert_has(r.sec, "reduced in 2, increased in 0, p 0.5: only 2 paired differences");
  assert_null(strstr(r.sec, "Only one seed"));
  report_close(&r);

  report_open(&r, SPEC_G1, &G1_BEST);
  assert_has(r.sec, "The gate axis has one value: there is nothing to rank and no verdict.");
  assert_null(strstr(r.sec, "G1 best on accuracy"));
  report_close(&r);
}

/* Shards, their merge and the results in memory: one gates.csv. */
static void test_archives(void **state) {
  (void)state;
  int64_t n;
  cs_cell_result *res = make(SPEC5, &G1_BEST, &n);
  char dir[64];
  char *md = run(SPEC5, res, n, dir, sizeof dir);
  free(md);
  char out[2][160], p0[300], p1[400];
  analyse_shards_and_merge(SPEC5, res, n, dir, out);
  snprintf(p0, sizeof p0, "%s/report/gates.csv", dir);
  char *want = read_text(p0);
  for (int k = 0; k < 2; k++) {
    snprintf(p1, sizeof p1, "%s/gates.csv", out[k]);
    char *got = read_text(p1);
    assert_string_equal(got, want);
    free(got);
    snprintf(p1, sizeof p1, "%s/index.md", out[k]);
    got = read_text(p1);
    assert_has(got, "- **G1 best on accuracy: yes (p = 0.001953)**");
    free(got);
  }
  free(want);
  remove_tree(dir);
  free_all(res, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_g1_best), cmocka_unit_test(test_qk_ahead), cmocka_unit_test(test_ties),
      cmocka_unit_test(test_too_few), cmocka_unit_test(test_archives),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

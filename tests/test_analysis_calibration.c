/* test_analysis_calibration.c — the verdicts of `curvsweep analyze` on
 * simulated null data (analysis/VERDICTS.md, "Calibration"): gated and
 * ungated cells drawn from one distribution, with the structure of a real
 * grid — every cell of a seed shares the seed's effect (its data and
 * initial tensors), each (seed, task) pair another, each cell and layer its
 * own noise — run through the verdict code (analysis_verdicts_results)
 * N_SIM = 2000 times per claim. Each claim's false "supported" rate (and for
 * claim 3's linear half the false "equivalent" rate at a true difference
 * equal to the margin) must be at most α plus 3 Monte Carlo standard
 * errors √(α(1 − α)/N_SIM). The same code under a stated effect gives the
 * power; both are printed and the power bounded from below. The rates
 * measured are in analysis/README.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/analysis.h"
#include "curvsweep/error.h"
#include "curvsweep/rng.h"
#include "curvsweep/spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_SIM = 2000, MAX_SEED = 16 };
#define ALPHA 0.05

/* The grids: claims 1-4 (8 seeds: claim 4's family of 8 one-sided checks
 * needs 8), the gate positions (8 seeds: G1's family of 4 two-sided needs
 * 8) and the learning curves (6 seeds: two-sided, a family of one). */
static const char *SPEC_MAIN = "[sweep]\nname = null\n[grid]\narch = ungated, gated\n"
                               "task = circles, linear\ndepth = 1, 2, 4\nseed = 0..7\n";
static const char *SPEC_GATES = "[sweep]\nname = null\n[grid]\narch = ungated, gated\n"
                                "gate = g1, g2, g3, g4, g5\ndepth = 1, 2\nseed = 0..7\n"
                                "[model]\nfamily = self\nresidual = yes\nnorm = pre\n";
static const char *SPEC_LC = "[sweep]\nname = null\n[grid]\narch = ungated, gated\n"
                             "train_points = 64, 128, 256, 512\nseed = 0..5\n";

/* An effect added to the gated cells (0 under the null). */
typedef struct {
  double acc_nonlinear; /* accuracy on circles */
  double acc_linear;    /* accuracy on the linear task */
  double kh_slope;      /* log K̂ grows by this × log depth (and × log layer) */
  double acc_g1;        /* accuracy of gate g1 over the other positions */
  double lc_shift;      /* learning curve of the gated arch moved left by this × log 2 */
} effect;

/* The results of one spec (fixture_grid), allocated once and refilled per dataset. */
typedef fixture_grid grid;

/* One dataset: per seed a shared effect on accuracy and on log curvature,
 * per (seed, task) another, per cell and layer noise; gated = ungated in
 * distribution plus the effect E. */
static void simulate(grid *G, rng_stream *rng, const effect *E) {
  double a_seed[MAX_SEED], k_seed[MAX_SEED], a_task[MAX_SEED][4], k_task[MAX_SEED][4];
  for (int s = 0; s < MAX_SEED; s++) {
    a_seed[s] = 0.02 * rng_normal(rng), k_seed[s] = 0.5 * rng_normal(rng);
    for (int t = 0; t < 4; t++) a_task[s][t] = 0.01 * rng_normal(rng), k_task[s][t] = 0.3 * rng_normal(rng);
  }
  for (int64_t id = 0; id < G->n; id++) {
    const cs_config *c = &G->cfg[id];
    cs_cell_result *r = &G->res[id];
    int s = (int)c->seed, t = (int)c->task % 4, gated = c->arch != ARCH_UNGATED;
    double acc = 0.85 + a_seed[s] + a_task[s][t] + 0.01 * rng_normal(rng);
    if (gated) acc += c->task == TASK_LINEAR ? E->acc_linear : E->acc_nonlinear;
    if (gated && c->gate == GATE_G1) acc += E->acc_g1;
    /* a learning curve: accuracy rises by 0.1 per doubling of the training set */
    double lx = log2((double)c->train_points / 64.0) + (gated ? E->lc_shift : 0.0);
    if (G->text == SPEC_LC) acc = 0.6 + 0.1 * lx + a_seed[s] + 0.01 * rng_normal(rng);
    r->test_acc = r->train_acc = acc;
    for (int l = 1; l <= r->depth; l++) {
      geom_stats *g = &r->curv[l - 1];
      double lkh = k_seed[s] + k_task[s][t] + 0.2 * rng_normal(rng);
      if (gated) lkh += E->kh_slope * (log((double)c->depth) + log((double)l)) / 2;
      double an = 1.0 + 0.3 * k_seed[s] + 0.2 * rng_normal(rng);
      g->n_points = 64;
      g->degenerate_frac = 0, g->unresolved_frac = 0, g->flat_frac = 0.2, g->curved_frac = 0.8;
      g->Kh_absmean = g->Kh_mean = exp(lkh);
      g->intabsK = exp(lkh + 0.1 * rng_normal(rng));
      g->Kt_absmean = g->Kt_mean = exp(lkh + an);
      g->K_absmean = g->K_mean = exp(lkh + 0.5);
      g->aniso_median = an;
      g->logdet_mean = -0.5 * l;
      g->sink_mass = 0.3 + 0.05 * k_seed[s] + 0.02 * rng_normal(rng);
      g->max_attn = 0.5 + g->sink_mass / 2;
    }
  }
}

/* The decision of the verdict row (claim, scope) of V, else of the check
 * with that scope, or -1 when there is neither. */
static int decision_of(const analysis_checks *V, const char *claim, const char *scope) {
  for (int pass = 1; pass >= 0; pass--)
    for (int i = 0; i < V->n; i++)
      if (V->c[i].verdict == pass && !strcmp(V->c[i].claim, claim) && !strcmp(V->c[i].scope, scope))
        return (int)V->c[i].decision;
  return -1;
}

/* Up to 4 verdicts counted over N_SIM datasets of grid G under effect E:
 * the share whose decision is `want`. */
typedef struct {
  const char *claim, *scope;
  analysis_decision want;
  int hits, seen;
} tally;

static void run_sims(grid *G, const effect *E, tally *T, int nt, const char *key) {
  rng_stream rng = rng_stream_make(2026, "test:calibration", 0, key);
  analysis_options opt = analysis_options_default();
  opt.bootstrap = 1; /* amplification.csv's bootstrap: no verdict reads it */
  for (int k = 0; k < N_SIM; k++) {
    simulate(G, &rng, E);
    analysis_checks V = verdicts_of(G->text, G->res, G->n, &opt);
    for (int i = 0; i < nt; i++) {
      int d = decision_of(&V, T[i].claim, T[i].scope);
      T[i].seen += d >= 0;
      T[i].hits += d == (int)T[i].want;
    }
    analysis_checks_free(&V);
  }
}

/* α + 3 Monte Carlo standard errors of a rate over N_SIM datasets. */
static double bound(void) { return ALPHA + 3.0 * sqrt(ALPHA * (1 - ALPHA) / N_SIM); }

/* Run the datasets, print each rate, and require lo ≤ rate ≤ hi with every
 * verdict present in every dataset. */
static void measure(grid *G, const effect *E, tally *T, int nt, const char *key, const char *what, double lo,
                    double hi) {
  run_sims(G, E, T, nt, key);
  for (int i = 0; i < nt; i++) {
    double rate = (double)T[i].hits / N_SIM;
    printf("calibration: %s: claim %s (%s) %s in %d of %d datasets: %.4f\n", what, T[i].claim, T[i].scope,
           analysis_decision_name(T[i].want), T[i].hits, N_SIM, rate);
    assert_int_equal(T[i].seen, N_SIM);
    assert_true(lo <= rate && rate <= hi);
  }
}

static void test_null_claims(void **state) {
  (void)state;
  grid G;
  fixture_grid_open(&G, SPEC_MAIN);
  const effect null = {0};
  tally T[4] = {{"2", "verdict", ANALYSIS_SUPPORTED, 0, 0},
                {"3", "verdict", ANALYSIS_SUPPORTED, 0, 0},
                {"3", "nonlinear;pooled", ANALYSIS_SUPPORTED, 0, 0},
                {"4", "verdict", ANALYSIS_SUPPORTED, 0, 0}};
  measure(&G, &null, T, 4, "null", "null", 0.0, bound());
  /* power: gated +0.02 accuracy on circles (the seed sd 0.02 shared by both archs cancels in
   * the pairs), K̂ growing with slope 0.5 in log depth and log layer */
  const effect eff = {0.02, 0.0, 0.5, 0.0, 0.0};
  tally P[2] = {{"3", "verdict", ANALYSIS_SUPPORTED, 0, 0}, {"4", "verdict", ANALYSIS_SUPPORTED, 0, 0}};
  measure(&G, &eff, P, 2, "power", "power (Δacc 0.02 nonlinear, K̂ slope 0.5)", 0.8, 1.0);
  fixture_grid_close(&G);
}

/* Claim 3's linear half: the null of the TOST is a difference at the margin. */
static void test_null_equivalence(void **state) {
  (void)state;
  grid G;
  fixture_grid_open(&G, SPEC_MAIN);
  const effect at_margin = {0.0, ANALYSIS_MARGIN, 0.0, 0.0, 0.0};
  tally T[1] = {{"3", "verdict", ANALYSIS_SUPPORTED, 0, 0}};
  measure(&G, &at_margin, T, 1, "margin", "linear difference = margin", 0.0, bound());
  /* power of the equivalence half: no difference on linear tasks, a real gain on circles */
  const effect eq = {0.05, 0.0, 0.0, 0.0, 0.0};
  T[0] = (tally){"3", "verdict", ANALYSIS_SUPPORTED, 0, 0};
  measure(&G, &eq, T, 1, "equivalent", "power (Δacc 0.05 nonlinear, 0 linear)", 0.5, 1.0);
  fixture_grid_close(&G);
}

static void test_null_gates(void **state) {
  (void)state;
  grid G;
  fixture_grid_open(&G, SPEC_GATES);
  const effect null = {0};
  tally T[3] = {{"gate-g1-best", "verdict", ANALYSIS_SUPPORTED, 0, 0},
                {"gate-sink", "gated", ANALYSIS_SUPPORTED, 0, 0},
                {"gate-ov-qk", "g1 g2 vs g3 g4", ANALYSIS_SUPPORTED, 0, 0}};
  measure(&G, &null, T, 3, "gates-null", "null", 0.0, bound());
  const effect eff = {0, 0, 0, 0.02, 0};
  tally P[1] = {{"gate-g1-best", "verdict", ANALYSIS_SUPPORTED, 0, 0}};
  measure(&G, &eff, P, 1, "gates-power", "power (g1 +0.02 accuracy)", 0.5, 1.0);
  fixture_grid_close(&G);
}

static void test_null_learning(void **state) {
  (void)state;
  grid G;
  fixture_grid_open(&G, SPEC_LC);
  const effect null = {0};
  tally T[1] = {{"sample-efficiency", "verdict", ANALYSIS_SUPPORTED, 0, 0}};
  measure(&G, &null, T, 1, "lc-null", "null", 0.0, bound());
  const effect eff = {0, 0, 0, 0, 0.5};
  T[0] = (tally){"sample-efficiency", "verdict", ANALYSIS_SUPPORTED, 0, 0};
  measure(&G, &eff, T, 1, "lc-power", "power (gated curve 2^0.5 × fewer samples)", 0.5, 1.0);
  fixture_grid_close(&G);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_null_claims),
      cmocka_unit_test(test_null_equivalence),
      cmocka_unit_test(test_null_gates),
      cmocka_unit_test(test_null_learning),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

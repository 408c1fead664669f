/* test_analysis_gatestats_calibration.c — the verdicts on what else gates do
 * (calib-ece, gate-sparse, stab-lr; analysis/README.md) on simulated null
 * data, N_SIM = 2000 datasets each, run through the verdict code
 * (analysis_verdicts_results) as tests/test_analysis_calibration.c does for
 * the other claims: gated and ungated cells from one distribution, every
 * cell of a seed sharing the seed's effect, each (seed, task) another, each
 * cell its own noise. The false "supported" rate must be at most α plus 3
 * Monte Carlo standard errors; under a stated effect the power is printed
 * and bounded from below. The rates measured are in analysis/README.md's
 * calibration table.
 *   - calib-ece: ECE 0.03 + seed (sd 0.01) + (seed, task) (sd 0.005) + cell
 *     (sd 0.005) noise, clipped at 0; power: gated 0.008 lower;
 *   - gate-sparse at its boundary: the share below 0.1 of a gated cell 0.5 +
 *     seed (sd 0.1) + cell (sd 0.05) noise (a true share of exactly one
 *     half, the null of the one-sided test); power: 0.65;
 *   - stab-lr: per (arch, seed, task) a stability threshold in log10 lr,
 *     −1.5 + seed (sd 0.3) + (seed, task) (sd 0.2) + (arch, seed, task)
 *     (sd 0.3); a cell is unstable (a spike) above it, on the lr grid 1e-3,
 *     3e-3, 1e-2, 3e-2, 1e-1, 3e-1; power: the gated threshold 0.5 higher. */
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

enum { N_SIM = 2000, MAX_SEED = 8 };
#define ALPHA 0.05

static const char *SPEC_CAL = "[sweep]\nname = null\n[grid]\narch = ungated, gated\n"
                              "task = circles, linear\ndepth = 1, 2, 4\nseed = 0..7\n";
static const char *SPEC_STAB = "[sweep]\nname = null\n[grid]\narch = ungated, gated\n"
                               "lr = 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1\ntask = circles, linear\n"
                               "depth = 1\nseed = 0..7\n";

typedef struct {
  double ece;     /* added to the gated cells' ECE */
  double low;     /* the gated cells' share below 0.1 (its mean) */
  double lstar;   /* added to the gated stability threshold (log10 lr) */
} effect;

typedef fixture_grid grid;

/* fixture_grid_open, and one gate-score row per layer of a gated cell. */
static void grid_open_gated(grid *G, const char *text) {
  fixture_grid_open(G, text);
  for (int64_t id = 0; id < G->n; id++)
    if (config_arch_gated(G->cfg[id].arch)) {
      G->res[id].n_gates = G->cfg[id].depth;
      G->res[id].gates = calloc((size_t)G->cfg[id].depth, sizeof *G->res[id].gates);
      assert_non_null(G->res[id].gates);
    }
}

static double clip01(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

/* One dataset under effect E. */
static void simulate(grid *G, rng_stream *rng, const effect *E) {
  double e_seed[MAX_SEED], e_task[MAX_SEED][2], l_seed[MAX_SEED], th_seed[MAX_SEED], th_task[MAX_SEED][2];
  double th_arch[2][MAX_SEED][2];
  for (int s = 0; s < MAX_SEED; s++) {
    e_seed[s] = 0.01 * rng_normal(rng), l_seed[s] = 0.1 * rng_normal(rng), th_seed[s] = 0.3 * rng_normal(rng);
    for (int t = 0; t < 2; t++) {
      e_task[s][t] = 0.005 * rng_normal(rng), th_task[s][t] = 0.2 * rng_normal(rng);
      for (int a = 0; a < 2; a++) th_arch[a][s][t] = 0.3 * rng_normal(rng);
    }
  }
  for (int64_t id = 0; id < G->n; id++) {
    const cs_config *c = &G->cfg[id];
    cs_cell_result *r = &G->res[id];
    int s = (int)c->seed, t = c->task == TASK_LINEAR, gated = c->arch != ARCH_UNGATED;
    r->status = CELL_DONE;
    r->test_acc = r->train_acc = 0.85 + 0.01 * rng_normal(rng);
    double ece = 0.03 + e_seed[s] + e_task[s][t] + 0.005 * rng_normal(rng) - (gated ? E->ece : 0.0);
    double th = -1.5 + th_seed[s] + th_task[s][t] + th_arch[gated][s][t] + (gated ? E->lstar : 0.0);
    r->cstats = (cs_cell_stats){1, log10(c->lr) > th, 1.0, 0.2, 0.1, clip01(ece)};
    for (int l = 1; l <= r->depth; l++) {
      geom_stats *g = &r->curv[l - 1];
      g->n_points = 64, g->flat_frac = 0.2, g->curved_frac = 0.8;
      g->Kh_absmean = g->Kt_absmean = g->K_absmean = 1.0;
      g->attn_entropy = 0.5;
    }
    for (int b = 0; b < r->n_gates; b++) {
      double low = clip01((gated ? E->low : 0.5) + l_seed[s] + 0.05 * rng_normal(rng));
      r->gates[b] = (cs_gate_scores){b + 1, 64, 0.3, 0.2, 0.01, 0.7, low, 0.5, 0.2, {0}};
      r->gates[b].hist[0] = low, r->gates[b].hist[19] = 1 - low;
    }
  }
}

/* The decision of the verdict row (claim, scope), -1 when there is none. */
static int decision_of(const analysis_checks *V, const char *claim, const char *scope) {
  for (int i = 0; i < V->n; i++)
    if (V->c[i].verdict && !strcmp(V->c[i].claim, claim) && !strcmp(V->c[i].scope, scope))
      return (int)V->c[i].decision;
  return -1;
}

/* The share of N_SIM datasets under E whose verdict (claim, "memory gated")
 * is supported; every dataset must have it. */
static double rate(grid *G, const effect *E, const char *claim, const char *key, const char *what) {
  rng_stream rng = rng_stream_make(2026, "test:gatestats-calibration", 0, key);
  analysis_options opt = analysis_options_default();
  opt.bootstrap = 1;
  int hits = 0, seen = 0;
  for (int k = 0; k < N_SIM; k++) {
    simulate(G, &rng, E);
    analysis_checks V = verdicts_of(G->text, G->res, G->n, &opt);
    int d = decision_of(&V, claim, "memory gated");
    seen += d >= 0, hits += d == ANALYSIS_SUPPORTED;
    analysis_checks_free(&V);
  }
  assert_int_equal(seen, N_SIM);
  double r = (double)hits / N_SIM;
  printf("calibration: %s: claim %s supported in %d of %d datasets: %.4f\n", what, claim, hits, N_SIM, r);
  return r;
}

static double bound(void) { return ALPHA + 3.0 * sqrt(ALPHA * (1 - ALPHA) / N_SIM); }

static void test_null_calibration_and_sparsity(void **state) {
  (void)state;
  grid G;
  grid_open_gated(&G, SPEC_CAL);
  const effect null = {0.0, 0.5, 0.0};
  assert_true(rate(&G, &null, "calib-ece", "ece-null", "null") <= bound());
  assert_true(rate(&G, &null, "gate-sparse", "sparse-null", "null at the boundary (share 0.5)") <= bound());
  const effect eff = {0.008, 0.65, 0.0};
  assert_true(rate(&G, &eff, "calib-ece", "ece-power", "power (ECE 0.008 lower)") >= 0.5);
  assert_true(rate(&G, &eff, "gate-sparse", "sparse-power", "power (share 0.65)") >= 0.5);
  fixture_grid_close(&G);
}

static void test_null_stability(void **state) {
  (void)state;
  grid G;
  grid_open_gated(&G, SPEC_STAB);
  const effect null = {0.0, 0.5, 0.0};
  assert_true(rate(&G, &null, "stab-lr", "stab-null", "null") <= bound());
  const effect eff = {0.0, 0.5, 0.5};
  assert_true(rate(&G, &eff, "stab-lr", "stab-power", "power (threshold 0.5 higher in log10 lr)") >= 0.5);
  fixture_grid_close(&G);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_null_calibration_and_sparsity),
      cmocka_unit_test(test_null_stability),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

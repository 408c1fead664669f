/* test_analysis_estimation_calibration.c — the estimation-rates verdict
 * (analysis/VERDICTS.md, "Estimation rates" and "Calibration") on simulated
 * curves of known rate, N_SIM datasets per null case (N_POWER per power or
 * control case), each run through the
 * section's own code (analysis_estimation_build, _set, _checks, Holm,
 * _verdicts) exactly as analyze runs it.
 *
 * A dataset has the shape of jobs/estimation.ini: the n grid XS, S seeds,
 * and per seed an exact-H (H = H* = 3) and an over-specified (H = 3, H* = 2)
 * group of ungated, gated g1 and gated g2. Each curve is a rate f(n) with
 * the noise of real curves on top: log error = log f(n) + a_s + b_s (log n −
 * mean) + ε, a seed's scale a_s ~ N(0, 0.5²) (its own teacher), its own
 * slope jitter b_s ~ N(0, 0.05²), per cell ε ~ N(0, 0.15²) for the function
 * error and N(0, 0.3²) for the Voronoi loss, which in 5% of the cells is
 * also thrown up by N(1, 0.5²) (an estimator that kept a poor restart).
 *
 * False "supported" must be at most α + 3 Monte Carlo standard errors
 * √(α(1 − α)/N_SIM) where the claim is false: every over-specified curve
 * logarithmic (1/log n), every one polynomial (n^-1/2), and each side at
 * the bound itself (G1/G2 at n^-1/4, ungated at 1/log n; G1/G2 at n^-1/2,
 * ungated at n^-1/4). Power (G1/G2 at n^-1/2, ungated at 1/log n) and the
 * control's rates (exact-H function error at n^-1/4: "not testable"; at
 * n^-1/2: wrongly "not testable") are printed and bounded; the numbers are
 * in analysis/README.md's calibration table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "../analysis/stats/checks.h"
#include "../analysis/sections/estimation.h"
#include "curvsweep/analysis.h"
#include "curvsweep/rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* datasets per null case, per power or control case */
enum { N_SIM = 2000, N_POWER = 500, S = 20, NX = 5, N_GROUPS = 6, MAX_ROWS = N_GROUPS * NX * S };
#define ALPHA 0.05
/* The n grid of jobs/estimation.ini (its heads: student 3, teacher 3 and 2). */
static const int XS[NX] = {100, 300, 1000, 3000, 10000};

typedef enum { RATE_HALF = 0, RATE_LOG, RATE_QUARTER } rate;

static double rate_value(rate k, int n) {
  return k == RATE_HALF ? pow(n, -0.5) : k == RATE_LOG ? 1.0 / log((double)n) : pow(n, -0.25);
}

/* A case: the rate of the over-specified Voronoi loss of G1/G2 and of
 * ungated, and of the exact-H function error (the control). */
typedef struct {
  const char *name;
  rate gated, ungated, control;
} scenario;

static analysis_est_row R[MAX_ROWS];

/* One dataset into R; returns the row count. */
static int simulate(const scenario *sc, rng_stream *rng) {
  const cs_arch arch[3] = {ARCH_UNGATED, ARCH_GATED, ARCH_GATED};
  const int gate[3] = {-1, GATE_G1, GATE_G2};
  double mlx = 0;
  for (int i = 0; i < NX; i++) mlx += log((double)XS[i]) / NX;
  int n = 0;
  for (int k = 0; k < 3; k++)
    for (int over = 0; over <= 1; over++)
      for (int s = 0; s < S; s++) {
        double a[2] = {0.5 * rng_normal(rng), 0.5 * rng_normal(rng)};
        double b[2] = {0.05 * rng_normal(rng), 0.05 * rng_normal(rng)};
        rate vo = !over ? RATE_HALF : k ? sc->gated : sc->ungated, fn = !over ? sc->control : RATE_HALF;
        for (int i = 0; i < NX; i++) {
          double lx = log((double)XS[i]) - mlx;
          double lfn = log(rate_value(fn, XS[i])) + a[0] + b[0] * lx + 0.15 * rng_normal(rng);
          double lvo = log(rate_value(vo, XS[i])) + a[1] + b[1] * lx + 0.3 * rng_normal(rng);
          if (rng_uniform(rng) < 0.05) lvo += 1.0 + 0.5 * rng_normal(rng);
          R[n++] = (analysis_est_row){.arch = arch[k], .gate = gate[k], .heads = 3, .teacher_heads = over ? 2 : 3,
                                      .n = XS[i], .seed = s, .err = {exp(lfn), exp(lvo)}, .converged = 1};
        }
      }
  return n;
}

/* The verdict of one dataset, as compute.c runs the section. */
static analysis_decision verdict(int n) {
  analysis_data D;
  memset(&D, 0, sizeof D);
  D.opt = analysis_options_default();
  analysis_estimation *E = NULL;
  assert_ok(analysis_estimation_build(R, n, S, 1, 1, 0, &E)); /* one bootstrap replicate: no verdict reads it */
  assert_ok(analysis_estimation_set(&D, E));
  assert_ok(analysis_estimation_checks(&D));
  assert_ok(analysis_checks_adjust(&D));
  assert_ok(analysis_estimation_verdicts(&D));
  const analysis_check *v = analysis_check_find(&D, ANALYSIS_EST_CLAIM, "verdict");
  assert_non_null(v);
  analysis_decision d = v->decision;
  analysis_estimation_free(&D);
  analysis_checks_free(&D.checks);
  return d;
}

/* The share of n_sim datasets of sc whose verdict is `want`, printed and
 * required in [lo, hi]. */
static double measure(const scenario *sc, int n_sim, analysis_decision want, double lo, double hi) {
  rng_stream rng = rng_stream_make(2026, "test:estimation-calibration", 0, sc->name);
  int hits = 0;
  for (int k = 0; k < n_sim; k++) hits += verdict(simulate(sc, &rng)) == want;
  double share = (double)hits / n_sim;
  printf("calibration: estimation-rate, %s: %s in %d of %d datasets: %.4f\n", sc->name,
         analysis_decision_name(want), hits, n_sim, share);
  assert_true(lo <= share && share <= hi);
  return share;
}

static double bound(void) { return ALPHA + 3.0 * sqrt(ALPHA * (1 - ALPHA) / N_SIM); }

static void test_false_supported(void **state) {
  (void)state;
  const scenario nulls[4] = {
      {"all logarithmic", RATE_LOG, RATE_LOG, RATE_HALF},
      {"all n^-1/2", RATE_HALF, RATE_HALF, RATE_HALF},
      {"G1/G2 at the bound n^-1/4, ungated 1/log n", RATE_QUARTER, RATE_LOG, RATE_HALF},
      {"G1/G2 n^-1/2, ungated at the bound n^-1/4", RATE_HALF, RATE_QUARTER, RATE_HALF},
  };
  for (int i = 0; i < 4; i++) measure(&nulls[i], N_SIM, ANALYSIS_SUPPORTED, 0.0, bound());
}

static void test_power_and_control(void **state) {
  (void)state;
  const scenario claim = {"G1/G2 n^-1/2, ungated 1/log n", RATE_HALF, RATE_LOG, RATE_HALF};
  /* power measured 0.704 over N_POWER datasets; the bound is set below it with room for their error */
  measure(&claim, N_POWER, ANALYSIS_SUPPORTED, 0.4, 1.0);
  measure(&claim, N_POWER, ANALYSIS_NOT_TESTABLE, 0.0, 0.01);
  const scenario broken = {"the same, controls' function error at n^-1/4", RATE_HALF, RATE_LOG, RATE_QUARTER};
  measure(&broken, N_POWER, ANALYSIS_NOT_TESTABLE, 0.95, 1.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_false_supported),
      cmocka_unit_test(test_power_and_control),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

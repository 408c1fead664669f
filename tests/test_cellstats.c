/* test_cellstats.c — the per-cell measures besides curvature
 * (src/train/cellstats.c; docs/MODELS.md, "Calibration", "Stability",
 * "Gate scores and attention entropy") against numbers computed by hand:
 *   - NLL, Brier, accuracy and ECE of six predictions of known
 *     probabilities (logits log p), worked out below, and their invariance
 *     to a constant added to the logits;
 *   - loss spikes on fabricated training curves: the noisy convergence of a
 *     small point task (no spike, though its ratio passes 2), one blow-up
 *     spread over two evaluations (one spike), two blow-ups, a slow drift,
 *     the window, plateau noise, a diverged tail, and the class count;
 *   - the gate-score summary against a direct computation (type-7
 *     quantiles, counts) and its variance shares on tables of known
 *     structure (additive: 8/11 and 3/11; pure interaction: 0 and 0; one
 *     channel; constant). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "curvsweep/cellstats.h"
#include "curvsweep/error.h"
#include "fixtures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Six predictions: probabilities p (K = 2 or 3) and the true class y.
 *   #  p                  y  pred  conf  bin = ceil(15 conf) - 1  NLL       Brier
 *   1  (0.9, 0.1)         0  0     0.90  13                        -ln 0.9   0.01 + 0.01 = 0.02
 *   2  (0.3, 0.7)         0  1     0.70  10                        -ln 0.3   0.49 + 0.49 = 0.98
 *   3  (0.15, 0.85)       1  1     0.85  12                        -ln 0.85  0.0225 + 0.0225 = 0.045
 *   4  (0.5, 0.3, 0.2)    2  0     0.50  7                         -ln 0.2   0.25 + 0.09 + 0.64 = 0.98
 *   5  (0.62, 0.23, 0.15) 0  0     0.62  9                         -ln 0.62  0.1444 + 0.0529 + 0.0225 = 0.2198
 *   6  (0.88, 0.12)       1  0     0.88  13                        -ln 0.12  0.7744 + 0.7744 = 1.5488
 * accuracy 3/6; Brier 3.7936/6; ECE over the bins:
 *   bin 13: #1, #6: acc 1/2, conf 0.89, |0.5 - 0.89| = 0.39, weight 2/6
 *   bin 10: 0.7; bin 12: 0.15; bin 7: 0.5; bin 9: 0.38 (weight 1/6 each)
 *   ECE = (2 0.39 + 0.7 + 0.15 + 0.5 + 0.38) / 6 = 2.51 / 6. */
static const struct {
  int K, y;
  double p[3];
} PRED[6] = {
    {2, 0, {0.9, 0.1}},   {2, 0, {0.3, 0.7}},         {2, 1, {0.15, 0.85}},
    {3, 2, {0.5, 0.3, 0.2}}, {3, 0, {0.62, 0.23, 0.15}}, {2, 1, {0.88, 0.12}},
};

static void calib_of(double shift, double *nll, double *brier, double *ece, double *acc) {
  cellstats_calib c;
  memset(&c, 0, sizeof c);
  for (int i = 0; i < 6; i++) {
    double z[3];
    for (int k = 0; k < PRED[i].K; k++) z[k] = log(PRED[i].p[k]) + shift;
    cellstats_calib_add(&c, PRED[i].K, z, PRED[i].y);
  }
  assert_int_equal(c.n, 6);
  cellstats_calib_finish(&c, nll, brier, ece, acc);
}

static void test_calibration_by_hand(void **state) {
  (void)state;
  double want_nll = -(log(0.9) + log(0.3) + log(0.85) + log(0.2) + log(0.62) + log(0.12)) / 6;
  for (int s = 0; s < 2; s++) {
    double nll, brier, ece, acc;
    calib_of(s ? 100.0 : 0.0, &nll, &brier, &ece, &acc);
    assert_float_equal(acc, 0.5, 0);
    assert_float_equal(nll, want_nll, 1e-12);
    assert_float_equal(brier, 3.7936 / 6, 1e-12);
    assert_float_equal(ece, 2.51 / 6, 1e-12);
  }
  // a tie: the first class is the prediction (as the loss's accuracy counts it)
  cellstats_calib c;
  memset(&c, 0, sizeof c);
  double z[2] = {0.0, 0.0};
  cellstats_calib_add(&c, 2, z, 0);
  cellstats_calib_add(&c, 2, z, 1);
  double nll, brier, ece, acc;
  cellstats_calib_finish(&c, &nll, &brier, &ece, &acc);
  assert_float_equal(acc, 0.5, 0);
  assert_float_equal(nll, log(2.0), 1e-15);
  assert_float_equal(brier, 0.5, 1e-15);
  assert_float_equal(ece, 0.0, 1e-15); /* confidence 1/2, accuracy 1/2: bin 7 */
  // no predictions: NaN
  memset(&c, 0, sizeof c);
  cellstats_calib_finish(&c, &nll, &brier, &ece, &acc);
  assert_true(isnan(nll) && isnan(brier) && isnan(ece) && isnan(acc));
}

/* Spikes and the largest ratio of a curve of K classes (chance: log K). */
static void spikes_of(int n, const double *loss, int K, int *spikes, double *ratio) {
  cellstats_loss_spikes(n, loss, log((double)K), spikes, ratio);
}

static void test_spikes_on_fabricated_curves(void **state) {
  (void)state;
  int spikes;
  double ratio;
  // the noisy convergence of circles or XOR evaluated every epoch (shapes of
  // jobs/gates.ini's curves): the loss doubles at 0.004 -> 0.009 and reaches
  // 0.148 against the best 0.004 of the last five (ratio 37), but never
  // climbs back halfway to ln 2: no spike
  const double healthy[] = {0.69,  0.3,   0.1,   0.03,  0.012, 0.02, 0.008, 0.015,
                            0.004, 0.009, 0.006, 0.0647, 0.148, 0.07, 0.05};
  spikes_of(15, healthy, 2, &spikes, &ratio);
  assert_int_equal(spikes, 0);
  assert_float_equal(ratio, 0.148 / 0.004, 1e-15);
  // one blow-up over two evaluations (0.6, 0.65 against the best 0.05, past
  // (0.05 + ln 2)/2 = 0.372): one spike
  const double one[] = {0.69, 0.2, 0.05, 0.6, 0.65, 0.1, 0.05, 0.04};
  spikes_of(8, one, 2, &spikes, &ratio);
  assert_int_equal(spikes, 1);
  assert_float_equal(ratio, 0.65 / 0.05, 1e-15);
  // two separate blow-ups
  const double two[] = {0.69, 0.2, 0.05, 0.5, 0.04, 0.03, 0.6, 0.03};
  spikes_of(8, two, 2, &spikes, &ratio);
  assert_int_equal(spikes, 2);
  assert_float_equal(ratio, 0.6 / 0.03, 1e-15);
  // a slow drift up by 10% per evaluation: 1.1^5 = 1.61 < 2 over the window, no spike
  double drift[20];
  for (int k = 0; k < 20; k++) drift[k] = 0.1 * pow(1.1, k);
  spikes_of(20, drift, 2, &spikes, &ratio);
  assert_int_equal(spikes, 0);
  assert_float_equal(ratio, pow(1.1, 5), 1e-12);
  // the window: 0.44 is a spike against the best 0.05 six evaluations back,
  // not against the 0.2 of the last five ((0.2 + ln 2)/2 = 0.447)
  const double window[] = {0.05, 0.2, 0.2, 0.2, 0.2, 0.2, 0.44};
  spikes_of(7, window, 2, &spikes, &ratio);
  assert_int_equal(spikes, 0);
  assert_float_equal(ratio, 4.0, 1e-15); /* 0.2 / 0.05 at k = 1 */
  // noise on the plateau at chance (0.6935 -> 0.7405) is past the halfway
  // point but no doubling: no spike
  const double plateau[] = {0.6935, 0.7405, 0.6932, 0.7018};
  spikes_of(4, plateau, 2, &spikes, &ratio);
  assert_int_equal(spikes, 0);
  // a diverged tail: the non-finite evaluation and what follows are left out
  const double diverged[] = {0.69, 0.3, INFINITY, 0.01};
  spikes_of(4, diverged, 2, &spikes, &ratio);
  assert_int_equal(spikes, 0);
  assert_float_equal(ratio, 0.3 / 0.69, 1e-15);
  const double nan_tail[] = {0.69, NAN};
  spikes_of(2, nan_tail, 2, &spikes, &ratio);
  assert_int_equal(spikes, 0);
  assert_true(isnan(ratio)); /* one finite evaluation: no ratio */
  spikes_of(0, NULL, 2, &spikes, &ratio);
  assert_int_equal(spikes, 0);
  assert_true(isnan(ratio));
  // the class count: 0.2 -> 0.5 climbs past (0.2 + ln 2)/2 = 0.447 for 2
  // classes, not past (0.2 + ln 32)/2 = 1.83 for a vocabulary of 32
  const double jump[] = {0.4, 0.2, 0.5};
  spikes_of(3, jump, 2, &spikes, &ratio);
  assert_int_equal(spikes, 1);
  spikes_of(3, jump, 32, &spikes, &ratio);
  assert_int_equal(spikes, 0);
  assert_float_equal(ratio, 2.5, 1e-15);
}

/* Type-7 quantile of n sorted values, written out. */
static double q7(const double *x, int n, double q) {
  double h = (n - 1) * q;
  int lo = (int)floor(h);
  return lo + 1 < n ? x[lo] + (h - lo) * (x[lo + 1] - x[lo]) : x[lo];
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void test_gate_scores_direct(void **state) {
  (void)state;
  // a 6 x 4 table of gate values (every histogram edge case: 0.05 exactly, 1.0)
  const double G[24] = {0.01, 0.05, 0.30, 0.99, 0.02, 0.07, 0.45, 1.00, 0.09, 0.10, 0.55, 0.97,
                        0.12, 0.20, 0.50, 0.60, 0.04, 0.33, 0.66, 0.95, 0.08, 0.15, 0.25, 0.35};
  cs_gate_scores g;
  memset(&g, 0, sizeof g);
  g.prefix = 3;
  assert_ok(cellstats_gate_scores(6, 4, G, &g));
  assert_int_equal(g.prefix, 3); /* left as it was */
  assert_int_equal(g.n_scores, 24);
  double s[24], sum = 0;
  int low = 0, bins[RESULT_GATE_BINS] = {0};
  memcpy(s, G, sizeof s);
  qsort(s, 24, sizeof *s, cmp);
  for (int i = 0; i < 24; i++) {
    sum += G[i];
    low += G[i] < 0.1;
    int b = (int)floor(G[i] / 0.05 + 1e-12); /* [k/20, (k+1)/20): 0.05 is bin 1 */
    bins[b > 19 ? 19 : b]++;
  }
  assert_float_equal(g.mean, sum / 24, 1e-15);
  assert_float_equal(g.median, q7(s, 24, 0.5), 1e-15);
  assert_float_equal(g.median, (0.25 + 0.30) / 2, 1e-15); /* the 12th and 13th of 24 */
  assert_float_equal(g.q10, q7(s, 24, 0.1), 1e-15);
  assert_float_equal(g.q90, q7(s, 24, 0.9), 1e-15);
  /* below 0.1: 0.01 0.02 0.04 0.05 0.07 0.08 0.09, seven of them (0.10 is not below) */
  assert_int_equal(low, 7);
  assert_float_equal(g.frac_low, 7.0 / 24, 0);
  double hsum = 0;
  for (int b = 0; b < RESULT_GATE_BINS; b++) {
    assert_float_equal(g.hist[b], bins[b] / 24.0, 0);
    hsum += g.hist[b];
  }
  assert_float_equal(hsum, 1.0, 1e-15);
  assert_float_equal(g.hist[19], 4.0 / 24, 0); /* 0.95, 0.97, 0.99, 1.00 (the last bin is closed) */
  assert_float_equal(g.hist[1], 4.0 / 24, 0);  /* 0.05, 0.07, 0.08, 0.09 */

  // additive rows and columns: G = 0.5 + a_r + b_c, a = (-0.2, 0, 0.2), b = (-0.1, 0.1):
  // SS_rows = 2 (0.04 + 0 + 0.04) = 0.16, SS_cols = 3 (0.01 + 0.01) = 0.06, total 0.22
  const double a[3] = {-0.2, 0.0, 0.2}, bcol[2] = {-0.1, 0.1};
  double add[6];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 2; c++) add[r * 2 + c] = 0.5 + a[r] + bcol[c];
  assert_ok(cellstats_gate_scores(3, 2, add, &g));
  assert_float_equal(g.var_query, 8.0 / 11, 1e-12);
  assert_float_equal(g.var_channel, 3.0 / 11, 1e-12);
  // pure interaction: neither rows nor columns explain any of it
  const double inter[4] = {0.6, 0.4, 0.4, 0.6};
  assert_ok(cellstats_gate_scores(2, 2, inter, &g));
  assert_float_equal(g.var_query, 0.0, 1e-15);
  assert_float_equal(g.var_channel, 0.0, 1e-15);
  // one channel (a headwise gate of one head): all of it between rows
  const double one[3] = {0.2, 0.5, 0.9};
  assert_ok(cellstats_gate_scores(3, 1, one, &g));
  assert_float_equal(g.var_query, 1.0, 1e-15);
  assert_float_equal(g.var_channel, 0.0, 0);
  // constant: no variance to share
  const double flat[4] = {0.3, 0.3, 0.3, 0.3};
  assert_ok(cellstats_gate_scores(2, 2, flat, &g));
  assert_float_equal(g.var_query, 0.0, 0);
  assert_float_equal(g.var_channel, 0.0, 0);
  assert_float_equal(g.q10, 0.3, 0);
  // no values: an input error
  assert_int_equal(cellstats_gate_scores(0, 4, G, &g), CS_ERR_INPUT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_calibration_by_hand),
      cmocka_unit_test(test_spikes_on_fabricated_curves),
      cmocka_unit_test(test_gate_scores_direct),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_analysis_inference.c — the statistics behind the report against
 * table values, closed forms and independent enumeration (analysis/VERDICTS.md,
 * "Statistics of the verdicts"): the Student-t distribution and binomial
 * tail (GSL), t intervals, least squares, the sign test and the median
 * interval; the paired sign-flip test (exact against a brute-force count
 * written out here, Monte Carlo against the exact binomial answer within
 * its stated error), Holm by hand, the seeds a test needs, d_z, and the
 * paired TOST against the closed-form t CDF of 2 degrees of freedom. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/analysis.h"
#include "curvsweep/error.h"
#include "curvsweep/quantile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_t_quantile(void **state) {
  (void)state;
  /* two-sided 95% values of the usual t table */
  assert_close(analysis_t_quantile(0.975, 1), 12.706, 5e-4);
  assert_close(analysis_t_quantile(0.975, 4), 2.776, 5e-4);
  assert_close(analysis_t_quantile(0.975, 30), 2.042, 5e-4);
  /* more digits: t_{0.975,1} = tan(0.475 π) exactly (Cauchy) */
  assert_close(analysis_t_quantile(0.975, 1), tan(0.475 * M_PI), 1e-9);
  /* ν = 2 in closed form: t_p = (2p − 1)/√(2p(1 − p)) = 4.302652729749464 at p = 0.975 */
  assert_close(analysis_t_quantile(0.975, 2), (2 * 0.975 - 1) / sqrt(2 * 0.975 * (1 - 0.975)), 1e-9);
  assert_close(analysis_t_quantile(0.95, 10), 1.812, 5e-4);
  assert_close(analysis_t_quantile(0.995, 5), 4.032, 5e-4);
  /* symmetry, the median, and the normal limit */
  assert_close(analysis_t_quantile(0.025, 4), -analysis_t_quantile(0.975, 4), 1e-12);
  assert_close(analysis_t_quantile(0.5, 3), 0.0, 0.0);
  assert_close(analysis_t_quantile(0.975, 1e7), 1.959964, 2e-6);
  assert_true(isnan(analysis_t_quantile(1.0, 3)));
  assert_true(isnan(analysis_t_quantile(0.9, 0)));
  /* GSL's quantile to 1e-12 against R's qt (printed with 16 digits) */
  assert_close(analysis_t_quantile(0.975, 5), 2.570581835636314, 1e-12);
  assert_close(analysis_t_quantile(0.95, 2), 0.9 / sqrt(2 * 0.95 * 0.05), 1e-12); /* ν = 2 closed form */
  assert_close(analysis_t_quantile(0.975, 6), 2.446911851144969, 1e-12);
  /* the CDF inverts the quantile; I_{1/2}(2, 3) = (C(4,2) + C(4,3) + C(4,4))/16 = 11/16 */
  assert_close(analysis_t_cdf(2.776445105, 4), 0.975, 1e-9);
  assert_close(analysis_t_cdf(-1.0, 1), 0.25, 1e-12); /* Cauchy: ½ + atan(−1)/π */
  assert_close(analysis_incbeta(2, 3, 0.5), 11.0 / 16.0, 1e-13);
  assert_close(analysis_incbeta(1, 1, 0.3), 0.3, 1e-13);
}

static void test_mean_ci(void **state) {
  (void)state;
  /* x = 2,4,4,4,5,5,7,9: mean 5, s² = 32/7, half-width t_{.975,7} √(32/7)/√8 with
   * t_{.975,7} = 2.364624251592785 -> [3.21251208, 6.78748792] */
  double x[9] = {2, 4, 4, 4, 5, 5, 7, 9, NAN};
  analysis_ci c;
  analysis_mean_ci(x, 9, 0.95, &c);
  assert_int_equal(c.n, 8);
  assert_close(c.mean, 5.0, 1e-14);
  assert_close(c.lo, 3.2125120817637898, 1e-9);
  assert_close(c.hi, 6.78748791823621, 1e-9);
  /* one value: a mean, no interval; none: NaN */
  analysis_mean_ci(x + 4, 1, 0.95, &c);
  assert_int_equal(c.n, 1);
  assert_close(c.mean, 5.0, 0.0);
  assert_true(isnan(c.lo) && isnan(c.hi));
  analysis_mean_ci(x + 8, 1, 0.95, &c);
  assert_int_equal(c.n, 0);
  assert_true(isnan(c.mean));
}

static void test_ls_slope(void **state) {
  (void)state;
  /* y = log(3 x^1.5) against log x: slope 1.5, intercept log 3 */
  double x[5] = {1, 2, 4, 8, 16}, lx[5], ly[5];
  for (int i = 0; i < 5; i++) lx[i] = log(x[i]), ly[i] = log(3.0 * pow(x[i], 1.5));
  double b;
  assert_close(analysis_ls_slope(lx, ly, 5, &b), 1.5, 1e-13);
  assert_close(b, log(3.0), 1e-13);
  /* y = 1, 3, 2 at x = 0, 1, 2: slope Σ(x−1)(y−2)/Σ(x−1)² = (−1·−1 + 1·0)/2 = 0.5 */
  double x3[3] = {0, 1, 2}, y3[3] = {1, 3, 2};
  assert_close(analysis_ls_slope(x3, y3, 3, NULL), 0.5, 1e-15);
  /* non-finite pairs are dropped; one point or no spread in x: NaN */
  double yn[3] = {1, NAN, 2};
  assert_close(analysis_ls_slope(x3, yn, 3, NULL), 0.5, 1e-15);
  double same[2] = {1, 1};
  assert_true(isnan(analysis_ls_slope(same, y3, 2, NULL)));
  assert_true(isnan(analysis_ls_slope(x3, y3, 1, NULL)));
}

static void test_sign_test(void **state) {
  (void)state;
  assert_close(analysis_sign_test(8, 0), 2.0 / 256.0, 1e-15);
  assert_close(analysis_sign_test(0, 8), 2.0 / 256.0, 1e-15);
  assert_close(analysis_sign_test(7, 1), 2.0 * (1 + 8) / 256.0, 1e-14);
  assert_close(analysis_sign_test(3, 0), 0.25, 1e-15);
  assert_close(analysis_sign_test(6, 0), 2.0 / 64.0, 1e-15);
  assert_close(analysis_sign_test(9, 3), 2.0 * (1 + 12 + 66 + 220) / 4096.0, 1e-14);
  assert_close(analysis_sign_test(5, 5), 1.0, 0.0);
  assert_true(isnan(analysis_sign_test(0, 0)));
  assert_close(analysis_binom_half_cdf(2, 10), (1 + 10 + 45) / 1024.0, 1e-15);
  assert_close(analysis_binom_half_cdf(10, 10), 1.0, 0.0);
}

static void test_median_ci(void **state) {
  (void)state;
  analysis_ci m;
  double cover;
  /* 5 values: even [min, max] covers only 1 − 2/32 = 0.9375 */
  double x5[5] = {5, 1, 4, 2, 3};
  assert_ok(analysis_median_ci(x5, 5, 0.95, &m, &cover));
  assert_close(m.mean, 3, 0), assert_close(m.lo, 1, 0), assert_close(m.hi, 5, 0);
  assert_close(cover, 0.9375, 1e-15);
  /* 1..10: j = 2 covers 1 − 2·11/1024 = 0.978515625 ≥ 0.95, j = 3 only 0.890625 */
  double x10[10] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  assert_ok(analysis_median_ci(x10, 10, 0.95, &m, &cover));
  assert_close(m.mean, 5.5, 0), assert_close(m.lo, 2, 0), assert_close(m.hi, 9, 0);
  assert_close(cover, 0.978515625, 1e-14);
  assert_close(cs_quantile_sorted((double[]){1, 2, 4}, 3, 0.25), 1.5, 1e-15);
}

/* The sign-flip p counted the slow way: every pattern as a bit mask. */
static double brute_signflip(const double *d, int n, analysis_side side) {
  double t = 0;
  for (int i = 0; i < n; i++) t += d[i];
  long hits = 0;
  for (long m = 0; m < (1L << n); m++) {
    double u = 0;
    for (int i = 0; i < n; i++) u += (m >> i & 1) ? -d[i] : d[i];
    if (side == ANALYSIS_GREATER) hits += u >= t - 1e-12;
    else if (side == ANALYSIS_LESS) hits += u <= t + 1e-12;
    else hits += fabs(u) >= fabs(t) - 1e-12;
  }
  return (double)hits / (double)(1L << n);
}

static void test_signflip_exact(void **state) {
  (void)state;
  analysis_perm P;
  /* all 5 positive: one pattern of 32 as large one-sided, two of 32 as extreme */
  double d5[5] = {0.1, 0.3, 0.2, 0.5, 0.4};
  assert_ok(analysis_signflip(d5, 5, ANALYSIS_GREATER, NULL, &P));
  assert_int_equal(P.n, 5);
  assert_close(P.p, 1.0 / 32, 0.0);
  assert_close(P.mc_se, 0.0, 0.0);
  assert_ok(analysis_signflip(d5, 5, ANALYSIS_TWO_SIDED, NULL, &P));
  assert_close(P.p, 2.0 / 32, 0.0);
  assert_ok(analysis_signflip(d5, 5, ANALYSIS_LESS, NULL, &P));
  assert_close(P.p, 1.0, 0.0);
  /* d = {1, 2, 3, −4}: T = 2; the 16 sums ±1 ±2 ±3 ±4 are 10, 8, 6, 4, 4, 2, 2, 0, 0, −2,
   * −2, −4, −4, −6, −8, −10: 7 of them ≥ 2 */
  double d4[4] = {1, 2, 3, -4};
  assert_ok(analysis_signflip(d4, 4, ANALYSIS_GREATER, NULL, &P));
  assert_close(P.p, 7.0 / 16, 0.0);
  assert_close(P.p, brute_signflip(d4, 4, ANALYSIS_GREATER), 0.0);
  /* NaN entries are left out; zeros tie with themselves */
  double dn[6] = {0.2, NAN, -0.1, 0.0, 0.3, 0.25};
  assert_ok(analysis_signflip(dn, 6, ANALYSIS_TWO_SIDED, NULL, &P));
  assert_int_equal(P.n, 5);
  double dk[5] = {0.2, -0.1, 0.0, 0.3, 0.25};
  assert_close(P.p, brute_signflip(dk, 5, ANALYSIS_TWO_SIDED), 0.0);
  /* random data up to 12 seeds, every side, against the brute force */
  rng_stream rng = rng_stream_make(3, "test:signflip", 0, NULL);
  for (int n = 1; n <= 12; n++)
    for (int side = 0; side < 3; side++) {
      double d[12];
      for (int i = 0; i < n; i++) d[i] = rng_normal(&rng) + 0.3;
      assert_ok(analysis_signflip(d, n, (analysis_side)side, NULL, &P));
      assert_close(P.p, brute_signflip(d, n, (analysis_side)side), 1e-15);
    }
  /* every value 0: p = 1; nothing finite: NaN */
  double z[3] = {0, 0, 0};
  assert_ok(analysis_signflip(z, 3, ANALYSIS_GREATER, NULL, &P));
  assert_close(P.p, 1.0, 0.0);
  double nn[2] = {NAN, NAN};
  assert_ok(analysis_signflip(nn, 2, ANALYSIS_GREATER, NULL, &P));
  assert_int_equal(P.n, 0);
  assert_true(isnan(P.p));
}

/* Beyond 16 seeds: Monte Carlo. With d = ±1 the exact p is a binomial tail:
 * T = Σ d = 2k − n for k positive, and Σ ε_i d_i is 2K − n with K ~ Bin(n, ½). */
static void test_signflip_mc(void **state) {
  (void)state;
  enum { N = 24 };
  double d[N];
  int k = 16;
  for (int i = 0; i < N; i++) d[i] = i < k ? 1.0 : -1.0;
  analysis_perm P;
  rng_stream rng = rng_stream_make(11, "test:signflip-mc", 0, NULL);
  assert_ok(analysis_signflip(d, N, ANALYSIS_GREATER, &rng, &P));
  assert_int_equal(P.n, N);
  double exact = 1.0 - analysis_binom_half_cdf(k - 1, N); /* P(K ≥ 16) = 0.0758… */
  assert_true(P.mc_se > 0);
  assert_close(P.mc_se, sqrt(P.p * (1 - P.p) / ANALYSIS_MC_DRAWS), 1e-15);
  assert_true(fabs(P.p - exact) < 4 * P.mc_se);
  /* two-sided: P(|2K − n| ≥ 8) = 2 P(K ≥ 16) */
  assert_ok(analysis_signflip(d, N, ANALYSIS_TWO_SIDED, &rng, &P));
  assert_true(fabs(P.p - 2 * exact) < 4 * P.mc_se);
  /* the same stream gives the same p (deterministic reports) */
  analysis_perm Q;
  rng_stream r1 = rng_stream_make(5, "x", 0, "k"), r2 = rng_stream_make(5, "x", 0, "k");
  assert_ok(analysis_signflip(d, N, ANALYSIS_GREATER, &r1, &P));
  assert_ok(analysis_signflip(d, N, ANALYSIS_GREATER, &r2, &Q));
  assert_close(P.p, Q.p, 0.0);
}

static void test_holm(void **state) {
  (void)state;
  /* p = 0.01, 0.04, 0.03, 0.005 (m = 4): sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06,
   * 0.04·1 = 0.04 → monotone 0.06 */
  double p[4] = {0.01, 0.04, 0.03, 0.005}, a[4];
  assert_int_equal(analysis_holm(p, 4, a), 4);
  assert_close(a[3], 0.02, 1e-15);
  assert_close(a[0], 0.03, 1e-15);
  assert_close(a[2], 0.06, 1e-15);
  assert_close(a[1], 0.06, 1e-15);
  /* NaN is not part of the family; capped at 1 */
  double q[3] = {0.4, NAN, 0.7}, b[3];
  assert_int_equal(analysis_holm(q, 3, b), 2);
  assert_close(b[0], 0.8, 1e-15);
  assert_true(isnan(b[1]));
  assert_close(b[2], 0.8, 1e-15);
  double r[1] = {0.3}, c[1];
  assert_int_equal(analysis_holm(r, 1, c), 1);
  assert_close(c[0], 0.3, 0.0);
}

static void test_seeds_needed(void **state) {
  (void)state;
  /* one-sided 2^−5 = 0.031 < 0.05, 2^−4 not; two-sided 2·2^−6 */
  assert_int_equal(analysis_seeds_needed(0.05, 1, ANALYSIS_GREATER), 5);
  assert_int_equal(analysis_seeds_needed(0.05, 1, ANALYSIS_TWO_SIDED), 6);
  /* a family of 16 one-sided: 16 · 2^−9 = 0.031 */
  assert_int_equal(analysis_seeds_needed(0.05, 16, ANALYSIS_GREATER), 9);
  /* 4 two-sided: 4 · 2 · 2^−8 = 0.031 */
  assert_int_equal(analysis_seeds_needed(0.05, 4, ANALYSIS_TWO_SIDED), 8);
  assert_int_equal(analysis_seeds_needed(0.2, 1, ANALYSIS_GREATER), 3);
}

static void test_dz(void **state) {
  (void)state;
  /* d = 1, 2, 3, 4: mean 2.5, sd √(5/3), d_z = 2.5/√(5/3); interval d_z ± t_{.975,3} se,
   * se = √(1/4 + d_z²/6), t_{.975,3} = 3.182446305284263 (table value) */
  double d[4] = {1, 2, 3, 4};
  analysis_ci c;
  analysis_dz(d, 4, 0.95, &c);
  double dz = 2.5 / sqrt(5.0 / 3.0), se = sqrt(0.25 + dz * dz / 6);
  assert_close(c.mean, dz, 1e-14);
  assert_close(c.lo, dz - 3.182446305284263 * se, 1e-12);
  assert_close(c.hi, dz + 3.182446305284263 * se, 1e-12);
  double same[3] = {1, 1, 1};
  analysis_dz(same, 3, 0.95, &c);
  assert_true(isnan(c.mean));
}

/* TOST with 3 values (df 2, t CDF ½ + x/(2√(2 + x²))). */
static void test_tost(void **state) {
  (void)state;
  double d[3] = {0.002, -0.001, 0.003}, m = 0.01;
  analysis_tost T;
  analysis_tost_t(d, 3, m, 0.05, &T);
  double mean = 0.004 / 3, ss = 0;
  for (int i = 0; i < 3; i++) ss += (d[i] - mean) * (d[i] - mean);
  double se = sqrt(ss / 2 / 3), x1 = (mean + m) / se, x2 = (mean - m) / se;
  double F1 = 0.5 + x1 / (2 * sqrt(2 + x1 * x1)), F2 = 0.5 + x2 / (2 * sqrt(2 + x2 * x2));
  assert_close(T.p, fmax(1 - F1, F2), 1e-12);
  assert_close(T.ci.mean, mean, 1e-15);
  double t95 = 0.9 / sqrt(2 * 0.95 * 0.05); /* t_{0.95,2}, closed form: the 90% interval */
  assert_close(T.ci.lo, mean - t95 * se, 1e-12);
  assert_close(T.ci.hi, mean + t95 * se, 1e-12);
  /* p < α exactly when the 90% interval lies inside (−m, m) */
  assert_true((T.p < 0.05) == (T.ci.lo > -m && T.ci.hi < m));
  /* no spread: inside the margin p = 0, outside 1; one value: NaN */
  double z[3] = {0.005, 0.005, 0.005};
  analysis_tost_t(z, 3, m, 0.05, &T);
  assert_close(T.p, 0.0, 0.0);
  analysis_tost_t(z, 3, 0.001, 0.05, &T);
  assert_close(T.p, 1.0, 0.0);
  analysis_tost_t(z, 1, m, 0.05, &T);
  assert_true(isnan(T.p));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_t_quantile),     cmocka_unit_test(test_mean_ci),
      cmocka_unit_test(test_ls_slope),       cmocka_unit_test(test_sign_test),
      cmocka_unit_test(test_median_ci),      cmocka_unit_test(test_signflip_exact),
      cmocka_unit_test(test_signflip_mc),    cmocka_unit_test(test_holm),
      cmocka_unit_test(test_seeds_needed),   cmocka_unit_test(test_dz),
      cmocka_unit_test(test_tost),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

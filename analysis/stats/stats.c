/* stats.c — the descriptive statistics of the report: Student-t
 * distribution and binomial tail (GSL), t intervals, least squares, a
 * paired bootstrap of log-log slopes (amplification.csv), the binomial sign
 * test and an order-statistic interval for the median. The tests behind the
 * verdicts (sign-flip, Holm, TOST, effect sizes) are inference.c. */
#include "curvsweep/analysis.h"

#include "curvsweep/error.h"
#include "curvsweep/quantile.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sf_gamma.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* GSL's regularised incomplete beta (gsl_sf_beta_inc). Inputs are checked
 * first: GSL's default error handler aborts on a domain error. */
double analysis_incbeta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || isnan(x)) return NAN;
  if (x <= 0) return 0.0;
  if (x >= 1) return 1.0;
  return gsl_sf_beta_inc(a, b, x);
}

double analysis_t_cdf(double t, double df) {
  if (!(df > 0) || isnan(t)) return NAN;
  if (isinf(t)) return t > 0 ? 1.0 : 0.0;
  return gsl_cdf_tdist_P(t, df);
}

/* GSL's quantile iterates on the CDF; the report asks for the same few
 * (p, df) pairs thousands of times, so the last answers are kept in a small
 * direct-mapped cache (per thread; a hit returns exactly GSL's value). */
double analysis_t_quantile(double p, double df) {
  if (!(df > 0) || !(p > 0) || !(p < 1)) return NAN;
  if (p == 0.5) return 0.0;
  static _Thread_local struct {
    double p, df, t;
  } cache[64];
  uint64_t bits[2];
  memcpy(&bits[0], &p, sizeof p);
  memcpy(&bits[1], &df, sizeof df);
  size_t k = (size_t)((bits[0] * 0x9E3779B97F4A7C15ull ^ bits[1] * 0xC2B2AE3D27D4EB4Full) >> 58);
  if (cache[k].p == p && cache[k].df == df) return cache[k].t;
  double t = gsl_cdf_tdist_Pinv(p, df);
  cache[k].p = p, cache[k].df = df, cache[k].t = t;
  return t;
}

/* mean = Σx/k, s² = Σ(x − mean)²/(k − 1), half-width t_{(1+level)/2, k−1} s/√k. */
void analysis_mean_ci(const double *x, int n, double level, analysis_ci *out) {
  int k = 0;
  double sum = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(x[i])) sum += x[i], k++;
  out->n = k;
  out->mean = out->lo = out->hi = NAN;
  if (k == 0) return;
  double mean = sum / k, ss = 0;
  out->mean = mean;
  if (k < 2) return;
  for (int i = 0; i < n; i++)
    if (isfinite(x[i])) ss += (x[i] - mean) * (x[i] - mean);
  double half = analysis_t_quantile(0.5 * (1.0 + level), k - 1) * sqrt(ss / (k - 1) / k);
  out->lo = mean - half;
  out->hi = mean + half;
}

/* slope = Σ(x − x̄)(y − ȳ) / Σ(x − x̄)², intercept = ȳ − slope·x̄. */
double analysis_ls_slope(const double *x, const double *y, int n, double *intercept) {
  int k = 0;
  double sx = 0, sy = 0;
  if (intercept) *intercept = NAN;
  for (int i = 0; i < n; i++)
    if (isfinite(x[i]) && isfinite(y[i])) sx += x[i], sy += y[i], k++;
  if (k < 2) return NAN;
  double mx = sx / k, my = sy / k, sxx = 0, sxy = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(x[i]) && isfinite(y[i])) {
      sxx += (x[i] - mx) * (x[i] - mx);
      sxy += (x[i] - mx) * (y[i] - my);
    }
  if (!(sxx > 0)) return NAN;
  double slope = sxy / sxx;
  if (intercept) *intercept = my - slope * mx;
  return slope;
}

/* P(X ≤ k), X ~ Bin(n, ½): gsl_cdf_binomial_P. */
double analysis_binom_half_cdf(int k, int n) {
  if (n < 0) return NAN;
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  double p = gsl_cdf_binomial_P((unsigned)k, 0.5, (unsigned)n);
  return p > 1.0 ? 1.0 : p;
}

/* p = min(1, 2 P(X ≤ min(n+, n−))), X ~ Bin(n+ + n−, ½). */
double analysis_sign_test(int n_pos, int n_neg) {
  int n = n_pos + n_neg;
  if (n <= 0) return NAN;
  double p = 2.0 * analysis_binom_half_cdf(n_pos < n_neg ? n_pos : n_neg, n);
  return p > 1.0 ? 1.0 : p;
}

/* Median and [x_(j), x_(k−j+1)] with coverage 1 − 2 P(Bin(k,½) ≤ j − 1). */
int analysis_median_ci(const double *x, int n, double level, analysis_ci *out, double *coverage) {
  double *v;
  CS_CHECK(CS_CALLOC(v, n > 0 ? n : 1));
  int k = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(x[i])) v[k++] = x[i];
  out->n = k;
  out->mean = out->lo = out->hi = NAN;
  if (coverage) *coverage = NAN;
  if (k > 0) {
    qsort(v, k, sizeof *v, cs_compare_doubles);
    out->mean = cs_quantile_sorted(v, k, 0.5);
    int j = 1;
    for (int cand = 1; 2 * cand <= k + 1; cand++)
      if (1.0 - 2.0 * analysis_binom_half_cdf(cand - 1, k) >= level) j = cand;
    out->lo = v[j - 1];
    out->hi = v[k - j];
    if (coverage) *coverage = 1.0 - 2.0 * analysis_binom_half_cdf(j - 1, k);
  }
  free(v);
  return CS_OK;
}

/* f(mean over the chosen seeds of y[g]) for every group g. yT is y
 * transposed (S × G, one seed's groups contiguous) with non-finite values
 * replaced by 0, fin its finiteness (1/0); draw[s] the seed index used in
 * slot s (NULL: every seed once); sum, cnt: G scratch. For each g the sum
 * runs over s in slot order and adding the +0 of a non-finite value leaves
 * it unchanged, so it is the sum of the finite values in that order. */
static void analysis_group_means(int G, int S, const double *yT, const int *fin, int log_y,
                                 const int *draw, double *sum, int *cnt, double *fy) {
  for (int g = 0; g < G; g++) sum[g] = 0, cnt[g] = 0;
  for (int s = 0; s < S; s++) {
    size_t o = (size_t)(draw ? draw[s] : s) * G;
    for (int g = 0; g < G; g++) sum[g] += yT[o + g], cnt[g] += fin[o + g];
  }
  for (int g = 0; g < G; g++) {
    double mean = cnt[g] ? sum[g] / cnt[g] : NAN;
    fy[g] = log_y ? (mean > 0 ? log(mean) : NAN) : mean;
  }
}

/* The scratch of one bootstrap: G values each of lx, fy, sum, cnt; S of
 * draw; S × G of yT, fin; B of reps. */
typedef struct {
  double *lx, *fy, *sum, *yT, *reps;
  int *cnt, *draw, *fin;
} analysis_boot_work;

/* The estimate and its replicates on allocated scratch W. */
static void analysis_bootstrap_fill(int G, int S, const double *x, const double *y, int log_y, int B,
                                    double level, rng_stream *rng, const analysis_boot_work *W,
                                    analysis_boot *out) {
  for (int g = 0; g < G; g++) W->lx[g] = x[g] > 0 ? log(x[g]) : NAN;
  for (int g = 0; g < G; g++)
    for (int s = 0; s < S; s++) {
      double v = y[(size_t)g * S + s];
      W->fin[(size_t)s * G + g] = isfinite(v) != 0;
      W->yT[(size_t)s * G + g] = isfinite(v) ? v : 0.0;
    }
  analysis_group_means(G, S, W->yT, W->fin, log_y, NULL, W->sum, W->cnt, W->fy);
  out->estimate = analysis_ls_slope(W->lx, W->fy, G, NULL);
  if (S < 2 || !isfinite(out->estimate)) return;
  int nv = 0;
  for (int b = 0; b < B; b++) {
    rng_below_fill(rng, S, S, W->draw);
    analysis_group_means(G, S, W->yT, W->fin, log_y, W->draw, W->sum, W->cnt, W->fy);
    double slope = analysis_ls_slope(W->lx, W->fy, G, NULL);
    if (isfinite(slope)) W->reps[nv++] = slope;
  }
  out->n_valid = nv;
  if (nv > 0 && 2 * nv >= B) {
    qsort(W->reps, nv, sizeof *W->reps, cs_compare_doubles);
    out->lo = cs_quantile_sorted(W->reps, nv, 0.5 * (1.0 - level));
    out->hi = cs_quantile_sorted(W->reps, nv, 0.5 * (1.0 + level));
  }
}

/* Point estimate on every seed; replicate b: seeds drawn with replacement
 * (one draw shared by all groups), slope of f(ȳ) vs log x; percentile interval. */
int analysis_bootstrap_slope(int G, int S, const double *x, const double *y, int log_y, int B,
                             double level, rng_stream *rng, analysis_boot *out) {
  out->estimate = out->lo = out->hi = NAN;
  out->n_valid = 0;
  if (G < 1 || S < 1) return CS_OK;
  analysis_boot_work W = {0};
  int rc = CS_CALLOC(W.lx, G);
  if (!rc) rc = CS_CALLOC(W.fy, G);
  if (!rc) rc = CS_CALLOC(W.sum, G);
  if (!rc) rc = CS_CALLOC(W.cnt, G);
  if (!rc) rc = CS_CALLOC(W.draw, S);
  if (!rc) rc = CS_CALLOC(W.yT, (size_t)S * G);
  if (!rc) rc = CS_CALLOC(W.fin, (size_t)S * G);
  if (!rc) rc = CS_CALLOC(W.reps, B > 0 ? B : 1);
  if (!rc) analysis_bootstrap_fill(G, S, x, y, log_y, B, level, rng, &W, out);
  free(W.lx), free(W.fy), free(W.sum), free(W.cnt), free(W.draw), free(W.yT), free(W.fin), free(W.reps);
  return rc;
}

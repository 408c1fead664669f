/* stats.c — the statistics of the report, hand-written (no statistics
 * library): Student-t quantiles through the regularised incomplete beta
 * function, t intervals, least squares, a paired bootstrap of log-log slopes,
 * the binomial sign test and an order-statistic interval for the median. */
#include "curvsweep/analysis.h"

#include "curvsweep/error.h"
#include "curvsweep/quantile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Continued fraction of the incomplete beta function (modified Lentz):
 * I_x(a,b) = x^a (1-x)^b / (a B(a,b)) · 1/(1+ d1/(1+ d2/(1+ ...))) with
 * d_{2k+1} = -(a+k)(a+b+k) x / ((a+2k)(a+2k+1)), d_{2k} = k(b-k) x / ((a+2k-1)(a+2k)). */
static double analysis_betacf(double a, double b, double x) {
  const double EPS = 1e-16, TINY = 1e-300;
  double qab = a + b, qap = a + 1.0, qam = a - 1.0;
  double c = 1.0, d = 1.0 - qab * x / qap;
  if (fabs(d) < TINY) d = TINY;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 100000; m++) {
    double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (fabs(d) < TINY) d = TINY;
    c = 1.0 + aa / c;
    if (fabs(c) < TINY) c = TINY;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (fabs(d) < TINY) d = TINY;
    c = 1.0 + aa / c;
    if (fabs(c) < TINY) c = TINY;
    d = 1.0 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1.0) < EPS) break;
  }
  return h;
}

/* I_x(a, b) = B(x; a, b) / B(a, b); the continued fraction converges fast
 * for x < (a+1)/(a+b+2), otherwise use I_x(a,b) = 1 − I_{1−x}(b,a). */
double analysis_incbeta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || isnan(x)) return NAN;
  if (x <= 0) return 0.0;
  if (x >= 1) return 1.0;
  double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
  if (x < (a + 1.0) / (a + b + 2.0)) return exp(lbt) * analysis_betacf(a, b, x) / a;
  return 1.0 - exp(lbt) * analysis_betacf(b, a, 1.0 - x) / b;
}

/* F(t) = 1 − ½ I_{ν/(ν+t²)}(ν/2, ½) for t ≥ 0, and F(−t) = 1 − F(t). */
double analysis_t_cdf(double t, double df) {
  if (!(df > 0) || isnan(t)) return NAN;
  if (isinf(t)) return t > 0 ? 1.0 : 0.0;
  double tail = 0.5 * analysis_incbeta(0.5 * df, 0.5, df / (df + t * t));
  return t >= 0 ? 1.0 - tail : tail;
}

/* t_{p,ν}: for p > ½ solve I_x(ν/2, ½) = 2(1 − p) for x = ν/(ν + t²) by
 * bisection (I is increasing in x), then t = √(ν (1 − x) / x). */
double analysis_t_quantile(double p, double df) {
  if (!(df > 0) || !(p > 0) || !(p < 1)) return NAN;
  if (p == 0.5) return 0.0;
  if (p < 0.5) return -analysis_t_quantile(1.0 - p, df);
  double target = 2.0 * (1.0 - p), lo = 0.0, hi = 1.0;
  for (int it = 0; it < 2000 && hi - lo > 1e-17 * hi; it++) {
    double mid = 0.5 * (lo + hi);
    if (analysis_incbeta(0.5 * df, 0.5, mid) < target)
      lo = mid;
    else
      hi = mid;
  }
  double x = 0.5 * (lo + hi);
  return sqrt(df * (1.0 - x) / x);
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

/* P(X ≤ k) = Σ_{i ≤ k} C(n, i) 2^{−n}, terms as exp(lnC(n,i) − n ln 2). */
double analysis_binom_half_cdf(int k, int n) {
  if (n < 0) return NAN;
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  double sum = 0, lnf = lgamma(n + 1.0), ln2n = n * log(2.0);
  for (int i = 0; i <= k; i++) sum += exp(lnf - lgamma(i + 1.0) - lgamma(n - i + 1.0) - ln2n);
  return sum > 1.0 ? 1.0 : sum;
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

/* Point estimate on every seed; replicate b: seeds drawn with replacement
 * (one draw shared by all groups), slope of f(ȳ) vs log x; percentile interval. */
int analysis_bootstrap_slope(int G, int S, const double *x, const double *y, int log_y, int B,
                             double level, rng_stream *rng, analysis_boot *out) {
  out->estimate = out->lo = out->hi = NAN;
  out->n_valid = 0;
  if (G < 1 || S < 1) return CS_OK;
  double *lx = NULL, *fy = NULL, *reps = NULL, *yT = NULL, *sum = NULL;
  int *draw = NULL, *cnt = NULL, *fin = NULL;
  int rc = CS_CALLOC(lx, G);
  if (!rc) rc = CS_CALLOC(fy, G);
  if (!rc) rc = CS_CALLOC(sum, G);
  if (!rc) rc = CS_CALLOC(cnt, G);
  if (!rc) rc = CS_CALLOC(draw, S);
  if (!rc) rc = CS_CALLOC(yT, (size_t)S * G);
  if (!rc) rc = CS_CALLOC(fin, (size_t)S * G);
  if (!rc) rc = CS_CALLOC(reps, B > 0 ? B : 1);
  if (rc) goto done;
  for (int g = 0; g < G; g++) lx[g] = x[g] > 0 ? log(x[g]) : NAN;
  for (int g = 0; g < G; g++)
    for (int s = 0; s < S; s++) {
      double v = y[(size_t)g * S + s];
      fin[(size_t)s * G + g] = isfinite(v) != 0;
      yT[(size_t)s * G + g] = isfinite(v) ? v : 0.0;
    }
  analysis_group_means(G, S, yT, fin, log_y, NULL, sum, cnt, fy);
  out->estimate = analysis_ls_slope(lx, fy, G, NULL);
  if (S >= 2 && isfinite(out->estimate)) {
    int nv = 0;
    for (int b = 0; b < B; b++) {
      rng_below_fill(rng, S, S, draw);
      analysis_group_means(G, S, yT, fin, log_y, draw, sum, cnt, fy);
      double slope = analysis_ls_slope(lx, fy, G, NULL);
      if (isfinite(slope)) reps[nv++] = slope;
    }
    out->n_valid = nv;
    if (nv > 0 && 2 * nv >= B) {
      qsort(reps, nv, sizeof *reps, cs_compare_doubles);
      out->lo = cs_quantile_sorted(reps, nv, 0.5 * (1.0 - level));
      out->hi = cs_quantile_sorted(reps, nv, 0.5 * (1.0 + level));
    }
  }
done:
  free(lx), free(fy), free(sum), free(cnt), free(draw), free(yT), free(fin), free(reps);
  return rc;
}

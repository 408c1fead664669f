/* inference.c — the tests behind the verdicts of the report
 * (analysis/VERDICTS.md, "Statistics of the verdicts"): the paired sign-flip
 * (permutation) test on one value per seed, exact up to ANALYSIS_EXACT_MAX
 * seeds and Monte Carlo beyond; Holm's step-down adjustment; the seeds a
 * test needs to reach α; the paired standardised effect d_z; the paired
 * TOST equivalence test. Student-t distribution: GSL (stats.c). */
#include "curvsweep/analysis.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Does the pattern statistic t count against the observed one? A relative
 * tolerance keeps patterns equal to T up to rounding counted. */
static int analysis_perm_hit(double t, double obs, double tol, analysis_side side) {
  switch (side) {
    case ANALYSIS_GREATER: return t >= obs - tol;
    case ANALYSIS_LESS: return t <= obs + tol;
    case ANALYSIS_TWO_SIDED: return fabs(t) >= fabs(obs) - tol;
  }
  return 0;
}

/* The exact sign-flip p-value of the k values v (observed sum obs): every
 * pattern of signs, in Gray-code order (pattern g flips one sign of
 * pattern g − 1). */
static int signflip_exact(const double *v, int k, double obs, double tol, analysis_side side,
                          double *p) {
  int *sg;
  CS_CHECK(CS_CALLOC(sg, k));
  double t = obs;
  uint64_t hits = analysis_perm_hit(t, obs, tol, side), total = (uint64_t)1 << k;
  for (int i = 0; i < k; i++) sg[i] = 1;
  for (uint64_t g = 1; g < total; g++) {
    int j = __builtin_ctzll(g);
    t -= 2.0 * sg[j] * v[j];
    sg[j] = -sg[j];
    hits += analysis_perm_hit(t, obs, tol, side);
  }
  free(sg);
  *p = (double)hits / (double)total;
  return CS_OK;
}

/* The Monte Carlo sign-flip p-value (ANALYSIS_MC_DRAWS random patterns,
 * the observed one counted) and its standard error. */
static void signflip_mc(const double *v, int k, double obs, double tol, analysis_side side,
                        rng_stream *rng, analysis_perm *out) {
  rng_stream local = rng_stream_make(0, "analysis:signflip", 0, "default");
  if (!rng) rng = &local;
  uint64_t hits = 0;
  for (int b = 0; b < ANALYSIS_MC_DRAWS; b++) {
    double t = 0;
    for (int i = 0; i < k; i += 64) {
      uint64_t bits = rng_next_u64(rng);
      for (int j = i; j < k && j < i + 64; j++) t += ((bits >> (j - i)) & 1) ? v[j] : -v[j];
    }
    hits += analysis_perm_hit(t, obs, tol, side);
  }
  out->p = (1.0 + (double)hits) / (1.0 + ANALYSIS_MC_DRAWS);
  out->mc_se = sqrt(out->p * (1.0 - out->p) / ANALYSIS_MC_DRAWS);
}

int analysis_signflip(const double *d, int n, analysis_side side, rng_stream *rng, analysis_perm *out) {
  out->n = 0, out->p = NAN, out->mc_se = 0.0;
  double *v;
  CS_CHECK(CS_CALLOC(v, n > 0 ? n : 1));
  int k = 0, rc = CS_OK;
  double obs = 0, scale = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(d[i])) v[k++] = d[i], obs += d[i], scale += fabs(d[i]);
  out->n = k;
  double tol = 1e-12 * scale;
  if (k > 0 && k <= ANALYSIS_EXACT_MAX) rc = signflip_exact(v, k, obs, tol, side, &out->p);
  else if (k > 0) signflip_mc(v, k, obs, tol, side, rng, out);
  free(v);
  return rc;
}

/* Index sort of p[] (finite first, ascending) through a context-free key. */
typedef struct {
  double p;
  int i;
} analysis_pkey;

static int analysis_cmp_pkey(const void *a, const void *b) {
  const analysis_pkey *x = a, *y = b;
  if (x->p != y->p) return x->p < y->p ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

int analysis_holm(const double *p, int k, double *p_adj) {
  analysis_pkey *key = malloc((size_t)(k > 0 ? k : 1) * sizeof *key);
  int m = 0;
  for (int i = 0; i < k; i++) {
    p_adj[i] = NAN;
    if (isfinite(p[i]) && key) key[m].p = p[i], key[m].i = i, m++;
  }
  if (!key) return -1;
  qsort(key, m, sizeof *key, analysis_cmp_pkey);
  double run = 0;
  for (int j = 0; j < m; j++) {
    double a = (m - j) * key[j].p;
    if (a > 1.0) a = 1.0;
    if (a > run) run = a;
    p_adj[key[j].i] = run;
  }
  free(key);
  return m;
}

int analysis_seeds_needed(double alpha, int k, analysis_side side) {
  if (k < 1) k = 1;
  for (int n = 1; n < 64; n++) {
    double pmin = ldexp(1.0, side == ANALYSIS_TWO_SIDED ? 1 - n : -n);
    if (k * pmin < alpha) return n;
  }
  return 64;
}

/* Mean and sample standard deviation of the finite values; returns their count. */
static int analysis_mean_sd(const double *d, int n, double *mean, double *sd) {
  int k = 0;
  double s = 0, ss = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(d[i])) s += d[i], k++;
  *mean = k ? s / k : NAN;
  for (int i = 0; i < n; i++)
    if (isfinite(d[i])) ss += (d[i] - *mean) * (d[i] - *mean);
  *sd = k > 1 ? sqrt(ss / (k - 1)) : NAN;
  return k;
}

void analysis_dz(const double *d, int n, double level, analysis_ci *out) {
  double mean, sd;
  int k = analysis_mean_sd(d, n, &mean, &sd);
  out->n = k;
  out->mean = out->lo = out->hi = NAN;
  if (k < 2 || !(sd > 0)) return;
  double dz = mean / sd;
  double se = sqrt(1.0 / k + dz * dz / (2.0 * (k - 1)));
  double t = analysis_t_quantile(0.5 * (1.0 + level), k - 1);
  out->mean = dz, out->lo = dz - t * se, out->hi = dz + t * se;
}

void analysis_tost_t(const double *d, int n, double m, double alpha, analysis_tost *out) {
  analysis_mean_ci(d, n, 1.0 - 2.0 * alpha, &out->ci);
  out->p = NAN;
  int k = out->ci.n;
  if (k < 2) return;
  double mean, sd;
  analysis_mean_sd(d, n, &mean, &sd);
  double se = sd / sqrt((double)k);
  if (!(se > 0)) {
    out->p = fabs(mean) < m ? 0.0 : 1.0;
    return;
  }
  double p_low = 1.0 - analysis_t_cdf((mean + m) / se, k - 1); /* H0: μ ≤ −m */
  double p_high = analysis_t_cdf((mean - m) / se, k - 1);      /* H0: μ ≥ m */
  out->p = p_low > p_high ? p_low : p_high;
}

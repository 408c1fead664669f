/* circles.c — the radius r0 that balances the circles task, and the fraction
 * of the cube [-1,1]^m inside a ball of radius r.
 *
 * With x ~ U[-1,1]^m, |x_i| ~ U[0,1] independently, so |x|^2 = S = Σ v_i^2
 * with v_i ~ U[0,1], and r0^2 is the median of S.
 *
 * Closed form (m = 2, 3): for r ≤ 1 the ball lies inside the cube, so
 * P(|x| < r) = V_m r^m / 2^m with V_m the unit-ball volume. Setting this to 1/2
 * gives r0 = (2^{m-1} / V_m)^{1/m}: sqrt(2/π) = 0.798 for m = 2 and
 * (3/π)^{1/3} = 0.985 for m = 3. For m ≥ 4 that r exceeds 1 (the ball pokes
 * out of the cube), so there is no simple closed form.
 *
 * Numerical method (m ≥ 4), deterministic and with a rigorous truncation
 * bound: S lives in [0, m], so its density is exactly a Fourier series of
 * period P = m,
 *   f(s) = 1/P + (2/P) Σ_{k≥1} Re[c_k e^{iω_k s}],  ω_k = 2πk/P,
 *   c_k  = E[e^{-iω_k S}] = conj(φ(ω_k))^m,  φ(ω) = ∫_0^1 e^{iωv²} dv,
 * and integrating term by term gives the CDF
 *   F(s) = s/P + (2/P) Σ_{k≥1} Re[c_k (e^{iω_k s} - 1) / (iω_k)].
 * φ is evaluated to ~1e-16 (Gauss–Legendre for ω < 40, an exact splitting
 * plus an asymptotic series beyond). Since |φ(ω)| ≤ B(ω) = ½√(π/ω) + 1/(2ω)
 * and B(ω)√ω decreases, the tail after K terms is at most (4/(πm)) B(ω_K)^m;
 * K is chosen so that this is ≤ 1e-12. r0^2 is the root of F(s) = 1/2, found
 * by safeguarded Newton (f is the derivative) from the mean m/3. Each r0 is
 * computed once per m per thread and cached. */
#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <complex.h>
#include <math.h>
#include <stdint.h>

/* glibc's <complex.h> defines CMPLX only when __GNUC_PREREQ(4, 7); clang
 * announces itself as GCC 4.2, so clang 14 (the fuzz build, tests/fuzz/
 * README.md) sees no CMPLX although it has the same __builtin_complex. */
#if !defined(CMPLX) && defined(__clang__)
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif

#define CDF_TOL 1e-12           /* rigorous bound on the truncated tail of F */
#define MAX_TERMS (1 << 21)     /* only binds for m = 2, 3 (closed forms used there) */
#define GL_NODES 20             /* Gauss–Legendre nodes per panel */
#define GL_PANELS 8             /* panels on [0, 1] */
#define ASYMPTOTIC_OMEGA 40.0   /* φ by asymptotics from here on */
#define RADIUS_CACHE_M 256

typedef struct {
  double v[GL_PANELS * GL_NODES]; /* nodes in [0, 1] */
  double w[GL_PANELS * GL_NODES]; /* weights, summing to 1 */
} unit_rule;

/* Gauss–Legendre nodes x and weights w on [-1, 1] (n points): Newton on the
 * three-term recurrence of P_n from Chebyshev-like initial guesses. */
static void gauss_legendre(int n, double *x, double *w) {
  for (int i = 0; i < (n + 1) / 2; i++) {
    double z = cos(M_PI * (i + 0.75) / (n + 0.5));
    double dp = 1.0;
    for (int iter = 0; iter < 100; iter++) {
      /* p1 = P_n(z), p2 = P_{n-1}(z), dp = P_n'(z) */
      double p1 = 1.0, p2 = 0.0;
      for (int j = 1; j <= n; j++) {
        double p3 = p2;
        p2 = p1;
        p1 = ((2.0 * j - 1.0) * z * p2 - (j - 1.0) * p3) / j;
      }
      dp = n * (z * p1 - p2) / (z * z - 1.0);
      double step = p1 / dp;
      z -= step;
      if (fabs(step) < 1e-16) break;
    }
    x[i] = -z;
    x[n - 1 - i] = z;
    w[i] = w[n - 1 - i] = 2.0 / ((1.0 - z * z) * dp * dp);
  }
}

/* Composite Gauss–Legendre rule for ∫_0^1: GL_PANELS equal panels. */
static void unit_rule_init(unit_rule *rule) {
  double x[GL_NODES], w[GL_NODES];
  gauss_legendre(GL_NODES, x, w);
  double h = 1.0 / GL_PANELS;
  for (int p = 0; p < GL_PANELS; p++)
    for (int j = 0; j < GL_NODES; j++) {
      rule->v[p * GL_NODES + j] = h * (p + 0.5 * (x[j] + 1.0));
      rule->w[p * GL_NODES + j] = 0.5 * h * w[j];
    }
}

/* φ(ω) = ∫_0^1 e^{iωv²} dv = E[e^{iω v²}], v ~ U[0, 1], for ω > 0.
 * Small ω: quadrature (the integrand is entire; ≤ ~10 rad of phase per panel).
 * Large ω: φ = ∫_0^∞ - ∫_1^∞ with ∫_0^∞ = ½√(π/ω) e^{iπ/4} and, substituting
 * v² = 1 + t and rotating t = iu/ω,
 *   ∫_1^∞ e^{iωv²} dv = (i e^{iω} / (2ω)) G,  G = ∫_0^∞ e^{-u} (1 + iu/ω)^{-1/2} du
 *   G ~ Σ_k (-1)^k (1/2)_k (i/ω)^k   (error below the smallest term, ~e^{-ω}). */
static double complex sq_uniform_charfn(double omega, const unit_rule *rule) {
  if (omega < ASYMPTOTIC_OMEGA) {
    double re = 0.0, im = 0.0;
    for (int j = 0; j < GL_PANELS * GL_NODES; j++) {
      double phase = omega * rule->v[j] * rule->v[j];
      re += rule->w[j] * cos(phase);
      im += rule->w[j] * sin(phase);
    }
    return CMPLX(re, im);
  }
  double complex term = 1.0, g = 1.0;
  double complex ratio = I / omega;
  for (int k = 1; k < omega; k++) {
    term *= -(k - 0.5) * ratio;
    g += term;
    if (cabs(term) < 1e-18) break;
  }
  double complex whole = 0.5 * sqrt(M_PI / omega) * CMPLX(M_SQRT1_2, M_SQRT1_2);
  double complex tail = I * CMPLX(cos(omega), sin(omega)) / (2.0 * omega) * g;
  return whole - tail;
}

/* Number of Fourier terms K for dimension m: smallest K with
 * (4/(πm)) B(ω_K)^m ≤ CDF_TOL, B(ω) = ½√(π/ω) + 1/(2ω). With x = 1/√ω,
 * B = b solves ½x² + (√π/2)x - b = 0. */
static int64_t fourier_terms(int m) {
  double b = pow(CDF_TOL * M_PI * m / 4.0, 1.0 / m);
  double half_sqrt_pi = 0.5 * sqrt(M_PI);
  double x = 2.0 * b / (half_sqrt_pi + sqrt(half_sqrt_pi * half_sqrt_pi + 2.0 * b));
  double omega = 1.0 / (x * x);
  double k = ceil(omega * m / (2.0 * M_PI)) + 1.0;
  return k > MAX_TERMS ? MAX_TERMS : (int64_t)k;
}

/* F(s) = P(S < s) and its density f(s) for S = Σ_{i<m} v_i², v_i ~ U[0, 1],
 * from the period-m Fourier series above, summed from the smallest terms up. */
static void sumsq_cdf(int m, double s, const unit_rule *rule, double *cdf, double *pdf) {
  double period = (double)m;
  int64_t terms = fourier_terms(m);
  double sum_cdf = 0.0, sum_pdf = 0.0;
  for (int64_t k = terms; k >= 1; k--) {
    double omega = 2.0 * M_PI * (double)k / period;
    /* c_k = conj(φ)^m, as modulus and phase so that m may be large */
    double complex phi = sq_uniform_charfn(omega, rule);
    double mod = pow(cabs(phi), m), arg = -m * carg(phi);
    double complex c = mod * CMPLX(cos(arg), sin(arg));
    double complex e = CMPLX(cos(omega * s), sin(omega * s));
    sum_cdf += creal(c * (e - 1.0) / (I * omega));
    sum_pdf += creal(c * e);
  }
  *cdf = s / period + 2.0 / period * sum_cdf;
  if (pdf) *pdf = 1.0 / period + 2.0 / period * sum_pdf;
}

int task_ball_fraction(int m, double r, double *fraction) {
  /* m: dimension; r: radius. fraction = P(|x| < r), x ~ U[-1,1]^m */
  if (m < 1) return cs_error(CS_ERR_INPUT, "task_ball_fraction: dimension m = %d must be >= 1", m);
  if (!isfinite(r)) return cs_error(CS_ERR_INPUT, "task_ball_fraction: radius must be finite");
  double s = r * r;
  if (r <= 0.0) {
    *fraction = 0.0;
  } else if (s >= m) {
    *fraction = 1.0;
  } else {
    unit_rule rule;
    unit_rule_init(&rule);
    sumsq_cdf(m, s, &rule, fraction, NULL);
    if (*fraction < 0.0) *fraction = 0.0;
    if (*fraction > 1.0) *fraction = 1.0;
  }
  return CS_OK;
}

/* Median of S by safeguarded Newton on F(s) - 1/2 over the bracket (0, m). */
static double sumsq_median(int m) {
  unit_rule rule;
  unit_rule_init(&rule);
  double lo = 0.0, hi = (double)m, s = m / 3.0; /* E[S] = m/3 */
  for (int iter = 0; iter < 200; iter++) {
    double cdf, pdf;
    sumsq_cdf(m, s, &rule, &cdf, &pdf);
    double g = cdf - 0.5;
    if (g == 0.0) break;
    if (g < 0.0) lo = s; else hi = s;
    double next = s - g / pdf;
    if (!(pdf > 0.0) || !(next > lo && next < hi)) next = 0.5 * (lo + hi);
    double step = fabs(next - s);
    s = next;
    if (step <= 4e-16 * s || hi - lo <= 4e-16 * s) break;
  }
  return s;
}

int task_circles_radius(int m, double *r0) {
  /* r0 with P(|x| < r0) = 1/2 for x ~ U[-1,1]^m */
  static _Thread_local double cache[RADIUS_CACHE_M + 1];
  if (m < 2) return cs_error(CS_ERR_INPUT, "task circles needs input dimension m >= 2, got m = %d", m);
  if (m == 2) {
    *r0 = sqrt(2.0 / M_PI); /* π r²/4 = 1/2 */
    return CS_OK;
  }
  if (m == 3) {
    *r0 = cbrt(3.0 / M_PI); /* (4π/3) r³/8 = 1/2 */
    return CS_OK;
  }
  if (m <= RADIUS_CACHE_M && cache[m] > 0.0) {
    *r0 = cache[m];
    return CS_OK;
  }
  double r = sqrt(sumsq_median(m));
  if (!(r > 0.0 && r < sqrt((double)m)))
    return cs_error(CS_ERR_NUMERIC, "task circles: median radius for m = %d did not converge (%g)", m, r);
  if (m <= RADIUS_CACHE_M) cache[m] = r;
  *r0 = r;
  return CS_OK;
}

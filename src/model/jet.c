/* jet.c — chain rules for second-order jets (see jet.h for the layout).
 *
 * For a scalar f applied to a jet (u, u_a, u_ab):
 *   f(u)_0  = f(u)
 *   f(u)_a  = f'(u) u_a
 *   f(u)_ab = f''(u) u_a u_b + f'(u) u_ab
 * For a product w = u v (Leibniz):
 *   w_0  = u v
 *   w_a  = u_a v + u v_a
 *   w_ab = u_ab v + u_a v_b + u_b v_a + u v_ab
 * Everything nonlinear in the models (softmax, sigmoid, tanh, LayerNorm)
 * is composed from these two rules plus linear maps. */
#include "jet.h"

#include "curvsweep/error.h"
#include "curvsweep/simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int jet_shape_init(jet_shape *s, int m, int order) {
  memset(s, 0, sizeof *s);
  s->m = m;
  if (order == 0) {
    s->C = 1;
    return CS_OK;
  }
  int P = m * (m + 1) / 2;
  s->C = 1 + m + P;
  CS_CHECK(CS_CALLOC(s->pa, P));
  CS_CHECK(CS_CALLOC(s->pb, P));
  /* packed pair order (0,0),(0,1),…,(0,m-1),(1,1),… as in geom.h */
  int p = 0;
  for (int a = 0; a < m; a++)
    for (int b = a; b < m; b++, p++) s->pa[p] = a, s->pb[p] = b;
  /* the Leibniz pairs of each row (jet.h) */
  CS_CHECK(CS_CALLOC(s->pairs, s->C));
  s->pairs[0] = (jet_pairs){1, {0}, {0}};
  for (int a = 1; a <= m; a++) s->pairs[a] = (jet_pairs){2, {a, 0}, {0, a}};
  for (int q = 0; q < P; q++) {
    int r = 1 + m + q, a = 1 + s->pa[q], b = 1 + s->pb[q];
    s->pairs[r] = (jet_pairs){4, {r, a, b, 0}, {0, b, a, r}};
  }
  return CS_OK;
}

void jet_shape_free(jet_shape *s) {
  free(s->pa);
  free(s->pb);
  free(s->pairs);
  s->pa = s->pb = NULL;
  s->pairs = NULL;
}

/* f, f', f'' of the elementary functions at t. */
static inline void jet_fn_derivs(jet_fn f, double t, double *f0, double *f1, double *f2) {
  *f0 = *f1 = *f2 = NAN;
  switch (f) {
    case JET_EXP: {
      double e = exp(t);
      *f0 = *f1 = *f2 = e;
      break;
    }
    case JET_SIGMOID: {
      /* with e = exp(−|t|) (no cancellation when σ → 0 or 1):
       * σ' = e/(1+e)², σ'' = σ'(1 − 2σ), 1 − 2σ = ∓(1 − e)/(1 + e) */
      double e = exp(-fabs(t)), r = 1.0 / (1.0 + e);
      *f0 = t >= 0 ? r : e * r;
      *f1 = e * r * r;
      *f2 = *f1 * (t >= 0 ? -(1.0 - e) * r : (1.0 - e) * r);
      break;
    }
    case JET_TANH: {
      /* with e = exp(−2|t|): tanh = ±(1 − e)/(1 + e), tanh' = 4e/(1+e)²,
       * tanh'' = −2 tanh tanh' */
      double e = exp(-2.0 * fabs(t)), r = 1.0 / (1.0 + e);
      *f0 = (t >= 0 ? 1.0 : -1.0) * (1.0 - e) * r;
      *f1 = 4.0 * e * r * r;
      *f2 = -2.0 * *f0 * *f1;
      break;
    }
    case JET_RSQRT: { /* t^{-1/2}: f' = -f/(2t), f'' = 3f/(4t²) */
      double r = 1.0 / sqrt(t);
      *f0 = r;
      *f1 = -0.5 * r / t;
      *f2 = 0.75 * r / (t * t);
      break;
    }
    case JET_RECIP: { /* 1/t: f' = -1/t², f'' = 2/t³ */
      double r = 1.0 / t;
      *f0 = r;
      *f1 = -r * r;
      *f2 = 2.0 * r * r * r;
      break;
    }
    case JET_GELU: { /* t Φ(t): f' = Φ + t φ, f'' = φ (2 − t²), φ(t) = e^{−t²/2}/√(2π) */
      double Phi = 0.5 * erfc(-t * M_SQRT1_2), phi = exp(-0.5 * t * t) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
      *f0 = t * Phi;
      *f1 = Phi + t * phi;
      *f2 = phi * (2.0 - t * t);
      break;
    }
  }
}

/* Values only (C = 1): one tight loop per function so it vectorises. */
CS_VECTOR_CLONES static void jet_unary_values(jet_fn f, long n, const double *restrict x, double *restrict y) {
  switch (f) {
    case JET_EXP:
#pragma omp simd
      for (long i = 0; i < n; i++) y[i] = exp(x[i]);
      break;
    case JET_SIGMOID:
#pragma omp simd
      for (long i = 0; i < n; i++) y[i] = 1.0 / (1.0 + exp(-x[i]));
      break;
    case JET_TANH:
      for (long i = 0; i < n; i++) y[i] = tanh(x[i]);
      break;
    case JET_RSQRT:
      for (long i = 0; i < n; i++) y[i] = 1.0 / sqrt(x[i]);
      break;
    case JET_RECIP:
      for (long i = 0; i < n; i++) y[i] = 1.0 / x[i];
      break;
    case JET_GELU:
#pragma omp simd
      for (long i = 0; i < n; i++) y[i] = x[i] * (0.5 * erfc(-x[i] * M_SQRT1_2));
      break;
  }
}

/* The gate on values (C = 1), fused, N rows of w: g = σ(z + b) and
 * u = g ⊙ o, with σ(t) = 1/(1 + exp(−t)) and the vector exp of jet_unary's
 * sigmoid; one pass that reads z where the product left it (ld ldz). */
CS_VECTOR_CLONES void jet_sigmoid_gate_values(int N, int w, const double *restrict z, int ldz,
                                              const double *restrict b, double *restrict g,
                                              const double *restrict o, double *restrict u) {
  for (int r = 0; r < N; r++) {
    const double *zr = z + (long)r * ldz;
    double *gr = g + (long)r * w, *ur = u + (long)r * w;
    const double *orow = o + (long)r * w;
#pragma omp simd
    for (int k = 0; k < w; k++) {
      double gk = 1.0 / (1.0 + exp(-(zr[k] + b[k])));
      gr[k] = gk;
      ur[k] = gk * orow[k];
    }
  }
}

/* x, y: (N·C) × w. Second-derivative rows first (they need the old first
 * derivatives), then first-derivative rows, then the value: safe in place. */
void jet_unary(const jet_shape *s, jet_fn f, int N, int w, const double *x, double *y) {
  int C = s->C, m = s->m;
  if (C == 1) {
    if (x == y) {
      /* in place: restrict does not hold, go through a chunked copy */
      double buf[512];
      for (long i0 = 0; i0 < (long)N * w; i0 += 512) {
        long cnt = (long)N * w - i0 < 512 ? (long)N * w - i0 : 512;
        memcpy(buf, x + i0, sizeof(double) * cnt);
        jet_unary_values(f, cnt, buf, y + i0);
      }
    } else {
      jet_unary_values(f, (long)N * w, x, y);
    }
    return;
  }
  int P = C - 1 - m;
  for (int p = 0; p < N; p++) {
    const double *xp = x + (long)p * C * w;
    double *yp = y + (long)p * C * w;
    for (int j = 0; j < w; j++) {
      double f0, f1, f2;
      jet_fn_derivs(f, xp[j], &f0, &f1, &f2);
      for (int q = 0; q < P; q++) { /* f'' u_a u_b + f' u_ab */
        double ua = xp[(1 + s->pa[q]) * w + j], ub = xp[(1 + s->pb[q]) * w + j];
        yp[(1 + m + q) * w + j] = f2 * ua * ub + f1 * xp[(1 + m + q) * w + j];
      }
      for (int a = 0; a < m; a++) yp[(1 + a) * w + j] = f1 * xp[(1 + a) * w + j];
      yp[j] = f0;
    }
  }
}

/* Leibniz rule, elementwise, in an order safe for out aliasing u or v. */
void jet_mul(const jet_shape *s, int N, int w, const double *u, const double *v, double *out) {
  int C = s->C, m = s->m;
  if (C == 1) {
    for (long i = 0; i < (long)N * w; i++) out[i] = u[i] * v[i];
    return;
  }
  int P = C - 1 - m;
  for (int p = 0; p < N; p++) {
    const double *up = u + (long)p * C * w, *vp = v + (long)p * C * w;
    double *op = out + (long)p * C * w;
    for (int j = 0; j < w; j++) {
      double u0 = up[j], v0 = vp[j];
      for (int q = 0; q < P; q++) {
        int a = 1 + s->pa[q], b = 1 + s->pb[q], r = (1 + m + q) * w + j;
        op[r] = up[r] * v0 + up[a * w + j] * vp[b * w + j] + up[b * w + j] * vp[a * w + j] +
                u0 * vp[r];
      }
      for (int a = 1; a <= m; a++) op[a * w + j] = up[a * w + j] * v0 + u0 * vp[a * w + j];
      op[j] = u0 * v0;
    }
  }
}

/* Leibniz rule with v broadcast over each group of n columns. */
void jet_mul_group(const jet_shape *s, int N, int G, int n, const double *u, const double *v,
                   double *out) {
  int C = s->C, m = s->m, w = G * n;
  if (C == 1) {
    for (int r = 0; r < N; r++)
      for (int g = 0; g < G; g++) {
        double vg = v[(long)r * G + g];
        const double *ur = u + (long)r * w + g * n;
        double *orow = out + (long)r * w + g * n;
        for (int i = 0; i < n; i++) orow[i] = ur[i] * vg;
      }
    return;
  }
  int P = C - 1 - m;
  for (int p = 0; p < N; p++) {
    const double *up = u + (long)p * C * w, *vp = v + (long)p * C * G;
    double *op = out + (long)p * C * w;
    for (int g = 0; g < G; g++) {
      double v0 = vp[g];
      for (int i = 0; i < n; i++) {
        int j = g * n + i;
        double u0 = up[j];
        for (int q = 0; q < P; q++) {
          int a = 1 + s->pa[q], b = 1 + s->pb[q], rq = 1 + m + q;
          op[rq * w + j] = up[rq * w + j] * v0 + up[a * w + j] * vp[b * G + g] +
                           up[b * w + j] * vp[a * G + g] + u0 * vp[rq * G + g];
        }
        for (int a = 1; a <= m; a++) op[a * w + j] = up[a * w + j] * v0 + u0 * vp[a * G + g];
        op[j] = u0 * v0;
      }
    }
  }
}

void jet_group_sum(int rows, int G, int n, const double *u, double *out) {
  for (int r = 0; r < rows; r++)
    for (int g = 0; g < G; g++) {
      const double *ur = u + (long)r * G * n + g * n;
      double acc = 0.0;
      for (int i = 0; i < n; i++) acc += ur[i];
      out[(long)r * G + g] = acc;
    }
}

void jet_add_value_scalar(const jet_shape *s, int N, int w, double *x, double c) {
  for (int p = 0; p < N; p++) {
    double *xp = x + (long)p * s->C * w;
    for (int j = 0; j < w; j++) xp[j] += c;
  }
}

/* Softmax per group on values, the two passes around the exp: shift each
 * group of n by its max, and scale each by 1/Σ. Inlined into
 * softmax_values twice, once with n = 3 (the default slot count, and the
 * token count of the self family at m = 2) as a constant the compiler
 * unrolls; the same operations in the same order either way. */
static inline __attribute__((always_inline)) void softmax_shift(long groups, int n, double *x) {
  for (long r = 0; r < groups; r++) {
    double *xr = x + r * n;
    /* the max as fmax takes it (a NaN only when all are NaN), without a
     * libm call per element; which zero is kept cannot change x − max */
    double mx = xr[0];
    for (int i = 1; i < n; i++) mx = xr[i] > mx || mx != mx ? xr[i] : mx;
    for (int i = 0; i < n; i++) xr[i] -= mx;
  }
}

static inline __attribute__((always_inline)) void softmax_scale(long groups, int n, double *x) {
  for (long r = 0; r < groups; r++) { /* Σ, then × (1/Σ) */
    double *xr = x + r * n, acc = 0.0;
    for (int i = 0; i < n; i++) acc += xr[i];
    double inv = 1.0 / acc;
    for (int i = 0; i < n; i++) xr[i] *= inv;
  }
}

/* Softmax per group on values: α = exp(x − max) / Σ exp(x − max).
 * x (N × G·n) in place. */
CS_VECTOR_CLONES static void softmax_values(int N, int G, int n, double *x) {
  long groups = (long)N * G;
  if (n == 3) softmax_shift(groups, 3, x);
  else softmax_shift(groups, n, x);
#pragma omp simd
  for (long i = 0; i < groups * n; i++) x[i] = exp(x[i]);
  if (n == 3) softmax_scale(groups, 3, x);
  else softmax_scale(groups, n, x);
}

/* Softmax per group on jets, in the form that stays accurate when the
 * softmax saturates (α_i → 1): with u_a(i) = Σ_j α_j (s_a(i) − s_a(j)),
 *   α_a(i)  = α_i u_a(i)
 *   α_ab(i) = α_i [ u_a(i) u_b(i) + Σ_j α_j (s_ab(i) − s_ab(j))
 *                   − Σ_j α_j u_a(j) u_b(j) ]
 * Every term is a difference of scores weighted by probabilities, so a
 * dominant slot's tiny derivatives are computed to full relative precision
 * (the textbook α ⊙ (s_a − ⟨α, s_a⟩) cancels catastrophically there).
 * x (N·C × G·n) in place; the scores are copied per group into scratch. */
static void softmax_jets(const jet_shape *js, int N, int G, int n, double *x) {
  int C = js->C, m = js->m, P = C - 1 - m, w = G * n;
  double *s = malloc(sizeof(double) * (size_t)(C * n + m * n)), *u = s + C * n;
  if (!s) { /* cannot happen in practice; leave NaN so the point is flagged */
    for (long i = 0; i < (long)N * C * w; i++) x[i] = NAN;
    return;
  }
  for (int p = 0; p < N; p++)
    for (int g = 0; g < G; g++) {
      double *xp = x + (long)p * C * w + g * n;
      for (int r = 0; r < C; r++) memcpy(s + r * n, xp + (long)r * w, sizeof(double) * n);
      /* values */
      double mx = s[0], Z = 0.0;
      for (int i = 1; i < n; i++) mx = fmax(mx, s[i]);
      for (int i = 0; i < n; i++) Z += exp(s[i] - mx);
      double *alpha = xp; /* row 0 */
      for (int i = 0; i < n; i++) alpha[i] = exp(s[i] - mx) / Z;
      /* first derivatives: u_a(i) = Σ_j α_j (s_a(i) − s_a(j)) */
      for (int a = 0; a < m; a++) {
        const double *sa = s + (1 + a) * n;
        for (int i = 0; i < n; i++) {
          double acc = 0.0;
          for (int j = 0; j < n; j++) acc += alpha[j] * (sa[i] - sa[j]);
          u[a * n + i] = acc;
        }
      }
      /* second derivatives */
      for (int q = 0; q < P; q++) {
        int a = js->pa[q], b = js->pb[q];
        const double *sab = s + (1 + m + q) * n, *ua = u + a * n, *ub = u + b * n;
        double cross = 0.0;
        for (int j = 0; j < n; j++) cross += alpha[j] * ua[j] * ub[j];
        double *out = xp + (long)(1 + m + q) * w;
        for (int i = 0; i < n; i++) {
          double acc = 0.0;
          for (int j = 0; j < n; j++) acc += alpha[j] * (sab[i] - sab[j]);
          out[i] = alpha[i] * (ua[i] * ub[i] + acc - cross);
        }
      }
      for (int a = 0; a < m; a++) {
        double *out = xp + (long)(1 + a) * w;
        for (int i = 0; i < n; i++) out[i] = alpha[i] * u[a * n + i];
      }
    }
  free(s);
}

void jet_softmax_groups(const jet_shape *s, int N, int G, int n, double *x) {
  if (s->C == 1)
    softmax_values(N, G, n, x);
  else
    softmax_jets(s, N, G, n, x);
}

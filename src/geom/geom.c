/* geom.c — the pointwise curvature engine (docs/NUMERICS.md).
 *
 * At one point x ∈ R^m the representation μ(x) ∈ R^d comes with its exact
 * Jacobian J = ∂μ/∂x (d×m) and Hessians H_ab = ∂²μ/∂x_a∂x_b (d each), read
 * from a jet (layout in geom.h). The image of x ↦ μ(x) is an immersed
 * m-manifold in Euclidean R^d, and the Fisher–Rao metric of N(μ(x), σ²I) is
 * the pulled-back metric g = JᵀJ/σ². Its curvature follows from the Gauss
 * equation:
 *
 *   J = Q R (thin QR)       Q: orthonormal basis of the tangent space
 *   E = R⁻¹                 J E = Q, so the columns of E are tangent vectors
 *                           in input coordinates that are Euclidean-orthonormal
 *   P⊥ v = v − Q(Qᵀv)       projection onto the normal space
 *   II_ab = P⊥ Σ_{c,e} E_ca E_eb H_ce      second fundamental form in that frame
 *   K_ab = ⟨II_aa, II_bb⟩ − |II_ab|²       sectional curvature of the (a,b) plane
 *   S_E  = Σ_{a≠b} K_ab = |Σ_a II_aa|² − Σ_{a,b} |II_ab|²
 *
 * Scaling the metric by 1/σ² multiplies curvature by σ²: S = σ² S_E.
 *
 * Rounding: S is reported as computed, with an a-priori error estimate
 * S_err and a classification (flat / curved / unresolved); callers that can
 * recompute a point under directed rounding sharpen S_err with
 * geom_point_add_rounding_spread (docs/NUMERICS.md, "Rounding error").
 *
 * Memory: one thread-local scratch buffer, grown on demand, so the per-point
 * path allocates nothing once warm. The LAPACK kernels live in src/la. */
#include "curvsweep/geom.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "curvsweep/error.h"
#include "curvsweep/la.h"

// ----------------------------------------------------------------------------
// jet layout and options

int geom_jet_rows(int m) { return 1 + m + m * (m + 1) / 2; }

int geom_pair_index(int m, int a, int b) {
  // pairs packed row by row: (0,0..m-1), (1,1..m-1), ...; row a starts at
  // m + (m-1) + ... + (m-a+1) = a·m − a(a−1)/2
  if (a > b) {
    int t = a;
    a = b;
    b = t;
  }
  if (a < 0 || b >= m) return -1;
  return a * m - a * (a - 1) / 2 + (b - a);
}

geom_options geom_options_default(void) {
  return (geom_options){.sigma = 1.0, .exact_dim_max = 8, .mc_frames = 256};
}

// ----------------------------------------------------------------------------
// thread-local scratch

static _Thread_local double *geom_work;
static _Thread_local size_t geom_work_len;

/* A scratch buffer of at least n doubles (contents undefined). Only one
 * caller at a time per thread: the public functions below never nest. */
static int geom_scratch(size_t n, double **out) {
  if (n > geom_work_len) {
    free(geom_work);
    geom_work = NULL;
    geom_work_len = 0;
    CS_CHECK(CS_CALLOC(geom_work, n));
    geom_work_len = n;
  }
  *out = geom_work;
  return CS_OK;
}

void geom_workspace_release(void) {
  free(geom_work);
  geom_work = NULL;
  geom_work_len = 0;
}

// ----------------------------------------------------------------------------
// small vector helpers (length d)

static double geom_dot(int d, const double *x, const double *y) {
  double s = 0.0;
  for (int i = 0; i < d; i++) s += x[i] * y[i];
  return s;
}

/* Every value of the jet finite? (rows × d values) */
static int geom_check_finite(int64_t n, const double *x) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(x[i]))
      return cs_error(CS_ERR_NUMERIC, "geom: non-finite jet entry %g at index %lld", x[i],
                      (long long)i);
  return CS_OK;
}

/* v ← P⊥ v = v − Q(Qᵀv).
 * q: (m, d) — m orthonormal columns of length d, stored contiguously; v: (d).
 * Done twice ("twice is enough" re-orthogonalisation): H often has a large
 * tangential part (all of it, in the flat affine regime), and one pass
 * leaves a normal residue of order ε·|v|·(loss of orthogonality); the second
 * pass brings it to ε·|normal part|-level accuracy. */
static void geom_project_normal(int d, int m, const double *q, double *v) {
  for (int pass = 0; pass < 2; pass++)
    for (int a = 0; a < m; a++) {
      const double *qa = q + (size_t)a * d;
      double c = geom_dot(d, qa, v);
      for (int i = 0; i < d; i++) v[i] -= c * qa[i];
    }
}

/* Tangent frame, its inverse and the degeneracy test.
 * jet: (C, d); q: (m, d) out, column-major d×m; r, e: (m, m) column-major
 * out, E = R⁻¹; sv: (m) scratch; *cond out (cond₂(R) or an upper bound).
 * Rows 1..m of the jet are the columns ∂μ/∂x_a, contiguous, i.e. J is already
 * a column-major d×m matrix with lda = d. Degenerate when R has a zero
 * diagonal or cond(R) = s_max/s_min > GEOM_DEGENERATE_COND. The SVD is only
 * needed near the threshold: ‖R‖_F ‖R⁻¹‖_F ≥ cond₂(R) is a cheap upper bound,
 * and when it is below the threshold the point is fine. */
static int geom_tangent_frame(int d, int m, const double *jet, double *q, double *r, double *e,
                              double *sv, double *cond, int *degenerate) {
  CS_CHECK(la_qr_thin(d, m, jet + d, q, r));
  *cond = INFINITY;
  *degenerate = 1;
  for (int a = 0; a < m; a++)
    if (r[a + (size_t)a * m] == 0.0) return CS_OK;
  CS_CHECK(la_upper_tri_inverse(m, r, e));
  double nr = 0.0, ne = 0.0;
  for (int a = 0; a < m; a++)
    for (int b = a; b < m; b++) {
      nr += r[a + (size_t)b * m] * r[a + (size_t)b * m];
      ne += e[a + (size_t)b * m] * e[a + (size_t)b * m];
    }
  *cond = sqrt(nr * ne);
  if (!(*cond <= GEOM_DEGENERATE_COND)) { /* near or past the threshold: exact */
    CS_CHECK(la_singular_values(m, r, sv));
    *cond = sv[0] / sv[m - 1];
  }
  *degenerate = !(*cond <= GEOM_DEGENERATE_COND);
  return CS_OK;
}

/* The bilinear form B(p,p), B(r,r), B(p,r) of symmetric rows B_ab stored at
 * the packed pairs a ≤ b: rows (P, d); out: pp, rr, pr (d each), overwritten.
 * Weights p_a p_b (×2 off the diagonal) and p_a r_b + p_b r_a. */
static void geom_bilinear(int d, int m, const double *rows, const double *p, const double *r,
                          double *pp, double *rr, double *pr) {
  memset(pp, 0, sizeof(double) * (size_t)d);
  memset(rr, 0, sizeof(double) * (size_t)d);
  memset(pr, 0, sizeof(double) * (size_t)d);
  for (int a = 0; a < m; a++)
    for (int b = a; b < m; b++) {
      double off = a == b ? 1.0 : 2.0;
      double wpp = off * p[a] * p[b], wrr = off * r[a] * r[b];
      double wpr = a == b ? p[a] * r[a] : p[a] * r[b] + p[b] * r[a];
      const double *row = rows + (size_t)geom_pair_index(m, a, b) * d;
      for (int i = 0; i < d; i++) {
        pp[i] += wpp * row[i];
        rr[i] += wrr * row[i];
        pr[i] += wpr * row[i];
      }
    }
}

static void geom_point_set_degenerate(geom_point *out, double cond) {
  double nan = NAN;
  *out = (geom_point){.S = nan, .S_err = nan, .T2 = nan, .K = nan, .S_tilde = nan,
                      .K_tilde = nan, .K_hat = nan, .tr_g = nan, .logdet_g = nan,
                      .H_norm = nan, .area = nan, .S_se = nan, .cond = cond,
                      .cls = GEOM_DEGENERATE, .degenerate = 1};
}

// ----------------------------------------------------------------------------
// rounding error and classification (docs/NUMERICS.md, "Rounding error")

geom_class geom_classify(double S, double S_err, double T2) {
  if (fabs(S) > 3.0 * S_err) return GEOM_CURVED;
  if (3.0 * S_err <= GEOM_FLAT_REL * T2) return GEOM_FLAT;
  return GEOM_UNRESOLVED;
}

int geom_point_doubtful(const geom_point *p) {
  if (p->degenerate) return 0;
  double margin = GEOM_DOUBT_MARGIN * 3.0 * p->S_err;
  switch (p->cls) {
    case GEOM_CURVED: return !(fabs(p->S) > margin);
    case GEOM_FLAT: return !(margin <= GEOM_FLAT_REL * p->T2);
    default: return 1;
  }
}

void geom_point_add_rounding_spread(geom_point *p, const geom_point *up, const geom_point *down) {
  if (p->degenerate) return;
  /* A perturbation that changes degeneracy: S is uncertain by its own size. */
  double spread = fabs(p->S);
  if (!up->degenerate && !down->degenerate) {
    double su = fabs(up->S - p->S), sd = fabs(down->S - p->S);
    spread = GEOM_SPREAD_FACTOR * (su > sd ? su : sd);
  }
  if (!(spread <= p->S_err)) p->S_err = spread;
  p->cls = geom_classify(p->S, p->S_err, p->T2);
}

double geom_anisotropy_index(int m, double tr_g, double logdet_g) {
  return log(tr_g / m) - logdet_g / m;
}

// ----------------------------------------------------------------------------
// second fundamental form and scalar curvature

/* Second fundamental form in the orthonormal frame.
 * jet: (C, d); q: (m, d); e: (m, m) column-major, E = R⁻¹ upper triangular;
 * w: (m·m, d) scratch; ii: (P, d) out, II_ab at row geom_pair_index(m, a, b).
 * Two contractions instead of one four-index sum (m³d + P·m·d flops rather
 * than P²d):
 *   W_ae  = Σ_c E_ca H_ce        (E_ca = 0 for c > a)
 *   T_ab  = Σ_e E_eb W_ae        (E_eb = 0 for e > b), a ≤ b
 *   II_ab = P⊥ T_ab
 * pi2 += Σ_ab |T_ab|², the size of the unprojected second derivatives. */
static void geom_second_fundamental_form(int d, int m, const double *jet, const double *q,
                                         const double *e, double *w, double *ii, double *pi2) {
  const double *hess = jet + (size_t)(1 + m) * d;
  for (int a = 0; a < m; a++)
    for (int ee = 0; ee < m; ee++) {
      double *wae = w + ((size_t)a * m + ee) * d;
      memset(wae, 0, sizeof(double) * (size_t)d);
      for (int c = 0; c <= a; c++) {
        double eca = e[c + (size_t)a * m];
        const double *hce = hess + (size_t)geom_pair_index(m, c, ee) * d;
        for (int i = 0; i < d; i++) wae[i] += eca * hce[i];
      }
    }
  for (int a = 0; a < m; a++)
    for (int b = a; b < m; b++) {
      double *iab = ii + (size_t)geom_pair_index(m, a, b) * d;
      memset(iab, 0, sizeof(double) * (size_t)d);
      for (int ee = 0; ee <= b; ee++) {
        double eeb = e[ee + (size_t)b * m];
        const double *wae = w + ((size_t)a * m + ee) * d;
        for (int i = 0; i < d; i++) iab[i] += eeb * wae[i];
      }
      /* Σ_ab |T_ab|² before projection (off-diagonal pairs count twice) */
      *pi2 += (a == b ? 1.0 : 2.0) * geom_dot(d, iab, iab);
      geom_project_normal(d, m, q, iab);
    }
}

/* Exact Euclidean scalar curvature from the second fundamental form.
 * ii: (P, d). S_E = Σ_{a≠b} K_ab = 2 Σ_{a<b} (⟨II_aa, II_bb⟩ − |II_ab|²).
 * Summing the sectional curvatures pair by pair (rather than
 * |Σ II_aa|² − Σ|II_ab|²) avoids cancelling the large |II_aa|² terms,
 * e.g. on a cylinder. */
static double geom_scalar_curvature_exact(int d, int m, const double *ii) {
  double s = 0.0;
  for (int a = 0; a < m; a++)
    for (int b = a + 1; b < m; b++) {
      const double *iaa = ii + (size_t)geom_pair_index(m, a, a) * d;
      const double *ibb = ii + (size_t)geom_pair_index(m, b, b) * d;
      const double *iab = ii + (size_t)geom_pair_index(m, a, b) * d;
      s += geom_dot(d, iaa, ibb) - geom_dot(d, iab, iab);
    }
  return 2.0 * s;
}

/* A uniformly random unit vector of R^m orthogonal to the unit vector p
 * (p = NULL: no constraint): Gaussian draw, Gram–Schmidt, normalise.
 * v: (m) out. Redraws in the (measure-zero) case of a vanishing norm. */
static void geom_random_unit(int m, rng_stream *mc, const double *p, double *v) {
  for (;;) {
    for (int a = 0; a < m; a++) v[a] = rng_normal(mc);
    if (p) {
      double c = 0.0;
      for (int a = 0; a < m; a++) c += v[a] * p[a];
      for (int a = 0; a < m; a++) v[a] -= c * p[a];
    }
    double n2 = 0.0;
    for (int a = 0; a < m; a++) n2 += v[a] * v[a];
    if (n2 > 1e-20) {
      double inv = 1.0 / sqrt(n2);
      for (int a = 0; a < m; a++) v[a] *= inv;
      return;
    }
  }
}

/* Monte Carlo Euclidean scalar curvature over random orthonormal 2-frames.
 * ii: (P, d) in the orthonormal frame; work: (3d + 2m) scratch.
 * For a uniformly random orthonormal pair (p, r) of R^m,
 *   K(p, r) = ⟨II(p,p), II(r,r)⟩ − |II(p,r)|²,  II(p,r) = Σ_ab p_a r_b II_ab,
 * has expectation S_E / (m(m−1)) (the average of K over all 2-planes), so
 *   S_E ≈ m(m−1)·mean K,   se = m(m−1)·sd(K)/√N  (sd with N − 1).
 * II(p,p) etc. are accumulated over the packed pairs a ≤ b with the
 * symmetric weights p_a p_b (×2 off the diagonal) and p_a r_b + p_b r_a.
 * Mean and variance by Welford's update. */
static void geom_scalar_curvature_mc(int d, int m, const double *ii, int n_frames,
                                     rng_stream *mc, double *work, double *S_E, double *se_E) {
  double *ipp = work, *irr = work + d, *ipr = work + 2 * (size_t)d;
  double *p = work + 3 * (size_t)d, *r = p + m;
  double mean = 0.0, m2 = 0.0;
  for (int f = 0; f < n_frames; f++) {
    geom_random_unit(m, mc, NULL, p);
    geom_random_unit(m, mc, p, r);
    geom_bilinear(d, m, ii, p, r, ipp, irr, ipr);
    double k = geom_dot(d, ipp, irr) - geom_dot(d, ipr, ipr);
    double delta = k - mean;
    mean += delta / (f + 1);
    m2 += delta * (k - mean);
  }
  double scale = (double)m * (m - 1);
  *S_E = scale * mean;
  *se_E = scale * sqrt(m2 / (n_frames - 1) / n_frames);
}

// ----------------------------------------------------------------------------
// public: curvature at one point

/* The arguments of geom_point_curvature: shapes, σ, and the Monte Carlo
 * settings when m > exact_dim_max (*use_mc out). */
static int geom_point_check_args(int d, int m, const double *jet, const geom_options *opt,
                                 const rng_stream *mc, geom_point *out, int *use_mc) {
  if (!jet || !opt || !out) return cs_error(CS_ERR_INPUT, "geom_point_curvature: NULL argument");
  if (d < 1 || m < 1)
    return cs_error(CS_ERR_INPUT, "geom_point_curvature: need d >= 1, m >= 1 (got d = %d, m = %d)",
                    d, m);
  if (!(opt->sigma > 0.0) || !isfinite(opt->sigma))
    return cs_error(CS_ERR_INPUT, "geom_point_curvature: sigma must be positive, got %g",
                    opt->sigma);
  *use_mc = m >= 2 && m > opt->exact_dim_max;
  if (*use_mc && opt->mc_frames < 2)
    return cs_error(CS_ERR_INPUT, "geom_point_curvature: mc_frames must be >= 2, got %d",
                    opt->mc_frames);
  if (*use_mc && !mc)
    return cs_error(CS_ERR_INPUT,
                    "geom_point_curvature: m = %d > exact_dim_max = %d needs a random stream", m,
                    opt->exact_dim_max);
  return CS_OK;
}

/* Σ_ab |II_ab|² (off-diagonal pairs twice). ii: (P, d). */
static double geom_ii_norm2(int d, int m, const double *ii) {
  double ii2 = 0.0;
  for (int a = 0; a < m; a++)
    for (int b = a; b < m; b++) {
      const double *iab = ii + (size_t)geom_pair_index(m, a, b) * d;
      ii2 += (a == b ? 1.0 : 2.0) * geom_dot(d, iab, iab);
    }
  return ii2;
}

/* Mean-curvature norm |Σ_a II_aa| / m (Euclidean, extrinsic).
 * ii: (P, d); hsum: (d) scratch. */
static double geom_mean_curvature_norm(int d, int m, const double *ii, double *hsum) {
  memset(hsum, 0, sizeof(double) * (size_t)d);
  for (int a = 0; a < m; a++) {
    const double *iaa = ii + (size_t)geom_pair_index(m, a, a) * d;
    for (int i = 0; i < d; i++) hsum[i] += iaa[i];
  }
  return sqrt(geom_dot(d, hsum, hsum)) / m;
}

/* The metric g = JᵀJ/σ²: tr g = Σ_a |J_a|²/σ², and
 * log det g = log det(RᵀR) − m log σ² = 2 Σ_a log|R_aa| − m log σ².
 * jet: (C, d); r: (m, m) column-major, from J = QR. */
static void geom_metric(int d, int m, const double *jet, const double *r, double sigma2,
                        double *tr_g, double *logdet_g) {
  double trJ = 0.0, logdet = 0.0;
  for (int a = 0; a < m; a++) {
    const double *ja = jet + (size_t)(1 + a) * d;
    trJ += geom_dot(d, ja, ja);
    logdet += 2.0 * log(fabs(r[a + (size_t)a * m]));
  }
  *tr_g = trJ / sigma2;
  *logdet_g = logdet - m * log(sigma2);
}

/* Fisher scaling and the derived quantities of out, from the Euclidean
 * values: curvature of g = σ² × Euclidean. K = S/(m(m−1)) is the mean
 * sectional curvature (Gaussian curvature for m = 2); a curve (m = 1) is
 * intrinsically flat and gets K = 0. K̃, S̃ multiply by tr(g)/m, which
 * cancels both σ² and any rescaling μ → cμ; K̂ multiplies by det(g)^{1/m},
 * which cancels them too (curvature per unit input volume). An overflow
 * (σ² · S_E, tr g / σ² with an extreme σ) is never a value: such a point is
 * degenerate with nonfinite = 1. */
static void geom_point_fill(int m, double sigma2, double S_E, double err_E, double pi2,
                            double se_E, double tr_g, double logdet, double H_norm, double cond,
                            geom_point *out) {
  out->S = sigma2 * S_E;
  out->S_err = sigma2 * err_E;
  out->T2 = sigma2 * pi2;
  out->K = m >= 2 ? out->S / ((double)m * (m - 1)) : 0.0;
  out->S_tilde = out->S * tr_g / m;
  out->K_tilde = out->K * tr_g / m;
  out->K_hat = out->K * exp(logdet / m);
  out->tr_g = tr_g;
  out->logdet_g = logdet;
  out->H_norm = H_norm;
  out->area = exp(0.5 * logdet);
  out->S_se = sigma2 * se_E;
  out->cond = cond;
  out->cls = geom_classify(out->S, out->S_err, out->T2);
  out->degenerate = 0;
  out->nonfinite = 0;
  const double checked[] = {out->S, out->S_err, out->T2, out->S_tilde, out->K_hat,
                            out->tr_g, out->logdet_g, out->H_norm, out->area};
  for (size_t k = 0; k < sizeof checked / sizeof checked[0]; k++)
    if (!isfinite(checked[k])) {
      geom_point_set_degenerate(out, cond);
      out->nonfinite = 1;
      break;
    }
}

int geom_point_curvature(int d, int m, const double *jet, const geom_options *opt,
                         rng_stream *mc, geom_point *out) {
  // jet: (C, d) row-major, C = 1 + m + P, P = m(m+1)/2 (layout in geom.h)
  int use_mc, P = m * (m + 1) / 2;
  CS_CHECK(geom_point_check_args(d, m, jet, opt, mc, out, &use_mc));
  CS_CHECK(geom_check_finite((int64_t)geom_jet_rows(m) * d, jet));
  // m > d: J has rank ≤ d < m, never an immersion
  if (m > d) {
    geom_point_set_degenerate(out, INFINITY);
    return CS_OK;
  }

  // scratch: q (m·d) | r (m²) | e (m²) | sv (m) | w (m²·d) | ii (P·d) | mc (3d + 2m)
  size_t n_work = (size_t)m * d + 2 * (size_t)m * m + m + (size_t)m * m * d + (size_t)P * d +
                  3 * (size_t)d + 2 * (size_t)m;
  double *work;
  CS_CHECK(geom_scratch(n_work, &work));
  double *q = work, *r = q + (size_t)m * d, *e = r + (size_t)m * m, *sv = e + (size_t)m * m;
  double *w = sv + m, *ii = w + (size_t)m * m * d, *mc_work = ii + (size_t)P * d;

  // pass 1: J = Q R, E = R⁻¹ and the degeneracy test on cond(R)
  int degenerate;
  double cond;
  CS_CHECK(geom_tangent_frame(d, m, jet, q, r, e, sv, &cond, &degenerate));
  if (degenerate) {
    geom_point_set_degenerate(out, cond);
    return CS_OK;
  }

  // pass 2: orthonormal frame E = R⁻¹ (above) and the second fundamental form in it
  double pi2 = 0.0;
  geom_second_fundamental_form(d, m, jet, q, e, w, ii, &pi2);

  // pass 3: Euclidean scalar curvature, exact or Monte Carlo over 2-frames
  double S_E = 0.0, se_E = 0.0;
  if (use_mc)
    geom_scalar_curvature_mc(d, m, ii, opt->mc_frames, mc, mc_work, &S_E, &se_E);
  else
    S_E = geom_scalar_curvature_exact(d, m, ii);

  // pass 3b: a-priori rounding error. The computed tangent plane is tilted
  // by an angle of order eps·cond(R), which leaks that fraction of the
  // tangential second derivatives T into II; to first order
  //   δS ≈ m(m−1)·2·|δII|·|II|,  |δII| ≈ eps·cond·|T|,
  // i.e. S_err = c·eps·cond·√(Σ|II|²·Σ|T|²) with c calibrated against a
  // 50-digit reference on trained models (docs/NUMERICS.md).
  double err_E = GEOM_ERR_FACTOR * DBL_EPSILON * cond * sqrt(geom_ii_norm2(d, m, ii) * pi2);

  // pass 4: mean-curvature norm; pass 5: the metric
  double H_norm = geom_mean_curvature_norm(d, m, ii, mc_work);
  double sigma2 = opt->sigma * opt->sigma, tr_g, logdet;
  geom_metric(d, m, jet, r, sigma2, &tr_g, &logdet);

  // pass 6: Fisher scaling, K, K̃, K̂, the class
  geom_point_fill(m, sigma2, S_E, err_E, pi2, se_E, tr_g, logdet, H_norm, cond, out);
  return CS_OK;
}

// ----------------------------------------------------------------------------
// public: sectional curvature of one plane

int geom_sectional_curvature(int d, int m, const double *jet, double sigma, const double *p,
                             const double *r, double *K_out) {
  // jet: (C, d); p, r: (m) tangent vectors in input coordinates
  // K(p, r) = σ² (⟨II(p,p), II(r,r)⟩ − |II(p,r)|²) / (|Jp|²|Jr|² − ⟨Jp,Jr⟩²)
  // with II(X, Y) = P⊥ Σ_ab X_a Y_b H_ab: the Gauss equation for the
  // Euclidean metric, times σ² for g = JᵀJ/σ² (numerator and denominator in
  // g carry 1/σ² and 1/σ⁴). Degenerate J: *K_out = NaN.
  if (!jet || !p || !r || !K_out)
    return cs_error(CS_ERR_INPUT, "geom_sectional_curvature: NULL argument");
  if (d < 1 || m < 2)
    return cs_error(CS_ERR_INPUT,
                    "geom_sectional_curvature: need d >= 1, m >= 2 (got d = %d, m = %d)", d, m);
  if (!(sigma > 0.0) || !isfinite(sigma))
    return cs_error(CS_ERR_INPUT, "geom_sectional_curvature: sigma must be positive, got %g",
                    sigma);
  CS_CHECK(geom_check_finite((int64_t)geom_jet_rows(m) * d, jet));
  CS_CHECK(geom_check_finite(m, p));
  CS_CHECK(geom_check_finite(m, r));
  *K_out = NAN;
  if (m > d) return CS_OK;

  // scratch: q (m·d) | R, E (2m²) | sv (m) | hpp, hrr, hpr, jp, jr (5d)
  double *work;
  CS_CHECK(geom_scratch((size_t)m * d + 2 * (size_t)m * m + m + 5 * (size_t)d, &work));
  double *q = work, *rr = q + (size_t)m * d, *ee = rr + (size_t)m * m, *sv = ee + (size_t)m * m;
  double *hpp = sv + m, *hrr = hpp + d, *hpr = hrr + d, *jp = hpr + d, *jr = jp + d;

  // pass 1: tangent basis Q and the degeneracy test
  int degenerate;
  double cond;
  CS_CHECK(geom_tangent_frame(d, m, jet, q, rr, ee, sv, &cond, &degenerate));
  if (degenerate) return CS_OK;

  // pass 2: pushed-forward vectors Jp, Jr and the area² of their parallelogram
  memset(jp, 0, sizeof(double) * 2 * (size_t)d);
  for (int a = 0; a < m; a++) {
    const double *ja = jet + (size_t)(1 + a) * d;
    for (int i = 0; i < d; i++) {
      jp[i] += p[a] * ja[i];
      jr[i] += r[a] * ja[i];
    }
  }
  double pp = geom_dot(d, jp, jp), rr2 = geom_dot(d, jr, jr), pr = geom_dot(d, jp, jr);
  double den = pp * rr2 - pr * pr;
  if (!(den > 1e-20 * pp * rr2))
    return cs_error(CS_ERR_INPUT, "geom_sectional_curvature: p and r do not span a plane");

  // pass 3: H(p,p), H(r,r), H(p,r) over the packed pairs, then P⊥
  geom_bilinear(d, m, jet + (size_t)(1 + m) * d, p, r, hpp, hrr, hpr);
  geom_project_normal(d, m, q, hpp);
  geom_project_normal(d, m, q, hrr);
  geom_project_normal(d, m, q, hpr);

  // pass 4: Gauss equation, Fisher-scaled
  double num = geom_dot(d, hpp, hrr) - geom_dot(d, hpr, hpr);
  *K_out = sigma * sigma * num / den;
  return CS_OK;
}

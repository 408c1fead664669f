/* test_geom.c — the curvature engine against analytic geometry.
 *
 * Every expectation here is independent of the engine's own code path:
 * textbook curvature of analytic surfaces (sphere, cylinder, saddle, torus,
 * round m-spheres), exact scaling laws, a second route to S through the
 * sectional-curvature function on a Cholesky frame built in this file,
 * Monte Carlo against the exact value, and hand-computed statistics. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/error.h"
#include "curvsweep/geom.h"
#include "curvsweep/la.h"
#include "curvsweep/rng.h"

#define MAX_M 8
#define MAX_D 16
#define MAX_ROWS (1 + MAX_M + MAX_M * (MAX_M + 1) / 2)

/* |got − want| ≤ tol, with both values printed on failure. */
static void check_close(double got, double want, double tol, const char *what) {
  if (!(fabs(got - want) <= tol)) {
    print_error("%s: got %.17g, want %.17g (|diff| %.3g > tol %.3g)\n", what, got, want,
                fabs(got - want), tol);
    fail();
  }
}

static void check_rel(double got, double want, double rtol, const char *what) {
  check_close(got, want, rtol * fabs(want), what);
}

/* The statistics of n points (geom_stats_compute, m = 2, no box points). */
static geom_stats stats_of(int n, const geom_point *pts) {
  geom_stats st;
  assert_ok(geom_stats_compute(n, pts, 0, NULL, 0.0, 2, &st));
  return st;
}

/* A jet of standard normal entries: rows × d values from its own stream. */
static void random_jet(int d, int m, uint64_t seed, double *jet) {
  rng_stream s = rng_stream_make(seed, "test_geom", m, "jet");
  for (int i = 0; i < geom_jet_rows(m) * d; i++) jet[i] = rng_normal(&s);
}

static geom_point point_of(int d, int m, const double *jet, double sigma) {
  geom_options opt = geom_options_default();
  opt.sigma = sigma;
  geom_point pt;
  assert_ok(geom_point_curvature(d, m, jet, &opt, NULL, &pt));
  return pt;
}

// ----------------------------------------------------------------------------
// layout

static void test_jet_layout(void **state) {
  (void)state;
  assert_int_equal(geom_jet_rows(1), 3);
  assert_int_equal(geom_jet_rows(2), 6);
  assert_int_equal(geom_jet_rows(3), 10);
  // pairs packed row by row: (0,0),(0,1),(0,2),(1,1),(1,2),(2,2)
  int m = 3, expect = 0;
  for (int a = 0; a < m; a++)
    for (int b = a; b < m; b++) {
      assert_int_equal(geom_pair_index(m, a, b), expect);
      assert_int_equal(geom_pair_index(m, b, a), expect);
      expect++;
    }
  assert_int_equal(geom_pair_index(4, 3, 3), 9);
  assert_int_equal(geom_pair_index(3, 0, 3), -1);
}

// ----------------------------------------------------------------------------
// analytic surfaces

static void test_sphere(void **state) {
  (void)state;
  const double radii[] = {0.3, 1.0, 2.5, 40.0};
  const double sigmas[] = {1.0, 0.5, 3.0};
  const double uv[][2] = {{0.7, 0.3}, {1.5707963, 2.0}, {2.9, -1.0}, {0.05, 5.0}};
  for (int ir = 0; ir < 4; ir++)
    for (int is = 0; is < 3; is++)
      for (int ip = 0; ip < 4; ip++) {
        double r = radii[ir], sg = sigmas[is], u = uv[ip][0], v = uv[ip][1], jet[18], K_exact;
        assert_ok(geom_surface_jet(GEOM_SURFACE_SPHERE, r, 0, u, v, jet, &K_exact));
        check_rel(K_exact, 1.0 / (r * r), 1e-15, "sphere K_exact");
        geom_point pt = point_of(3, 2, jet, sg);
        assert_int_equal(pt.degenerate, 0);
        // Gaussian curvature of g = JᵀJ/σ²: σ²/r²
        check_rel(pt.K, sg * sg / (r * r), 1e-10, "sphere K");
        check_rel(pt.S, 2.0 * sg * sg / (r * r), 1e-10, "sphere S");
        assert_true(pt.S_se == 0.0);
        // g = diag(r², r² sin²u)/σ²: √det g = r² sin u/σ², tr g = r²(1 + sin²u)/σ²
        double su = sin(u);
        check_rel(pt.area, r * r * su / (sg * sg), 1e-12, "sphere area");
        check_rel(pt.logdet_g, log(r * r * r * r * su * su / pow(sg, 4)), 1e-12,
                  "sphere logdet");
        check_rel(pt.K_tilde, (1.0 + su * su) / 2.0, 1e-10, "sphere K_tilde");
        check_rel(pt.S_tilde, 1.0 + su * su, 1e-10, "sphere S_tilde");
        // every normal curvature is 1/r: |Σ_a II_aa|/m = 1/r
        check_rel(pt.H_norm, 1.0 / r, 1e-10, "sphere H_norm");
      }
}

static void test_cylinder(void **state) {
  (void)state;
  const double radii[] = {0.2, 1.5, 7.0};
  const double uv[][2] = {{0.4, 2.0}, {3.0, -1.0}, {-2.2, 0.0}};
  for (int ir = 0; ir < 3; ir++)
    for (int ip = 0; ip < 3; ip++) {
      double r = radii[ir], jet[18], K_exact;
      assert_ok(geom_surface_jet(GEOM_SURFACE_CYLINDER, r, 0, uv[ip][0], uv[ip][1], jet, &K_exact));
      assert_true(K_exact == 0.0);
      geom_point pt = point_of(3, 2, jet, 1.0);
      assert_int_equal(pt.degenerate, 0);
      // intrinsically flat; the largest curvature term is 1/r², so 1e-12 absolute
      // is far below anything a wrong formula would give
      check_close(pt.K, 0.0, 1e-12, "cylinder K");
      // principal curvatures 1/r and 0: mean-curvature norm 1/(2r)
      check_rel(pt.H_norm, 0.5 / r, 1e-10, "cylinder H_norm");
      check_rel(pt.area, r, 1e-12, "cylinder area");
    }
}

static void test_saddle(void **state) {
  (void)state;
  double jet[18], K_exact;
  assert_ok(geom_surface_jet(GEOM_SURFACE_SADDLE, 0, 0, 0.0, 0.0, jet, &K_exact));
  assert_true(K_exact == -1.0);
  geom_point pt = point_of(3, 2, jet, 1.0);
  check_rel(pt.K, -1.0, 1e-10, "saddle K at origin");
  // at the origin the principal curvatures are ±1: H = 0
  check_close(pt.H_norm, 0.0, 1e-12, "saddle H_norm at origin");
  const double uv[][2] = {{0.5, -0.3}, {2.0, 1.0}, {-0.1, 0.7}};
  for (int ip = 0; ip < 3; ip++) {
    double u = uv[ip][0], v = uv[ip][1];
    assert_ok(geom_surface_jet(GEOM_SURFACE_SADDLE, 0, 0, u, v, jet, NULL));
    double w = 1.0 + u * u + v * v;
    check_rel(point_of(3, 2, jet, 1.0).K, -1.0 / (w * w), 1e-10, "saddle K");
  }
}

static void test_torus(void **state) {
  (void)state;
  const double rR[][2] = {{1.0, 3.0}, {0.5, 2.0}, {0.2, 0.25}};
  const double vs[] = {0.0, 0.9, 2.0, M_PI, 4.0, -0.4};
  for (int it = 0; it < 3; it++)
    for (int iv = 0; iv < 6; iv++) {
      double r = rR[it][0], R = rR[it][1], v = vs[iv], u = 0.37 * iv - 1.0, jet[18], K_exact;
      assert_ok(geom_surface_jet(GEOM_SURFACE_TORUS, r, R, u, v, jet, &K_exact));
      double want = cos(v) / (r * (R + r * cos(v)));
      check_rel(K_exact, want, 1e-15, "torus K_exact");
      check_rel(point_of(3, 2, jet, 1.0).K, want, 1e-10, "torus K");
      // area element r (R + r cos v)
      check_rel(point_of(3, 2, jet, 1.0).area, r * (R + r * cos(v)), 1e-12, "torus area");
    }
  // outer equator positive, inner equator negative
  double jet[18];
  geom_surface_jet(GEOM_SURFACE_TORUS, 1.0, 3.0, 0.0, 0.0, jet, NULL);
  assert_true(point_of(3, 2, jet, 1.0).K > 0.0);
  geom_surface_jet(GEOM_SURFACE_TORUS, 1.0, 3.0, 0.0, M_PI, jet, NULL);
  assert_true(point_of(3, 2, jet, 1.0).K < 0.0);
}

static void test_hypersphere(void **state) {
  (void)state;
  // the 3-sphere (m = 3) and 4-sphere (m = 4) as graphs: S = m(m−1)σ²/r²
  const double radii[] = {0.5, 1.0, 3.0};
  const double sigmas[] = {1.0, 0.25};
  for (int m = 3; m <= 4; m++)
    for (int ir = 0; ir < 3; ir++)
      for (int is = 0; is < 2; is++) {
        double r = radii[ir], sg = sigmas[is], x[4], jet[MAX_ROWS * 5];
        for (int a = 0; a < m; a++) x[a] = r * (0.2 - 0.15 * a);
        assert_ok(geom_hypersphere_jet(m, r, x, jet));
        geom_point pt = point_of(m + 1, m, jet, sg);
        assert_int_equal(pt.degenerate, 0);
        check_rel(pt.S, m * (m - 1) * sg * sg / (r * r), 1e-10, "hypersphere S");
        check_rel(pt.K, sg * sg / (r * r), 1e-10, "hypersphere K");
        check_rel(pt.H_norm, 1.0 / r, 1e-10, "hypersphere H_norm");
      }
}

/* A flat image in curved coordinates: μ(x) = A φ(x) + b with A (d×m) linear
 * and φ: R^m → R^m nonlinear. The image is an open piece of an m-plane, so
 * every curvature is 0, yet H_ab = A ∂_ab φ is large and purely tangential:
 * the engine must project it away completely (the docs/MODELS.md affine regime).
 * φ_c(x) = exp(0.5 x_c) + x_c x_{c+1} + sin(x_{c+2}) (indices mod m). */
static void flat_jet(int d, int m, double amp, uint64_t seed, const double *x, double *jet) {
  double A[MAX_D * MAX_M], phi[MAX_ROWS * MAX_M] = {0};  // phi: (C, m), jet layout
  rng_stream s = rng_stream_make(seed, "test_geom", m, "flat");
  for (int i = 0; i < d * m; i++) A[i] = amp * rng_normal(&s);
  for (int c = 0; c < m; c++) {
    int c1 = (c + 1) % m, c2 = (c + 2) % m;
    double ex = exp(0.5 * x[c]);
    phi[c] = ex + x[c] * x[c1] + sin(x[c2]);
    double grad[MAX_M] = {0}, hess[MAX_M][MAX_M] = {{0}};
    grad[c] += 0.5 * ex + x[c1];
    grad[c1] += x[c];
    grad[c2] += cos(x[c2]);
    hess[c][c] += 0.25 * ex;
    hess[c][c1] += 1.0;
    hess[c1][c] += 1.0;
    hess[c2][c2] += -sin(x[c2]);
    for (int a = 0; a < m; a++) phi[(1 + a) * m + c] = grad[a];
    for (int a = 0; a < m; a++)
      for (int b = a; b < m; b++) phi[(1 + m + geom_pair_index(m, a, b)) * m + c] = hess[a][b];
  }
  // jet row k = A · (phi row k) (+ b = 1 on the value row)
  for (int k = 0; k < geom_jet_rows(m); k++)
    for (int i = 0; i < d; i++) {
      double v = k == 0 ? 1.0 : 0.0;
      for (int c = 0; c < m; c++) v += A[i * m + c] * phi[k * m + c];
      jet[k * d + i] = v;
    }
}

static void test_flat_image(void **state) {
  (void)state;
  const double amps[] = {1.0, 1e3, 1e-3};
  for (int m = 2; m <= 5; m++)
    for (int ia = 0; ia < 3; ia++) {
      int d = MAX_D;
      double x[MAX_M], jet[MAX_ROWS * MAX_D];
      for (int a = 0; a < m; a++) x[a] = 0.3 * a - 0.4;
      flat_jet(d, m, amps[ia], 3 + m, x, jet);
      geom_point pt = point_of(d, m, jet, 1.0);
      assert_int_equal(pt.degenerate, 0);
      // curvature scale the tangential H would fake if it leaked:
      // |H|²/|J|⁴ (sum over entries); flat means far below it
      double h2 = 0.0, j2 = 0.0;
      int C = geom_jet_rows(m);
      for (int i = (1 + m) * d; i < C * d; i++) h2 += jet[i] * jet[i];
      for (int i = d; i < (1 + m) * d; i++) j2 += jet[i] * jet[i];
      double scale = h2 / (j2 * j2);
      check_close(pt.S, 0.0, 1e-12 * scale, "S of a flat image");
      check_close(pt.H_norm, 0.0, 1e-12 * sqrt(h2) / j2, "H of a flat image");
      check_close(pt.K_tilde, 0.0, 1e-12 * scale * j2, "K_tilde of a flat image");
    }
}

// ----------------------------------------------------------------------------
// a second route to S: sectional curvatures on an independently built frame

/* Orthonormal frame of g_E = JᵀJ by Cholesky: JᵀJ = L Lᵀ, R = Lᵀ, E = R⁻¹ =
 * L⁻ᵀ, so column a of E is row a of L⁻¹ (forward substitution).
 * jet: (C, d); e_cols: (m, m) out, e_cols[a*m + c] = E_ca. */
static void cholesky_frame(int d, int m, const double *jet, double *e_cols) {
  double G[MAX_M * MAX_M], L[MAX_M * MAX_M] = {0}, Li[MAX_M * MAX_M] = {0};
  for (int a = 0; a < m; a++)
    for (int b = 0; b < m; b++) {
      double s = 0.0;
      for (int i = 0; i < d; i++) s += jet[(1 + a) * d + i] * jet[(1 + b) * d + i];
      G[a * m + b] = s;
    }
  for (int j = 0; j < m; j++) {
    double s = G[j * m + j];
    for (int k = 0; k < j; k++) s -= L[j * m + k] * L[j * m + k];
    L[j * m + j] = sqrt(s);
    for (int i = j + 1; i < m; i++) {
      double t = G[i * m + j];
      for (int k = 0; k < j; k++) t -= L[i * m + k] * L[j * m + k];
      L[i * m + j] = t / L[j * m + j];
    }
  }
  for (int col = 0; col < m; col++)  // solve L y = e_col
    for (int i = 0; i < m; i++) {
      double t = i == col ? 1.0 : 0.0;
      for (int k = 0; k < i; k++) t -= L[i * m + k] * Li[k * m + col];
      Li[i * m + col] = t / L[i * m + i];
    }
  for (int a = 0; a < m; a++)
    for (int c = 0; c < m; c++) e_cols[a * m + c] = Li[a * m + c];
}

static void test_sectional_sum_is_scalar(void **state) {
  (void)state;
  const double sigmas[] = {1.0, 0.7};
  for (int m = 2; m <= 6; m++)
    for (int is = 0; is < 2; is++) {
      int d = MAX_D;
      double jet[MAX_ROWS * MAX_D], E[MAX_M * MAX_M], sg = sigmas[is];
      random_jet(d, m, 11 + m, jet);
      cholesky_frame(d, m, jet, E);
      // the columns of E are g_E-orthonormal; scaling them by σ makes them
      // g-orthonormal, but K(p, r) is invariant to scaling p and r anyway
      double sum = 0.0, mag = 0.0;
      for (int a = 0; a < m; a++)
        for (int b = a + 1; b < m; b++) {
          double K;
          assert_ok(geom_sectional_curvature(d, m, jet, sg, E + a * m, E + b * m, &K));
          sum += 2.0 * K;
          mag += 2.0 * fabs(K);
        }
      geom_point pt = point_of(d, m, jet, sg);
      assert_int_equal(pt.degenerate, 0);
      check_close(pt.S, sum, 1e-10 * mag, "S vs sum of sectional curvatures");
      check_close(pt.K, sum / (m * (m - 1)), 1e-10 * mag, "K vs mean sectional curvature");
    }
}

static void test_sectional_on_sphere(void **state) {
  (void)state;
  // constant curvature: every plane, in any (non-orthonormal) basis, σ²/r²
  double r = 1.7, x[3] = {0.3, -0.5, 0.2}, jet[10 * 4];
  assert_ok(geom_hypersphere_jet(3, r, x, jet));
  const double planes[][6] = {{1, 0.3, 0, 0.2, 1, -0.5}, {1, 0, 0, 0, 0, 1}, {2, 1, 1, 1, 2, 3}};
  for (int i = 0; i < 3; i++) {
    double K;
    assert_ok(geom_sectional_curvature(4, 3, jet, 0.5, planes[i], planes[i] + 3, &K));
    check_rel(K, 0.25 / (r * r), 1e-10, "3-sphere sectional curvature");
  }
  // the torus at the outer equator: the plane is the whole tangent space
  double tj[18], K_exact, K, p[2] = {1.0, 0.4}, q[2] = {-0.3, 2.0};
  geom_surface_jet(GEOM_SURFACE_TORUS, 1.0, 3.0, 0.5, 0.3, tj, &K_exact);
  assert_ok(geom_sectional_curvature(3, 2, tj, 1.0, p, q, &K));
  check_rel(K, K_exact, 1e-10, "torus sectional = Gaussian curvature");
  // parallel vectors span no plane
  double p2[2] = {2.0, 0.8};
  assert_int_equal(geom_sectional_curvature(3, 2, tj, 1.0, p, p2, &K), CS_ERR_INPUT);
}

// ----------------------------------------------------------------------------
// scaling laws

static void test_rescaling(void **state) {
  (void)state;
  for (int m = 2; m <= 3; m++) {
    int d = MAX_D, C = geom_jet_rows(m);
    double jet[MAX_ROWS * MAX_D], scaled[MAX_ROWS * MAX_D];
    random_jet(d, m, 5, jet);
    geom_point base = point_of(d, m, jet, 1.0);
    assert_int_equal(base.degenerate, 0);
    assert_true(fabs(base.K) > 1e-3);
    const double cs[] = {7.3, 0.01};
    for (int ic = 0; ic < 2; ic++) {
      double c = cs[ic];
      // μ → cμ: every jet row scales by c
      for (int i = 0; i < C * d; i++) scaled[i] = c * jet[i];
      geom_point pt = point_of(d, m, scaled, 1.0);
      check_rel(pt.K, base.K / (c * c), 1e-10, "K under mu -> c mu");
      check_rel(pt.S, base.S / (c * c), 1e-10, "S under mu -> c mu");
      check_rel(pt.K_tilde, base.K_tilde, 1e-10, "K_tilde under mu -> c mu");
      check_rel(pt.S_tilde, base.S_tilde, 1e-10, "S_tilde under mu -> c mu");
      check_close(pt.logdet_g, base.logdet_g + 2.0 * m * log(c), 1e-10,
                  "logdet under mu -> c mu");
      check_rel(pt.H_norm, base.H_norm / c, 1e-10, "H_norm under mu -> c mu");
    }
    const double sigmas[] = {2.5, 0.1};
    for (int is = 0; is < 2; is++) {
      double sg = sigmas[is];
      geom_point pt = point_of(d, m, jet, sg);
      check_rel(pt.K, base.K * sg * sg, 1e-12, "K under sigma");
      check_rel(pt.K_tilde, base.K_tilde, 1e-12, "K_tilde under sigma");
      check_close(pt.logdet_g, base.logdet_g - m * log(sg * sg), 1e-12, "logdet under sigma");
      check_rel(pt.area, base.area / pow(sg, m), 1e-12, "area under sigma");
      // H_norm is Euclidean, independent of σ
      check_rel(pt.H_norm, base.H_norm, 1e-14, "H_norm under sigma");
    }
  }
}

// ----------------------------------------------------------------------------
// Monte Carlo over random 2-frames

static void test_monte_carlo(void **state) {
  (void)state;
  int d = MAX_D;
  for (int m = 4; m <= 8; m++) {
    double jet[MAX_ROWS * MAX_D];
    random_jet(d, m, 100 + m, jet);
    geom_options exact = geom_options_default();
    geom_options mc = exact;
    mc.exact_dim_max = 2;
    mc.mc_frames = 4000;
    geom_point pe, pm;
    assert_ok(geom_point_curvature(d, m, jet, &exact, NULL, &pe));
    rng_stream frames = rng_stream_make(9, "test_geom", m, "frames");
    assert_ok(geom_point_curvature(d, m, jet, &mc, &frames, &pm));
    assert_true(pe.S_se == 0.0);
    assert_true(pm.S_se > 0.0);
    if (!(fabs(pm.S - pe.S) <= 3.0 * pm.S_se)) {
      print_error("m = %d: MC S = %g ± %g, exact S = %g\n", m, pm.S, pm.S_se, pe.S);
      fail();
    }
    // the non-curvature fields do not depend on the estimator
    check_rel(pm.logdet_g, pe.logdet_g, 1e-14, "MC logdet");
    check_rel(pm.H_norm, pe.H_norm, 1e-14, "MC H_norm");
    // MC needs a stream
    assert_int_equal(geom_point_curvature(d, m, jet, &mc, NULL, &pm), CS_ERR_INPUT);
  }
  // calibration of S_se: the spread of R independent replicate estimates
  // (independent streams) must match the reported standard error. With
  // R = 40 the sample sd has a relative error of ~1/√78 ≈ 11%, so [0.65, 1.5]
  // is a > 3-sigma band; the replicate mean must be within 3 sd/√R of exact.
  for (int m = 5; m <= 8; m += 3) {
    enum { R = 40 };
    double jet[MAX_ROWS * MAX_D], est[R], se_mean = 0.0, mean = 0.0, ss = 0.0;
    random_jet(d, m, 200 + m, jet);
    geom_options mc = geom_options_default();
    mc.exact_dim_max = 2;
    mc.mc_frames = 500;
    geom_point pe, pm;
    pe = point_of(d, m, jet, 1.0);
    for (int k = 0; k < R; k++) {
      rng_stream frames = rng_stream_make(77, "test_geom:replicate", k, "frames");
      assert_ok(geom_point_curvature(d, m, jet, &mc, &frames, &pm));
      est[k] = pm.S;
      se_mean += pm.S_se / R;
      mean += pm.S / R;
    }
    for (int k = 0; k < R; k++) ss += (est[k] - mean) * (est[k] - mean);
    double sd = sqrt(ss / (R - 1)), ratio = se_mean / sd;
    if (!(ratio > 0.65 && ratio < 1.5) || !(fabs(mean - pe.S) <= 3.0 * sd / sqrt(R))) {
      print_error("m = %d: reported se %g, replicate sd %g, replicate mean %g, exact %g\n", m,
                  se_mean, sd, mean, pe.S);
      fail();
    }
  }
  // constant curvature: every frame gives exactly 1/r², so the MC estimate is
  // exact and its standard error vanishes (to rounding)
  double r = 0.8, x[5] = {0.1, -0.2, 0.05, 0.3, -0.1}, jet[21 * 6];
  assert_ok(geom_hypersphere_jet(5, r, x, jet));
  geom_options mc = geom_options_default();
  mc.exact_dim_max = 4;
  mc.sigma = 2.0;
  rng_stream frames = rng_stream_make(1, "test_geom", 5, "sphere");
  geom_point pt;
  assert_ok(geom_point_curvature(6, 5, jet, &mc, &frames, &pt));
  check_rel(pt.S, 20.0 * 4.0 / (r * r), 1e-10, "MC on the 5-sphere");
  check_close(pt.S_se, 0.0, 1e-10 * pt.S, "MC se on the 5-sphere");
}

// ----------------------------------------------------------------------------
// degenerate points and errors

static void test_degenerate(void **state) {
  (void)state;
  int d = 5, m = 2;
  double jet[6 * 5];
  random_jet(d, m, 3, jet);
  // exactly rank-deficient: ∂μ/∂x_1 = 2 ∂μ/∂x_0
  for (int i = 0; i < d; i++) jet[2 * d + i] = 2.0 * jet[d + i];
  geom_point pt = point_of(d, m, jet, 1.0);
  assert_int_equal(pt.degenerate, 1);
  assert_true(isnan(pt.K));
  double K, p[2] = {1, 0}, q[2] = {0, 1};
  assert_ok(geom_sectional_curvature(d, m, jet, 1.0, p, q, &K));
  assert_true(isnan(K));
  // J = [e0, e0 + t e1]: cond(J) ≈ 2/t; t = 1e-11 → degenerate, t = 1e-8 → not
  memset(jet, 0, sizeof jet);
  jet[d + 0] = 1.0;
  jet[2 * d + 0] = 1.0;
  jet[2 * d + 1] = 1e-11;
  assert_int_equal(point_of(d, m, jet, 1.0).degenerate, 1);
  jet[2 * d + 1] = 1e-8;
  pt = point_of(d, m, jet, 1.0);
  assert_int_equal(pt.degenerate, 0);
  check_close(pt.K, 0.0, 1e-12, "flat plane K");  // H = 0: a plane
  // more inputs than outputs can never be an immersion
  double big[10 * 2] = {0};
  assert_int_equal(point_of(2, 3, big, 1.0).degenerate, 1);

  // statistics exclude degenerate points and count them
  geom_point pts[5];
  double sj[18];
  for (int i = 0; i < 3; i++) {
    geom_surface_jet(GEOM_SURFACE_SPHERE, 2.0, 0, 0.5 + 0.4 * i, 0.1 * i, sj, NULL);
    pts[i] = point_of(3, 2, sj, 1.0);
  }
  random_jet(d, m, 3, jet);
  for (int i = 0; i < d; i++) jet[2 * d + i] = -jet[d + i];
  pts[3] = point_of(d, m, jet, 1.0);
  pts[4] = pts[3];
  geom_stats st = stats_of(5, pts);
  assert_int_equal(st.n_points, 5);
  check_rel(st.degenerate_frac, 0.4, 1e-15, "degenerate_frac");
  check_rel(st.K_mean, 0.25, 1e-10, "K_mean over the non-degenerate sphere points");
  check_rel(st.K_median, 0.25, 1e-10, "K_median");
  check_rel(st.K_fracpos, 1.0, 0, "K_fracpos");
  assert_true(isnan(st.intK));

  // every point degenerate: NaN statistics, not a crash
  assert_ok(geom_stats_compute(2, pts + 3, 2, pts + 3, 4.0, 2, &st));
  check_rel(st.degenerate_frac, 1.0, 0, "all degenerate");
  assert_true(isnan(st.K_mean) && isnan(st.K_median) && isnan(st.S_mean) && isnan(st.S_se));
  assert_true(isnan(st.Kt_q95) && isnan(st.logdet_mean) && isnan(st.H_norm_mean));
  check_close(st.intK, 0.0, 0.0, "intK with only degenerate box points");
}

static void test_errors(void **state) {
  (void)state;
  double jet[18];
  geom_surface_jet(GEOM_SURFACE_SPHERE, 1.0, 0, 1.0, 1.0, jet, NULL);
  geom_options opt = geom_options_default();
  geom_point pt;
  opt.sigma = 0.0;
  assert_int_equal(geom_point_curvature(3, 2, jet, &opt, NULL, &pt), CS_ERR_INPUT);
  opt.sigma = 1.0;
  jet[13] = NAN;
  assert_int_equal(geom_point_curvature(3, 2, jet, &opt, NULL, &pt), CS_ERR_NUMERIC);
  assert_true(strlen(cs_error_message()) > 0);
  assert_int_equal(geom_surface_jet(GEOM_SURFACE_TORUS, 2.0, 1.0, 0, 0, jet, NULL), CS_ERR_INPUT);
  assert_int_equal(geom_surface_jet(GEOM_SURFACE_SPHERE, -1.0, 0, 0, 0, jet, NULL), CS_ERR_INPUT);
}

// ----------------------------------------------------------------------------
// statistics

static geom_point fake_point(double K, double K_tilde, double area) {
  // m = 2: S = 2K, S̃ = 2K̃, K̂ = K·√det g = K·area; tr g = 2.5·area, so the
  // anisotropy index log(tr g/2) − log det g/2 = log 1.25 at every point
  return (geom_point){.S = 2 * K, .S_err = 0.0, .K = K, .S_tilde = 2 * K_tilde,
                      .K_tilde = K_tilde, .K_hat = K * area, .tr_g = 2.5 * area,
                      .logdet_g = 2 * log(area), .H_norm = fabs(K), .area = area, .S_se = 0.0,
                      .cls = GEOM_CURVED, .degenerate = 0};
}

static const geom_point DEGENERATE_POINT = {.S = NAN, .K = NAN, .area = NAN,
                                            .cls = GEOM_DEGENERATE, .degenerate = 1};

static void test_stats_hand(void **state) {
  (void)state;
  // K = 3, −1, 4, 1, −5, 9, 2, 6 (sorted: −5 −1 1 2 3 4 6 9), K̃ = −K, plus
  // one degenerate point and one unresolved point (a huge S that must not
  // enter any statistic)
  const double Ks[8] = {3, -1, 4, 1, -5, 9, 2, 6};
  geom_point pts[10];
  for (int i = 0; i < 8; i++) pts[i] = fake_point(Ks[i], -Ks[i], 1.0 + i);
  pts[8] = DEGENERATE_POINT;
  pts[9] = fake_point(1e6, 1e6, 1.0);
  pts[9].cls = GEOM_UNRESOLVED;
  geom_stats st = stats_of(10, pts);
  assert_int_equal(st.n_points, 10);
  check_rel(st.degenerate_frac, 0.1, 1e-15, "degenerate_frac");
  check_rel(st.unresolved_frac, 0.1, 1e-15, "unresolved_frac");
  check_rel(st.curved_frac, 0.8, 1e-15, "curved_frac");
  check_close(st.flat_frac, 0.0, 0.0, "flat_frac");
  // K̂ = K·(1 + i): Σ = 3 − 2 + 12 + 4 − 25 + 54 + 14 + 48 = 108
  check_rel(st.Kh_mean, 108.0 / 8.0, 1e-15, "Kh mean");
  // sorted K̂: −25 −2 3 4 12 14 48 54 → median 8, fraction positive 6/8
  check_rel(st.Kh_median, 8.0, 1e-15, "Kh median");
  check_rel(st.Kh_absmean, 162.0 / 8.0, 1e-15, "Kh mean |K̂|");
  check_rel(st.Kh_fracpos, 0.75, 1e-15, "Kh fraction positive");
  check_rel(st.aniso_median, log(1.25), 1e-14, "median anisotropy index");
  check_rel(st.K_mean, 19.0 / 8.0, 1e-15, "K mean");
  check_rel(st.K_absmean, 31.0 / 8.0, 1e-15, "K mean |K|");
  // type 7: h = 7p; median h = 3.5 → 2 + 0.5·(3 − 2)
  check_rel(st.K_median, 2.5, 1e-15, "K median");
  // q05: h = 0.35 → −5 + 0.35·4; q95: h = 6.65 → 6 + 0.65·3
  check_rel(st.K_q05, -3.6, 1e-14, "K q05");
  check_rel(st.K_q95, 7.95, 1e-14, "K q95");
  check_rel(st.K_fracpos, 0.75, 1e-15, "K fraction positive");
  // S = 2K: mean 19/4; Σ(K − 19/8)² = 127.875 → se = √(4·127.875/7/8)
  check_rel(st.S_mean, 19.0 / 4.0, 1e-15, "S mean");
  check_rel(st.S_se, sqrt(4.0 * 127.875 / 7.0 / 8.0), 1e-14, "S se");
  // K̃ = −K: mirrored order statistics
  check_rel(st.Kt_mean, -19.0 / 8.0, 1e-15, "Kt mean");
  check_rel(st.Kt_median, -2.5, 1e-15, "Kt median");
  check_rel(st.Kt_q05, -7.95, 1e-14, "Kt q05");
  check_rel(st.Kt_q95, 3.6, 1e-14, "Kt q95");
  check_rel(st.Kt_fracpos, 0.25, 1e-15, "Kt fraction positive");
  check_rel(st.Kt_absmean, 31.0 / 8.0, 1e-15, "Kt mean |K|");
  check_rel(st.St_mean, -19.0 / 4.0, 1e-15, "St mean");
  check_rel(st.H_norm_mean, 31.0 / 8.0, 1e-15, "H_norm mean");
  // log det = 2 log(1 + i): mean = 2 log(8!)/8
  check_rel(st.logdet_mean, 2.0 * log(40320.0) / 8.0, 1e-14, "logdet mean");

  // odd count: median is the middle order statistic; q05 with n = 5: h = 0.2
  geom_point five[5];
  const double K5[5] = {10, -2, 0, 7, 1};  // sorted −2 0 1 7 10
  for (int i = 0; i < 5; i++) five[i] = fake_point(K5[i], K5[i], 1.0);
  st = stats_of(5, five);
  check_rel(st.K_median, 1.0, 1e-15, "median of 5");
  check_rel(st.K_q05, -2.0 + 0.2 * 2.0, 1e-14, "q05 of 5");
  check_rel(st.K_q95, 7.0 + 0.8 * 3.0, 1e-14, "q95 of 5");
  check_rel(st.K_fracpos, 0.6, 1e-15, "fracpos of 5 (0 is not positive)");
  check_close(st.degenerate_frac, 0.0, 0.0, "no degenerate");
  assert_true(isnan(st.intK));  // n_box = 0

  // one point: mean is the point, the standard error is unknown
  st = stats_of(1, five);
  check_rel(st.K_mean, 10.0, 0, "single point mean");
  check_rel(st.K_q05, 10.0, 0, "single point q05");
  assert_true(isnan(st.S_se));
}

static void test_stats_monte_carlo_se(void **state) {
  (void)state;
  // equal S, MC errors 0.5 each: sample spread 0, se = √(Σ se²)/n = √0.5/2
  geom_point pts[2] = {fake_point(1, 1, 1), fake_point(1, 1, 1)};
  pts[0].S_se = pts[1].S_se = 0.5;
  geom_stats st = stats_of(2, pts);
  check_rel(st.S_se, sqrt(0.5) / 2.0, 1e-15, "MC-dominated se");
  // spread dominates: S = 2, 10 (s² = 32) with se 0.5: √(32/2) = 4
  pts[1] = fake_point(5, 5, 1);
  pts[1].S_se = 0.5;
  st = stats_of(2, pts);
  check_rel(st.S_se, 4.0, 1e-15, "spread-dominated se");
}

static void test_integrated_curvature(void **state) {
  (void)state;
  // constant K·area on the box; one degenerate box point contributes 0
  geom_point box[5];
  for (int i = 0; i < 4; i++) box[i] = fake_point(0.5, 0.1, 3.0);
  box[4] = DEGENERATE_POINT;
  geom_stats st;
  assert_ok(geom_stats_compute(4, box, 5, box, 4.0, 2, &st));
  check_rel(st.intK, 4.0 * (4.0 / 5.0) * 0.5 * 3.0, 1e-15, "intK constant");
  check_rel(st.intabsK, st.intK, 1e-15, "intabsK of a positive K");
  // ∫|K| dA of a sign-changing K; an unresolved box point is left out of the mean
  geom_point mixed[4] = {fake_point(0.5, 0, 3.0), fake_point(-0.5, 0, 3.0),
                         fake_point(-0.5, 0, 3.0), fake_point(100.0, 0, 3.0)};
  mixed[3].cls = GEOM_UNRESOLVED;
  assert_ok(geom_stats_compute(4, mixed, 4, mixed, 4.0, 2, &st));
  check_rel(st.intK, 4.0 * (-0.5 * 3.0) / 3.0, 1e-15, "intK mixed");
  check_rel(st.intabsK, 4.0 * (1.5 * 3.0) / 3.0, 1e-15, "intabsK mixed");
  // the bound of both: volume · mean(S_err/2 · area) over the used box points
  for (int i = 0; i < 4; i++) mixed[i].S_err = 0.1 * (i + 1);
  assert_ok(geom_stats_compute(4, mixed, 4, mixed, 4.0, 2, &st));
  check_rel(st.intK_err, 4.0 * (0.05 + 0.1 + 0.15) * 3.0 / 3.0, 1e-15, "intK_err");
  // m ≠ 2: no integrated curvature
  assert_ok(geom_stats_compute(4, box, 5, box, 4.0, 3, &st));
  assert_true(isnan(st.intK));

  // Gauss–Bonnet through the engine on a midpoint grid over the parameter
  // box. Torus (χ = 0): K·dA = cos v du dv, whose midpoint sum over a full
  // period vanishes exactly. Sphere: K·dA = sin u du dv on (0,π)×(0,2π); the
  // midpoint sum is 2π·h/sin(h/2)·... = 2π · (π/n)/sin(π/(2n)) (closed form
  // of Σ sin((i+½)h)), which tends to 4π.
  enum { NG = 40 };
  static geom_point grid[NG * NG];
  double jet[18];
  for (int i = 0; i < NG; i++)
    for (int j = 0; j < NG; j++) {
      double u = 2 * M_PI * (i + 0.5) / NG, v = 2 * M_PI * (j + 0.5) / NG;
      geom_surface_jet(GEOM_SURFACE_TORUS, 0.7, 2.0, u, v, jet, NULL);
      grid[i * NG + j] = point_of(3, 2, jet, 1.3);
    }
  assert_ok(geom_stats_compute(NG * NG, grid, NG * NG, grid, 4 * M_PI * M_PI, 2, &st));
  check_close(st.intK, 0.0, 1e-12, "torus Gauss-Bonnet");
  for (int i = 0; i < NG; i++)
    for (int j = 0; j < NG; j++) {
      double u = M_PI * (i + 0.5) / NG, v = 2 * M_PI * (j + 0.5) / NG;
      geom_surface_jet(GEOM_SURFACE_SPHERE, 1.9, 0, u, v, jet, NULL);
      grid[i * NG + j] = point_of(3, 2, jet, 0.4);
    }
  assert_ok(geom_stats_compute(NG * NG, grid, NG * NG, grid, 2 * M_PI * M_PI, 2, &st));
  double h = M_PI / NG;
  check_rel(st.intK, 2 * M_PI * h / sin(h / 2), 1e-12, "sphere Gauss-Bonnet midpoint sum");
  check_rel(st.intK, 4 * M_PI, 1e-3, "sphere Gauss-Bonnet ~ 4 pi");
}

// ----------------------------------------------------------------------------
// the LAPACK wrappers

static void test_lapack_wrappers(void **state) {
  (void)state;
  // A = [[3, 1], [4, 2], [0, 2]] column-major (n = 3, k = 2)
  double a[6] = {3, 4, 0, 1, 2, 2}, q[6], r[4], s[2], ri[4];
  assert_ok(la_qr_thin(3, 2, a, q, r));
  check_close(r[1], 0.0, 0.0, "R lower part");
  // |R_00| = |a_0| = 5; R_00 R_01 = a_0·a_1 = 11; det(AᵀA) = (R_00 R_11)² = 25·9 − 121
  check_rel(fabs(r[0]), 5.0, 1e-15, "R_00");
  check_rel(r[0] * r[2], 11.0, 1e-14, "R_00 R_01");
  check_rel(r[0] * r[0] * r[3] * r[3], 25.0 * 9.0 - 121.0, 1e-14, "det R^2");
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) {  // Q R = A
      double v = 0.0;
      for (int k = 0; k < 2; k++) v += q[i + 3 * k] * r[k + 2 * j];
      check_close(v, a[i + 3 * j], 1e-14, "QR = A");
    }
  // singular values of diag-free [[3, 0], [4, 5]]: AᵀA = [[25, 20], [20, 25]] → 45, 5
  double b[4] = {3, 4, 0, 5};
  assert_ok(la_singular_values(2, b, s));
  check_rel(s[0], sqrt(45.0), 1e-14, "s0");
  check_rel(s[1], sqrt(5.0), 1e-14, "s1");
  double u[4] = {2, 0, 3, 4};  // [[2, 3], [0, 4]]: inverse [[1/2, −3/8], [0, 1/4]]
  assert_ok(la_upper_tri_inverse(2, u, ri));
  check_rel(ri[0], 0.5, 1e-15, "inv 00");
  check_close(ri[1], 0.0, 0.0, "inv 10");
  check_rel(ri[2], -0.375, 1e-15, "inv 01");
  check_rel(ri[3], 0.25, 1e-15, "inv 11");
  assert_int_equal(la_qr_thin(1, 2, a, q, r), CS_ERR_INPUT);
}

/* A flat map with a tiny second coordinate direction: the plane z = 0
 * in R^3 drawn as μ(u, v) = (u + 0.3 v², 1e-9 v + 0.2 u², 0). Rounding in
 * the tangent plane shows as noise in S; S is kept as computed, its error
 * estimate covers it, and the point is classified flat (the error is tiny
 * against the curvature scale Σ|T|²). A curved surface in moderate
 * coordinates is classified curved with an error far below |S|. */
static void test_rounding_classification(void **state) {
  (void)state;
  double u = 0.3, v = -0.2, jet[6 * 3] = {
      u + 0.3 * v * v, 1e-9 * v + 0.2 * u * u, 0,  /* μ */
      1, 0.4 * u, 0,                              /* μ_u */
      0.6 * v, 1e-9, 0,                           /* μ_v */
      0, 0.4, 0,                                  /* μ_uu */
      0, 0, 0,                                    /* μ_uv */
      0.6, 0, 0};                                 /* μ_vv */
  geom_options opt = geom_options_default();
  geom_point p;
  assert_ok(geom_point_curvature(3, 2, jet, &opt, NULL, &p));
  assert_int_equal(p.degenerate, 0);
  assert_int_equal(p.cls, GEOM_FLAT);
  assert_true(fabs(p.S) <= 3.0 * p.S_err);
  assert_true(3.0 * p.S_err <= GEOM_FLAT_REL * p.T2);
  double sphere[18], K;
  assert_ok(geom_surface_jet(GEOM_SURFACE_SPHERE, 2.0, 0, 0.7, 0.3, sphere, &K));
  assert_ok(geom_point_curvature(3, 2, sphere, &opt, NULL, &p));
  assert_int_equal(p.cls, GEOM_CURVED);
  assert_true(fabs(p.K - 0.25) <= 1e-10 * 0.25);
  assert_true(p.S_err > 0.0 && p.S_err < 1e-12 * fabs(p.S));
  /* sphere of radius r at polar angle u: g = diag(r², r² sin²u), so
   * K̂ = K·√det g = sin u, tr g = r²(1 + sin²u), and the anisotropy index is
   * log(AM/GM) = log((1 + sin²u) / (2 sin u)) */
  double su = sin(0.7);
  check_rel(p.K_hat, su, 1e-12, "K_hat on the sphere");
  check_rel(p.tr_g, 4.0 * (1.0 + su * su), 1e-12, "tr g on the sphere");
  check_rel(geom_anisotropy_index(2, p.tr_g, p.logdet_g), log((1.0 + su * su) / (2.0 * su)), 1e-10,
            "anisotropy on the sphere");
}

/* The class rules and the directed-rounding update, on hand-made points. */
static void test_classification_rules(void **state) {
  (void)state;
  assert_int_equal(geom_classify(1.0, 0.3, 1e12), GEOM_CURVED);        /* |S| > 3 S_err */
  assert_int_equal(geom_classify(-1.0, 0.34, 1e12), GEOM_FLAT);        /* 3 S_err ≤ 1e-8 T2 */
  assert_int_equal(geom_classify(-1.0, 0.34, 1e7), GEOM_UNRESOLVED);   /* neither */
  assert_int_equal(geom_classify(0.0, 0.0, 0.0), GEOM_FLAT);           /* a curve: exactly 0 */
  geom_point p = {.S = 1.0, .S_err = 1e-9, .T2 = 1.0, .cls = GEOM_CURVED};
  assert_false(geom_point_doubtful(&p));
  p.S_err = 1e-2; /* curved, but within GEOM_DOUBT_MARGIN of the boundary */
  assert_true(geom_point_doubtful(&p));
  geom_point up = p, down = p;
  up.S = 1.0 + 0.2, down.S = 1.0 - 0.05; /* spread 0.2 → S_err 0.6, unresolved */
  geom_point_add_rounding_spread(&p, &up, &down);
  check_rel(p.S_err, GEOM_SPREAD_FACTOR * 0.2, 1e-12, "S_err from the spread");
  assert_int_equal(p.cls, GEOM_UNRESOLVED);
  geom_point q = {.S = 5.0, .S_err = 1e-3, .T2 = 1e20, .cls = GEOM_CURVED};
  up = q, down = q;
  up.S = 5.0 + 1e-9; /* a smaller spread never lowers the a-priori estimate */
  geom_point_add_rounding_spread(&q, &up, &down);
  check_rel(q.S_err, 1e-3, 0.0, "S_err kept");
  /* an overflowing Fisher scaling is never a value: σ = 1e300 makes
   * S = σ² S_E infinite on the sphere; the point is degenerate, non-finite */
  double sphere[18];
  assert_ok(geom_surface_jet(GEOM_SURFACE_SPHERE, 2.0, 0, 0.7, 0.3, sphere, NULL));
  geom_options big = geom_options_default();
  big.sigma = 1e300;
  geom_point o;
  assert_ok(geom_point_curvature(3, 2, sphere, &big, NULL, &o));
  assert_true(o.degenerate && o.nonfinite && o.cls == GEOM_DEGENERATE);
  big.sigma = 1.0;
  assert_ok(geom_point_curvature(3, 2, sphere, &big, NULL, &o));
  assert_true(!o.degenerate && !o.nonfinite);
  down.degenerate = 1; /* degeneracy flips under rounding: uncertain by |S| */
  geom_point_add_rounding_spread(&q, &up, &down);
  check_rel(q.S_err, 5.0, 0.0, "S_err = |S|");
  assert_int_equal(q.cls, GEOM_FLAT);
}

/* GEOM_STATS_FIELDS names every double of geom_stats exactly once (the
 * archive's /curvature columns and the CSV export iterate it): distinct
 * offsets of doubles that tile the struct after n_points, and distinct names
 * equal to the members they point at (checked for three members by address). */
static void test_stats_field_table(void **state) {
  (void)state;
  size_t first = offsetof(geom_stats, degenerate_frac);
  assert_int_equal(GEOM_STATS_N_FIELDS, (sizeof(geom_stats) - first) / sizeof(double));
  unsigned char seen[sizeof(geom_stats)] = {0};
  for (int i = 0; i < GEOM_STATS_N_FIELDS; i++) {
    size_t off = GEOM_STATS_FIELDS[i].offset;
    assert_true(off >= first && off + sizeof(double) <= sizeof(geom_stats));
    assert_int_equal((off - first) % sizeof(double), 0);
    assert_int_equal(seen[off], 0);
    seen[off] = 1;
    for (int j = 0; j < i; j++) assert_string_not_equal(GEOM_STATS_FIELDS[i].name, GEOM_STATS_FIELDS[j].name);
  }
  geom_stats st;
  const struct {
    const char *name;
    const double *member;
  } probes[] = {{"K_absmean", &st.K_absmean}, {"logdet_mean", &st.logdet_mean}, {"max_attn", &st.max_attn},
                 {"sink_headmax", &st.sink_headmax}};
  for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++) {
    int found = 0;
    for (int i = 0; i < GEOM_STATS_N_FIELDS; i++)
      if (!strcmp(GEOM_STATS_FIELDS[i].name, probes[p].name)) {
        assert_ptr_equal((const char *)&st + GEOM_STATS_FIELDS[i].offset, (const char *)probes[p].member);
        found = 1;
      }
    assert_true(found);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rounding_classification),
      cmocka_unit_test(test_classification_rules),
      cmocka_unit_test(test_jet_layout),
      cmocka_unit_test(test_sphere),
      cmocka_unit_test(test_cylinder),
      cmocka_unit_test(test_saddle),
      cmocka_unit_test(test_torus),
      cmocka_unit_test(test_hypersphere),
      cmocka_unit_test(test_flat_image),
      cmocka_unit_test(test_sectional_sum_is_scalar),
      cmocka_unit_test(test_sectional_on_sphere),
      cmocka_unit_test(test_rescaling),
      cmocka_unit_test(test_monte_carlo),
      cmocka_unit_test(test_degenerate),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_stats_hand),
      cmocka_unit_test(test_stats_monte_carlo_se),
      cmocka_unit_test(test_integrated_curvature),
      cmocka_unit_test(test_lapack_wrappers),
      cmocka_unit_test(test_stats_field_table),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  geom_workspace_release();
  return rc;
}

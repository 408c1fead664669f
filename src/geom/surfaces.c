/* surfaces.c — analytic manifolds with known curvature.
 *
 * Each jet is built from hand-derived exact derivatives of the
 * parametrisation (no finite differences), in the layout of geom.h: row 0
 * the point, rows 1..m the first derivatives, then the packed second
 * derivatives. Feeding these through geom_point_curvature must reproduce the
 * textbook curvature to rounding. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "curvsweep/error.h"
#include "curvsweep/geom.h"

/* Jet of a parametrised surface in R^3.
 * u, v: parameters; jet: (6, 3) out, rows μ, μ_u, μ_v, μ_uu, μ_uv, μ_vv
 * (the m = 2 packing (0,0), (0,1), (1,1)); K_exact: Gaussian curvature. */
int geom_surface_jet(geom_surface s, double radius, double radius2, double u, double v,
                     double *jet, double *K_exact) {
  if (!jet) return cs_error(CS_ERR_INPUT, "geom_surface_jet: NULL jet");
  double *mu = jet, *mu_u = jet + 3, *mu_v = jet + 6;
  double *mu_uu = jet + 9, *mu_uv = jet + 12, *mu_vv = jet + 15;
  double su = sin(u), cu = cos(u), sv = sin(v), cv = cos(v), K;
  memset(jet, 0, sizeof(double) * 18);
  switch (s) {
    case GEOM_SURFACE_SPHERE: {
      // μ = r (sin u cos v, sin u sin v, cos u), u the polar angle; K = 1/r²
      if (!(radius > 0.0)) return cs_error(CS_ERR_INPUT, "sphere: radius must be > 0");
      double r = radius;
      mu[0] = r * su * cv, mu[1] = r * su * sv, mu[2] = r * cu;
      mu_u[0] = r * cu * cv, mu_u[1] = r * cu * sv, mu_u[2] = -r * su;
      mu_v[0] = -r * su * sv, mu_v[1] = r * su * cv, mu_v[2] = 0.0;
      mu_uu[0] = -r * su * cv, mu_uu[1] = -r * su * sv, mu_uu[2] = -r * cu;
      mu_uv[0] = -r * cu * sv, mu_uv[1] = r * cu * cv, mu_uv[2] = 0.0;
      mu_vv[0] = -r * su * cv, mu_vv[1] = -r * su * sv, mu_vv[2] = 0.0;
      K = 1.0 / (r * r);
      break;
    }
    case GEOM_SURFACE_CYLINDER: {
      // μ = (r cos u, r sin u, v); flat: K = 0
      if (!(radius > 0.0)) return cs_error(CS_ERR_INPUT, "cylinder: radius must be > 0");
      double r = radius;
      mu[0] = r * cu, mu[1] = r * su, mu[2] = v;
      mu_u[0] = -r * su, mu_u[1] = r * cu;
      mu_v[2] = 1.0;
      mu_uu[0] = -r * cu, mu_uu[1] = -r * su;
      K = 0.0;
      break;
    }
    case GEOM_SURFACE_SADDLE: {
      // graph z = uv: K = (z_uu z_vv − z_uv²)/(1 + z_u² + z_v²)² = −1/(1 + u² + v²)²
      mu[0] = u, mu[1] = v, mu[2] = u * v;
      mu_u[0] = 1.0, mu_u[2] = v;
      mu_v[1] = 1.0, mu_v[2] = u;
      mu_uv[2] = 1.0;
      double w = 1.0 + u * u + v * v;
      K = -1.0 / (w * w);
      break;
    }
    case GEOM_SURFACE_TORUS: {
      // μ = ((R + r cos v) cos u, (R + r cos v) sin u, r sin v);
      // K = cos v / (r (R + r cos v))
      double r = radius, R = radius2;
      if (!(r > 0.0) || !(R > r))
        return cs_error(CS_ERR_INPUT, "torus: need centre radius %g > tube radius %g > 0", R, r);
      double rho = R + r * cv;
      mu[0] = rho * cu, mu[1] = rho * su, mu[2] = r * sv;
      mu_u[0] = -rho * su, mu_u[1] = rho * cu, mu_u[2] = 0.0;
      mu_v[0] = -r * sv * cu, mu_v[1] = -r * sv * su, mu_v[2] = r * cv;
      mu_uu[0] = -rho * cu, mu_uu[1] = -rho * su, mu_uu[2] = 0.0;
      mu_uv[0] = r * sv * su, mu_uv[1] = -r * sv * cu, mu_uv[2] = 0.0;
      mu_vv[0] = -r * cv * cu, mu_vv[1] = -r * cv * su, mu_vv[2] = -r * sv;
      K = cv / (r * rho);
      break;
    }
    default:
      return cs_error(CS_ERR_INPUT, "geom_surface_jet: unknown surface %d", (int)s);
  }
  if (K_exact) *K_exact = K;
  return CS_OK;
}

/* The m-sphere of radius r as a graph over the ball |x| < r.
 * x: (m); jet: (C, m + 1) out.
 * μ = (x, f), f = √(r² − |x|²):
 *   ∂_a μ      = (e_a, −x_a/f)
 *   ∂_a∂_b μ   = (0,   −δ_ab/f − x_a x_b/f³) */
int geom_hypersphere_jet(int m, double radius, const double *x, double *jet) {
  if (m < 1 || !x || !jet || !(radius > 0.0))
    return cs_error(CS_ERR_INPUT, "geom_hypersphere_jet: need m >= 1, radius > 0");
  int d = m + 1;
  double x2 = 0.0;
  for (int a = 0; a < m; a++) x2 += x[a] * x[a];
  if (!(x2 < radius * radius))
    return cs_error(CS_ERR_INPUT, "geom_hypersphere_jet: |x| must be < radius");
  double f = sqrt(radius * radius - x2);
  memset(jet, 0, sizeof(double) * (size_t)geom_jet_rows(m) * d);
  for (int a = 0; a < m; a++) jet[a] = x[a];
  jet[m] = f;
  for (int a = 0; a < m; a++) {
    double *row = jet + (size_t)(1 + a) * d;
    row[a] = 1.0;
    row[m] = -x[a] / f;
  }
  for (int a = 0; a < m; a++)
    for (int b = a; b < m; b++) {
      double *row = jet + (size_t)(1 + m + geom_pair_index(m, a, b)) * d;
      row[m] = -(a == b ? 1.0 : 0.0) / f - x[a] * x[b] / (f * f * f);
    }
  return CS_OK;
}

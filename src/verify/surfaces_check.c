/* surfaces_check.c — the analytic-surface rows of `curvsweep verify`: known
 * manifolds (geom's surfaces.c builds their exact jets) fed through the
 * curvature engine must reproduce the textbook curvature to rounding
 * (docs/NUMERICS.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "curvsweep/error.h"
#include "curvsweep/geom.h"
#include "curvsweep/rng.h"
#include "curvsweep/verify.h"

typedef enum { VERIFY_SURFACE_K, VERIFY_HYPERSPHERE_S } verify_kind;

typedef struct {
  verify_kind kind;
  geom_surface surface;  /* VERIFY_SURFACE_K */
  double radius, radius2, u, v, sigma;
  int m, exact_dim_max;  /* VERIFY_HYPERSPHERE_S: m, and MC when m > exact_dim_max */
} verify_case;

static const verify_case verify_cases[] = {
    {VERIFY_SURFACE_K, GEOM_SURFACE_SPHERE, 1.0, 0.0, 0.7, 0.3, 1.0, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_SPHERE, 2.5, 0.0, 2.0, 4.0, 1.0, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_SPHERE, 0.1, 0.0, 1.2, -0.5, 1.0, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_SPHERE, 2.5, 0.0, 2.0, 4.0, 0.5, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_CYLINDER, 1.5, 0.0, 0.4, 2.0, 1.0, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_CYLINDER, 0.2, 0.0, 3.0, -1.0, 1.0, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_SADDLE, 0.0, 0.0, 0.0, 0.0, 1.0, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_SADDLE, 0.0, 0.0, 0.5, -0.3, 1.0, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_TORUS, 1.0, 3.0, 0.3, 0.0, 1.0, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_TORUS, 1.0, 3.0, 1.1, 1.0, 1.0, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_TORUS, 1.0, 3.0, -2.0, 2.5, 1.0, 2, 8},
    {VERIFY_SURFACE_K, GEOM_SURFACE_TORUS, 0.5, 2.0, 0.0, M_PI, 1.0, 2, 8},
    {VERIFY_HYPERSPHERE_S, 0, 1.5, 0.0, 0.0, 0.0, 1.0, 3, 8},
    {VERIFY_HYPERSPHERE_S, 0, 1.5, 0.0, 0.0, 0.0, 1.0, 5, 2},
};

static const char *verify_surface_name(geom_surface s) {
  switch (s) {
    case GEOM_SURFACE_SPHERE: return "sphere";
    case GEOM_SURFACE_CYLINDER: return "cylinder";
    case GEOM_SURFACE_SADDLE: return "saddle z=xy";
    case GEOM_SURFACE_TORUS: return "torus";
  }
  return "?";
}

/* Tolerance: relative 1e-10, floored at an absolute 1e-12 (which is all
 * that applies where the expected value is 0). */
static void verify_fill(verify_check *row, double value, double expected) {
  row->value = value;
  row->expected = expected;
  row->tol = fmax(1e-10 * fabs(expected), 1e-12);
  row->pass = fabs(value - expected) <= row->tol;  // NaN fails
}

/* One check: build the jet, run the engine, compare.
 * jet: (C, d) scratch large enough for either kind (m ≤ 5 here). */
static int verify_run(const verify_case *c, int index, verify_check *row) {
  double jet[21 * 6], K_exact;
  geom_options opt = geom_options_default();
  opt.sigma = c->sigma;
  opt.exact_dim_max = c->exact_dim_max;
  geom_point pt;
  if (c->kind == VERIFY_SURFACE_K) {
    CS_CHECK(geom_surface_jet(c->surface, c->radius, c->radius2, c->u, c->v, jet, &K_exact));
    CS_CHECK(geom_point_curvature(3, 2, jet, &opt, NULL, &pt));
    // Fisher metric: K = σ² · K_Euclidean
    verify_fill(row, pt.K, c->sigma * c->sigma * K_exact);
    char shape[48] = "", noise[24] = "";
    if (c->surface == GEOM_SURFACE_TORUS)
      snprintf(shape, sizeof shape, " r=%g R=%g", c->radius, c->radius2);
    else if (c->surface != GEOM_SURFACE_SADDLE)
      snprintf(shape, sizeof shape, " r=%g", c->radius);
    if (c->sigma != 1.0) snprintf(noise, sizeof noise, ", sigma=%g", c->sigma);
    snprintf(row->check, sizeof row->check, "%s%s (u=%g, v=%.4g)%s: K",
             verify_surface_name(c->surface), shape, c->u, c->v, noise);
  } else {
    // a point off the pole: x_a = 0.3 r (−1)^a / (a + 1)
    double x[8];
    for (int a = 0; a < c->m; a++) x[a] = 0.3 * c->radius * (a % 2 ? -1.0 : 1.0) / (a + 1);
    CS_CHECK(geom_hypersphere_jet(c->m, c->radius, x, jet));
    rng_stream mc = rng_stream_make(0, "verify", index, "frames");
    CS_CHECK(geom_point_curvature(c->m + 1, c->m, jet, &opt, &mc, &pt));
    verify_fill(row, pt.S, c->sigma * c->sigma * c->m * (c->m - 1) / (c->radius * c->radius));
    snprintf(row->check, sizeof row->check, "%d-sphere r=%g: S = m(m-1)/r^2%s", c->m, c->radius,
             c->m > c->exact_dim_max ? " (Monte Carlo)" : "");
  }
  if (pt.degenerate) row->pass = 0;
  return CS_OK;
}

int verify_surfaces(verify_check *rows, int max_rows, int *n_rows) {
  if (!n_rows) return cs_error(CS_ERR_INPUT, "verify_surfaces: NULL n_rows");
  int n = (int)(sizeof verify_cases / sizeof verify_cases[0]);
  *n_rows = n;
  if (!rows) return CS_OK;
  if (max_rows < n)
    return cs_error(CS_ERR_INPUT, "verify_surfaces: table has %d rows, room for %d", n,
                    max_rows);
  for (int i = 0; i < n; i++) {
    memset(&rows[i], 0, sizeof rows[i]);
    CS_CHECK(verify_run(&verify_cases[i], i, &rows[i]));
  }
  return CS_OK;
}

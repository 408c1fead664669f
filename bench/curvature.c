/* bench/curvature.c — cost of exact curvature at every prefix, per point,
 * against one plain forward pass of the same model (width 16 and 128,
 * depth 8, m = 2, gated). Not a test: prints microseconds and ratios.
 *
 *   OPENBLAS_NUM_THREADS=1 build/bench_curvature
 * "calibrated" is what a sweep runs (cell_curvature_points): jets and
 * geometry, plus the directed-rounding recomputation of doubtful and
 * check points that calibrates S_err (docs/NUMERICS.md).
 * Targets: ≤ 15 forward passes at width 16, ≤ 10 at width 128.
 * The self family (issue 12): the same at width 16 for self-attention
 * gated at g1 with 2 heads (T = 3 tokens per point); its forward pass is
 * its own value pass, so the count is relative to that model. */
#include "curvsweep/clock.h"
#include "curvsweep/error.h"
#include "curvsweep/geom.h"
#include "curvsweep/model.h"
#include "curvsweep/rng.h"
#include "curvsweep/cell.h"

#include <stdio.h>
#include <stdlib.h>

#define NPTS 256

static int bench(int width, cs_family family, int reps) {
  cs_config c = config_default();
  c.arch = ARCH_GATED, c.depth = 8, c.width = width, c.input_dim = 2, c.residual = 1;
  if (family == FAMILY_SELF) c.family = FAMILY_SELF, c.gate = GATE_G1, c.heads = 2;
  cs_model *M;
  cs_acts *V, *J;
  CS_CHECK(model_create(&c, NULL, &M));
  CS_CHECK(model_acts_create(M, NPTS, 0, &V));
  CS_CHECK(model_acts_create(M, NPTS, 2, &J));
  double x[NPTS * 2];
  rng_stream s = rng_stream_make(1, "bench", 0, "x");
  for (int i = 0; i < NPTS * 2; i++) x[i] = 2 * rng_uniform(&s) - 1;
  geom_options opt = geom_options_default();
  geom_point pt;
  int C = model_acts_jet_rows(J);
  double t_fwd = 1e30, t_jet = 1e30, t_geom = 1e30, t_cal = 1e30;
  geom_point *all = calloc((size_t)c.depth * NPTS, sizeof *all);
  if (!all) return CS_ERR_NOMEM;
  for (int r = 0; r < reps; r++) {
    double t0 = cs_monotonic_seconds();
    CS_CHECK(model_forward(M, V, NPTS, x));
    double t1 = cs_monotonic_seconds();
    CS_CHECK(model_forward(M, J, NPTS, x));
    double t2 = cs_monotonic_seconds();
    for (int l = 1; l <= c.depth; l++)
      for (int p = 0; p < NPTS; p++)
        CS_CHECK(geom_point_curvature(width, 2, model_layer_output(J, l) + (long)p * C * width, &opt,
                                      NULL, &pt));
    double t3 = cs_monotonic_seconds();
    CS_CHECK(cell_curvature_points(M, J, &c, NPTS, x, "bench", all));
    double t4 = cs_monotonic_seconds();
    if (t4 - t3 < t_cal) t_cal = t4 - t3;
    if (t1 - t0 < t_fwd) t_fwd = t1 - t0;
    if (t2 - t1 < t_jet) t_jet = t2 - t1;
    if (t3 - t2 < t_geom) t_geom = t3 - t2;
  }
  double fwd = 1e6 * t_fwd / NPTS, jet = 1e6 * t_jet / NPTS, geo = 1e6 * t_geom / NPTS;
  double cal = 1e6 * t_cal / NPTS;
  int recomputed = 0;
  for (int i = 0; i < c.depth * NPTS; i++) recomputed += geom_point_doubtful(&all[i]);
  printf("%s width %3d depth %d m=2: forward %.3f us/pt; jet forward %.3f us/pt; geom %.3f us/pt/prefix; "
         "all prefixes %.3f us/pt = %.1f forward passes; calibrated (sweep path) %.3f us/pt = "
         "%.1f forward passes (target <= %d); still doubtful after it: %d of %d\n",
         family == FAMILY_SELF ? "self-attention g1 2 heads" : "memory gated", width, c.depth,
         fwd, jet, geo / c.depth, jet + geo, (jet + geo) / fwd, cal, cal / fwd,
         width <= 16 ? 15 : 10, recomputed, c.depth * NPTS);
  free(all);
  model_acts_free(V), model_acts_free(J), model_free(M);
  return CS_OK;
}

int main(void) {
  if (bench(16, FAMILY_MEMORY, 20) || bench(128, FAMILY_MEMORY, 5) ||
      bench(16, FAMILY_SELF, 20)) {
    fprintf(stderr, "bench: %s\n", cs_error_message());
    return 1;
  }
  return 0;
}

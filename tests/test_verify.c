/* test_verify.c — the theory checks of docs/NUMERICS.md on real models: affine
 * regime flat to rounding (ungated, depths 1..8, m = 2, 3), curved when
 * gated, a gated point of positive curvature, and scale behaviour. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/error.h"
#include "curvsweep/verify.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void test_ungated_affine_regime_is_flat(void **state) {
  (void)state;
  for (int m = 2; m <= 3; m++)
    for (int depth = 1; depth <= 8; depth++)
      for (uint64_t seed = 0; seed < 3; seed++) {
        verify_affine v;
        assert_ok(verify_affine_stats(ARCH_UNGATED, m, depth, seed, &v));
        if (!(v.max_ratio <= VERIFY_FLAT_BOUND))
          fail_msg("m=%d depth=%d seed=%d: |S|/|Pi|^2 = %.3e", m, depth, (int)seed, v.max_ratio);
      }
}

/* Saturated softmax: derivatives far below the values' rounding, still flat. */
static void test_flat_where_softmax_saturates(void **state) {
  (void)state;
  double mk, ml;
  assert_ok(verify_saturated_flatness(20.0, &mk, &ml));
  assert_true(ml < -40.0); /* det g < e^-40: deep in saturation */
  if (!(mk <= 1e-8)) fail_msg("saturated ungated skeleton: max |K~| = %.3e", mk);
}

static void test_gated_affine_skeleton_is_curved(void **state) {
  (void)state;
  const cs_arch archs[2] = {ARCH_GATED, ARCH_GATED_HEADWISE};
  for (int g = 0; g < 2; g++)
    for (int m = 2; m <= 3; m++)
      for (int depth = 1; depth <= 2; depth++) {
        verify_affine v;
        assert_ok(verify_affine_stats(archs[g], m, depth, 7, &v));
        if (!(v.max_ratio >= VERIFY_CURVED_BOUND))
          fail_msg("%s m=%d depth=%d: |S|/|Pi|^2 = %.3e", config_arch_name(archs[g]), m, depth,
                   v.max_ratio);
      }
}

static void test_positive_curvature_needs_the_gate(void **state) {
  (void)state;
  int64_t seed;
  double x[2], kg, ku;
  assert_ok(verify_positive_gated_point(&seed, x, &kg, &ku));
  assert_true(kg > 0.05);
  assert_true(fabs(ku) <= 1e-8);
  assert_true(fabs(x[0]) <= 1 && fabs(x[1]) <= 1);
}

static void test_rescaling_changes_K_not_K_tilde(void **state) {
  (void)state;
  double dk, dkt;
  assert_ok(verify_scaling(3.0, &dk, &dkt));
  assert_true(dk <= 1e-9);
  assert_true(dkt <= 1e-9);
  assert_ok(verify_scaling(0.1, &dk, &dkt));
  assert_true(dk <= 1e-9);
  assert_true(dkt <= 1e-9);
}

/* Self family, W_q = W_k = 0 (uniform attention): the ungated CLS map is
 * affine (second derivatives exactly 0) at several seeds and depths; g3/g4
 * gates are inert (jets equal ungated's); a g2 gate is not (curved, and
 * jets differ), nor are random W_q, W_k. */
static void test_self_uniform_attention(void **state) {
  (void)state;
  double h2, dev, r;
  for (uint64_t seed = 1; seed <= 3; seed++)
    for (int depth = 1; depth <= 3; depth++) {
      assert_ok(verify_self_uniform(ARCH_UNGATED, GATE_G1, depth, 2, (int)(seed % 2), seed,
                                           &h2, &dev));
      assert_true(h2 == 0.0 && dev == 0.0);
      assert_ok(verify_self_uniform(ARCH_GATED_HEADWISE, GATE_G4, depth, 2, 1, seed, &h2,
                                           &dev));
      assert_true(h2 == 0.0 && dev == 0.0);
    }
  assert_ok(verify_self_uniform(ARCH_GATED, GATE_G2, 2, 2, 0, 5, &h2, &dev));
  assert_true(h2 > 1e-6 && dev > 1e-6);
  assert_ok(verify_self_curved(ARCH_GATED, GATE_G2, 1, 1, 5, &r));
  assert_true(r >= VERIFY_CURVED_BOUND);
  assert_ok(verify_self_curved(ARCH_UNGATED, GATE_G1, 1, 0, 5, &r));
  assert_true(r >= VERIFY_CURVED_BOUND);
}

static void test_verify_table_all_pass(void **state) {
  (void)state;
  verify_table t = {0};
  assert_ok(verify_all(&t));
  assert_true(t.n >= 40);
  for (int i = 0; i < t.n; i++)
    if (!t.rows[i].pass) fail_msg("verify row failed: %s = %.6e", t.rows[i].check, t.rows[i].value);
  verify_table_free(&t);
}

// the analytic-surface rows: known manifolds through the engine
static void test_surface_rows_pass(void **state) {
  (void)state;
  int n = 0;
  assert_ok(verify_surfaces(NULL, 0, &n));
  assert_true(n >= 10);
  verify_check rows[64];
  assert_true(n <= 64);
  int n2 = 0;
  assert_int_equal(verify_surfaces(rows, n - 1, &n2), CS_ERR_INPUT);
  assert_ok(verify_surfaces(rows, 64, &n2));
  assert_int_equal(n2, n);
  for (int i = 0; i < n; i++) {
    if (!rows[i].pass)
      print_error("%s: %.17g vs %.17g (tol %g)\n", rows[i].check, rows[i].value,
                  rows[i].expected, rows[i].tol);
    assert_true(rows[i].pass);
    assert_true(strlen(rows[i].check) > 0);
    assert_true(fabs(rows[i].value - rows[i].expected) <= rows[i].tol);
  }
  // row 0 is the unit sphere: K = 1 exactly
  assert_true(rows[0].expected == 1.0);
}

/* The lm family's identities (src/verify/lm_check.c): an ungated model
 * ignores gate bitwise, at depths 1 and 3, with and without the MLP; a
 * zero gate (σ = 1/2) is the ungated model with the gated tensor halved,
 * for every position and both gated archs, at depth 1 and 3. */
static void test_lm_identities(void **state) {
  (void)state;
  for (int depth = 1; depth <= 3; depth += 2)
    for (int mlp = 0; mlp <= 1; mlp++) {
      double dev = -1;
      assert_ok(verify_lm_ungated_gate_free(depth, mlp, &dev));
      assert_true(dev == 0.0);
      cs_arch archs[] = {ARCH_GATED, ARCH_GATED_HEADWISE};
      for (int a = 0; a < 2; a++)
        for (int g = GATE_G1; g <= GATE_G5; g++) {
          double rel = -1;
          assert_ok(verify_lm_half_gate(archs[a], (cs_gate_pos)g, depth, mlp, &rel));
          if (!(rel >= 0 && rel <= 1e-12))
            fail_msg("%s g%d depth %d mlp %d: %g", config_arch_name(archs[a]), g + 1, depth, mlp, rel);
        }
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ungated_affine_regime_is_flat),
      cmocka_unit_test(test_flat_where_softmax_saturates),
      cmocka_unit_test(test_gated_affine_skeleton_is_curved),
      cmocka_unit_test(test_positive_curvature_needs_the_gate),
      cmocka_unit_test(test_rescaling_changes_K_not_K_tilde),
      cmocka_unit_test(test_surface_rows_pass),
      cmocka_unit_test(test_self_uniform_attention),
      cmocka_unit_test(test_lm_identities),
      cmocka_unit_test(test_verify_table_all_pass),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_jets.c — the jet forward pass (exact J and H of every prefix h_l(x))
 * against finite differences of the plain value forward pass, for every
 * arch, residual and norm setting, several depths and input dimensions, in
 * both families (the self family at every gate position); ungated
 * self-attention is the same at every gate value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/rng.h"
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPTS 3

/* h_l(x) for one point by the value forward pass: out d values. */
static void value_at(const cs_model *M, cs_acts *V, int l, const double *x, double *out) {
  assert_ok(model_forward(M, V, 1, x));
  memcpy(out, model_layer_output(V, l), sizeof(double) * model_width(M));
}

/* Second difference of h_l along (e_a, e_b) with step e:
 * [h(x+e a+e b) − h(x+e a−e b) − h(x−e a+e b) + h(x−e a−e b)] / 4e². */
static void second_difference(const cs_model *M, cs_acts *V, int l, const double *x, int m, int a,
                              int b, double e, double *out) {
  int d = model_width(M);
  double xs[8], buf[256];
  const double sa[4] = {1, 1, -1, -1}, sb[4] = {1, -1, 1, -1}, w[4] = {1, -1, -1, 1};
  memset(out, 0, sizeof(double) * d);
  for (int k = 0; k < 4; k++) {
    memcpy(xs, x, sizeof(double) * m);
    xs[a] += sa[k] * e;
    xs[b] += sb[k] * e;
    value_at(M, V, l, xs, buf);
    for (int i = 0; i < d; i++) out[i] += w[k] * buf[i] / (4 * e * e);
  }
}

static void check_model_of(cs_family family, cs_gate_pos gate, cs_arch arch, int residual,
                           cs_norm norm, int heads, int depth, int m) {
  cs_config c = config_default();
  c.family = family, c.gate = gate;
  c.arch = arch, c.residual = residual, c.norm = norm, c.heads = heads;
  c.width = 6, c.slots = 3, c.depth = depth, c.input_dim = m, c.seed = 5;
  cs_model *M;
  cs_acts *J, *V;
  assert_ok(model_create(&c, NULL, &M));
  assert_ok(model_acts_create(M, NPTS, 2, &J));
  assert_ok(model_acts_create(M, 1, 0, &V));
  rng_stream s = rng_stream_make(9, "test", depth, "jets");
  double *p = model_params(M);
  for (int64_t i = 0; i < model_param_count(M); i++) p[i] += 0.2 * rng_normal(&s);
  double x[NPTS * 8];
  for (int i = 0; i < NPTS * m; i++) x[i] = 2 * rng_uniform(&s) - 1;
  assert_ok(model_forward(M, J, NPTS, x));
  int C = model_acts_jet_rows(J), d = model_width(M);
  assert_int_equal(C, 1 + m + m * (m + 1) / 2);
  double fp[256], fm[256], d1[256], d2[256];
  for (int l = 1; l <= depth; l++)
    for (int pt = 0; pt < NPTS; pt++) {
      const double *jet = model_layer_output(J, l) + (int64_t)pt * C * d;
      const double *x0 = x + pt * m;
      /* value row equals the value forward pass (same arithmetic) */
      value_at(M, V, l, x0, fp);
      for (int i = 0; i < d; i++) assert_true(fabs(jet[i] - fp[i]) <= 1e-13 * (1 + fabs(fp[i])));
      /* first derivatives: central differences, step 1e-5 */
      double err = 0, ref = 0;
      for (int a = 0; a < m; a++) {
        double xs[8];
        memcpy(xs, x0, sizeof(double) * m);
        xs[a] += 1e-5;
        value_at(M, V, l, xs, fp);
        xs[a] -= 2e-5;
        value_at(M, V, l, xs, fm);
        for (int i = 0; i < d; i++) {
          double fd = (fp[i] - fm[i]) / 2e-5, e = jet[(1 + a) * d + i] - fd;
          err += e * e, ref += fd * fd;
        }
      }
      if (!(sqrt(err / ref) <= 1e-6))
        fail_msg("J: %s %s %s res=%d norm=%d H=%d L=%d m=%d prefix %d: rel err %.3e",
                 config_family_name(family), config_arch_name(arch), config_gate_name(gate),
                 residual, norm, heads, depth, m, l, sqrt(err / ref));
      /* second derivatives: Richardson-extrapolated second differences */
      err = 0, ref = 0;
      int q = 0;
      for (int a = 0; a < m; a++)
        for (int b = a; b < m; b++, q++) {
          second_difference(M, V, l, x0, m, a, b, 1e-3, d1);
          second_difference(M, V, l, x0, m, a, b, 5e-4, d2);
          for (int i = 0; i < d; i++) {
            double fd = (4 * d2[i] - d1[i]) / 3, e = jet[(1 + m + q) * d + i] - fd;
            err += e * e, ref += fd * fd;
          }
        }
      if (!(sqrt(err / ref) <= 1e-6))
        fail_msg("H: %s %s %s res=%d norm=%d H=%d L=%d m=%d prefix %d: rel err %.3e",
                 config_family_name(family), config_arch_name(arch), config_gate_name(gate),
                 residual, norm, heads, depth, m, l, sqrt(err / ref));
    }
  model_acts_free(J);
  model_acts_free(V);
  model_free(M);
}

static void check_model(cs_arch arch, int residual, cs_norm norm, int heads, int depth, int m) {
  check_model_of(FAMILY_MEMORY, GATE_G1, arch, residual, norm, heads, depth, m);
}

/* Self family: softmax over tokens, the products with V and the gates at
 * every position carry exact first and second derivatives. */
static void test_self_jets_match_finite_differences(void **state) {
  (void)state;
  for (int arch = 0; arch < ARCH_MLP; arch++)
    for (int gate = 0; gate < (arch == ARCH_UNGATED ? 1 : GATE_COUNT); gate++)
      for (int residual = 0; residual <= 1; residual++)
        for (int norm = 0; norm <= 1; norm++) {
          check_model_of(FAMILY_SELF, (cs_gate_pos)gate, (cs_arch)arch, residual, (cs_norm)norm,
                         2, 2, 2);
          if (residual == norm)
            check_model_of(FAMILY_SELF, (cs_gate_pos)gate, (cs_arch)arch, residual,
                           (cs_norm)norm, 3, 1, 3);
        }
}

/* arch = ungated ignores gate: every jet row of every prefix is bitwise
 * the same for g1..g5, and so is the value forward's output. */
static void test_self_ungated_ignores_gate(void **state) {
  (void)state;
  double *ref = NULL;
  size_t bytes = 0;
  for (int gate = 0; gate < GATE_COUNT; gate++) {
    cs_config c = config_default();
    c.family = FAMILY_SELF, c.arch = ARCH_UNGATED, c.gate = (cs_gate_pos)gate;
    c.width = 8, c.heads = 2, c.depth = 3, c.residual = 1, c.norm = NORM_PRE, c.seed = 4;
    cs_model *M;
    cs_acts *J;
    assert_ok(model_create(&c, NULL, &M));
    assert_ok(model_acts_create(M, NPTS, 2, &J));
    double x[NPTS * 2] = {0.3, -0.7, 0.9, 0.1, -0.2, -0.5};
    assert_ok(model_forward(M, J, NPTS, x));
    size_t per = (size_t)NPTS * model_acts_jet_rows(J) * model_width(M);
    if (!ref) {
      bytes = sizeof(double) * per * 3;
      ref = malloc(bytes);
      for (int l = 1; l <= 3; l++) memcpy(ref + (l - 1) * per, model_layer_output(J, l), bytes / 3);
    } else {
      for (int l = 1; l <= 3; l++)
        assert_memory_equal(ref + (l - 1) * per, model_layer_output(J, l), bytes / 3);
    }
    model_acts_free(J);
    model_free(M);
  }
  free(ref);
}

static void test_jets_match_finite_differences(void **state) {
  (void)state;
  for (int arch = 0; arch < ARCH_COUNT; arch++)
    for (int residual = 0; residual <= 1; residual++)
      for (int norm = 0; norm <= 1; norm++) {
        check_model((cs_arch)arch, residual, (cs_norm)norm, 1, 1, 2);
        check_model((cs_arch)arch, residual, (cs_norm)norm, 2, 3, 2);
        check_model((cs_arch)arch, residual, (cs_norm)norm, 3, 2, 3);
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_jets_match_finite_differences),
      cmocka_unit_test(test_self_jets_match_finite_differences),
      cmocka_unit_test(test_self_ungated_ignores_gate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

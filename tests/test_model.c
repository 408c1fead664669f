/* test_model.c — model backward vs central finite differences, for every
 * arch, residual and norm setting and several head counts; initialisation
 * streams shared across archs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPTS 5

static cs_config small_config(cs_arch arch, int residual, cs_norm norm, int heads) {
  cs_config c = config_default();
  c.arch = arch;
  c.residual = residual;
  c.norm = norm;
  c.heads = heads;
  c.width = 4;
  c.slots = 3;
  c.depth = 2;
  c.input_dim = 2;
  c.seed = 7;
  return c;
}

static double loss_at(cs_model *M, cs_acts *A, const double *x, const int *y) {
  assert_int_equal(model_forward(M, A, NPTS, x), CS_OK);
  return model_loss(A, NPTS, y, NULL);
}

/* Perturb every parameter to make biases and gains generic (zeros/ones
 * at init would hide errors that multiply by them). */
static void randomise_params(cs_model *M, uint64_t seed) {
  rng_stream s = rng_stream_make(seed, "test", 0, "params");
  double *p = model_params(M);
  for (int64_t i = 0; i < model_param_count(M); i++) p[i] += 0.3 * rng_normal(&s);
}

static void check_gradients(cs_arch arch, int residual, cs_norm norm, int heads) {
  cs_config cfg = small_config(arch, residual, norm, heads);
  cs_model *M;
  cs_acts *A;
  assert_int_equal(model_create(&cfg, NULL, &M), CS_OK);
  assert_int_equal(model_acts_create(M, NPTS, 0, &A), CS_OK);
  randomise_params(M, 11);
  double x[NPTS * 2];
  int y[NPTS];
  rng_stream s = rng_stream_make(3, "test", 0, "x");
  for (int i = 0; i < NPTS * 2; i++) x[i] = 2 * rng_uniform(&s) - 1;
  for (int i = 0; i < NPTS; i++) y[i] = (int)rng_below(&s, 2);

  int64_t np = model_param_count(M);
  double *p = model_params(M), *g = model_grads(M);
  memset(g, 0, sizeof(double) * np);
  loss_at(M, A, x, y);
  assert_int_equal(model_backward(M, A, NPTS, x), CS_OK);
  double *analytic = malloc(sizeof(double) * np);
  memcpy(analytic, g, sizeof(double) * np);

  /* per tensor: ‖g − fd‖ ≤ 1e-6 ‖fd‖ (and every tensor's gradient non-trivial) */
  for (int t = 0; t < model_tensor_count(M); t++) {
    cs_tensor view;
    model_tensor(M, t, &view, NULL);
    int64_t off = view.v - p, cnt = (int64_t)view.rows * view.cols;
    double err2 = 0.0, ref2 = 0.0;
    for (int64_t i = off; i < off + cnt; i++) {
      const double h = 1e-5;
      double keep = p[i];
      p[i] = keep + h;
      double lp = loss_at(M, A, x, y);
      p[i] = keep - h;
      double lm = loss_at(M, A, x, y);
      p[i] = keep;
      double fd = (lp - lm) / (2 * h);
      err2 += (analytic[i] - fd) * (analytic[i] - fd);
      ref2 += fd * fd;
    }
    double rel = sqrt(err2 / ref2);
    if (!(rel <= 1e-6))
      fail_msg("%s residual=%d norm=%d heads=%d tensor %s: relative error %.3e", config_arch_name(arch),
               residual, norm, heads, view.name, rel);
    assert_true(ref2 > 1e-20);
  }
  free(analytic);
  model_acts_free(A);
  model_free(M);
}

static void test_backward_matches_finite_differences(void **state) {
  (void)state;
  for (int arch = 0; arch < ARCH_COUNT; arch++)
    for (int residual = 0; residual <= 1; residual++)
      for (int norm = 0; norm <= 1; norm++)
        for (int heads = 1; heads <= 2; heads++)
          check_gradients((cs_arch)arch, residual, (cs_norm)norm, heads);
}

/* Tensors that two archs share are drawn from the same (seed, name) stream. */
static void test_shared_tensors_identical_across_archs(void **state) {
  (void)state;
  cs_model *models[ARCH_COUNT];
  for (int a = 0; a < ARCH_COUNT; a++) {
    cs_config c = small_config((cs_arch)a, 0, NORM_NONE, 2);
    c.width = 8;
    c.depth = 3;
    assert_int_equal(model_create(&c, NULL, &models[a]), CS_OK);
  }
  int shared = 0;
  for (int a = 0; a < ARCH_COUNT; a++)
    for (int t = 0; t < model_tensor_count(models[a]); t++) {
      cs_tensor ta;
      model_tensor(models[a], t, &ta, NULL);
      for (int b = a + 1; b < ARCH_COUNT; b++) {
        cs_tensor tb;
        if (model_find_tensor(models[b], ta.name, &tb) != CS_OK) continue;
        /* gated's W_g (d × d) and gated-headwise's (H × d) are different tensors */
        if (ta.rows != tb.rows || ta.cols != tb.cols) {
          assert_true(strstr(ta.name, "/Wg") || strstr(ta.name, "/bg"));
          continue;
        }
        assert_memory_equal(ta.v, tb.v, sizeof(double) * ta.rows * ta.cols);
        shared++;
      }
    }
  /* ungated/gated/headwise share embed (2), 3 × (Wq, K, U, Wo, bo), readout (2)
   * pairwise: 3 pairs × 19 tensors; mlp shares embed + readout with all 3: 3 × 4 */
  assert_int_equal(shared, 3 * 19 + 3 * 4);
  /* a different seed gives different tensors */
  cs_config c = small_config(ARCH_GATED, 0, NORM_NONE, 2);
  c.width = 8;
  c.depth = 3;
  c.seed = 8;
  cs_model *other;
  assert_int_equal(model_create(&c, NULL, &other), CS_OK);
  cs_tensor t1, t2;
  assert_int_equal(model_find_tensor(models[ARCH_GATED], "layer1/Wq", &t1), CS_OK);
  assert_int_equal(model_find_tensor(other, "layer1/Wq", &t2), CS_OK);
  assert_true(memcmp(t1.v, t2.v, sizeof(double) * 64) != 0);
  model_free(other);
  for (int a = 0; a < ARCH_COUNT; a++) model_free(models[a]);
}

/* Parameter counts against the formula of docs/MODELS.md. */
static void test_parameter_counts(void **state) {
  (void)state;
  int d = 8, m = 2, n = 3, H = 2, L = 3;
  int64_t base = d * m + d + L * (d * d + 2 * n * d + d * d + d) + 2 * d + 2;
  int64_t expect[ARCH_COUNT] = {base, base + L * (d * d + d), base + L * (H * d + H),
                                d * m + d + L * 2 * (d * d + d) + 2 * d + 2};
  for (int a = 0; a < ARCH_COUNT; a++) {
    cs_config c = small_config((cs_arch)a, 0, NORM_NONE, H);
    c.width = d;
    c.depth = L;
    cs_model *M;
    assert_int_equal(model_create(&c, NULL, &M), CS_OK);
    assert_int_equal(model_param_count(M), expect[a]);
    model_free(M);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backward_matches_finite_differences),
      cmocka_unit_test(test_shared_tensors_identical_across_archs),
      cmocka_unit_test(test_parameter_counts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

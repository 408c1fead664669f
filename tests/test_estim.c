/* test_estim.c — the mha family and the estimator of the teacher task
 * (docs/MODELS.md, "Estimation"): backward against central finite
 * differences at every gate position, gate shape and head dimension; the
 * teacher's stated scales; nested token sets; the Voronoi loss's
 * invariances (heads permuted, a head split in two) and its value on a
 * perturbed head by hand; the estimator on an exact-H cell (the kept
 * training loss at most the teacher's own, converged, deterministic) and
 * the misspecified flag. The loss against an independent rebuild in numpy
 * is tests/estim_check.py (sh_estimation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "curvsweep/error.h"
#include "curvsweep/estim.h"
#include "curvsweep/model.h"
#include "curvsweep/rng.h"
#include "curvsweep/tasks.h"
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSETS 4

static cs_config mha_config(cs_arch arch, cs_gate_pos gate, int width, int heads) {
  cs_config c = config_default();
  c.family = FAMILY_MHA, c.task = TASK_TEACHER;
  c.arch = arch, c.gate = gate, c.width = width, c.heads = heads;
  c.input_dim = 3, c.tokens = 4, c.depth = 1, c.seed = 11;
  c.teacher_heads = heads;
  return c;
}

static double mse_at(cs_model *M, cs_acts *A, const double *x, const double *y) {
  double loss;
  assert_ok(model_forward(M, A, NSETS, x));
  assert_ok(model_loss_mse(A, NSETS, y, &loss));
  return loss;
}

/* Every parameter's gradient against (L(θ + h) − L(θ − h)) / 2h. Parameters
 * are drawn at scale 0.8 (gates away from saturation, scores not uniform). */
static void check_gradients(cs_config c) {
  cs_model *M;
  cs_acts *A;
  assert_ok(model_create(&c, NULL, &M));
  assert_ok(model_acts_create(M, NSETS, 0, &A));
  int64_t P = model_param_count(M);
  double *th = model_params(M), *g = model_grads(M);
  rng_stream s = rng_stream_make(5, "test_estim", c.gate * 16 + c.arch, "params");
  for (int64_t k = 0; k < P; k++) th[k] = 0.8 * rng_normal(&s);
  int w = c.tokens * c.input_dim;
  double x[NSETS * 64], y[NSETS];
  assert_ok(task_token_sets(3, SPLIT_TRAIN, 0, NSETS, c.tokens, c.input_dim, 1, x));
  for (int i = 0; i < NSETS; i++) y[i] = rng_normal(&s);
  (void)w;
  memset(g, 0, sizeof(double) * (size_t)P);
  mse_at(M, A, x, y);
  assert_ok(model_backward(M, A, NSETS, x));
  double *an = malloc(sizeof(double) * (size_t)P);
  memcpy(an, g, sizeof(double) * (size_t)P);
  for (int64_t k = 0; k < P; k++) {
    double h = 1e-5, keep = th[k];
    th[k] = keep + h;
    double lp = mse_at(M, A, x, y);
    th[k] = keep - h;
    double lm = mse_at(M, A, x, y);
    th[k] = keep;
    /* relative error, with a floor of 1e-4 under the denominator: the
     * differences' rounding, about ε·L/h ≈ 1e-11 absolute (h = 1e-5), is not a relative
     * 1e-6 of a gradient entry near 0 */
    double fd = (lp - lm) / (2 * h), err = fabs(fd - an[k]) / fmax(1e-4, fabs(fd) + fabs(an[k]));
    if (err > 1e-6)
      fail_msg("arch %s gate %s width %d heads %d: parameter %lld: backward %.10g, finite "
               "differences %.10g", config_arch_name(c.arch), config_gate_name(c.gate), c.width,
               c.heads, (long long)k, an[k], fd);
  }
  free(an);
  model_acts_free(A);
  model_free(M);
}

static void test_backward_matches_finite_differences(void **state) {
  (void)state;
  for (int g = 0; g < GATE_COUNT; g++) {
    check_gradients(mha_config(ARCH_UNGATED, (cs_gate_pos)g, 3, 3));
    check_gradients(mha_config(ARCH_GATED, (cs_gate_pos)g, 1, 1));
    check_gradients(mha_config(ARCH_GATED, (cs_gate_pos)g, 3, 3));
    check_gradients(mha_config(ARCH_GATED_HEADWISE, (cs_gate_pos)g, 4, 2)); /* dh = 2 */
    check_gradients(mha_config(ARCH_UNGATED, (cs_gate_pos)g, 4, 2));
  }
  /* the elementwise gate at dh > 1 is refused (g5: one gate, allowed) */
  cs_config c = mha_config(ARCH_GATED, GATE_G1, 4, 2);
  cs_model *M = NULL;
  assert_int_equal(model_create(&c, NULL, &M), CS_ERR_INPUT);
  c.gate = GATE_G5;
  assert_ok(model_create(&c, NULL, &M));
  model_free(M);
  /* no jets: no curvature for this family */
  c = mha_config(ARCH_UNGATED, GATE_G1, 2, 2);
  assert_ok(model_create(&c, NULL, &M));
  cs_acts *A = NULL;
  assert_int_equal(model_acts_create(M, 2, 2, &A), CS_ERR_INPUT);
  model_free(M);
}

/* The model's output by hand for one set (ungated, dh = 1): Σ_h W_o[h]
 * Σ_t softmax_t(q_h k_th) v_th + b_o. */
static void test_forward_by_hand(void **state) {
  (void)state;
  cs_config c = mha_config(ARCH_UNGATED, GATE_G1, 2, 2);
  cs_model *M;
  cs_acts *A;
  assert_ok(model_create(&c, NULL, &M));
  assert_ok(model_acts_create(M, 1, 0, &A));
  double x[12];
  assert_ok(task_token_sets(1, SPLIT_TEST, 0, 1, 4, 3, 0, x));
  assert_ok(model_forward(M, A, 1, x));
  cs_tensor Wq, Wk, Wv, Wo, bo;
  assert_ok(model_find_tensor(M, "layer0/Wq", &Wq));
  assert_ok(model_find_tensor(M, "layer0/Wk", &Wk));
  assert_ok(model_find_tensor(M, "layer0/Wv", &Wv));
  assert_ok(model_find_tensor(M, "layer0/Wo", &Wo));
  assert_ok(model_find_tensor(M, "layer0/bo", &bo));
  long double y = bo.v[0];
  for (int h = 0; h < 2; h++) {
    long double q = 0, s[4], v[4], z = 0, o = 0;
    for (int a = 0; a < 3; a++) q += (long double)Wq.v[h * 3 + a] * x[a];
    for (int t = 0; t < 4; t++) {
      long double k = 0;
      v[t] = 0;
      for (int a = 0; a < 3; a++)
        k += (long double)Wk.v[h * 3 + a] * x[t * 3 + a], v[t] += (long double)Wv.v[h * 3 + a] * x[t * 3 + a];
      s[t] = expl(q * k);
      z += s[t];
    }
    for (int t = 0; t < 4; t++) o += s[t] / z * v[t];
    y += Wo.v[h] * o;
  }
  assert_close(model_logits(A)[0], (double)y, 1e-14);
  model_acts_free(A);
  model_free(M);
}

/* The teacher's scales (docs/MODELS.md): unit value-to-output vectors at
 * dh = 1, logits of standard deviation near 1 (90% within ±2.5), gates
 * neither closed nor open on average. */
static void test_teacher_scales(void **state) {
  (void)state;
  cs_config c = mha_config(ARCH_GATED, GATE_G1, 4, 4);
  c.teacher_heads = 4, c.input_dim = 4, c.seed = 3;
  cs_model *T;
  assert_ok(estim_teacher_create(&c, &T));
  estim_heads h;
  assert_ok(estim_heads_of(T, &c, &h));
  for (int j = 0; j < 4; j++) {
    double n2 = 0;
    for (int a = 0; a < 4; a++) n2 += h.u[j * 4 + a] * h.u[j * 4 + a];
    assert_close(sqrt(n2), 1.0, 1e-12);
  }
  /* logits x_0ᵀ M x_t over 500 uniform sets */
  int n = 500, in = 0;
  double *x = malloc(sizeof(double) * n * 8 * 4), ss = 0, gs = 0;
  assert_ok(task_token_sets(3, SPLIT_TEST, 0, n, 8, 4, 0, x));
  for (int i = 0; i < n; i++)
    for (int j = 0; j < 4; j++) {
      const double *x0 = x + i * 32, *M = h.M + j * 16;
      for (int t = 0; t < 8; t++) {
        double st = 0;
        for (int a = 0; a < 4; a++)
          for (int b = 0; b < 4; b++) st += x0[a] * M[a * 4 + b] * x[i * 32 + t * 4 + b];
        ss += st * st, in += fabs(st) <= 2.5;
      }
      double z = h.gate[j * 5 + 4];
      for (int a = 0; a < 4; a++) z += h.gate[j * 5 + a] * x0[a];
      gs += 1.0 / (1.0 + exp(-z));
    }
  double sd = sqrt(ss / (n * 4 * 8)), gate_mean = gs / (n * 4);
  assert_true(sd > 0.3 && sd < 2.0);
  assert_true(in > 0.9 * n * 4 * 8);
  assert_true(gate_mean > 0.2 && gate_mean < 0.8);
  free(x);
  estim_heads_free(&h);
  model_free(T);
}

/* The first n sets of a split are the same whatever n (a seed's cells at
 * different n are nested draws); splits and seeds differ. */
static void test_token_sets_nested(void **state) {
  (void)state;
  double a[50 * 6], b[20 * 6], c[20 * 6], e1[50], e2[20];
  assert_ok(task_token_sets(4, SPLIT_TRAIN, 0, 50, 2, 3, 0, a));
  assert_ok(task_token_sets(4, SPLIT_TRAIN, 0, 20, 2, 3, 0, b));
  assert_memory_equal(a, b, sizeof b);
  assert_ok(task_token_sets(4, SPLIT_TRAIN, 30, 20, 2, 3, 0, c));
  assert_memory_equal(a + 30 * 6, c, sizeof c);
  assert_ok(task_token_sets(4, SPLIT_TEST, 0, 20, 2, 3, 0, c));
  assert_true(memcmp(b, c, sizeof c) != 0);
  for (int i = 0; i < 20 * 6; i++) assert_true(b[i] > -1 && b[i] < 1);
  task_token_noise(4, SPLIT_TRAIN, 0, 50, 0.1, e1);
  task_token_noise(4, SPLIT_TRAIN, 0, 20, 0.1, e2);
  assert_memory_equal(e1, e2, sizeof e2);
}

/* Quantities of H heads in m = 2 with head gates, filled from a stream. */
static estim_heads heads_random(int H, int seed) {
  estim_heads h = {H, 2, 3, NULL, NULL, NULL, 0.3, 0, NULL};
  h.M = calloc(H * 4, sizeof(double)), h.u = calloc(H * 2, sizeof(double));
  h.gate = calloc(H * 3, sizeof(double));
  rng_stream s = rng_stream_make(seed, "heads", 0, NULL);
  for (int i = 0; i < H * 4; i++) h.M[i] = rng_normal(&s);
  for (int i = 0; i < H * 2; i++) h.u[i] = rng_normal(&s);
  for (int i = 0; i < H * 3; i++) h.gate[i] = rng_normal(&s);
  return h;
}

static void copy_head(estim_heads *to, int i, const estim_heads *from, int j, double u_scale) {
  memcpy(to->M + i * 4, from->M + j * 4, 4 * sizeof(double));
  memcpy(to->gate + i * 3, from->gate + j * 3, 3 * sizeof(double));
  for (int a = 0; a < 2; a++) to->u[i * 2 + a] = u_scale * from->u[j * 2 + a];
}

static void test_voronoi_loss(void **state) {
  (void)state;
  estim_heads t = heads_random(2, 1);
  int assign[4];
  assert_close(estim_voronoi_loss(&t, &t, assign), 0.0, 0.0);
  /* heads permuted: still 0, and the cells follow the heads, not the index */
  estim_heads s = heads_random(2, 2);
  copy_head(&s, 0, &t, 1, 1.0), copy_head(&s, 1, &t, 0, 1.0);
  s.bo = t.bo;
  assert_close(estim_voronoi_loss(&s, &t, assign), 0.0, 0.0);
  assert_int_equal(assign[0], 1), assert_int_equal(assign[1], 0);
  estim_heads_free(&s);
  /* teacher head 0 split in two halves of u: 0 */
  s = heads_random(3, 3);
  copy_head(&s, 0, &t, 0, 0.5), copy_head(&s, 1, &t, 1, 1.0), copy_head(&s, 2, &t, 0, 0.5);
  s.bo = t.bo;
  assert_close(estim_voronoi_loss(&s, &t, assign), 0.0, 1e-15);
  /* one split head's M moved by δ in one entry: the cell of two heads
   * counts ‖u_i‖·δ², the summed u is unchanged */
  double delta = 0.01;
  s.M[2 * 4 + 1] += delta;
  double nu = 0.5 * hypot(t.u[0], t.u[1]);
  assert_close(estim_voronoi_loss(&s, &t, assign), nu * delta * delta, 1e-15);
  /* the singleton head's gate moved by δ: ‖u‖·δ (plain distance) */
  s.gate[1 * 3 + 2] += delta;
  double nu1 = hypot(t.u[2], t.u[3]);
  assert_close(estim_voronoi_loss(&s, &t, assign), nu * delta * delta + nu1 * delta, 1e-15);
  /* a split head's u moved by δ: its cell's sum misses by δ, its weight changes */
  estim_heads_free(&s);
  /* a student with one head for two teacher heads: the empty cell costs ‖u*‖ */
  s = heads_random(1, 4);
  copy_head(&s, 0, &t, 0, 1.0);
  s.bo = t.bo + 0.25;
  assert_close(estim_voronoi_loss(&s, &t, assign), nu1 + 0.25, 1e-15);
  estim_heads_free(&s);
  estim_heads_free(&t);
}

/* An exact-H cell: every restart's training loss ≤ the teacher's own (the
 * least-squares minimiser beats the truth on its sample); the kept one
 * converged; the same result twice; H < H* is flagged misspecified. */
static void test_estimator_cell(void **state) {
  (void)state;
  cs_config c = mha_config(ARCH_GATED, GATE_G2, 2, 2);
  c.train_points = 200, c.test_points = 500, c.epochs = 3000, c.lr = 0.02, c.restarts = 2;
  c.noise = 0.1;
  cs_cell_result r1, r2;
  memset(&r1, 0, sizeof r1), memset(&r2, 0, sizeof r2);
  assert_ok(estim_run(&c, NULL, NULL, 1, &r1));
  assert_ok(estim_run(&c, NULL, NULL, 0, &r2));
  const cs_estimation *e = &r1.est;
  assert_int_equal(r1.status, CELL_DONE);
  assert_true(e->present && e->converged && !e->misspecified);
  assert_true(e->kept >= 0 && e->kept < 2 && e->restarts == 2);
  assert_true(e->steps <= e->steps_total && e->steps_total <= 2 * (c.epochs + 1));
  assert_true(e->train_mse <= e->teacher_mse);
  assert_true(e->teacher_mse > 0.5 * 0.01 && e->teacher_mse < 1.5 * 0.01);
  assert_true(e->fn_error > 0 && e->fn_error < 0.1);
  assert_true(e->param_error > 0 && isfinite(e->param_error));
  assert_memory_equal(&r1.est, &r2.est, sizeof r1.est);
  assert_int_equal(r1.depth, 0); /* no curvature rows */
  assert_int_equal(r1.n_tensors, 2 * 7); /* the student's and the teacher's */
  assert_string_equal(r1.tensors[7].name, "teacher/layer0/Wq");
  result_free(&r1), result_free(&r2);
  c.heads = 1, c.width = 1, c.restarts = 1, c.epochs = 200;
  assert_ok(estim_run(&c, NULL, NULL, 0, &r1));
  assert_true(r1.est.misspecified);
  result_free(&r1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backward_matches_finite_differences),
      cmocka_unit_test(test_forward_by_hand),
      cmocka_unit_test(test_teacher_scales),
      cmocka_unit_test(test_token_sets_nested),
      cmocka_unit_test(test_voronoi_loss),
      cmocka_unit_test(test_estimator_cell),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

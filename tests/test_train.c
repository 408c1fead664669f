/* test_train.c — training reaches the accuracy the tasks allow, is bitwise
 * deterministic, reports divergence, and results survive packing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/error.h"
#include "curvsweep/cell.h"
#include "curvsweep/model.h"
#include "curvsweep/tasks.h"
#include "curvsweep/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cs_cell_result run(cs_config c, int save_points, int save_params) {
  cs_cell_result r;
  cell_options opt = {save_points, save_params};
  assert_ok(cell_run(&c, 0, &opt, NULL, NULL, &r));
  return r;
}

/* The cell of c (no points or parameters saved), which ends with status want. */
static cs_cell_result run_as(cs_config c, cs_cell_status want) {
  cs_cell_result r = run(c, 0, 0);
  assert_int_equal(r.status, want);
  return r;
}

/* Acceptance: every arch ≥ 97% on linear at depth 2, width 16,
 * default training. */
static void test_every_arch_learns_linear(void **state) {
  (void)state;
  for (int a = 0; a < ARCH_COUNT; a++) {
    cs_config c = config_default();
    c.arch = (cs_arch)a, c.task = TASK_LINEAR, c.depth = 2, c.width = 16, c.points = 16;
    cs_cell_result r = run_as(c, CELL_DONE);
    if (!(r.test_acc >= 0.97)) fail_msg("%s on linear: test acc %.4f", config_arch_name(c.arch), r.test_acc);
    assert_int_equal(r.n_curve, 10); /* eval every 10 of 100 epochs */
    assert_int_equal(r.curve[9].epoch, 100);
    assert_true(r.curve[9].train_loss < r.curve[0].train_loss);
    result_free(&r);
  }
}

static void test_mlp_learns_circles(void **state) {
  (void)state;
  cs_config c = config_default();
  c.arch = ARCH_MLP, c.task = TASK_CIRCLES, c.depth = 2, c.width = 16, c.points = 16;
  cs_cell_result r = run_as(c, CELL_DONE);
  if (!(r.test_acc >= 0.95)) fail_msg("mlp on circles: test acc %.4f", r.test_acc);
  result_free(&r);
}

/* Same cell twice: every number bitwise equal (wall time aside). */
static void test_same_cell_bitwise_identical(void **state) {
  (void)state;
  cs_config c = config_default();
  c.arch = ARCH_GATED, c.task = TASK_XOR, c.depth = 3, c.epochs = 20, c.points = 32;
  c.schedule = SCHEDULE_COSINE, c.weight_decay = 1e-3;
  cs_cell_result a = run(c, 1, 1), b = run(c, 1, 1);
  a.wall_s = b.wall_s = 0;
  unsigned char *pa, *pb;
  size_t la, lb;
  assert_ok(result_pack(&a, &pa, &la));
  assert_ok(result_pack(&b, &pb, &lb));
  assert_int_equal(la, lb);
  /* the header holds pointers; compare it field by field, the arrays bytewise */
  size_t hdr = sizeof(cs_cell_result);
  assert_memory_equal(pa + hdr, pb + hdr, la - hdr);
  assert_true(a.train_loss == b.train_loss && a.test_acc == b.test_acc);
  assert_true(a.curv[2].K_mean == b.curv[2].K_mean);
  free(pa), free(pb);
  /* a different seed gives a different model */
  c.seed = 1;
  cs_cell_result d = run(c, 0, 0);
  assert_true(d.train_loss != a.train_loss);
  result_free(&a), result_free(&b), result_free(&d);
}

/* A huge learning rate makes the loss non-finite: status diverged, no error. */
static void test_divergence_is_a_status(void **state) {
  (void)state;
  cs_config c = config_default();
  c.arch = ARCH_GATED, c.task = TASK_CIRCLES, c.epochs = 5, c.lr = 1e200, c.points = 8;
  cs_cell_result r = run_as(c, CELL_DIVERGED);
  assert_non_null(strstr(r.message, "non-finite"));
  result_free(&r);
}

/* Weight decay shrinks the weights: ‖θ‖ smaller with λ > 0 than without. */
static void test_weight_decay_shrinks_weights(void **state) {
  (void)state;
  double norms[2];
  for (int k = 0; k < 2; k++) {
    cs_config c = config_default();
    c.task = TASK_LINEAR, c.epochs = 10, c.points = 8, c.weight_decay = k ? 1.0 : 0.0;
    cs_cell_result r = run(c, 0, 1);
    double s = 0;
    for (int t = 0; t < r.n_tensors; t++)
      if (strstr(r.tensors[t].name, "/W") && !strstr(r.tensors[t].name, "embed"))
        for (int i = 0; i < r.tensors[t].rows * r.tensors[t].cols; i++)
          s += r.tensors[t].v[i] * r.tensors[t].v[i];
    norms[k] = sqrt(s);
    result_free(&r);
  }
  assert_true(norms[1] < 0.9 * norms[0]);
}

/* pack → unpack → pack reproduces the bytes; arrays survive. */
static void test_result_roundtrip(void **state) {
  (void)state;
  cs_config c = config_default();
  c.epochs = 3, c.points = 8, c.depth = 2;
  cs_cell_result r = run(c, 1, 1), u;
  unsigned char *p1, *p2;
  size_t l1, l2;
  assert_ok(result_pack(&r, &p1, &l1));
  assert_ok(result_unpack(p1, l1, &u));
  assert_ok(result_pack(&u, &p2, &l2));
  assert_int_equal(l1, l2);
  size_t hdr = sizeof(cs_cell_result);
  assert_memory_equal(p1 + hdr, p2 + hdr, l1 - hdr);
  assert_int_equal(u.depth, 2);
  assert_int_equal(u.n_points, 8);
  assert_true(u.curv[1].K_mean == r.curv[1].K_mean || (isnan(u.curv[1].K_mean) && isnan(r.curv[1].K_mean)));
  assert_string_equal(u.tensors[u.n_tensors - 1].name, "readout/b");
  /* truncated message is an error, not a crash */
  cs_cell_result bad;
  assert_int_not_equal(result_unpack(p1, l1 / 2, &bad), CS_OK);
  free(p1), free(p2);
  result_free(&r), result_free(&u);
}

/* A record whose counts the message cannot hold (a damaged journal record,
 * found by tests/fuzz/fuzz_journal.c: a negative n_curve made calloc's size
 * overflow) is refused with the reason before anything is allocated, and
 * leaves nothing to free. */
static void test_result_unpack_refuses_bad_counts(void **state) {
  (void)state;
  cs_config c = config_default();
  c.epochs = 2, c.points = 8, c.depth = 2;
  cs_cell_result r = run(c, 1, 1);
  unsigned char *p;
  size_t len;
  assert_ok(result_pack(&r, &p, &len));
  static const struct {
    size_t offset;
    int value;
    const char *reason;
  } cases[] = {
      {offsetof(cs_cell_result, n_curve), -1, "negative count"},
      {offsetof(cs_cell_result, n_curve), 0x7fffffff, "truncated"},
      {offsetof(cs_cell_result, depth), -3, "negative count"},
      {offsetof(cs_cell_result, n_points), 1 << 30, "truncated"},
      {offsetof(cs_cell_result, m), -1, "negative count"},
      {offsetof(cs_cell_result, n_tensors), 0x7fffffff, "tensors announced"},
      {offsetof(cs_cell_result, n_tensors), -2, "negative count"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    unsigned char *q = malloc(len);
    assert_non_null(q);
    memcpy(q, p, len);
    memcpy(q + cases[k].offset, &cases[k].value, sizeof(int));
    cs_cell_result u;
    memset(&u, 0x5a, sizeof u);
    assert_int_equal(result_unpack(q, len, &u), CS_ERR_INTERNAL);
    if (!strstr(cs_error_message(), cases[k].reason))
      fail_msg("case %zu: '%s' lacks '%s'", k, cs_error_message(), cases[k].reason);
    assert_null(u.curve);
    assert_null(u.tensors);
    free(q);
  }
  /* a tensor of negative shape, right after the header of the first tensor */
  size_t first_tensor = len;
  for (int i = 0; i < r.n_tensors; i++)
    first_tensor -= sizeof(cs_tensor) + sizeof(double) * (size_t)r.tensors[i].rows * r.tensors[i].cols;
  int neg = -5;
  memcpy(p + first_tensor + offsetof(cs_tensor, cols), &neg, sizeof neg);
  cs_cell_result u;
  assert_int_equal(result_unpack(p, len, &u), CS_ERR_INTERNAL);
  assert_non_null(strstr(cs_error_message(), "tensor 0 is "));
  assert_non_null(strstr(cs_error_message(), " x -5"));
  free(p);
  result_free(&r);
}

/* Finite or failed: a σ whose Fisher scaling overflows fails the cell with
 * the reason, instead of storing NaN or infinite curvature as done. */
static void test_overflowing_sigma_fails(void **state) {
  (void)state;
  cs_config c = config_default();
  c.epochs = 2, c.points = 8, c.sigma = 1e300;
  cs_cell_result r;
  assert_int_equal(cell_run(&c, 0, NULL, NULL, NULL, &r), CS_ERR_NUMERIC);
  assert_non_null(strstr(cs_error_message(), "non-finite S"));
  assert_non_null(strstr(cs_error_message(), "sigma = 1e+300"));
  result_free(&r);
}

/* Adam (docs/MODELS.md, "Training") against the textbook update written
 * out here: three full-batch steps of train_model from the same init as a
 * second model stepped by this test with model_forward/backward and
 *   m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²
 *   θ ← θ − lr (m/c1) / (√(v/c2) + ε);  θ ← θ − lr λ θ (weight matrices)
 * in long double. The full batch makes each step's gradient independent
 * of the shuffle up to the order of the row sum (a relative 1e-15). */
static void test_adam_matches_textbook(void **state) {
  (void)state;
  cs_config c = config_default();
  c.arch = ARCH_GATED, c.task = TASK_XOR, c.depth = 2, c.width = 8, c.epochs = 3;
  c.train_points = 64, c.test_points = 16, c.batch = 0, c.eval_every = 3;
  c.lr = 0.01, c.weight_decay = 0.05;
  cs_dataset tr, te;
  assert_ok(task_generate(c.task, c.input_dim, c.train_points, c.seed, SPLIT_TRAIN, 0, &tr));
  assert_ok(task_generate(c.task, c.input_dim, c.test_points, c.seed, SPLIT_TEST, 0, &te));
  cs_model *A, *B;
  assert_ok(model_create(&c, NULL, &A));
  assert_ok(model_create(&c, NULL, &B));
  cs_cell_result res = {0};
  assert_ok(train_model(A, &c, &tr, &te, NULL, &res));
  result_free(&res);
  int64_t np = model_param_count(B);
  long double *m = calloc((size_t)np, sizeof *m), *v = calloc((size_t)np, sizeof *v);
  unsigned char *decays = calloc((size_t)np, 1);
  double *th = model_params(B), *g = model_grads(B);
  for (int t = 0; t < model_tensor_count(B); t++) {
    cs_tensor view;
    int dec;
    model_tensor(B, t, &view, &dec);
    memset(decays + (view.v - th), dec, (size_t)view.rows * view.cols);
  }
  cs_acts *acts;
  assert_ok(model_acts_create(B, tr.n, 0, &acts));
  for (int t = 1; t <= c.epochs; t++) {
    memset(g, 0, sizeof(double) * (size_t)np);
    assert_ok(model_forward(B, acts, tr.n, tr.x));
    model_loss(acts, tr.n, tr.y, NULL);
    assert_ok(model_backward(B, acts, tr.n, tr.x));
    long double c1 = 1.0L - powl(0.9L, t), c2 = 1.0L - powl(0.999L, t);
    for (int64_t i = 0; i < np; i++) {
      m[i] = 0.9L * m[i] + 0.1L * g[i];
      v[i] = 0.999L * v[i] + 0.001L * (long double)g[i] * g[i];
      long double x = th[i] - (long double)c.lr * (m[i] / c1) / (sqrtl(v[i] / c2) + 1e-8L);
      if (decays[i]) x -= (long double)c.lr * c.weight_decay * x;
      th[i] = (double)x;
    }
  }
  double *ta = model_params(A), worst = 0.0;
  for (int64_t i = 0; i < np; i++) {
    double e = fabs(ta[i] - th[i]) / fmax(fabs(th[i]), 1e-3);
    if (e > worst) worst = e;
  }
  if (!(worst < 1e-11)) fail_msg("Adam differs from the textbook update by %.3g", worst);
  /* and it moved: each entry's first step is about lr in size */
  model_free(A);
  cs_model *C0;
  assert_ok(model_create(&c, NULL, &C0));
  double moved = 0.0;
  for (int64_t i = 0; i < np; i++) moved = fmax(moved, fabs(model_params(C0)[i] - th[i]));
  assert_true(moved > 0.5 * c.lr);
  model_free(C0);
  model_acts_free(acts);
  model_free(B);
  free(m), free(v), free(decays);
  task_dataset_free(&tr), task_dataset_free(&te);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_arch_learns_linear),
      cmocka_unit_test(test_mlp_learns_circles),
      cmocka_unit_test(test_same_cell_bitwise_identical),
      cmocka_unit_test(test_overflowing_sigma_fails),
      cmocka_unit_test(test_divergence_is_a_status),
      cmocka_unit_test(test_weight_decay_shrinks_weights),
      cmocka_unit_test(test_adam_matches_textbook),
      cmocka_unit_test(test_result_roundtrip),
      cmocka_unit_test(test_result_unpack_refuses_bad_counts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

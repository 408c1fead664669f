/* test_la.c — la_gemm on the 1×1 team against a plain triple loop: every
 * op(A)/op(B) combination, column views with a row stride wider than the
 * view (attention heads, the fused [q | z] array), beta 0, 1 and −0.5,
 * inner dimensions 1 to 4, beta 0 not reading C (NaN there), and the
 * small transposed-B path (a scratch copy, grown between calls) next to
 * the direct one; B itself is never written. Small products run in
 * libxsmm's kernels (and only they: alpha ≠ 1, beta ∉ {0, 1} and large
 * products stay in OpenBLAS), and a row of such a product has the same
 * bits whatever the number of rows around it. The normal build has no
 * breakdown timers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "curvsweep/la.h"
#include "curvsweep/rng.h"
#include "fixtures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* x[r, c] of a row-major matrix with row stride ld, read as op(X). */
static double at(const double *x, int ld, char op, int r, int c) {
  return op == 'T' ? x[(size_t)c * ld + r] : x[(size_t)r * ld + c];
}

/* C = alpha op(A) op(B) + beta C, m × n, inner k, with A, B, C views of
 * width w inside wider storage (row strides lda, ldb, ldc), checked to
 * 1e-13 of the sum of |terms|. */
static void check_product(char ta, char tb, int m, int n, int k, double alpha, double beta,
                          uint64_t seed) {
  int ar = ta == 'T' ? k : m, ac = ta == 'T' ? m : k;
  int br = tb == 'T' ? n : k, bc = tb == 'T' ? k : n;
  int lda = ac + 3, ldb = bc + 2, ldc = n + 5;
  double *a = malloc(sizeof(double) * (size_t)ar * lda);
  double *b = malloc(sizeof(double) * (size_t)br * ldb);
  double *b0 = malloc(sizeof(double) * (size_t)br * ldb);
  double *c = malloc(sizeof(double) * (size_t)m * ldc);
  double *c0 = malloc(sizeof(double) * (size_t)m * ldc);
  rng_stream s = rng_stream_make(seed, "test", 0, "la");
  for (size_t i = 0; i < (size_t)ar * lda; i++) a[i] = rng_normal(&s);
  for (size_t i = 0; i < (size_t)br * ldb; i++) b[i] = b0[i] = rng_normal(&s);
  for (size_t i = 0; i < (size_t)m * ldc; i++) c[i] = c0[i] = rng_normal(&s);
  la_mat A = la_cols(la_view(NULL, ar, lda, lda, a), 1, ac);
  la_mat B = la_cols(la_view(NULL, br, ldb, ldb, b), 2, bc);
  la_mat Cm = la_cols(la_view(NULL, m, ldc, ldc, c), 4, n);
  assert_ok(la_gemm(ta, tb, alpha, A, B, beta, Cm));
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double ref = 0.0, mag = 0.0;
      for (int l = 0; l < k; l++) {
        double term = at(a + 1, lda, ta, i, l) * at(b + 2, ldb, tb, l, j);
        ref += term;
        mag += fabs(term);
      }
      double cij0 = c0[(size_t)i * ldc + 4 + j];
      ref = alpha * ref + beta * cij0;
      mag = fabs(alpha) * mag + fabs(beta * cij0);
      double got = c[(size_t)i * ldc + 4 + j];
      if (!(fabs(got - ref) <= 1e-13 * (mag + 1e-300)))
        fail_msg("%c%c %dx%dx%d beta %g: C[%d,%d] = %.17g, expected %.17g", ta, tb, m, n, k,
                 beta, i, j, got, ref);
    }
  /* columns of C outside the view untouched, B untouched */
  for (int i = 0; i < m; i++)
    for (int j = 0; j < ldc; j++)
      if (j < 4 || j >= 4 + n) assert_true(c[(size_t)i * ldc + j] == c0[(size_t)i * ldc + j]);
  assert_memory_equal(b, b0, sizeof(double) * (size_t)br * ldb);
  free(a), free(b), free(b0), free(c), free(c0);
}

static void test_gemm_matches_loops(void **state) {
  (void)state;
  const char ops[2] = {'N', 'T'};
  /* shapes of the models: width 16 (transposed-B copy), 3 slots, width 96
   * (96 × 96 > 4096: the direct path), one row, and a copy that has to
   * grow the scratch after a smaller one */
  /* ... and inner dimensions 1 to 4 (the memory family's slots: OpenBLAS's
   * small-matrix kernels) */
  const int shapes[][3] = {{256, 32, 16}, {37, 3, 16}, {37, 16, 3}, {64, 96, 96},
                           {1, 7, 5},     {5, 60, 60}, {9, 2, 16},  {256, 128, 3},
                           {8, 33, 1},    {5, 9, 2},   {12, 40, 4}, {3, 5, 4}};
  const double betas[3] = {0.0, 1.0, -0.5}, alphas[3] = {0.5, 1.0, 2.0};
  uint64_t seed = 1;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int x = 0; x < 2; x++)
      for (int y = 0; y < 2; y++)
        for (int v = 0; v < 3; v++)
          check_product(ops[x], ops[y], shapes[s][0], shapes[s][1], shapes[s][2], alphas[v],
                        betas[v], seed++);
}

/* beta = 0 does not read C (BLAS): NaN there is overwritten, for a short
 * and a longer inner dimension. */
static void test_beta_zero_ignores_c(void **state) {
  (void)state;
  for (int k = 1; k <= 8; k += 7) {
    double a[4 * 8], b[8 * 6], c[4 * 6];
    for (int i = 0; i < 4 * 8; i++) a[i] = 0.25 * (i % 5) - 0.5;
    for (int i = 0; i < 8 * 6; i++) b[i] = 0.125 * (i % 7);
    for (int i = 0; i < 4 * 6; i++) c[i] = NAN;
    assert_ok(la_gemm('N', 'N', 1.0, la_view(NULL, 4, k, 8, a), la_view(NULL, k, 6, 6, b), 0.0,
                      la_view(NULL, 4, 6, 6, c)));
    for (int r = 0; r < 4; r++)
      for (int j = 0; j < 6; j++) {
        double ref = 0.0;
        for (int s = 0; s < k; s++) ref += a[r * 8 + s] * b[s * 6 + j];
        assert_float_equal(c[r * 6 + j], ref, 1e-15);
      }
  }
}

/* A · Bᵀ with a small B goes through the transposed copy: the same result
 * as the product with B transposed by hand, bit for bit. */
static void test_transposed_copy_is_exact(void **state) {
  (void)state;
  int m = 40, n = 24, k = 16;
  double *a = malloc(sizeof(double) * m * k), *b = malloc(sizeof(double) * n * k);
  double *bt = malloc(sizeof(double) * k * n);
  double *c1 = calloc((size_t)m * n, sizeof(double)), *c2 = calloc((size_t)m * n, sizeof(double));
  rng_stream s = rng_stream_make(5, "test", 0, "la-t");
  for (int i = 0; i < m * k; i++) a[i] = rng_normal(&s);
  for (int i = 0; i < n * k; i++) b[i] = rng_normal(&s);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < k; j++) bt[j * n + i] = b[i * k + j];
  assert_int_equal(la_gemm('N', 'T', 1.0, la_view(NULL, m, k, k, a), la_view(NULL, n, k, k, b),
                           0.0, la_view(NULL, m, n, n, c1)),
                   0);
  assert_int_equal(la_gemm('N', 'N', 1.0, la_view(NULL, m, k, k, a), la_view(NULL, k, n, n, bt),
                           0.0, la_view(NULL, m, n, n, c2)),
                   0);
  assert_memory_equal(c1, c2, sizeof(double) * m * n);
  free(a), free(b), free(bt), free(c1), free(c2);
}

/* Which library runs a product: alpha 1 and beta 0 or 1 with a small
 * op(B) (any number of rows, a short last block included) or a small
 * weight-gradient product Aᵀ B go to libxsmm (la_small_products counts
 * them), each checked against the loops; alpha ≠ 1, beta ∉ {0, 1}, a
 * 512 × 512 or a 16 × 16 B, or a 128 × 128 × 4096 gradient product do
 * not. */
static void test_small_products_run_in_libxsmm(void **state) {
  (void)state;
  const int small[][4] = {/* ta, m, n, k */
                          {0, 256, 128, 128}, {0, 100, 131, 128}, {0, 768, 64, 16},
                          {0, 5, 32, 16},     {0, 24, 16, 32},    {1, 128, 128, 256},
                          {1, 16, 16, 768},   {1, 3, 128, 256},   {1, 5, 8, 8}};
  uint64_t seed = 100;
  for (size_t s = 0; s < sizeof small / sizeof small[0]; s++)
    for (int beta = 0; beta <= 1; beta++)
      for (int tb = 0; tb <= 1; tb++) {
        if (small[s][0] && tb) continue; /* Aᵀ Bᵀ: no product of the models */
        uint64_t before = la_small_products();
        check_product(small[s][0] ? 'T' : 'N', tb ? 'T' : 'N', small[s][1], small[s][2],
                      small[s][3], 1.0, beta, seed++);
        if (la_small_products() != before + 1)
          fail_msg("%c%c %dx%dx%d beta %d did not run in libxsmm", small[s][0] ? 'T' : 'N',
                   tb ? 'T' : 'N', small[s][1], small[s][2], small[s][3], beta);
      }
  const int large[][4] = {{0, 64, 512, 512}, {1, 128, 128, 4096}, {0, 256, 16, 16}, {0, 40, 3, 16}};
  for (size_t s = 0; s < sizeof large / sizeof large[0]; s++) {
    uint64_t before = la_small_products();
    check_product(large[s][0] ? 'T' : 'N', 'N', large[s][1], large[s][2], large[s][3], 1.0, 1.0,
                  seed++);
    assert_true(la_small_products() == before);
  }
  const double scalars[][2] = {{0.5, 0.0}, {1.0, -0.5}, {2.0, 1.0}};
  for (int v = 0; v < 3; v++) {
    uint64_t before = la_small_products();
    check_product('N', 'N', 40, 16, 16, scalars[v][0], scalars[v][1], seed++);
    assert_true(la_small_products() == before);
  }
}

/* A row of A B has the same bits in a product of 1, 7, 23, 24, 25 or 100
 * rows (the curvature field and the per-point path evaluate one point in
 * batches of different sizes): widths where libxsmm's register blocks
 * differ (3 to 257 columns, 2 to 200 inner), beta 0 and 1. */
static void test_rows_do_not_depend_on_the_batch(void **state) {
  (void)state;
  const int shapes[][2] = {{131, 128}, {33, 16}, {24, 24}, {64, 16}, {7, 80}, {3, 200},
                           {257, 2}, {128, 32}};
  const int batches[] = {1, 7, 23, 24, 25};
  enum { M = 100 };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int beta = 0; beta <= 1; beta++) {
      int n = shapes[s][0], k = shapes[s][1];
      double *a = malloc(sizeof(double) * M * k), *b = malloc(sizeof(double) * k * n);
      double *c0 = malloc(sizeof(double) * M * n), *c = malloc(sizeof(double) * M * n);
      double *part = malloc(sizeof(double) * M * n);
      rng_stream r = rng_stream_make(7 + s, "test", beta, "la-rows");
      for (int i = 0; i < M * k; i++) a[i] = rng_normal(&r) * exp(4.0 * rng_normal(&r));
      for (int i = 0; i < k * n; i++) b[i] = rng_normal(&r);
      for (int i = 0; i < M * n; i++) c0[i] = rng_normal(&r);
      memcpy(c, c0, sizeof(double) * M * n);
      la_mat B = la_view(NULL, k, n, n, b);
      assert_ok(la_gemm('N', 'N', 1.0, la_view(NULL, M, k, k, a), B, beta, la_view(NULL, M, n, n, c)));
      for (size_t q = 0; q < sizeof batches / sizeof batches[0]; q++) {
        int size = batches[q];
        memcpy(part, c0, sizeof(double) * M * n);
        for (int r0 = 0; r0 < M; r0 += size) {
          int rows = r0 + size <= M ? size : M - r0;
          assert_ok(la_gemm('N', 'N', 1.0, la_view(NULL, rows, k, k, a + (size_t)r0 * k), B, beta,
                            la_view(NULL, rows, n, n, part + (size_t)r0 * n)));
        }
        for (int i = 0; i < M * n; i++)
          if (memcmp(&part[i], &c[i], sizeof(double)))
            fail_msg("%d x %d, beta %d: row %d in batches of %d: %.17g, in one product %.17g", n,
                     k, beta, i / n, size, part[i], c[i]);
      }
      free(a), free(b), free(c0), free(c), free(part);
    }
}

static void test_no_timers_in_the_normal_build(void **state) {
  (void)state;
  assert_int_equal(la_prof_compiled(), 0);
  la_prof_reset();
  la_prof_enable(1);
  double x[64 * 64] = {0}, y[64 * 64] = {0};
  assert_int_equal(la_gemm('N', 'N', 1.0, la_view(NULL, 64, 64, 64, x),
                           la_view(NULL, 64, 64, 64, x), 0.0, la_view(NULL, 64, 64, 64, y)),
                   0);
  la_prof_enable(0);
  double sec[LA_PROF_KINDS];
  la_prof_seconds(sec);
  for (int k = 0; k < LA_PROF_KINDS; k++) assert_true(sec[k] == 0.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_matches_loops),
      cmocka_unit_test(test_beta_zero_ignores_c),
      cmocka_unit_test(test_transposed_copy_is_exact),
      cmocka_unit_test(test_small_products_run_in_libxsmm),
      cmocka_unit_test(test_rows_do_not_depend_on_the_batch),
      cmocka_unit_test(test_no_timers_in_the_normal_build),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

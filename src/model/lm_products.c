/* lm_products.c — the lm family's attention token products
 * (docs/DECISIONS.md, "The lm family's attention and GELU"): small
 * products over the causal triangle, per sequence and head, for the
 * forward (lm_attn.c) and the backward (lm_backward.c); lm_internal.h
 * states what each computes. */
#include "curvsweep/simd.h"
#include "lm_internal.h"

#include <stdint.h>

/* One register block: rows r0..r0+3 of C, columns c0..c0+NC−1 (NC = 8 or
 * 16, a constant), C[r, c] = Σ_{k = klo}^{khi−1} A[r, k] B[k, c] in order;
 * entry (r0 + r, k) of A at a0[r·rs + k·ks]. With NC = 16, 8 independent
 * vector sums (two per row) hide the add's latency. */
static inline __attribute__((always_inline)) void
rows_block(int NC, int klo, int khi, const double *a0, int64_t rs, int64_t ks, const double *B,
           int ldb, double *c, int ldc) {
  double c_0[16] = {0}, c_1[16] = {0}, c_2[16] = {0}, c_3[16] = {0};
  for (int k = klo; k < khi; k++) {
    const double *restrict b = B + (int64_t)k * ldb, *a = a0 + k * ks;
    double x0 = a[0], x1 = a[rs], x2 = a[2 * rs], x3 = a[3 * rs];
#pragma omp simd
    for (int l = 0; l < NC; l++) {
      c_0[l] += x0 * b[l];
      c_1[l] += x1 * b[l];
      c_2[l] += x2 * b[l];
      c_3[l] += x3 * b[l];
    }
  }
  for (int l = 0; l < NC; l++) {
    c[l] = c_0[l], c[ldc + l] = c_1[l];
    c[2 * (int64_t)ldc + l] = c_2[l], c[3 * (int64_t)ldc + l] = c_3[l];
  }
}

/* lm_internal.h: C = A B in blocks of 4 rows × 16 (or 8) columns, sums over
 * k in order. */
CS_VECTOR_CLONES void lm_rows_gemm(lm_tri tri, int R, int K, int D, const double *A, int lda,
                                   const double *B, int ldb, double *C, int ldc) {
  for (int r0 = 0; r0 < R; r0 += 4) {
    int nr = R - r0 < 4 ? R - r0 : 4;
    int klo = tri == LM_TRI_K_UPPER ? r0 : 0;
    int khi = tri == LM_TRI_K_LOWER ? (r0 + 4 < K ? r0 + 4 : K) : K;
    int dhi = tri == LM_TRI_D_LOWER ? ((r0 + 4 + 7) / 8 * 8 < D ? (r0 + 4 + 7) / 8 * 8 : D) : D;
    /* entry (r0 + r, k) of A at a0[r·rs + k·ks] */
    int64_t rs = tri == LM_TRI_K_UPPER ? 1 : lda, ks = tri == LM_TRI_K_UPPER ? lda : 1;
    const double *a0 = A + r0 * (tri == LM_TRI_K_UPPER ? 1 : (int64_t)lda);
    for (int c0 = 0; c0 < dhi;) {
      int nc = dhi - c0 < 16 ? dhi - c0 : 16;
      double *c = C + (int64_t)r0 * ldc + c0;
      if (nr == 4 && nc == 16) {
        rows_block(16, klo, khi, a0, rs, ks, B + c0, ldb, c, ldc);
        c0 += 16;
        continue;
      }
      if (nr == 4 && nc >= 8) {
        rows_block(8, klo, khi, a0, rs, ks, B + c0, ldb, c, ldc);
        c0 += 8;
        continue;
      }
      for (int r = 0; r < nr; r++)
        for (int l = 0; l < nc; l++) {
          double acc = 0.0;
          for (int k = klo; k < khi; k++) acc += a0[r * rs + k * ks] * B[(int64_t)k * ldb + c0 + l];
          C[(int64_t)(r0 + r) * ldc + c0 + l] = acc;
        }
      c0 += nc;
    }
  }
}

/* lm_internal.h: the causal dot products of two row sets. */
CS_VECTOR_CLONES void lm_causal_dots(int T, int dh, const double *A, int lda, const double *X,
                                     int ldx, double *restrict xt, double *out) {
  int Tp = (T + 7) / 8 * 8;
  for (int i = 0; i < dh; i++)
#pragma omp simd
    for (int s = 0; s < T; s++) xt[(int64_t)i * Tp + s] = X[(int64_t)s * ldx + i];
  lm_rows_gemm(LM_TRI_D_LOWER, T, dh, Tp, A, lda, xt, Tp, out, Tp);
}

/* la_local.c — one rank's own product C = alpha op(A) op(B) + beta C:
 * libxsmm's JIT kernels for small shapes, OpenBLAS for the rest.
 *
 * OpenBLAS packs both operands into panels before its kernel runs and
 * goes through a separate pass for beta ≠ 1; on the products of a
 * training step (inner dimensions 16–256, a few hundred rows) that
 * overhead and the cold operands hold it at 40–75 % of its own large
 * dgemm rate. libxsmm generates, once per shape, a kernel that reads the
 * operands where they are (no packing) and keeps C's tile in registers
 * across the inner dimension; on the shapes of the reference cells it is
 * up to 45 % faster, and slower only on large or long-inner products
 * (docs/DECISIONS.md, "Small products: libxsmm"). OpenBLAS stays the one
 * BLAS of the build (and ScaLAPACK's); libxsmm only adds kernels.
 *
 * Which library runs a product depends only on its shape, alpha and beta,
 * never on the rank, the team or the time of the call: a cell's bits are
 * the same at every rank count.
 *
 * Row-major C (m × n) = op(A) op(B) is column-major Cᵀ (n × m) =
 * op(B)ᵀ op(A)ᵀ, so libxsmm (column-major) gets B first: its "A" is our B
 * with ld ldb, its "B" our A with ld lda; a transposed A becomes libxsmm's
 * TRANS_B. */
#include "la_internal.h"

#include "curvsweep/error.h"

#include <cblas.h>
#include <libxsmm.h>
#include <string.h>

/* Which products libxsmm runs (bench/small_products.c measures both
 * libraries on the shapes of the cells and around these bounds):
 *   - A as is: when op(B) has 2^9 to 2^16 entries (4 KB to 512 KB: 16 × 32
 *     to 256 × 256), whatever the number of rows m. At 2^17 the two are
 *     even; larger op(B) (512 × 512) run twice as fast in OpenBLAS's
 *     cache-blocked kernels. Below 2^9 (the reference cell's 16 × 16,
 *     16 × 3 and 19 × 16 weights) OpenBLAS's small-matrix kernels were as
 *     fast, and the 24-row blocks' calls and padding cost more than they
 *     gain: the cell was no faster.
 *   - A transposed (Aᵀ B: the weight gradients, summed over the rows of
 *     a batch): when m·n·k ≤ 2^24 (the 256³ product); longer inner
 *     dimensions (128 × 128 × 2048) are faster in OpenBLAS. */
#define LA_LOCAL_PANEL_MIN ((int64_t)1 << 9)
#define LA_LOCAL_PANEL_MAX ((int64_t)1 << 16)
#define LA_LOCAL_GRADIENT_MAX ((int64_t)1 << 24)

/* Rows of C per libxsmm call when A is not transposed. A row's value must
 * not depend on how many rows the product has: the field and the
 * per-point curvature paths evaluate the same points in batches of
 * different sizes and agree bit for bit (docs/DECISIONS.md, "Curvature
 * fields"). libxsmm's kernel splits its columns (our rows) into near-equal
 * register blocks of at most its maximum for the shape, and sums the inner
 * dimension in 1, 2 or 4 interleaved accumulators for blocks of ≥ 12,
 * 6–11 or < 6 columns, which rounds differently. Every call here has 24
 * rows (a short last block is padded to 24 in scratch), and 24 splits
 * into blocks that all fall in one of those classes whatever the maximum
 * (24; 12 + 12; 3 × 8; 4 × 6; 5,5,5,5,4; ...), so every row is summed the
 * same way; 16 or 32 would not (16 = 6 + 5 + 5). test_la checks it. */
#define LA_LOCAL_ROWS 24

/* libxsmm's generated kernels leave the upper halves of the vector
 * registers dirty (its code generator emits no vzeroupper). The code that
 * runs next is mostly compiled for baseline x86-64, and on Intel cores a
 * legacy SSE instruction after such a kernel waits for a state transition:
 * a 256 × 16 × 3 product took 5.4 µs through la against 1.2 µs in the
 * kernel, the rest at the first SSE instruction after it. So every return
 * from libxsmm's code is followed by vzeroupper, where the CPU has AVX
 * (libxsmm generates AVX code only there). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx"))) static void la_upper_clear_avx(void) { _mm256_zeroupper(); }
static void la_upper_clear(void) {
  if (__builtin_cpu_supports("avx")) la_upper_clear_avx();
}
#else
static void la_upper_clear(void) {}
#endif

static _Thread_local uint64_t la_small_count;
static _Thread_local double *la_pad;
static _Thread_local size_t la_pad_len;

uint64_t la_small_products(void) { return la_small_count; }

const char *la_small_target(void) { return libxsmm_get_target_arch(); }

void la_local_release(void) {
  free(la_pad);
  la_pad = NULL;
  la_pad_len = 0;
}

int la_local_small(int ta, int m, int n, int k, double alpha, double beta) {
  if (alpha != 1.0 || (beta != 0.0 && beta != 1.0) || k <= 0) return 0;
  if (ta) return (int64_t)m * n * k <= LA_LOCAL_GRADIENT_MAX;
  return (int64_t)n * k >= LA_LOCAL_PANEL_MIN && (int64_t)n * k <= LA_LOCAL_PANEL_MAX;
}

/* libxsmm's kernel for N' = cols columns of Cᵀ, or NULL when libxsmm does
 * not take the product: not small (la_local_small: libxsmm's JIT kernels
 * have alpha = 1 and beta ∈ {0, 1} only), or no JIT kernel for this CPU
 * and flags (libxsmm_dmmdispatch's NULL: a transposed B, for one). */
static libxsmm_dmmfunction la_small_kernel(int ta, int tb, int m, int n, int k, double alpha,
                                           int lda, int ldb, double beta, int ldc, int cols) {
  if (!la_local_small(ta, m, n, k, alpha, beta)) return NULL;
  int flags = (tb ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
  libxsmm_blasint xm = n, xn = cols, xk = k, xlda = ldb, xldb = lda, xldc = ldc;
  return libxsmm_dmmdispatch(xm, xn, xk, &xlda, &xldb, &xldc, &alpha, &beta, &flags, NULL);
}

/* C (m × n, ld ldc) += / = A (m × k, ld lda) B with f, a kernel for
 * LA_LOCAL_ROWS rows: whole blocks in place, the last rem < LA_LOCAL_ROWS
 * rows copied into zero-padded scratch of the same leading dimensions (so
 * that the same kernel runs them) and back. */
static int la_small_rows(libxsmm_dmmfunction f, int m, int n, int k, const double *a, int lda,
                         const double *b, double beta, double *c, int ldc) {
  int full = m - m % LA_LOCAL_ROWS, rem = m - full;
  for (int r0 = 0; r0 < full; r0 += LA_LOCAL_ROWS)
    f(b, a + (int64_t)r0 * lda, c + (int64_t)r0 * ldc);
  la_upper_clear();
  if (!rem) return CS_OK;
  size_t need = (size_t)LA_LOCAL_ROWS * ((size_t)lda + (size_t)ldc);
  if (la_pad_len < need) {
    double *p = realloc(la_pad, sizeof(double) * need);
    if (!p) return cs_error(CS_ERR_NOMEM, "la: out of memory for a %d-row product block", LA_LOCAL_ROWS);
    la_pad = p, la_pad_len = need;
  }
  double *ap = la_pad, *cp = la_pad + (size_t)LA_LOCAL_ROWS * lda;
  for (int r = 0; r < LA_LOCAL_ROWS; r++) {
    double *ar = ap + (int64_t)r * lda, *cr = cp + (int64_t)r * ldc;
    if (r < rem) memcpy(ar, a + (int64_t)(full + r) * lda, sizeof(double) * k);
    else memset(ar, 0, sizeof(double) * k);
    if (r < rem && beta != 0.0) memcpy(cr, c + (int64_t)(full + r) * ldc, sizeof(double) * n);
    else memset(cr, 0, sizeof(double) * n);
  }
  f(b, ap, cp);
  la_upper_clear();
  for (int r = 0; r < rem; r++)
    memcpy(c + (int64_t)(full + r) * ldc, cp + (int64_t)r * ldc, sizeof(double) * n);
  return CS_OK;
}

int la_gemm_local(int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                  const double *b, int ldb, double beta, double *c, int ldc) {
  if (m <= 0 || n <= 0) return CS_OK;
  libxsmm_dmmfunction f =
      la_small_kernel(ta, tb, m, n, k, alpha, lda, ldb, beta, ldc, ta ? m : LA_LOCAL_ROWS);
  if (f) {
    if (ta) {
      f(b, a, c);
      la_upper_clear();
    } else {
      CS_CHECK(la_small_rows(f, m, n, k, a, lda, b, beta, c, ldc));
    }
    la_small_count++;
    return CS_OK;
  }
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
  return CS_OK;
}

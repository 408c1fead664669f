/* la.c — dense linear algebra on row-major views; the 1×1 team path.
 *
 * On a 1×1 team every view is its own local block, so products go straight
 * to the local product (la_local.c: libxsmm or OpenBLAS, single-threaded
 * per rank). */
#include "la_internal.h"

#include "curvsweep/simd.h"

#include <stdlib.h>

static _Thread_local uint64_t la_flops;

la_mat la_view(const la_team *team, int rows, int cols, int ld, double *v) {
  return (la_mat){.rows = rows, .cols = cols, .ld = ld, .v = v, .mb = rows, .nb = cols,
                  .lrows = rows, .lcols = cols, .team = team};
}

la_mat la_cols(la_mat a, int c0, int n) {
  la_mat s = a;
  s.v = a.v + c0;
  s.cols = s.lcols = s.nb = n;
  return s;
}

la_mat la_rows_strided(la_mat a, int r0, int step) {
  la_mat s = a;
  s.v = a.v + (int64_t)r0 * a.ld;
  s.rows = s.lrows = s.mb = (a.rows - r0 + step - 1) / step;
  s.ld = a.ld * step;
  return s;
}


/* The transpose of the n × k view b, as a k × n view on this thread's
 * scratch (grown on demand and kept: no allocation per product once warm);
 * b itself when out of memory. */
static _Thread_local double *la_transpose_buf;
static _Thread_local size_t la_transpose_len;

void la_workspace_release(void) {
  free(la_transpose_buf);
  la_transpose_buf = NULL;
  la_transpose_len = 0;
  la_local_release();
}

static la_mat la_transposed_copy(la_mat b) {
  double *buf = la_transpose_buf;
  size_t len = la_transpose_len;
  int n = b.rows, k = b.cols;
  size_t need = (size_t)n * k;
  if (len < need) {
    double *p = realloc(buf, sizeof(double) * need);
    if (!p) return b;
    buf = la_transpose_buf = p, len = la_transpose_len = need;
  }
  /* 8 × 8 tiles: each tile reads 8 rows of b and writes 8 rows of the
   * copy, a cache line each (one row at a time would write a line per entry) */
  for (int i0 = 0; i0 < n; i0 += 8)
    for (int j0 = 0; j0 < k; j0 += 8) {
      int i1 = i0 + 8 < n ? i0 + 8 : n, j1 = j0 + 8 < k ? j0 + 8 : k;
      for (int i = i0; i < i1; i++) {
        const double *row = b.v + (int64_t)i * b.ld;
        for (int j = j0; j < j1; j++) buf[(size_t)j * n + i] = row[j];
      }
    }
  la_mat t = b;
  t.v = buf, t.ld = n, t.rows = t.lrows = t.mb = k, t.cols = t.lcols = t.nb = n;
  return t;
}

/* op(B) = Bᵀ is transposed into scratch and the product run as A·B when
 * B is small (a weight W in X Wᵀ, the slots K in q Kᵀ) or the product is
 * one for libxsmm (la_local.c): OpenBLAS sends row-major A·Bᵀ with a short
 * inner dimension through its general packed path but A·B through its
 * small-matrix kernels (SkylakeX: 15% of the reference training cell), and
 * libxsmm's kernels take no transposed B at all. The same exact products,
 * summed by whichever kernel runs the shape (DECISIONS.md). */
int la_gemm(char trans_a, char trans_b, double alpha, la_mat a, la_mat b, double beta, la_mat c) {
  int ta = (trans_a == 'T'), tb = (trans_b == 'T');
  int m = c.rows, n = c.cols, k = ta ? a.rows : a.cols;
  if (m == 0 || n == 0) return 0;
  la_flops += 2ull * (uint64_t)m * (uint64_t)n * (uint64_t)k;
  const la_team *t = c.team;
  LA_PROF_BEGIN(t0);
  int rc = 0;
  if (!ta && tb &&
      ((int64_t)b.rows * b.cols <= LA_TRANSPOSE_B_MAX || la_local_small(0, m, n, k, alpha, beta))) {
    la_mat bt = la_transposed_copy(b);
    if (bt.v != b.v) b = bt, tb = 0, trans_b = 'N';
  }
  if (t && t->size > 1 && k > 0 && 2.0 * m * n * k >= t->flop_threshold)
    rc = la_gemm_team(t, trans_a, trans_b, alpha, a, b, beta, c);
  else
    rc = la_gemm_local(ta, tb, m, n, k, alpha, a.v, a.ld, b.v, b.ld, beta, c.v, c.ld);
  LA_PROF_END(t0, LA_PROF_GEMM);
  return rc;
}

void la_add_row_vector(la_mat y, const double *restrict b) {
  for (int r = 0; r < y.rows; r++) {
    double *restrict row = y.v + (int64_t)r * y.ld;
    for (int j = 0; j < y.cols; j++) row[j] += b[j];
  }
}

CS_VECTOR_CLONES void la_sum_rows(la_mat y, double *restrict acc) {
  for (int r = 0; r < y.rows; r++) {
    const double *restrict row = y.v + (int64_t)r * y.ld;
    for (int j = 0; j < y.cols; j++) acc[j] += row[j];
  }
}


uint64_t la_flop_count(void) { return la_flops; }

/* OpenBLAS's own name for the kernel set it chose (openblas_get_corename). */
extern char *openblas_get_corename(void);
const char *la_blas_kernel(void) { return openblas_get_corename(); }

/* OpenBLAS's thread count for the BLAS calls of this process
 * (openblas_set_num_threads / openblas_get_num_threads). */
extern void openblas_set_num_threads(int n);
extern int openblas_get_num_threads(void);
void la_blas_set_threads(int n) { openblas_set_num_threads(n > 0 ? n : 1); }
int la_blas_threads(void) { return openblas_get_num_threads(); }
void la_flop_reset(void) { la_flops = 0; }

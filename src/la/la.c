/* la.c — dense linear algebra on row-major views; the 1×1 team path.
 *
 * On a 1×1 team every view is its own local block, so products go straight
 * to CBLAS (OpenBLAS, single-threaded per rank). */
#include "la_internal.h"

#include <cblas.h>

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

int la_gemm(char trans_a, char trans_b, double alpha, la_mat a, la_mat b, double beta, la_mat c) {
  int ta = (trans_a == 'T'), tb = (trans_b == 'T');
  int m = c.rows, n = c.cols, k = ta ? a.rows : a.cols;
  if (m == 0 || n == 0) return 0;
  la_flops += 2ull * (uint64_t)m * (uint64_t)n * (uint64_t)k;
  const la_team *t = c.team;
  LA_PROF_BEGIN(t0);
  int rc = 0;
  if (t && t->size > 1 && k > 0 && 2.0 * m * n * k >= t->flop_threshold)
    rc = la_gemm_team(t, trans_a, trans_b, alpha, a, b, beta, c);
  else
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                n, k, alpha, a.v, a.ld, b.v, b.ld, beta, c.v, c.ld);
  LA_PROF_END(t0, LA_PROF_GEMM);
  return rc;
}

void la_add_row_vector(la_mat y, const double *restrict b) {
  for (int r = 0; r < y.rows; r++) {
    double *restrict row = y.v + (int64_t)r * y.ld;
    for (int j = 0; j < y.cols; j++) row[j] += b[j];
  }
}

void la_sum_rows(la_mat y, double *restrict acc) {
  for (int r = 0; r < y.rows; r++) {
    const double *restrict row = y.v + (int64_t)r * y.ld;
    for (int j = 0; j < y.cols; j++) acc[j] += row[j];
  }
}


uint64_t la_flop_count(void) { return la_flops; }

/* OpenBLAS's own name for the kernel set it chose (openblas_get_corename). */
extern char *openblas_get_corename(void);
const char *la_blas_kernel(void) { return openblas_get_corename(); }
void la_flop_reset(void) { la_flops = 0; }

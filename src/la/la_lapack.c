/* la_lapack.c — small dense factorisations through LAPACK (OpenBLAS).
 *
 * These are the per-point kernels of the geometry engine: a thin QR of the
 * d×m Jacobian, the singular values of its m×m R factor (condition number)
 * and the inverse of R (the orthonormal tangent frame E = R⁻¹). All
 * matrices are column-major, the LAPACK convention. There is no LAPACKE on
 * the target systems, so the Fortran entry points are declared here: every
 * argument by pointer, and each CHARACTER argument followed by its hidden
 * length (size_t, the gfortran ≥ 8 convention; harmless for C-implemented
 * routines). Workspaces live on the stack for small k (the m = 2..8 case of
 * every evaluation point) and are allocated only for larger k. */
#include "curvsweep/error.h"
#include "curvsweep/la.h"

#include <stdlib.h>
#include <string.h>

void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
             const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda,
             const double *tau, double *work, const int *lwork, int *info);
void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a,
             const int *lda, double *s, double *u, const int *ldu, double *vt, const int *ldvt,
             double *work, const int *lwork, int *info, size_t jobu_len, size_t jobvt_len);
void dtrtri_(const char *uplo, const char *diag, const int *n, double *a, const int *lda,
             int *info, size_t uplo_len, size_t diag_len);

/* k up to this size uses stack workspaces (a k×k copy plus 5k doubles). */
#define LA_SMALL_K 32

/* Thin QR, A = Q R.
 * a: (n, k) column-major, lda = n; q: (n, k) column-major; r: (k, k) column-major.
 * Householder QR (dgeqrf) in the storage of q, then R is read off the upper
 * triangle and the k reflectors are accumulated into the explicit Q (dorgqr).
 * LWORK = k is the documented minimum of both routines (unblocked code, which
 * is what LAPACK runs for small k anyway). */
int la_qr_thin(int n, int k, const double *a, double *q, double *r) {
  if (k < 1 || n < k)
    return cs_error(CS_ERR_INPUT, "la_qr_thin: need n >= k >= 1, got n = %d, k = %d", n, k);
  double stack[2 * LA_SMALL_K];
  double *tau = stack, *heap = NULL;
  if (k > LA_SMALL_K) {
    CS_CHECK(CS_CALLOC(heap, 2 * (size_t)k));
    tau = heap;
  }
  double *work = tau + k;
  int lwork = k, info = 0, rc = CS_OK;
  memcpy(q, a, sizeof(double) * (size_t)n * (size_t)k);
  dgeqrf_(&n, &k, q, &n, tau, work, &lwork, &info);
  if (info != 0)
    rc = cs_error(CS_ERR_INTERNAL, "dgeqrf failed (info = %d) for a %d x %d matrix", info, n, k);
  if (!rc) {
    // R: the upper triangle of the factored storage, zeros below
    for (int j = 0; j < k; j++)
      for (int i = 0; i < k; i++) r[i + (size_t)j * k] = i <= j ? q[i + (size_t)j * n] : 0.0;
    dorgqr_(&n, &k, &k, q, &n, tau, work, &lwork, &info);
    if (info != 0)
      rc = cs_error(CS_ERR_INTERNAL, "dorgqr failed (info = %d) for a %d x %d matrix", info, n, k);
  }
  free(heap);
  return rc;
}

/* Singular values, descending.
 * a: (k, k) column-major; s: (k).
 * dgesvd without singular vectors on a copy (LAPACK overwrites its input);
 * LWORK = 5k is the documented minimum for a square matrix. */
int la_singular_values(int k, const double *a, double *s) {
  if (k < 1) return cs_error(CS_ERR_INPUT, "la_singular_values: need k >= 1, got %d", k);
  double stack[LA_SMALL_K * LA_SMALL_K + 5 * LA_SMALL_K];
  double *copy = stack, *heap = NULL;
  if (k > LA_SMALL_K) {
    CS_CHECK(CS_CALLOC(heap, (size_t)k * k + 5 * (size_t)k));
    copy = heap;
  }
  double *work = copy + (size_t)k * k;
  int lwork = 5 * k, info = 0, one = 1;
  memcpy(copy, a, sizeof(double) * (size_t)k * k);
  dgesvd_("N", "N", &k, &k, copy, &k, s, NULL, &one, NULL, &one, work, &lwork, &info, 1, 1);
  free(heap);
  if (info < 0) return cs_error(CS_ERR_INTERNAL, "dgesvd: bad argument %d", -info);
  if (info > 0)
    return cs_error(CS_ERR_NUMERIC, "dgesvd: %d superdiagonals did not converge (k = %d)", info,
                    k);
  return CS_OK;
}

/* Inverse of an upper triangular matrix.
 * r: (k, k) column-major, upper triangular (the strictly lower part is
 * ignored); rinv: (k, k) column-major, upper triangular, R · rinv = I.
 * dtrtri on a copy whose strictly lower part is zeroed. */
int la_upper_tri_inverse(int k, const double *r, double *rinv) {
  if (k < 1) return cs_error(CS_ERR_INPUT, "la_upper_tri_inverse: need k >= 1, got %d", k);
  for (int j = 0; j < k; j++)
    for (int i = 0; i < k; i++) rinv[i + (size_t)j * k] = i <= j ? r[i + (size_t)j * k] : 0.0;
  int info = 0;
  dtrtri_("U", "N", &k, rinv, &k, &info, 1, 1);
  if (info < 0) return cs_error(CS_ERR_INTERNAL, "dtrtri: bad argument %d", -info);
  if (info > 0)
    return cs_error(CS_ERR_NUMERIC, "dtrtri: R[%d][%d] is exactly zero (singular)", info - 1,
                    info - 1);
  return CS_OK;
}

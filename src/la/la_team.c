/* la_team.c — teams of ranks that train one cell together (docs/SWEEP.md, "Teams").
 *
 * A team is a P × Q BLACS process grid on its own communicator. Within a
 * team every rank holds the same (replicated) activations and parameters;
 * each large product C = op(A) op(B) is split over the grid: process (i, j)
 * computes its block of C — a 2-D block layout, one block per process —
 * with a local dgemm on the operand rows/columns it needs (already there,
 * replicated), and the blocks are all-gathered back into the replicated C.
 * The alternative, PBLAS pdgemm on 2-D block-cyclic copies of the operands
 * (la_team_policy.use_pblas), moves the operands' panels as well and measured
 * slower (bench/team); both agree with the 1×1 path to rounding. Row-wise operations
 * (softmax, gates, LayerNorm, loss, the optimiser) therefore stay local and
 * identical on every rank of the team, and model/train/geom code is the
 * same for every team shape. Small products, where communication would
 * cost more than the arithmetic, are computed redundantly with local BLAS.
 *
 * Row-major ↔ column-major: a row-major r × c view X is the column-major
 * c × r matrix Xᵀ with the same storage, so C = op(A) op(B) is computed as
 * Cᵀ = op(B)ᵀ op(A)ᵀ, i.e. pdgemm(tb, ta, n, m, k, B, A, C). */
#include "la_internal.h"

#include "curvsweep/error.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* BLACS C interface and PBLAS/ScaLAPACK tools (no public header). */
extern int Csys2blacs_handle(MPI_Comm comm);
extern void Cfree_blacs_system_handle(int handle);
extern void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
extern void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
extern void Cblacs_gridexit(int ctxt);
extern int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc,
                   const int *nprocs);
extern void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
                      const int *irsrc, const int *icsrc, const int *ictxt, const int *lld,
                      int *info);
extern void pdgemm_(const char *transa, const char *transb, const int *m, const int *n,
                    const int *k, const double *alpha, const double *a, const int *ia,
                    const int *ja, const int *desca, const double *b, const int *ib,
                    const int *jb, const int *descb, const double *beta, double *c,
                    const int *ic, const int *jc, const int *descc);

int la_team_create(MPI_Comm comm, int p, int q, int nb, la_team **out) {
  *out = NULL;
  int size, rank;
  CS_MPI(MPI_Comm_size(comm, &size));
  CS_MPI(MPI_Comm_rank(comm, &rank));
  if (p < 1 || q < 1 || p * q != size)
    return cs_error(CS_ERR_INPUT, "team %dx%d needs %d ranks, the communicator has %d", p, q,
                    p * q, size);
  if (nb < 1) return cs_error(CS_ERR_INPUT, "team block size must be >= 1, got %d", nb);
  la_team *t = NULL;
  int rc = CS_CALLOC(t, 1);
  if (!rc) {
    t->comm = MPI_COMM_NULL, t->rank = rank, t->p = p, t->q = q, t->nb = nb;
    rc = CS_CALLOC(t->counts, size);
  }
  if (!rc) rc = CS_CALLOC(t->displs, size);
  if (!rc && (rc = la_mpi_check(MPI_Comm_dup(comm, &t->comm), "MPI_Comm_dup of the team")))
    t->comm = MPI_COMM_NULL;
  if (!rc) rc = la_comm_errors_return(t->comm);
  if (!rc) {
    t->size = size; /* from here la_team_free exits the BLACS grid */
    la_team_set_policy(t, la_team_policy_default());
  }
  if (!rc && size > 1) {
    t->blacs_handle = Csys2blacs_handle(t->comm);
    t->ctxt = t->blacs_handle;
    Cblacs_gridinit(&t->ctxt, "Row", p, q);
    int np, nq;
    Cblacs_gridinfo(t->ctxt, &np, &nq, &t->myrow, &t->mycol);
    if (np != p || nq != q || t->myrow != rank / q || t->mycol != rank % q)
      rc = cs_error(CS_ERR_MPI, "BLACS grid %dx%d came out as %dx%d (row %d, col %d)", p, q, np,
                    nq, t->myrow, t->mycol);
  }
  if (rc) la_team_free(t), t = NULL;
  *out = t;
  return rc;
}

void la_team_free(la_team *t) {
  if (!t) return;
  free(t->work), free(t->counts), free(t->displs);
  if (t->size > 1) {
    Cblacs_gridexit(t->ctxt);
    Cfree_blacs_system_handle(t->blacs_handle);
  }
  /* cleanup: a failure to free a communicator leaves nothing to do */
  if (t->comm != MPI_COMM_NULL) (void)MPI_Comm_free(&t->comm);
  free(t);
}

int la_team_size(const la_team *t) { return t ? t->size : 1; }
int la_team_rank(const la_team *t) { return t ? t->rank : 0; }
MPI_Comm la_team_comm(const la_team *t) { return t->comm; }

int la_mpi_check(int code, const char *call) {
  if (code == MPI_SUCCESS) return CS_OK;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "code %d", code);
  return cs_error(CS_ERR_MPI, "%s failed: %s", call, msg);
}

int la_comm_errors_return(MPI_Comm comm) {
  CS_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  return CS_OK;
}
void la_team_shape(const la_team *t, int *p, int *q, int *nb) {
  *p = t ? t->p : 1, *q = t ? t->q : 1, *nb = t ? t->nb : 0;
}
la_team_policy la_team_policy_default(void) {
  return (la_team_policy){.flop_threshold = LA_TEAM_FLOP_THRESHOLD, .use_pblas = 0};
}

void la_team_set_policy(la_team *t, la_team_policy policy) {
  t->flop_threshold = policy.flop_threshold;
  t->use_pblas = policy.use_pblas;
}

/* Global index of local index l in a block-cyclic dimension (source 0). */
static inline int global_index(int l, int nb, int me, int nprocs) {
  return (l / nb) * nb * nprocs + me * nb + l % nb;
}

/* The local block-cyclic piece of the column-major R × C matrix stored as
 * the row-major view x (x(i, j) of the column-major matrix = x.v[j·ld + i]),
 * into loc (lr × lc, column-major, lld = max(1, lr)). */
static void scatter_local(const la_team *t, la_mat x, int R, int C, double *loc, int lr,
                          int lc) {
  int lld = lr > 1 ? lr : 1;
  for (int jl = 0; jl < lc; jl++) {
    int j = global_index(jl, t->nb, t->mycol, t->q);
    const double *col = x.v + (int64_t)j * x.ld;
    for (int il = 0; il < lr; il += t->nb) {
      int i = global_index(il, t->nb, t->myrow, t->p);
      int run = lr - il < t->nb ? lr - il : t->nb;
      if (i + run > R) run = R - i;
      memcpy(loc + il + (int64_t)jl * lld, col + i, sizeof(double) * (size_t)run);
    }
  }
}

/* Write the local piece of process (prow, pcol) back into the replicated
 * row-major view c (column-major R × C matrix). */
static void gather_piece(const la_team *t, la_mat c, int R, int C, const double *loc, int prow,
                         int pcol) {
  int lr = numroc_(&R, &t->nb, &prow, &(int){0}, &t->p);
  int lc = numroc_(&C, &t->nb, &pcol, &(int){0}, &t->q);
  int lld = lr > 1 ? lr : 1;
  for (int jl = 0; jl < lc; jl++) {
    int j = global_index(jl, t->nb, pcol, t->q);
    double *col = c.v + (int64_t)j * c.ld;
    for (int il = 0; il < lr; il += t->nb) {
      int i = global_index(il, t->nb, prow, t->p);
      int run = lr - il < t->nb ? lr - il : t->nb;
      memcpy(col + i, loc + il + (int64_t)jl * lld, sizeof(double) * (size_t)run);
    }
  }
}

typedef struct {
  int R, C, lr, lc, desc[9];
  double *loc;
} dist_mat;

static int dist_init(const la_team *t, la_mat x, int R, int C, int copy, dist_mat *d) {
  d->R = R, d->C = C;
  d->lr = numroc_(&R, &t->nb, &t->myrow, &(int){0}, &t->p);
  d->lc = numroc_(&C, &t->nb, &t->mycol, &(int){0}, &t->q);
  int lld = d->lr > 1 ? d->lr : 1, info;
  descinit_(d->desc, &R, &C, &t->nb, &t->nb, &(int){0}, &(int){0}, &t->ctxt, &lld, &info);
  if (info != 0) return cs_error(CS_ERR_INTERNAL, "descinit failed (info %d) for %dx%d", info, R, C);
  CS_CHECK(CS_CALLOC(d->loc, (int64_t)lld * (d->lc > 0 ? d->lc : 1)));
  if (copy) scatter_local(t, x, R, C, d->loc, d->lr, d->lc);
  return CS_OK;
}

/* C = alpha op(A) op(B) + beta C on a team: pdgemm on block-cyclic copies,
 * then every rank's block of C all-gathered into the replicated C. */
static int la_gemm_pblas(const la_team *t, char ta, char tb, double alpha, la_mat a, la_mat b,
                 double beta, la_mat c) {
  int m = c.rows, n = c.cols, k = ta == 'T' ? a.rows : a.cols;
  /* column-major operands: Acm is a.cols × a.rows, etc. */
  dist_mat A = {0}, B = {0}, Cd = {0};
  int rc = dist_init(t, a, a.cols, a.rows, 1, &A);
  if (!rc) rc = dist_init(t, b, b.cols, b.rows, 1, &B);
  if (!rc) rc = dist_init(t, c, n, m, beta != 0.0, &Cd);
  double *all = NULL;
  int *counts = NULL, *displs = NULL;
  if (!rc) {
    int one = 1;
    pdgemm_(&tb, &ta, &n, &m, &k, &alpha, B.loc, &one, &one, B.desc, A.loc, &one, &one, A.desc,
            &beta, Cd.loc, &one, &one, Cd.desc);
    /* all-gather the pieces of C (column-major, lld = max(1, lr)) */
    rc = CS_CALLOC(counts, t->size);
    if (!rc) rc = CS_CALLOC(displs, t->size);
    if (!rc) {
      int64_t total = 0;
      for (int r = 0; r < t->size; r++) {
        int pr = r / t->q, pc = r % t->q;
        int lr = numroc_(&n, &t->nb, &pr, &(int){0}, &t->p);
        int lc = numroc_(&m, &t->nb, &pc, &(int){0}, &t->q);
        counts[r] = (lr > 1 ? lr : 1) * lc;
        displs[r] = (int)total;
        total += counts[r];
      }
      rc = CS_CALLOC(all, total);
      if (!rc) {
        int lld = Cd.lr > 1 ? Cd.lr : 1;
        rc = la_mpi_check(MPI_Allgatherv(Cd.loc, lld * Cd.lc, MPI_DOUBLE, all, counts, displs,
                                         MPI_DOUBLE, t->comm),
                          "MPI_Allgatherv of a team product");
        for (int r = 0; !rc && r < t->size; r++)
          gather_piece(t, c, n, m, all + displs[r], r / t->q, r % t->q);
      }
    }
  }
  free(A.loc), free(B.loc), free(Cd.loc), free(all), free(counts), free(displs);
  return rc;
}

/* Rows [*lo, *hi) of n split into parts near-equal contiguous blocks. */
static void block_range(int n, int parts, int me, int *lo, int *hi) {
  int base = n / parts, extra = n % parts;
  *lo = me * base + (me < extra ? me : extra);
  *hi = *lo + base + (me < extra);
}

/* C = alpha op(A) op(B) + beta C with replicated operands, block layout:
 * C is split into P × Q contiguous blocks (a block-cyclic layout with one
 * block per process: mb = ⌈m/P⌉, nb = ⌈n/Q⌉); process (i, j) computes its
 * block C_ij = alpha op(A)[rows_i, :] op(B)[:, cols_j] + beta C_ij with one
 * local dgemm (its operands are already there), then the blocks are
 * all-gathered. No communication but the all-gather of C. */
/* The team's scratch of at least n doubles (the team is const to callers;
 * its scratch is not part of its observable state). */
static double *team_scratch(const la_team *t, size_t n) {
  la_team *w = (la_team *)t;
  if (w->work_len < n) {
    double *p = realloc(w->work, sizeof(double) * n);
    if (!p) return NULL;
    w->work = p, w->work_len = n;
  }
  return w->work;
}

/* Contiguous C (ld = n): the team splits C's rows 1-D, each rank computes
 * its rows with one dgemm, and the rows are all-gathered in place — no
 * packing. */
static int la_gemm_rows(const la_team *t, char ta, char tb, double alpha, la_mat a, la_mat b,
                        double beta, la_mat c) {
  int m = c.rows, n = c.cols, k = ta == 'T' ? a.rows : a.cols;
  int r0, r1;
  block_range(m, t->size, t->rank, &r0, &r1);
  const double *ap = ta == 'T' ? a.v + r0 : a.v + (int64_t)r0 * a.ld;
  if (r1 > r0)
    CS_CHECK(la_gemm_local(ta == 'T', tb == 'T', r1 - r0, n, k, alpha, ap, a.ld, b.v, b.ld, beta,
                           c.v + (int64_t)r0 * n, n));
  int *counts = t->counts, *displs = t->displs; /* the team's, kept: no allocation per product */
  for (int r = 0; r < t->size; r++) {
    int a0, a1;
    block_range(m, t->size, r, &a0, &a1);
    counts[r] = (a1 - a0) * n;
    displs[r] = a0 * n;
  }
  CS_MPI(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, c.v, counts, displs, MPI_DOUBLE, t->comm));
  return CS_OK;
}

static int la_gemm_blocks(const la_team *t, char ta, char tb, double alpha, la_mat a, la_mat b,
                          double beta, la_mat c) {
  int m = c.rows, n = c.cols, k = ta == 'T' ? a.rows : a.cols;
  if (c.ld == n && (int64_t)m * n <= INT_MAX) return la_gemm_rows(t, ta, tb, alpha, a, b, beta, c);
  int r0, r1, c0, c1;
  block_range(m, t->p, t->myrow, &r0, &r1);
  block_range(n, t->q, t->mycol, &c0, &c1);
  /* op(A)[r0:r1, :]: rows of A, or columns of A when transposed */
  const double *ap = ta == 'T' ? a.v + r0 : a.v + (int64_t)r0 * a.ld;
  const double *bp = tb == 'T' ? b.v + (int64_t)c0 * b.ld : b.v + c0;
  if (r1 > r0 && c1 > c0)
    CS_CHECK(la_gemm_local(ta == 'T', tb == 'T', r1 - r0, c1 - c0, k, alpha, ap, a.ld, bp, b.ld,
                           beta, c.v + (int64_t)r0 * c.ld + c0, c.ld));
  /* all-gather the blocks (packed row-major) */
  int *counts = t->counts, *displs = t->displs, rc = CS_OK;
  double *all = NULL;
  int64_t total = 0;
  for (int r = 0; r < t->size; r++) {
    int a0, a1, b0, b1;
    block_range(m, t->p, r / t->q, &a0, &a1);
    block_range(n, t->q, r % t->q, &b0, &b1);
    counts[r] = (a1 - a0) * (b1 - b0);
    displs[r] = (int)total;
    total += counts[r];
  }
  if (!rc && !(all = team_scratch(t, (size_t)(total > 0 ? total : 1))))
    rc = cs_error(CS_ERR_NOMEM, "out of memory for a %dx%d team product", m, n);
  if (!rc) {
    double *mine = all + displs[t->rank];
    for (int i = r0; i < r1; i++)
      memcpy(mine + (int64_t)(i - r0) * (c1 - c0), c.v + (int64_t)i * c.ld + c0,
             sizeof(double) * (size_t)(c1 - c0));
    rc = la_mpi_check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE,
                                     t->comm),
                      "MPI_Allgatherv of a team product");
    for (int r = 0; !rc && r < t->size; r++) {
      if (r == t->rank) continue;
      int a0, a1, b0, b1;
      block_range(m, t->p, r / t->q, &a0, &a1);
      block_range(n, t->q, r % t->q, &b0, &b1);
      for (int i = a0; i < a1; i++)
        memcpy(c.v + (int64_t)i * c.ld + b0, all + displs[r] + (int64_t)(i - a0) * (b1 - b0),
               sizeof(double) * (size_t)(b1 - b0));
    }
  }
  return rc;
}

int la_gemm_team(const la_team *t, char ta, char tb, double alpha, la_mat a, la_mat b,
                 double beta, la_mat c) {
  if (t->use_pblas) return la_gemm_pblas(t, ta, tb, alpha, a, b, beta, c);
  return la_gemm_blocks(t, ta, tb, alpha, a, b, beta, c);
}

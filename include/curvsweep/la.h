/* la.h — the one module through which every dense product goes (docs/SWEEP.md, "Teams").
 *
 * A matrix is a row-major view plus what a ScaLAPACK 2-D block-cyclic
 * descriptor needs: global shape, block sizes, the team (BLACS context) it
 * lives on and the local extents. On the 1×1 team (the default) the local
 * block is the whole matrix and la calls BLAS directly; on larger teams a
 * product is split over the team's ranks in blocks and all-gathered (or,
 * with the pdgemm policy, CS_TEAM_PBLAS=1, goes through PBLAS). Model,
 * train and geom code never call BLAS or MPI themselves. */
#ifndef CURVSWEEP_LA_H
#define CURVSWEEP_LA_H

#include "curvsweep/clock.h"
#include <mpi.h>
#include <stdint.h>

/* The one MPI error policy (docs/ARCHITECTURE.md, "Errors"): every
 * communicator curvsweep creates returns errors (MPI_ERRORS_RETURN) instead
 * of aborting the job, and every MPI call is checked: with CS_MPI(call),
 * which returns at a failure, or inside a chain of steps (the cleanup idiom
 * of error.h) with `if (!rc) rc = la_mpi_check(call, "what");`. Both record
 * the call and MPI's own message and give CS_ERR_MPI. la is the lowest
 * module that links MPI, so the policy lives here. */
/* CS_OK when code is MPI_SUCCESS; otherwise records "CALL failed: MPI's
 * message" and returns CS_ERR_MPI. (A communicator freed while releasing
 * resources is the one call left unchecked: its failure has no one to
 * report to.) */
int la_mpi_check(int code, const char *call);
#define CS_MPI(call) CS_CHECK(la_mpi_check((call), #call))
/* Set MPI_ERRORS_RETURN on comm (a communicator the caller created). */
int la_comm_errors_return(MPI_Comm comm);

typedef struct la_team la_team;

/* A team of p × q ranks on comm (whose size must be p·q), block size nb of
 * the block-cyclic layout. Collective over comm. */
int la_team_create(MPI_Comm comm, int p, int q, int nb, la_team **out);
void la_team_free(la_team *team);
int la_team_size(const la_team *team);   /* 1 for NULL (the 1×1 team) */
int la_team_rank(const la_team *team);   /* 0 for NULL */
MPI_Comm la_team_comm(const la_team *team);
void la_team_shape(const la_team *team, int *p, int *q, int *nb);
/* How a team computes its products (docs/SWEEP.md, "Teams"). */
typedef struct {
  double flop_threshold; /* products below this many flops run redundantly
                            on every rank (tests use 0: every product split) */
  int use_pblas;         /* 1: pdgemm on block-cyclic copies instead of local
                            blocks + all-gather (slower; kept for comparison) */
} la_team_policy;

la_team_policy la_team_policy_default(void); /* threshold 2e7 flops, local blocks */
void la_team_set_policy(la_team *team, la_team_policy policy);

typedef struct {
  int rows, cols;      /* global shape (row-major logical matrix) */
  int ld;              /* row stride of the local storage */
  double *v;           /* local storage: lrows × ld */
  int mb, nb;          /* block sizes of the block-cyclic layout */
  int lrows, lcols;    /* local extents */
  const la_team *team; /* owner; NULL means the 1×1 team */
} la_mat;

/* A view of rows × cols doubles at v with row stride ld on team (NULL = 1×1). */
la_mat la_view(const la_team *team, int rows, int cols, int ld, double *v);
/* Columns [c0, c0 + n) of a view (e.g. one attention head). */
la_mat la_cols(la_mat a, int c0, int n);
/* Every k-th row starting at r0 (e.g. the value rows of a jet): needs ld scaling. */
la_mat la_rows_strided(la_mat a, int r0, int step);

/* B of a row-major A Bᵀ with at most this many entries is transposed into
 * a scratch copy first (la_gemm); a caller that keeps such a copy itself
 * and passes it as A·B gets the same product from the same kernel. */
#define LA_TRANSPOSE_B_MAX 4096

/* C = alpha · op(A) · op(B) + beta · C, op = 'N' (as is) or 'T' (transposed).
 * On a team of more than one rank: collective; A, B and C replicated on
 * every rank of the team, C identical everywhere afterwards. */
int la_gemm(char trans_a, char trans_b, double alpha, la_mat a, la_mat b, double beta, la_mat c);
/* Y[r, :] += b  for every row r. */
void la_add_row_vector(la_mat y, const double *b);
/* acc[:] += Σ_r Y[r, :]  (bias gradients). */
void la_sum_rows(la_mat y, double *acc);

/* Products of this thread that ran in libxsmm's small-matrix kernels
 * rather than OpenBLAS (la_local.c; tests and benchmarks). */
uint64_t la_small_products(void);
/* The instruction set libxsmm generates its kernels for on this CPU (its
 * own name, e.g. "cpx", "hsw"): with the BLAS kernel, what decides a
 * product's last bits. */
const char *la_small_target(void);
/* Floating-point operations issued through la on this thread (benchmarks). */
uint64_t la_flop_count(void);
void la_flop_reset(void);
/* Name of the BLAS kernel set in use (e.g. "SkylakeX", "Haswell"). */
const char *la_blas_kernel(void);
/* Threads of the BLAS calls of this process: set (n >= 1) and read. The
 * command line sets one unless the user chose (docs/SWEEP.md, "Threads"). */
void la_blas_set_threads(int n);
int la_blas_threads(void);

/* Where training time goes (bench/train_cell). Only a library compiled
 * with CS_PROFILE (the curvsweep_core_prof target, linked by the bench
 * alone) has timers: in the normal build LA_PROF_BEGIN/END expand to
 * nothing and la_prof_seconds reports zeros. Even in the instrumented
 * build the timers run only after la_prof_enable(1). Regions never nest:
 * "other" is the total minus the regions. Per thread. */
typedef enum {
  LA_PROF_GEMM,        /* la_gemm (every product) */
  LA_PROF_ELEMENTWISE, /* biases, gates, activations, LayerNorm, residuals, loss */
  LA_PROF_SOFTMAX,     /* attention softmax forward and backward */
  LA_PROF_OPTIMIZER,   /* zeroing gradients, Adam */
  LA_PROF_TOKENS,      /* self family: the per-point token products Q Kᵀ and P V
                          and their backward (loops outside la); lm family: its
                          causal attention (products and softmax), forward and
                          backward */
  LA_PROF_KINDS
} la_prof_kind;
extern _Thread_local int la_prof_on;
void la_prof_enable(int on);
void la_prof_reset(void);
void la_prof_seconds(double seconds[LA_PROF_KINDS]);
int la_prof_compiled(void); /* 1 in the CS_PROFILE build */
void la_prof_add(la_prof_kind kind, double seconds);
#ifdef CS_PROFILE
#define LA_PROF_BEGIN(t) double t = la_prof_on ? cs_monotonic_seconds() : 0.0
#define LA_PROF_END(t, kind) \
  if (la_prof_on) la_prof_add((kind), cs_monotonic_seconds() - (t))
#else
#define LA_PROF_BEGIN(t) ((void)0)
#define LA_PROF_END(t, kind) ((void)0)
#endif


/* Small dense factorisations (LAPACK), used per point by geom. */
/* Thin QR of the column-major n×k matrix A (n ≥ k, lda = n): Q n×k with
 * orthonormal columns (column-major, ldq = n) and R k×k upper triangular
 * (column-major, ldr = k), with A = Q R. */
int la_qr_thin(int n, int k, const double *a, double *q, double *r);
/* Singular values (descending) of the column-major k×k matrix A. */
int la_singular_values(int k, const double *a, double *s);
/* Inverse of the column-major k×k upper triangular R (strictly lower part
 * ignored) into rinv (column-major, upper triangular); CS_ERR_NUMERIC if R
 * has an exactly zero diagonal entry. */
int la_upper_tri_inverse(int k, const double *r, double *rinv);
/* la_gemm keeps one growing scratch per thread for small transposed
 * operands. Release it (e.g. before a thread ends, or for leak checkers);
 * it is re-created on demand. */
void la_workspace_release(void);

#endif

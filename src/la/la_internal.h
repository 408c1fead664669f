/* la_internal.h — what la.c and la_team.c share. */
#ifndef CURVSWEEP_LA_INTERNAL_H
#define CURVSWEEP_LA_INTERNAL_H

#include "curvsweep/la.h"

#include <mpi.h>

/* Products smaller than this (2mnk flops) are computed redundantly with
 * local BLAS on every rank of a team: cheaper than distributing them. */
#define LA_TEAM_FLOP_THRESHOLD 2e7

struct la_team {
  MPI_Comm comm;        /* the team's own communicator */
  int size, rank;
  int p, q, myrow, mycol; /* BLACS grid, row-major process order */
  int nb;               /* block size of the block-cyclic layout */
  int ctxt, blacs_handle;
  double flop_threshold;
  int use_pblas;        /* pdgemm on block-cyclic copies instead of local blocks */
  double *work;         /* all-gather scratch, grown on demand (kept: no page */
  size_t work_len;      /* faults on every product) */
  int *counts, *displs; /* all-gather counts and displacements, size entries each */
};

/* C = alpha op(A) op(B) + beta C on this rank alone, row-major, op(X) = Xᵀ
 * when tX: libxsmm's kernel for small shapes, OpenBLAS otherwise
 * (la_local.c). Every local product of la goes through here. CS_ERR_NOMEM
 * when its padding scratch cannot grow. */
int la_gemm_local(int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                  const double *b, int ldb, double beta, double *c, int ldc);
/* 1 when libxsmm is to run an m × n × k product with these scalars (it
 * may still decline a transposed B: la_gemm transposes B first). */
int la_local_small(int ta, int m, int n, int k, double alpha, double beta);
/* Frees this thread's padding scratch (la_workspace_release). */
void la_local_release(void);

int la_gemm_team(const la_team *t, char ta, char tb, double alpha, la_mat a, la_mat b,
                 double beta, la_mat c);

#endif

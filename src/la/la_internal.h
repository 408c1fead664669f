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

int la_gemm_team(const la_team *t, char ta, char tb, double alpha, la_mat a, la_mat b,
                 double beta, la_mat c);

#endif

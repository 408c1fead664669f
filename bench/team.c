/* bench/team.c — a cell's training step on a 1×1 and a 1×2 team.
 *
 *   OPENBLAS_NUM_THREADS=1 mpiexec -np 2 build/bench_team
 * For gated depth-4 models, batch 1024, widths 16 … 1024: seconds per
 * optimisation step on one rank and on a 1×2 team, the speedup, and
 * GFLOP/s per rank. Targets (issue 6): speedup ≥ 1.6 at width 1024; the
 * width below which 1×1 is faster is what `run --dry-run` suggests. */
#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/model.h"
#include "curvsweep/sweep.h"
#include "curvsweep/tasks.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define BATCH 1024

/* Seconds per step (forward, loss, backward, SGD update) and GEMM flops. */
static int time_steps(const cs_config *c, const la_team *team, int steps, double *sec,
                      double *flops) {
  cs_dataset d;
  CS_CHECK(task_generate(c->task, 2, BATCH, 0, SPLIT_TRAIN, 0, &d));
  cs_model *M;
  cs_acts *A;
  CS_CHECK(model_create(c, team, &M));
  CS_CHECK(model_acts_create(M, BATCH, 0, &A));
  int64_t np = model_param_count(M);
  double *p = model_params(M), *g = model_grads(M);
  /* one untimed step: first touch of the activations' pages */
  CS_CHECK(model_forward(M, A, BATCH, d.x));
  model_loss(A, BATCH, d.y, NULL);
  CS_CHECK(model_backward(M, A, BATCH, d.x));
  MPI_Barrier(team ? la_team_comm(team) : MPI_COMM_SELF);
  la_flop_reset();
  double t0 = MPI_Wtime();
  for (int s = 0; s < steps; s++) {
    CS_CHECK(model_forward(M, A, BATCH, d.x));
    model_loss(A, BATCH, d.y, NULL);
    memset(g, 0, sizeof(double) * np);
    CS_CHECK(model_backward(M, A, BATCH, d.x));
    for (int64_t i = 0; i < np; i++) p[i] -= 1e-3 * g[i];
  }
  *sec = (MPI_Wtime() - t0) / steps;
  *flops = (double)la_flop_count() / steps;
  model_acts_free(A);
  model_free(M);
  task_dataset_free(&d);
  return CS_OK;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "bench_team: run with mpiexec -np 2\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
  la_team *team = NULL;
  if (pair != MPI_COMM_NULL && la_team_create(pair, 1, 2, 64, &team)) {
    fprintf(stderr, "bench_team: %s\n", cs_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0)
    printf("%6s %12s %12s %8s %16s\n", "width", "1x1 s/step", "1x2 s/step", "speedup",
           "1x2 GFLOP/s/rank");
  const int widths[] = {16, 32, 64, 128, 256, 512, 1024};
  int crossover = 0;
  for (size_t k = 0; k < sizeof widths / sizeof widths[0] && pair != MPI_COMM_NULL; k++) {
    cs_config c = config_default();
    c.arch = ARCH_GATED, c.depth = 4, c.width = widths[k], c.batch = BATCH;
    int steps = widths[k] <= 128 ? 20 : widths[k] <= 512 ? 5 : 3;
    double t1 = 0, f1 = 0, t2, f2;
    if (rank == 0 && time_steps(&c, NULL, steps, &t1, &f1)) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Barrier(pair);
    if (time_steps(&c, team, steps, &t2, &f2)) MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0) {
      printf("%6d %12.5f %12.5f %8.2f %16.2f\n", widths[k], t1, t2, t1 / t2, f1 / 2 / t2 / 1e9);
      if (t1 / t2 >= 1.4 && !crossover) crossover = widths[k];
    }
  }
  if (rank == 0)
    printf("1x2 first reaches speedup 1.4 (efficiency 0.7) at width %d; run --dry-run suggests "
           "1x1 below %d (SWEEP_TEAM_MIN_WIDTH); target: speedup >= 1.6 at width 1024\n",
           crossover, SWEEP_TEAM_MIN_WIDTH);
  if (team) la_team_free(team);
  if (pair != MPI_COMM_NULL) MPI_Comm_free(&pair);
  MPI_Finalize();
  return 0;
}

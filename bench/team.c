/* bench/team.c — a cell's training step on a 1×1 and a 1×2 team.
 *
 *   OPENBLAS_NUM_THREADS=1 mpiexec -np 2 build/bench_team [PAIRS [MAX_WIDTH]]
 * For gated depth-4 models, batch 1024, widths 16 … MAX_WIDTH (default
 * 1024): seconds per optimisation step on one rank and on a 1×2 team,
 * interleaved (bench/interleave.h, issue 29): pair p times 1×1 on rank 0,
 * then 1×2 on both ranks, then the dgemm rate on rank 0; the speedup is
 * reported as the median of the per-pair ratios with its min–max (PAIRS,
 * default 5), beside GFLOP/s per rank and the dgemm rate of the same
 * window. Targets (issue 6): speedup ≥ 1.6 at width 1024; the width below
 * which 1×1 is faster is what `run --dry-run` suggests. */
#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/model.h"
#include "curvsweep/sweep.h"
#include "curvsweep/tasks.h"
#include "interleave.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 1024
#define MAX_PAIRS 64

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
  double t0 = cs_monotonic_seconds();
  for (int s = 0; s < steps; s++) {
    CS_CHECK(model_forward(M, A, BATCH, d.x));
    model_loss(A, BATCH, d.y, NULL);
    memset(g, 0, sizeof(double) * np);
    CS_CHECK(model_backward(M, A, BATCH, d.x));
    for (int64_t i = 0; i < np; i++) p[i] -= 1e-3 * g[i];
  }
  *sec = (cs_monotonic_seconds() - t0) / steps;
  *flops = (double)la_flop_count() / steps;
  model_acts_free(A);
  model_free(M);
  task_dataset_free(&d);
  return CS_OK;
}

/* One side of a pair: steps on one rank (rank 0 only; the others wait
 * for the next side) or on the 1×2 team (both ranks). */
typedef struct {
  cs_config cfg;
  const la_team *team; /* NULL: 1×1 */
  MPI_Comm comm;
  int rank, steps;
  double sec[MAX_PAIRS], flops[MAX_PAIRS];
} team_side;

static int side_run(void *ctx, int p) {
  team_side *s = ctx;
  MPI_Barrier(s->comm);
  if (!s->team && s->rank != 0) return CS_OK;
  return time_steps(&s->cfg, s->team, s->steps, &s->sec[p], &s->flops[p]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int pairs = argc > 1 ? atoi(argv[1]) : BENCH_MIN_PAIRS;
  int max_width = argc > 2 ? atoi(argv[2]) : 1024;
  if (size < 2 || pairs < 1 || pairs > MAX_PAIRS) {
    if (rank == 0)
      fprintf(stderr, "usage: mpiexec -np 2 bench_team [PAIRS (1..%d) [MAX_WIDTH]]\n", MAX_PAIRS);
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
  char machine[320];
  bench_machine_tag(machine, sizeof machine);
  if (rank == 0) {
    bench_print_machine();
    printf("%d interleaved pairs per width (1x1, 1x2, dgemm); seconds per step are medians "
           "[%s]\n", pairs, machine);
    printf("%6s %11s %11s %24s %9s %22s\n", "width", "1x1 s/step", "1x2 s/step",
           "speedup med (min-max)", "1x2 GF/s", "dgemm GF/s med (min-max)");
  }
  const int widths[] = {16, 32, 64, 128, 256, 512, 1024};
  int crossover = 0;
  bench_dgemm dgemm[MAX_PAIRS];
  for (size_t k = 0; k < sizeof widths / sizeof widths[0] && pair != MPI_COMM_NULL; k++) {
    if (widths[k] > max_width) break;
    static team_side one, two;
    cs_config c = config_default();
    c.arch = ARCH_GATED, c.depth = 4, c.width = widths[k], c.batch = BATCH;
    int steps = widths[k] <= 128 ? 20 : widths[k] <= 512 ? 5 : 3;
    one = (team_side){.cfg = c, .team = NULL, .comm = pair, .rank = rank, .steps = steps};
    two = (team_side){.cfg = c, .team = team, .comm = pair, .rank = rank, .steps = steps};
    bench_pair_opts o = {.pairs = pairs, .dgemm_n = rank == 0 ? 1024 : 0, .dgemm_reps = 3};
    if (bench_interleave(&o, side_run, &one, side_run, &two, dgemm)) {
      fprintf(stderr, "bench_team: %s\n", cs_error_message());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
      double speedup[MAX_PAIRS], rate[MAX_PAIRS];
      for (int p = 0; p < pairs; p++)
        speedup[p] = one.sec[p] / two.sec[p], rate[p] = two.flops[p] / 2 / two.sec[p] / 1e9;
      bench_spread sp = bench_spread_of(speedup, pairs), dg = bench_dgemm_spread(dgemm, pairs, 0);
      char stext[32], dtext[32];
      snprintf(stext, sizeof stext, "%.2f (%.2f-%.2f)", sp.median, sp.min, sp.max);
      snprintf(dtext, sizeof dtext, "%.1f (%.1f-%.1f)", dg.median, dg.min, dg.max);
      printf("%6d %11.5f %11.5f %24s %9.2f %22s\n", widths[k],
             bench_spread_of(one.sec, pairs).median, bench_spread_of(two.sec, pairs).median,
             stext, bench_spread_of(rate, pairs).median, dtext);
      if (sp.median >= 1.4 && !crossover) crossover = widths[k];
    }
  }
  if (rank == 0)
    printf("1x2 first reaches a median speedup of 1.4 (efficiency 0.7) at width %d; run "
           "--dry-run suggests 1x1 below %d (SWEEP_TEAM_MIN_WIDTH); target: speedup >= 1.6 at "
           "width 1024\n",
           crossover, SWEEP_TEAM_MIN_WIDTH);
  if (team) la_team_free(team);
  if (pair != MPI_COMM_NULL) MPI_Comm_free(&pair);
  MPI_Finalize();
  return 0;
}

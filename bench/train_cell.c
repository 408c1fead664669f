/* bench/train_cell.c — seconds and GFLOP/s of training the reference cell
 * (gated, depth 4, width 16, 3 slots, circles, 2048 points, batch 256,
 * 100 epochs) and the same at width 128, against the single-core dgemm
 * rate measured here. Not a test: prints numbers and ratios.
 *
 *   OPENBLAS_NUM_THREADS=1 build/bench_train_cell [repeats]
 * Targets (issue 2): reference cell ≤ 0.2 s; width 128 ≥ 40% of dgemm. */
#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/tasks.h"
#include "curvsweep/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Best-of-r dgemm rate for n×n×n through la. */
static double dgemm_gflops(int n, int r) {
  double *a = calloc((size_t)n * n, sizeof *a), *b = calloc((size_t)n * n, sizeof *b),
         *c = calloc((size_t)n * n, sizeof *c);
  for (long i = 0; i < (long)n * n; i++) a[i] = 1.0 / (1 + i % 7), b[i] = 1.0 / (1 + i % 5);
  double best = 1e30;
  for (int k = 0; k < r; k++) {
    double t0 = now();
    la_gemm('N', 'N', 1.0, la_view(NULL, n, n, n, a), la_view(NULL, n, n, n, b), 0.0,
            la_view(NULL, n, n, n, c));
    double t = now() - t0;
    if (t < best) best = t;
  }
  free(a), free(b), free(c);
  return 2.0 * n * n * n / best / 1e9;
}

/* Train the cell r times; best seconds and the GEMM GFLOP/s of that run. */
static int bench_cell(int width, int r, double *seconds, double *gflops, double *acc) {
  cs_config c = config_default();
  c.arch = ARCH_GATED, c.depth = 4, c.width = width, c.slots = 3, c.task = TASK_CIRCLES;
  c.train_points = 2048, c.batch = 256, c.epochs = 100;
  cs_dataset tr, te;
  CS_CHECK(task_generate(c.task, 2, c.train_points, 0, SPLIT_TRAIN, 0, &tr));
  CS_CHECK(task_generate(c.task, 2, c.test_points, 0, SPLIT_TEST, 0, &te));
  *seconds = 1e30;
  for (int k = 0; k < r; k++) {
    cs_model *M;
    CS_CHECK(model_create(&c, NULL, &M));
    cs_cell_result res = {0};
    la_flop_reset();
    double t0 = now();
    CS_CHECK(train_model(M, &c, &tr, &te, NULL, &res));
    double t = now() - t0;
    if (t < *seconds) {
      *seconds = t;
      *gflops = la_flop_count() / t / 1e9;
      *acc = res.test_acc;
    }
    result_free(&res);
    model_free(M);
  }
  task_dataset_free(&tr), task_dataset_free(&te);
  return CS_OK;
}

int main(int argc, char **argv) {
  int r = argc > 1 ? atoi(argv[1]) : 3;
  if (r < 1) r = 1;
  double peak = dgemm_gflops(1024, 3);
  printf("single-core dgemm (1024^3, through la): %.2f GFLOP/s\n", peak);
  int widths[2] = {16, 128};
  for (int i = 0; i < 2; i++) {
    double s, g, acc;
    if (bench_cell(widths[i], r, &s, &g, &acc)) {
      fprintf(stderr, "bench: %s\n", cs_error_message());
      return 1;
    }
    printf("gated depth 4 width %3d, circles, 2048 pts, batch 256, 100 epochs: %.3f s, "
           "%.2f GFLOP/s (%.1f%% of dgemm), test acc %.3f\n",
           widths[i], s, g, 100 * g / peak, acc);
  }
  printf("targets: width 16 <= 0.2 s; width 128 >= 40%% of dgemm\n");
  return 0;
}

/* bench/train_cell.c — seconds and GFLOP/s of training the reference cell
 * (gated, depth 4, width 16, 3 slots, circles, 2048 points, batch 256,
 * 100 epochs) and the same at width 128, against the single-core dgemm
 * rate measured in the same run (1024³ through la, best of the
 * measurements before and after the cells), and where the time goes.
 * Not a test: prints numbers and ratios.
 *
 *   OPENBLAS_NUM_THREADS=1 build/bench_train_cell [repeats w16] [repeats w128]
 *
 * Headline times are the best wall time of the repeats (with that run's
 * thread cpu time beside it: on a shared machine wall time includes other
 * processes' turns on the core) with the timers off (this
 * binary links curvsweep_core_prof, whose timers cost one predictable
 * branch per region when off). The breakdown comes from as many runs
 * again with the timers on (the fastest; two clock reads per region): GEMM (every la_gemm), element-wise (biases, gate,
 * activations, LayerNorm, residuals, loss), softmax (attention softmax
 * forward and backward), optimizer (gradient zeroing and Adam), token
 * products (the self family's per-point Q Kᵀ and P V, forward and
 * backward), other
 * (the rest: batch gathering, shuffles, evaluation bookkeeping, calls).
 * Targets (issue 15): width 16 ≤ 0.12 s; width 128 ≥ 80% of dgemm.
 * Third cell (issue 12): the self-attention reference cell (family self,
 * gated at g1, depth 4, width 16, 2 heads, same data and schedule); its
 * GFLOP/s counts the la products, as for the memory cells (the per-point
 * token products Q Kᵀ and P V are loops outside la, docs/DECISIONS.md;
 * the breakdown times them, with the softmax backward between them, as
 * "token products").
 *
 *   OPENBLAS_NUM_THREADS=1 build/bench_train_cell [reps w16] [reps w128] [reps self]
 *
 * A repeat count of 0 skips that cell (for profiling one cell alone). */
#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/model.h"
#include "curvsweep/tasks.h"
#include "curvsweep/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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

typedef struct {
  double seconds, cpu, gflops, cpu_gflops, acc, model_gflop;
  double prof_total, prof[LA_PROF_KINDS];
} cell_numbers;

static int train_once(const cs_config *c, const cs_dataset *tr, const cs_dataset *te,
                      double *wall, double *cpu, uint64_t *flops, double *acc) {
  cs_model *M;
  CS_CHECK(model_create(c, NULL, &M));
  cs_cell_result res = {0};
  la_flop_reset();
  double t0 = now(), c0 = cpu_now();
  int rc = train_model(M, c, tr, te, NULL, &res);
  *wall = now() - t0, *cpu = cpu_now() - c0;
  *flops = la_flop_count();
  *acc = res.test_acc;
  result_free(&res);
  model_free(M);
  return rc;
}

/* Train the cell r times with the timers off, then r times with them on
 * (the breakdown is the fastest of those: one run is at the mercy of
 * whatever else the shared core is doing). family self: the self-attention
 * reference cell (gated at g1, 2 heads). */
static int bench_cell(int width, cs_family family, int r, cell_numbers *out) {
  cs_config c = config_default();
  c.arch = ARCH_GATED, c.depth = 4, c.width = width, c.slots = 3, c.task = TASK_CIRCLES;
  c.train_points = 2048, c.batch = 256, c.epochs = 100;
  if (family == FAMILY_SELF) c.family = FAMILY_SELF, c.gate = GATE_G1, c.heads = 2;
  cs_dataset tr, te;
  CS_CHECK(task_generate(c.task, 2, c.train_points, 0, SPLIT_TRAIN, 0, &tr));
  CS_CHECK(task_generate(c.task, 2, c.test_points, 0, SPLIT_TEST, 0, &te));
  /* model FLOPs: the textbook forward pass (docs/MODELS.md; the count the
   * cost estimate of run --dry-run uses) 3× per trained point (forward,
   * and backward to activations and to weights), 1× per evaluated point */
  int evals = c.epochs / c.eval_every + (c.epochs % c.eval_every != 0);
  out->model_gflop = model_forward_flops_per_point(&c) *
                     (3.0 * c.epochs * c.train_points + (double)evals * (c.train_points + c.test_points)) / 1e9;
  out->seconds = 1e30;
  for (int k = 0; k < r; k++) {
    double wall, cpu, acc;
    uint64_t flops;
    CS_CHECK(train_once(&c, &tr, &te, &wall, &cpu, &flops, &acc));
    if (wall < out->seconds) {
      out->seconds = wall, out->cpu = cpu, out->acc = acc;
      out->gflops = (double)flops / wall / 1e9;
      out->cpu_gflops = (double)flops / cpu / 1e9;
    }
  }
  out->prof_total = 1e30;
  for (int k = 0; k < r; k++) {
    double wall, cpu, acc;
    uint64_t flops;
    la_prof_reset();
    la_prof_enable(1);
    int rc = train_once(&c, &tr, &te, &wall, &cpu, &flops, &acc);
    la_prof_enable(0);
    if (rc) return rc;
    if (wall < out->prof_total) {
      out->prof_total = wall;
      la_prof_seconds(out->prof);
    }
  }
  task_dataset_free(&tr), task_dataset_free(&te);
  return CS_OK;
}

int main(int argc, char **argv) {
  int reps[3] = {argc > 1 ? atoi(argv[1]) : 5, argc > 2 ? atoi(argv[2]) : 2,
                 argc > 3 ? atoi(argv[3]) : 5};
  int widths[3] = {16, 128, 16};
  cs_family family[3] = {FAMILY_MEMORY, FAMILY_MEMORY, FAMILY_SELF};
  const char *kernel = la_blas_kernel();
  printf("BLAS kernel: %s%s%s\n", kernel,
         strcmp(kernel, "Prescott") == 0
             ? " (OpenBLAS's generic fallback: on an AVX-512 or AVX2 CPU set "
               "OPENBLAS_CORETYPE=SkylakeX or Haswell, docs/DECISIONS.md)"
             : "",
         la_prof_compiled() ? "" : " (timers not compiled in: no breakdown)");
  double peak = dgemm_gflops(1024, 3);
  cell_numbers cells[3];
  for (int i = 0; i < 3; i++) {
    if (reps[i] < 1) continue;
    if (bench_cell(widths[i], family[i], reps[i], &cells[i])) {
      fprintf(stderr, "bench: %s\n", cs_error_message());
      return 1;
    }
  }
  double after = dgemm_gflops(1024, 3);
  if (after > peak) peak = after;
  printf("single-core dgemm (1024^3, through la, best before/after): %.2f GFLOP/s\n", peak);
  static const char *names[LA_PROF_KINDS] = {"GEMM", "element-wise", "softmax", "optimizer",
                                                    "token products"};
  for (int i = 0; i < 3; i++) {
    if (reps[i] < 1) continue;
    const cell_numbers *n = &cells[i];
    printf("%s gated%s depth 4 width %3d%s, circles, 2048 pts, batch 256, 100 epochs: %.3f s, "
           "%.2f GFLOP/s (%.1f%% of dgemm), test acc %.3f\n",
           family[i] == FAMILY_SELF ? "self-attention" : "memory", family[i] == FAMILY_SELF ? " g1" : "",
           widths[i], family[i] == FAMILY_SELF ? " 2 heads" : "", n->seconds, n->gflops,
           100 * n->gflops / peak, n->acc);
    printf("  on the thread's cpu time (what other processes on a shared core do not "
           "inflate): %.3f s, %.2f GFLOP/s (%.1f%% of dgemm)\n",
           n->cpu, n->cpu_gflops, 100 * n->cpu_gflops / peak);
    printf("  in model FLOPs (%.2f GFLOP: the textbook forward 3x per trained point, 1x per "
           "evaluated point): %.2f GFLOP/s (%.1f%% of dgemm)\n",
           n->model_gflop, n->model_gflop / n->seconds, 100 * n->model_gflop / n->seconds / peak);
    double other = n->prof_total;
    printf("  breakdown (timed run, %.3f s):", n->prof_total);
    for (int k = 0; k < LA_PROF_KINDS; k++) {
      printf(" %s %.1f%%,", names[k], 100 * n->prof[k] / n->prof_total);
      other -= n->prof[k];
    }
    printf(" other %.1f%%\n", 100 * other / n->prof_total);
  }
  printf("before (issue 15): width 16 0.255 s, 18 GFLOP/s (35%% of dgemm); "
         "width 128 7.24 s (70%% of dgemm)\n");
  printf("targets (issue 15): width 16 <= 0.12 s; width 128 >= 80%% of dgemm\n");
  return 0;
}

/* bench/interleave.h — what the comparisons in bench/ share: the two sides
 * of a comparison run interleaved, A B A B …, with a dgemm measurement
 * inside every pair, so that a shared machine changing speed within
 * minutes moves both sides of each pair alike; ratios are then reported
 * per pair as their median with the min–max over pairs (issue 29). Also
 * the clocks (wall: cs_monotonic_seconds; cpu time of the thread or the
 * process) and the machine description printed beside absolute times (CPU
 * model, BLAS kernel, the OpenBLAS environment, date).
 * Header-only: every bench/<name>.c is its own program. */
#ifndef CS_BENCH_INTERLEAVE_H
#define CS_BENCH_INTERLEAVE_H

#include "curvsweep/clock.h"
#include "curvsweep/error.h"
#include "curvsweep/la.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Fewest pairs a comparison should report a spread over (issue 29). */
#define BENCH_MIN_PAIRS 5

/* Seconds of cpu time of the calling thread: what other processes on a
 * shared core do not inflate (cache and memory contention still do). */
static inline double bench_thread_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds of cpu time of the whole process (every thread). */
static inline double bench_process_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The first "model name" of /proc/cpuinfo, or "unknown CPU". */
static inline void bench_cpu_model(char *buf, size_t len) {
  snprintf(buf, len, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) != 0 || !colon) continue;
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    colon[strcspn(colon, "\n")] = '\0';
    if (*colon) snprintf(buf, len, "%s", colon);
    break;
  }
  fclose(f);
}

/* "CPU <model name>, BLAS kernel <kernel>, libxsmm <target>": what goes
 * beside an absolute time. */
static inline void bench_machine_tag(char *buf, size_t len) {
  char cpu[256];
  bench_cpu_model(cpu, sizeof cpu);
  snprintf(buf, len, "%s, BLAS kernel %s, libxsmm %s", cpu, la_blas_kernel(), la_small_target());
}

/* One line naming the machine: CPU, BLAS kernel, the OpenBLAS
 * environment and the UTC date (what a figure needs to be compared). */
static inline void bench_print_machine(void) {
  char tag[320], date[32];
  bench_machine_tag(tag, sizeof tag);
  cs_utc_now(date, sizeof date, 0);
  const char *threads = getenv("OPENBLAS_NUM_THREADS"), *core = getenv("OPENBLAS_CORETYPE");
  printf("machine: %s (OPENBLAS_NUM_THREADS=%s, OPENBLAS_CORETYPE=%s), %s\n", tag,
         threads ? threads : "unset", core ? core : "unset", date);
}

/* The n×n×n dgemm rate through la, the best of r products, on the wall
 * clock and on the thread's cpu time (GFLOP/s; zeros if out of memory). */
typedef struct {
  double gflops, cpu_gflops;
} bench_dgemm;

static inline bench_dgemm bench_dgemm_rate(int n, int r) {
  bench_dgemm out = {0, 0};
  size_t nn = (size_t)n * n;
  double *a = calloc(nn, sizeof *a), *b = calloc(nn, sizeof *b), *c = calloc(nn, sizeof *c);
  if (a && b && c) {
    for (size_t i = 0; i < nn; i++)
      a[i] = 1.0 / (double)(1 + i % 7), b[i] = 1.0 / (double)(1 + i % 5);
    double best = 1e30, best_cpu = 1e30;
    for (int k = 0; k < r; k++) {
      double t0 = cs_monotonic_seconds(), c0 = bench_thread_cpu_seconds();
      if (la_gemm('N', 'N', 1.0, la_view(NULL, n, n, n, a), la_view(NULL, n, n, n, b), 0.0,
                  la_view(NULL, n, n, n, c)))
        break;
      double t = cs_monotonic_seconds() - t0, tc = bench_thread_cpu_seconds() - c0;
      if (t < best) best = t;
      if (tc < best_cpu) best_cpu = tc;
    }
    double flop = 2.0 * n * n * (double)n;
    if (best < 1e30) out.gflops = flop / best / 1e9;
    if (best_cpu < 1e30 && best_cpu > 0) out.cpu_gflops = flop / best_cpu / 1e9;
  }
  free(a), free(b), free(c);
  return out;
}

/* Median (the mean of the middle two for an even count), min and max. */
typedef struct {
  double median, min, max;
  int n;
} bench_spread;

static inline int bench_cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static inline bench_spread bench_spread_of(const double *v, int n) {
  bench_spread s = {0, 0, 0, n};
  if (n < 1) return s;
  double *w = malloc(sizeof *w * (size_t)n);
  if (!w) return s;
  memcpy(w, v, sizeof *w * (size_t)n);
  qsort(w, (size_t)n, sizeof *w, bench_cmp_double);
  s.min = w[0], s.max = w[n - 1];
  s.median = n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
  free(w);
  return s;
}

/* "median 12.3 (min 10.1, max 14.0, 5 pairs)" with fmt for each number. */
static inline void bench_spread_text(char *buf, size_t len, const char *fmt, bench_spread s) {
  char med[32], lo[32], hi[32];
  snprintf(med, sizeof med, fmt, s.median);
  snprintf(lo, sizeof lo, fmt, s.min);
  snprintf(hi, sizeof hi, fmt, s.max);
  snprintf(buf, len, "median %s (min %s, max %s, %d pair%s)", med, lo, hi, s.n,
           s.n == 1 ? "" : "s");
}

/* One side of a comparison: run once as pair number `pair` (0-based) and
 * keep what it measured in its ctx. CS_OK or an error code (cs_error set). */
typedef int (*bench_side_fn)(void *ctx, int pair);

/* The pair loop: for p = 0 … pairs−1 run a, then b (if not NULL), then
 * (dgemm_n > 0) the dgemm rate, best of dgemm_reps, into dgemm[p]. One
 * progress line per pair on stderr when label is not NULL. */
typedef struct {
  int pairs;
  int dgemm_n, dgemm_reps;
  const char *label;
} bench_pair_opts;

static inline int bench_interleave(const bench_pair_opts *o, bench_side_fn a, void *actx,
                                   bench_side_fn b, void *bctx, bench_dgemm *dgemm) {
  for (int p = 0; p < o->pairs; p++) {
    CS_CHECK(a(actx, p));
    if (b) CS_CHECK(b(bctx, p));
    if (o->dgemm_n > 0 && dgemm) dgemm[p] = bench_dgemm_rate(o->dgemm_n, o->dgemm_reps);
    if (o->label) fprintf(stderr, "%s: pair %d of %d done\n", o->label, p + 1, o->pairs);
  }
  return CS_OK;
}

/* The dgemm rates of the pairs, wall (cpu = 0) or cpu time (cpu = 1), as a spread. */
static inline bench_spread bench_dgemm_spread(const bench_dgemm *d, int pairs, int cpu) {
  bench_spread s = {0, 0, 0, 0};
  double *v = malloc(sizeof *v * (size_t)(pairs > 0 ? pairs : 1));
  if (!v) return s;
  for (int p = 0; p < pairs; p++) v[p] = cpu ? d[p].cpu_gflops : d[p].gflops;
  s = bench_spread_of(v, pairs);
  free(v);
  return s;
}

#endif

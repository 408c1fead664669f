/* bench/small_products.c — la's local product (src/la/la_local.c: libxsmm
 * for small shapes, OpenBLAS otherwise) against OpenBLAS alone, product by
 * product, on the shapes of the reference cells and around the bounds that
 * choose libxsmm. Not a test: prints numbers and ratios.
 *
 *   OPENBLAS_NUM_THREADS=1 build/bench_small_products [reps]
 *
 * For each shape the two calls alternate, la then OpenBLAS, reps times
 * (default 200) and each keeps its fastest call (thread cpu time: what
 * other processes' turns on a shared core do not inflate; a shared host
 * changing speed moves both alike). BENCH_COLD=1 streams 8 MB through the
 * cache before every call, so that the operands come from L3 or memory as
 * in a training step. Printed: GFLOP/s of each, their ratio, and which
 * library la ran. */
#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "interleave.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#define EVICT_BYTES (8u << 20)

typedef struct {
  const char *what;
  char ta, tb;
  int m, n, k;
  double beta;
} shape;

/* Row-major C (m × n) = op(A) op(B) + beta C; packed operands. */
static const shape SHAPES[] = {
    {"memory w128: [z|s] = a [Wg; P]^T", 'N', 'T', 256, 131, 128, 0.0},
    {"memory w128: y = u Wo^T + bo", 'N', 'T', 256, 128, 128, 1.0},
    {"memory w128: du = dy Wo", 'N', 'N', 256, 128, 128, 0.0},
    {"memory w128: dWo += dy^T u", 'T', 'N', 128, 128, 256, 1.0},
    {"memory w128: dU += alpha^T do", 'T', 'N', 3, 128, 256, 1.0},
    {"ref w16: [z|s] = a [Wg; P]^T", 'N', 'N', 256, 19, 16, 0.0},
    {"ref w16: o = alpha U", 'N', 'N', 256, 16, 3, 0.0},
    {"ref w16: y = u Wo^T + bo", 'N', 'N', 256, 16, 16, 1.0},
    {"ref w16: da = [dz|ds] [Wg; P]", 'N', 'N', 256, 16, 19, 0.0},
    {"ref w16: dalpha = do U^T", 'N', 'N', 256, 3, 16, 0.0},
    {"ref w16: dWo += dy^T u", 'T', 'N', 16, 16, 256, 1.0},
    {"ref w16: dU += alpha^T do", 'T', 'N', 3, 16, 256, 1.0},
    {"ref w16: eval 2048 rows", 'N', 'N', 2048, 19, 16, 0.0},
    {"self w16: [q|k|v|z] = a W^T", 'N', 'N', 768, 64, 16, 0.0},
    {"self w16: y = u Wo^T (2^8 < 2^9)", 'N', 'N', 768, 16, 16, 0.0},
    {"self w16: da = dqkvz W", 'N', 'N', 768, 16, 64, 0.0},
    {"self w16: dW += dqkvz^T a", 'T', 'N', 64, 16, 768, 1.0},
    {"lm w32: mlp up, 192-row chunk", 'N', 'N', 192, 128, 32, 0.0},
    {"lm w32: mlp down", 'N', 'N', 192, 32, 128, 0.0},
    {"lm w32: attention out", 'N', 'N', 192, 32, 32, 0.0},
    {"lm w32: dW_up += dh^T a", 'T', 'N', 32, 128, 192, 1.0},
    {"lm w32: dW_down += dy^T h", 'T', 'N', 128, 32, 192, 1.0},
    {"jets w16: 2048 points x 6 rows", 'N', 'N', 12288, 16, 16, 0.0},
    {"bound: B 32 x 16 (2^9)", 'N', 'N', 768, 32, 16, 0.0},
    {"bound: B 256 x 256 (2^16)", 'N', 'N', 256, 256, 256, 0.0},
    {"bound: B 256 x 512 (2^17 > 2^16)", 'N', 'N', 256, 512, 256, 0.0},
    {"bound: B 512 x 512", 'N', 'N', 512, 512, 512, 0.0},
    {"bound: A^T B 256^3 (2^24)", 'T', 'N', 256, 256, 256, 1.0},
    {"bound: A^T B 128 x 128 x 2048", 'T', 'N', 128, 128, 2048, 1.0},
};
enum { NSHAPES = sizeof SHAPES / sizeof SHAPES[0] };

static double *evict_buf;

static void evict(void) {
  if (!evict_buf) return;
  for (size_t i = 0; i < EVICT_BYTES / sizeof(double); i += 8) evict_buf[i] += 1.0;
}

static double *filled(size_t n, double scale) {
  double *v = malloc(sizeof *v * (n ? n : 1));
  if (v)
    for (size_t i = 0; i < n; i++) v[i] = scale / (double)(1 + i % 7);
  return v;
}

static int la_side(const shape *s, double *a, double *b, double *c) {
  int ar = s->ta == 'T' ? s->k : s->m, ac = s->ta == 'T' ? s->m : s->k;
  int br = s->tb == 'T' ? s->n : s->k, bc = s->tb == 'T' ? s->k : s->n;
  return la_gemm(s->ta, s->tb, 1.0, la_view(NULL, ar, ac, ac, a), la_view(NULL, br, bc, bc, b),
                 s->beta, la_view(NULL, s->m, s->n, s->n, c));
}

static void blas_side(const shape *s, double *a, double *b, double *c) {
  int lda = s->ta == 'T' ? s->m : s->k, ldb = s->tb == 'T' ? s->k : s->n;
  cblas_dgemm(CblasRowMajor, s->ta == 'T' ? CblasTrans : CblasNoTrans,
              s->tb == 'T' ? CblasTrans : CblasNoTrans, s->m, s->n, s->k, 1.0, a, lda, b, ldb,
              s->beta, c, s->n);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 200;
  if (reps < 1) {
    fprintf(stderr, "usage: bench_small_products [reps]\n");
    return 2;
  }
  const char *cold = getenv("BENCH_COLD");
  if (cold && *cold == '1' && !(evict_buf = calloc(EVICT_BYTES / sizeof(double), sizeof(double)))) {
    fprintf(stderr, "bench: out of memory\n");
    return 1;
  }
  bench_print_machine();
  printf("la's local product against OpenBLAS alone: best of %d alternating calls each, thread "
         "cpu time, operands %s\n",
         reps, evict_buf ? "evicted from L2 before each call (BENCH_COLD=1)" : "hot in cache");
  printf("  %-36s %-2s %6s %5s %5s %4s  %9s %9s %6s  %s\n", "product", "op", "m", "n", "k", "beta",
         "la GF/s", "BLAS GF/s", "ratio", "la ran");
  for (int i = 0; i < NSHAPES; i++) {
    const shape *s = &SHAPES[i];
    size_t na = (size_t)s->m * s->k, nb = (size_t)s->k * s->n, nc = (size_t)s->m * s->n;
    double *a = filled(na, 0.5), *b = filled(nb, 0.25), *c = filled(nc, 0.0);
    if (!a || !b || !c) {
      fprintf(stderr, "bench: out of memory\n");
      return 1;
    }
    uint64_t before = la_small_products();
    if (la_side(s, a, b, c)) {
      fprintf(stderr, "bench: %s\n", cs_error_message());
      return 1;
    }
    int small = la_small_products() != before;
    blas_side(s, a, b, c);
    double best_la = 1e30, best_blas = 1e30;
    for (int r = 0; r < reps; r++) {
      evict();
      double t0 = bench_thread_cpu_seconds();
      if (la_side(s, a, b, c)) {
        fprintf(stderr, "bench: %s\n", cs_error_message());
        return 1;
      }
      double t = bench_thread_cpu_seconds() - t0;
      if (t < best_la) best_la = t;
      evict();
      t0 = bench_thread_cpu_seconds();
      blas_side(s, a, b, c);
      t = bench_thread_cpu_seconds() - t0;
      if (t < best_blas) best_blas = t;
    }
    double flop = 2.0 * s->m * (double)s->n * s->k;
    char op[3] = {s->ta, s->tb, 0};
    printf("  %-36s %-2s %6d %5d %5d %4g  %9.1f %9.1f %5.2fx  %s\n", s->what, op, s->m, s->n,
           s->k, s->beta, flop / best_la / 1e9, flop / best_blas / 1e9, best_blas / best_la,
           small ? "libxsmm" : "OpenBLAS");
    free(a), free(b), free(c);
  }
  free(evict_buf);
  la_workspace_release();
  return 0;
}

/* bench/gemm_shapes.c — where a wide memory cell's products lose against
 * dgemm: every la product of one training step of a gated memory block
 * (src/model/memory_attn.c, attn_forward and attn_backward; one head),
 * each timed on its own through la_gemm as the model calls it, interleaved
 * pair by pair with the 1024³ dgemm rate (bench/interleave.h, issue 29).
 * Not a test: prints numbers and ratios.
 *
 *   OPENBLAS_NUM_THREADS=1 build/bench_gemm_shapes [pairs [width [batch [slots]]]]
 *
 * Defaults: 5 pairs, width 128, batch 256, 3 slots (the width-128 cell of
 * bench_train_cell). Per pair, each product runs REPS times after one
 * untimed call and its best call is kept (thread cpu time: what other
 * processes' turns on a shared core do not inflate); then the dgemm rate.
 * Printed per product: its shape, GFLOP/s and % of the pair's dgemm rate
 * (median and min–max over the pairs) and its share of the block's
 * product time; then the whole block's products as one rate. The block's
 * rate bounds what bench_train_cell's executed-FLOP figure can reach: the
 * cell adds the element-wise passes, the optimizer and the evaluation.
 * BENCH_COLD=1 streams 8 MB through the cache before every timed call, so
 * that the operands come from L3 or memory as in a training step. */
#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "interleave.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PAIRS 64
#define REPS 30

typedef struct {
  const char *what;
  char ta, tb;
  int m, n, k;
  double alpha, beta;
  double *a, *b, *c;
  int lda, ldb, ldc;
} product;

enum { MAX_PRODUCTS = 13 };

typedef struct {
  product p[MAX_PRODUCTS];
  int np;
  double *evict; /* cold mode: EVICT_BYTES streamed through before each call */
  double sec[MAX_PRODUCTS][MAX_PAIRS];
} shapes;

#define EVICT_BYTES (8u << 20)

/* Cold mode: read and write a buffer larger than L2 so that the next
 * product finds its operands in L3 or memory, as a step of the cell does
 * (each block's activations are over a megabyte at width 128). */
static void evict(shapes *S) {
  if (!S->evict) return;
  for (size_t i = 0; i < EVICT_BYTES / sizeof(double); i += 8) S->evict[i] += 1.0;
}

static double *filled(size_t n, double scale) {
  double *v = malloc(sizeof *v * (n ? n : 1));
  if (v)
    for (size_t i = 0; i < n; i++) v[i] = scale / (double)(1 + i % 7);
  return v;
}

static int add(shapes *S, const char *what, char ta, char tb, int m, int n, int k, double alpha,
               double beta, int lda, int ldb, int ldc) {
  product *p = &S->p[S->np++];
  *p = (product){what, ta, tb, m, n, k, alpha, beta, NULL, NULL, NULL, lda, ldb, ldc};
  int arows = ta == 'T' ? k : m, brows = tb == 'T' ? n : k;
  p->a = filled((size_t)arows * lda, 0.5), p->b = filled((size_t)brows * ldb, 0.25);
  p->c = filled((size_t)m * ldc, 0.0);
  if (!p->a || !p->b || !p->c) return cs_error(CS_ERR_NOMEM, "bench: out of memory");
  return CS_OK;
}

static int run(const product *p) {
  int arows = p->ta == 'T' ? p->k : p->m, acols = p->ta == 'T' ? p->m : p->k;
  int brows = p->tb == 'T' ? p->n : p->k, bcols = p->tb == 'T' ? p->k : p->n;
  return la_gemm(p->ta, p->tb, p->alpha, la_view(NULL, arows, acols, p->lda, p->a),
                 la_view(NULL, brows, bcols, p->ldb, p->b), p->beta,
                 la_view(NULL, p->m, p->n, p->ldc, p->c));
}

static int shapes_side(void *ctx, int pair) {
  shapes *S = ctx;
  for (int i = 0; i < S->np; i++) {
    CS_CHECK(run(&S->p[i]));
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
      evict(S);
      double c0 = bench_thread_cpu_seconds();
      CS_CHECK(run(&S->p[i]));
      double t = bench_thread_cpu_seconds() - c0;
      if (t < best) best = t;
    }
    S->sec[i][pair] = best;
  }
  return CS_OK;
}

static double flop(const product *p) { return 2.0 * p->m * (double)p->n * p->k; }

int main(int argc, char **argv) {
  int pairs = argc > 1 ? atoi(argv[1]) : BENCH_MIN_PAIRS;
  int d = argc > 2 ? atoi(argv[2]) : 128, N = argc > 3 ? atoi(argv[3]) : 256;
  int n = argc > 4 ? atoi(argv[4]) : 3;
  if (pairs < 1 || pairs > MAX_PAIRS || d < 1 || N < 1 || n < 1) {
    fprintf(stderr, "usage: bench_gemm_shapes [pairs (1-%d) [width [batch [slots]]]]\n",
            MAX_PAIRS);
    return 2;
  }
  /* one gated block, one head (n_gate = d): the products of memory_attn.c
   * in the order a step runs them; lds = score_ld, the [z | s] row stride */
  int ng = d, lds = (ng + n + 7) / 8 * 8;
  double sc = 1.0 / sqrt((double)d);
  shapes *S = calloc(1, sizeof *S);
  if (!S) return 1;
  const char *cold = getenv("BENCH_COLD");
  if (cold && *cold == '1' && !(S->evict = calloc(EVICT_BYTES / sizeof(double), sizeof(double)))) {
    fprintf(stderr, "bench: out of memory\n");
    return 1;
  }
  int rc = add(S, "score map P = K Wq/sqrt(dh)", 'N', 'N', n, d, d, sc, 0.0, d, d, d);
  if (!rc) rc = add(S, "[z|s] = a [Wg; P]^T", 'N', 'T', N, ng + n, d, 1.0, 0.0, d, d, lds);
  if (!rc) rc = add(S, "o = alpha U", 'N', 'N', N, d, n, 1.0, 0.0, n, d, d);
  if (!rc) rc = add(S, "y = u Wo^T + bo (beta 1)", 'N', 'T', N, d, d, 1.0, 1.0, d, d, d);
  if (!rc) rc = add(S, "dWo += dy^T u", 'T', 'N', d, d, N, 1.0, 1.0, d, d, d);
  if (!rc) rc = add(S, "du = dy Wo", 'N', 'N', N, d, d, 1.0, 0.0, d, d, d);
  if (!rc) rc = add(S, "dalpha = do U^T", 'N', 'T', N, n, d, 1.0, 0.0, d, d, n);
  if (!rc) rc = add(S, "dU += alpha^T do", 'T', 'N', n, d, N, 1.0, 1.0, n, d, d);
  if (!rc) rc = add(S, "dWg += dz^T a (beta 1)", 'T', 'N', ng, d, N, 1.0, 1.0, lds, d, d);
  if (!rc) rc = add(S, "dP = ds^T a", 'T', 'N', n, d, N, 1.0, 0.0, lds, d, d);
  if (!rc) rc = add(S, "dK += dP Wq^T/sqrt(dh)", 'N', 'T', n, d, d, sc, 1.0, d, d, d);
  if (!rc) rc = add(S, "dWq += K^T dP/sqrt(dh)", 'T', 'N', d, d, n, sc, 1.0, d, d, d);
  if (!rc) rc = add(S, "da = [dz|ds] [Wg; P]", 'N', 'N', N, d, ng + n, 1.0, 0.0, lds, d, d);
  bench_dgemm dg[MAX_PAIRS];
  bench_pair_opts o = {.pairs = pairs, .dgemm_n = 1024, .dgemm_reps = 3, .label = NULL};
  if (!rc) rc = bench_interleave(&o, shapes_side, S, NULL, NULL, dg);
  if (rc) {
    fprintf(stderr, "bench: %s\n", cs_error_message());
    return 1;
  }
  bench_print_machine();
  printf("one gated memory block, width %d, batch %d, %d slots, 1 head: %d interleaved pair%s "
         "(products, dgemm); thread cpu time, best of %d calls per product, operands %s%s\n",
         d, N, n, pairs, pairs == 1 ? "" : "s", REPS,
         S->evict ? "evicted from L2 before each call (BENCH_COLD=1)" : "hot in cache",
         pairs < BENCH_MIN_PAIRS ? " (fewer than 5 pairs: the spread is indicative only)" : "");
  double total[MAX_PAIRS] = {0}, flops = 0, v[MAX_PAIRS], dgc[MAX_PAIRS];
  for (int p = 0; p < pairs; p++) dgc[p] = dg[p].cpu_gflops;
  for (int i = 0; i < S->np; i++) {
    flops += flop(&S->p[i]);
    for (int p = 0; p < pairs; p++) total[p] += S->sec[i][p];
  }
  printf("  %-28s %-4s %5s %5s %5s  %-34s %s\n", "product", "op", "m", "n", "k",
         "% of the pair's dgemm, median (min-max)", "share of the block's time (median)");
  for (int i = 0; i < S->np; i++) {
    const product *q = &S->p[i];
    for (int p = 0; p < pairs; p++) v[p] = 100 * flop(q) / S->sec[i][p] / 1e9 / dgc[p];
    bench_spread f = bench_spread_of(v, pairs);
    for (int p = 0; p < pairs; p++) v[p] = 100 * S->sec[i][p] / total[p];
    bench_spread sh = bench_spread_of(v, pairs);
    char op[3] = {q->ta, q->tb, 0};
    printf("  %-28s %-4s %5d %5d %5d  %5.1f%% (%5.1f-%5.1f%%)%12s %5.1f%%\n", q->what, op, q->m,
           q->n, q->k, f.median, f.min, f.max, "", sh.median);
  }
  char text[160];
  for (int p = 0; p < pairs; p++) v[p] = flops / total[p] / 1e9;
  bench_spread_text(text, sizeof text, "%.2f", bench_spread_of(v, pairs));
  printf("  the block's products: %.1f MFLOP, GFLOP/s %s\n", flops / 1e6, text);
  for (int p = 0; p < pairs; p++) v[p] = 100 * flops / total[p] / 1e9 / dgc[p];
  bench_spread_text(text, sizeof text, "%.1f%%", bench_spread_of(v, pairs));
  printf("  the block's products, %% of the pair's dgemm (cpu): %s\n", text);
  bench_spread_text(text, sizeof text, "%.2f", bench_dgemm_spread(dg, pairs, 1));
  printf("  dgemm (1024^3, best of 3 per pair) GFLOP/s on cpu time: %s\n", text);
  for (int i = 0; i < S->np; i++) free(S->p[i].a), free(S->p[i].b), free(S->p[i].c);
  free(S->evict);
  free(S);
  la_workspace_release();
  return 0;
}

/* test_lm.c — the lm family (docs/MODELS.md, "Language-model family") and
 * its token tasks:
 *   - forward (logits, the last-position residual stream after every
 *     block), loss and gradients against a second code path: the textbook
 *     model written out in long double over dual numbers (value and one
 *     directional derivative), so the gradient's projection on a direction
 *     per tensor is checked at 1e-10 relative;
 *   - backward against central finite differences of the loss;
 *   - jets of the probe plane against finite differences of the value
 *     forward in x;
 *   - the first-token share against the reference's attention weights;
 *   - the defining properties of bigram-backcopy and associative-recall. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/rng.h"
#include "curvsweep/tasks.h"
#include "fixtures.h"
/* white-box: the family table, to run the lm step itself */
#include "../src/model/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSEQ 3
#define TT 13
#define VV 6
#define DMAX 16
#define FMAX 32

/* ------------------------------------------------ the dual-number model */

typedef struct {
  long double v, d;
} dual;

static dual dc(long double v) { return (dual){v, 0.0L}; }
static dual dadd(dual a, dual b) { return (dual){a.v + b.v, a.d + b.d}; }
static dual dsub(dual a, dual b) { return (dual){a.v - b.v, a.d - b.d}; }
static dual dmul(dual a, dual b) { return (dual){a.v * b.v, a.d * b.v + a.v * b.d}; }
static dual ddiv(dual a, dual b) { return (dual){a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)}; }
static dual dexp(dual a) {
  long double e = expl(a.v);
  return (dual){e, e * a.d};
}
static dual dlog(dual a) { return (dual){logl(a.v), a.d / a.v}; }
static dual dsqrt(dual a) {
  long double s = sqrtl(a.v);
  return (dual){s, a.d / (2.0L * s)};
}
static dual dsigmoid(dual a) {
  long double s = 1.0L / (1.0L + expl(-a.v));
  return (dual){s, s * (1.0L - s) * a.d};
}
static dual dgelu(dual a) { /* t Φ(t), Φ' = φ */
  long double Phi = 0.5L * erfcl(-a.v / sqrtl(2.0L));
  long double phi = expl(-0.5L * a.v * a.v) / sqrtl(2.0L * acosl(-1.0L));
  return (dual){a.v * Phi, (Phi + a.v * phi) * a.d};
}

/* The parameters as duals: value from the model, derivative the direction. */
typedef struct {
  cs_model *M;
  const double *dir; /* n_params: the direction of the derivative, or NULL */
} ref_ctx;

static dual P(const ref_ctx *c, const char *name, int i) {
  cs_tensor t;
  assert_ok(model_find_tensor(c->M, name, &t));
  int64_t off = t.v - model_params(c->M);
  return (dual){t.v[i], c->dir ? c->dir[off + i] : 0.0L};
}

/* y (n) = LN(x) with gain and bias tensors gname, bname. */
static void ref_layernorm(const ref_ctx *c, int n, const dual *x, const char *gname,
                          const char *bname, dual *y) {
  dual mu = dc(0), var = dc(0);
  for (int k = 0; k < n; k++) mu = dadd(mu, x[k]);
  mu = ddiv(mu, dc(n));
  for (int k = 0; k < n; k++) var = dadd(var, dmul(dsub(x[k], mu), dsub(x[k], mu)));
  var = ddiv(var, dc(n));
  dual r = ddiv(dc(1), dsqrt(dadd(var, dc(1e-5L))));
  for (int k = 0; k < n; k++)
    y[k] = dadd(dmul(dmul(dsub(x[k], mu), r), P(c, gname, k)), P(c, bname, k));
}

/* y (out) = W x (+ b): W named wname (out × in). */
static void ref_linear(const ref_ctx *c, int in, int out, const dual *x, const char *wname,
                       const char *bname, dual *y) {
  for (int o = 0; o < out; o++) {
    dual acc = bname ? P(c, bname, o) : dc(0);
    for (int i = 0; i < in; i++) acc = dadd(acc, dmul(P(c, wname, o * in + i), x[i]));
    y[o] = acc;
  }
}

/* When set, ref_sequence writes each block's gate values here:
 * ref_gates[l][t][k] for the d channels (a headwise gate repeated over its
 * head's channels). */
static long double (*ref_gates)[TT][DMAX];
/* When ref_ablate_kind is set (model_ablation), ref_sequence applies it at
 * block ref_ablate_layer: the softmax of a query t ≥ 1 over the keys
 * 1..t only, or no attention output (h passes the block's attention). */
static int ref_ablate_kind = MODEL_ABLATE_NONE, ref_ablate_layer = -1;

/* The textbook lm of docs/MODELS.md on one sequence tok (T), probe offset
 * x (m = 2, or NULL): hl[l][k] the last position's residual stream after
 * block l (l = 0: the embedding), logits T × V, attn[l][j][t][s] the
 * weights. Returns through the arrays. */
static void ref_sequence(const ref_ctx *c, const cs_config *cfg, const int *tok, const dual *x,
                         const double *u, dual hl[][DMAX], dual logits[][VV],
                         long double attn[][4][TT][TT]) {
  int d = cfg->width, H = cfg->heads, dh = d / H, T = cfg->seq_len, L = cfg->depth;
  int f = cfg->mlp_ratio * d, V = cfg->vocab, gated = config_arch_gated(cfg->arch);
  int headwise = cfg->arch == ARCH_GATED_HEADWISE, ng = headwise ? H : d;
  cs_gate_pos gp = cfg->gate;
  dual h[TT][DMAX];
  for (int t = 0; t < T; t++)
    for (int k = 0; k < d; k++) {
      h[t][k] = dadd(P(c, "embed/tokens", tok[t] * d + k), P(c, "embed/positions", t * d + k));
      if (x && t == T - 1)
        for (int a = 0; a < 2; a++) h[t][k] = dadd(h[t][k], dmul(x[a], dc(u[a * d + k])));
    }
  for (int k = 0; k < d; k++) hl[0][k] = h[T - 1][k];
  char n1[64], n2[64], n3[64];
  for (int l = 0; l < L; l++) {
    dual A[TT][DMAX], Q[TT][DMAX], K[TT][DMAX], Vv[TT][DMAX], G[TT][DMAX], Y[TT][DMAX];
    for (int t = 0; t < T; t++) {
      snprintf(n1, sizeof n1, "layer%d/ln_g", l), snprintf(n2, sizeof n2, "layer%d/ln_b", l);
      ref_layernorm(c, d, h[t], n1, n2, A[t]);
      snprintf(n1, sizeof n1, "layer%d/Wq", l), ref_linear(c, d, d, A[t], n1, NULL, Q[t]);
      snprintf(n1, sizeof n1, "layer%d/Wk", l), ref_linear(c, d, d, A[t], n1, NULL, K[t]);
      snprintf(n1, sizeof n1, "layer%d/Wv", l), ref_linear(c, d, d, A[t], n1, NULL, Vv[t]);
      if (gated) {
        dual z[DMAX];
        snprintf(n1, sizeof n1, "layer%d/Wg", l), snprintf(n2, sizeof n2, "layer%d/bg", l);
        ref_linear(c, d, ng, A[t], n1, n2, z);
        for (int k = 0; k < d; k++) G[t][k] = dsigmoid(z[headwise ? k / dh : k]);
        if (ref_gates)
          for (int k = 0; k < d; k++) ref_gates[l][t][k] = G[t][k].v;
        for (int k = 0; k < d; k++) {
          if (gp == GATE_G2) Vv[t][k] = dmul(G[t][k], Vv[t][k]);
          if (gp == GATE_G3) K[t][k] = dmul(G[t][k], K[t][k]);
          if (gp == GATE_G4) Q[t][k] = dmul(G[t][k], Q[t][k]);
        }
      }
    }
    for (int t = 0; t < T; t++) {
      dual O[DMAX];
      /* the first-token ablation: the keys 1..t of a query t >= 1 */
      int r0 = l == ref_ablate_layer && ref_ablate_kind == MODEL_ABLATE_FIRST_TOKEN && t > 0;
      for (int j = 0; j < H; j++) {
        dual s[TT], mx = dc(-INFINITY), sum = dc(0);
        s[0] = dc(0);
        for (int r = r0; r <= t; r++) {
          s[r] = dc(0);
          for (int i = 0; i < dh; i++) s[r] = dadd(s[r], dmul(Q[t][j * dh + i], K[r][j * dh + i]));
          s[r] = ddiv(s[r], dc(sqrtl(dh)));
          if (s[r].v > mx.v) mx = dc(s[r].v);
        }
        for (int r = r0; r <= t; r++) sum = dadd(sum, s[r] = dexp(dsub(s[r], mx)));
        for (int r = 0; r < T; r++) {
          if (r >= r0 && r <= t) s[r] = ddiv(s[r], sum);
          attn[l][j][t][r] = r <= t ? s[r].v : 0.0L;
        }
        for (int i = 0; i < dh; i++) {
          O[j * dh + i] = dc(0);
          for (int r = r0; r <= t; r++) O[j * dh + i] = dadd(O[j * dh + i], dmul(s[r], Vv[r][j * dh + i]));
        }
      }
      if (gated && gp == GATE_G1)
        for (int k = 0; k < d; k++) O[k] = dmul(G[t][k], O[k]);
      snprintf(n1, sizeof n1, "layer%d/Wo", l), snprintf(n2, sizeof n2, "layer%d/bo", l);
      ref_linear(c, d, d, O, n1, n2, Y[t]);
      if (gated && gp == GATE_G5)
        for (int k = 0; k < d; k++) Y[t][k] = dmul(G[t][k], Y[t][k]);
    }
    int no_attention = l == ref_ablate_layer && ref_ablate_kind == MODEL_ABLATE_ATTENTION;
    for (int t = 0; t < T; t++) {
      for (int k = 0; k < d && !no_attention; k++) h[t][k] = dadd(h[t][k], Y[t][k]);
      if (f) {
        dual a[DMAX], hid[FMAX], z[DMAX];
        snprintf(n1, sizeof n1, "layer%d/mlp/ln_g", l), snprintf(n2, sizeof n2, "layer%d/mlp/ln_b", l);
        ref_layernorm(c, d, h[t], n1, n2, a);
        snprintf(n1, sizeof n1, "layer%d/mlp/W1", l), snprintf(n2, sizeof n2, "layer%d/mlp/b1", l);
        ref_linear(c, d, f, a, n1, n2, hid);
        for (int k = 0; k < f; k++) hid[k] = dgelu(hid[k]);
        snprintf(n1, sizeof n1, "layer%d/mlp/W2", l), snprintf(n3, sizeof n3, "layer%d/mlp/b2", l);
        ref_linear(c, f, d, hid, n1, n3, z);
        for (int k = 0; k < d; k++) h[t][k] = dadd(h[t][k], z[k]);
      }
    }
    for (int k = 0; k < d; k++) hl[l + 1][k] = h[T - 1][k];
  }
  for (int t = 0; t < T; t++) {
    dual a[DMAX];
    ref_layernorm(c, d, h[t], "final/ln_g", "final/ln_b", a);
    ref_linear(c, d, V, a, "readout/W", "readout/b", logits[t]);
  }
}

/* The mean next-token cross-entropy over the scored targets of NSEQ sequences. */
static dual ref_loss(const ref_ctx *c, const cs_config *cfg, const int *tok,
                     const unsigned char *sc) {
  int T = cfg->seq_len, V = cfg->vocab, n_s = 0;
  dual total = dc(0);
  for (int p = 0; p < NSEQ; p++) {
    dual hl[8][DMAX], logits[TT][VV];
    static long double attn[8][4][TT][TT];
    ref_sequence(c, cfg, tok + p * T, NULL, NULL, hl, logits, attn);
    for (int t = 0; t + 1 < T; t++) {
      if (!sc[p * T + t + 1]) continue;
      dual sum = dc(0);
      long double mx = logits[t][0].v;
      for (int k = 1; k < V; k++) mx = fmaxl(mx, logits[t][k].v);
      for (int k = 0; k < V; k++) sum = dadd(sum, dexp(dsub(logits[t][k], dc(mx))));
      total = dadd(total, dsub(dadd(dc(mx), dlog(sum)), logits[t][tok[p * T + t + 1]]));
      n_s++;
    }
  }
  return ddiv(total, dc(n_s));
}

/* ---------------------------------------------------------- fixtures */

static cs_config lm_config(cs_arch arch, cs_gate_pos gate, int heads, int mlp_ratio, int depth) {
  cs_config c = config_default();
  c.family = FAMILY_LM;
  c.task = TASK_BIGRAM_BACKCOPY;
  c.arch = arch;
  c.gate = gate;
  c.heads = heads;
  c.width = 4;
  c.depth = depth;
  c.mlp_ratio = mlp_ratio;
  c.vocab = VV;
  c.seq_len = TT;
  c.seed = 5;
  return c;
}

static void randomise_params(cs_model *M, uint64_t seed) {
  rng_stream s = rng_stream_make(seed, "test", 0, "params");
  double *p = model_params(M);
  for (int64_t i = 0; i < model_param_count(M); i++) p[i] += 0.3 * rng_normal(&s);
}

/* n random sequences from stream (seed, "test", 0, name): BOS then
 * tokens in 0..V-1; about half the targets t ≥ 1 scored (at least one per
 * sequence). */
static void random_sequences(int n, uint64_t seed, const char *name, int *tok, unsigned char *sc) {
  rng_stream s = rng_stream_make(seed, "test", 0, name);
  for (int p = 0; p < n; p++) {
    tok[p * TT] = VV, sc[p * TT] = 0;
    for (int t = 1; t < TT; t++) {
      tok[p * TT + t] = (int)rng_below(&s, VV);
      sc[p * TT + t] = t == TT - 1 || rng_below(&s, 2);
    }
  }
}

/* The fixtures' NSEQ sequences. */
static void random_batch(int *tok, unsigned char *sc) { random_sequences(NSEQ, 9, "tokens", tok, sc); }

typedef struct {
  cs_config cfg;
  cs_model *M;
  cs_acts *A;
  int tok[NSEQ * TT];
  unsigned char sc[NSEQ * TT];
} lm_fixture;

static void fixture_make(lm_fixture *F, cs_config cfg, int jet_order) {
  F->cfg = cfg;
  assert_ok(model_create(&cfg, NULL, &F->M));
  assert_ok(model_acts_create(F->M, NSEQ, jet_order, &F->A));
  randomise_params(F->M, 11);
  random_batch(F->tok, F->sc);
  model_acts_bind_tokens(F->A, &(cs_token_batch){TT, F->tok, F->sc});
}

static void fixture_free(lm_fixture *F) {
  model_acts_free(F->A);
  model_free(F->M);
}

/* The configurations every check runs on: each arch, each gate position,
 * attention-only and with an MLP, one and two heads. */
/* Width 4 (head widths 2 and 4) and width 16 (head widths 16 and 8, the
 * full 8-wide register blocks of the attention's token products), with
 * T = 13 positions (4-row blocks and a partial one, two 8-column blocks). */
static const struct {
  cs_arch arch;
  cs_gate_pos gate;
  int heads, mlp_ratio, depth, width;
} CASES[] = {
    {ARCH_UNGATED, GATE_G1, 1, 0, 1, 4},       {ARCH_UNGATED, GATE_G1, 2, 2, 2, 4},
    {ARCH_GATED, GATE_G1, 2, 2, 2, 4},         {ARCH_GATED, GATE_G2, 1, 0, 2, 4},
    {ARCH_GATED, GATE_G3, 2, 2, 1, 4},         {ARCH_GATED, GATE_G4, 2, 0, 2, 4},
    {ARCH_GATED, GATE_G5, 1, 2, 2, 4},         {ARCH_GATED_HEADWISE, GATE_G1, 2, 2, 2, 4},
    {ARCH_GATED_HEADWISE, GATE_G2, 2, 0, 1, 4}, {ARCH_GATED_HEADWISE, GATE_G5, 2, 2, 2, 4},
    {ARCH_GATED, GATE_G1, 1, 2, 2, 16},        {ARCH_GATED_HEADWISE, GATE_G3, 2, 0, 2, 16},
    {ARCH_UNGATED, GATE_G1, 2, 1, 1, 16},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

static cs_config case_config(int i) {
  cs_config c = lm_config(CASES[i].arch, CASES[i].gate, CASES[i].heads, CASES[i].mlp_ratio,
                          CASES[i].depth);
  c.width = CASES[i].width;
  return c;
}

/* ---------------------------------------------------------------- tests */

/* The ablation deltas (model_ablation_deltas; docs/MODELS.md, "What a sink
 * does") against the reference's loss with the same intervention at each
 * block, and the attention entropy and gate values of model_block_stats
 * against the reference's weights and gates: per block the mean over
 * sequences, queries t >= 1 and heads of -sum p log p / log(t + 1). */
static void test_ablations_and_block_stats_match_reference(void **state) {
  (void)state;
  for (int i = 0; i < NCASES; i++) {
    lm_fixture F;
    fixture_make(&F, case_config(i), 0);
    int L = F.cfg.depth, H = F.cfg.heads, d = F.cfg.width, dh = d / H;
    cs_token_batch b = {TT, F.tok, F.sc};
    double first[8], attn_out[8], intact, ent[8], *gates = NULL;
    int64_t rows;
    int width;
    assert_ok(model_ablation_deltas(F.M, NSEQ, &b, first, attn_out, &intact));
    ref_ctx c = {F.M, NULL};
    long double base = ref_loss(&c, &F.cfg, F.tok, F.sc).v;
    if (fabsl(intact - base) > 1e-10L * fabsl(base))
      fail_msg("case %d: intact loss %.17g vs reference %.17Lg", i, intact, base);
    for (int l = 0; l < L; l++)
      for (int kind = MODEL_ABLATE_FIRST_TOKEN; kind <= MODEL_ABLATE_ATTENTION; kind++) {
        ref_ablate_kind = kind, ref_ablate_layer = l;
        long double r = ref_loss(&c, &F.cfg, F.tok, F.sc).v - base;
        ref_ablate_kind = MODEL_ABLATE_NONE, ref_ablate_layer = -1;
        double got = kind == MODEL_ABLATE_FIRST_TOKEN ? first[l] : attn_out[l];
        if (fabsl(got - r) > 1e-10L * fmaxl(1.0L, fabsl(base)))
          fail_msg("case %d block %d ablation %d: delta %.17g vs reference %.17Lg", i, l + 1, kind,
                   got, r);
        if (kind == MODEL_ABLATE_ATTENTION && fabsl(r) < 1e-6L)
          fail_msg("case %d block %d: removing the attention changes nothing", i, l + 1);
      }
    // entropy and gates
    assert_ok(model_block_stats(F.M, NSEQ, NULL, &b, ent, &gates, &rows, &width));
    static long double gv[8][TT][DMAX], at[8][4][TT][TT];
    long double esum[8] = {0}, eterms[8] = {0};
    int gated = config_arch_gated(F.cfg.arch), headwise = F.cfg.arch == ARCH_GATED_HEADWISE;
    ref_gates = gated ? gv : NULL;
    for (int p = 0; p < NSEQ; p++) {
      dual hl[8][DMAX], rl[TT][VV];
      ref_sequence(&c, &F.cfg, F.tok + p * TT, NULL, NULL, hl, rl, at);
      for (int l = 0; l < L; l++) {
        for (int j = 0; j < H; j++)
          for (int t = 1; t < TT; t++) {
            long double e = 0;
            for (int s = 0; s <= t; s++)
              if (at[l][j][t][s] > 0) e -= at[l][j][t][s] * logl(at[l][j][t][s]);
            esum[l] += e / logl(t + 1.0L), eterms[l] += 1;
          }
        for (int t = 0; gated && t < TT; t++)
          for (int k = 0; k < width; k++) {
            double g = gates[((int64_t)l * rows + p * TT + t) * width + k];
            long double want = gv[l][t][headwise ? k * dh : k];
            if (fabsl(g - want) > 1e-12L)
              fail_msg("case %d block %d sequence %d position %d channel %d: gate %.17g vs "
                       "reference %.17Lg", i, l + 1, p, t, k, g, want);
          }
      }
    }
    ref_gates = NULL;
    assert_int_equal(gates != NULL, gated);
    if (gated) assert_true(rows == NSEQ * TT && width == (headwise ? H : d));
    for (int l = 0; l < L; l++)
      if (fabsl(ent[l] - esum[l] / eterms[l]) > 1e-12L || !(ent[l] > 0 && ent[l] <= 1))
        fail_msg("case %d block %d: entropy %.17g vs reference %.17Lg", i, l + 1, ent[l],
                 esum[l] / eterms[l]);
    free(gates);
    fixture_free(&F);
  }
}

/* Logits, h_l and loss of the model against the long-double reference. */
static void test_forward_matches_reference(void **state) {
  (void)state;
  for (int i = 0; i < NCASES; i++) {
    lm_fixture F;
    fixture_make(&F, case_config(i), 0);
    assert_ok(model_forward(F.M, F.A, NSEQ, NULL));
    double loss = model_loss(F.A, NSEQ, NULL, NULL);
    ref_ctx c = {F.M, NULL};
    const double *logits = model_logits(F.A);
    long double err = 0, scale = 0, herr = 0, hscale = 0;
    for (int p = 0; p < NSEQ; p++) {
      dual hl[8][DMAX], rl[TT][VV];
      static long double attn[8][4][TT][TT];
      ref_sequence(&c, &F.cfg, F.tok + p * TT, NULL, NULL, hl, rl, attn);
      for (int t = 0; t < TT; t++)
        for (int k = 0; k < VV; k++) {
          err = fmaxl(err, fabsl(logits[(p * TT + t) * VV + k] - rl[t][k].v));
          scale = fmaxl(scale, fabsl(rl[t][k].v));
        }
      for (int l = 0; l <= F.cfg.depth; l++)
        for (int k = 0; k < F.cfg.width; k++) {
          herr = fmaxl(herr, fabsl(model_layer_output(F.A, l)[p * F.cfg.width + k] - hl[l][k].v));
          hscale = fmaxl(hscale, fabsl(hl[l][k].v));
        }
    }
    dual rloss = ref_loss(&c, &F.cfg, F.tok, F.sc);
    if (err > 1e-10L * scale || herr > 1e-10L * hscale ||
        fabsl(loss - rloss.v) > 1e-10L * fabsl(rloss.v))
      fail_msg("case %d: logits %Lg (scale %Lg), h %Lg (scale %Lg), loss %.17g vs %.17Lg", i,
               err, scale, herr, hscale, loss, rloss.v);
    fixture_free(&F);
  }
}

/* The gradient's projection on a random direction within each tensor
 * against the reference's directional derivative. */
static void test_gradients_match_reference(void **state) {
  (void)state;
  for (int i = 0; i < NCASES; i++) {
    lm_fixture F;
    fixture_make(&F, case_config(i), 0);
    int64_t np = model_param_count(F.M);
    double *g = model_grads(F.M), *dir = calloc((size_t)np, sizeof *dir);
    assert_non_null(dir);
    memset(g, 0, sizeof(double) * np);
    assert_ok(model_forward(F.M, F.A, NSEQ, NULL));
    model_loss(F.A, NSEQ, NULL, NULL);
    assert_ok(model_backward(F.M, F.A, NSEQ, NULL));
    rng_stream s = rng_stream_make(13, "test", i, "direction");
    for (int t = 0; t < model_tensor_count(F.M); t++) {
      cs_tensor view;
      model_tensor(F.M, t, &view, NULL);
      int64_t off = view.v - model_params(F.M), n = (int64_t)view.rows * view.cols;
      memset(dir, 0, sizeof(double) * np);
      for (int64_t k = 0; k < n; k++) dir[off + k] = rng_normal(&s);
      long double proj = 0, mag = 0;
      for (int64_t k = 0; k < n; k++) {
        proj += (long double)g[off + k] * dir[off + k];
        mag += fabsl((long double)g[off + k] * dir[off + k]);
      }
      ref_ctx c = {F.M, dir};
      dual r = ref_loss(&c, &F.cfg, F.tok, F.sc);
      if (fabsl(proj - r.d) > 1e-10L * fmaxl(mag, fabsl(r.d)) || (mag == 0 && r.d != 0))
        fail_msg("case %d tensor %s: g.v %.17Lg vs reference %.17Lg", i, view.name, proj, r.d);
    }
    free(dir);
    fixture_free(&F);
  }
}

/* The lm family's step chunk by chunk (its train_step operation,
 * src/model/lm_step.c), called itself and through model_train_step,
 * against model_forward, model_loss and model_backward on one batch of 33
 * sequences of 13 positions, three chunks of 14, 14 and 5 sequences
 * (LM_CHUNK_ROWS 192): the same loss and every gradient entry the same,
 * bitwise, in every case. Calling the operation itself keeps the check
 * from comparing the three calls with themselves should model_train_step
 * stop taking it. */
extern const model_family_ops lm_family_ops;
#define STEP_SEQS 33
static void test_train_step_matches_three_calls(void **state) {
  (void)state;
  static int tok[STEP_SEQS * TT];
  static unsigned char sc[STEP_SEQS * TT];
  random_sequences(STEP_SEQS, 21, "step tokens", tok, sc);
  for (int i = 0; i < NCASES; i++) {
    cs_config cfg = case_config(i);
    cs_model *M;
    cs_acts *A;
    assert_ok(model_create(&cfg, NULL, &M));
    assert_ok(model_acts_create(M, STEP_SEQS, 0, &A));
    randomise_params(M, 11 + (uint64_t)i);
    model_acts_bind_tokens(A, &(cs_token_batch){TT, tok, sc});
    int64_t np = model_param_count(M);
    double *g = model_grads(M), *want = malloc(sizeof(double) * (size_t)np), loss;
    assert_non_null(want);
    memset(g, 0, sizeof(double) * (size_t)np);
    assert_ok(model_forward(M, A, STEP_SEQS, NULL));
    double want_loss = model_loss(A, STEP_SEQS, NULL, NULL);
    assert_ok(model_backward(M, A, STEP_SEQS, NULL));
    memcpy(want, g, sizeof(double) * (size_t)np);
    assert_non_null(lm_family_ops.train_step);
    for (int via_model = 0; via_model <= 1; via_model++) {
      memset(g, 0, sizeof(double) * (size_t)np);
      if (via_model) assert_ok(model_train_step(M, A, STEP_SEQS, NULL, NULL, &loss));
      else assert_ok(lm_family_ops.train_step(M, A, STEP_SEQS, NULL, &loss));
      if (memcmp(&loss, &want_loss, sizeof loss) != 0)
        fail_msg("case %d (%s): loss %.17g, three calls %.17g", i,
                 via_model ? "model_train_step" : "train_step", loss, want_loss);
      for (int64_t k = 0; k < np; k++)
        if (memcmp(&g[k], &want[k], sizeof(double)) != 0)
          fail_msg("case %d (%s): gradient entry %lld %.17g, three calls %.17g", i,
                   via_model ? "model_train_step" : "train_step", (long long)k, g[k], want[k]);
    }
    free(want);
    model_acts_free(A);
    model_free(M);
  }
}

/* Backward against central differences of the loss (h = 1e-6), every
 * parameter of a small model, relative error 1e-6. */
static void test_backward_vs_finite_differences(void **state) {
  (void)state;
  for (int i = 0; i < NCASES; i++) {
    lm_fixture F;
    fixture_make(&F, case_config(i), 0);
    int64_t np = model_param_count(F.M);
    double *p = model_params(F.M), *g = model_grads(F.M);
    memset(g, 0, sizeof(double) * np);
    assert_ok(model_forward(F.M, F.A, NSEQ, NULL));
    model_loss(F.A, NSEQ, NULL, NULL);
    assert_ok(model_backward(F.M, F.A, NSEQ, NULL));
    double *ga = malloc(sizeof(double) * np);
    assert_non_null(ga);
    memcpy(ga, g, sizeof(double) * np);
    for (int64_t k = 0; k < np; k++) {
      double keep = p[k], h = 1e-6;
      p[k] = keep + h;
      assert_ok(model_forward(F.M, F.A, NSEQ, NULL));
      double lp = model_loss(F.A, NSEQ, NULL, NULL);
      p[k] = keep - h;
      assert_ok(model_forward(F.M, F.A, NSEQ, NULL));
      double lm = model_loss(F.A, NSEQ, NULL, NULL);
      p[k] = keep;
      double fd = (lp - lm) / (2 * h);
      if (fabs(fd - ga[k]) > 1e-6 * fmax(1.0, fabs(fd)))
        fail_msg("case %d parameter %lld: backward %.12g, central difference %.12g", i,
                 (long long)k, ga[k], fd);
    }
    free(ga);
    fixture_free(&F);
  }
}

/* The jets of the probe plane: value rows equal the value forward's
 * last-position h_l at x; first rows the central differences of h_l in x
 * (δ = 1e-5); second rows the central differences of the first rows. */
static void test_jets_vs_finite_differences(void **state) {
  (void)state;
  for (int i = 0; i < NCASES; i++) {
    lm_fixture J, Vf;
    fixture_make(&J, case_config(i), 2);
    fixture_make(&Vf, case_config(i), 2);
    int d = J.cfg.width, L = J.cfg.depth, C = model_acts_jet_rows(J.A);
    assert_int_equal(C, 6);
    double x[NSEQ * 2] = {0.3, -0.2, -0.4, 0.1, 0.05, 0.45};
    assert_ok(model_forward(J.M, J.A, NSEQ, x));
    const double delta = 1e-5;
    for (int a = 0; a < 2; a++) {
      double xp[NSEQ * 2], xm[NSEQ * 2];
      memcpy(xp, x, sizeof x), memcpy(xm, x, sizeof x);
      for (int p = 0; p < NSEQ; p++) xp[p * 2 + a] += delta, xm[p * 2 + a] -= delta;
      /* jets at x ± δ e_a: their value rows (h) and first rows (∂h) */
      static double hp[9][NSEQ * 6 * DMAX], hm[9][NSEQ * 6 * DMAX];
      assert_ok(model_forward(Vf.M, Vf.A, NSEQ, xp));
      for (int l = 0; l <= L; l++) memcpy(hp[l], model_layer_output(Vf.A, l), sizeof(double) * NSEQ * C * d);
      assert_ok(model_forward(Vf.M, Vf.A, NSEQ, xm));
      for (int l = 0; l <= L; l++) memcpy(hm[l], model_layer_output(Vf.A, l), sizeof(double) * NSEQ * C * d);
      for (int l = 1; l <= L; l++) {
        const double *h = model_layer_output(J.A, l);
        double err1 = 0, s1 = 0, err2 = 0, s2 = 0;
        for (int p = 0; p < NSEQ; p++)
          for (int k = 0; k < d; k++) {
            const double *hj = h + (int64_t)p * C * d + k;
            double fd1 = (hp[l][p * C * d + k] - hm[l][p * C * d + k]) / (2 * delta);
            err1 = fmax(err1, fabs(hj[(1 + a) * d] - fd1));
            s1 = fmax(s1, fabs(fd1));
            for (int b = 0; b < 2; b++) { /* H_ab = ∂_a of row 1 + b */
              int q = a <= b ? (a == 0 ? b : 2) : (b == 0 ? a : 2); /* packed (0,0),(0,1),(1,1) */
              double fd2 = (hp[l][p * C * d + (1 + b) * d + k] - hm[l][p * C * d + (1 + b) * d + k]) / (2 * delta);
              err2 = fmax(err2, fabs(hj[(3 + q) * d] - fd2));
              s2 = fmax(s2, fabs(fd2));
            }
          }
        if (err1 > 1e-6 * fmax(s1, 1e-3) || err2 > 1e-6 * fmax(s2, 1e-3))
          fail_msg("case %d prefix %d direction %d: first rows %g (scale %g), second rows %g "
                   "(scale %g)", i, l, a, err1, s1, err2, s2);
      }
    }
    /* value rows against a value forward at x */
    lm_fixture W;
    fixture_make(&W, case_config(i), 0);
    assert_ok(model_forward(W.M, W.A, NSEQ, x));
    for (int l = 0; l <= L; l++)
      for (int p = 0; p < NSEQ; p++)
        for (int k = 0; k < d; k++)
          assert_close(model_layer_output(J.A, l)[(int64_t)p * C * d + k],
                       model_layer_output(W.A, l)[p * d + k], 1e-12);
    fixture_free(&W);
    fixture_free(&J);
    fixture_free(&Vf);
  }
}

/* The jets' derivatives also match the reference's dual numbers in x. */
static void test_jets_first_rows_match_reference(void **state) {
  (void)state;
  lm_fixture J;
  fixture_make(&J, case_config(2), 2);
  int d = J.cfg.width, L = J.cfg.depth, C = model_acts_jet_rows(J.A);
  double x[NSEQ * 2] = {0.3, -0.2, -0.4, 0.1, 0.05, 0.45};
  assert_ok(model_forward(J.M, J.A, NSEQ, x));
  /* the probe directions: ∂h_0/∂x_a, the first rows of h_0 */
  double u[2 * DMAX];
  for (int a = 0; a < 2; a++)
    for (int k = 0; k < d; k++) u[a * d + k] = model_layer_output(J.A, 0)[(1 + a) * d + k];
  ref_ctx c = {J.M, NULL};
  for (int p = 0; p < NSEQ; p++)
    for (int a = 0; a < 2; a++) {
      dual xd[2] = {{x[p * 2], a == 0}, {x[p * 2 + 1], a == 1}}, hl[8][DMAX], rl[TT][VV];
      static long double attn[8][4][TT][TT];
      ref_sequence(&c, &J.cfg, J.tok + p * TT, xd, u, hl, rl, attn);
      for (int l = 0; l <= L; l++)
        for (int k = 0; k < d; k++) {
          const double *h = model_layer_output(J.A, l) + (int64_t)p * C * d;
          assert_close(h[k], (double)hl[l][k].v, 1e-10 * (1 + fabsl(hl[l][k].v)));
          assert_close(h[(1 + a) * d + k], (double)hl[l][k].d, 1e-10 * (1 + fabsl(hl[l][k].d)));
        }
    }
  fixture_free(&J);
}

/* The first-token share against the reference's weights. */
static void test_sink_share_matches_reference(void **state) {
  (void)state;
  lm_fixture F;
  fixture_make(&F, case_config(7), 0); /* headwise g1, 2 heads, depth 2 */
  int L = F.cfg.depth, H = F.cfg.heads;
  double sink[4], top[4], mx[4];
  assert_ok(model_attention_sink(F.M, NSEQ, NULL, &(cs_token_batch){TT, F.tok, F.sc}, sink, top, mx));
  long double sum[8][4] = {{0}}, largest[8] = {0};
  ref_ctx c = {F.M, NULL};
  for (int p = 0; p < NSEQ; p++) {
    dual hl[8][DMAX], rl[TT][VV];
    static long double attn[8][4][TT][TT];
    ref_sequence(&c, &F.cfg, F.tok + p * TT, NULL, NULL, hl, rl, attn);
    for (int l = 0; l < L; l++)
      for (int j = 0; j < H; j++)
        for (int t = 1; t < TT; t++) {
          long double big = 0;
          for (int s = 0; s <= t; s++) big = fmaxl(big, attn[l][j][t][s]);
          sum[l][j] += attn[l][j][t][0] / (NSEQ * (TT - 1));
          largest[l] += big / ((long double)NSEQ * (TT - 1) * H);
        }
  }
  for (int l = 0; l < L; l++) {
    long double mean = 0, best = 0;
    for (int j = 0; j < H; j++) mean += sum[l][j] / H, best = fmaxl(best, sum[l][j]);
    assert_close(sink[l], (double)mean, 1e-12);
    assert_close(mx[l], (double)best, 1e-12);
    assert_close(top[l], (double)largest[l], 1e-12);
    assert_true(mx[l] >= sink[l] && top[l] >= sink[l]);
  }
  fixture_free(&F);
}

/* The gate magnitudes (model_gate_means_tokens) of every gated case
 * against the long-double reference's gate values: the mean over channels,
 * sequences and positions t ≥ 1, and at BOS; an ungated model is refused. */
static void test_gate_means_match_reference(void **state) {
  (void)state;
  int checked = 0;
  for (int i = 0; i < NCASES; i++) {
    lm_fixture F;
    fixture_make(&F, case_config(i), 0);
    int L = F.cfg.depth, d = F.cfg.width;
    double later[8], bos[8];
    int rc = model_gate_means_tokens(F.M, NSEQ, &(cs_token_batch){TT, F.tok, F.sc}, later, bos);
    if (!config_arch_gated(F.cfg.arch)) {
      assert_int_equal(rc, CS_ERR_INPUT);
      fixture_free(&F);
      continue;
    }
    assert_ok(rc);
    static long double gates[8][TT][DMAX];
    long double sum_later[8] = {0}, sum_bos[8] = {0};
    ref_ctx c = {F.M, NULL};
    ref_gates = gates;
    for (int p = 0; p < NSEQ; p++) {
      dual hl[8][DMAX], rl[TT][VV];
      static long double attn[8][4][TT][TT];
      ref_sequence(&c, &F.cfg, F.tok + p * TT, NULL, NULL, hl, rl, attn);
      for (int l = 0; l < L; l++)
        for (int t = 0; t < TT; t++)
          for (int k = 0; k < d; k++) {
            if (t == 0) sum_bos[l] += gates[l][t][k] / (NSEQ * d);
            else sum_later[l] += gates[l][t][k] / ((long double)NSEQ * (TT - 1) * d);
          }
    }
    ref_gates = NULL;
    for (int l = 0; l < L; l++) {
      assert_close(later[l], (double)sum_later[l], 1e-12);
      assert_close(bos[l], (double)sum_bos[l], 1e-12);
      assert_true(later[l] > 0 && later[l] < 1 && bos[l] > 0 && bos[l] < 1);
    }
    checked++;
    fixture_free(&F);
  }
  assert_int_equal(checked, NCASES - 3); /* the three ungated cases refused */
}

/* The extreme-token statistics on a hand-made model: blocks that add
 * nothing (W_o = b_o = 0), no positions, W_v = I, so h_1 = E[tok] and
 * v = LN(E[tok]); BOS = (8, −8, 8, −8), token j = (j+1)(1, −1, 1, −1).
 * |h| entries: four each of 1, 2, 3, 4 and 8: max/median = 8/3. Norms
 * 2(j+1), BOS 16: peak 16 / median(2, 4, 6, 8) = 16/5. LN of a(1,−1,1,−1)
 * has norm 2a/√(a² + ε): drain = (16/√(64+ε)) / median over a = 1..4. */
static void test_extreme_tokens_hand_computed(void **state) {
  (void)state;
  cs_config c = lm_config(ARCH_UNGATED, GATE_G1, 1, 0, 1);
  c.vocab = 4, c.seq_len = 5;
  cs_model *M;
  assert_ok(model_create(&c, NULL, &M));
  memset(model_params(M), 0, sizeof(double) * model_param_count(M));
  cs_tensor E, Wv, g;
  assert_ok(model_find_tensor(M, "embed/tokens", &E));
  for (int j = 0; j <= 4; j++)
    for (int k = 0; k < 4; k++) E.v[j * 4 + k] = (j == 4 ? 8.0 : j + 1.0) * (k % 2 ? -1 : 1);
  assert_ok(model_find_tensor(M, "layer0/Wv", &Wv));
  for (int k = 0; k < 4; k++) Wv.v[k * 4 + k] = 1.0;
  assert_ok(model_find_tensor(M, "layer0/ln_g", &g));
  for (int k = 0; k < 4; k++) g.v[k] = 1.0;
  int tok[5] = {4, 0, 1, 2, 3};
  unsigned char sc[5] = {0, 0, 1, 1, 1};
  double out[MODEL_EXTREME_COUNT];
  assert_ok(model_extreme_tokens(M, 1, &(cs_token_batch){5, tok, sc}, out));
  double eps = 1e-5, nv[4];
  for (int a = 1; a <= 4; a++) nv[a - 1] = 2.0 * a / sqrt(a * a + eps);
  assert_close(out[MODEL_EXTREME_MASSIVE], 8.0 / 3.0, 1e-14);
  assert_close(out[MODEL_EXTREME_PEAK], 16.0 / 5.0, 1e-14);
  assert_close(out[MODEL_EXTREME_DRAIN], (16.0 / sqrt(64 + eps)) / ((nv[1] + nv[2]) / 2), 1e-14);
  model_free(M);
}

/* ------------------------------------------------------------- tasks */

static void test_bigram_backcopy_properties(void **state) {
  (void)state;
  int V = 32, T = 32, n = 400, order[32], trig[TASK_BB_TRIGGERS], place[32];
  assert_ok(task_bb_structure(3, V, order, trig));
  for (int i = 0; i < V; i++) place[order[i]] = i;
  int seen[32] = {0};
  for (int i = 0; i < V; i++) seen[order[i]]++;
  for (int i = 0; i < V; i++) assert_int_equal(seen[i], 1); /* a permutation */
  assert_true(trig[0] != trig[1] && trig[1] != trig[2] && trig[0] != trig[2]);
  cs_dataset D, D2, E;
  assert_ok(task_generate_sequences(TASK_BIGRAM_BACKCOPY, V, T, n, 3, SPLIT_TRAIN, &D));
  assert_int_equal(D.T, T);
  assert_null(D.x);
  int copies = 0, successor_hits[3] = {0};
  for (int p = 0; p < n; p++) {
    const int *x = D.tokens + p * T;
    const unsigned char *sc = D.scored + p * T;
    assert_int_equal(x[0], V);
    assert_int_equal(sc[0], 0);
    assert_int_equal(sc[1], 0); /* BOS -> x_1 is not scored */
    for (int t = 1; t < T; t++) assert_true(x[t] >= 0 && x[t] < V);
    for (int t = 2; t < T; t++) {
      assert_int_equal(sc[t], 1);
      int prev = x[t - 1], is_trig = prev == trig[0] || prev == trig[1] || prev == trig[2];
      if (is_trig && t >= 3) { /* after a trigger the token before it repeats */
        assert_int_equal(x[t], x[t - 2]);
        copies++;
      } else { /* a successor: one of the next three in the cyclic order */
        int step = (place[x[t]] - place[prev] + V) % V;
        assert_true(step >= 1 && step <= 3);
        successor_hits[step - 1]++;
      }
    }
  }
  assert_true(copies > 0);
  /* each successor w.p. 1/3: every count within 5 sd of a third */
  double total = successor_hits[0] + successor_hits[1] + successor_hits[2];
  for (int k = 0; k < 3; k++)
    assert_true(fabs(successor_hits[k] - total / 3) < 5 * sqrt(total * 2 / 9));
  /* deterministic per (seed, split); the first n' sequences of n are those of n' */
  assert_ok(task_generate_sequences(TASK_BIGRAM_BACKCOPY, V, T, 100, 3, SPLIT_TRAIN, &D2));
  assert_memory_equal(D.tokens, D2.tokens, sizeof(int) * 100 * T);
  assert_ok(task_generate_sequences(TASK_BIGRAM_BACKCOPY, V, T, 100, 3, SPLIT_TEST, &E));
  assert_true(memcmp(D.tokens, E.tokens, sizeof(int) * 100 * T) != 0);
  task_dataset_free(&D), task_dataset_free(&D2), task_dataset_free(&E);
}

static void test_associative_recall_properties(void **state) {
  (void)state;
  for (int T = 5; T <= 12; T++) {
    int V = 10, K = V / 2, n = 200;
    cs_dataset D;
    assert_ok(task_generate_sequences(TASK_ASSOC_RECALL, V, T, n, 1, SPLIT_TEST, &D));
    int first = 1 + (T - 3) % 2, P = (T - 3) / 2;
    for (int p = 0; p < n; p++) {
      const int *x = D.tokens + p * T;
      const unsigned char *sc = D.scored + p * T;
      assert_int_equal(x[0], V);
      if (first == 2) assert_true(x[1] >= K && x[1] < V); /* the filler is a value */
      int found = 0;
      for (int i = 0; i < P; i++) {
        int k = x[first + 2 * i], v = x[first + 2 * i + 1];
        assert_true(k >= 0 && k < K);
        assert_true(v >= K && v < V);
        for (int i2 = 0; i2 < i; i2++) /* a key keeps its value */
          if (x[first + 2 * i2] == k) assert_int_equal(x[first + 2 * i2 + 1], v);
        if (k == x[T - 2]) {
          found = 1;
          assert_int_equal(x[T - 1], v); /* the answer is the query's value */
        }
      }
      assert_true(found);
      for (int t = 0; t < T; t++) assert_int_equal(sc[t], t == T - 1);
    }
    task_dataset_free(&D);
  }
  cs_dataset D;
  assert_int_equal(task_generate_sequences(TASK_ASSOC_RECALL, 10, 4, 1, 1, SPLIT_TEST, &D),
                   CS_ERR_INPUT);
  assert_int_equal(task_generate_sequences(TASK_BIGRAM_BACKCOPY, 3, 8, 1, 1, SPLIT_TEST, &D),
                   CS_ERR_INPUT);
  assert_int_equal(task_generate(TASK_BIGRAM_BACKCOPY, 2, 4, 1, SPLIT_TEST, 0.0, &D), CS_ERR_INPUT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_matches_reference),
      cmocka_unit_test(test_ablations_and_block_stats_match_reference),
      cmocka_unit_test(test_gradients_match_reference),
      cmocka_unit_test(test_train_step_matches_three_calls),
      cmocka_unit_test(test_backward_vs_finite_differences),
      cmocka_unit_test(test_jets_vs_finite_differences),
      cmocka_unit_test(test_jets_first_rows_match_reference),
      cmocka_unit_test(test_sink_share_matches_reference),
      cmocka_unit_test(test_gate_means_match_reference),
      cmocka_unit_test(test_extreme_tokens_hand_computed),
      cmocka_unit_test(test_bigram_backcopy_properties),
      cmocka_unit_test(test_associative_recall_properties),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* memory_attn.c — the memory family (docs/MODELS.md, "Models (the memory
 * family)"): an embedding, L blocks of memory attention (queries against n
 * learned key slots, a softmax per head, the weighted sum of n learned
 * value slots, the gate, the output map) or of the mlp baseline, each
 * after an optional pre-LayerNorm and with an optional residual, and the
 * readout; its row of the family table (memory_family_ops).
 *
 * One code path for values (C = 1: training, evaluation) and second-order
 * jets (C > 1: the geometry): every product is a la_gemm over all N·C
 * rows, the nonlinear pieces go through the jet rules (jet.h). The gate
 * and the output map are the attention output sublayer of layers.h, the
 * gate at g1 (the memory family has no other position). The backward
 * (values only) runs the softmax backward as an element-wise pass
 * compiled for the CPU's vector width (simd.h).
 *
 * Notation: N points, C jet rows per point, R = N·C rows, d width, n slots,
 * H heads, dh = d/H, n_gate = d (gated), H (gated-headwise) or 0. */
#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/simd.h"
#include "jet.h"
#include "layers.h"
#include "model_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Offsets of one block's tensors in the parameter array (-1 when absent). */
typedef struct {
  int64_t Wq, K, U, Wo, bo, Wg, bg, W1, b1, W2, b2, ln_g, ln_b;
} mem_layer;

/* The family's layout (M->layout). */
typedef struct {
  int attention; /* memory attention blocks, or the mlp baseline (config_arch_info) */
  int64_t embed_W, embed_b;
  mem_layer layer[]; /* L */
} mem_layout;

/* Per-block forward caches, each R × (width given). */
typedef struct {
  ln_cache ln;   /* LayerNorm (norm = pre) */
  double *sz;    /* R × ld: gate pre-activation z | scores s (n_gate + H·n
                    columns, ld = score_ld) */
  double *pw;    /* (n_gate + H·n) × d  [W_g; P], P the score map */
  double *alpha; /* R × Hn  attention weights */
  double *o;     /* R × d   Σ α U */
  double *g;     /* R × n_gate gate σ(z + b_g) */
  double *u;     /* R × d   gated value (g ⊙ o) or o */
  double *t;     /* R × d   mlp hidden tanh(W_1 a + b_1) */
} mem_cache;

/* The family's workspace (A->fam). */
typedef struct {
  int L;
  double *xjet;     /* R × m  jet of the input */
  mem_cache *cache; /* L */
  /* backward buffers (N × …) */
  double *dh_a, *dh_b, *da, *du, *dz, *dob, *dalpha;
  double *dsz, *dpw; /* N × score_ld, H·n × d (dP) */
} mem_acts;

/* Row stride of [z | s]: n_gate + H·n rounded up to a multiple of 8
 * doubles, so that every row starts on a 64-byte line. */
static inline int score_ld(const cs_model *M) { return (M->n_gate + M->H * M->n + 7) / 8 * 8; }

/* ------------------------------------------- value-path element-wise */

/* Softmax backward on values, per group of n: ds = α ⊙ (dα − ⟨α, dα⟩), in
 * place in dα. Inlined twice by softmax_backward_values, once with n = 3
 * (the default slot count) as a constant the compiler unrolls; the same
 * operations in the same order either way. */
static inline __attribute__((always_inline)) void softmax_backward_groups(long groups, int n,
                                                                          const double *alpha,
                                                                          double *dalpha) {
  for (long r = 0; r < groups; r++) {
    const double *al = alpha + r * n;
    double *dal = dalpha + r * n, dot = 0.0;
    for (int i = 0; i < n; i++) dot += al[i] * dal[i];
    for (int i = 0; i < n; i++) dal[i] = al[i] * (dal[i] - dot);
  }
}

CS_VECTOR_CLONES static void softmax_backward_values(long groups, int n, const double *alpha,
                                                     double *dalpha) {
  if (n == 3) softmax_backward_groups(groups, 3, alpha, dalpha);
  else softmax_backward_groups(groups, n, alpha, dalpha);
}

/* The score map of layer l: per head j, P_j = K_j W_{q,j} / √dh (n × d;
 * K_j = K[:, head j] is n × dh, W_{q,j} the head's dh rows of W_q), so
 * that the scores s_j = q_j K_jᵀ/√dh = (a W_{q,j}ᵀ) K_jᵀ/√dh = a P_jᵀ come
 * from the layer input in one product, with no query activations; stacked
 * over the heads below W_g: pw = [W_g; P], (n_gate + H·n) × d. */
static int score_map_forward(const cs_model *M, const mem_layer *P, double *pw) {
  const double *W = M->params;
  int d = M->d, n = M->n, dh = M->dh, ng = M->n_gate;
  la_mat K = VIEW(M, n, d, d, (double *)W + P->K);
  if (ng) memcpy(pw, W + P->Wg, sizeof(double) * (size_t)ng * d);
  for (int j = 0; j < M->H; j++)
    CS_CHECK(la_gemm('N', 'N', 1.0 / sqrt((double)dh), la_cols(K, j * dh, dh),
                     VIEW(M, dh, d, d, (double *)W + P->Wq + (int64_t)j * dh * d), 0.0,
                     VIEW(M, n, d, d, pw + (int64_t)(ng + j * n) * d)));
  return CS_OK;
}

/* The output sublayer of block P (layers.h): y = u W_oᵀ + b_o with u = o,
 * or (gated) σ(z + b_g) ⊙ o, z the first n_gate columns of [z | s]. */
static attn_out mem_attn_out(const cs_model *M, const mem_layer *P, const mem_cache *c) {
  return (attn_out){c->sz, score_ld(M), c->g, c->o, c->u, NULL, P->Wo, P->bo, P->bg, GATE_G1};
}

/* Memory attention (+ gate) forward on jets, a R × d -> y R × d:
 *   [z | s] = a [W_g; P]ᵀ                       R × (n_gate + H·n), one product
 *             (rows of ld score_ld: each row starts on a line)
 *             (s_j = q_j K_jᵀ/√dh with q = a W_qᵀ: score_map_forward)
 *   α_j = softmax(s_j)                          R × n   (jet softmax)
 *   o_j = α_j U_j                               R × dh  (linear in α)
 *   gated:          u = σ(z + b_g) ⊙ o          (unary + Leibniz)
 *   gated-headwise: u_j = σ(z_j + b_{g,j}) o_j  (group product)
 *   y = u W_oᵀ + b_o                            (the last three: attn_out_forward) */
static int attn_forward(const cs_model *M, const jet_shape *js, int N, const mem_layer *P,
                        const double *a, mem_cache *c, double *y) {
  const double *W = M->params;
  int d = M->d, n = M->n, H = M->H, dh = M->dh, R = N * js->C, Hn = H * n, ng = M->n_gate;
  int lds = score_ld(M);
  /* one product for the gate pre-activation and the scores (they share a) */
  CS_CHECK(score_map_forward(M, P, c->pw));
  CS_CHECK(la_gemm('N', 'T', 1.0, VIEW(M, R, d, d, (double *)a), VIEW(M, ng + Hn, d, d, c->pw),
                   0.0, VIEW(M, R, ng + Hn, lds, c->sz)));
  LA_PROF_BEGIN(t0);
  copy_cols(R, Hn, c->sz + ng, lds, c->alpha, Hn); /* the scores into their own R × H·n array */
  jet_softmax_groups(js, N, H, n, c->alpha);
  LA_PROF_END(t0, LA_PROF_SOFTMAX);
  la_mat alpha = VIEW(M, R, Hn, Hn, c->alpha), o = VIEW(M, R, d, d, c->o);
  la_mat U = VIEW(M, n, d, d, (double *)W + P->U);
  for (int j = 0; j < H; j++)
    CS_CHECK(la_gemm('N', 'N', 1.0, la_cols(alpha, j * n, n), la_cols(U, j * dh, dh), 0.0,
                     la_cols(o, j * dh, dh)));
  /* y = u W_oᵀ + b_o, u = o or the gated o (layers.h) */
  attn_out ao = mem_attn_out(M, P, c);
  return attn_out_forward(M, js, N, &ao, y);
}

/* Attention backward on values. dy N × d -> da N × d (overwritten).
 *   y = u W_oᵀ + b_o:  dW_o += dyᵀ u;  db_o += Σ dy;  du = dy W_o
 *   gate:              do, dz (attn_out_backward);  db_g += Σ dz
 *   o_j = α_j U_j:     dα_j = do_j U_jᵀ;  dU_j += α_jᵀ do_j
 *   softmax:           ds = α ⊙ (dα − ⟨α, dα⟩)
 *   [z | s] = a [W_g; P]ᵀ:  d[W_g; P] = [dz | ds]ᵀ a;  da = [dz | ds] [W_g; P]
 *   P_j = K_j W_{q,j}/√dh:  dK_j += dP_j W_{q,j}ᵀ/√dh;  dW_{q,j} += K_jᵀ dP_j/√dh
 * dz and ds share one array (the layout of [z | s]), so each of d[W_g; P]
 * and da is one product, as z and s were. */
static int attn_backward(cs_model *M, mem_acts *S, int N, const mem_layer *P, const mem_cache *c,
                         const double *a, const double *dy, double *da) {
  double *W = M->params, *G = M->grads;
  int d = M->d, n = M->n, H = M->H, dh = M->dh, Hn = H * n, ng = M->n_gate;
  int lds = score_ld(M);
  /* the output sublayer: dL/do, and dz in the first n_gate columns of dsz */
  attn_out ao = mem_attn_out(M, P, c);
  const double *dob;
  CS_CHECK(attn_out_backward(M, N, &ao, dy, S->dob, S->du, S->dsz, &dob));
  la_mat dsz = VIEW(M, N, ng + Hn, lds, S->dsz);
  if (ng) {
    LA_PROF_BEGIN(t0);
    la_sum_rows(la_cols(dsz, 0, ng), G + P->bg);
    LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  }
  la_mat alpha = VIEW(M, N, Hn, Hn, c->alpha), dalpha = VIEW(M, N, Hn, Hn, S->dalpha);
  la_mat dO = VIEW(M, N, d, d, (double *)dob);
  la_mat U = VIEW(M, n, d, d, W + P->U), dU = VIEW(M, n, d, d, G + P->U);
  for (int j = 0; j < H; j++) {
    CS_CHECK(la_gemm('N', 'T', 1.0, la_cols(dO, j * dh, dh), la_cols(U, j * dh, dh), 0.0,
                     la_cols(dalpha, j * n, n)));
    CS_CHECK(la_gemm('T', 'N', 1.0, la_cols(alpha, j * n, n), la_cols(dO, j * dh, dh), 1.0,
                     la_cols(dU, j * dh, dh)));
  }
  LA_PROF_BEGIN(t1);
  softmax_backward_values((long)N * H, n, c->alpha, S->dalpha);
  copy_cols(N, Hn, S->dalpha, Hn, S->dsz + ng, lds); /* ds beside dz */
  LA_PROF_END(t1, LA_PROF_SOFTMAX);
  /* d[W_g; P] = [dz | ds]ᵀ a as two products: dW_g += dzᵀ a straight into
   * the gradient (beta 1: no zeroing of a temporary, no pass adding it in),
   * dP = dsᵀ a into dpw */
  if (ng)
    CS_CHECK(la_gemm('T', 'N', 1.0, la_cols(dsz, 0, ng), VIEW(M, N, d, d, (double *)a), 1.0,
                     VIEW(M, ng, d, d, G + P->Wg)));
  CS_CHECK(la_gemm('T', 'N', 1.0, la_cols(dsz, ng, Hn), VIEW(M, N, d, d, (double *)a), 0.0,
                   VIEW(M, Hn, d, d, S->dpw)));
  double scale = 1.0 / sqrt((double)dh);
  la_mat K = VIEW(M, n, d, d, W + P->K), dK = VIEW(M, n, d, d, G + P->K);
  for (int j = 0; j < H; j++) {
    la_mat dPj = VIEW(M, n, d, d, S->dpw + (int64_t)j * n * d);
    CS_CHECK(la_gemm('N', 'T', scale, dPj, VIEW(M, dh, d, d, W + P->Wq + (int64_t)j * dh * d),
                     1.0, la_cols(dK, j * dh, dh)));
    CS_CHECK(la_gemm('T', 'N', scale, la_cols(K, j * dh, dh), dPj, 1.0,
                     VIEW(M, dh, d, d, G + P->Wq + (int64_t)j * dh * d)));
  }
  return la_gemm('N', 'N', 1.0, dsz, VIEW(M, ng + Hn, d, d, c->pw), 0.0, VIEW(M, N, d, d, da));
}

/* ------------------------------------------------------------- layout */

/* embed/W, embed/b, then per block its attention (Wq, K, U, Wo, bo, and
 * Wg, bg when gated) or mlp (W1, b1, W2, b2) tensors and ln_g, ln_b
 * (norm = pre), then the readout. */
static int memory_layout(cs_model *M) {
  const cs_config *cfg = &M->cfg;
  mem_layout *Y;
  CS_CHECK(cs_calloc_bytes((void **)&Y, 1, sizeof *Y + sizeof(mem_layer) * (size_t)M->L));
  M->layout = Y;
  Y->attention = config_arch_info(cfg->arch)->attention;
  int d = M->d;
  Y->embed_W = model_add_tensor(M, "embed/W", d, M->m, 1);
  Y->embed_b = model_add_tensor(M, "embed/b", 1, d, 0);
  for (int l = 0; l < M->L; l++) {
    mem_layer *P = &Y->layer[l];
    memset(P, 0xff, sizeof *P); /* all -1 */
    if (!Y->attention) {
      P->W1 = model_add_layer_tensor(M, l, "W1", d, d, 1);
      P->b1 = model_add_layer_tensor(M, l, "b1", 1, d, 0);
      P->W2 = model_add_layer_tensor(M, l, "W2", d, d, 1);
      P->b2 = model_add_layer_tensor(M, l, "b2", 1, d, 0);
    } else {
      P->Wq = model_add_layer_tensor(M, l, "Wq", d, d, 1);
      P->K = model_add_layer_tensor(M, l, "K", M->n, d, 1);
      model_set_init(M, INIT_NORMAL, 1.0); /* slots: N(0, 1) */
      P->U = model_add_layer_tensor(M, l, "U", M->n, d, 1);
      model_set_init(M, INIT_NORMAL, 1.0);
      P->Wo = model_add_layer_tensor(M, l, "Wo", d, d, 1);
      P->bo = model_add_layer_tensor(M, l, "bo", 1, d, 0);
      if (M->n_gate) {
        P->Wg = model_add_layer_tensor(M, l, "Wg", M->n_gate, d, 1);
        P->bg = model_add_layer_tensor(M, l, "bg", 1, M->n_gate, 0);
      }
    }
    if (cfg->norm == NORM_PRE) {
      P->ln_g = model_add_layer_tensor(M, l, "ln_g", 1, d, 0);
      P->ln_b = model_add_layer_tensor(M, l, "ln_b", 1, d, 0);
    }
  }
  readout_layout(M, N_CLASSES);
  return CS_OK;
}

/* Products per point: the embedding, per block 4d² + 4dn (attention: the
 * score map's product, Σ α U, W_o) or 4d² (mlp), 2d·n_gate for the gate,
 * the readout. */
static double memory_flops_per_point(const cs_config *c) {
  double d = c->width, m = c->input_dim, n = c->slots;
  double ng = config_arch_gate_width(c->arch, c->width, c->heads);
  double layer = config_arch_info(c->arch)->attention ? 4 * d * d + 4 * d * n : 4 * d * d;
  layer += 2 * d * ng;
  return 2 * d * m + c->depth * layer + 2 * N_CLASSES * d;
}

/* ---------------------------------------------------------- workspace */

static void memory_acts_free(void *fam) {
  mem_acts *S = fam;
  if (!S) return;
  if (S->cache)
    for (int l = 0; l < S->L; l++) {
      mem_cache *c = &S->cache[l];
      ln_cache_free(&c->ln);
      free(c->sz), free(c->pw);
      free(c->alpha), free(c->o), free(c->g), free(c->u), free(c->t);
    }
  free(S->cache), free(S->xjet);
  free(S->dh_a), free(S->dh_b), free(S->da), free(S->du), free(S->dz), free(S->dob);
  free(S->dalpha), free(S->dsz), free(S->dpw);
  free(S);
}

static int memory_acts_create(const cs_model *M, cs_acts *A, int jet_order) {
  const mem_layout *Y = M->layout;
  mem_acts *S;
  CS_CHECK(CS_CALLOC(S, 1));
  A->fam = S;
  S->L = M->L;
  int64_t R = (int64_t)A->max_points * A->js.C, N = A->max_points, d = M->d;
  int64_t Hn = (int64_t)M->H * M->n;
  int rc = CS_OK;
#define ALLOC(p, count) \
  if (!rc) rc = CS_CALLOC(p, count)
  ALLOC(S->xjet, R * M->m);
  ALLOC(S->cache, M->L);
  for (int l = 0; !rc && l < M->L; l++) {
    mem_cache *c = &S->cache[l];
    if (!rc && M->cfg.norm == NORM_PRE) rc = ln_cache_alloc(&c->ln, R, (int)d);
    if (!Y->attention) {
      ALLOC(c->t, R * d);
    } else {
      ALLOC(c->sz, R * score_ld(M));
      ALLOC(c->pw, (Hn + M->n_gate) * d);
      ALLOC(c->alpha, R * Hn);
      ALLOC(c->o, R * d);
      if (M->n_gate) {
        ALLOC(c->g, R * M->n_gate);
        ALLOC(c->u, R * d);
      }
    }
  }
  if (jet_order == 0) {
    ALLOC(S->dh_a, N * d);
    ALLOC(S->dh_b, N * d);
    ALLOC(S->da, N * d);
    ALLOC(S->du, N * d);
    ALLOC(S->dz, N * d);
    ALLOC(S->dob, N * d);
    ALLOC(S->dalpha, N * Hn);
    ALLOC(S->dsz, N * score_ld(M));
    ALLOC(S->dpw, Hn * d);
  }
#undef ALLOC
  return rc;
}

/* ------------------------------------------------------ whole family */

/* h_0 = embedding(x); per block a = h_l or LayerNorm(h_l), y = block(a),
 * h_{l+1} = y or h_l + y; logits = readout(h_L) on values. */
static int memory_forward(const cs_model *M, cs_acts *A, int N, const double *x) {
  const mem_layout *Y = M->layout;
  mem_acts *S = A->fam;
  const jet_shape *js = &A->js;
  const double *W = M->params;
  int d = M->d, R = N * js->C;
  CS_CHECK(embedding_forward(M, js, N, x, W + Y->embed_W, W + Y->embed_b, S->xjet, A->h[0]));
  for (int l = 0; l < M->L; l++) {
    const mem_layer *P = &Y->layer[l];
    mem_cache *c = &S->cache[l];
    const double *hin = A->h[l];
    double *hout = A->h[l + 1];
    const double *a = hin;
    if (M->cfg.norm == NORM_PRE) {
      LA_PROF_BEGIN(t0);
      layernorm_forward(M, js, N, hin, W + P->ln_g, W + P->ln_b, &c->ln, A->tmp);
      LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
      a = c->ln.a;
    }
    if (Y->attention)
      CS_CHECK(attn_forward(M, js, N, P, a, c, hout));
    else
      CS_CHECK(mlp_forward(M, js, N, a, W + P->W1, W + P->b1, W + P->W2, W + P->b2, c->t, hout));
    /* residual h_{l+1} = h_l + y: linear, all jet rows */
    if (M->cfg.residual) {
      LA_PROF_BEGIN(t0);
      add_into((int64_t)R * d, hin, hout);
      LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
    }
  }
  return readout_forward(M, js, N, A->h[M->L], A->logits);
}

/* Backward through the readout, the blocks from the last (LayerNorm,
 * residual: dh_l = dh_{l+1} + the branch's gradient) and the embedding. */
static int memory_backward(cs_model *M, cs_acts *A, int N, const double *x) {
  const mem_layout *Y = M->layout;
  mem_acts *S = A->fam;
  int d = M->d;
  double *W = M->params, *G = M->grads, *dh = S->dh_a, *dh_next = S->dh_b;
  CS_CHECK(readout_backward(M, N, A->h[M->L], A->dlogits, dh));
  for (int l = M->L - 1; l >= 0; l--) {
    const mem_layer *P = &Y->layer[l];
    const mem_cache *c = &S->cache[l];
    const double *a = M->cfg.norm == NORM_PRE ? c->ln.a : A->h[l];
    double *da = M->cfg.norm == NORM_PRE ? S->da : dh_next;
    if (Y->attention)
      CS_CHECK(attn_backward(M, S, N, P, c, a, dh, da));
    else
      CS_CHECK(mlp_backward(M, N, a, c->t, P->W1, P->b1, P->W2, P->b2, dh, S->du, S->dz, da));
    LA_PROF_BEGIN(t0);
    if (M->cfg.norm == NORM_PRE)
      layernorm_backward(M, N, &c->ln, W + P->ln_g, S->da, G + P->ln_g, G + P->ln_b, dh_next);
    /* residual: dh_l = dh_{l+1} + (branch gradient) */
    if (M->cfg.residual) add_into((int64_t)N * d, dh, dh_next);
    LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
    double *t = dh;
    dh = dh_next;
    dh_next = t;
  }
  /* embedding: dW_e += dh_0ᵀ x;  db_e += Σ dh_0 */
  return linear_backward(M, N, M->m, d, x, W + Y->embed_W, dh, G + Y->embed_W, G + Y->embed_b,
                         NULL, 0.0);
}

/* The memory-estimate terms (docs/SPEC.md, "Sizes"; model_family_ops):
 * per layer W_q, K, U, W_o, b_o, W_g, b_g (or an MLP block's W_1, b_1, W_2,
 * b_2) and LayerNorm's gains; per activation row the layer outputs, the
 * scores, weights, o, gate and u of each head, and the caches. */
static void memory_memory(const cs_config *c, uint64_t ng, model_memory_terms *t, int *over) {
  uint64_t m = (uint64_t)c->input_dim, d = (uint64_t)c->width, n = (uint64_t)c->slots;
  uint64_t H = (uint64_t)c->heads, L = (uint64_t)c->depth, dd = SIZE_MUL(d, d);
  uint64_t layer = c->norm == NORM_PRE ? SIZE_MUL(2, d) : 0;
  if (c->arch == ARCH_MLP)  // W1, b1, W2, b2
    layer = SIZE_ADD(layer, SIZE_ADD(SIZE_MUL(2, dd), SIZE_MUL(2, d)));
  else  // Wq, K, U, Wo, bo, Wg, bg
    layer = SIZE_ADD(layer, SIZE_ADD(SIZE_ADD(SIZE_MUL(2, dd), SIZE_MUL(SIZE_MUL(2, n), d)),
                                     SIZE_ADD(d, SIZE_ADD(SIZE_MUL(ng, d), ng))));
  uint64_t embed = SIZE_ADD(SIZE_MUL(m, d), d);
  t->params = SIZE_ADD(SIZE_ADD(embed, SIZE_MUL(L, layer)), SIZE_ADD(SIZE_MUL(2, d), 2));
  uint64_t row = c->norm == NORM_PRE ? SIZE_ADD(SIZE_MUL(2, d), 1) : 0;
  uint64_t hn = SIZE_MUL(H, n);  // scores, weights, o, gate, u
  row = SIZE_ADD(row, SIZE_ADD(SIZE_ADD(SIZE_MUL(2, hn), SIZE_MUL(2, ng)), SIZE_ADD(SIZE_MUL(2, d), 8)));
  t->row = SIZE_ADD(sizes_point_base(c, over), SIZE_MUL(L, row));
  sizes_points(c, t->row, t, over);
}

/* Block l's attention over the slots and its gate after a value forward
 * (model_block_view): one query per point, H groups of n slot weights;
 * nothing for an mlp block. */
static void memory_block_view(const cs_model *M, const cs_acts *A, int N, int l,
                              model_block_view *v) {
  const mem_layout *Y = M->layout;
  const mem_cache *c = &((const mem_acts *)A->fam)->cache[l];
  *v = (model_block_view){Y->attention ? c->alpha : NULL, Y->attention && M->n_gate ? c->g : NULL,
                          N, 1, M->n, 0};
}

const model_family_ops memory_family_ops = {
    .layout = memory_layout,
    .acts_create = memory_acts_create,
    .acts_free = memory_acts_free,
    .forward = memory_forward,
    .loss = softmax_loss,
    .backward = memory_backward,
    .flops_per_point = memory_flops_per_point,
    .memory = memory_memory,
    .block_view = memory_block_view,
};

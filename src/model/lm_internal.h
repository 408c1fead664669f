/* lm_internal.h — what the files of the lm family share (not a public
 * header): lm_products.c (the attention's token products, used by both
 * passes), lm_attn.c (layout, workspace, forward on values and on jets of
 * the last position), lm_backward.c
 * (next-token loss, backward on values, first-token share), lm_step.c
 * (the training step: the three passes chunk by chunk) and lm_family.c
 * (the family's row of the table). The model is
 * docs/MODELS.md's "Language-model family":
 *
 *   h_0[t]   = E[tok_t] + P[t]       (+ x_1 u_1 + x_2 u_2 at t = T − 1: the probe plane)
 *   block l  A = LN_1(h)                                   row-wise
 *            [Q | K | V | Z] = A [W_q; W_k; W_v; W_g]ᵀ     one product
 *            G = σ(Z + b_g)    width d (gated) or H (gated-headwise)
 *            g2: V ← G ⊙ V   g3: K ← G ⊙ K   g4: Q ← G ⊙ Q
 *            P_j = softmax_causal(Q_j K_jᵀ/√dh)  (key s ≤ query t), O_j = P_j V_j
 *            g1: O ← G ⊙ O
 *            Y = O W_oᵀ + b_o;   g5: Y ← G ⊙ Y
 *            h ← h + Y
 *            (mlp_ratio f/d > 0)  h ← h + GELU(LN_2(h) W_1ᵀ + b_1) W_2ᵀ + b_2
 *   logits   = LN_f(h_L) W_rᵀ + b_r                         V per position
 *
 * Notation: N sequences, T positions, NT = N·T value rows (row p·T + t is
 * position t of sequence p), d width, H heads, dh = d/H, ng gate width,
 * ldq = 3d + ng, f = mlp_ratio·d, V vocabulary (BOS is token V). */
#ifndef CURVSWEEP_MODEL_LM_INTERNAL_H
#define CURVSWEEP_MODEL_LM_INTERNAL_H

#include "layers.h"
#include "model_internal.h"

/* Offsets of one block's tensors (-1 when absent); [W_q; W_k; W_v; W_g]
 * is one ldq × d block at Wq. */
typedef struct {
  int64_t ln_g, ln_b, Wq, Wk, Wv, Wg, bg, Wo, bo;
  int64_t mlp_ln_g, mlp_ln_b, W1, b1, W2, b2;
} lm_layer;

/* The family's layout (M->layout): tensor offsets, and the probe plane's
 * orthonormal directions u (m × d, from the cell seed; not parameters). */
typedef struct {
  int64_t tok_emb, pos_emb, lnf_g, lnf_b;
  int V, T, f, ldq;
  double *u;         /* m × d, inside this allocation */
  lm_layer layer[];  /* L */
} lm_layout;

/* One block's caches: NT value rows (the value pass), or N·C rows of the
 * last position (the jet pass: one set, reused by every block). */
typedef struct {
  qkv_cache at;        /* LN_1 of the block input (at.ln), [Q | K | V | Z], the
                          gate, the attention weights (0 for keys s > t) and
                          P V (layers.h) */
  double *mid;         /* rows × d: h + Y, the MLP sublayer's input */
  ln_cache ln2;        /* LN_2 of mid */
  double *u, *act;     /* rows × f: MLP pre-activation and GELU of it */
  double *phi;         /* rows × f: Φ(u) of the value pass (the GELU's backward) */
} lm_cache;

/* A block's weights transposed once per forward (in × out: [W_q; W_k;
 * W_v; W_g]ᵀ d × ldq, W_oᵀ d × d, W_1ᵀ d × f, W_2ᵀ f × d), the copies
 * la_gemm would otherwise make for every chunk's product; NULL for a
 * weight over LA_TRANSPOSE_B_MAX entries (la.h), which la_gemm does not copy either
 * (docs/DECISIONS.md, "Small transposed products through a copy" and "The
 * lm family's weights transposed once per forward, its loss through the
 * vector exp"). */
typedef struct {
  double *qkv, *o, *w1, *w2;
} lm_wt;

/* The family's workspace (A->fam). */
typedef struct {
  int T, L, ng, ldq, f, V;
  double **x;          /* L + 1 residual streams, NT × d (values) */
  lm_cache *cache;     /* L */
  ln_cache lnf;        /* final LN, NT × d */
  double *tmp;         /* 2·NT: LayerNorm scratch */
  lm_wt *wt;           /* L: the transposed weights (lm_attn.c), in wbuf */
  double *wbuf;
  /* jets of the last position (jet_order 2) */
  lm_cache jet;        /* the jet pass's caches, N·C rows */
  double *jtmp;        /* 2·N·C */
  /* backward (values) */
  qkv_grads gr;                /* NT rows (layers.h) */
  double *dmid, *dff, *dff2;   /* NT × d, NT × f, NT × f */
} lm_acts;

/* The value passes of a block run over chunks of whole sequences of about
 * LM_CHUNK_ROWS rows (at least one sequence): a chunk's activations stay
 * in the core's cache from one pass to the next, and in a training step
 * (lm_step.c) from its forward to its backward (docs/DECISIONS.md,
 * "Training speed"); 192 is a multiple of the 24-row blocks of la's small
 * products (src/la/la_local.c), which pad any other count. A constant: a
 * cell's result does not depend on it varying. */
#define LM_CHUNK_ROWS 192

/* Sequences per chunk for T positions. */
static inline int lm_chunk_seqs(int T) { return LM_CHUNK_ROWS / T > 0 ? LM_CHUNK_ROWS / T : 1; }

/* The caches of c from value row r on (a chunk's view; the arrays a family
 * without a gate or an MLP lacks stay NULL). ng, HT = H·T, f as in the
 * notation above. */
static inline lm_cache lm_cache_rows(const lm_cache *c, int64_t r, int d, int ldq, int ng, int HT,
                                     int f) {
  lm_cache s = *c;
  s.at.ln = ln_cache_rows(&c->at.ln, r, d);
  s.at.qkvz += r * ldq, s.at.p += r * HT, s.at.o += r * d;
  if (ng) s.at.g += r * ng, s.at.pre += r * d, s.at.gated += r * d;
  s.mid += r * d;
  if (f) {
    s.ln2 = ln_cache_rows(&c->ln2, r, d);
    s.u += r * f, s.act += r * f, s.phi += r * f;
  }
  return s;
}

/* ---- lm_products.c ---- */
/* The attention's token products (docs/DECISIONS.md, "Training speed"):
 * C = A B for R rows, D columns and inner dimension K, A (ld lda), B (ld
 * ldb), C (ld ldc) row-major, each entry summed from 0 over k ascending, in
 * blocks of 4 rows × 16 (or 8) columns held in vector registers. tri restricts
 * the work to a causal triangle (entries outside it are never read or
 * written: their A entries must be zero where the sum would cover them):
 *   LM_TRI_NONE     every k, every column
 *   LM_TRI_K_LOWER  row r sums k < r0 + 4 (r0 its block's first row; A's
 *                   entries with k > r are zero): P V, dS K
 *   LM_TRI_K_UPPER  row r sums k ≥ r0 (A's entries with k < r are zero),
 *                   and A is given transposed (entry (r, k) at A[k·lda + r]):
 *                   Pᵀ dO, dSᵀ Q from P and dS as stored
 *   LM_TRI_D_LOWER  row r gets columns < r0 + 4 rounded up to 8 (ldc and B
 *                   cover that many): Q Kᵀ, dO Vᵀ */
typedef enum { LM_TRI_NONE, LM_TRI_K_LOWER, LM_TRI_K_UPPER, LM_TRI_D_LOWER } lm_tri;
void lm_rows_gemm(lm_tri tri, int R, int K, int D, const double *A, int lda, const double *B,
                  int ldb, double *C, int ldc);
/* out[t, s] = ⟨A[t], X[s]⟩ for s ≤ t (T rows of dh at A, ld lda, and at X,
 * ld ldx; out T × Tp, Tp = T rounded up to 8): X transposed into xt
 * (dh × Tp, its last Tp − T columns zero), then lm_rows_gemm's lower
 * triangle (Q Kᵀ, dO Vᵀ). */
void lm_causal_dots(int T, int dh, const double *A, int lda, const double *X, int ldx, double *xt,
                    double *out);

/* ---- lm_attn.c ---- */
/* The family's operations of this file (model_family_ops): the layout,
 * the workspace, the forward on values and on jets, the nominal flops,
 * the memory-estimate terms, a block's attention and gate. */
int lm_layout_create(cs_model *M);
int lm_acts_create(const cs_model *M, cs_acts *A, int jet_order);
void lm_acts_free(void *fam);
int lm_forward(const cs_model *M, cs_acts *A, int N, const double *x);
double lm_flops_per_point(const cs_config *c);
void lm_memory(const cs_config *c, uint64_t ng, model_memory_terms *t, int *over);
void lm_block_view(const cs_model *M, const cs_acts *A, int N, int l, model_block_view *v);
/* CS_ERR_INPUT naming the first bound token of the N sequences outside
 * 0..V (vocabulary and BOS). */
int lm_tokens_check(const cs_acts *A, int N);
/* The blocks' small weights transposed into S->wt (lm_wt), once per forward. */
void lm_weights_transpose(const cs_model *M, lm_acts *S);
/* h_0 of N sequences on values (N·T × d) from their tokens tok (N × T)
 * and the probe offsets x (N × m, or NULL). */
void lm_embed_values(const cs_model *M, int N, const int *tok, const double *x, double *X0);
/* Block l forward, hin -> hout: on values (js->C = 1) of N whole
 * sequences, caches c (a chunk's view, lm_cache_rows); on the jets of the
 * last position (C > 1), caches S->jet. ablate: MODEL_ABLATE_NONE, or the
 * intervention of model_ablation at this block (values only). */
int lm_block_forward(const cs_model *M, const jet_shape *js, lm_acts *S, lm_cache *c, int N, int l,
                     int ablate, const double *hin, double *hout);
/* logits = LN_f(h_L) W_rᵀ + b_r at value rows r .. r + rows − 1 (hL those
 * rows of h_L): the final LayerNorm's caches (S->lnf) and A->logits at
 * those rows. */
int lm_readout_rows(const cs_model *M, cs_acts *A, int64_t r, int rows, const double *hL);

/* ---- lm_backward.c ---- */
/* Next-token cross-entropy over the scored targets of the bound batch
 * (A->tok), the family's loss op. */
double lm_loss(cs_acts *A, int N, const int *y, int *n_correct);
/* The scored targets n_s of the N bound sequences (lm_loss's divisor). */
int64_t lm_scored_count(const cs_acts *A, int N);
/* lm_loss's terms of value rows r0 .. r1 − 1 in order, from A->logits:
 * *loss += each scored row's −log p(target), *correct += its right
 * argmaxes, dlogits of the rows (0 on unscored rows, divided by n_s). */
void lm_loss_rows(cs_acts *A, int64_t r0, int64_t r1, int64_t n_s, double *loss, int *correct);
/* Backward of the last value forward and lm_loss (the family's backward op). */
int lm_backward(cs_model *M, cs_acts *A, int N, const double *x);
/* Block l backward on the values of N whole sequences: dXn (N·T × d, the
 * gradient at the block's output) -> dX (at its input), caches c (the
 * forward's, lm_cache_rows), S's backward buffers from their first row. */
int lm_block_backward_rows(cs_model *M, lm_acts *S, const lm_cache *c, int N, int l,
                           const double *dXn, double *dX);
/* The readout's backward to h_L at value rows r .. r + rows − 1, after
 * lm_loss_rows: da_f = dlogits W_r (in the first rows of S->gr.da), then
 * the final LayerNorm's (its γ and β gradients added in row order) into
 * dh (those rows). dW_r and db_r are the caller's. */
int lm_readout_backward_rows(cs_model *M, cs_acts *A, int64_t r, int rows, double *dh);
/* The embeddings' gradients from dh0, the gradient of h_0 at value rows
 * r0 .. r0 + rows − 1 (dh0 from row r0), added in row order. */
void lm_embed_backward(cs_model *M, const cs_acts *A, int64_t r0, int64_t rows, const double *dh0);

/* ---- lm_step.c ---- */
/* The family's train_step op: lm_forward, lm_loss and lm_backward on N
 * bound sequences in one pass over chunks of sequences, with the same
 * bits; *loss lm_loss's value, the gradient accumulated into M->grads. */
int lm_train_step(cs_model *M, cs_acts *A, int N, const double *x, double *loss);

/* The lm family's sequence statistics (its row's sink_sums, attn_map_sums
 * and extreme_collect, model_family_ops). The attention-sink sums after a
 * value forward of N sequences (lm_backward.c), one group per head: with
 * the query positions t ≥ 1 of every sequence, sum[(k·L + l)·H + j] += for
 * k = MODEL_STAT_SINK_MASS the weights head j of layer l puts on BOS, for
 * MODEL_STAT_MAX_ATTN their largest weights, for MODEL_STAT_HEAD_SINK the
 * first of them again (every group is a head); returns the number of
 * (sequence, query) terms added per entry. */
double lm_sink_sums(const cs_model *M, const cs_acts *A, int N, double *sum);
/* After the same forward: map[t·T + s] += the attention weight query t
 * puts on key s in block l, summed over heads and the N sequences
 * (lm_backward.c); returns the terms added per entry (N·H). */
double lm_attn_map_sums(const cs_model *M, const cs_acts *A, int N, int l, double *map);
/* After the same forward of a gated model: sum[2l] += the gate values of
 * block l at the positions t ≥ 1, sum[2l + 1] += those at BOS, over the
 * gate's n_gate channels and the N sequences (lm_backward.c); returns the
 * terms added to sum[2l] (N·(T − 1)·n_gate). */
double lm_gate_sums(const cs_model *M, const cs_acts *A, int N, double *sum);
/* After the same forward, block l's residual stream h (after the block)
 * and values v (after a g2 gate) at the N·T positions, row p·T + t:
 * abs_h (N·T × d) |h|, norm_h (N·T) ‖h‖, norm_v (N·T) ‖v‖ (lm_backward.c). */
void lm_extreme_collect(const cs_model *M, const cs_acts *A, int N, int l, double *abs_h,
                        double *norm_h, double *norm_v);

#endif

/* layers.h — the layer toolbox of the model families (layers.c; internal
 * to src/model): each layer a forward on values or jets and a backward on
 * values, over flat row-major arrays (llm.c style). Above jet.c and
 * tensors.c, below every family file (model_internal.h).
 *
 * Notation as in model_internal.h: N points, C jet rows per point (js->C),
 * R = N·C rows; a weight W is out × in and a linear layer is Y = X Wᵀ + b. */
#ifndef CURVSWEEP_MODEL_LAYERS_H
#define CURVSWEEP_MODEL_LAYERS_H

#include "jet.h"
#include "model_internal.h"

#include <stdint.h>

/* LayerNorm's forward caches, each R rows: normalised input x̂ (× d),
 * 1/std (× 1), output a (× d). */
typedef struct {
  double *xhat, *rstd, *a;
} ln_cache;

/* The caches of R rows, allocated zeroed (CS_ERR_NOMEM on failure; the
 * caller's ln_cache_free releases what was made), and their release. */
int ln_cache_alloc(ln_cache *c, int64_t rows, int d);
/* The caches of c from row r on (width d): a view of its later rows. */
static inline ln_cache ln_cache_rows(const ln_cache *c, int64_t r, int d) {
  return (ln_cache){c->xhat + r * d, c->rstd + r, c->a + r * d};
}
void ln_cache_free(ln_cache *c);

/* dst[r, 0:w] = src[r, 0:w] for rows rows; lds, ldd the row strides. */
void copy_cols(int64_t rows, int w, const double *src, int lds, double *dst, int ldd);
/* y += x, n entries (residuals, gradient sums). */
void add_into(int64_t n, const double *x, double *y);

/* Y = X Wᵀ on all N·C rows (+ b on the value rows). X R × in, W out × in. */
int linear_forward(const cs_model *M, const jet_shape *js, int N, int in, int out,
                   const double *X, const double *W, const double *b, double *Y);
/* linear_forward with the weight given transposed: Wt in × out (what
 * la_gemm would copy W into, kept by the caller across products). */
int linear_forward_t(const cs_model *M, const jet_shape *js, int N, int in, int out,
                     const double *X, const double *Wt, const double *b, double *Y);
/* Backward of Y = X Wᵀ + b on values: dW += dYᵀ X; db += Σ dY (skipped
 * when db is NULL); dX = dY W (+ beta_dx · dX; skipped when dX is NULL). */
int linear_backward(const cs_model *M, int N, int in, int out, const double *X, const double *W,
                    const double *dY, double *dW, double *db, double *dX, double beta_dx);

/* h_0 = x W_eᵀ + b_e on jets of the input: x N × m, xjet R × m scratch
 * (the input's jet), h0 R × d. */
int embedding_forward(const cs_model *M, const jet_shape *js, int N, const double *x,
                      const double *W, const double *b, double *xjet, double *h0);

/* Row-wise LayerNorm of N jet points of width d, x R × d -> c->a
 * (c->xhat, c->rstd filled; tmp ≥ 2·R doubles). */
void layernorm_forward(const cs_model *M, const jet_shape *js, int N, const double *x,
                       const double *gamma, const double *beta, const ln_cache *c, double *tmp);
/* Its backward on values, N rows: dγ, dβ accumulated, dx overwritten. */
void layernorm_backward(const cs_model *M, int N, const ln_cache *c, const double *gamma,
                        const double *da, double *dgamma, double *dbeta, double *dx);

/* mlp block of width d on jets: t = tanh(a W_1ᵀ + b_1) (R × d), y = t W_2ᵀ + b_2. */
int mlp_forward(const cs_model *M, const jet_shape *js, int N, const double *a, const double *W1,
                const double *b1, const double *W2, const double *b2, double *t, double *y);
/* Its backward on values: dW_1, db_1, dW_2, db_2 accumulated (at the
 * offsets W1 .. b2 of M->grads), da overwritten; dt, dz N × d scratch. */
int mlp_backward(cs_model *M, int N, const double *a, const double *t, int64_t W1, int64_t b1,
                 int64_t W2, int64_t b2, const double *dy, double *dt, double *dz, double *da);

/* The gate of a gated arch on N jet points: G = σ(Z + b_g) (b_g on value
 * rows), out = G ⊙ pre (n_gate = d) or out_j = G_j pre_j (n_gate = H).
 * Z (ld ldz) n_gate columns; G R × n_gate; pre, out R × d. */
void gate_forward(const cs_model *M, const jet_shape *js, int N, const double *Z, int ldz,
                  const double *bg, double *G, const double *pre, double *out);
/* Its backward on values, rows × d:  dpre = dout ⊙ G;  dZ = dout ⊙ pre ⊙
 * G(1 − G), or per head ⟨dout_j, pre_j⟩ G_j(1 − G_j). dpre (ld ldp), dz (ld ldz). */
void gate_backward(const cs_model *M, int64_t rows, const double *dout, const double *pre,
                   const double *G, double *dpre, int ldp, double *dz, int ldz);

/* The attention output sublayer of the attention families, after the
 * scores and values (docs/MODELS.md, gate positions g1 and g5):
 *   U = O (g1: U = G ⊙ O);  Y = U W_oᵀ + b_o (g5: Y = G ⊙ (U W_oᵀ + b_o))
 * with G = σ(Z + b_g). Shapes, R rows: o, gated, pre R × d; z (ld ldz)
 * n_gate columns; g R × n_gate. Wo, bo, bg are offsets into M->params
 * (and M->grads). gated holds G ⊙ O (g1), pre U W_oᵀ + b_o (g5). */
typedef struct {
  const double *z;
  int ldz;
  double *g, *o, *gated, *pre;
  int64_t Wo, bo, bg;
  cs_gate_pos gate; /* g1 or g5 (other positions: no gate here) */
} attn_out;
/* Forward on N jet points: Y R × d (the caches in *a filled). */
int attn_out_forward(const cs_model *M, const jet_shape *js, int N, const attn_out *a,
                     double *Y);
/* Backward on values, N rows: dW_o, db_o accumulated; the gate's dZ
 * written to dz (ld a->ldz; g1, g5); *dO = the gradient of O (du, or
 * dgated under g1). dgated, du N × d scratch. */
int attn_out_backward(cs_model *M, int N, const attn_out *a, const double *dY, double *dgated,
                      double *du, double *dz, const double **dO);

/* The attention input sublayer of the token families (self, lm;
 * docs/MODELS.md), on R rows of the sublayer input A:
 *   [Q | K | V | Z] = A [W_q; W_k; W_v; W_g]ᵀ      one product, ldq = 3d + n_gate
 *   G = σ(Z + b_g);  g2: V ← G ⊙ V   g3: K ← G ⊙ K   g4: Q ← G ⊙ Q
 * and what the attention after it leaves for the output sublayer. Shapes:
 * qkvz R × ldq; g R × n_gate; pre, gated R × d (the gated tensor before and
 * after the gate); p R × H·T (attention weights); o R × d (P V). */
typedef struct {
  ln_cache ln; /* the LayerNorm in front (when the family has one) */
  double *qkvz, *g, *pre, *gated, *p, *o;
} qkv_cache;
/* Its arrays for rows rows and T tokens (ln: with the LayerNorm's); the
 * caller's qkv_cache_free releases what was made. */
int qkv_cache_alloc(const cs_model *M, qkv_cache *c, int64_t rows, int T, int ln);
void qkv_cache_free(qkv_cache *c);
/* Q, K and V in [Q | K | V | Z] (qkvz, ld ldq), the one a g2, g3 or g4
 * gate multiplies replaced by gated (ld d): as the attention reads them
 * (c->qkvz, c->gated), or where its backward writes their gradients
 * (g->dqkvz, g->dgated). */
typedef struct {
  double *q, *k, *v;
  int ldq, ldk, ldv;
} qkv_view;
qkv_view qkv_split(const cs_model *M, double *qkvz, double *gated);
/* The backward buffers of the attention blocks of a token family, rows
 * value rows each: dx_a, dx_b the gradients of the residual stream at a
 * block's output and input (swapped block by block), da of the sublayer
 * input, du and dgated the output sublayer's scratch (all × d), dqkvz the
 * gradient of [Q | K | V | Z] (× ldq). */
typedef struct {
  double *dx_a, *dx_b, *da, *du, *dgated, *dqkvz;
} qkv_grads;
int qkv_grads_alloc(const cs_model *M, qkv_grads *g, int64_t rows);
void qkv_grads_free(qkv_grads *g);
/* Forward on N jet points: A (R × d) -> c->qkvz, and c->pre, c->g,
 * c->gated under g2..g4. Wq (the (3d + n_gate) × d block [W_q; W_k; W_v;
 * W_g]) and bg are offsets into M->params. */
int qkv_forward(const cs_model *M, const jet_shape *js, int N, const double *a, int64_t Wq,
                int64_t bg, qkv_cache *c);
/* qkv_forward through wt, the block [W_q; W_k; W_v; W_g] transposed
 * (d × (3d + n_gate)), when not NULL. */
int qkv_forward_t(const cs_model *M, const jet_shape *js, int N, const double *a, int64_t Wq,
                  const double *wt, int64_t bg, qkv_cache *c);
/* Backward on values, N rows, with g->dqkvz holding dQ, dK, dV and dZ
 * (dZ from qkv_out_backward) and g->dgated the gradient of c->gated
 * (g2..g4): the gate's dpre, dZ added in, then dW += dQKVZᵀ A;
 * db_g += Σ dZ;  da = dQKVZ [W_q; W_k; W_v; W_g] (N × d, overwritten). */
int qkv_backward(cs_model *M, int N, const double *a, const qkv_cache *c, int64_t Wq, int64_t bg,
                 const qkv_grads *g, double *da);
/* The output sublayer (attn_out) over these caches, the gate at cfg.gate:
 * forward on N jet points into Y (R × d); backward on values, N rows:
 * dW_o, db_o accumulated, dZ into g->dqkvz, *dO the gradient of c->o. */
int qkv_out_forward(const cs_model *M, const jet_shape *js, int N, const qkv_cache *c, int64_t Wo,
                    int64_t bo, int64_t bg, double *Y);
int qkv_out_backward(cs_model *M, int N, const qkv_cache *c, int64_t Wo, int64_t bo, int64_t bg,
                     const double *dY, const qkv_grads *g, const double **dO);

/* The readout, every family's last tensors: readout/W (n_classes × d) and
 * readout/b; sets M->n_classes and M->n_logits (= n_classes: a family
 * with several readout rows per point raises it). */
void readout_layout(cs_model *M, int n_classes);
/* logits = h W_rᵀ + b_r on values, h N × d (nothing on jets). */
int readout_forward(const cs_model *M, const jet_shape *js, int N, const double *h,
                    double *logits);
/* Its backward: dW_r, db_r accumulated, dh = dlogits W_r (N × d). */
int readout_backward(cs_model *M, int N, const double *h, const double *dlogits, double *dh);

/* Mean softmax cross-entropy over N_CLASSES of A->logits against labels y,
 * correct count, dL/dlogits into A->dlogits (a family's loss op). */
double softmax_loss(cs_acts *A, int N, const int *y, int *n_correct);
/* Mean squared error (1/N) Σ (logit_p − y_p)² of one logit per point
 * against real targets y, dL/dlogits into A->dlogits (a loss_mse op). */
double mse_loss(cs_acts *A, int N, const double *y);

#endif

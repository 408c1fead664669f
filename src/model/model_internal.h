/* model_internal.h — what the files of src/model share (not a public header).
 *
 *   model.c      parameters, workspace, the memory family (embedding, mlp),
 *                LayerNorm and linear layers, loss, and the dispatch to the
 *                family of the config
 *   memory_attn.c the memory family's attention layer (slots, gate), forward
 *                on values or jets, backward
 *   self_attn.c  the self family: feature tokenizer with CLS, multi-head
 *                self-attention over tokens with the gate at g1..g5
 *                (docs/MODELS.md), forward on values or jets, backward
 *   jet.c        the chain rules of second-order jets (jet.h)
 *
 * Notation: N points, C jet rows per point (1 in training), R = N·C rows,
 * m input dim, d width, n slots, H heads, dh = d/H head dim. A weight W
 * maps in -> out and is out × in, so a linear layer is Y = X Wᵀ (+ b). */
#ifndef CURVSWEEP_MODEL_INTERNAL_H
#define CURVSWEEP_MODEL_INTERNAL_H

#include "curvsweep/model.h"
#include "jet.h"

#include <stdint.h>

typedef struct self_acts self_acts;

#define N_CLASSES 2
#define LN_EPS 1e-5
#define MAX_TENSORS 512

typedef enum { INIT_NORMAL, INIT_ZEROS, INIT_ONES } init_kind;

typedef struct {
  char name[48];
  int rows, cols;
  int64_t offset;
  int decays; /* weight matrices take weight decay; biases and LN gains do not */
} tensor_entry;

/* Offsets of one layer's tensors in the parameter array (-1 when absent). */
typedef struct {
  int64_t Wq, K, U, Wo, bo, Wg, bg, W1, b1, W2, b2, ln_g, ln_b;
  int64_t Wk, Wv; /* self family: [W_q; W_k; W_v; W_g] is one (3d + n_gate) × d block at Wq */
} layer_offsets;

struct cs_model {
  cs_config cfg;
  const la_team *team;
  int L, m, d, n, H, dh, n_gate; /* n_gate: gate width (d, H, or 0) */
  int64_t n_params;
  double *params, *grads;
  int n_tensors;
  tensor_entry tensors[MAX_TENSORS];
  int64_t embed_W, embed_b, readout_W, readout_b;
  int64_t tokens_W, tokens_b, cls; /* self family (self_attn.c) */
  layer_offsets *layers;
};

/* Per-layer forward caches, each R × (width given). */
typedef struct {
  double *xhat, *rstd, *a; /* LayerNorm: normalised input, 1/std (R × 1), output */
  double *sz;              /* R × ld: gate pre-activation z | scores s (n_gate + H·n
                              columns, ld = memory_attn_score_ld) */
  double *pw;              /* (n_gate + H·n) × d  [W_g; P], P the score map (memory_attn.c) */
  double *alpha;           /* R × Hn  attention weights */
  double *o;               /* R × d   Σ α U */
  double *g;               /* R × n_gate gate σ(z + b_g) */
  double *u;               /* R × d   gated value (g ⊙ o) or o */
  double *t;               /* R × d   mlp hidden tanh(W_1 a + b_1) */
} layer_cache;

struct cs_acts {
  int max_points, n, L;
  jet_shape js;
  double *xjet;        /* R × m  jet of the input */
  double **h;          /* L + 1 arrays, R × d */
  layer_cache *cache;  /* L */
  double *tmp;         /* R × max(2H, 2, d) scratch */
  double *logits, *dlogits; /* N × 2 */
  /* backward buffers (N × …) */
  double *dh_a, *dh_b, *da, *du, *dz, *dob, *dalpha;
  double *dsz, *dpw;   /* N × memory_attn_score_ld, (n_gate + H·n) × d */
  self_acts *self;     /* self family workspace (self_attn.c); NULL for the memory family */
};


#define VIEW(M, r, c, ld, p) la_view((M)->team, (r), (c), (ld), (p))

/* ---- model.c: shared building blocks ---- */
/* Append a tensor to the table; it lives at offset, or (offset < 0) at the
 * end of the parameter array. Returns its offset. */
int64_t model_place_tensor(cs_model *M, const char *name, int rows, int cols, int decays,
                           int64_t offset);
int64_t model_add_tensor(cs_model *M, const char *name, int rows, int cols, int decays);
/* The same for "layer<l>/<short_name>". */
int64_t model_place_layer_tensor(cs_model *M, int layer, const char *short_name, int rows,
                                 int cols, int decays, int64_t offset);
int64_t model_add_layer_tensor(cs_model *M, int layer, const char *short_name, int rows,
                               int cols, int decays);
/* Y = X Wᵀ on all N·C rows (+ b on the value rows). X R × in, W out × in. */
int model_linear_forward(const cs_model *M, const jet_shape *js, int N, int in, int out,
                         const double *X, const double *W, const double *b, double *Y);
/* Backward of Y = X Wᵀ + b on values: dW += dYᵀ X; db += Σ dY; dX = dY W
 * (+ beta_dx · dX; skipped when dX is NULL). */
int model_linear_backward(const cs_model *M, int N, int in, int out, const double *X,
                          const double *W, const double *dY, double *dW, double *db,
                          double *dX, double beta_dx);
/* dst[r, 0:w] = src[r, 0:w] for rows rows; lds, ldd the row strides. */
void model_copy_cols(int64_t rows, int w, const double *src, int lds, double *dst, int ldd);
/* Row-wise pre-LayerNorm of N jet points of width d (c->xhat, c->rstd,
 * c->a filled; tmp ≥ 2·N·C doubles). */
void model_layernorm_forward(const cs_model *M, const jet_shape *js, int N, const double *x,
                             const double *gamma, const double *beta, layer_cache *c,
                             double *tmp);
/* Its backward on values, N rows: dγ, dβ accumulated, dx overwritten. */
void model_layernorm_backward(const cs_model *M, int N, const layer_cache *c,
                              const double *gamma, const double *da, double *dgamma,
                              double *dbeta, double *dx);

/* ---- memory_attn.c: the memory family's attention layer ---- */
/* Row stride of [z | s]: n_gate + H·n rounded up to a multiple of 8
 * doubles, so that every row starts on a 64-byte line. */
static inline int memory_attn_score_ld(const cs_model *M) {
  return (M->n_gate + M->H * M->n + 7) / 8 * 8;
}
/* Forward on N jet points, a R × d -> y R × d (caches in c). */
int memory_attn_forward(const cs_model *M, const jet_shape *js, int N, int l, const double *a,
                        layer_cache *c, double *y);
/* Backward on values: dW_q, dW_g, dK, dU, dW_o and the biases accumulated
 * into M->grads, da = dL/da (N × d) overwritten. */
int memory_attn_backward(cs_model *M, cs_acts *A, int N, int l, const double *a,
                         const double *dy, double *da);

/* ---- self_attn.c: the self family ---- */
/* Tensors of the self family (tokens/W, tokens/b, cls, layer<l>/...);
 * model.c adds the readout after them. */
void self_attn_layout(cs_model *M);
int self_attn_acts_create(const cs_model *M, cs_acts *A, int jet_order);
void self_attn_acts_free(self_acts *S);
/* Forward on N points: token activations per layer, the CLS rows into
 * A->h[1..L] (N·C × d, the layout of the memory family), logits (values). */
int self_attn_forward(const cs_model *M, cs_acts *A, int N, const double *x);
/* Backward of the last value forward and loss; grads accumulated. */
int self_attn_backward(cs_model *M, cs_acts *A, int N, const double *x);
double self_attn_flops_per_point(const cs_config *cfg);

#endif

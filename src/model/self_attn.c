/* self_attn.c — the self family (docs/MODELS.md, "Self-attention family"):
 * FT-style feature tokens with a CLS token and multi-head self-attention
 * over the tokens, the gate at one of five positions.
 *
 *   tokens  X_0 = [c; x_1 w_1 + b_1; …; x_m w_m + b_m]         T × d, T = m + 1
 *   layer   A = X, or row-wise LayerNorm(X) (norm = pre)
 *           [Q | K | V | Z] = A [W_q; W_k; W_v; W_g]ᵀ           one product
 *           G = σ(Z + b_g)        width d (gated) or H (gated-headwise,
 *                                 one scalar per head and token)
 *           g2: V ← G ⊙ V    g3: K ← G ⊙ K    g4: Q ← G ⊙ Q
 *           P_j = softmax_rows(Q_j K_jᵀ / √dh),  O_j = P_j V_j   per head j
 *           g1: O ← G ⊙ O
 *           Y = O W_oᵀ + b_o;    g5: Y ← G ⊙ Y
 *           X' = Y, or X + Y (residual)
 *   output  h_l = CLS row (token 0) of X_l;  logits = W_r h_L + b_r
 *
 * Layout: a token activation of N points is (N·T·C) × width, token t of
 * point p in rows (p·T + t)·C .. (p·T + t)·C + C − 1 (its jet, jet.h).
 * Every (point, token) pair is one jet point, so the linear maps are one
 * GEMM over all N·T·C rows, batched over points and tokens, and the
 * elementwise rules (sigmoid, gate products, LayerNorm) run on N·T jet
 * points. The two products over tokens (Q Kᵀ and P V, T × T × dh per point
 * and head) are bilinear in two jets: jet row r of the product is
 * Σ_{(r1, r2) ∈ pairs(r)} A_{r1} B_{r2} with the Leibniz pairs
 *   value (0,0);  ∂_a (a,0) (0,a);  ∂_ab (ab,0) (a,b) (b,a) (0,ab).
 * The scores of query token t sit in its rows as H groups of T columns, so
 * the softmax over keys is jet_softmax_groups on N·T jet points. With C = 1
 * (values: the training pass) the products and their backward are
 * self_products.c's, blocks of points across vector lanes.
 *
 * The family's row of the family table is self_family_ops (at the end),
 * with the attention-sink sums of docs/MODELS.md as its sink_sums. */
#include "curvsweep/error.h"
#include "layers.h"
#include "model_internal.h"
#include "self_products.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Offsets of one layer's tensors in the parameter array (-1 when absent);
 * [W_q; W_k; W_v; W_g] is one (3d + ng) × d block at Wq. */
typedef struct {
  int64_t Wq, Wk, Wv, Wg, Wo, bo, bg, ln_g, ln_b;
} self_layer;

/* The family's layout (M->layout). */
typedef struct {
  int64_t tokens_W, tokens_b, cls;
  self_layer layer[]; /* L */
} self_layout;

/* The family's workspace (A->fam). */
typedef struct {
  int T, ng, ldq, L;       /* tokens, gate width, 3d + ng, layers */
  double **x;              /* L + 1 token activations, NTC × d */
  qkv_cache *cache;        /* L: per-layer caches (layers.h), rows NTC = N·T·C */
  double *tmp;             /* 2·NTC: LayerNorm scratch */
  /* backward (values, NT rows; dh N rows) */
  qkv_grads gr;
  double *dp, *dh;
} self_acts;

/* ------------------------------------------------------------ layout */

/* tokens/W, tokens/b, cls, then per layer Wq, Wk, Wv, (Wg), Wo, bo, (bg),
 * (ln_g, ln_b), then the readout. */
static int self_layout_create(cs_model *M) {
  int d = M->d, m = M->m, ng = M->n_gate;
  self_layout *Y;
  CS_CHECK(cs_calloc_bytes((void **)&Y, 1, sizeof *Y + sizeof(self_layer) * (size_t)M->L));
  M->layout = Y;
  Y->tokens_W = model_add_tensor(M, "tokens/W", m, d, 1);
  Y->tokens_b = model_add_tensor(M, "tokens/b", m, d, 0);
  model_set_init(M, INIT_NORMAL, 1.0 / sqrt((double)d)); /* feature-token biases: N(0, 1/d) */
  Y->cls = model_add_tensor(M, "cls", 1, d, 0);
  for (int l = 0; l < M->L; l++) {
    self_layer *P = &Y->layer[l];
    memset(P, 0xff, sizeof *P); /* all -1 */
    /* W_q, W_k, W_v, W_g appended one after the other are one (3d + ng) × d
     * block, so Q, K, V and the gate pre-activation are one product (the
     * table, the names and the init streams are as if they were apart) */
    P->Wq = model_add_layer_tensor(M, l, "Wq", d, d, 1);
    P->Wk = model_add_layer_tensor(M, l, "Wk", d, d, 1);
    P->Wv = model_add_layer_tensor(M, l, "Wv", d, d, 1);
    if (ng) P->Wg = model_add_layer_tensor(M, l, "Wg", ng, d, 1);
    P->Wo = model_add_layer_tensor(M, l, "Wo", d, d, 1);
    P->bo = model_add_layer_tensor(M, l, "bo", 1, d, 0);
    if (ng) P->bg = model_add_layer_tensor(M, l, "bg", 1, ng, 0);
    if (M->cfg.norm == NORM_PRE) {
      P->ln_g = model_add_layer_tensor(M, l, "ln_g", 1, d, 0);
      P->ln_b = model_add_layer_tensor(M, l, "ln_b", 1, d, 0);
    }
  }
  readout_layout(M, N_CLASSES);
  return CS_OK;
}

static double self_flops_per_point(const cs_config *c) {
  double d = c->width, m = c->input_dim, T = m + 1;
  double ng = config_arch_gate_width(c->arch, c->width, c->heads);
  /* per token: [Q|K|V|Z] and W_o; per point: Q Kᵀ and P V over T × T × d */
  double layer = T * (2 * d * (3 * d + ng) + 2 * d * d) + 4 * T * T * d;
  return 2 * m * d + c->depth * layer + 2 * 2 * d;
}

/* --------------------------------------------------------- workspace */

static int self_acts_create(const cs_model *M, cs_acts *A, int jet_order) {
  const jet_shape *js = &A->js;
  self_acts *S;
  CS_CHECK(CS_CALLOC(S, 1));
  A->fam = S;
  S->T = M->m + 1;
  S->ng = M->n_gate;
  S->ldq = 3 * M->d + S->ng;
  S->L = M->L;
  int64_t NT = (int64_t)A->max_points * S->T, R = NT * js->C, d = M->d, HT = (int64_t)M->H * S->T;
  int rc = CS_OK;
#define ALLOC(p, count) \
  if (!rc) rc = CS_CALLOC(p, count)
  ALLOC(S->x, M->L + 1);
  ALLOC(S->cache, M->L);
  for (int l = 0; !rc && l <= M->L; l++) ALLOC(S->x[l], R * d);
  for (int l = 0; !rc && l < M->L; l++)
    rc = qkv_cache_alloc(M, &S->cache[l], R, S->T, M->cfg.norm == NORM_PRE);
  ALLOC(S->tmp, 2 * R);
  if (jet_order == 0) {
    if (!rc) rc = qkv_grads_alloc(M, &S->gr, NT);
    ALLOC(S->dp, NT * HT);
    ALLOC(S->dh, (int64_t)A->max_points * d);
  }
#undef ALLOC
  return rc;
}

static void self_acts_free(void *fam) {
  self_acts *S = fam;
  if (!S) return;
  if (S->x)
    for (int l = 0; l <= S->L; l++) free(S->x[l]);
  if (S->cache)
    for (int l = 0; l < S->L; l++) qkv_cache_free(&S->cache[l]);
  free(S->x), free(S->cache), free(S->tmp);
  qkv_grads_free(&S->gr);
  free(S->dp), free(S->dh);
  free(S);
}

/* ------------------------------------------------------------ forward */

/* Feature tokenizer on jets, x N × m -> X_0 (N·T·C) × d:
 *   token 0:     c (a constant: derivative rows 0)
 *   token 1 + j: x_j w_j + b_j, whose ∂/∂x_a is δ_aj w_j and second rows 0. */
static void tokens_forward(const cs_model *M, const jet_shape *js, int T, int N, const double *x,
                           double *X0) {
  const self_layout *Y = M->layout;
  int C = js->C, d = M->d, m = M->m;
  const double *W = M->params + Y->tokens_W, *b = M->params + Y->tokens_b;
  memset(X0, 0, sizeof(double) * (size_t)N * T * C * d);
  for (int p = 0; p < N; p++) {
    double *xp = X0 + (int64_t)p * T * C * d;
    memcpy(xp, M->params + Y->cls, sizeof(double) * d);
    for (int j = 0; j < m; j++) {
      double *tok = xp + (int64_t)(1 + j) * C * d, xj = x[(int64_t)p * m + j];
      for (int k = 0; k < d; k++) tok[k] = xj * W[j * d + k] + b[j * d + k];
      if (C > 1) memcpy(tok + (int64_t)(1 + j) * d, W + (int64_t)j * d, sizeof(double) * d);
    }
  }
}

/* Scores on jets, per point p, head j, query t, key s, jet row r:
 *   S[(p,t,r), j·T + s] = scale Σ_{(r1,r2) ∈ pairs(r)} ⟨Q[(p,t,r1), head j], K[(p,s,r2), head j]⟩
 * Q (ld ldq), K (ld ldk) hold d columns; out NTC × H·T. */
static void scores_forward(const jet_shape *js, int T, int N, int H, int dh, double scale,
                           const double *Q, int ldq, const double *K, int ldk, double *out) {
  int C = js->C, HT = H * T;
  if (C == 1) {
    self_scores_values(N, T, H, dh, scale, Q, ldq, K, ldk, out);
    return;
  }
  for (int p = 0; p < N; p++)
    for (int t = 0; t < T; t++)
      for (int r = 0; r < C; r++) {
        double *orow = out + ((int64_t)(p * T + t) * C + r) * HT;
        for (int j = 0; j < H; j++)
          for (int s = 0; s < T; s++) {
            double acc = 0.0;
            const jet_pairs *pr = &js->pairs[r];
            for (int e = 0; e < pr->n; e++) {
              const double *q = Q + ((int64_t)(p * T + t) * C + pr->r1[e]) * ldq + j * dh;
              const double *k = K + ((int64_t)(p * T + s) * C + pr->r2[e]) * ldk + j * dh;
              for (int i = 0; i < dh; i++) acc += q[i] * k[i];
            }
            orow[j * T + s] = scale * acc;
          }
      }
}

/* O = P V on jets, per point p, head j, query t, jet row r:
 *   O[(p,t,r), j·dh + i] = Σ_{(r1,r2) ∈ pairs(r)} Σ_s P[(p,t,r1), j·T + s] V[(p,s,r2), j·dh + i]
 * P NTC × H·T, V (ld ldv), out NTC × d. */
static void values_forward(const jet_shape *js, int T, int N, int H, int dh, const double *P,
                           const double *V, int ldv, double *out) {
  int C = js->C, HT = H * T, d = H * dh;
  if (C == 1) {
    self_values_values(N, T, H, dh, P, V, ldv, out);
    return;
  }
  for (int p = 0; p < N; p++)
    for (int t = 0; t < T; t++)
      for (int r = 0; r < C; r++) {
        double *orow = out + ((int64_t)(p * T + t) * C + r) * d;
        memset(orow, 0, sizeof(double) * d);
        const jet_pairs *pr = &js->pairs[r];
        for (int e = 0; e < pr->n; e++) {
          const double *prow = P + ((int64_t)(p * T + t) * C + pr->r1[e]) * HT;
          for (int s = 0; s < T; s++) {
            const double *v = V + ((int64_t)(p * T + s) * C + pr->r2[e]) * ldv;
            for (int j = 0; j < H; j++) {
              double w = prow[j * T + s];
              for (int i = 0; i < dh; i++) orow[j * dh + i] += w * v[j * dh + i];
            }
          }
        }
      }
}

/* One layer on jets: X (NTC × d) -> Xn. */
static int layer_forward(const cs_model *M, const jet_shape *js, self_acts *S, int N, int l,
                         const double *X, double *Xn) {
  const self_layer *P = &((const self_layout *)M->layout)->layer[l];
  const double *W = M->params;
  qkv_cache *c = &S->cache[l];
  int d = M->d, H = M->H, dh = M->dh, T = S->T, NT = N * T;
  int64_t R = (int64_t)NT * js->C;
  const double *a = X;
  if (M->cfg.norm == NORM_PRE) {
    LA_PROF_BEGIN(t4);
    layernorm_forward(M, js, NT, X, W + P->ln_g, W + P->ln_b, &c->ln, S->tmp);
    LA_PROF_END(t4, LA_PROF_ELEMENTWISE);
    a = c->ln.a;
  }
  /* [Q | K | V | Z] = A [W_q; W_k; W_v; W_g]ᵀ, gated at g2..g4 (layers.h) */
  CS_CHECK(qkv_forward(M, js, NT, a, P->Wq, P->bg, c));
  qkv_view v = qkv_split(M, c->qkvz, c->gated);
  /* P_j = softmax_rows(Q_j K_jᵀ/√dh);  O_j = P_j V_j */
  LA_PROF_BEGIN(t2);
  scores_forward(js, T, N, H, dh, 1.0 / sqrt((double)dh), v.q, v.ldq, v.k, v.ldk, c->p);
  LA_PROF_END(t2, LA_PROF_TOKENS);
  LA_PROF_BEGIN(t0);
  jet_softmax_groups(js, NT, H, T, c->p);
  LA_PROF_END(t0, LA_PROF_SOFTMAX);
  LA_PROF_BEGIN(t3);
  values_forward(js, T, N, H, dh, c->p, v.v, v.ldv, c->o);
  LA_PROF_END(t3, LA_PROF_TOKENS);
  /* Y = O W_oᵀ + b_o, gated at g1 or g5 (layers.h) */
  CS_CHECK(qkv_out_forward(M, js, NT, c, P->Wo, P->bo, P->bg, Xn));
  /* residual X' = X + Y: linear, all jet rows */
  LA_PROF_BEGIN(t1);
  if (M->cfg.residual) add_into(R * d, X, Xn);
  LA_PROF_END(t1, LA_PROF_ELEMENTWISE);
  return CS_OK;
}

/* The CLS rows (token 0) of X: N·C × d in the memory family's layout. */
static void gather_cls(int N, int T, int C, int d, const double *X, double *h) {
  for (int p = 0; p < N; p++)
    memcpy(h + (int64_t)p * C * d, X + (int64_t)p * T * C * d, sizeof(double) * C * d);
}

static int self_forward(const cs_model *M, cs_acts *A, int N, const double *x) {
  self_acts *S = A->fam;
  const jet_shape *js = &A->js;
  int d = M->d, T = S->T, C = js->C;
  tokens_forward(M, js, T, N, x, S->x[0]);
  gather_cls(N, T, C, d, S->x[0], A->h[0]);
  for (int l = 0; l < M->L; l++) {
    CS_CHECK(layer_forward(M, js, S, N, l, S->x[l], S->x[l + 1]));
    gather_cls(N, T, C, d, S->x[l + 1], A->h[l + 1]);
  }
  return readout_forward(M, js, N, A->h[M->L], A->logits);
}

/* ----------------------------------------------------------- backward */

/* One layer backward on values: dXn (NT × d, gradient of X_{l+1}) -> dX. */
static int layer_backward(cs_model *M, self_acts *S, int N, int l, const double *X,
                          const double *dXn, double *dX) {
  const self_layer *P = &((const self_layout *)M->layout)->layer[l];
  const qkv_cache *c = &S->cache[l];
  double *W = M->params, *Gr = M->grads;
  int d = M->d, NT = N * S->T;
  const double *a = M->cfg.norm == NORM_PRE ? c->ln.a : X;
  /* Y = O W_oᵀ + b_o, gated at g1 or g5 (layers.h): dO, and dZ beside dQKV */
  const double *dO;
  CS_CHECK(qkv_out_backward(M, NT, c, P->Wo, P->bo, P->bg, dXn, &S->gr, &dO));
  /* attention; the gradient of a gated Q, K or V goes to dgated first */
  qkv_view v = qkv_split(M, c->qkvz, c->gated);
  qkv_view g = qkv_split(M, S->gr.dqkvz, S->gr.dgated);
  LA_PROF_BEGIN(t0);
  self_attention_backward(N, S->T, M->H, M->dh, c->p, dO, v.q, v.ldq, v.k, v.ldk, v.v, v.ldv,
                          S->dp, g.q, g.ldq, g.k, g.ldk, g.v, g.ldv);
  LA_PROF_END(t0, LA_PROF_TOKENS);
  /* [Q|K|V|Z] = A [W_q; W_k; W_v; W_g]ᵀ, gated at g2..g4 (layers.h): dA */
  double *dA = M->cfg.norm == NORM_PRE ? S->gr.da : dX;
  CS_CHECK(qkv_backward(M, NT, a, c, P->Wq, P->bg, &S->gr, dA));
  LA_PROF_BEGIN(t2);
  if (M->cfg.norm == NORM_PRE)
    layernorm_backward(M, NT, &c->ln, W + P->ln_g, S->gr.da, Gr + P->ln_g, Gr + P->ln_b, dX);
  if (M->cfg.residual) add_into((int64_t)NT * d, dXn, dX);
  LA_PROF_END(t2, LA_PROF_ELEMENTWISE);
  return CS_OK;
}

static int self_backward(cs_model *M, cs_acts *A, int N, const double *x) {
  const self_layout *Y = M->layout;
  self_acts *S = A->fam;
  int d = M->d, T = S->T, m = M->m;
  double *G = M->grads;
  /* readout on the last CLS row: dW_r += dlogitsᵀ h_L;  dh_L = dlogits W_r */
  CS_CHECK(readout_backward(M, N, A->h[M->L], A->dlogits, S->dh));
  /* only the CLS row of X_L reaches the loss */
  double *dXn = S->gr.dx_a, *dX = S->gr.dx_b;
  memset(dXn, 0, sizeof(double) * (size_t)N * T * d);
  for (int p = 0; p < N; p++)
    memcpy(dXn + (int64_t)p * T * d, S->dh + (int64_t)p * d, sizeof(double) * d);
  for (int l = M->L - 1; l >= 0; l--) {
    CS_CHECK(layer_backward(M, S, N, l, S->x[l], dXn, dX));
    double *t = dXn;
    dXn = dX;
    dX = t;
  }
  /* tokens: dc += Σ_p dX_0[p, 0];  dw_j += Σ_p x_pj dX_0[p, 1+j];  db_j += Σ_p dX_0[p, 1+j] */
  double *dW = G + Y->tokens_W, *db = G + Y->tokens_b, *dc = G + Y->cls;
  for (int p = 0; p < N; p++) {
    const double *dp = dXn + (int64_t)p * T * d;
    for (int k = 0; k < d; k++) dc[k] += dp[k];
    for (int j = 0; j < m; j++) {
      const double *dt = dp + (int64_t)(1 + j) * d;
      double xj = x[(int64_t)p * m + j];
      for (int k = 0; k < d; k++) {
        dW[j * d + k] += xj * dt[k];
        db[j * d + k] += dt[k];
      }
    }
  }
  return CS_OK;
}

/* ------------------------------------------------------ attention sink */

/* The attention-sink sums (model_family_ops; docs/MODELS.md) after a value
 * forward of N points, the heads pooled (one group) beside each head's
 * first-token sum: per layer, point, head and non-CLS query t = 1..T−1,
 * its weight on token 0 and its largest weight, added into sum in that
 * order; returns the terms per pooled entry. */
static double self_sink_sums(const cs_model *M, const cs_acts *A, int N, double *sum) {
  const self_acts *S = A->fam;
  int L = M->L, H = M->H, T = S->T, HT = H * T;
  for (int l = 0; l < L; l++) {
    const double *P = S->cache[l].p;
    double *sum_sink = sum + ((int64_t)MODEL_STAT_SINK_MASS * L + l) * H;
    double *sum_max = sum + ((int64_t)MODEL_STAT_MAX_ATTN * L + l) * H;
    double *head_sink = sum + ((int64_t)MODEL_STAT_HEAD_SINK * L + l) * H;
    for (int p = 0; p < N; p++)
      for (int t = 1; t < T; t++)
        for (int j = 0; j < H; j++) {
          const double *w = P + ((int64_t)p * T + t) * HT + j * T;
          double mx = w[0];
          for (int s = 1; s < T; s++) mx = fmax(mx, w[s]);
          sum_sink[0] += w[0];
          sum_max[0] += mx;
          head_sink[j] += w[0];
        }
  }
  return (double)N * (T - 1) * H;
}

/* Layer l's attention weights and gate after a value forward
 * (model_block_view): every token a query over the T tokens. */
static void self_block_view(const cs_model *M, const cs_acts *A, int N, int l,
                            model_block_view *v) {
  const self_acts *S = A->fam;
  const qkv_cache *c = &S->cache[l];
  *v = (model_block_view){c->p, M->n_gate ? c->g : NULL, (int64_t)N * S->T, S->T, S->T, 0};
}

/* The memory-estimate terms (docs/SPEC.md, "Sizes"; model_family_ops): per
 * layer [W_q; W_k; W_v; W_g], W_o, b_o, b_g and LayerNorm's gains, two
 * embedding matrices of the m feature tokens; per activation row (T = m + 1
 * tokens) every token's layer outputs, qkvz, p, o, gate, pre and gated. */
static void self_memory(const cs_config *c, uint64_t ng, model_memory_terms *t, int *over) {
  uint64_t m = (uint64_t)c->input_dim, d = (uint64_t)c->width, H = (uint64_t)c->heads;
  uint64_t L = (uint64_t)c->depth, T = m + 1, dd = SIZE_MUL(d, d);
  uint64_t layer = c->norm == NORM_PRE ? SIZE_MUL(2, d) : 0;
  layer = SIZE_ADD(layer, SIZE_ADD(SIZE_ADD(SIZE_MUL(4, dd), SIZE_MUL(ng, d)), SIZE_ADD(d, ng)));
  uint64_t embed = SIZE_ADD(SIZE_MUL(2 * m, d), d);
  t->params = SIZE_ADD(SIZE_ADD(embed, SIZE_MUL(L, layer)), SIZE_ADD(SIZE_MUL(2, d), 2));
  uint64_t row = c->norm == NORM_PRE ? SIZE_ADD(SIZE_MUL(2, d), 1) : 0;
  row = SIZE_ADD(row, SIZE_ADD(SIZE_ADD(SIZE_MUL(6, d), SIZE_MUL(2, ng)), SIZE_MUL(H, T)));
  t->row = SIZE_ADD(sizes_point_base(c, over),
                    SIZE_MUL(T, SIZE_ADD(SIZE_ADD(SIZE_MUL(L + 1, d), SIZE_MUL(L, row)), 2)));
  sizes_points(c, t->row, t, over);
}

const model_family_ops self_family_ops = {
    .layout = self_layout_create,
    .acts_create = self_acts_create,
    .acts_free = self_acts_free,
    .forward = self_forward,
    .loss = softmax_loss,
    .backward = self_backward,
    .flops_per_point = self_flops_per_point,
    .sink_sums = self_sink_sums,
    .sink_per_head = 0,
    .memory = self_memory,
    .block_view = self_block_view,
};

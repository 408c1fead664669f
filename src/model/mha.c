/* mha.c — the mha family (docs/MODELS.md, "Estimation"): one multi-head
 * attention layer over a token set given as data, read at one output
 * coordinate of the query token's row: the teacher and the student of the
 * teacher task.
 *
 *   input   X ∈ R^{T×m}: T = cfg.tokens tokens of m = input_dim features,
 *           token 0 the query (a point is the flat T·m vector)
 *   [Q | K | V | Z] = X [W_q; W_k; W_v; W_g]ᵀ     one product (linear_forward)
 *   G = σ(Z + b_g)   per token, ng columns: one per head at g1..g4 (the
 *                    elementwise gate is one per channel, refused unless
 *                    dh = 1, where channel = head), one at g5
 *   g2: V_t ← G_t ⊙ V_t   g3: K_t ← G_t ⊙ K_t   g4: q ← G_0 ⊙ q   (per head)
 *   per head h: α_h = softmax_t(q_h · K_{t,h} / √dh),  o_h = Σ_t α_{h,t} V_{t,h}
 *   g1: o_h ← G_{0,h} o_h
 *   y = W_o · o + b_o     (W_o 1 × d: the read coordinate's row)
 *   g5: y ← G_{0,0} y
 *   logits = y (one per point; model_loss_mse)
 *
 * Only the query token's row is computed: it is all the output reads. No
 * jets: the family has no input-coordinate surface, so its curvature is
 * not measured (forward on jets is refused). */
#include "curvsweep/error.h"
#include "layers.h"
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Offsets of the layer's tensors; [W_q; W_k; W_v; W_g] is one (3d + ng) × m
 * block at Wq. */
typedef struct {
  int64_t Wq, Wo, bo, bg;
} mha_layout;

/* The family's workspace (A->fam): forward caches of N points and the
 * backward buffers. */
typedef struct {
  int T, ldq;     /* tokens, 3d + ng */
  double *qkvz;   /* N·T × ldq: the product */
  double *g;      /* N·T × ng: gate values σ(Z + b_g) (token 0's alone at g1, g4, g5) */
  double *kv;     /* N·T × 2d: K and V as the attention reads them (after g3, g2) */
  double *q;      /* N × d: the query as the attention reads it (after g4) */
  double *p;      /* N × H·T: attention weights */
  double *o;      /* N × d: o before g1 */
  double *og;     /* N × d: o after g1 */
  double *y;      /* N: the output before g5 */
  double *dqkvz;  /* N·T × ldq: backward */
} mha_acts;

static const mha_layout *mha_offsets(const cs_model *M) { return M->layout; }

/* The gate's column for channel i (or for the output at g5). */
static inline int mha_gate_col(const cs_model *M, int i) {
  return M->cfg.gate == GATE_G5 ? 0 : i / M->dh;
}

static inline double sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }

/* ------------------------------------------------------------ layout */

static int mha_layout_create(cs_model *M) {
  int d = M->d, m = M->m;
  if (M->L != 1)
    return cs_error(CS_ERR_INPUT, "model: the mha family has one layer (depth %d)", M->L);
  if (M->n_gate && config_arch_info(M->cfg.arch)->gate == ARCH_GATE_ELEMENTWISE && M->dh != 1 &&
      M->cfg.gate != GATE_G5)
    return cs_error(CS_ERR_INPUT, "model: the mha family's elementwise gate at %s needs head "
                    "dimension 1 (width = heads; width %d, heads %d: docs/MODELS.md)",
                    config_gate_name(M->cfg.gate), d, M->H);
  /* one gate per head at g1..g4, one for the read coordinate at g5 */
  if (M->n_gate) M->n_gate = M->cfg.gate == GATE_G5 ? 1 : M->H;
  int ng = M->n_gate;
  mha_layout *Y;
  CS_CHECK(CS_CALLOC(Y, 1));
  M->layout = Y;
  Y->Wq = model_add_layer_tensor(M, 0, "Wq", d, m, 1);
  model_add_layer_tensor(M, 0, "Wk", d, m, 1);
  model_add_layer_tensor(M, 0, "Wv", d, m, 1);
  if (ng) model_add_layer_tensor(M, 0, "Wg", ng, m, 1);
  Y->Wo = model_add_layer_tensor(M, 0, "Wo", 1, d, 1);
  Y->bo = model_add_layer_tensor(M, 0, "bo", 1, 1, 0);
  Y->bg = ng ? model_add_layer_tensor(M, 0, "bg", 1, ng, 0) : -1;
  M->readout_W = M->readout_b = -1;
  M->n_classes = 0;
  M->n_logits = 1;
  return CS_OK;
}

static double mha_flops_per_point(const cs_config *c) {
  double T = c->tokens, m = c->input_dim, d = c->width;
  double ng = config_arch_gated(c->arch) ? (c->gate == GATE_G5 ? 1 : c->heads) : 0;
  return 2 * T * m * (3 * d + ng) + 4 * T * d + 2 * d;
}

static void mha_memory(const cs_config *c, uint64_t ng, model_memory_terms *t, int *over) {
  uint64_t m = (uint64_t)c->input_dim, d = (uint64_t)c->width, T = (uint64_t)c->tokens;
  uint64_t H = (uint64_t)c->heads, ldq = SIZE_ADD(SIZE_MUL(3, d), ng);
  t->params = SIZE_ADD(SIZE_MUL(ldq, m), SIZE_ADD(SIZE_ADD(d, 1), ng));
  /* per point: the product and its gradient, gates, K and V, the weights, q, o, og */
  uint64_t per_token = SIZE_ADD(SIZE_ADD(SIZE_MUL(2, ldq), ng), SIZE_ADD(SIZE_MUL(2, d), H));
  t->row = SIZE_ADD(SIZE_MUL(T, per_token), SIZE_ADD(SIZE_MUL(4, d), SIZE_MUL(2, m)));
  t->jets = 0;
  uint64_t sets = SIZE_ADD((uint64_t)c->train_points, (uint64_t)c->test_points);
  t->data = SIZE_MUL(8, SIZE_MUL(sets, SIZE_ADD(SIZE_MUL(T, m), 2)));
  (void)over;
}

/* --------------------------------------------------------- workspace */

static void mha_acts_free(void *fam) {
  mha_acts *S = fam;
  if (!S) return;
  free(S->qkvz), free(S->g), free(S->kv), free(S->q), free(S->p);
  free(S->o), free(S->og), free(S->y), free(S->dqkvz);
  free(S);
}

static int mha_acts_create(const cs_model *M, cs_acts *A, int jet_order) {
  if (jet_order != 0)
    return cs_error(CS_ERR_INPUT, "model: the mha family has no curvature (no jets; "
                    "docs/MODELS.md, \"Estimation\")");
  mha_acts *S;
  CS_CHECK(CS_CALLOC(S, 1));
  A->fam = S;
  S->T = M->cfg.tokens;
  S->ldq = 3 * M->d + M->n_gate;
  int64_t N = A->max_points, NT = N * S->T, d = M->d;
  int rc = CS_OK;
#define ALLOC(p, count) \
  if (!rc) rc = CS_CALLOC(p, count)
  ALLOC(S->qkvz, NT * S->ldq);
  ALLOC(S->g, NT * (M->n_gate ? M->n_gate : 1));
  ALLOC(S->kv, NT * 2 * d);
  ALLOC(S->q, N * d);
  ALLOC(S->p, N * M->H * S->T);
  ALLOC(S->o, N * d);
  ALLOC(S->og, N * d);
  ALLOC(S->y, N);
  ALLOC(S->dqkvz, NT * S->ldq);
#undef ALLOC
  return rc;
}

/* ------------------------------------------------------------ forward */

/* x: N × T·m, i.e. N·T token rows of m. */
static int mha_forward(const cs_model *M, cs_acts *A, int N, const double *x) {
  if (A->js.C != 1) return cs_error(CS_ERR_INTERNAL, "mha_forward: values only");
  mha_acts *S = A->fam;
  const mha_layout *Y = mha_offsets(M);
  int T = S->T, d = M->d, H = M->H, dh = M->dh, ng = M->n_gate, ldq = S->ldq;
  cs_gate_pos gp = M->cfg.gate;
  const double *P = M->params;
  int64_t NT = (int64_t)N * T;
  CS_CHECK(linear_forward(M, &A->js, (int)NT, M->m, ldq, x, P + Y->Wq, NULL, S->qkvz));
  /* gates (of every token at g2, g3; of the query token alone at g1, g4,
   * g5, the only one read) and the K, V the attention reads */
  int every_token = gp == GATE_G2 || gp == GATE_G3;
  for (int64_t r = 0; r < NT; r++) {
    const double *row = S->qkvz + r * ldq;
    double *g = S->g + r * ng, *k = S->kv + r * 2 * d, *v = k + d;
    if (every_token || r % T == 0)
      for (int j = 0; j < ng; j++) g[j] = sigmoid(row[3 * d + j] + P[Y->bg + j]);
    for (int i = 0; i < d; i++) {
      k[i] = row[d + i] * (ng && gp == GATE_G3 ? g[i / dh] : 1.0);
      v[i] = row[2 * d + i] * (ng && gp == GATE_G2 ? g[i / dh] : 1.0);
    }
  }
  double scale = 1.0 / sqrt((double)dh);
  const double *Wo = P + Y->Wo;
  for (int p = 0; p < N; p++) {
    const double *row0 = S->qkvz + (int64_t)p * T * ldq, *g0 = S->g + (int64_t)p * T * ng;
    const double *kv = S->kv + (int64_t)p * T * 2 * d;
    double *q = S->q + (int64_t)p * d, *o = S->o + (int64_t)p * d, *og = S->og + (int64_t)p * d;
    for (int i = 0; i < d; i++) q[i] = row0[i] * (ng && gp == GATE_G4 ? g0[i / dh] : 1.0);
    for (int h = 0; h < H; h++) {
      double *al = S->p + ((int64_t)p * H + h) * T, mx = -INFINITY, sum = 0.0;
      for (int t = 0; t < T; t++) {
        double s = 0.0;
        for (int i = h * dh; i < (h + 1) * dh; i++) s += q[i] * kv[(int64_t)t * 2 * d + i];
        al[t] = s * scale;
        mx = fmax(mx, al[t]);
      }
      for (int t = 0; t < T; t++) sum += (al[t] = exp(al[t] - mx));
      for (int t = 0; t < T; t++) al[t] /= sum;
      for (int i = h * dh; i < (h + 1) * dh; i++) {
        double acc = 0.0;
        for (int t = 0; t < T; t++) acc += al[t] * kv[(int64_t)t * 2 * d + d + i];
        o[i] = acc;
        og[i] = acc * (ng && gp == GATE_G1 ? g0[h] : 1.0);
      }
    }
    double y = P[Y->bo];
    for (int i = 0; i < d; i++) y += Wo[i] * og[i];
    S->y[p] = y;
    A->logits[p] = y * (ng && gp == GATE_G5 ? g0[0] : 1.0);
  }
  return CS_OK;
}

/* ----------------------------------------------------------- backward */

/* dL/dlogits in A->dlogits (mse_loss) -> dθ accumulated into M->grads. */
static int mha_backward(cs_model *M, cs_acts *A, int N, const double *x) {
  mha_acts *S = A->fam;
  const mha_layout *Y = mha_offsets(M);
  int T = S->T, d = M->d, H = M->H, dh = M->dh, ng = M->n_gate, ldq = S->ldq;
  cs_gate_pos gp = M->cfg.gate;
  const double *P = M->params, *Wo = P + Y->Wo;
  double *G = M->grads, scale = 1.0 / sqrt((double)dh);
  int64_t NT = (int64_t)N * T;
  memset(S->dqkvz, 0, sizeof(double) * (size_t)(NT * ldq));
  double *dog = NULL, *dq = NULL, *da = NULL;
  int rc = CS_CALLOC(dog, d);
  if (!rc) rc = CS_CALLOC(dq, d);
  if (!rc) rc = CS_CALLOC(da, T);
  for (int p = 0; p < N && !rc; p++) {
    const double *row0 = S->qkvz + (int64_t)p * T * ldq, *g0 = S->g + (int64_t)p * T * ng;
    const double *kv = S->kv + (int64_t)p * T * 2 * d, *q = S->q + (int64_t)p * d;
    const double *o = S->o + (int64_t)p * d, *og = S->og + (int64_t)p * d;
    double *drow = S->dqkvz + (int64_t)p * T * ldq;
    double dy = A->dlogits[p];
    if (ng && gp == GATE_G5) { /* logit = σ(z) y */
      drow[3 * d] += dy * S->y[p] * g0[0] * (1.0 - g0[0]);
      dy *= g0[0];
    }
    G[Y->bo] += dy;
    for (int i = 0; i < d; i++) G[Y->Wo + i] += dy * og[i], dog[i] = dy * Wo[i];
    memset(dq, 0, sizeof(double) * (size_t)d);
    for (int h = 0; h < H; h++) {
      const double *al = S->p + ((int64_t)p * H + h) * T;
      double gh = ng && gp == GATE_G1 ? g0[h] : 1.0;
      if (ng && gp == GATE_G1) { /* og = σ(z) o */
        double s = 0.0;
        for (int i = h * dh; i < (h + 1) * dh; i++) s += dog[i] * o[i];
        drow[3 * d + h] += s * gh * (1.0 - gh);
      }
      /* do = dog·gh; dα_t = Σ_i do_i v_ti; dv_ti += α_t do_i */
      double dot = 0.0;
      for (int t = 0; t < T; t++) {
        double s = 0.0;
        for (int i = h * dh; i < (h + 1) * dh; i++) {
          double doi = dog[i] * gh;
          s += doi * kv[(int64_t)t * 2 * d + d + i];
          drow[(int64_t)t * ldq + 2 * d + i] += al[t] * doi; /* dV (as read) */
        }
        da[t] = s;
        dot += al[t] * s;
      }
      for (int t = 0; t < T; t++) { /* ds_t = α_t (dα_t − Σ α dα) */
        double ds = al[t] * (da[t] - dot) * scale;
        for (int i = h * dh; i < (h + 1) * dh; i++) {
          dq[i] += ds * kv[(int64_t)t * 2 * d + i];
          drow[(int64_t)t * ldq + d + i] += ds * q[i]; /* dK (as read) */
        }
      }
    }
    for (int i = 0; i < d; i++) drow[i] = dq[i]; /* dQ (as read) of token 0 */
    /* the gates of the read Q, K, V back to the product's columns */
    for (int t = 0; t < T && ng && (gp == GATE_G2 || gp == GATE_G3 || gp == GATE_G4); t++) {
      if (gp == GATE_G4 && t > 0) break;
      int col = gp == GATE_G4 ? 0 : gp == GATE_G3 ? d : 2 * d;
      const double *raw = row0 + (int64_t)t * ldq + col, *g = g0 + (int64_t)t * ng;
      double *dr = drow + (int64_t)t * ldq;
      for (int i = 0; i < d; i++) {
        int h = i / dh;
        dr[3 * d + h] += dr[col + i] * raw[i] * g[h] * (1.0 - g[h]);
        dr[col + i] *= g[h];
      }
    }
  }
  free(dog), free(dq), free(da);
  /* dW += dQKVZᵀ X;  db_g = Σ_rows dZ */
  if (!rc) rc = linear_backward(M, (int)NT, M->m, ldq, x, P + Y->Wq, S->dqkvz, G + Y->Wq, NULL,
                                NULL, 0.0);
  for (int64_t r = 0; r < NT && !rc && ng; r++)
    for (int j = 0; j < ng; j++) G[Y->bg + j] += S->dqkvz[r * ldq + 3 * d + j];
  return rc;
}

const model_family_ops mha_family_ops = {
    .layout = mha_layout_create,
    .acts_create = mha_acts_create,
    .acts_free = mha_acts_free,
    .forward = mha_forward,
    .loss = NULL,
    .loss_mse = mse_loss,
    .backward = mha_backward,
    .flops_per_point = mha_flops_per_point,
    .token_stats = NULL,
    .memory = mha_memory,
};

/* lm_attn.c — the lm family (docs/MODELS.md, "Language-model family"): a
 * decoder-only causal transformer over token sequences, the model of
 * lm_internal.h. This file: the layout, the workspace, the forward pass
 * on values (training, evaluation: every position) and on second-order
 * jets of the last position (geometry). The loss and the backward are
 * lm_backward.c, the training step lm_step.c, the family's row of the
 * table lm_family.c.
 *
 * Jets (docs/NUMERICS.md, "The lm family's probe plane"): the input x ∈ R^m
 * moves only the last token's embedding, h_0[T−1] = E[tok] + P[T−1] + Σ_a
 * x_a u_a. Under causal attention no earlier position sees the last one,
 * so positions 0..T−2 carry no derivatives: the value pass computes every
 * position (with x applied), then the jet pass carries the C jet rows of
 * the last position alone through each block, reading the earlier
 * positions' keys and values (constants in x) from the value pass. With
 * q, k_s, v_s the last query and the keys and values:
 *   score_s = ⟨q, k_s⟩/√dh       s < T−1: linear in q's jet (k_s constant)
 *                                s = T−1: the Leibniz pairs of q and k_{T−1}
 *   o = Σ_s P_s v_s              s < T−1: P_s's jet times the constant v_s
 *                                s = T−1: the Leibniz pairs of P_{T−1} and v_{T−1}
 * The representation after block l is the residual stream at the last
 * position, h_l[T−1] (before the final LayerNorm, which belongs to the
 * readout); h_0 is its embedding. */
#include "curvsweep/error.h"
#include "curvsweep/rng.h"
#include "curvsweep/simd.h"
#include "lm_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ layout */

/* The probe plane's directions: m standard normal vectors in R^d from the
 * stream (seed, "lm-probe", 0, "u"), orthonormalised (modified
 * Gram–Schmidt; a draw that is numerically dependent is drawn again). */
static int probe_directions(const cs_model *M, double *u) {
  int m = M->m, d = M->d;
  if (m > d)
    return cs_error(CS_ERR_INPUT, "lm family: a probe plane of dimension %d needs width >= %d",
                    m, m);
  rng_stream s = rng_stream_make((uint64_t)M->cfg.seed, "lm-probe", 0, "u");
  for (int a = 0; a < m; a++) {
    double *ua = u + (int64_t)a * d, norm = 0.0;
    do {
      for (int k = 0; k < d; k++) ua[k] = rng_normal(&s);
      for (int b = 0; b < a; b++) {
        const double *ub = u + (int64_t)b * d;
        double dot = 0.0;
        for (int k = 0; k < d; k++) dot += ua[k] * ub[k];
        for (int k = 0; k < d; k++) ua[k] -= dot * ub[k];
      }
      norm = 0.0;
      for (int k = 0; k < d; k++) norm += ua[k] * ua[k];
      norm = sqrt(norm);
    } while (!(norm > 1e-6));
    for (int k = 0; k < d; k++) ua[k] /= norm;
  }
  return CS_OK;
}

/* embed/tokens ((V+1) × d, row V is BOS), embed/positions (T × d), then
 * per block ln_g, ln_b, Wq, Wk, Wv, (Wg, bg), Wo, bo and with an MLP
 * mlp/ln_g, mlp/ln_b, mlp/W1 (f × d), mlp/b1, mlp/W2 (d × f), mlp/b2;
 * final/ln_g, final/ln_b, readout/W (V × d), readout/b (docs/MODELS.md). */
int lm_layout_create(cs_model *M) {
  int d = M->d, ng = M->n_gate, V = M->cfg.vocab, T = M->cfg.seq_len;
  int f = M->cfg.mlp_ratio * d;
  if (V < 4 || T < 2 || T > 256 || M->cfg.mlp_ratio < 0)
    return cs_error(CS_ERR_INPUT, "lm family: invalid shape (vocab %d, seq_len %d, mlp_ratio %d)",
                    V, T, M->cfg.mlp_ratio);
  size_t head = sizeof(lm_layout) + sizeof(lm_layer) * (size_t)M->L;
  head = (head + 7) / 8 * 8;
  lm_layout *Y;
  CS_CHECK(cs_calloc_bytes((void **)&Y, 1, head + sizeof(double) * (size_t)M->m * d));
  M->layout = Y;
  Y->u = (double *)((char *)Y + head);
  Y->V = V, Y->T = T, Y->f = f, Y->ldq = 3 * d + ng;
  CS_CHECK(probe_directions(M, Y->u));
  /* embeddings N(0, 1), as torch.nn.Embedding draws them: with the
   * generic N(0, 1/d) the first-token sink of docs/MODELS.md's setting
   * forms in 2 of 5 seeds, with N(0, 1) in 5 of 5 (measured there) */
  Y->tok_emb = model_add_tensor(M, "embed/tokens", V + 1, d, 1);
  model_set_init(M, INIT_NORMAL, 1.0);
  Y->pos_emb = model_add_tensor(M, "embed/positions", T, d, 1);
  model_set_init(M, INIT_NORMAL, 1.0);
  for (int l = 0; l < M->L; l++) {
    lm_layer *P = &Y->layer[l];
    memset(P, 0xff, sizeof *P); /* all -1 */
    P->ln_g = model_add_layer_tensor(M, l, "ln_g", 1, d, 0);
    P->ln_b = model_add_layer_tensor(M, l, "ln_b", 1, d, 0);
    /* W_q, W_k, W_v, W_g appended in a row: one ldq × d block */
    P->Wq = model_add_layer_tensor(M, l, "Wq", d, d, 1);
    P->Wk = model_add_layer_tensor(M, l, "Wk", d, d, 1);
    P->Wv = model_add_layer_tensor(M, l, "Wv", d, d, 1);
    if (ng) P->Wg = model_add_layer_tensor(M, l, "Wg", ng, d, 1);
    if (ng) P->bg = model_add_layer_tensor(M, l, "bg", 1, ng, 0);
    P->Wo = model_add_layer_tensor(M, l, "Wo", d, d, 1);
    P->bo = model_add_layer_tensor(M, l, "bo", 1, d, 0);
    if (f) {
      P->mlp_ln_g = model_add_layer_tensor(M, l, "mlp/ln_g", 1, d, 0);
      P->mlp_ln_b = model_add_layer_tensor(M, l, "mlp/ln_b", 1, d, 0);
      P->W1 = model_add_layer_tensor(M, l, "mlp/W1", f, d, 1);
      P->b1 = model_add_layer_tensor(M, l, "mlp/b1", 1, f, 0);
      P->W2 = model_add_layer_tensor(M, l, "mlp/W2", d, f, 1);
      P->b2 = model_add_layer_tensor(M, l, "mlp/b2", 1, d, 0);
    }
  }
  Y->lnf_g = model_add_tensor(M, "final/ln_g", 1, d, 0);
  Y->lnf_b = model_add_tensor(M, "final/ln_b", 1, d, 0);
  M->readout_W = model_add_tensor(M, "readout/W", V, d, 1);
  M->readout_b = model_add_tensor(M, "readout/b", 1, V, 0);
  M->n_classes = V;
  M->n_logits = T * V;
  return CS_OK;
}

/* Products per sequence: per position [Q|K|V|Z], W_o, the MLP and the
 * readout; per head the causal Q Kᵀ and P V (T(T+1)/2 pairs each). */
double lm_flops_per_point(const cs_config *c) {
  double d = c->width, T = c->seq_len, V = c->vocab, f = (double)c->mlp_ratio * c->width;
  double ng = config_arch_gate_width(c->arch, c->width, c->heads);
  double block = T * (2 * d * (3 * d + ng) + 2 * d * d + 4 * d * f) + 2 * T * (T + 1) * d;
  return c->depth * block + T * 2 * d * V;
}

/* --------------------------------------------------------- workspace */

#define ALLOC(p, count) \
  if (!rc) rc = CS_CALLOC(p, count)

/* One block's caches for rows rows (lm_cache). */
static int cache_alloc(const cs_model *M, const lm_acts *S, lm_cache *c, int64_t rows) {
  int d = M->d, rc = qkv_cache_alloc(M, &c->at, rows, S->T, 1);
  ALLOC(c->mid, rows * d);
  if (S->f) {
    if (!rc) rc = ln_cache_alloc(&c->ln2, rows, d);
    ALLOC(c->u, rows * S->f);
    ALLOC(c->act, rows * S->f);
    ALLOC(c->phi, rows * S->f);
  }
  return rc;
}

static void cache_free(lm_cache *c) {
  qkv_cache_free(&c->at), ln_cache_free(&c->ln2);
  free(c->mid), free(c->u), free(c->act), free(c->phi);
}

/* Entries of a weight's transposed copy: out × in, or 0 over LA_TRANSPOSE_B_MAX. */
static int64_t wt_entries(int out, int in) {
  int64_t n = (int64_t)out * in;
  return n <= LA_TRANSPOSE_B_MAX ? n : 0;
}

/* S->wt over one allocation S->wbuf (lm_wt): at most 4 · LA_TRANSPOSE_B_MAX entries
 * per block, like la_gemm's own scratch outside the memory estimate. */
static int wt_alloc(const cs_model *M, lm_acts *S) {
  int d = M->d, f = S->f;
  int64_t per = wt_entries(S->ldq, d) + wt_entries(d, d) + 2 * wt_entries(f, d);
  CS_CHECK(CS_CALLOC(S->wt, M->L));
  CS_CHECK(CS_CALLOC(S->wbuf, per * M->L + 1));
  double *p = S->wbuf;
  for (int l = 0; l < M->L; l++) {
    lm_wt *w = &S->wt[l];
    w->qkv = wt_entries(S->ldq, d) ? p : NULL, p += wt_entries(S->ldq, d);
    w->o = wt_entries(d, d) ? p : NULL, p += wt_entries(d, d);
    w->w1 = f && wt_entries(f, d) ? p : NULL, p += wt_entries(f, d);
    w->w2 = f && wt_entries(f, d) ? p : NULL, p += wt_entries(f, d);
  }
  return CS_OK;
}

int lm_acts_create(const cs_model *M, cs_acts *A, int jet_order) {
  const lm_layout *Y = M->layout;
  lm_acts *S;
  CS_CHECK(CS_CALLOC(S, 1));
  A->fam = S;
  S->T = Y->T, S->L = M->L, S->ng = M->n_gate, S->ldq = Y->ldq, S->f = Y->f, S->V = Y->V;
  int64_t NT = (int64_t)A->max_points * S->T, d = M->d;
  int rc = CS_OK;
  ALLOC(S->x, M->L + 1);
  ALLOC(S->cache, M->L);
  for (int l = 0; !rc && l <= M->L; l++) ALLOC(S->x[l], NT * d);
  for (int l = 0; !rc && l < M->L; l++) rc = cache_alloc(M, S, &S->cache[l], NT);
  if (!rc) rc = ln_cache_alloc(&S->lnf, NT, (int)d);
  ALLOC(S->tmp, 2 * NT);
  if (!rc) rc = wt_alloc(M, S);
  if (jet_order > 0) {
    const jet_shape *js = &A->js;
    if (!rc) rc = cache_alloc(M, S, &S->jet, (int64_t)A->max_points * js->C);
    ALLOC(S->jtmp, 2 * (int64_t)A->max_points * js->C);
  } else {
    if (!rc) rc = qkv_grads_alloc(M, &S->gr, NT);
    ALLOC(S->dmid, NT * d);
    ALLOC(S->dff, NT * (S->f ? S->f : 1));
    ALLOC(S->dff2, NT * (S->f ? S->f : 1));
  }
  return rc;
}
#undef ALLOC

void lm_acts_free(void *fam) {
  lm_acts *S = fam;
  if (!S) return;
  if (S->x)
    for (int l = 0; l <= S->L; l++) free(S->x[l]);
  if (S->cache)
    for (int l = 0; l < S->L; l++) cache_free(&S->cache[l]);
  cache_free(&S->jet);
  ln_cache_free(&S->lnf);
  free(S->x), free(S->cache), free(S->tmp), free(S->jtmp), free(S->wt), free(S->wbuf);
  qkv_grads_free(&S->gr);
  free(S->dmid), free(S->dff), free(S->dff2);
  free(S);
}

/* ------------------------------------------------- shared by the passes */

/* GELU on values with its bias, R rows of f: the product u = A W_1ᵀ ran
 * without b_1, so u ← u + b_1 here (one rounding, as a product started from
 * b_1 gives), then phi = Φ(u) (kept for the backward) and act = u Φ(u),
 * the operations of jet_unary's GELU: one pass instead of three. */
CS_VECTOR_CLONES static void gelu_bias_values(int64_t R, int f, const double *restrict b,
                                              double *restrict u, double *restrict phi,
                                              double *restrict act) {
  for (int64_t r = 0; r < R; r++) {
    double *ur = u + r * f, *pr = phi + r * f, *ar = act + r * f;
#pragma omp simd
    for (int j = 0; j < f; j++) {
      double x = ur[j] + b[j];
      ur[j] = x;
      pr[j] = 0.5 * erfc(-x * M_SQRT1_2);
      ar[j] = x * pr[j];
    }
  }
}

/* out ← (out + b) + mid, R rows of d: the bias a product left out, then the
 * residual, rounded as a product started from b and add_into after it. */
CS_VECTOR_CLONES static void bias_residual_values(int64_t R, int d, const double *restrict b,
                                                  const double *restrict mid,
                                                  double *restrict out) {
  for (int64_t r = 0; r < R; r++) {
    const double *mr = mid + r * d;
    double *o = out + r * d;
#pragma omp simd
    for (int j = 0; j < d; j++) o[j] = (o[j] + b[j]) + mr[j];
  }
}

/* W (out × in) transposed into wt (in × out), entry by entry as la_gemm's
 * copy. */
static void transpose_weight(int out, int in, const double *W, double *wt) {
  for (int i = 0; i < out; i++)
    for (int j = 0; j < in; j++) wt[(int64_t)j * out + i] = W[(int64_t)i * in + j];
}

/* lm_internal.h: every block's small weights transposed into S->wt, once
 * per forward: the chunks' products (and the jet pass) read these copies.
 * Timed as GEMM, the work la_gemm did in each product before. */
void lm_weights_transpose(const cs_model *M, lm_acts *S) {
  LA_PROF_BEGIN(t0);
  const double *W = M->params;
  int d = M->d, f = S->f;
  for (int l = 0; l < M->L; l++) {
    const lm_layer *P = &((const lm_layout *)M->layout)->layer[l];
    const lm_wt *w = &S->wt[l];
    if (w->qkv) transpose_weight(S->ldq, d, W + P->Wq, w->qkv);
    if (w->o) transpose_weight(d, d, W + P->Wo, w->o);
    if (w->w1) transpose_weight(f, d, W + P->W1, w->w1);
    if (w->w2) transpose_weight(d, f, W + P->W2, w->w2);
  }
  LA_PROF_END(t0, LA_PROF_GEMM);
}

/* Y = X Wᵀ (+ b, linear_forward) through the transposed copy Wt when the
 * block has one. */
static int block_linear(const cs_model *M, const jet_shape *js, int N, int in, int out,
                        const double *X, const double *W, const double *Wt, const double *b,
                        double *Y) {
  if (Wt) return linear_forward_t(M, js, N, in, out, X, Wt, b, Y);
  return linear_forward(M, js, N, in, out, X, W, b, Y);
}

/* The MLP sublayer on N jet points (shapes: mid, out R × d; u, act, phi
 * R × f, phi on values only; R = N·C; tmp ≥ 2·R; wt the block's
 * transposed weights):
 *   a = LN_2(mid)                      row-wise
 *   u = a W_1ᵀ + b_1                   one product (values: b_1 in the GELU pass)
 *   act = GELU(u) = u Φ(u)             element-wise (values: Φ(u) kept)
 *   out = mid + act W_2ᵀ + b_2         one product (values: b_2 and mid in one pass) */
static int lm_mlp_forward(const cs_model *M, const jet_shape *js, int N, const lm_layer *P,
                          const lm_wt *wt, const double *mid, ln_cache *ln2, double *u,
                          double *act, double *phi, double *tmp, double *out) {
  const double *W = M->params;
  int d = M->d, f = ((const lm_layout *)M->layout)->f, values = js->C == 1;
  int64_t R = (int64_t)N * js->C;
  LA_PROF_BEGIN(t0);
  layernorm_forward(M, js, N, mid, W + P->mlp_ln_g, W + P->mlp_ln_b, ln2, tmp);
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  CS_CHECK(block_linear(M, js, N, d, f, ln2->a, W + P->W1, wt->w1, values ? NULL : W + P->b1, u));
  LA_PROF_BEGIN(t1);
  if (values) gelu_bias_values(R, f, W + P->b1, u, phi, act);
  else jet_unary(js, JET_GELU, N, f, u, act);
  LA_PROF_END(t1, LA_PROF_ELEMENTWISE);
  CS_CHECK(block_linear(M, js, N, f, d, act, W + P->W2, wt->w2, values ? NULL : W + P->b2, out));
  LA_PROF_BEGIN(t2);
  if (values) bias_residual_values(R, d, W + P->b2, mid, out);
  else add_into(R * d, mid, out);
  LA_PROF_END(t2, LA_PROF_ELEMENTWISE);
  return CS_OK;
}

/* ------------------------------------------------------ value forward */

/* lm_internal.h: h_0 on values, NT × d: h_0[p, t] = E[tok_{p,t}] + P[t],
 * plus Σ_a x[p, a] u_a at t = T − 1 when x is given. */
void lm_embed_values(const cs_model *M, int N, const int *tok, const double *x, double *X0) {
  const lm_layout *Y = M->layout;
  int d = M->d, T = Y->T, m = M->m;
  const double *E = M->params + Y->tok_emb, *Pe = M->params + Y->pos_emb;
  for (int p = 0; p < N; p++)
    for (int t = 0; t < T; t++) {
      double *h = X0 + ((int64_t)p * T + t) * d;
      const double *e = E + (int64_t)tok[(int64_t)p * T + t] * d, *pe = Pe + (int64_t)t * d;
      for (int k = 0; k < d; k++) h[k] = e[k] + pe[k];
      if (x && t == T - 1)
        for (int a = 0; a < m; a++)
          for (int k = 0; k < d; k++) h[k] += x[(int64_t)p * m + a] * Y->u[(int64_t)a * d + k];
    }
}

/* w[0..n) ← softmax (max mx given; the sum in order), w[n..T) ← 0. */
CS_VECTOR_CLONES static void softmax_tail(int n, int T, double mx, double *restrict w) {
  double sum = 0.0;
#pragma omp simd
  for (int s = 0; s < n; s++) w[s] = exp(w[s] - mx);
  for (int s = 0; s < n; s++) sum += w[s];
  for (int s = 0; s < n; s++) w[s] /= sum;
  for (int s = n; s < T; s++) w[s] = 0.0;
}

/* Causal attention on values, per sequence p, head j, query t:
 *   w_s = ⟨Q_j[t], K_j[s]⟩/√dh (s ≤ t);  P_j[t, s] = softmax_s(w) (0 for s > t)
 *   O_j[t] = Σ_{s ≤ t} P_j[t, s] V_j[s]
 * no_first (MODEL_ABLATE_FIRST_TOKEN): for t ≥ 1 the softmax runs over
 * 1 ≤ s ≤ t and P_j[t, 0] = 0 (the weights renormalised without the first
 * token).
 * Q, K, V (ld ldq, ldk, ldv) NT rows of d; P NT × H·T; O NT × d.
 * Computed as: per sequence and head, K_j transposed (dh × T, padded to a
 * multiple of 8 columns with zeros) so the scores are lm_rows_gemm's
 * lower triangle; the exponentials through the vector exp, the maximum
 * and the sum in order; P V with the zeros of P above the diagonal
 * (docs/DECISIONS.md, "Training speed"). */
static int attention_values(int N, int T, int H, int dh, const double *Q, int ldq,
                            const double *K, int ldk, const double *V, int ldv, int no_first,
                            double *P, double *O) {
  int HT = H * T, d = H * dh, Tp = (T + 7) / 8 * 8;
  double scale = 1.0 / sqrt((double)dh), *kt, *sc;
  CS_CHECK(CS_CALLOC(kt, (size_t)dh * Tp + (size_t)T * Tp));
  sc = kt + (size_t)dh * Tp;
  for (int p = 0; p < N; p++)
    for (int j = 0; j < H; j++) {
      int64_t r0 = (int64_t)p * T;
      lm_causal_dots(T, dh, Q + r0 * ldq + j * dh, ldq, K + r0 * ldk + j * dh, ldk, kt, sc);
      for (int t = 0; t < T; t++) {
        double *w = P + (r0 + t) * HT + j * T, mx = -INFINITY;
        const double *st = sc + (int64_t)t * Tp;
        int n = t + 1;
        for (int s = 0; s < n; s++) {
          w[s] = scale * st[s];
          mx = w[s] > mx ? w[s] : mx;
        }
        if (no_first && t > 0) { /* MODEL_ABLATE_FIRST_TOKEN: the softmax over keys 1..t */
          mx = -INFINITY;
          for (int s = 1; s < n; s++) mx = w[s] > mx ? w[s] : mx;
          softmax_tail(n - 1, T - 1, mx, w + 1);
          w[0] = 0.0;
        } else {
          softmax_tail(n, T, mx, w);
        }
      }
      lm_rows_gemm(LM_TRI_K_LOWER, T, T, dh, P + r0 * HT + j * T, HT, V + r0 * ldv + j * dh, ldv,
                   O + r0 * d + j * dh, d);
    }
  free(kt);
  return CS_OK;
}

/* The last position of each sequence: X (NT × d) -> h (N × d). */
static void gather_last(int N, int T, int d, const double *X, double *h) {
  for (int p = 0; p < N; p++)
    memcpy(h + (int64_t)p * d, X + ((int64_t)p * T + T - 1) * d, sizeof(double) * d);
}

/* -------------------------------------------- jets of the last position */

/* Causal attention of the last query on jets (see the top of the file),
 * per sequence p, jet row r, head j:
 *   S[(p,r), j·T + s] = Σ_{(r1,r2) ∈ pairs} ⟨Qj[(p,r1)], K'[s][r2]⟩/√dh,
 *     K'[s] the constant K[p·T + s] (pairs (r, 0) only) for s < T − 1, Kj for s = T − 1
 *   softmax over s (jet_softmax_groups)
 *   O[(p,r), j] = Σ_{(r1,r2)} Σ_s P[(p,r1), j·T + s] V'[s][r2]
 * Qj, Kj, Vj (ld ldqj, ldkj, ldvj) N·C rows; K, V (ld ldk, ldv) NT value
 * rows; Pj N·C × H·T; Oj N·C × d. */
static void attention_jets(const cs_model *M, const jet_shape *js, int T, int N,
                           const double *Qj, int ldqj, const double *Kj, int ldkj,
                           const double *Vj, int ldvj, const double *K, int ldk,
                           const double *V, int ldv, double *Pj, double *Oj) {
  int H = M->H, dh = M->dh, d = M->d, C = js->C, HT = H * T, last = T - 1;
  double scale = 1.0 / sqrt((double)dh);
  for (int p = 0; p < N; p++)
    for (int r = 0; r < C; r++)
      for (int j = 0; j < H; j++) {
        double *w = Pj + ((int64_t)p * C + r) * HT + j * T;
        const double *q = Qj + ((int64_t)p * C + r) * ldqj + j * dh;
        for (int s = 0; s < last; s++) {
          const double *k = K + ((int64_t)p * T + s) * ldk + j * dh;
          double acc = 0.0;
          for (int i = 0; i < dh; i++) acc += q[i] * k[i];
          w[s] = scale * acc;
        }
        double acc = 0.0;
        const jet_pairs *pr = &js->pairs[r];
        for (int e = 0; e < pr->n; e++) {
          const double *q1 = Qj + ((int64_t)p * C + pr->r1[e]) * ldqj + j * dh;
          const double *k2 = Kj + ((int64_t)p * C + pr->r2[e]) * ldkj + j * dh;
          for (int i = 0; i < dh; i++) acc += q1[i] * k2[i];
        }
        w[last] = scale * acc;
      }
  jet_softmax_groups(js, N, H, T, Pj);
  for (int p = 0; p < N; p++)
    for (int r = 0; r < C; r++)
      for (int j = 0; j < H; j++) {
        const double *w = Pj + ((int64_t)p * C + r) * HT + j * T;
        double *o = Oj + ((int64_t)p * C + r) * d + j * dh;
        for (int i = 0; i < dh; i++) o[i] = 0.0;
        for (int s = 0; s < last; s++) {
          const double *v = V + ((int64_t)p * T + s) * ldv + j * dh;
          for (int i = 0; i < dh; i++) o[i] += w[s] * v[i];
        }
        const jet_pairs *pr = &js->pairs[r];
        for (int e = 0; e < pr->n; e++) {
          double w1 = Pj[((int64_t)p * C + pr->r1[e]) * HT + j * T + last];
          const double *v2 = Vj + ((int64_t)p * C + pr->r2[e]) * ldvj + j * dh;
          for (int i = 0; i < dh; i++) o[i] += w1 * v2[i];
        }
      }
}

/* One block, on values or on the jets of the last position:
 *   values (C = 1): np = N·T positions (N sequences: a chunk, block_values),
 *                   caches c (a view into S->cache[l]), hin, hout NT × d
 *   jets (C > 1):   np = N last positions, caches c = S->jet, hin, hout N·C × d,
 *                   the earlier positions' keys and values from S->cache[l]
 * (np jet points, R = np·C rows; the attention is the only step that
 * differs). */
int lm_block_forward(const cs_model *M, const jet_shape *js, lm_acts *S, lm_cache *c, int N,
                     int l, int ablate, const double *hin, double *hout) {
  const lm_layer *P = &((const lm_layout *)M->layout)->layer[l];
  const double *W = M->params;
  int jets = js->C > 1, d = M->d, np = jets ? N : N * S->T;
  int64_t R = (int64_t)np * js->C;
  qkv_cache *at = &c->at;
  double *tmp = jets ? S->jtmp : S->tmp;
  /* A = LN_1(h);  [Q | K | V | Z] = A [W_q; W_k; W_v; W_g]ᵀ, gated at g2..g4 (layers.h) */
  LA_PROF_BEGIN(t1);
  layernorm_forward(M, js, np, hin, W + P->ln_g, W + P->ln_b, &at->ln, tmp);
  LA_PROF_END(t1, LA_PROF_ELEMENTWISE);
  CS_CHECK(qkv_forward_t(M, js, np, at->ln.a, P->Wq, S->wt[l].qkv, P->bg, at));
  qkv_view a = qkv_split(M, at->qkvz, at->gated);
  if (jets) { /* the last query against the earlier keys and values (values) */
    qkv_view e = qkv_split(M, S->cache[l].at.qkvz, S->cache[l].at.gated);
    LA_PROF_BEGIN(t0);
    attention_jets(M, js, S->T, N, a.q, a.ldq, a.k, a.ldk, a.v, a.ldv, e.k, e.ldk, e.v, e.ldv,
                   at->p, at->o);
    LA_PROF_END(t0, LA_PROF_TOKENS);
  } else {
    LA_PROF_BEGIN(t0);
    int rc = attention_values(N, S->T, M->H, M->dh, a.q, a.ldq, a.k, a.ldk, a.v, a.ldv,
                              ablate == MODEL_ABLATE_FIRST_TOKEN, at->p, at->o);
    LA_PROF_END(t0, LA_PROF_TOKENS);
    CS_CHECK(rc);
  }
  /* Y = O W_oᵀ + b_o, gated at g1 or g5 (layers.h);  mid = h + Y (linear: every jet row);
   * MODEL_ABLATE_ATTENTION: mid = h */
  int g5 = M->n_gate && M->cfg.gate == GATE_G5;
  if (ablate == MODEL_ABLATE_ATTENTION) {
    memcpy(c->mid, hin, sizeof(double) * (size_t)R * d);
  } else if (!jets && !g5) {
    /* values: U = O (g1: G ⊙ O);  mid = U W_oᵀ without b_o, then
     * mid ← (mid + b_o) + h in one pass (rounded as b_o + U W_oᵀ, then + h) */
    const double *U = at->o;
    if (M->n_gate && M->cfg.gate == GATE_G1) {
      gate_forward(M, js, np, at->qkvz + 3 * d, S->ldq, W + P->bg, at->g, at->o, at->gated);
      U = at->gated;
    }
    CS_CHECK(block_linear(M, js, np, d, d, U, W + P->Wo, S->wt[l].o, NULL, c->mid));
    LA_PROF_BEGIN(t2);
    bias_residual_values(R, d, W + P->bo, hin, c->mid);
    LA_PROF_END(t2, LA_PROF_ELEMENTWISE);
  } else {
    CS_CHECK(qkv_out_forward(M, js, np, at, P->Wo, P->bo, P->bg, c->mid));
    LA_PROF_BEGIN(t2);
    add_into(R * d, hin, c->mid);
    LA_PROF_END(t2, LA_PROF_ELEMENTWISE);
  }
  /* the MLP sublayer, or hout = mid */
  if (S->f)
    return lm_mlp_forward(M, js, np, P, &S->wt[l], c->mid, &c->ln2, c->u, c->act, c->phi, tmp,
                          hout);
  memcpy(hout, c->mid, sizeof(double) * (size_t)R * d);
  return CS_OK;
}

/* Block l on the values of N sequences, chunk by chunk (LM_CHUNK_ROWS):
 * hin, hout NT × d, the caches S->cache[l]. */
static int block_values(const cs_model *M, lm_acts *S, int N, int l, int ablate,
                        const double *hin, double *hout) {
  jet_shape vjs = {.m = M->m, .C = 1};
  int T = S->T, d = M->d, per = lm_chunk_seqs(T);
  for (int p0 = 0; p0 < N; p0 += per) {
    int n = N - p0 < per ? N - p0 : per;
    int64_t r = (int64_t)p0 * T;
    lm_cache c = lm_cache_rows(&S->cache[l], r, d, S->ldq, S->ng, M->H * T, S->f);
    CS_CHECK(lm_block_forward(M, &vjs, S, &c, n, l, ablate, hin + r * d, hout + r * d));
  }
  return CS_OK;
}

/* The jet of h_0 at the last position: value row from the value pass
 * (X0's last row), ∂/∂x_a = u_a, second rows 0. h0 N·C × d. */
static void embed_jets(const cs_model *M, const jet_shape *js, int N, int T, const double *X0,
                       double *h0) {
  const lm_layout *Y = M->layout;
  int d = M->d, C = js->C;
  memset(h0, 0, sizeof(double) * (size_t)N * C * d);
  for (int p = 0; p < N; p++) {
    double *hp = h0 + (int64_t)p * C * d;
    memcpy(hp, X0 + ((int64_t)p * T + T - 1) * d, sizeof(double) * d);
    memcpy(hp + d, Y->u, sizeof(double) * (size_t)M->m * d);
  }
}

/* -------------------------------------------------------------- forward */

/* lm_internal.h: LN_f and the readout at value rows r .. r + rows − 1. */
int lm_readout_rows(const cs_model *M, cs_acts *A, int64_t r, int rows, const double *hL) {
  const lm_layout *Y = M->layout;
  lm_acts *S = A->fam;
  jet_shape vjs = {.m = M->m, .C = 1};
  const double *W = M->params;
  int d = M->d;
  ln_cache f = ln_cache_rows(&S->lnf, r, d);
  LA_PROF_BEGIN(t0);
  layernorm_forward(M, &vjs, rows, hL, W + Y->lnf_g, W + Y->lnf_b, &f, S->tmp);
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  return linear_forward(M, &vjs, rows, d, Y->V, f.a, W + M->readout_W, W + M->readout_b,
                        A->logits + r * Y->V);
}

/* lm_internal.h: the bound tokens of N sequences in 0..V. */
int lm_tokens_check(const cs_acts *A, int N) {
  const lm_acts *S = A->fam;
  const int *tok = A->tok.tokens;
  int T = S->T;
  for (int64_t i = 0; i < (int64_t)N * T; i++)
    if (tok[i] < 0 || tok[i] > S->V)
      return cs_error(CS_ERR_INPUT, "lm forward: token %d at sequence %lld, position %lld is "
                      "outside 0..%d (vocab %d and BOS)", tok[i], (long long)(i / T),
                      (long long)(i % T), S->V, S->V);
  return CS_OK;
}

int lm_forward(const cs_model *M, cs_acts *A, int N, const double *x) {
  lm_acts *S = A->fam;
  const jet_shape *js = &A->js;
  int d = M->d, T = S->T, NT = N * T, C = js->C;
  const int *tok = A->tok.tokens;
  CS_CHECK(lm_tokens_check(A, N));
  lm_weights_transpose(M, S);
  LA_PROF_BEGIN(t0);
  lm_embed_values(M, N, tok, x, S->x[0]);
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  /* an intervention (model_ablation_deltas) on values only, at its block */
  for (int l = 0; l < M->L; l++) {
    int ablate = C == 1 && l == A->ablate_layer ? A->ablate_kind : MODEL_ABLATE_NONE;
    CS_CHECK(block_values(M, S, N, l, ablate, S->x[l], S->x[l + 1]));
  }
  if (C == 1) {
    LA_PROF_BEGIN(t1);
    for (int l = 0; l <= M->L; l++) gather_last(N, T, d, S->x[l], A->h[l]);
    LA_PROF_END(t1, LA_PROF_ELEMENTWISE);
    /* the readout chunk by chunk: chunk-row products take la's
     * small-matrix kernels (docs/DECISIONS.md, "The lm family's weights
     * transposed once per forward, its loss through the vector exp") */
    int rows = lm_chunk_seqs(T) * T;
    for (int r = 0; r < NT; r += rows)
      CS_CHECK(lm_readout_rows(M, A, r, NT - r < rows ? NT - r : rows, S->x[M->L] + (int64_t)r * d));
    return CS_OK;
  }
  embed_jets(M, js, N, T, S->x[0], A->h[0]);
  for (int l = 0; l < M->L; l++)
    CS_CHECK(lm_block_forward(M, js, S, &S->jet, N, l, MODEL_ABLATE_NONE, A->h[l], A->h[l + 1]));
  return CS_OK;
}

/* The memory-estimate terms (docs/SPEC.md, "Sizes"; model_family_ops): per
 * block ln, W_q W_k W_v W_o, W_g b_g, b_o and the MLP's ln, W_1 b_1 W_2 b_2;
 * token and position embeddings and the vocabulary readout; per sequence
 * (T positions) a value workspace and the backward buffers; jets in chunks
 * of at most 8192 positions (src/train/cell.c) through the value workspace,
 * then C rows of the last position; tokens and masks as data. */
void lm_memory(const cs_config *c, uint64_t ng, model_memory_terms *t, int *over) {
  uint64_t d = (uint64_t)c->width, L = (uint64_t)c->depth, V = (uint64_t)c->vocab;
  uint64_t T = (uint64_t)c->seq_len, H = (uint64_t)c->heads, f = SIZE_MUL((uint64_t)c->mlp_ratio, d);
  uint64_t train = (uint64_t)c->train_points, test = (uint64_t)c->test_points;
  uint64_t pts = (uint64_t)c->points, chunk, C;
  // ln, W_q W_k W_v W_o, W_g b_g, b_o; mlp: ln, W_1 b_1 W_2 b_2
  uint64_t layer = SIZE_ADD(SIZE_ADD(SIZE_MUL(3, d), SIZE_MUL(4, SIZE_MUL(d, d))),
                            SIZE_ADD(SIZE_MUL(ng, d), ng));
  if (f) layer = SIZE_ADD(layer, SIZE_ADD(SIZE_ADD(SIZE_MUL(3, d), f), SIZE_MUL(2, SIZE_MUL(f, d))));
  uint64_t embed = SIZE_MUL(SIZE_ADD(SIZE_ADD(V, 1), T), d);
  t->params = SIZE_ADD(SIZE_ADD(embed, SIZE_MUL(L, layer)), SIZE_ADD(SIZE_MUL(SIZE_ADD(V, 2), d), V));
  // per position: ln_1, qkvz, gate, pre, gated, p, o, mid (+ ln_2, u, act)
  uint64_t ldq = SIZE_ADD(SIZE_MUL(3, d), ng), HT = SIZE_MUL(H, T);
  uint64_t row = SIZE_ADD(SIZE_ADD(SIZE_ADD(SIZE_MUL(6, d), 1), SIZE_ADD(ldq, ng)),
                          SIZE_ADD(HT, SIZE_MUL(2, d)));
  if (f) row = SIZE_ADD(row, SIZE_ADD(SIZE_ADD(SIZE_MUL(2, d), 1), SIZE_MUL(2, f)));
  // residual streams, final LN, scratch, logits; backward buffers
  uint64_t pos = SIZE_ADD(SIZE_ADD(SIZE_MUL(L + 1, d), SIZE_MUL(L, row)),
                          SIZE_ADD(SIZE_ADD(SIZE_MUL(2, d), 3), SIZE_MUL(2, V)));
  pos = SIZE_ADD(pos, SIZE_ADD(SIZE_ADD(SIZE_MUL(7, d), HT), SIZE_ADD(ldq, SIZE_MUL(2, f))));
  t->row = SIZE_MUL(T, pos);
  sizes_chunk(c, &chunk, &C);
  // (T = 0 only in a config not from a spec: the layout refuses it after)
  uint64_t lchunk = T == 0 ? chunk : 8192 / T < chunk ? (8192 / T ? 8192 / T : 1) : chunk;
  uint64_t jrow = SIZE_ADD(SIZE_ADD(SIZE_MUL(12, d), SIZE_MUL(2, ng)), SIZE_ADD(SIZE_ADD(HT, SIZE_MUL(2, f)), 4));
  t->jets = SIZE_MUL(8, SIZE_ADD(SIZE_MUL(t->row, lchunk), SIZE_MUL(SIZE_MUL(lchunk, C), jrow)));
  t->data = SIZE_MUL(5, SIZE_MUL(SIZE_ADD(SIZE_ADD(train, test), pts), T));
}

/* Block l's causal attention and gate after a value forward
 * (model_block_view): every position a query over the keys s ≤ t. */
void lm_block_view(const cs_model *M, const cs_acts *A, int N, int l, model_block_view *v) {
  const lm_acts *S = A->fam;
  const qkv_cache *at = &S->cache[l].at;
  *v = (model_block_view){at->p, M->n_gate ? at->g : NULL, (int64_t)N * S->T, S->T, S->T, 1};
}

/* lm_backward.c — the lm family's next-token loss, its backward on values
 * and the first-token share (docs/MODELS.md, "Language-model family"; the
 * model and notation of lm_internal.h). Every gradient is accumulated
 * into M->grads (the caller zeroes it). */
#include "curvsweep/error.h"
#include "curvsweep/simd.h"
#include "lm_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- loss */

/* e[k] = exp(z[k] − mx), k < V, through the vector exp (as the
 * attention's softmax_tail, lm_attn.c). */
CS_VECTOR_CLONES static void exp_shifted(int V, double mx, const double *restrict z,
                                         double *restrict e) {
#pragma omp simd
  for (int k = 0; k < V; k++) e[k] = exp(z[k] - mx);
}

/* dz[k] ← (dz[k]/sum − [k = target])/n, k < V: one vector pass (a
 * division rounds alike in every lane width: the bits of the scalar loop). */
CS_VECTOR_CLONES static void softmax_grad_row(int V, double sum, int target, double n,
                                              double *restrict dz) {
#pragma omp simd
  for (int k = 0; k < V; k++) dz[k] = (dz[k] / sum - (k == target ? 1.0 : 0.0)) / n;
}

/* Next-token cross-entropy, logits NT × V (row p·T + t predicts token
 * t + 1 of sequence p), over the n_s scored targets:
 *   ℓ = (1/n_s) Σ_{scored (p, t+1)} (logsumexp(z_{p,t}) − z_{p,t}[tok_{p,t+1}])
 *   dℓ/dz_{p,t} = (softmax(z_{p,t}) − onehot(tok_{p,t+1})) / n_s, 0 elsewhere.
 * n_correct: scored targets whose argmax (the first on a tie) is right.
 * The exponentials in one vector pass per row, their sum in order after
 * (docs/DECISIONS.md, "The lm family's weights transposed once per
 * forward, its loss through the vector exp"). */
double lm_loss(cs_acts *A, int N, const int *y, int *n_correct) {
  (void)y;
  int64_t n_s = lm_scored_count(A, N);
  double loss = 0.0;
  int correct = 0;
  lm_loss_rows(A, 0, (int64_t)N * ((const lm_acts *)A->fam)->T, n_s, &loss, &correct);
  if (n_correct) *n_correct = correct;
  return n_s ? loss / n_s : 0.0;
}

/* lm_internal.h: the scored targets of the N bound sequences. */
int64_t lm_scored_count(const cs_acts *A, int N) {
  const lm_acts *S = A->fam;
  int T = S->T;
  const unsigned char *sc = A->tok.scored;
  int64_t n_s = 0;
  for (int p = 0; p < N; p++)
    for (int t = 1; t < T; t++) n_s += sc[(int64_t)p * T + t] != 0;
  return n_s;
}

/* lm_internal.h: lm_loss's terms of value rows r0 .. r1 − 1, in order. */
void lm_loss_rows(cs_acts *A, int64_t r0, int64_t r1, int64_t n_s, double *loss, int *correct) {
  LA_PROF_BEGIN(t0);
  const lm_acts *S = A->fam;
  int T = S->T, V = S->V;
  const int *tok = A->tok.tokens;
  const unsigned char *sc = A->tok.scored;
  for (int64_t row = r0; row < r1; row++) {
    int t = (int)(row % T);
    double *dz = A->dlogits + row * V;
    if (t + 1 == T || !sc[row + 1]) { /* no target scored from this row */
      memset(dz, 0, sizeof(double) * (size_t)V);
      continue;
    }
    const double *z = A->logits + row * V;
    double mx = z[0], sum = 0.0;
    int target = tok[row + 1], am = 0;
    for (int k = 1; k < V; k++)
      if (z[k] > mx) mx = z[k], am = k;
    exp_shifted(V, mx, z, dz);
    for (int k = 0; k < V; k++) sum += dz[k];
    *loss += mx + log(sum) - z[target];
    *correct += am == target;
    softmax_grad_row(V, sum, target, (double)n_s, dz);
  }
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
}

/* ------------------------------------------------------------- backward */

/* One row of dS: g[s] = w[s] (ds[s] − pd) scale for s < n, 0 up to T. */
CS_VECTOR_CLONES static void dsoftmax_row(int n, int T, double scale, double pd,
                                          const double *restrict w, const double *restrict ds,
                                          double *restrict g) {
#pragma omp simd
  for (int s = 0; s < n; s++) g[s] = w[s] * (ds[s] - pd) * scale;
  for (int s = n; s < T; s++) g[s] = 0.0;
}

/* Causal attention backward on values, per sequence p, head j, query t
 * (P, Q, K, V of the forward; dO NT × d):
 *   dP[t, s] = ⟨dO[t], V[s]⟩;   dS[t, s] = P[t, s] (dP[t, s] − Σ_s' P[t, s'] dP[t, s'])
 *   dQ[t] = Σ_{s ≤ t} dS[t, s] K[s]/√dh;   dK[s] = Σ_{t ≥ s} dS[t, s] Q[t]/√dh
 *   dV[s] = Σ_{t ≥ s} P[t, s] dO[t]
 * dQ, dK, dV (ld lddq, lddk, lddv) NT rows, overwritten. Computed as the
 * forward, per sequence and head through lm_rows_gemm: dP from V_j
 * transposed, the scaled dS (0 above the diagonal), and the sums over
 * t ≥ s reading dS and P transposed, every sum in ascending order. */
static int attention_backward(int N, int T, int H, int dh, const double *P, const double *dO,
                              const double *Q, int ldq, const double *K, int ldk, const double *V,
                              int ldv, double *dQ, int lddq, double *dK, int lddk, double *dV,
                              int lddv) {
  int HT = H * T, d = H * dh, Tp = (T + 7) / 8 * 8;
  double scale = 1.0 / sqrt((double)dh), *vt;
  CS_CHECK(CS_CALLOC(vt, (size_t)dh * Tp + 2 * (size_t)T * Tp));
  double *dp = vt + (size_t)dh * Tp, *g = dp + (size_t)T * Tp;
  for (int p = 0; p < N; p++)
    for (int j = 0; j < H; j++) {
      int64_t r0 = (int64_t)p * T;
      lm_causal_dots(T, dh, dO + r0 * d + j * dh, d, V + r0 * ldv + j * dh, ldv, vt, dp);
      for (int t = 0; t < T; t++) {
        const double *w = P + (r0 + t) * HT + j * T, *ds = dp + (int64_t)t * Tp;
        double *gr = g + (int64_t)t * Tp, pd = 0.0;
        for (int s = 0; s <= t; s++) pd += w[s] * ds[s];
        dsoftmax_row(t + 1, T, scale, pd, w, ds, gr);
      }
      lm_rows_gemm(LM_TRI_K_LOWER, T, T, dh, g, Tp, K + r0 * ldk + j * dh, ldk,
                   dQ + r0 * lddq + j * dh, lddq);
      lm_rows_gemm(LM_TRI_K_UPPER, T, T, dh, g, Tp, Q + r0 * ldq + j * dh, ldq,
                   dK + r0 * lddk + j * dh, lddk);
      lm_rows_gemm(LM_TRI_K_UPPER, T, T, dh, P + r0 * HT + j * T, HT, dO + r0 * d + j * dh, d,
                   dV + r0 * lddv + j * dh, lddv);
    }
  free(vt);
  return CS_OK;
}

/* dy = dx ⊙ GELU'(u), n values: GELU'(u) = Φ(u) + u φ(u) with Φ(u) kept
 * by the forward, one tight loop through the vector exp (jet.h). */
CS_VECTOR_CLONES static void gelu_backward_values(int64_t n, const double *restrict u,
                                                  const double *restrict Phi,
                                                  const double *restrict dx,
                                                  double *restrict dy) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    double phi = exp(-0.5 * u[i] * u[i]) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
    dy[i] = dx[i] * (Phi[i] + u[i] * phi);
  }
}

/* The MLP sublayer's backward, out = mid + GELU(LN_2(mid) W_1ᵀ + b_1) W_2ᵀ + b_2:
 *   dact = dout W_2;  du = dact ⊙ GELU'(u);  da = du W_1;  dmid = dout + LN_2'(da)
 * GELU'(u) = Φ(u) + u φ(u). dmid NT × d. */
static int mlp_backward_lm(cs_model *M, lm_acts *S, int NT, const lm_layer *P, const lm_cache *c,
                           const double *dout, double *dmid) {
  double *W = M->params, *G = M->grads;
  int d = M->d, f = S->f;
  CS_CHECK(linear_backward(M, NT, f, d, c->act, W + P->W2, dout, G + P->W2, G + P->b2, S->dff,
                           0.0));
  LA_PROF_BEGIN(t0);
  gelu_backward_values((int64_t)NT * f, c->u, c->phi, S->dff, S->dff2);
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  CS_CHECK(linear_backward(M, NT, d, f, c->ln2.a, W + P->W1, S->dff2, G + P->W1, G + P->b1,
                           S->gr.da, 0.0));
  LA_PROF_BEGIN(t1);
  layernorm_backward(M, NT, &c->ln2, W + P->mlp_ln_g, S->gr.da, G + P->mlp_ln_g, G + P->mlp_ln_b,
                     dmid);
  add_into((int64_t)NT * d, dout, dmid);
  LA_PROF_END(t1, LA_PROF_ELEMENTWISE);
  return CS_OK;
}

/* lm_internal.h: one block backward on values of N sequences (a chunk, block_backward):
 * dXn (NT × d, gradient of the block's output) -> dX (gradient of its
 * input X); c the chunk's caches, S's backward buffers the chunk's. */
int lm_block_backward_rows(cs_model *M, lm_acts *S, const lm_cache *c, int N, int l,
                           const double *dXn, double *dX) {
  const lm_layer *P = &((const lm_layout *)M->layout)->layer[l];
  const qkv_cache *at = &c->at;
  double *W = M->params, *Gr = M->grads;
  int d = M->d, NT = N * S->T;
  /* the MLP sublayer: dmid = dXn + its path */
  const double *dmid = dXn;
  if (S->f) {
    CS_CHECK(mlp_backward_lm(M, S, NT, P, c, dXn, S->dmid));
    dmid = S->dmid;
  }
  /* mid = X + Y, Y = O W_oᵀ + b_o gated at g1 or g5 (layers.h): dO, and dZ beside dQKV */
  const double *dO;
  CS_CHECK(qkv_out_backward(M, NT, at, P->Wo, P->bo, P->bg, dmid, &S->gr, &dO));
  /* attention; a gated Q, K or V sends its gradient to dgated first */
  qkv_view a = qkv_split(M, at->qkvz, at->gated);
  qkv_view g = qkv_split(M, S->gr.dqkvz, S->gr.dgated);
  LA_PROF_BEGIN(t0);
  int rc = attention_backward(N, S->T, M->H, M->dh, at->p, dO, a.q, a.ldq, a.k, a.ldk, a.v, a.ldv,
                              g.q, g.ldq, g.k, g.ldk, g.v, g.ldv);
  LA_PROF_END(t0, LA_PROF_TOKENS);
  CS_CHECK(rc);
  /* [Q|K|V|Z] = LN_1(X) [W_q; W_k; W_v; W_g]ᵀ, gated at g2..g4 (layers.h): dA;
   * dX = dmid + LN_1'(dA) */
  CS_CHECK(qkv_backward(M, NT, at->ln.a, at, P->Wq, P->bg, &S->gr, S->gr.da));
  LA_PROF_BEGIN(t1);
  layernorm_backward(M, NT, &at->ln, W + P->ln_g, S->gr.da, Gr + P->ln_g, Gr + P->ln_b, dX);
  add_into((int64_t)NT * d, dmid, dX);
  LA_PROF_END(t1, LA_PROF_ELEMENTWISE);
  return CS_OK;
}

/* Block l backward on values of N sequences, chunk by chunk as the forward
 * (LM_CHUNK_ROWS): each chunk reads its caches and writes its rows of the
 * backward buffers (a shallow copy of S pointing at them); the weight
 * gradients add up chunk after chunk, in row order. */
static int block_backward(cs_model *M, lm_acts *S, int N, int l, const double *dXn, double *dX) {
  int T = S->T, d = M->d, ldq = S->ldq, f = S->f, per = lm_chunk_seqs(T);
  for (int p0 = 0; p0 < N; p0 += per) {
    int n = N - p0 < per ? N - p0 : per;
    int64_t r = (int64_t)p0 * T;
    lm_cache c = lm_cache_rows(&S->cache[l], r, d, ldq, S->ng, M->H * T, f);
    lm_acts Sc = *S;
    Sc.gr.da += r * d, Sc.gr.du += r * d, Sc.gr.dgated += r * d, Sc.gr.dqkvz += r * ldq;
    Sc.dmid += r * d;
    if (f) Sc.dff += r * f, Sc.dff2 += r * f;
    CS_CHECK(lm_block_backward_rows(M, &Sc, &c, n, l, dXn + r * d, dX + r * d));
  }
  return CS_OK;
}

int lm_backward(cs_model *M, cs_acts *A, int N, const double *x) {
  (void)x; /* the probe offset is not trained through */
  lm_acts *S = A->fam;
  int d = M->d, T = S->T, NT = N * T;
  double *W = M->params, *G = M->grads;
  /* readout: dW_r += dlogitsᵀ a_f;  db_r;  then da_f and the final LN
   * chunk by chunk, as the forward's product */
  CS_CHECK(linear_backward(M, NT, d, S->V, S->lnf.a, W + M->readout_W, A->dlogits,
                           G + M->readout_W, G + M->readout_b, NULL, 0.0));
  double *dXn = S->gr.dx_a, *dX = S->gr.dx_b;
  int rows = lm_chunk_seqs(T) * T;
  for (int r = 0; r < NT; r += rows)
    CS_CHECK(lm_readout_backward_rows(M, A, r, NT - r < rows ? NT - r : rows, dXn + (int64_t)r * d));
  for (int l = M->L - 1; l >= 0; l--) {
    CS_CHECK(block_backward(M, S, N, l, dXn, dX));
    double *t = dXn;
    dXn = dX;
    dX = t;
  }
  lm_embed_backward(M, A, 0, NT, dXn);
  return CS_OK;
}

/* lm_internal.h: da_f = dlogits W_r and the final LN's backward at value
 * rows r .. r + rows − 1. */
int lm_readout_backward_rows(cs_model *M, cs_acts *A, int64_t r, int rows, double *dh) {
  const lm_layout *Y = M->layout;
  lm_acts *S = A->fam;
  double *W = M->params, *G = M->grads;
  int d = M->d, V = S->V;
  CS_CHECK(la_gemm('N', 'N', 1.0, VIEW(M, rows, V, V, A->dlogits + r * V),
                   VIEW(M, V, d, d, W + M->readout_W), 0.0, VIEW(M, rows, d, d, S->gr.da)));
  ln_cache f = ln_cache_rows(&S->lnf, r, d);
  LA_PROF_BEGIN(t0);
  layernorm_backward(M, rows, &f, W + Y->lnf_g, S->gr.da, G + Y->lnf_g, G + Y->lnf_b, dh);
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  return CS_OK;
}

/* lm_internal.h: h_0[p, t] = E[tok] + P[t]:  dE[tok] += dh_0[p, t];
 * dP[t] += dh_0[p, t], rows r0 .. r0 + rows − 1 in order (dh0 from row r0). */
void lm_embed_backward(cs_model *M, const cs_acts *A, int64_t r0, int64_t rows,
                       const double *dh0) {
  LA_PROF_BEGIN(t1);
  const lm_layout *Y = M->layout;
  int d = M->d, T = ((const lm_acts *)A->fam)->T;
  const int *tok = A->tok.tokens;
  double *dE = M->grads + Y->tok_emb, *dP = M->grads + Y->pos_emb;
  for (int64_t i = 0; i < rows; i++) {
    const double *g = dh0 + i * d;
    double *e = dE + (int64_t)tok[r0 + i] * d, *pe = dP + (int64_t)((r0 + i) % T) * d;
    for (int k = 0; k < d; k++) e[k] += g[k], pe[k] += g[k];
  }
  LA_PROF_END(t1, LA_PROF_ELEMENTWISE);
}

/* ------------------------------------------------- first-token share */

double lm_sink_sums(const cs_model *M, const cs_acts *A, int N, double *sum) {
  // P: (N·T) × (H·T) of block l, row p·T + t, column j·T + s (causal: s ≤ t)
  const lm_acts *S = A->fam;
  int L = M->L, H = M->H, T = S->T, HT = H * T;
  double *sum_sink = sum + (int64_t)MODEL_STAT_SINK_MASS * L * H;
  double *sum_max = sum + (int64_t)MODEL_STAT_MAX_ATTN * L * H;
  double *head_sink = sum + (int64_t)MODEL_STAT_HEAD_SINK * L * H;
  for (int l = 0; l < L; l++)
    for (int j = 0; j < H; j++) {
      const double *P = S->cache[l].at.p;
      double acc = 0.0, acc_max = 0.0;
      for (int p = 0; p < N; p++)
        for (int t = 1; t < T; t++) {
          const double *w = P + ((int64_t)p * T + t) * HT + j * T;
          double mx = w[0];
          for (int s = 1; s <= t; s++) mx = fmax(mx, w[s]);
          acc += w[0];
          acc_max += mx;
        }
      sum_sink[(int64_t)l * H + j] += acc;
      sum_max[(int64_t)l * H + j] += acc_max;
      head_sink[(int64_t)l * H + j] += acc;
    }
  return (double)N * (T - 1);
}

double lm_attn_map_sums(const cs_model *M, const cs_acts *A, int N, int l, double *map) {
  // P: (N·T) × (H·T) of block l, row p·T + t, column j·T + s
  const lm_acts *S = A->fam;
  int H = M->H, T = S->T, HT = H * T;
  const double *P = S->cache[l].at.p;
  for (int p = 0; p < N; p++)
    for (int t = 0; t < T; t++)
      for (int j = 0; j < H; j++) {
        const double *row = P + ((int64_t)p * T + t) * HT + (int64_t)j * T;
        for (int s = 0; s <= t; s++) map[(int64_t)t * T + s] += row[s];
      }
  return (double)N * H;
}

double lm_gate_sums(const cs_model *M, const cs_acts *A, int N, double *sum) {
  // G: (N·T) × n_gate of block l, row p·T + t (at.g: σ of the gate's input, any position g1..g5)
  const lm_acts *S = A->fam;
  int ng = M->n_gate, T = S->T;
  for (int l = 0; l < M->L; l++) {
    const double *G = S->cache[l].at.g;
    double later = 0.0, bos = 0.0;
    for (int p = 0; p < N; p++)
      for (int t = 0; t < T; t++) {
        const double *g = G + ((int64_t)p * T + t) * ng;
        double acc = 0.0;
        for (int j = 0; j < ng; j++) acc += g[j];
        if (t == 0) bos += acc;
        else later += acc;
      }
    sum[2 * l] += later;
    sum[2 * l + 1] += bos;
  }
  return (double)N * (T - 1) * ng;
}

/* ----------------------------------------------- extreme-token statistics */

void lm_extreme_collect(const cs_model *M, const cs_acts *A, int N, int l, double *abs_h,
                        double *norm_h, double *norm_v) {
  const lm_acts *S = A->fam;
  int d = M->d, T = S->T;
  const qkv_cache *at = &S->cache[l].at;
  qkv_view qkv = qkv_split(M, at->qkvz, at->gated); /* the values the block mixes */
  const double *H = S->x[l + 1], *V = qkv.v;
  int ldv = qkv.ldv;
  for (int64_t r = 0; r < (int64_t)N * T; r++) {
    double hh = 0.0, vv = 0.0;
    for (int k = 0; k < d; k++) {
      double h = H[r * d + k], v = V[r * ldv + k];
      abs_h[r * d + k] = fabs(h);
      hh += h * h;
      vv += v * v;
    }
    norm_h[r] = sqrt(hh);
    norm_v[r] = sqrt(vv);
  }
}

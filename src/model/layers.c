/* layers.c — the layer toolbox the model families share (layers.h): linear
 * layers, the input embedding, LayerNorm, the mlp block, the readout and
 * its loss, each a forward on values or second-order jets (one code path,
 * jet.h) and a backward on values.
 *
 * Notation: N points, C jet rows per point (1 in training), R = N·C rows,
 * m input dim, d width. All matrices are row-major; a weight W maps
 * in -> out and is out × in, so a linear layer is Y = X Wᵀ (+ b on value
 * rows). Built with -fno-math-errno (CMakeLists.txt): the loss's log and
 * exp vectorise. */
#include "layers.h"

#include "curvsweep/error.h"
#include "curvsweep/simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- caches */

int ln_cache_alloc(ln_cache *c, int64_t rows, int d) {
  int rc = CS_CALLOC(c->xhat, rows * d);
  if (!rc) rc = CS_CALLOC(c->rstd, rows);
  if (!rc) rc = CS_CALLOC(c->a, rows * d);
  return rc;
}

void ln_cache_free(ln_cache *c) { free(c->xhat), free(c->rstd), free(c->a); }

/* ------------------------------------------------------------- copies */

/* dst[r, 0:w] = src[r, 0:w] for rows rows (lds, ldd the row strides);
 * w = 3 (one head of the default 3 slots) as a constant the compiler
 * inlines, since a memcpy call per row of three costs more than the copy. */
void copy_cols(int64_t rows, int w, const double *restrict src, int lds, double *restrict dst,
               int ldd) {
  if (w == 3) {
    for (int64_t r = 0; r < rows; r++)
      for (int i = 0; i < 3; i++) dst[r * ldd + i] = src[r * lds + i];
  } else {
    for (int64_t r = 0; r < rows; r++)
      memcpy(dst + r * ldd, src + r * lds, sizeof(double) * (size_t)w);
  }
}

/* y += x, n entries. */
CS_VECTOR_CLONES void add_into(int64_t n, const double *restrict x, double *restrict y) {
  for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

/* Y[r, :] = b for R rows of w. */
/* (no-tree-loop-distribute-patterns: not a memcpy call per row) */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) CS_VECTOR_CLONES static void
fill_rows(int R, int w, const double *restrict b, double *restrict Y) {
  for (int r = 0; r < R; r++) {
    double *yr = Y + (int64_t)r * w;
    for (int j = 0; j < w; j++) yr[j] = b[j];
  }
}

/* -------------------------------------------------------------- linear */

/* Linear layer on jets: Y = X Wᵀ on all R rows, + b on the value rows.
 * X R × in, Y R × out; the weight W (out × in) as stored (trans_w 'T') or
 * transposed (in × out, trans_w 'N': linear_forward_t).
 * Values (C = 1): Y is first filled with b and the product added to it
 * (beta = 1): b + XWᵀ rounds once, as XWᵀ + b did, without a second pass
 * over Y. Jets: the product, then b on the value rows. */
static int linear_op(const cs_model *M, const jet_shape *js, int N, int in, int out,
                     const double *X, char trans_w, const double *W, const double *b, double *Y) {
  int R = N * js->C;
  la_mat y = VIEW(M, R, out, out, Y);
  double beta = 0.0;
  if (b && js->C == 1) {
    LA_PROF_BEGIN(t0);
    fill_rows(R, out, b, Y);
    LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
    beta = 1.0;
  }
  la_mat w = trans_w == 'T' ? VIEW(M, out, in, in, (double *)W)
                            : VIEW(M, in, out, out, (double *)W);
  CS_CHECK(la_gemm('N', trans_w, 1.0, VIEW(M, R, in, in, (double *)X), w, beta, y));
  if (b && js->C > 1) {
    LA_PROF_BEGIN(t0);
    la_add_row_vector(la_rows_strided(y, 0, js->C), b);
    LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  }
  return CS_OK;
}

int linear_forward(const cs_model *M, const jet_shape *js, int N, int in, int out,
                   const double *X, const double *W, const double *b, double *Y) {
  return linear_op(M, js, N, in, out, X, 'T', W, b, Y);
}

/* la_gemm runs X Wᵀ with a small W as X times a copy of Wᵀ (docs/DECISIONS.md,
 * "Small transposed products through a copy"); given that copy, the same
 * product without copying again. */
int linear_forward_t(const cs_model *M, const jet_shape *js, int N, int in, int out,
                     const double *X, const double *Wt, const double *b, double *Y) {
  return linear_op(M, js, N, in, out, X, 'N', Wt, b, Y);
}

/* Backward of Y = X Wᵀ + b on values. X N × in, dY N × out, W out × in.
 * dW += dYᵀ X;  db += Σ_rows dY;  dX = dY W (skipped when dX is NULL). */
int linear_backward(const cs_model *M, int N, int in, int out, const double *X, const double *W,
                    const double *dY, double *dW, double *db, double *dX, double beta_dx) {
  la_mat dy = VIEW(M, N, out, out, (double *)dY);
  CS_CHECK(la_gemm('T', 'N', 1.0, dy, VIEW(M, N, in, in, (double *)X), 1.0,
                   VIEW(M, out, in, in, dW)));
  if (db) {
    LA_PROF_BEGIN(t0);
    la_sum_rows(dy, db);
    LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  }
  if (dX)
    CS_CHECK(la_gemm('N', 'N', 1.0, dy, VIEW(M, out, in, in, (double *)W), beta_dx,
                     VIEW(M, N, in, in, dX)));
  return CS_OK;
}

/* Embedding forward: h_0 = x W_eᵀ + b_e on jets.
 * The input jet of point p: value x_p, ∂x/∂x_a = e_a, second derivatives 0.
 * x N × m; xjet R × m; h0 R × d. */
int embedding_forward(const cs_model *M, const jet_shape *js, int N, const double *x,
                      const double *W, const double *b, double *xjet, double *h0) {
  int C = js->C, m = M->m;
  if (C == 1) /* values: the jet is x itself */
    return linear_forward(M, js, N, m, M->d, x, W, b, h0);
  memset(xjet, 0, sizeof(double) * (size_t)N * C * m);
  for (int p = 0; p < N; p++) {
    double *xp = xjet + (int64_t)p * C * m;
    memcpy(xp, x + (int64_t)p * m, sizeof(double) * m);
    for (int a = 0; a < m; a++) xp[(1 + a) * m + a] = 1.0;
  }
  return linear_forward(M, js, N, m, M->d, xjet, W, b, h0);
}

/* ----------------------------------------------------------- LayerNorm */

/* LayerNorm on values (C = 1) of NR rows at x (NR a constant: 4, or 1 for
 * the last rows), the operations of the jet path below in the same order
 * per row, so the same bits; the rows' serial sums interleaved (NR chains
 * at once instead of one):
 *   μ = (Σ_j x_j)/d;  c = x − μ;  v = (Σ_j c_j²)/d + ε;  r = 1/√v
 *   x̂ = c r;  a = x̂ ⊙ γ + β */
static inline __attribute__((always_inline)) void
layernorm_rows(int NR, int d, const double *restrict x, const double *restrict gamma,
               const double *restrict beta, double *restrict xhat, double *restrict rstd,
               double *restrict a) {
  double mu[4] = {0}, var[4] = {0};
  for (int j = 0; j < d; j++)
    for (int i = 0; i < NR; i++) mu[i] += x[(int64_t)i * d + j];
  for (int i = 0; i < NR; i++) mu[i] /= d;
  for (int j = 0; j < d; j++)
    for (int i = 0; i < NR; i++) {
      double c = x[(int64_t)i * d + j] - mu[i];
      xhat[(int64_t)i * d + j] = c;
      var[i] += c * c;
    }
  for (int i = 0; i < NR; i++) {
    var[i] /= d;
    var[i] += LN_EPS;
    rstd[i] = 1.0 / sqrt(var[i]);
  }
  for (int i = 0; i < NR; i++)
    for (int j = 0; j < d; j++) {
      double xh = xhat[(int64_t)i * d + j] * rstd[i];
      xhat[(int64_t)i * d + j] = xh;
      a[(int64_t)i * d + j] = xh * gamma[j];
      a[(int64_t)i * d + j] += beta[j];
    }
}

/* LayerNorm on R value rows of width d, 4 rows at a time (layernorm_rows). */
CS_VECTOR_CLONES static void layernorm_values(int R, int d, const double *x, const double *gamma,
                                              const double *beta, const ln_cache *c) {
  int r = 0;
  for (; r + 4 <= R; r += 4)
    layernorm_rows(4, d, x + (int64_t)r * d, gamma, beta, c->xhat + (int64_t)r * d, c->rstd + r,
                   c->a + (int64_t)r * d);
  for (; r < R; r++)
    layernorm_rows(1, d, x + (int64_t)r * d, gamma, beta, c->xhat + (int64_t)r * d, c->rstd + r,
                   c->a + (int64_t)r * d);
}

/* Pre-LayerNorm forward on jets, x R × d -> a R × d:
 *   μ = mean_j x_j;  c = x − μ;  v = mean_j c_j²;  r = (v + ε)^{-1/2}
 *   x̂ = c r;  a = x̂ ⊙ γ + β
 * mean and centring are linear (all jet rows); c² is a Leibniz product;
 * r is the unary rule of t^{-1/2}; x̂ = c r a group product (G = 1).
 * Values (C = 1): layernorm_values, the same operations fused. */
void layernorm_forward(const cs_model *M, const jet_shape *js, int N, const double *x,
                       const double *gamma, const double *beta, const ln_cache *c, double *tmp) {
  int d = M->d, R = N * js->C;
  if (js->C == 1) {
    layernorm_values(R, d, x, gamma, beta, c);
    return;
  }
  double *mu = tmp, *var = tmp + R;
  jet_group_sum(R, 1, d, x, mu);
  for (int r = 0; r < R; r++) {
    double mr = mu[r] / d;
    for (int j = 0; j < d; j++) c->xhat[(int64_t)r * d + j] = x[(int64_t)r * d + j] - mr;
  }
  jet_mul(js, N, d, c->xhat, c->xhat, c->a); /* c² into a (scratch) */
  jet_group_sum(R, 1, d, c->a, var);
  for (int r = 0; r < R; r++) var[r] /= d;
  jet_add_value_scalar(js, N, 1, var, LN_EPS);
  jet_unary(js, JET_RSQRT, N, 1, var, c->rstd);
  jet_mul_group(js, N, 1, d, c->xhat, c->rstd, c->xhat);
  for (int r = 0; r < R; r++)
    for (int j = 0; j < d; j++) c->a[(int64_t)r * d + j] = c->xhat[(int64_t)r * d + j] * gamma[j];
  la_add_row_vector(la_rows_strided(VIEW(M, R, d, d, c->a), 0, js->C), beta);
}

/* LayerNorm backward of NR rows (a constant: 4, or 1 for the last rows),
 * dγ and dβ summed over the rows in order and each row's two sums in
 * order (the same bits as one row at a time), NR rows' sums interleaved:
 *   dγ += Σ da ⊙ x̂;  dβ += Σ da;  dx̂ = da ⊙ γ
 *   dx = r (dx̂ − mean(dx̂) − x̂ mean(dx̂ ⊙ x̂)) */
static inline __attribute__((always_inline)) void
layernorm_back_rows(int NR, int d, const double *restrict xh, const double *restrict rstd,
                    const double *restrict gamma, const double *restrict da,
                    double *restrict dgamma, double *restrict dbeta, double *restrict dx) {
  double m1[4] = {0}, m2[4] = {0};
  for (int j = 0; j < d; j++)
    for (int i = 0; i < NR; i++) {
      double dai = da[(int64_t)i * d + j], xhi = xh[(int64_t)i * d + j], dxh = dai * gamma[j];
      dgamma[j] += dai * xhi;
      dbeta[j] += dai;
      m1[i] += dxh;
      m2[i] += dxh * xhi;
    }
  for (int i = 0; i < NR; i++) m1[i] /= d, m2[i] /= d;
  for (int i = 0; i < NR; i++)
    for (int j = 0; j < d; j++) {
      int64_t e = (int64_t)i * d + j;
      dx[e] = rstd[i] * (da[e] * gamma[j] - m1[i] - xh[e] * m2[i]);
    }
}

/* LayerNorm backward on values, N × d, 4 rows at a time (layernorm_back_rows):
 *   dγ += Σ da ⊙ x̂;  dβ += Σ da;  dx̂ = da ⊙ γ
 *   dx = r (dx̂ − mean(dx̂) − x̂ mean(dx̂ ⊙ x̂)) */
CS_VECTOR_CLONES void layernorm_backward(const cs_model *M, int N, const ln_cache *c,
                                         const double *gamma, const double *da, double *dgamma,
                                         double *dbeta, double *dx) {
  int d = M->d, r = 0;
  for (; r + 4 <= N; r += 4)
    layernorm_back_rows(4, d, c->xhat + (int64_t)r * d, c->rstd + r, gamma, da + (int64_t)r * d,
                        dgamma, dbeta, dx + (int64_t)r * d);
  for (; r < N; r++)
    layernorm_back_rows(1, d, c->xhat + (int64_t)r * d, c->rstd + r, gamma, da + (int64_t)r * d,
                        dgamma, dbeta, dx + (int64_t)r * d);
}

/* ----------------------------------------------------------------- mlp */

/* mlp block forward on jets, a R × d -> y R × d:
 *   t = tanh(a W_1ᵀ + b_1);  y = t W_2ᵀ + b_2. */
int mlp_forward(const cs_model *M, const jet_shape *js, int N, const double *a, const double *W1,
                const double *b1, const double *W2, const double *b2, double *t, double *y) {
  CS_CHECK(linear_forward(M, js, N, M->d, M->d, a, W1, b1, t));
  LA_PROF_BEGIN(t0);
  jet_unary(js, JET_TANH, N, M->d, t, t);
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  return linear_forward(M, js, N, M->d, M->d, t, W2, b2, y);
}

/* mlp backward on values: dt = dy W_2;  dz = dt ⊙ (1 − t²);  da = dz W_1. */
int mlp_backward(cs_model *M, int N, const double *a, const double *t, int64_t W1, int64_t b1,
                 int64_t W2, int64_t b2, const double *dy, double *dt, double *dz, double *da) {
  double *W = M->params, *G = M->grads;
  int d = M->d;
  CS_CHECK(linear_backward(M, N, d, d, t, W + W2, dy, G + W2, G + b2, dt, 0.0));
  LA_PROF_BEGIN(t0);
  for (int64_t i = 0; i < (int64_t)N * d; i++) dz[i] = dt[i] * (1.0 - t[i] * t[i]);
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  return linear_backward(M, N, d, d, a, W + W1, dz, G + W1, G + b1, da, 0.0);
}

/* ------------------------------------------------ gate, attention output */

/* The gate on N jet points (values: C = 1): G = σ(Z + b_g) (b_g on value
 * rows), then out = G ⊙ pre (ng = d) or out_j = G_j pre_j (ng = H, one
 * scalar per head and token). Z (ld ldz) ng columns; G R × ng; pre, out R × d. */
void gate_forward(const cs_model *M, const jet_shape *js, int N, const double *Z, int ldz,
                  const double *bg, double *G, const double *pre, double *out) {
  int ng = M->n_gate, C = js->C;
  LA_PROF_BEGIN(t0);
  if (C == 1 && ng == M->d) {
    jet_sigmoid_gate_values(N, ng, Z, ldz, bg, G, pre, out); /* σ(Z + b_g) and ⊙ in one pass */
  } else {
    for (int64_t r = 0, k = 0; r < (int64_t)N * C; r++, k = k + 1 == C ? 0 : k + 1) {
      const double *zr = Z + r * ldz; /* k = r mod C: b_g on value rows */
      double *gr = G + r * ng;
      for (int j = 0; j < ng; j++) gr[j] = zr[j] + (k == 0 ? bg[j] : 0.0);
    }
    jet_unary(js, JET_SIGMOID, N, ng, G, G);
    if (ng == M->d) jet_mul(js, N, ng, G, pre, out);
    else jet_mul_group(js, N, M->H, M->dh, pre, G, out);
  }
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
}

/* The elementwise gate's backward (ng = d): one vector loop per row. */
CS_VECTOR_CLONES static void gate_backward_elementwise(int64_t rows, int d,
                                                       const double *restrict dout,
                                                       const double *restrict pre,
                                                       const double *restrict G,
                                                       double *restrict dpre, int ldp,
                                                       double *restrict dz, int ldz) {
  for (int64_t r = 0; r < rows; r++) {
    const double *dr = dout + r * d, *pr = pre + r * d, *gr = G + r * d;
    double *dpr = dpre + r * ldp, *dzr = dz + r * ldz;
#pragma omp simd
    for (int k = 0; k < d; k++) {
      dpr[k] = dr[k] * gr[k];
      dzr[k] = dr[k] * pr[k] * gr[k] * (1.0 - gr[k]);
    }
  }
}

void gate_backward(const cs_model *M, int64_t rows, const double *dout, const double *pre,
                   const double *G, double *dpre, int ldp, double *dz, int ldz) {
  int d = M->d, H = M->H, dh = M->dh;
  LA_PROF_BEGIN(t0);
  if (M->n_gate == d) {
    gate_backward_elementwise(rows, d, dout, pre, G, dpre, ldp, dz, ldz);
  } else {
    for (int64_t r = 0; r < rows; r++) { /* per head: ⟨dout_j, pre_j⟩ G_j(1 − G_j) */
      const double *dr = dout + r * d, *pr = pre + r * d, *gr = G + r * H;
      double *dpr = dpre + r * ldp, *dzr = dz + r * ldz;
      for (int j = 0; j < H; j++) {
        double acc = 0.0;
        for (int k = j * dh; k < (j + 1) * dh; k++) {
          acc += dr[k] * pr[k];
          dpr[k] = dr[k] * gr[j];
        }
        dzr[j] = acc * gr[j] * (1.0 - gr[j]);
      }
    }
  }
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
}

int attn_out_forward(const cs_model *M, const jet_shape *js, int N, const attn_out *a,
                     double *Y) {
  const double *W = M->params;
  int d = M->d, ng = M->n_gate;
  cs_gate_pos gp = a->gate;
  /* g1: U = G ⊙ O, else U = O */
  const double *U = a->o;
  if (ng && gp == GATE_G1) {
    gate_forward(M, js, N, a->z, a->ldz, W + a->bg, a->g, a->o, a->gated);
    U = a->gated;
  }
  /* Y = U W_oᵀ + b_o; g5: pre = that, Y = G ⊙ pre */
  if (ng && gp == GATE_G5) {
    CS_CHECK(linear_forward(M, js, N, d, d, U, W + a->Wo, W + a->bo, a->pre));
    gate_forward(M, js, N, a->z, a->ldz, W + a->bg, a->g, a->pre, Y);
  } else {
    CS_CHECK(linear_forward(M, js, N, d, d, U, W + a->Wo, W + a->bo, Y));
  }
  return CS_OK;
}

int attn_out_backward(cs_model *M, int N, const attn_out *a, const double *dY, double *dgated,
                      double *du, double *dz, const double **dO) {
  int d = M->d, ng = M->n_gate;
  cs_gate_pos gp = a->gate;
  /* g5: Y = G ⊙ pre:  dpre = dY ⊙ G into dgated, dZ */
  if (ng && gp == GATE_G5) {
    gate_backward(M, N, dY, a->pre, a->g, dgated, d, dz, a->ldz);
    dY = dgated;
  }
  /* Y = U W_oᵀ + b_o:  dW_o += dYᵀ U;  db_o += Σ dY;  dU = dY W_o */
  const double *U = ng && gp == GATE_G1 ? a->gated : a->o;
  CS_CHECK(linear_backward(M, N, d, d, U, M->params + a->Wo, dY, M->grads + a->Wo,
                           M->grads + a->bo, du, 0.0));
  /* g1: U = G ⊙ O:  dO = dU ⊙ G into dgated, dZ */
  *dO = du;
  if (ng && gp == GATE_G1) {
    gate_backward(M, N, du, a->o, a->g, dgated, d, dz, a->ldz);
    *dO = dgated;
  }
  return CS_OK;
}

/* ------------------------------------- attention input of token families */

int qkv_cache_alloc(const cs_model *M, qkv_cache *c, int64_t rows, int T, int ln) {
  int64_t d = M->d, ng = M->n_gate;
  int rc = ln ? ln_cache_alloc(&c->ln, rows, M->d) : CS_OK;
  if (!rc) rc = CS_CALLOC(c->qkvz, rows * (3 * d + ng));
  if (!rc) rc = CS_CALLOC(c->p, rows * M->H * T);
  if (!rc) rc = CS_CALLOC(c->o, rows * d);
  if (!rc && ng) rc = CS_CALLOC(c->g, rows * ng);
  if (!rc && ng) rc = CS_CALLOC(c->pre, rows * d);
  if (!rc && ng) rc = CS_CALLOC(c->gated, rows * d);
  return rc;
}

void qkv_cache_free(qkv_cache *c) {
  ln_cache_free(&c->ln);
  free(c->qkvz), free(c->g), free(c->pre), free(c->gated), free(c->p), free(c->o);
}

/* The column offset in [Q | K | V | Z] of the tensor a g2, g3 or g4 gate
 * multiplies; -1 when no gate sits there. */
static int qkv_gated_col(const cs_model *M) {
  cs_gate_pos gp = M->cfg.gate;
  if (!M->n_gate) return -1;
  return gp == GATE_G4 ? 0 : gp == GATE_G3 ? M->d : gp == GATE_G2 ? 2 * M->d : -1;
}

qkv_view qkv_split(const cs_model *M, double *qkvz, double *gated) {
  int d = M->d, ldq = 3 * d + M->n_gate, col = qkv_gated_col(M);
  qkv_view v = {qkvz, qkvz + d, qkvz + 2 * d, ldq, ldq, ldq};
  if (col == 0) v.q = gated, v.ldq = d;
  if (col == d) v.k = gated, v.ldk = d;
  if (col == 2 * d) v.v = gated, v.ldv = d;
  return v;
}

int qkv_grads_alloc(const cs_model *M, qkv_grads *g, int64_t rows) {
  int64_t d = M->d;
  int rc = CS_CALLOC(g->dx_a, rows * d);
  if (!rc) rc = CS_CALLOC(g->dx_b, rows * d);
  if (!rc) rc = CS_CALLOC(g->da, rows * d);
  if (!rc) rc = CS_CALLOC(g->du, rows * d);
  if (!rc) rc = CS_CALLOC(g->dgated, rows * d);
  if (!rc) rc = CS_CALLOC(g->dqkvz, rows * (3 * d + M->n_gate));
  return rc;
}

void qkv_grads_free(qkv_grads *g) {
  free(g->dx_a), free(g->dx_b), free(g->da), free(g->du), free(g->dgated), free(g->dqkvz);
}

int qkv_forward_t(const cs_model *M, const jet_shape *js, int N, const double *a, int64_t Wq,
                  const double *wt, int64_t bg, qkv_cache *c) {
  const double *W = M->params;
  int d = M->d, ldq = 3 * d + M->n_gate, col = qkv_gated_col(M);
  /* [Q | K | V | Z] = A [W_q; W_k; W_v; W_g]ᵀ: one product over all rows */
  if (wt) CS_CHECK(linear_forward_t(M, js, N, d, ldq, a, wt, NULL, c->qkvz));
  else CS_CHECK(linear_forward(M, js, N, d, ldq, a, W + Wq, NULL, c->qkvz));
  /* g2, g3, g4: pre = the gated tensor's columns;  gated = G ⊙ pre */
  if (col >= 0) {
    copy_cols((int64_t)N * js->C, d, c->qkvz + col, ldq, c->pre, d);
    gate_forward(M, js, N, c->qkvz + 3 * d, ldq, W + bg, c->g, c->pre, c->gated);
  }
  return CS_OK;
}

int qkv_forward(const cs_model *M, const jet_shape *js, int N, const double *a, int64_t Wq,
                int64_t bg, qkv_cache *c) {
  return qkv_forward_t(M, js, N, a, Wq, NULL, bg, c);
}

int qkv_backward(cs_model *M, int N, const double *a, const qkv_cache *c, int64_t Wq, int64_t bg,
                 const qkv_grads *g, double *da) {
  double *W = M->params, *Gr = M->grads, *dqkvz = g->dqkvz;
  int d = M->d, ng = M->n_gate, ldq = 3 * d + ng, col = qkv_gated_col(M);
  /* g2, g3, g4: gated = G ⊙ pre:  dpre into the tensor's columns, dZ */
  if (col >= 0) gate_backward(M, N, g->dgated, c->pre, c->g, dqkvz + col, ldq, dqkvz + 3 * d, ldq);
  /* dW += dQKVZᵀ A (one product);  db_g += Σ dZ;  dA = dQKVZ [W_q; W_k; W_v; W_g] */
  la_mat dm = VIEW(M, N, ldq, ldq, dqkvz);
  CS_CHECK(la_gemm('T', 'N', 1.0, dm, VIEW(M, N, d, d, (double *)a), 1.0,
                   VIEW(M, ldq, d, d, Gr + Wq)));
  LA_PROF_BEGIN(t0);
  if (ng) la_sum_rows(la_cols(dm, 3 * d, ng), Gr + bg);
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  return la_gemm('N', 'N', 1.0, dm, VIEW(M, ldq, d, d, W + Wq), 0.0, VIEW(M, N, d, d, da));
}

/* The output sublayer over the caches: Z the last columns of [Q | K | V | Z]. */
static attn_out qkv_attn_out(const cs_model *M, const qkv_cache *c, int64_t Wo, int64_t bo,
                             int64_t bg) {
  int d = M->d;
  return (attn_out){c->qkvz + 3 * d, 3 * d + M->n_gate, c->g, c->o, c->gated, c->pre,
                    Wo, bo, bg, M->cfg.gate};
}

int qkv_out_forward(const cs_model *M, const jet_shape *js, int N, const qkv_cache *c, int64_t Wo,
                    int64_t bo, int64_t bg, double *Y) {
  attn_out ao = qkv_attn_out(M, c, Wo, bo, bg);
  return attn_out_forward(M, js, N, &ao, Y);
}

int qkv_out_backward(cs_model *M, int N, const qkv_cache *c, int64_t Wo, int64_t bo, int64_t bg,
                     const double *dY, const qkv_grads *g, const double **dO) {
  attn_out ao = qkv_attn_out(M, c, Wo, bo, bg);
  return attn_out_backward(M, N, &ao, dY, g->dgated, g->du, g->dqkvz + 3 * M->d, dO);
}

/* ------------------------------------------------------ readout, loss */

void readout_layout(cs_model *M, int n_classes) {
  M->readout_W = model_add_tensor(M, "readout/W", n_classes, M->d, 1);
  M->readout_b = model_add_tensor(M, "readout/b", 1, n_classes, 0);
  M->n_classes = M->n_logits = n_classes;
}

/* Readout on values: logits = h W_rᵀ + b_r, h N × d, logits N × n_classes;
 * on jets nothing (the geometry reads h). */
int readout_forward(const cs_model *M, const jet_shape *js, int N, const double *h,
                    double *logits) {
  if (js->C != 1) return CS_OK;
  return linear_forward(M, js, N, M->d, M->n_classes, h, M->params + M->readout_W,
                        M->params + M->readout_b, logits);
}

/* Readout backward: dW_r += dlogitsᵀ h;  db_r += Σ dlogits;  dh = dlogits W_r. */
int readout_backward(cs_model *M, int N, const double *h, const double *dlogits, double *dh) {
  double *G = M->grads;
  return linear_backward(M, N, M->d, M->n_classes, h, M->params + M->readout_W, dlogits,
                         G + M->readout_W, G + M->readout_b, dh, 0.0);
}

/* Softmax cross-entropy per row, two classes, vectorised across rows:
 *   ℓ_r = −(z_y − max − log Σ_k exp(z_k − max));  dz = (softmax(z) − onehot(y)) / N
 * logits, dlogits N × 2; ℓ N. */
_Static_assert(N_CLASSES == 2, "loss_rows is written for two classes");
CS_VECTOR_CLONES static void loss_rows(int N, const double *restrict logits, const int *restrict y,
                                       double *restrict dlogits, double *restrict ell) {
#pragma omp simd
  for (int r = 0; r < N; r++) {
    double z0 = logits[2 * r], z1 = logits[2 * r + 1];
    double mx = z1 > z0 ? z1 : z0;
    double e0 = exp(z0 - mx), e1 = exp(z1 - mx), sum = e0 + e1; /* each exp once */
    ell[r] = -((y[r] ? z1 : z0) - mx - log(sum));
    dlogits[2 * r] = (e0 / sum - (y[r] == 0 ? 1.0 : 0.0)) / N;
    dlogits[2 * r + 1] = (e1 / sum - (y[r] == 1 ? 1.0 : 0.0)) / N;
  }
}

/* Softmax cross-entropy: p = softmax(logits), L = −mean log p_y,
 * dL/dlogits = (p − onehot(y)) / N. The per-row terms in a vector pass,
 * then their sum in row order (the same bits at every vector width). */
double softmax_loss(cs_acts *A, int N, const int *y, int *n_correct) {
  LA_PROF_BEGIN(t0);
  loss_rows(N, A->logits, y, A->dlogits, A->tmp);
  double loss = 0.0;
  int correct = 0;
  for (int r = 0; r < N; r++) {
    const double *z = A->logits + (int64_t)r * N_CLASSES;
    loss += A->tmp[r];
    correct += (z[1] > z[0] ? 1 : 0) == y[r]; /* argmax, the first on a tie */
  }
  if (n_correct) *n_correct = correct;
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  return loss / N;
}

double mse_loss(cs_acts *A, int N, const double *y) {
  double sum = 0.0;
  for (int p = 0; p < N; p++) {
    double r = A->logits[p] - y[p];
    sum += r * r;
    A->dlogits[p] = 2.0 * r / N;
  }
  return sum / N;
}

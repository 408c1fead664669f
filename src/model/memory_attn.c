/* memory_attn.c — the memory family's attention layer (docs/MODELS.md,
 * "Models (the memory family)"): queries against n learned key slots, a
 * softmax per head, the weighted sum of n learned value slots, the gate,
 * and the output map.
 *
 * One code path for values (C = 1: training, evaluation) and second-order
 * jets (C > 1: the geometry): every product is a la_gemm over all N·C
 * rows, the nonlinear pieces go through the jet rules (jet.h). The
 * backward (values only) runs the gate and the softmax backward as
 * element-wise passes compiled for the CPU's vector width (simd.h).
 *
 * Notation: N points, C jet rows per point, R = N·C rows, d width, n slots,
 * H heads, dh = d/H, n_gate = d (gated), H (gated-headwise) or 0. */
#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/simd.h"
#include "jet.h"
#include "model_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------- value-path element-wise */

/* The gate backward on values, one pass per row r. du, o N × d;
 * g N × n_gate; do N × d and dz (N × n_gate, ld ldz) written;
 * db_g accumulated (the rows in order, as a column sum of dz would):
 *   n_gate = d:  do = du ⊙ g;  dz = du ⊙ o ⊙ g(1 − g)
 *   n_gate = H:  do_j = du_j g_j;  dz_j = ⟨du_j, o_j⟩ g_j(1 − g_j) */
CS_VECTOR_CLONES static void gate_backward_values(int N, int H, int dh, int ng,
                                                  const double *restrict du,
                                                  const double *restrict g,
                                                  const double *restrict o, double *restrict dob,
                                                  double *restrict dz, int ldz,
                                                  double *restrict dbg) {
  int d = H * dh;
  for (int r = 0; r < N; r++) {
    const double *dur = du + (int64_t)r * d, *orow = o + (int64_t)r * d;
    double *dor = dob + (int64_t)r * d, *dzr = dz + (int64_t)r * ldz;
    if (ng == d) {
      const double *gr = g + (int64_t)r * d;
      for (int k = 0; k < d; k++) {
        double gk = gr[k];
        dzr[k] = dur[k] * orow[k] * gk * (1.0 - gk);
        dor[k] = dur[k] * gk;
        dbg[k] += dzr[k];
      }
    } else {
      for (int j = 0; j < H; j++) {
        double gj = g[(int64_t)r * H + j], acc = 0.0;
        for (int k = 0; k < dh; k++) {
          acc += dur[j * dh + k] * orow[j * dh + k];
          dor[j * dh + k] = dur[j * dh + k] * gj;
        }
        dzr[j] = acc * gj * (1.0 - gj);
        dbg[j] += dzr[j];
      }
    }
  }
}

/* y += x, n entries. */
CS_VECTOR_CLONES static void add_into(long n, const double *restrict x, double *restrict y) {
  for (long i = 0; i < n; i++) y[i] += x[i];
}

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
static int score_map_forward(const cs_model *M, int l, double *pw) {
  const layer_offsets *P = &M->layers[l];
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

/* Memory attention (+ gate) forward on jets, a R × d -> y R × d:
 *   [z | s] = a [W_g; P]ᵀ                       R × (n_gate + H·n), one product
 *             (rows of ld memory_attn_score_ld: each row starts on a line)
 *             (s_j = q_j K_jᵀ/√dh with q = a W_qᵀ: score_map_forward)
 *   α_j = softmax(s_j)                          R × n   (jet softmax)
 *   o_j = α_j U_j                               R × dh  (linear in α)
 *   gated:          u = σ(z + b_g) ⊙ o          (unary + Leibniz)
 *   gated-headwise: u_j = σ(z_j + b_{g,j}) o_j  (group product)
 *   y = u W_oᵀ + b_o */
int memory_attn_forward(const cs_model *M, const jet_shape *js, int N, int l, const double *a,
                        layer_cache *c, double *y) {
  const layer_offsets *P = &M->layers[l];
  const double *W = M->params;
  int d = M->d, n = M->n, H = M->H, dh = M->dh, R = N * js->C, Hn = H * n, ng = M->n_gate;
  int lds = memory_attn_score_ld(M);
  /* one product for the gate pre-activation and the scores (they share a) */
  CS_CHECK(score_map_forward(M, l, c->pw));
  CS_CHECK(la_gemm('N', 'T', 1.0, VIEW(M, R, d, d, (double *)a), VIEW(M, ng + Hn, d, d, c->pw),
                   0.0, VIEW(M, R, ng + Hn, lds, c->sz)));
  LA_PROF_BEGIN(t0);
  model_copy_cols(R, Hn, c->sz + ng, lds, c->alpha, Hn); /* the scores into their own R × H·n array */
  jet_softmax_groups(js, N, H, n, c->alpha);
  LA_PROF_END(t0, LA_PROF_SOFTMAX);
  la_mat alpha = VIEW(M, R, Hn, Hn, c->alpha), o = VIEW(M, R, d, d, c->o);
  la_mat U = VIEW(M, n, d, d, (double *)W + P->U);
  for (int j = 0; j < H; j++)
    CS_CHECK(la_gemm('N', 'N', 1.0, la_cols(alpha, j * n, n), la_cols(U, j * dh, dh), 0.0,
                     la_cols(o, j * dh, dh)));
  const double *u = c->o;
  if (ng) {
    LA_PROF_BEGIN(t1);
    const double *bg = W + P->bg;
    if (js->C == 1 && ng == d) {
      /* g = σ(z + b_g), u = g ⊙ o: one pass, z read where the product left it */
      jet_sigmoid_gate_values(N, d, c->sz, lds, bg, c->g, c->o, c->u);
    } else {
      /* g ← z (+ b_g on value rows), gathered into its own R × n_gate array */
      for (int r = 0, k = 0; r < R; r++, k = k + 1 == js->C ? 0 : k + 1) { /* k = r mod C */
        const double *zr = c->sz + (int64_t)r * lds;
        double *gr = c->g + (int64_t)r * ng;
        if (k == 0)
          for (int j = 0; j < ng; j++) gr[j] = zr[j] + bg[j];
        else
          memcpy(gr, zr, sizeof(double) * (size_t)ng);
      }
      /* g = σ(g);  u = g ⊙ o (gated) or u_j = g_j o_j (headwise) */
      jet_unary(js, JET_SIGMOID, N, ng, c->g, c->g);
      if (ng == d)
        jet_mul(js, N, d, c->g, c->o, c->u);
      else
        jet_mul_group(js, N, H, dh, c->o, c->g, c->u);
    }
    LA_PROF_END(t1, LA_PROF_ELEMENTWISE);
    u = c->u;
  }
  return model_linear_forward(M, js, N, d, d, u, W + P->Wo, W + P->bo, y);
}

/* Attention backward on values. dy N × d -> da N × d (overwritten).
 *   y = u W_oᵀ + b_o:  dW_o += dyᵀ u;  db_o += Σ dy;  du = dy W_o
 *   gate:              do, dz, db_g (gate_backward_values)
 *   o_j = α_j U_j:     dα_j = do_j U_jᵀ;  dU_j += α_jᵀ do_j
 *   softmax:           ds = α ⊙ (dα − ⟨α, dα⟩)
 *   [z | s] = a [W_g; P]ᵀ:  d[W_g; P] = [dz | ds]ᵀ a;  da = [dz | ds] [W_g; P]
 *   P_j = K_j W_{q,j}/√dh:  dK_j += dP_j W_{q,j}ᵀ/√dh;  dW_{q,j} += K_jᵀ dP_j/√dh
 * dz and ds share one array (the layout of [z | s]), so each of d[W_g; P]
 * and da is one product, as z and s were. */
int memory_attn_backward(cs_model *M, cs_acts *A, int N, int l, const double *a,
                         const double *dy, double *da) {
  const layer_offsets *P = &M->layers[l];
  const layer_cache *c = &A->cache[l];
  double *W = M->params, *G = M->grads;
  int d = M->d, n = M->n, H = M->H, dh = M->dh, Hn = H * n, ng = M->n_gate;
  int lds = memory_attn_score_ld(M);
  CS_CHECK(model_linear_backward(M, N, d, d, ng ? c->u : c->o, W + P->Wo, dy, G + P->Wo,
                                 G + P->bo, A->du, 0.0));
  double *dob = A->du; /* dL/do */
  if (ng) {
    LA_PROF_BEGIN(t0);
    gate_backward_values(N, H, dh, ng, A->du, c->g, c->o, A->dob, A->dsz, lds, G + P->bg);
    LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
    dob = A->dob;
  }
  la_mat alpha = VIEW(M, N, Hn, Hn, c->alpha), dalpha = VIEW(M, N, Hn, Hn, A->dalpha);
  la_mat dO = VIEW(M, N, d, d, dob);
  la_mat U = VIEW(M, n, d, d, W + P->U), dU = VIEW(M, n, d, d, G + P->U);
  for (int j = 0; j < H; j++) {
    CS_CHECK(la_gemm('N', 'T', 1.0, la_cols(dO, j * dh, dh), la_cols(U, j * dh, dh), 0.0,
                     la_cols(dalpha, j * n, n)));
    CS_CHECK(la_gemm('T', 'N', 1.0, la_cols(alpha, j * n, n), la_cols(dO, j * dh, dh), 1.0,
                     la_cols(dU, j * dh, dh)));
  }
  LA_PROF_BEGIN(t1);
  softmax_backward_values((long)N * H, n, c->alpha, A->dalpha);
  model_copy_cols(N, Hn, A->dalpha, Hn, A->dsz + ng, lds); /* ds beside dz */
  LA_PROF_END(t1, LA_PROF_SOFTMAX);
  la_mat dsz = VIEW(M, N, ng + Hn, lds, A->dsz);
  CS_CHECK(la_gemm('T', 'N', 1.0, dsz, VIEW(M, N, d, d, (double *)a), 0.0,
                   VIEW(M, ng + Hn, d, d, A->dpw)));
  if (ng) {
    LA_PROF_BEGIN(t2);
    add_into(ng * d, A->dpw, G + P->Wg); /* dW_g += the W_g rows of d[W_g; P] */
    LA_PROF_END(t2, LA_PROF_ELEMENTWISE);
  }
  double scale = 1.0 / sqrt((double)dh);
  la_mat K = VIEW(M, n, d, d, W + P->K), dK = VIEW(M, n, d, d, G + P->K);
  for (int j = 0; j < H; j++) {
    la_mat dPj = VIEW(M, n, d, d, A->dpw + (int64_t)(ng + j * n) * d);
    CS_CHECK(la_gemm('N', 'T', scale, dPj, VIEW(M, dh, d, d, W + P->Wq + (int64_t)j * dh * d),
                     1.0, la_cols(dK, j * dh, dh)));
    CS_CHECK(la_gemm('T', 'N', scale, la_cols(K, j * dh, dh), dPj, 1.0,
                     VIEW(M, dh, d, d, G + P->Wq + (int64_t)j * dh * d)));
  }
  return la_gemm('N', 'N', 1.0, dsz, VIEW(M, ng + Hn, d, d, c->pw), 0.0, VIEW(M, N, d, d, da));
}

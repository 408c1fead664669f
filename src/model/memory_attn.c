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
 * g N × n_gate; do N × d and dz = dqz[:, d:d+n_gate] (ld ldq) written;
 * db_g accumulated (the rows in order, as a column sum of dz would):
 *   n_gate = d:  do = du ⊙ g;  dz = du ⊙ o ⊙ g(1 − g)
 *   n_gate = H:  do_j = du_j g_j;  dz_j = ⟨du_j, o_j⟩ g_j(1 − g_j) */
CS_VECTOR_CLONES static void gate_backward_values(int N, int H, int dh, int ng,
                                                  const double *restrict du,
                                                  const double *restrict g,
                                                  const double *restrict o, double *restrict dob,
                                                  double *restrict dz, int ldq,
                                                  double *restrict dbg) {
  int d = H * dh;
  for (int r = 0; r < N; r++) {
    const double *dur = du + (int64_t)r * d, *orow = o + (int64_t)r * d;
    double *dor = dob + (int64_t)r * d, *dzr = dz + (int64_t)r * ldq;
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

/* --------------------------------------------------------------- layer */

/* Memory attention (+ gate) forward on jets, a R × d -> y R × d:
 *   [q | z] = a [W_q; W_g]ᵀ                     R × (d + n_gate), one product
 *   s_j = q_j K_jᵀ / √dh  per head j            R × n   (linear in q)
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
  int ldq = d + ng;
  /* one product for the queries and the gate pre-activation (they share a) */
  CS_CHECK(model_linear_forward(M, js, N, d, ldq, a, W + P->Wq, NULL, c->qz));
  la_mat q = la_cols(VIEW(M, R, ldq, ldq, c->qz), 0, d), alpha = VIEW(M, R, Hn, Hn, c->alpha);
  la_mat K = VIEW(M, n, d, d, (double *)W + P->K), U = VIEW(M, n, d, d, (double *)W + P->U);
  la_mat o = VIEW(M, R, d, d, c->o);
  for (int j = 0; j < H; j++)
    CS_CHECK(la_gemm('N', 'T', 1.0 / sqrt((double)dh), la_cols(q, j * dh, dh),
                     la_cols(K, j * dh, dh), 0.0, la_cols(alpha, j * n, n)));
  LA_PROF_BEGIN(t0);
  jet_softmax_groups(js, N, H, n, c->alpha);
  LA_PROF_END(t0, LA_PROF_SOFTMAX);
  for (int j = 0; j < H; j++)
    CS_CHECK(la_gemm('N', 'N', 1.0, la_cols(alpha, j * n, n), la_cols(U, j * dh, dh), 0.0,
                     la_cols(o, j * dh, dh)));
  const double *u = c->o;
  if (ng) {
    LA_PROF_BEGIN(t1);
    const double *bg = W + P->bg;
    if (js->C == 1 && ng == d) {
      /* g = σ(z + b_g), u = g ⊙ o: one pass, z read where the product left it */
      jet_sigmoid_gate_values(N, d, c->qz + d, ldq, bg, c->g, c->o, c->u);
    } else {
      /* g ← z (+ b_g on value rows), gathered into its own R × n_gate array */
      for (int r = 0, k = 0; r < R; r++, k = k + 1 == js->C ? 0 : k + 1) { /* k = r mod C */
        const double *zr = c->qz + (int64_t)r * ldq + d;
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
 *   s_j = q_j K_jᵀ/√dh: dq_j = ds_j K_j/√dh;  dK_j += ds_jᵀ q_j/√dh
 *   [q | z] = a [W_q; W_g]ᵀ:  d[W_q; W_g] += [dq | dz]ᵀ a;  da = [dq | dz] [W_q; W_g]
 * dq and dz share one N × (d + n_gate) array, so each of the last two is
 * one product, as q and z were. */
int memory_attn_backward(cs_model *M, cs_acts *A, int N, int l, const double *a,
                         const double *dy, double *da) {
  const layer_offsets *P = &M->layers[l];
  const layer_cache *c = &A->cache[l];
  double *W = M->params, *G = M->grads;
  int d = M->d, n = M->n, H = M->H, dh = M->dh, Hn = H * n, ng = M->n_gate, ldq = d + ng;
  CS_CHECK(model_linear_backward(M, N, d, d, ng ? c->u : c->o, W + P->Wo, dy, G + P->Wo,
                                 G + P->bo, A->du, 0.0));
  double *dob = A->du; /* dL/do */
  if (ng) {
    LA_PROF_BEGIN(t0);
    gate_backward_values(N, H, dh, ng, A->du, c->g, c->o, A->dob, A->dqz + d, ldq, G + P->bg);
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
  LA_PROF_END(t1, LA_PROF_SOFTMAX);
  double scale = 1.0 / sqrt((double)dh);
  la_mat K = VIEW(M, n, d, d, W + P->K), dK = VIEW(M, n, d, d, G + P->K);
  la_mat dqz = VIEW(M, N, ldq, ldq, A->dqz);
  la_mat q = la_cols(VIEW(M, N, ldq, ldq, c->qz), 0, d), dq = la_cols(dqz, 0, d);
  for (int j = 0; j < H; j++) {
    CS_CHECK(la_gemm('N', 'N', scale, la_cols(dalpha, j * n, n), la_cols(K, j * dh, dh), 0.0,
                     la_cols(dq, j * dh, dh)));
    CS_CHECK(la_gemm('T', 'N', scale, la_cols(dalpha, j * n, n), la_cols(q, j * dh, dh), 1.0,
                     la_cols(dK, j * dh, dh)));
  }
  CS_CHECK(la_gemm('T', 'N', 1.0, dqz, VIEW(M, N, d, d, (double *)a), 1.0,
                   VIEW(M, ldq, d, d, G + P->Wq)));
  return la_gemm('N', 'N', 1.0, dqz, VIEW(M, ldq, d, d, W + P->Wq), 0.0, VIEW(M, N, d, d, da));
}

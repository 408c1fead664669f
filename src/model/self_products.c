/* self_products.c — the self family's token products on values (C = 1,
 * the training pass): Q Kᵀ, P V and their backward, per point over its T
 * tokens and H heads (self_products.h states what each computes; the jet
 * path stays in self_attn.c). docs/DECISIONS.md, "The self family's token
 * products across points".
 *
 * The dot products (the scores Q Kᵀ, and dP = dO Vᵀ with dS in the
 * backward) run 8 points at a time across vector lanes: an 8-point
 * block's rows of one token, 8 columns wide, are an 8 × 8 tile that one
 * register transpose turns into 8 vectors, entry i of each of the 8 points
 * in one vector. A dot product over a head's dh columns is then dh vector
 * multiply-adds, each lane summing its own point in ascending order from 0
 * (as the per-point loops do), and the results go back to the rows of P
 * (or dS) through the same transpose. A head group is w = max(dh, 8)
 * columns, so heads of dh = 1, 2, 4 share a tile and heads of dh = 8k
 * span k tiles; other head sizes, and the N mod 8 points after the last
 * block, take the per-point loops. The weighted sums (P V, dV, dK, dQ) need
 * no transpose: per point, a head's dh = 8 columns are one vector and the
 * weights are broadcast. Every sum is the same operations in the same
 * order on every path: same bits, whichever path a point takes. */
#include "self_products.h"

#include "curvsweep/simd.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define SELF_INLINE static inline __attribute__((always_inline))

/* The token count T of the default tasks (m = 2, docs/MODELS.md) and the
 * head group of dh = 8 get copies of the loops with T, w constants, which
 * the compiler unrolls; the same operations in the same order. */
#define SELF_T_COMMON 3

/* Vectors of 8 doubles (GCC vector extensions: one AVX-512 register, two
 * AVX2 or four SSE2 registers in the clones of CS_VECTOR_CLONES). */
#define LANES 8
typedef double vd8 __attribute__((vector_size(8 * LANES)));

/* x in every lane (a macro: a vector return value would change the
 * baseline clone's ABI) */
#define splat(x) ((vd8){(x), (x), (x), (x), (x), (x), (x), (x)})

/* ------------------------------------------------------------ per point */

/* out[s] = Σ_i q[i] K[s, i] (i = 0..dh−1 in order, as one dot product
 * would sum) for the T rows s of K (ld ldk). Four rows at a time, so four
 * independent sums are in flight instead of one chain of dependent adds;
 * a short last block repeats its last row and drops the copies. */
SELF_INLINE void row_dots(int T, int dh, const double *restrict q, const double *restrict K,
                          int ldk, double *restrict out) {
  for (int s0 = 0; s0 < T; s0 += 4) {
    const double *k0 = K + (int64_t)s0 * ldk;
    const double *k1 = K + (int64_t)(s0 + 1 < T ? s0 + 1 : T - 1) * ldk;
    const double *k2 = K + (int64_t)(s0 + 2 < T ? s0 + 2 : T - 1) * ldk;
    const double *k3 = K + (int64_t)(s0 + 3 < T ? s0 + 3 : T - 1) * ldk;
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    for (int i = 0; i < dh; i++) {
      double qi = q[i];
      a0 += qi * k0[i];
      a1 += qi * k1[i];
      a2 += qi * k2[i];
      a3 += qi * k3[i];
    }
    out[s0] = a0;
    if (s0 + 1 < T) out[s0 + 1] = a1;
    if (s0 + 2 < T) out[s0 + 2] = a2;
    if (s0 + 3 < T) out[s0 + 3] = a3;
  }
}

/* out[i] = Σ_s (scale · w[s·wst]) rows[s, i] for i < dh, each summed over
 * s = 0..T−1 in order from 0 in a register. */
SELF_INLINE void weighted_rows(int T, int dh, double scale, const double *restrict w, int wst,
                               const double *restrict rows, int64_t ld, double *restrict out) {
  for (int i = 0; i < dh; i++) {
    double acc = 0.0;
    for (int s = 0; s < T; s++) acc += (scale * w[s * wst]) * rows[s * ld + i];
    out[i] = acc;
  }
}

/* weighted_rows for dh = 8: the row's 8 columns one vector, the weight
 * broadcast; the same sums in the same order. */
SELF_INLINE void weighted_rows8(int T, double scale, const double *restrict w, int wst,
                                const double *restrict rows, int64_t ld, double *restrict out) {
  vd8 acc = splat(0.0);
  for (int s = 0; s < T; s++) {
    vd8 r;
    memcpy(&r, rows + s * ld, sizeof r);
    acc += splat(scale * w[s * wst]) * r;
  }
  memcpy(out, &acc, sizeof acc);
}

SELF_INLINE void weighted(int T, int dh, double scale, const double *restrict w, int wst,
                          const double *restrict rows, int64_t ld, double *restrict out) {
  if (dh == LANES)
    weighted_rows8(T, scale, w, wst, rows, ld, out);
  else
    weighted_rows(T, dh, scale, w, wst, rows, ld, out);
}

SELF_INLINE void scores_points(int N, int T, int H, int dh, double scale, const double *restrict Q,
                               int ldq, const double *restrict K, int ldk, double *restrict out) {
  int HT = H * T;
  for (int p = 0; p < N; p++) {
    const double *Qp = Q + (int64_t)p * T * ldq, *Kp = K + (int64_t)p * T * ldk;
    double *op = out + (int64_t)p * T * HT;
    for (int t = 0; t < T; t++)
      for (int j = 0; j < H; j++) {
        double *orow = op + t * HT + j * T;
        row_dots(T, dh, Qp + (int64_t)t * ldq + j * dh, Kp + j * dh, ldk, orow);
        for (int s = 0; s < T; s++) orow[s] *= scale;
      }
  }
}

SELF_INLINE void values_points(int N, int T, int H, int dh, const double *restrict P,
                               const double *restrict V, int ldv, double *restrict out) {
  int HT = H * T, d = H * dh;
  for (int p = 0; p < N; p++) {
    const double *Pp = P + (int64_t)p * T * HT, *Vp = V + (int64_t)p * T * ldv;
    double *Op = out + (int64_t)p * T * d;
    for (int t = 0; t < T; t++)
      for (int j = 0; j < H; j++)
        weighted(T, dh, 1.0, Pp + (int64_t)t * HT + j * T, 1, Vp + j * dh, ldv,
                      Op + (int64_t)t * d + j * dh);
  }
}

/* dP[t,s] = ⟨dO_j[t], V_j[s]⟩, then dS = P ⊙ (dP − ⟨P, dP⟩) in place, per
 * point, query t and head j. */
SELF_INLINE void dscores_points(int N, int T, int H, int dh, const double *restrict P,
                                const double *restrict dO, const double *restrict V, int ldv,
                                double *restrict dP) {
  int HT = H * T, d = H * dh;
  for (int p = 0; p < N; p++) {
    int64_t base = (int64_t)p * T;
    for (int t = 0; t < T; t++) {
      const double *dot = dO + (base + t) * d, *pt = P + (base + t) * HT;
      double *dpt = dP + (base + t) * HT;
      for (int j = 0; j < H; j++) {
        const double *ptj = pt + j * T;
        double *dptj = dpt + j * T, dotp = 0.0;
        row_dots(T, dh, dot + j * dh, V + base * ldv + j * dh, ldv, dptj);
        for (int s = 0; s < T; s++) dotp += ptj[s] * dptj[s];
        for (int s = 0; s < T; s++) dptj[s] = ptj[s] * (dptj[s] - dotp);
      }
    }
  }
}

/* How many points ahead qkv_grads_points asks for Q and K. */
#define PREFETCH_POINTS 4

/* Given dS, per point: dV_j[s] = Σ_t P_j[t,s] dO_j[t];
 * dK_j[s] = scale Σ_t dS_j[t,s] Q_j[t];  dQ_j[t] = scale Σ_s dS_j[t,s] K_j[s]. */
SELF_INLINE void qkv_grads_points(int N, int T, int H, int dh, double scale,
                                  const double *restrict P, const double *restrict dS,
                                  const double *restrict dO, const double *restrict Q, int ldq,
                                  const double *restrict K, int ldk, double *restrict dQ, int lddq,
                                  double *restrict dK, int lddk, double *restrict dV, int lddv) {
  int HT = H * T, d = H * dh;
  for (int p = 0; p < N; p++) {
    int64_t base = (int64_t)p * T;
    if (p + PREFETCH_POINTS < N) /* the forward's Q and K of a point ahead, long out of L1 */
      for (int t = 0; t < T; t++)
        for (int c = 0; c < d; c += 8) {
          __builtin_prefetch(Q + (base + PREFETCH_POINTS * T + t) * ldq + c);
          __builtin_prefetch(K + (base + PREFETCH_POINTS * T + t) * ldk + c);
        }
    for (int s = 0; s < T; s++)
      for (int j = 0; j < H; j++) {
        weighted(T, dh, 1.0, P + base * HT + j * T + s, HT, dO + base * d + j * dh, d,
                      dV + (base + s) * lddv + j * dh);
        weighted(T, dh, scale, dS + base * HT + j * T + s, HT, Q + base * ldq + j * dh, ldq,
                      dK + (base + s) * lddk + j * dh);
      }
    for (int t = 0; t < T; t++)
      for (int j = 0; j < H; j++)
        weighted(T, dh, scale, dS + (base + t) * HT + j * T, 1, K + base * ldk + j * dh, ldk,
                      dQ + (base + t) * lddq + j * dh);
  }
}

/* ------------------------------------------------- 8 points per vector */

/* The most vectors one block keeps per operand: T·w of Q, K, V and their
 * gradients, T·H·T of P. Fixed sizes keep the block's arrays in the frame
 * (a variable-length array costs a pointer register per array). */
#define BLOCK_VECS 64


/* The head group width w (columns per block pass) when blocks of 8
 * points apply, else 0: dh a multiple of 8, or a divisor of 8 with d a
 * multiple of 8; T·w and T·H·T within BLOCK_VECS. */
static int group_width(int T, int H, int dh) {
  int w = dh % LANES == 0 ? dh : LANES % dh == 0 && (H * dh) % LANES == 0 ? LANES : 0;
  return w && T * w <= BLOCK_VECS && T * H * T <= BLOCK_VECS ? w : 0;
}

/* o[i][l] = r[l][i]: three rounds of two-vector shuffles, each swapping one
 * bit of the row index with one of the column index. Moves only.
 * __builtin_shufflevector (constant lane indices into the pair of
 * vectors, 8–15 the second) is both GCC's (from 12) and clang's. */
#define SHUF_LO1(x, y) __builtin_shufflevector(x, y, 0, 8, 2, 10, 4, 12, 6, 14)
#define SHUF_HI1(x, y) __builtin_shufflevector(x, y, 1, 9, 3, 11, 5, 13, 7, 15)
#define SHUF_LO2(x, y) __builtin_shufflevector(x, y, 0, 1, 8, 9, 4, 5, 12, 13)
#define SHUF_HI2(x, y) __builtin_shufflevector(x, y, 2, 3, 10, 11, 6, 7, 14, 15)
#define SHUF_LO3(x, y) __builtin_shufflevector(x, y, 0, 1, 2, 3, 8, 9, 10, 11)
#define SHUF_HI3(x, y) __builtin_shufflevector(x, y, 4, 5, 6, 7, 12, 13, 14, 15)
SELF_INLINE void transpose8(const vd8 *r, vd8 *o) {
  vd8 a[LANES], b[LANES];
  for (int l = 0; l < LANES; l += 2) {
    a[l] = SHUF_LO1(r[l], r[l + 1]);
    a[l + 1] = SHUF_HI1(r[l], r[l + 1]);
  }
  for (int l = 0; l < LANES; l += 4)
    for (int e = 0; e < 2; e++) {
      b[l + e] = SHUF_LO2(a[l + e], a[l + e + 2]);
      b[l + e + 2] = SHUF_HI2(a[l + e], a[l + e + 2]);
    }
  for (int e = 0; e < 4; e++) {
    o[e] = SHUF_LO3(b[e], b[e + 4]);
    o[e + 4] = SHUF_HI3(b[e], b[e + 4]);
  }
}

/* out[c][l] = src[l·ld + c] for the w columns c of 8 rows l at stride ld:
 * 8 × 8 tiles through transpose8, the last w mod 8 columns one by one.
 * store_lanes is its inverse. */
SELF_INLINE void load_lanes(const double *src, int64_t ld, int w, vd8 *out) {
  int c = 0;
  for (; c + LANES <= w; c += LANES) {
    vd8 r[LANES];
    for (int l = 0; l < LANES; l++) memcpy(&r[l], src + l * ld + c, sizeof r[l]);
    transpose8(r, out + c);
  }
  for (; c < w; c++)
    for (int l = 0; l < LANES; l++) out[c][l] = src[l * ld + c];
}

SELF_INLINE void store_lanes(const vd8 *in, int w, double *dst, int64_t ld) {
  int c = 0;
  for (; c + LANES <= w; c += LANES) {
    vd8 r[LANES];
    transpose8(in + c, r);
    for (int l = 0; l < LANES; l++) memcpy(dst + l * ld + c, &r[l], sizeof r[l]);
  }
  for (; c < w; c++)
    for (int l = 0; l < LANES; l++) dst[l * ld + c] = in[c][l];
}

/* Scores of 8 points (Q, K, out at the block's first row): per head j,
 * query t and key s,
 *   S[t, j·T + s] = scale · Σ_i q_t[i] k_s[i]   (i ascending from 0)
 * gathered as T·H·T vectors, then written as the block's 8 rows of P. */
SELF_INLINE void scores_block(int T, int w, int H, int dh, double scale, const double *Q, int ldq,
                              const double *K, int ldk, double *out) {
  vd8 q[BLOCK_VECS], k[BLOCK_VECS], sc[BLOCK_VECS], vs = splat(scale);
  int HT = H * T;
  for (int c = 0; c < H * dh; c += w) {
    for (int t = 0; t < T; t++) {
      load_lanes(Q + (int64_t)t * ldq + c, (int64_t)T * ldq, w, q + t * w);
      load_lanes(K + (int64_t)t * ldk + c, (int64_t)T * ldk, w, k + t * w);
    }
    for (int c0 = 0; c0 < w; c0 += dh)
      for (int t = 0; t < T; t++)
        for (int s = 0; s < T; s++) {
          vd8 acc = splat(0.0);
          for (int i = c0; i < c0 + dh; i++) acc += q[t * w + i] * k[s * w + i];
          sc[t * HT + (c + c0) / dh * T + s] = acc * vs;
        }
  }
  store_lanes(sc, T * HT, out, (int64_t)T * HT);
}

/* dS of 8 points (every array at the block's first row): per head j and
 * query t, dP[t,s] = ⟨dO[t], V[s]⟩ (i ascending from 0), then
 *   dS[t, j·T + s] = P[t,s] (dP[t,s] − Σ_s' P[t,s'] dP[t,s'])   (s' ascending)
 * written as the block's 8 rows of dS. */
SELF_INLINE void dscores_block(int T, int w, int H, int dh, const double *P, const double *dO,
                               const double *V, int ldv, double *dS) {
  vd8 v[BLOCK_VECS], go[BLOCK_VECS], pv[BLOCK_VECS], ds[BLOCK_VECS];
  int HT = H * T, d = H * dh;
  load_lanes(P, (int64_t)T * HT, T * HT, pv);
  for (int c = 0; c < d; c += w) {
    for (int t = 0; t < T; t++) {
      load_lanes(V + (int64_t)t * ldv + c, (int64_t)T * ldv, w, v + t * w);
      load_lanes(dO + (int64_t)t * d + c, (int64_t)T * d, w, go + t * w);
    }
    for (int c0 = 0; c0 < w; c0 += dh) {
      int col = (c + c0) / dh * T; /* head j's first column in a row of P */
      for (int t = 0; t < T; t++) {
        vd8 dp[BLOCK_VECS], dotp = splat(0.0);
        const vd8 *pt = pv + t * HT + col;
        for (int s = 0; s < T; s++) {
          vd8 acc = splat(0.0);
          for (int i = c0; i < c0 + dh; i++) acc += go[t * w + i] * v[s * w + i];
          dp[s] = acc;
        }
        for (int s = 0; s < T; s++) dotp += pt[s] * dp[s];
        for (int s = 0; s < T; s++) ds[t * HT + col + s] = pt[s] * (dp[s] - dotp);
      }
    }
  }
  store_lanes(ds, T * HT, dS, (int64_t)T * HT);
}

/* ----------------------------------------------------------- the calls */

/* Each entry point: blocks of 8 points over the first nb points (T = 3
 * with dh = 8 in a copy with constants), the rest per point. */

CS_VECTOR_CLONES void self_scores_values(int N, int T, int H, int dh, double scale, const double *Q,
                                         int ldq, const double *K, int ldk, double *out) {
  int w = group_width(T, H, dh), nb = w ? N / LANES * LANES : 0, HT = H * T;
  for (int p = 0; p < nb; p += LANES) {
    int64_t r = (int64_t)p * T;
    if (T == SELF_T_COMMON && dh == LANES)
      scores_block(SELF_T_COMMON, LANES, H, LANES, scale, Q + r * ldq, ldq, K + r * ldk, ldk,
                   out + r * HT);
    else
      scores_block(T, w, H, dh, scale, Q + r * ldq, ldq, K + r * ldk, ldk, out + r * HT);
  }
  int64_t r = (int64_t)nb * T; /* the points after the last block */
  if (T == SELF_T_COMMON)
    scores_points(N - nb, SELF_T_COMMON, H, dh, scale, Q + r * ldq, ldq, K + r * ldk, ldk,
                  out + r * HT);
  else
    scores_points(N - nb, T, H, dh, scale, Q + r * ldq, ldq, K + r * ldk, ldk, out + r * HT);
}

/* O = P V, per point: weighted sums of V's rows, vectors over a head's
 * columns (no transposes needed), dh = 8 as a constant in the T = 3 copy. */
CS_VECTOR_CLONES void self_values_values(int N, int T, int H, int dh, const double *P,
                                         const double *V, int ldv, double *out) {
  if (T == SELF_T_COMMON && dh == LANES)
    values_points(N, SELF_T_COMMON, H, LANES, P, V, ldv, out);
  else
    values_points(N, T, H, dh, P, V, ldv, out);
}

/* The backward: dS across points in blocks of 8 (per point after the last
 * block) into dP, then the weighted sums dQ, dK, dV per point. */
CS_VECTOR_CLONES void self_attention_backward(int N, int T, int H, int dh, const double *P,
                                              const double *dO, const double *Q, int ldq,
                                              const double *K, int ldk, const double *V, int ldv,
                                              double *dP, double *dQ, int lddq, double *dK,
                                              int lddk, double *dV, int lddv) {
  /* the scale of the forward (self_attn.c), 1/√dh, from the same division */
  double scale = 1.0 / sqrt((double)dh);
  int w = group_width(T, H, dh), nb = w ? N / LANES * LANES : 0, HT = H * T, d = H * dh;
  for (int p = 0; p < nb; p += LANES) {
    int64_t r = (int64_t)p * T;
    if (T == SELF_T_COMMON && dh == LANES)
      dscores_block(SELF_T_COMMON, LANES, H, LANES, P + r * HT, dO + r * d, V + r * ldv, ldv,
                    dP + r * HT);
    else
      dscores_block(T, w, H, dh, P + r * HT, dO + r * d, V + r * ldv, ldv, dP + r * HT);
  }
  int64_t r = (int64_t)nb * T;
  if (T == SELF_T_COMMON) {
    dscores_points(N - nb, SELF_T_COMMON, H, dh, P + r * HT, dO + r * d, V + r * ldv, ldv,
                   dP + r * HT);
    if (dh == LANES)
      qkv_grads_points(N, SELF_T_COMMON, H, LANES, scale, P, dP, dO, Q, ldq, K, ldk, dQ, lddq,
                       dK, lddk, dV, lddv);
    else
      qkv_grads_points(N, SELF_T_COMMON, H, dh, scale, P, dP, dO, Q, ldq, K, ldk, dQ, lddq, dK,
                       lddk, dV, lddv);
  } else {
    dscores_points(N - nb, T, H, dh, P + r * HT, dO + r * d, V + r * ldv, ldv, dP + r * HT);
    qkv_grads_points(N, T, H, dh, scale, P, dP, dO, Q, ldq, K, ldk, dQ, lddq, dK, lddk, dV,
                     lddv);
  }
}

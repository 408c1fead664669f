/* voronoi.c — the identifiable quantities of an mha model and the Voronoi
 * loss between a student's and its teacher's (docs/MODELS.md,
 * "Estimation"; estim.h). Raw weight matrices are never compared: W_q and
 * W_k meet only in M_h, W_v and W_o only in u_h, and heads are matched by
 * nearest teacher head, never by index. */
#include "curvsweep/error.h"
#include "curvsweep/estim.h"
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void estim_heads_free(estim_heads *h) {
  free(h->M), free(h->u), free(h->gate), free(h->out_gate);
  memset(h, 0, sizeof *h);
}

/* A tensor of the model's layer 0 by short name (view->v NULL when absent). */
static void layer_tensor(cs_model *model, const char *name, cs_tensor *view) {
  char full[48];
  snprintf(full, sizeof full, "layer0/%s", name);
  memset(view, 0, sizeof *view);
  if (model_find_tensor(model, full, view) != CS_OK) {
    cs_error_clear();
    memset(view, 0, sizeof *view);
  }
}

int estim_heads_of(cs_model *model, const cs_config *cfg, estim_heads *out) {
  memset(out, 0, sizeof *out);
  cs_tensor Wq, Wk, Wv, Wo, bo, Wg, bg;
  layer_tensor(model, "Wq", &Wq), layer_tensor(model, "Wk", &Wk);
  layer_tensor(model, "Wv", &Wv), layer_tensor(model, "Wo", &Wo);
  layer_tensor(model, "bo", &bo), layer_tensor(model, "Wg", &Wg), layer_tensor(model, "bg", &bg);
  if (!Wq.v || !Wk.v || !Wv.v || !Wo.v || !bo.v || cfg->family != FAMILY_MHA)
    return cs_error(CS_ERR_INPUT, "estim_heads_of: not an mha model");
  int d = Wq.rows, m = Wq.cols, H = cfg->heads, dh = d / H;
  int gated = config_arch_gated(cfg->arch) && Wg.v && bg.v;
  int head_gate = gated && cfg->gate != GATE_G5;
  out->H = H, out->m = m, out->bo = bo.v[0];
  out->gate_cols = head_gate ? m + 1 : 0;
  out->has_out_gate = gated && cfg->gate == GATE_G5;
  int rc = CS_CALLOC(out->M, (int64_t)H * m * m);
  if (!rc) rc = CS_CALLOC(out->u, (int64_t)H * m);
  if (!rc && head_gate) rc = CS_CALLOC(out->gate, (int64_t)H * (m + 1));
  if (!rc && out->has_out_gate) rc = CS_CALLOC(out->out_gate, m + 1);
  if (rc) {
    estim_heads_free(out);
    return rc;
  }
  double scale = 1.0 / sqrt((double)dh);
  for (int h = 0; h < H; h++) {
    double *M = out->M + (int64_t)h * m * m, *u = out->u + (int64_t)h * m;
    for (int i = h * dh; i < (h + 1) * dh; i++)
      for (int a = 0; a < m; a++) {
        u[a] += Wo.v[i] * Wv.v[(int64_t)i * m + a];
        for (int b = 0; b < m; b++)
          M[a * m + b] += Wq.v[(int64_t)i * m + a] * Wk.v[(int64_t)i * m + b] * scale;
      }
    if (head_gate) {
      memcpy(out->gate + (int64_t)h * (m + 1), Wg.v + (int64_t)h * m, sizeof(double) * m);
      out->gate[(int64_t)h * (m + 1) + m] = bg.v[h];
    }
  }
  if (out->has_out_gate) {
    memcpy(out->out_gate, Wg.v, sizeof(double) * m);
    out->out_gate[m] = bg.v[0];
  }
  return CS_OK;
}

/* Squared distances between student head i of s and teacher head j of t:
 * of the score matrices (Frobenius), of the gates, of the u vectors. */
static void head_dist2(const estim_heads *s, int i, const estim_heads *t, int j, double *dM,
                       double *dg, double *du) {
  int m = s->m, gc = s->gate_cols;
  double a = 0.0, b = 0.0, c = 0.0;
  for (int k = 0; k < m * m; k++) {
    double e = s->M[(int64_t)i * m * m + k] - t->M[(int64_t)j * m * m + k];
    a += e * e;
  }
  for (int k = 0; k < gc; k++) {
    double e = s->gate[(int64_t)i * gc + k] - t->gate[(int64_t)j * gc + k];
    b += e * e;
  }
  for (int k = 0; k < m; k++) {
    double e = s->u[(int64_t)i * m + k] - t->u[(int64_t)j * m + k];
    c += e * e;
  }
  *dM = a, *dg = b, *du = c;
}

static double norm2(const double *v, int n) {
  double s = 0.0;
  for (int k = 0; k < n; k++) s += v[k] * v[k];
  return sqrt(s);
}

/* docs/MODELS.md, "Estimation":
 *   A_j = {i : j = argmin_l ‖θ_i − θ*_l‖}, θ = (M, gate, u)   (ties: lowest l)
 *   D = Σ_j ‖Σ_{i∈A_j} u_i − u*_j‖
 *     + Σ_{j: |A_j| = 1} ‖u_i‖ (‖M_i − M*_j‖_F + ‖γ_i − γ*_j‖)
 *     + Σ_{j: |A_j| > 1} Σ_{i∈A_j} ‖u_i‖ (‖M_i − M*_j‖_F² + ‖γ_i − γ*_j‖²)
 *     + |b_o − b_o*| (+ ‖γ_out − γ*_out‖ at g5). */
double estim_voronoi_loss(const estim_heads *s, const estim_heads *t, int *assign) {
  int m = s->m;
  for (int i = 0; i < s->H; i++) {
    double best = INFINITY;
    assign[i] = 0;
    for (int j = 0; j < t->H; j++) {
      double dM, dg, du;
      head_dist2(s, i, t, j, &dM, &dg, &du);
      if (dM + dg + du < best) best = dM + dg + du, assign[i] = j;
    }
  }
  double D = fabs(s->bo - t->bo);
  if (s->has_out_gate) {
    double e2 = 0.0;
    for (int k = 0; k <= m; k++) e2 += (s->out_gate[k] - t->out_gate[k]) * (s->out_gate[k] - t->out_gate[k]);
    D += sqrt(e2);
  }
  for (int j = 0; j < t->H; j++) {
    int count = 0;
    double sum_u[64] = {0};
    for (int i = 0; i < s->H; i++)
      if (assign[i] == j) {
        count++;
        for (int k = 0; k < m; k++) sum_u[k] += s->u[(int64_t)i * m + k];
      }
    for (int k = 0; k < m; k++) sum_u[k] -= t->u[(int64_t)j * m + k];
    D += norm2(sum_u, m);
    for (int i = 0; i < s->H; i++) {
      if (assign[i] != j) continue;
      double dM, dg, du, w = norm2(s->u + (int64_t)i * m, m);
      head_dist2(s, i, t, j, &dM, &dg, &du);
      D += count == 1 ? w * (sqrt(dM) + sqrt(dg)) : w * (dM + dg);
    }
  }
  return D;
}

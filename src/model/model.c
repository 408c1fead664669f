/* model.c — parameters, initialisation, forward (values or jets), loss and
 * backward for the memory-attention and mlp models (docs/MODELS.md), the
 * building blocks the self family shares (model_internal.h), and the
 * dispatch to self_attn.c for family = self.
 *
 * Notation: N points, C jet rows per point (1 in training), R = N·C rows,
 * m input dim, d width, n slots, H heads, dh = d/H head dim.
 * All matrices are row-major; a weight W maps in -> out and is out × in,
 * so a linear layer is Y = X Wᵀ (+ b on value rows). */
#include "curvsweep/model.h"

#include "curvsweep/error.h"
#include "curvsweep/rng.h"
#include "curvsweep/simd.h"
#include "jet.h"
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- setup */

/* Append a tensor to the table; it lives at offset, or (offset < 0) at
 * the end of the parameter array. */
int64_t model_place_tensor(cs_model *M, const char *name, int rows, int cols, int decays,
                                  int64_t offset) {
  tensor_entry *t = &M->tensors[M->n_tensors++];
  snprintf(t->name, sizeof t->name, "%s", name);
  t->rows = rows;
  t->cols = cols;
  t->decays = decays;
  if (offset < 0) {
    offset = M->n_params;
    M->n_params += (int64_t)rows * cols;
  }
  t->offset = offset;
  return offset;
}

int64_t model_add_tensor(cs_model *M, const char *name, int rows, int cols, int decays) {
  return model_place_tensor(M, name, rows, cols, decays, -1);
}

int64_t model_place_layer_tensor(cs_model *M, int layer, const char *short_name, int rows,
                                        int cols, int decays, int64_t offset) {
  char name[48];
  snprintf(name, sizeof name, "layer%d/%s", layer, short_name);
  return model_place_tensor(M, name, rows, cols, decays, offset);
}

int64_t model_add_layer_tensor(cs_model *M, int layer, const char *short_name, int rows,
                                      int cols, int decays) {
  return model_place_layer_tensor(M, layer, short_name, rows, cols, decays, -1);
}

/* Draw tensor t from its own stream keyed by (seed, tensor name): shared
 * tensors of different archs at one seed are bit-identical. */
static void model_init_tensor(cs_model *M, const tensor_entry *t) {
  double *v = M->params + t->offset;
  int64_t count = (int64_t)t->rows * t->cols;
  const char *leaf = strrchr(t->name, '/');
  leaf = leaf ? leaf + 1 : t->name;
  init_kind kind = INIT_NORMAL;
  double std = 1.0 / sqrt((double)t->cols); /* W: N(0, 1/fan_in) */
  if (leaf[0] == 'b' || strcmp(leaf, "ln_b") == 0) kind = INIT_ZEROS;
  if (strcmp(t->name, "tokens/b") == 0) kind = INIT_NORMAL; /* feature-token biases: N(0, 1/d) */
  if (strcmp(leaf, "ln_g") == 0) kind = INIT_ONES;
  if (strcmp(leaf, "K") == 0 || strcmp(leaf, "U") == 0) std = 1.0; /* slots: N(0, 1) */
  rng_stream s = rng_stream_make((uint64_t)M->cfg.seed, "init", 0, t->name);
  for (int64_t i = 0; i < count; i++)
    v[i] = kind == INIT_ZEROS ? 0.0 : kind == INIT_ONES ? 1.0 : std * rng_normal(&s);
}

/* The sizes a config implies, checked before anything is laid out or
 * allocated: the spec check refuses such cells first (docs/SPEC.md,
 * "Sizes"); this keeps a config built elsewhere from wrapping the int64
 * arithmetic below. Every layer of either family holds at most
 * 6 d² + (2 slots + 2 input_dim + 8) d parameters, the embedding and the
 * readout fewer than one layer. */
static int model_size_check(const cs_config *c) {
  int64_t d = c->width, dd, layer, lin, all, bytes;
  int over = __builtin_mul_overflow(d, d, &dd) || __builtin_mul_overflow(dd, (int64_t)6, &layer) ||
             __builtin_mul_overflow(2 * (int64_t)c->slots + 2 * (int64_t)c->input_dim + 8, d, &lin) ||
             __builtin_add_overflow(layer, lin, &layer) ||
             __builtin_mul_overflow(layer, (int64_t)c->depth + 1, &all) ||
             __builtin_mul_overflow(all, (int64_t)sizeof(double), &bytes);
  if (over)
    return cs_error(CS_ERR_INPUT, "model: width %d, slots %d, input_dim %d, depth %d: the parameter "
                    "count overflows 64 bits (docs/SPEC.md, \"Sizes\")", c->width, c->slots,
                    c->input_dim, c->depth);
  return CS_OK;
}

int model_create(const cs_config *cfg, const la_team *team, cs_model **out) {
  *out = NULL;
  if (cfg->family == FAMILY_SELF && cfg->arch == ARCH_MLP)
    return cs_error(CS_ERR_INPUT, "model: the self family has no mlp block (docs/MODELS.md)");
  if (cfg->width < 1 || cfg->depth < 1 || cfg->slots < 1 || cfg->heads < 1 ||
      cfg->width % cfg->heads != 0 || cfg->input_dim < 1)
    return cs_error(CS_ERR_INPUT, "model: invalid shape (width %d, depth %d, slots %d, heads %d)",
                    cfg->width, cfg->depth, cfg->slots, cfg->heads);
  CS_CHECK(model_size_check(cfg));
  cs_model *M;
  CS_CHECK(CS_CALLOC(M, 1));
  M->cfg = *cfg;
  M->team = team;
  M->L = cfg->depth;
  M->m = cfg->input_dim;
  M->d = cfg->width;
  M->n = cfg->slots;
  M->H = cfg->heads;
  M->dh = M->d / M->H;
  M->n_gate = cfg->arch == ARCH_GATED ? M->d : cfg->arch == ARCH_GATED_HEADWISE ? M->H : 0;
  int rc = CS_CALLOC(M->layers, M->L);
  if (rc) {
    free(M);
    return rc;
  }
  int d = M->d;
  if (cfg->family == FAMILY_SELF) self_attn_layout(M);
  else {
    M->embed_W = model_add_tensor(M, "embed/W", d, M->m, 1);
    M->embed_b = model_add_tensor(M, "embed/b", 1, d, 0);
  }
  for (int l = 0; l < M->L && cfg->family != FAMILY_SELF; l++) {
    layer_offsets *P = &M->layers[l];
    memset(P, 0xff, sizeof *P); /* all -1 */
    if (cfg->arch == ARCH_MLP) {
      P->W1 = model_add_layer_tensor(M, l, "W1", d, d, 1);
      P->b1 = model_add_layer_tensor(M, l, "b1", 1, d, 0);
      P->W2 = model_add_layer_tensor(M, l, "W2", d, d, 1);
      P->b2 = model_add_layer_tensor(M, l, "b2", 1, d, 0);
    } else {
      P->Wq = model_add_layer_tensor(M, l, "Wq", d, d, 1);
      P->K = model_add_layer_tensor(M, l, "K", M->n, d, 1);
      P->U = model_add_layer_tensor(M, l, "U", M->n, d, 1);
      P->Wo = model_add_layer_tensor(M, l, "Wo", d, d, 1);
      P->bo = model_add_layer_tensor(M, l, "bo", 1, d, 0);
      if (M->n_gate) {
        P->Wg = model_add_layer_tensor(M, l, "Wg", M->n_gate, d, 1);
        P->bg = model_add_layer_tensor(M, l, "bg", 1, M->n_gate, 0);
      }
    }
    if (cfg->norm == NORM_PRE) {
      P->ln_g = model_add_layer_tensor(M, l, "ln_g", 1, d, 0);
      P->ln_b = model_add_layer_tensor(M, l, "ln_b", 1, d, 0);
    }
  }
  M->readout_W = model_add_tensor(M, "readout/W", N_CLASSES, d, 1);
  M->readout_b = model_add_tensor(M, "readout/b", 1, N_CLASSES, 0);
  if ((rc = CS_CALLOC(M->params, M->n_params)) || (rc = CS_CALLOC(M->grads, M->n_params))) {
    model_free(M);
    return rc;
  }
  for (int i = 0; i < M->n_tensors; i++) model_init_tensor(M, &M->tensors[i]);
  *out = M;
  return CS_OK;
}

void model_free(cs_model *M) {
  if (!M) return;
  free(M->params);
  free(M->grads);
  free(M->layers);
  free(M);
}

int64_t model_param_count(const cs_model *M) { return M->n_params; }
double *model_params(cs_model *M) { return M->params; }
double *model_grads(cs_model *M) { return M->grads; }
int model_depth(const cs_model *M) { return M->L; }
int model_width(const cs_model *M) { return M->d; }
int model_tensor_count(const cs_model *M) { return M->n_tensors; }

void model_tensor(cs_model *M, int i, cs_tensor *view, int *decays) {
  const tensor_entry *t = &M->tensors[i];
  snprintf(view->name, sizeof view->name, "%s", t->name);
  view->rows = t->rows;
  view->cols = t->cols;
  view->v = M->params + t->offset;
  if (decays) *decays = t->decays;
}

int model_find_tensor(cs_model *M, const char *name, cs_tensor *view) {
  for (int i = 0; i < M->n_tensors; i++)
    if (strcmp(M->tensors[i].name, name) == 0) {
      model_tensor(M, i, view, NULL);
      return CS_OK;
    }
  return cs_error(CS_ERR_INPUT, "model has no tensor named '%s'", name);
}

double model_forward_flops_per_point(const cs_config *c) {
  if (c->family == FAMILY_SELF) return self_attn_flops_per_point(c);
  double d = c->width, m = c->input_dim, n = c->slots, H = c->heads;
  double layer = c->arch == ARCH_MLP ? 4 * d * d : 4 * d * d + 4 * d * n;
  if (c->arch == ARCH_GATED) layer += 2 * d * d;
  if (c->arch == ARCH_GATED_HEADWISE) layer += 2 * d * H;
  return 2 * d * m + c->depth * layer + 2 * N_CLASSES * d;
}

/* ------------------------------------------------------------ workspace */

int model_acts_create(const cs_model *M, int max_points, int jet_order, cs_acts **out) {
  *out = NULL;
  cs_acts *A;
  CS_CHECK(CS_CALLOC(A, 1));
  int rc = jet_shape_init(&A->js, M->m, jet_order);
  if (rc) {
    free(A);
    return rc;
  }
  A->max_points = max_points;
  A->L = M->L;
  // every array below is at most R rows of the widest kind, L + 1 of them
  // (self_attn_acts_create: T tokens a row): checked once, before any
  int64_t rows, widest = 8 + M->m + 3 * (int64_t)M->d + 2 * (int64_t)M->H * (M->n + M->m + 1) +
                         2 * (int64_t)M->n_gate, all;
  if (__builtin_mul_overflow((int64_t)max_points * (M->m + 1), (int64_t)A->js.C, &rows) ||
      __builtin_mul_overflow(rows, widest, &all) ||
      __builtin_mul_overflow(all, (int64_t)sizeof(double) * (M->L + 1), &all)) {
    int C = A->js.C;
    jet_shape_free(&A->js);
    free(A);
    return cs_error(CS_ERR_INPUT, "model: %d points of %d jet rows at width %d overflow 64 bits "
                    "(docs/SPEC.md, \"Sizes\")", max_points, C, M->d);
  }
  int64_t R = (int64_t)max_points * A->js.C, N = max_points, d = M->d;
  int64_t Hn = (int64_t)M->H * M->n;
  int64_t tmpw = d > 2 * M->H ? d : 2 * M->H;
  if (tmpw < 2) tmpw = 2;
#define ALLOC(p, count) \
  if (!rc) rc = CS_CALLOC(p, count)
  ALLOC(A->xjet, R * M->m);
  ALLOC(A->h, M->L + 1);
  ALLOC(A->cache, M->L);
  for (int l = 0; !rc && l <= M->L; l++) ALLOC(A->h[l], R * d);
  int self = M->cfg.family == FAMILY_SELF; /* its caches live in A->self */
  if (!rc && self) rc = self_attn_acts_create(M, A, jet_order);
  for (int l = 0; !rc && !self && l < M->L; l++) {
    layer_cache *c = &A->cache[l];
    if (M->cfg.norm == NORM_PRE) {
      ALLOC(c->xhat, R * d);
      ALLOC(c->rstd, R);
      ALLOC(c->a, R * d);
    }
    if (M->cfg.arch == ARCH_MLP) {
      ALLOC(c->t, R * d);
    } else {
      ALLOC(c->sz, R * memory_attn_score_ld(M));
      ALLOC(c->pw, (Hn + M->n_gate) * d);
      ALLOC(c->alpha, R * Hn);
      ALLOC(c->o, R * d);
      if (M->n_gate) {
        ALLOC(c->g, R * M->n_gate);
        ALLOC(c->u, R * d);
      }
    }
  }
  ALLOC(A->tmp, R * tmpw);
  ALLOC(A->logits, N * N_CLASSES);
  ALLOC(A->dlogits, N * N_CLASSES);
  if (jet_order == 0 && !self) {
    ALLOC(A->dh_a, N * d);
    ALLOC(A->dh_b, N * d);
    ALLOC(A->da, N * d);
    ALLOC(A->du, N * d);
    ALLOC(A->dz, N * d);
    ALLOC(A->dob, N * d);
    ALLOC(A->dalpha, N * Hn);
    ALLOC(A->dsz, N * memory_attn_score_ld(M));
    ALLOC(A->dpw, (Hn + M->n_gate) * d);
  }
#undef ALLOC
  if (rc) {
    model_acts_free(A);
    return rc;
  }
  *out = A;
  return CS_OK;
}

void model_acts_free(cs_acts *A) {
  if (!A) return;
  if (A->h)
    for (int l = 0; l <= A->L; l++) free(A->h[l]);
  if (A->cache)
    for (int l = 0; l < A->L; l++) {
      layer_cache *c = &A->cache[l];
      free(c->xhat), free(c->rstd), free(c->a), free(c->sz), free(c->pw), free(c->alpha), free(c->o),
          free(c->g), free(c->u), free(c->t);
    }
  free(A->h), free(A->cache), free(A->xjet), free(A->tmp), free(A->logits), free(A->dlogits);
  free(A->dh_a), free(A->dh_b), free(A->da), free(A->du), free(A->dz), free(A->dob);
  free(A->dalpha), free(A->dsz), free(A->dpw);
  self_attn_acts_free(A->self);
  jet_shape_free(&A->js);
  free(A);
}

int model_acts_jet_rows(const cs_acts *A) { return A->js.C; }
int model_acts_capacity(const cs_acts *A) { return A->max_points; }
const double *model_layer_output(const cs_acts *A, int l) { return A->h[l]; }
const double *model_logits(const cs_acts *A) { return A->logits; }

/* --------------------------------------------------------------- layers */


/* dst[r, 0:w] = src[r, 0:w] for rows rows (lds, ldd the row strides);
 * w = 3 (one head of the default 3 slots) as a constant the compiler
 * inlines, since a memcpy call per row of three costs more than the copy. */
void model_copy_cols(int64_t rows, int w, const double *restrict src, int lds,
                     double *restrict dst, int ldd) {
  if (w == 3) {
    for (int64_t r = 0; r < rows; r++)
      for (int i = 0; i < 3; i++) dst[r * ldd + i] = src[r * lds + i];
  } else {
    for (int64_t r = 0; r < rows; r++)
      memcpy(dst + r * ldd, src + r * lds, sizeof(double) * (size_t)w);
  }
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

/* Linear layer on jets: Y = X Wᵀ on all R rows, + b on the value rows.
 * X R × in, W out × in, Y R × out.
 * Values (C = 1): Y is first filled with b and the product added to it
 * (beta = 1): b + XWᵀ rounds once, as XWᵀ + b did, without a second pass
 * over Y. Jets: the product, then b on the value rows. */
int model_linear_forward(const cs_model *M, const jet_shape *js, int N, int in, int out,
                          const double *X, const double *W, const double *b, double *Y) {
  int R = N * js->C;
  la_mat y = VIEW(M, R, out, out, Y);
  double beta = 0.0;
  if (b && js->C == 1) {
    LA_PROF_BEGIN(t0);
    fill_rows(R, out, b, Y);
    LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
    beta = 1.0;
  }
  CS_CHECK(la_gemm('N', 'T', 1.0, VIEW(M, R, in, in, (double *)X),
                   VIEW(M, out, in, in, (double *)W), beta, y));
  if (b && js->C > 1) {
    LA_PROF_BEGIN(t0);
    la_add_row_vector(la_rows_strided(y, 0, js->C), b);
    LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  }
  return CS_OK;
}

/* Backward of Y = X Wᵀ + b on values. X N × in, dY N × out, W out × in.
 * dW += dYᵀ X;  db += Σ_rows dY;  dX = dY W (skipped when dX is NULL). */
int model_linear_backward(const cs_model *M, int N, int in, int out, const double *X,
                           const double *W, const double *dY, double *dW, double *db,
                           double *dX, double beta_dx) {
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
 * x N × m; h0 R × d. */
static int embedding_forward(const cs_model *M, cs_acts *A, int N, const double *x) {
  int C = A->js.C, m = M->m;
  if (C == 1) /* values: the jet is x itself */
    return model_linear_forward(M, &A->js, N, m, M->d, x, M->params + M->embed_W,
                                M->params + M->embed_b, A->h[0]);
  memset(A->xjet, 0, sizeof(double) * (size_t)N * C * m);
  for (int p = 0; p < N; p++) {
    double *xp = A->xjet + (int64_t)p * C * m;
    memcpy(xp, x + (int64_t)p * m, sizeof(double) * m);
    for (int a = 0; a < m; a++) xp[(1 + a) * m + a] = 1.0;
  }
  return model_linear_forward(M, &A->js, N, m, M->d, A->xjet, M->params + M->embed_W,
                        M->params + M->embed_b, A->h[0]);
}

/* Pre-LayerNorm forward on jets, x R × d -> a R × d:
 *   μ = mean_j x_j;  c = x − μ;  v = mean_j c_j²;  r = (v + ε)^{-1/2}
 *   x̂ = c r;  a = x̂ ⊙ γ + β
 * mean and centring are linear (all jet rows); c² is a Leibniz product;
 * r is the unary rule of t^{-1/2}; x̂ = c r a group product (G = 1). */
void model_layernorm_forward(const cs_model *M, const jet_shape *js, int N, const double *x,
                              const double *gamma, const double *beta, layer_cache *c,
                              double *tmp) {
  int d = M->d, R = N * js->C;
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

/* LayerNorm backward on values, N × d:
 *   dγ += Σ da ⊙ x̂;  dβ += Σ da;  dx̂ = da ⊙ γ
 *   dx = r (dx̂ − mean(dx̂) − x̂ mean(dx̂ ⊙ x̂)) */
void model_layernorm_backward(const cs_model *M, int N, const layer_cache *c,
                               const double *gamma, const double *da, double *dgamma,
                               double *dbeta, double *dx) {
  int d = M->d;
  for (int r = 0; r < N; r++) {
    const double *dar = da + (int64_t)r * d, *xh = c->xhat + (int64_t)r * d;
    double *dxr = dx + (int64_t)r * d;
    double mean_dxh = 0.0, mean_dxh_xh = 0.0;
    for (int j = 0; j < d; j++) {
      double dxh = dar[j] * gamma[j];
      dgamma[j] += dar[j] * xh[j];
      dbeta[j] += dar[j];
      mean_dxh += dxh;
      mean_dxh_xh += dxh * xh[j];
    }
    mean_dxh /= d;
    mean_dxh_xh /= d;
    for (int j = 0; j < d; j++)
      dxr[j] = c->rstd[r] * (dar[j] * gamma[j] - mean_dxh - xh[j] * mean_dxh_xh);
  }
}

/* mlp block forward on jets: t = tanh(a W_1ᵀ + b_1);  y = t W_2ᵀ + b_2. */
static int mlp_forward(const cs_model *M, const jet_shape *js, int N, int l, const double *a,
                       layer_cache *c, double *y) {
  const layer_offsets *P = &M->layers[l];
  const double *W = M->params;
  CS_CHECK(model_linear_forward(M, js, N, M->d, M->d, a, W + P->W1, W + P->b1, c->t));
  LA_PROF_BEGIN(t0);
  jet_unary(js, JET_TANH, N, M->d, c->t, c->t);
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  return model_linear_forward(M, js, N, M->d, M->d, c->t, W + P->W2, W + P->b2, y);
}

/* mlp backward on values: dt = dy W_2;  dz = dt ⊙ (1 − t²);  da = dz W_1. */
static int mlp_backward(cs_model *M, cs_acts *A, int N, int l, const double *a, const double *dy,
                        double *da) {
  const layer_offsets *P = &M->layers[l];
  const layer_cache *c = &A->cache[l];
  double *W = M->params, *G = M->grads;
  int d = M->d;
  CS_CHECK(model_linear_backward(M, N, d, d, c->t, W + P->W2, dy, G + P->W2, G + P->b2, A->du, 0.0));
  LA_PROF_BEGIN(t0);
  for (int64_t i = 0; i < (int64_t)N * d; i++) A->dz[i] = A->du[i] * (1.0 - c->t[i] * c->t[i]);
  LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
  return model_linear_backward(M, N, d, d, a, W + P->W1, A->dz, G + P->W1, G + P->b1, da, 0.0);
}

/* ---------------------------------------------------------- whole model */

int model_forward(const cs_model *M, cs_acts *A, int N, const double *x) {
  if (N > A->max_points)
    return cs_error(CS_ERR_INTERNAL, "model_forward: %d points exceed workspace of %d", N,
                    A->max_points);
  A->n = N;
  if (M->cfg.family == FAMILY_SELF) return self_attn_forward(M, A, N, x);
  const jet_shape *js = &A->js;
  int d = M->d, R = N * js->C;
  CS_CHECK(embedding_forward(M, A, N, x));
  for (int l = 0; l < M->L; l++) {
    const layer_offsets *P = &M->layers[l];
    layer_cache *c = &A->cache[l];
    const double *hin = A->h[l];
    double *hout = A->h[l + 1];
    const double *a = hin;
    if (M->cfg.norm == NORM_PRE) {
      LA_PROF_BEGIN(t0);
      model_layernorm_forward(M, js, N, hin, M->params + P->ln_g, M->params + P->ln_b, c, A->tmp);
      LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
      a = c->a;
    }
    if (M->cfg.arch == ARCH_MLP)
      CS_CHECK(mlp_forward(M, js, N, l, a, c, hout));
    else
      CS_CHECK(memory_attn_forward(M, js, N, l, a, c, hout));
    /* residual h_{l+1} = h_l + y: linear, all jet rows */
    if (M->cfg.residual) {
      LA_PROF_BEGIN(t0);
      for (int64_t i = 0; i < (int64_t)R * d; i++) hout[i] += hin[i];
      LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
    }
  }
  if (js->C == 1)
    CS_CHECK(model_linear_forward(M, js, N, d, N_CLASSES, A->h[M->L], M->params + M->readout_W,
                            M->params + M->readout_b, A->logits));
  return CS_OK;
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
double model_loss(cs_acts *A, int N, const int *y, int *n_correct) {
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

int model_backward(cs_model *M, cs_acts *A, int N, const double *x) {
  if (A->js.C != 1) return cs_error(CS_ERR_INTERNAL, "model_backward needs a value forward");
  if (M->cfg.family == FAMILY_SELF) return self_attn_backward(M, A, N, x);
  int d = M->d;
  double *G = M->grads, *dh = A->dh_a, *dh_next = A->dh_b;
  /* readout: dW_r += dlogitsᵀ h_L;  db_r;  dh_L = dlogits W_r */
  CS_CHECK(model_linear_backward(M, N, d, N_CLASSES, A->h[M->L], M->params + M->readout_W, A->dlogits,
                           G + M->readout_W, G + M->readout_b, dh, 0.0));
  for (int l = M->L - 1; l >= 0; l--) {
    const layer_offsets *P = &M->layers[l];
    const layer_cache *c = &A->cache[l];
    const double *a = M->cfg.norm == NORM_PRE ? c->a : A->h[l];
    double *da = M->cfg.norm == NORM_PRE ? A->da : dh_next;
    if (M->cfg.arch == ARCH_MLP)
      CS_CHECK(mlp_backward(M, A, N, l, a, dh, da));
    else
      CS_CHECK(memory_attn_backward(M, A, N, l, a, dh, da));
    LA_PROF_BEGIN(t0);
    if (M->cfg.norm == NORM_PRE)
      model_layernorm_backward(M, N, c, M->params + P->ln_g, A->da, G + P->ln_g, G + P->ln_b, dh_next);
    /* residual: dh_l = dh_{l+1} + (branch gradient) */
    if (M->cfg.residual)
      for (int64_t i = 0; i < (int64_t)N * d; i++) dh_next[i] += dh[i];
    LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
    double *t = dh;
    dh = dh_next;
    dh_next = t;
  }
  /* embedding: dW_e += dh_0ᵀ x;  db_e += Σ dh_0 */
  return model_linear_backward(M, N, M->m, d, x, M->params + M->embed_W, dh, G + M->embed_W,
                         G + M->embed_b, NULL, 0.0);
}

/* model.c — the model of any family (model.h): its parameters and
 * workspace, and the dispatch of every operation to the family of the
 * config through the family table below (model_internal.h). The families
 * themselves are memory_attn.c, self_attn.c and lm_attn.c (with
 * lm_backward.c, lm_products.c); their shared layers are layers.c
 * (docs/ARCHITECTURE.md, "A new model family").
 *
 * Notation: N points, C jet rows per point (1 in training), R = N·C rows,
 * m input dim, d width, n slots, H heads. */
#include "curvsweep/model.h"

#include "curvsweep/error.h"
#include "curvsweep/quantile.h"
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The family table: one row per cs_family (config.h, whose family table
 * in config.c holds the family's name and what it accepts), the operations
 * defined at the end of the family's file. */
extern const model_family_ops memory_family_ops; /* memory_attn.c */
extern const model_family_ops self_family_ops;   /* self_attn.c */
extern const model_family_ops lm_family_ops;     /* lm_family.c */
extern const model_family_ops mha_family_ops;    /* mha.c */

static const model_family_ops *const FAMILY_OPS[FAMILY_COUNT] = {
    [FAMILY_MEMORY] = &memory_family_ops,
    [FAMILY_SELF] = &self_family_ops,
    [FAMILY_LM] = &lm_family_ops,
    [FAMILY_MHA] = &mha_family_ops,
};

static const model_family_ops *family_ops(cs_family f) {
  return ((int)f >= 0 && (int)f < FAMILY_COUNT) ? FAMILY_OPS[f] : NULL;
}

/* ---------------------------------------------------------- parameters */

/* ------------------------------------------------------ memory estimate */

/* The estimate of docs/SPEC.md, "Sizes" (model.h): the family's terms (its
 * memory op), then what every family adds the same way. */
void model_cell_memory(const cs_config *c, uint64_t part[CELL_MEM_PARTS], int *over) {
  for (int p = 0; p < CELL_MEM_PARTS; p++) part[p] = 0;
  const model_family_ops *ops = family_ops(c->family);
  if (!ops) {
    *over = 1;  // no such family: never sized as fitting
    for (int p = 0; p < CELL_MEM_PARTS; p++) part[p] = UINT64_MAX;
    return;
  }
  uint64_t m = (uint64_t)c->input_dim, L = (uint64_t)c->depth, N = (uint64_t)c->field;
  uint64_t ng = (uint64_t)config_arch_gate_width(c->arch, c->width, c->heads);
  uint64_t train = (uint64_t)c->train_points, pts = (uint64_t)c->points;
  uint64_t batch = c->batch == 0 || (uint64_t)c->batch > train ? train : (uint64_t)c->batch;
  if (c->task == TASK_TEACHER) batch = train; /* the estimator is full batch (docs/MODELS.md) */
  model_memory_terms t = {0, 0, 0, 0};
  ops->memory(c, ng, &t, over);
  // parameters, gradients, two Adam moments, the decay mask, a saved copy
  part[CELL_MEM_PARAMS] = SIZE_MUL(48, t.params);
  // a training batch forward and backward, and the evaluation passes
  part[CELL_MEM_TRAIN] = SIZE_MUL(8, SIZE_MUL(t.row, SIZE_ADD(SIZE_MUL(2, batch), 256)));
  part[CELL_MEM_JETS] = t.jets;
  part[CELL_MEM_DATA] = t.data;
  // per-point values, the curvature field, the learning curve
  uint64_t every = c->eval_every > 0 ? (uint64_t)c->eval_every : 1; /* a spec has >= 1 */
  uint64_t curve = (uint64_t)c->epochs / every + 1;
  part[CELL_MEM_RESULTS] =
      SIZE_MUL(8, SIZE_ADD(SIZE_ADD(SIZE_MUL(SIZE_MUL(L, pts), 8 + m), SIZE_MUL(pts, m)),
                           SIZE_ADD(SIZE_MUL(SIZE_MUL(L, SIZE_MUL(N, N)), 9), SIZE_MUL(curve, 4))));
}

/* ---------------------------------------------------------- parameters */

/* The cell's memory estimate, checked before anything is laid out or
 * allocated: a spec loaded for a run refuses such cells first, naming the
 * key (docs/SPEC.md, "Sizes"); this bounds a config built from anywhere
 * else (an archive's spec, a test) the same way, so the int64 arithmetic of
 * the layouts cannot wrap. */
static int model_size_check(const cs_config *c) {
  uint64_t part[CELL_MEM_PARTS], total = 0;
  int over = 0;
  model_cell_memory(c, part, &over);
  for (int p = 0; p < CELL_MEM_PARTS; p++) total = cs_size_add(total, part[p], &over);
  if (over)
    return cs_error(CS_ERR_INPUT, "model: width %d, slots %d, heads %d, input_dim %d, depth %d: "
                    "the memory estimate of a cell overflows 64 bits (docs/SPEC.md, \"Sizes\")",
                    c->width, c->slots, c->heads, c->input_dim, c->depth);
  if (total > CELL_MAX_BYTES)
    return cs_error(CS_ERR_INPUT, "model: width %d, slots %d, heads %d, input_dim %d, depth %d: a "
                    "cell would need %.3g GiB of memory; allowed: at most %d GiB per cell "
                    "(docs/SPEC.md, \"Sizes\")", c->width, c->slots, c->heads, c->input_dim,
                    c->depth, (double)total / (double)(1u << 30), (int)(CELL_MAX_BYTES >> 30));
  return CS_OK;
}

int model_create(const cs_config *cfg, const la_team *team, cs_model **out) {
  *out = NULL;
  const model_family_ops *ops = family_ops(cfg->family);
  if (!ops)
    return cs_error(CS_ERR_INPUT, "model: no model family %d (docs/MODELS.md)", (int)cfg->family);
  if (!config_family_allows_arch(cfg->family, cfg->arch))
    return cs_error(CS_ERR_INPUT, "model: the %s family has no %s block (docs/MODELS.md)",
                    config_family_name(cfg->family), config_arch_name(cfg->arch));
  if (cfg->width < 1 || cfg->depth < 1 || cfg->slots < 1 || cfg->heads < 1 ||
      cfg->width % cfg->heads != 0 || cfg->input_dim < 1)
    return cs_error(CS_ERR_INPUT, "model: invalid shape (width %d, depth %d, slots %d, heads %d)",
                    cfg->width, cfg->depth, cfg->slots, cfg->heads);
  CS_CHECK(model_size_check(cfg));
  cs_model *M;
  CS_CHECK(CS_CALLOC(M, 1));
  M->cfg = *cfg;
  M->team = team;
  M->ops = ops;
  M->L = cfg->depth;
  M->m = cfg->input_dim;
  M->d = cfg->width;
  M->n = cfg->slots;
  M->H = cfg->heads;
  M->dh = M->d / M->H;
  M->n_gate = config_arch_gate_width(cfg->arch, M->d, M->H);
  int rc = ops->layout(M);
  if (!rc) rc = CS_CALLOC(M->params, M->n_params);
  if (!rc) rc = CS_CALLOC(M->grads, M->n_params);
  if (!rc) model_init_tensors(M);
  if (rc) model_free(M), M = NULL;
  *out = M;
  return rc;
}

void model_free(cs_model *M) {
  if (!M) return;
  free(M->params);
  free(M->grads);
  free(M->layout);
  free(M);
}

int64_t model_param_count(const cs_model *M) { return M->n_params; }
double *model_params(cs_model *M) { return M->params; }
double *model_grads(cs_model *M) { return M->grads; }
int model_depth(const cs_model *M) { return M->L; }
int model_width(const cs_model *M) { return M->d; }
int model_classes(const cs_model *M) { return M->n_classes; }

double model_forward_flops_per_point(const cs_config *c) {
  const model_family_ops *ops = family_ops(c->family);
  return ops ? ops->flops_per_point(c) : NAN;
}

/* ----------------------------------------------------------- workspace */

/* The shared part (the jet shape, h_0 .. h_L, the scratch, the logits),
 * then the family's own (A->fam). */
int model_acts_create(const cs_model *M, int max_points, int jet_order, cs_acts **out) {
  *out = NULL;
  cs_acts *A;
  CS_CHECK(CS_CALLOC(A, 1));
  A->ops = M->ops;
  A->max_points = max_points;
  A->L = M->L;
  int rc = jet_shape_init(&A->js, M->m, jet_order);
  // every array below is at most R rows of the widest kind, L + 1 of them
  // (self_attn_acts_create: T tokens a row): checked once, before any
  int64_t rows, widest = 8 + M->m + 3 * (int64_t)M->d + 2 * (int64_t)M->H * (M->n + M->m + 1) +
                         2 * (int64_t)M->n_gate, all;
  if (!rc && (__builtin_mul_overflow((int64_t)max_points * (M->m + 1), (int64_t)A->js.C, &rows) ||
               __builtin_mul_overflow(rows, widest, &all) ||
               __builtin_mul_overflow(all, (int64_t)sizeof(double) * (M->L + 1), &all)))
    rc = cs_error(CS_ERR_INPUT, "model: %d points of %d jet rows at width %d overflow 64 bits "
                  "(docs/SPEC.md, \"Sizes\")", max_points, A->js.C, M->d);
  int64_t R = (int64_t)max_points * A->js.C, N = max_points, d = M->d;
  int64_t tmpw = d > 2 * M->H ? d : 2 * M->H;
  if (tmpw < 2) tmpw = 2;
  if (!rc) rc = CS_CALLOC(A->h, M->L + 1);
  for (int l = 0; !rc && l <= M->L; l++) rc = CS_CALLOC(A->h[l], R * d);
  if (!rc) rc = CS_CALLOC(A->tmp, R * tmpw);
  if (!rc) rc = CS_CALLOC(A->logits, N * M->n_logits);
  if (!rc) rc = CS_CALLOC(A->dlogits, N * M->n_logits);
  if (!rc) rc = M->ops->acts_create(M, A, jet_order);
  if (rc) model_acts_free(A), A = NULL;
  *out = A;
  return rc;
}

void model_acts_free(cs_acts *A) {
  if (!A) return;
  if (A->h)
    for (int l = 0; l <= A->L; l++) free(A->h[l]);
  free(A->h), free(A->tmp), free(A->logits), free(A->dlogits);
  A->ops->acts_free(A->fam);
  jet_shape_free(&A->js);
  free(A);
}

int model_acts_jet_rows(const cs_acts *A) { return A->js.C; }
int model_acts_capacity(const cs_acts *A) { return A->max_points; }
const double *model_layer_output(const cs_acts *A, int l) { return A->h[l]; }
const double *model_logits(const cs_acts *A) { return A->logits; }

/* ------------------------------------------------------------ dispatch */

void model_acts_bind_tokens(cs_acts *A, const cs_token_batch *batch) { A->tok = *batch; }

/* The inputs of a forward of N points (model_forward, model_train_step,
 * named by who): within the workspace, a token family's sequences bound,
 * x given unless a token family runs on values. */
static int forward_inputs_check(const cs_model *M, const cs_acts *A, int N, const double *x,
                                const char *who) {
  if (N > A->max_points)
    return cs_error(CS_ERR_INTERNAL, "%s: %d points exceed workspace of %d", who, N,
                    A->max_points);
  if (config_family_tokens(M->cfg.family) && (!A->tok.tokens || A->tok.T != M->cfg.seq_len))
    return cs_error(CS_ERR_INTERNAL, "%s: the %s family needs sequences of %d tokens bound "
                    "(model_acts_bind_tokens)", who, config_family_name(M->cfg.family),
                    M->cfg.seq_len);
  if (!x && (!config_family_tokens(M->cfg.family) || A->js.C > 1))
    return cs_error(CS_ERR_INTERNAL, "%s: no inputs x", who);
  return CS_OK;
}

int model_forward(const cs_model *M, cs_acts *A, int N, const double *x) {
  CS_CHECK(forward_inputs_check(M, A, N, x, "model_forward"));
  A->n = N;
  return M->ops->forward(M, A, N, x);
}

double model_loss(cs_acts *A, int N, const int *y, int *n_correct) {
  if (!A->ops->loss) return NAN; /* a regression family: model_loss_mse */
  return A->ops->loss(A, N, y, n_correct);
}

int model_loss_mse(cs_acts *A, int N, const double *y, double *loss) {
  *loss = NAN;
  if (!A->ops->loss_mse)
    return cs_error(CS_ERR_INPUT, "model_loss_mse: the model's family has no real output");
  *loss = A->ops->loss_mse(A, N, y);
  return CS_OK;
}

int model_backward(cs_model *M, cs_acts *A, int N, const double *x) {
  if (A->js.C != 1) return cs_error(CS_ERR_INTERNAL, "model_backward needs a value forward");
  return M->ops->backward(M, A, N, x);
}

int model_train_step(cs_model *M, cs_acts *A, int N, const double *x, const int *y,
                     double *loss) {
  *loss = NAN;
  if (M->ops->train_step && A->js.C == 1 && A->ablate_kind == MODEL_ABLATE_NONE) {
    CS_CHECK(forward_inputs_check(M, A, N, x, "model_train_step"));
    A->n = N;
    return M->ops->train_step(M, A, N, x, loss);
  }
  CS_CHECK(model_forward(M, A, N, x));
  *loss = model_loss(A, N, y, NULL);
  return isfinite(*loss) ? model_backward(M, A, N, x) : CS_OK;
}

/* Value forwards of a model over n inputs, with visit(M, A, cnt, p0, ctx)
 * after each chunk of inputs p0 .. p0 + cnt − 1: the sequences of batch in
 * chunks of at most 64 for a token family (x unused), else the points x
 * (n × m) in chunks of at most 256 (the sums and gatherings of the
 * statistics below). */
typedef int (*model_chunk_fn)(const cs_model *M, const cs_acts *A, int cnt, int p0, void *ctx);
/* The same, every forward with the intervention ablate_kind at block
 * ablate_layer (model_ablation; MODEL_ABLATE_NONE: none). */
static int model_chunks_ablated(const cs_model *M, int n, const double *x,
                                const cs_token_batch *batch, int ablate_kind, int ablate_layer,
                                model_chunk_fn visit, void *ctx) {
  int T = batch ? batch->T : 0, most = batch ? 64 : 256, chunk = n < most ? n : most;
  cs_acts *A;
  CS_CHECK(model_acts_create(M, chunk, 0, &A));
  A->ablate_kind = ablate_kind, A->ablate_layer = ablate_layer;
  int rc = CS_OK;
  for (int p0 = 0; p0 < n && !rc; p0 += chunk) {
    int cnt = n - p0 < chunk ? n - p0 : chunk;
    if (batch) {
      cs_token_batch b = {T, batch->tokens + (int64_t)p0 * T, batch->scored + (int64_t)p0 * T};
      model_acts_bind_tokens(A, &b);
      rc = model_forward(M, A, cnt, NULL);
    } else {
      rc = model_forward(M, A, cnt, x + (int64_t)p0 * M->m);
    }
    if (!rc) rc = visit(M, A, cnt, p0, ctx);
  }
  model_acts_free(A);
  return rc;
}

static int model_chunks(const cs_model *M, int n, const double *x, const cs_token_batch *batch,
                        model_chunk_fn visit, void *ctx) {
  return model_chunks_ablated(M, n, x, batch, MODEL_ABLATE_NONE, 0, visit, ctx);
}

/* The sums of a statistic over the chunks and the terms added per entry. */
typedef struct {
  double *sum, terms;
  int layer; /* the attention map's block */
} model_token_sums;

static int model_sink_visit(const cs_model *M, const cs_acts *A, int cnt, int p0, void *ctx) {
  (void)p0;
  model_token_sums *S = ctx;
  S->terms += M->ops->sink_sums(M, A, cnt, S->sum);
  return CS_OK;
}

/* The attention-sink statistics (model.h): value forwards over chunks, the
 * family's sink sums per layer, group and head (its sink_sums), then per
 * layer the mean over groups of the first-token share and of the largest
 * weight, and the largest per-head first-token share. */
int model_attention_sink(const cs_model *M, int n, const double *x, const cs_token_batch *batch,
                         double *sink_mass, double *max_attn, double *sink_headmax) {
  int L = M->L, H = M->H, G = M->ops->sink_per_head ? H : 1;
  for (int l = 0; l < L; l++) sink_mass[l] = max_attn[l] = sink_headmax[l] = NAN;
  if (!M->ops->sink_sums || n < 1) return CS_OK;
  int tokens = config_family_tokens(M->cfg.family);
  if (tokens ? !batch : !x)
    return cs_error(CS_ERR_INTERNAL, "model_attention_sink: the %s family needs %s",
                    config_family_name(M->cfg.family), tokens ? "sequences" : "points");
  model_token_sums S = {NULL, 0.0, 0};
  int rc = CS_CALLOC(S.sum, (int64_t)MODEL_STAT_COUNT * L * H);
  if (!rc) rc = model_chunks(M, n, x, tokens ? batch : NULL, model_sink_visit, &S);
  double head_terms = S.terms * G / H;  // whole numbers: exact
  for (int l = 0; l < L && !rc; l++) {
    const double *sink = S.sum + ((int64_t)MODEL_STAT_SINK_MASS * L + l) * H;
    const double *top = S.sum + ((int64_t)MODEL_STAT_MAX_ATTN * L + l) * H;
    const double *head = S.sum + ((int64_t)MODEL_STAT_HEAD_SINK * L + l) * H;
    double mean = 0.0, top_mean = 0.0, head_max = -INFINITY;
    for (int j = 0; j < G; j++) {
      mean += sink[j] / S.terms / G;
      top_mean += top[j] / S.terms / G;
    }
    for (int j = 0; j < H; j++) head_max = fmax(head_max, head[j] / head_terms);
    sink_mass[l] = mean;
    max_attn[l] = top_mean;
    sink_headmax[l] = head_max;
  }
  free(S.sum);
  return rc;
}

static int model_map_visit(const cs_model *M, const cs_acts *A, int cnt, int p0, void *ctx) {
  (void)p0;
  model_token_sums *S = ctx;
  S->terms += M->ops->attn_map_sums(M, A, cnt, S->layer, S->sum);
  return CS_OK;
}

/* A token family's attention map (model.h): value forwards over chunks of
 * at most 64 sequences, the weights summed (the family's attn_map_sums),
 * then the mean. */
int model_attention_map_tokens(const cs_model *M, int n, const cs_token_batch *batch, int layer,
                               double *map) {
  int T = batch->T;
  if (!M->ops->attn_map_sums || layer < 0 || layer >= M->L || n < 1)
    return cs_error(CS_ERR_INPUT, "model_attention_map_tokens: needs an lm model, a layer in 0..%d "
                    "and sequences (layer %d, n = %d)", M->L - 1, layer, n);
  memset(map, 0, sizeof(double) * (size_t)T * T);
  model_token_sums S = {map, 0.0, layer};
  int rc = model_chunks(M, n, NULL, batch, model_map_visit, &S);
  for (int64_t i = 0; i < (int64_t)T * T && !rc; i++) map[i] /= S.terms;
  return rc;
}

static int model_gate_visit(const cs_model *M, const cs_acts *A, int cnt, int p0, void *ctx) {
  (void)p0;
  model_token_sums *S = ctx;
  S->terms += M->ops->gate_sums(M, A, cnt, S->sum);
  return CS_OK;
}

/* A token family's gate magnitudes (model.h): value forwards over chunks
 * of at most 64 sequences, the gate values summed (the family's gate_sums),
 * then the means. */
int model_gate_means_tokens(const cs_model *M, int n, const cs_token_batch *batch, double *later,
                            double *bos) {
  int L = M->L, T = batch->T;
  if (!M->ops->gate_sums || M->n_gate == 0 || n < 1 || T < 2)
    return cs_error(CS_ERR_INPUT, "model_gate_means_tokens: needs a gated lm model and sequences of "
                    "at least 2 tokens (n = %d, T = %d, gate width %d)", n, T, M->n_gate);
  model_token_sums S = {NULL, 0.0, 0};
  int rc = CS_CALLOC(S.sum, 2 * (size_t)L);
  if (!rc) rc = model_chunks(M, n, NULL, batch, model_gate_visit, &S);
  for (int l = 0; l < L && !rc; l++) {
    later[l] = S.sum[2 * l] / S.terms;
    bos[l] = S.sum[2 * l + 1] / ((double)n * M->n_gate);
  }
  free(S.sum);
  return rc;
}

/* Every block's |h|, ‖h_t‖ and ‖v_t‖ of the n sequences (NT = n·T rows). */
typedef struct {
  double *abs_h, *nh, *nv;
  int64_t NT;
  int T;
} model_extreme_rows;

static int model_extreme_visit(const cs_model *M, const cs_acts *A, int cnt, int p0, void *ctx) {
  model_extreme_rows *E = ctx;
  int64_t NT = E->NT, d = M->d, T = E->T;
  for (int l = 0; l < M->L; l++)
    M->ops->extreme_collect(M, A, cnt, l, E->abs_h + (int64_t)l * NT * d + (int64_t)p0 * T * d,
                            E->nh + (int64_t)l * NT + (int64_t)p0 * T,
                            E->nv + (int64_t)l * NT + (int64_t)p0 * T);
  return CS_OK;
}

/* A token family's extreme-token statistics (model.h): value forwards over
 * chunks of at most 64 sequences, every block's |h|, ‖h_t‖ and ‖v_t‖
 * gathered (the family's extreme_collect), then the ratios with pooled medians
 * (cs_quantile_sorted at 1/2). */
int model_extreme_tokens(const cs_model *M, int n, const cs_token_batch *batch, double *out) {
  int L = M->L, d = M->d, T = batch->T;
  for (int i = 0; i < L * MODEL_EXTREME_COUNT; i++) out[i] = NAN;
  if (!M->ops->extreme_collect || n < 1) return CS_OK;
  int64_t NT = (int64_t)n * T;
  model_extreme_rows E = {NULL, NULL, NULL, NT, T};
  int rc = CS_CALLOC(E.abs_h, NT * d * L);
  if (!rc) rc = CS_CALLOC(E.nh, NT * L);
  if (!rc) rc = CS_CALLOC(E.nv, NT * L);
  if (!rc) rc = model_chunks(M, n, NULL, batch, model_extreme_visit, &E);
  double *abs_h = E.abs_h, *nh = E.nh, *nv = E.nv;
  /* per block: BOS norms apart (their mean), the rest sorted for medians */
  for (int l = 0; l < L && !rc; l++) {
    double *ah = abs_h + (int64_t)l * NT * d, *h = nh + (int64_t)l * NT, *v = nv + (int64_t)l * NT;
    double mx = 0.0, mh = 0.0, mv = 0.0;
    for (int64_t i = 0; i < NT * d; i++) mx = fmax(mx, ah[i]);
    qsort(ah, (size_t)(NT * d), sizeof *ah, cs_compare_doubles);
    int64_t k = 0;
    for (int p = 0; p < n; p++) { /* compact: drop the BOS rows, keep their norms */
      mh += h[(int64_t)p * T] / n, mv += v[(int64_t)p * T] / n;
      for (int t = 1; t < T; t++, k++) h[k] = h[(int64_t)p * T + t], v[k] = v[(int64_t)p * T + t];
    }
    qsort(h, (size_t)k, sizeof *h, cs_compare_doubles);
    qsort(v, (size_t)k, sizeof *v, cs_compare_doubles);
    double *o = out + (int64_t)l * MODEL_EXTREME_COUNT;
    o[MODEL_EXTREME_MASSIVE] = mx / cs_quantile_sorted(ah, (int)(NT * d), 0.5);
    o[MODEL_EXTREME_DRAIN] = mv / cs_quantile_sorted(v, (int)k, 0.5);
    o[MODEL_EXTREME_PEAK] = mh / cs_quantile_sorted(h, (int)k, 0.5);
  }
  free(abs_h), free(nh), free(nv);
  return rc;
}

/* ------------------------------------ attention entropy and gate values */

/* What model_block_stats gathers over the chunks: per block the sum of the
 * normalised entropies and their count, and the gate values in place. */
typedef struct {
  double *ent_sum, *ent_terms; /* L each */
  double *gates;               /* L × rows × ng, or NULL */
  int64_t rows;                /* n · positions */
  int ng;
} model_block_sums;

/* Normalised entropy −Σ p log p / log k of one query's k ≥ 2 weights w
 * (0 log 0 = 0). */
static double model_row_entropy(int k, const double *w) {
  double h = 0.0;
  for (int s = 0; s < k; s++)
    if (w[s] > 0.0) h -= w[s] * log(w[s]);
  return h / log((double)k);
}

static int model_block_visit(const cs_model *M, const cs_acts *A, int cnt, int p0, void *ctx) {
  model_block_sums *B = ctx;
  for (int l = 0; l < M->L; l++) {
    model_block_view v;
    memset(&v, 0, sizeof v);
    M->ops->block_view(M, A, cnt, l, &v);
    if (v.rows != (int64_t)cnt * v.positions)
      return cs_error(CS_ERR_INTERNAL, "model_block_stats: block %d has %lld rows for %d inputs "
                      "of %d positions", l + 1, (long long)v.rows, cnt, v.positions);
    for (int64_t r = 0; v.p && r < v.rows; r++) {
      int k = v.causal ? (int)(r % v.positions) + 1 : v.keys;
      if (k < 2) continue; /* one key: nothing to choose */
      for (int j = 0; j < M->H; j++) {
        B->ent_sum[l] += model_row_entropy(k, v.p + r * M->H * v.keys + (int64_t)j * v.keys);
        B->ent_terms[l] += 1.0;
      }
    }
    if (B->gates && v.g)
      memcpy(B->gates + ((int64_t)l * B->rows + (int64_t)p0 * v.positions) * B->ng, v.g,
             sizeof(double) * (size_t)v.rows * B->ng);
  }
  return CS_OK;
}

/* The number of token positions of an input of M: a value forward of one
 * input and block 0's view (1 without attention blocks). */
static int model_positions(const cs_model *M, const double *x, const cs_token_batch *batch,
                           int *positions) {
  *positions = 1;
  if (!M->ops->block_view) return CS_OK;
  if (config_family_tokens(M->cfg.family)) {
    *positions = batch->T;
    return CS_OK;
  }
  cs_acts *A;
  CS_CHECK(model_acts_create(M, 1, 0, &A));
  int rc = model_forward(M, A, 1, x);
  model_block_view v;
  memset(&v, 0, sizeof v);
  if (!rc) M->ops->block_view(M, A, 1, 0, &v);
  if (!rc) *positions = v.positions;
  model_acts_free(A);
  return rc;
}

int model_block_stats(const cs_model *M, int n, const double *x, const cs_token_batch *batch,
                      double *entropy, double **gates, int64_t *rows, int *width) {
  int L = M->L, tokens = config_family_tokens(M->cfg.family), positions = 1;
  for (int l = 0; l < L; l++) entropy[l] = NAN;
  *gates = NULL, *rows = 0, *width = 0;
  if (!M->ops->block_view || n < 1) return CS_OK;
  if (tokens ? !batch : !x)
    return cs_error(CS_ERR_INTERNAL, "model_block_stats: the %s family needs %s",
                    config_family_name(M->cfg.family), tokens ? "sequences" : "points");
  CS_CHECK(model_positions(M, x, batch, &positions));
  model_block_sums B = {NULL, NULL, NULL, (int64_t)n * positions, M->n_gate};
  int rc = CS_CALLOC(B.ent_sum, 2 * (int64_t)L);
  if (!rc) B.ent_terms = B.ent_sum + L;
  if (!rc && B.ng) rc = CS_CALLOC(B.gates, (int64_t)L * B.rows * B.ng);
  if (!rc) rc = model_chunks(M, n, x, tokens ? batch : NULL, model_block_visit, &B);
  for (int l = 0; l < L && !rc; l++)
    if (B.ent_terms[l] > 0) entropy[l] = B.ent_sum[l] / B.ent_terms[l];
  free(B.ent_sum);
  if (rc) {
    free(B.gates);
    return rc;
  }
  *gates = B.gates, *rows = B.gates ? B.rows : 0, *width = B.gates ? B.ng : 0;
  return CS_OK;
}

/* ----------------------------------------------------------- ablations */

/* The loss summed over the chunks, weighted by their scored targets. */
typedef struct {
  const cs_token_batch *batch;
  double loss;
  int64_t scored;
} model_loss_sums;

static int model_loss_visit(const cs_model *M, const cs_acts *A, int cnt, int p0, void *ctx) {
  (void)M;
  model_loss_sums *S = ctx;
  int64_t T = S->batch->T, ns = 0;
  for (int64_t i = (int64_t)p0 * T; i < (int64_t)(p0 + cnt) * T; i++)
    ns += (i % T) > 0 && S->batch->scored[i] != 0;
  /* model_loss writes the loss gradient into the workspace: no other use here */
  S->loss += model_loss((cs_acts *)A, cnt, NULL, NULL) * (double)ns;
  S->scored += ns;
  return CS_OK;
}

/* The mean next-token loss of the n sequences under one intervention. */
static int model_loss_ablated(const cs_model *M, int n, const cs_token_batch *batch, int kind,
                              int layer, double *loss) {
  model_loss_sums S = {batch, 0.0, 0};
  CS_CHECK(model_chunks_ablated(M, n, NULL, batch, kind, layer, model_loss_visit, &S));
  *loss = S.scored ? S.loss / (double)S.scored : NAN;
  return CS_OK;
}

int model_ablation_deltas(const cs_model *M, int n, const cs_token_batch *batch,
                          double *first_token, double *attention, double *intact) {
  for (int l = 0; l < M->L; l++) first_token[l] = attention[l] = NAN;
  if (intact) *intact = NAN;
  if (!M->ops->ablates || n < 1) return CS_OK;
  if (!batch) return cs_error(CS_ERR_INTERNAL, "model_ablation_deltas: no sequences");
  double base;
  CS_CHECK(model_loss_ablated(M, n, batch, MODEL_ABLATE_NONE, 0, &base));
  for (int l = 0; l < M->L; l++) {
    double a, b;
    CS_CHECK(model_loss_ablated(M, n, batch, MODEL_ABLATE_FIRST_TOKEN, l, &a));
    CS_CHECK(model_loss_ablated(M, n, batch, MODEL_ABLATE_ATTENTION, l, &b));
    first_token[l] = a - base;
    attention[l] = b - base;
  }
  if (intact) *intact = base;
  return CS_OK;
}

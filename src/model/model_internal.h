/* model_internal.h — what the files of src/model share (not a public header).
 *
 * The files, each using only those below it (docs/ARCHITECTURE.md; the
 * build rejects a call cycle between them, cmake/check_cycles.cmake):
 *
 *   model.c        parameters and workspace of any family, the family
 *                  table and the dispatch of model.h through it
 *   memory_attn.c  the memory family: embedding, memory attention (slots,
 *                  gate) or mlp blocks, readout; forward on values or jets,
 *                  backward
 *   mha.c          the mha family: one multi-head attention layer over
 *                  token sets given as data, read at one output coordinate
 *                  of the query token (the teacher task's teacher and
 *                  student), forward on values and backward
 *   self_attn.c    the self family: feature tokenizer with CLS, multi-head
 *                  self-attention over tokens with the gate at g1..g5
 *                  (docs/MODELS.md), forward, backward, the attention sink
 *   lm_attn.c      the lm family: decoder-only causal transformer over
 *                  token sequences (gates g1..g5, optional GELU MLP),
 *                  forward on values and on jets of the last position;
 *                  lm_backward.c its loss, backward and sequence
 *                  statistics, lm_products.c its per-head products
 *   layers.c       the layer toolbox the families share (layers.h): linear,
 *                  LayerNorm, embedding, mlp, the gate, the attention
 *                  output sublayer (g1, g5), the token families' attention
 *                  input [Q | K | V | Z] (g2..g4), readout, loss, residual
 *   sizes.c        the memory-estimate terms the families on points share
 *                  (docs/SPEC.md, "Sizes")
 *   tensors.c      the parameter table: tensors appended by a family's
 *                  layout, their initialisation, views by index and name
 *   jet.c          the chain rules of second-order jets and the Leibniz
 *                  pairs of their rows (jet.h)
 *
 * Notation: N points, C jet rows per point (1 in training), R = N·C rows,
 * m input dim, d width, n slots, H heads, dh = d/H head dim. A weight W
 * maps in -> out and is out × in, so a linear layer is Y = X Wᵀ (+ b). */
#ifndef CURVSWEEP_MODEL_INTERNAL_H
#define CURVSWEEP_MODEL_INTERNAL_H

#include "curvsweep/model.h"
#include "jet.h"

#include <stdint.h>

#define N_CLASSES 2
#define LN_EPS 1e-5
#define MAX_TENSORS 512

typedef struct model_family_ops model_family_ops;

/* A family's terms of a cell's memory estimate (docs/SPEC.md, "Sizes";
 * model_cell_memory adds the rest): doubles of the parameters and of one
 * activation row over every layer, bytes of the curvature jets of one
 * chunk and of the training and test data. */
typedef struct {
  uint64_t params, row, jets, data;
} model_memory_terms;

typedef enum { INIT_NORMAL, INIT_ZEROS, INIT_ONES } init_kind;

typedef struct {
  char name[48];
  int rows, cols;
  int64_t offset;
  int decays;     /* weight matrices take weight decay; biases and LN gains do not */
  init_kind init; /* how model_init_tensors draws it (normal: N(0, std²)) */
  double std;
} tensor_entry;

/* A model of any family: its shape, the parameter array and its table of
 * named tensors. Where each tensor of a layer sits is the family's own
 * business (layout, one allocation the family makes in its layout op and
 * model_free releases); only the readout, which every family ends in, is
 * here. */
struct cs_model {
  cs_config cfg;
  const la_team *team;
  const model_family_ops *ops; /* the row of the family table for cfg.family */
  int L, m, d, n, H, dh, n_gate; /* n_gate: gate width (d, H, or 0: config_arch_gate_width) */
  int n_classes, n_logits;       /* readout width, logits per point (readout_layout) */
  int64_t n_params;
  double *params, *grads;
  int n_tensors;
  tensor_entry tensors[MAX_TENSORS];
  int64_t readout_W, readout_b;
  void *layout; /* the family's tensor offsets */
};

/* The workspace of any family: the representation after each prefix (what
 * the geometry reads), the logits and a scratch array; everything else a
 * family needs (per-layer caches, backward buffers) is its own (fam). */
struct cs_acts {
  const model_family_ops *ops; /* the model's (model_loss and model_acts_free need no model) */
  int max_points, n, L;
  jet_shape js;
  double **h;               /* L + 1 arrays, R × d: h_0 .. h_L */
  double *tmp;              /* R × max(d, 2H, 2) scratch (LayerNorm moments, loss terms) */
  double *logits, *dlogits; /* N × n_logits */
  void *fam;                /* the family's workspace (its acts_create, acts_free) */
  cs_token_batch tok;       /* lm family: the bound sequences (model_acts_bind_tokens) */
  /* the intervention the next value forward applies (model_ablation_deltas;
   * a family with `ablates`): none (0), or model_ablation kind at block
   * ablate_layer (0-based) */
  int ablate_kind, ablate_layer;
};

/* What block l of a family with attention leaves after a value forward of
 * N inputs (its block_view op), for the per-layer attention and gate
 * statistics (docs/MODELS.md, "Gate scores and attention entropy"):
 *   p      rows × H·keys attention weights, head j in columns j·keys ..
 *          j·keys + keys − 1 (NULL: the block has no attention, e.g. mlp)
 *   g      rows × n_gate gate values σ (NULL: ungated)
 *   rows   N·positions: row (input p, position t) is p·positions + t
 *   positions  token positions per input (1: the memory family's query)
 *   keys   keys per head (the tokens, or the memory slots)
 *   causal 1: the query at position t sees keys s ≤ t only (their weights
 *          are the first t + 1 of its keys; the others are 0) */
typedef struct {
  const double *p, *g;
  int64_t rows;
  int positions, keys, causal;
} model_block_view;

/* The attention-sink sums a family with a first token reports (its
 * sink_sums op; docs/MODELS.md), each summed over its queries after the
 * first token. */
typedef enum {
  MODEL_STAT_SINK_MASS = 0, /* attention weight of a query on token 0 */
  MODEL_STAT_MAX_ATTN,      /* largest attention weight of a query */
  MODEL_STAT_HEAD_SINK,     /* attention weight of a query on token 0, per head */
  MODEL_STAT_COUNT
} model_stat;

/* One model family: one file that defines these operations in a
 * `const model_family_ops <family>_family_ops` and its row in the family
 * table of model.c (docs/ARCHITECTURE.md, "A new model family"). model.c
 * calls them; they call only layers.c, tensors.c and jet.c. */
struct model_family_ops {
  /* Append the family's tensors to the table in order (model_add_tensor;
   * the readout last: readout_layout) and set M->layout to their offsets.
   * May refuse a shape the family cannot build (CS_ERR_INPUT). */
  int (*layout)(cs_model *M);
  /* The family's workspace for up to A->max_points points (A->js, A->h,
   * A->tmp and the logits are made): A->fam, released by acts_free. */
  int (*acts_create)(const cs_model *M, cs_acts *A, int jet_order);
  void (*acts_free)(void *fam);
  /* Forward on N points x (N × m): h_0 .. h_L of the representation (jets
   * with C > 1) and, on values, the logits. */
  int (*forward)(const cs_model *M, cs_acts *A, int N, const double *x);
  /* Mean loss of the last value forward against labels y, correct count,
   * dL/dlogits into A->dlogits. */
  double (*loss)(cs_acts *A, int N, const int *y, int *n_correct);
  /* A family with one real output per point (mha): mean squared error of
   * the last value forward against targets y, dL/dlogits into A->dlogits
   * (NULL for the classification families; loss is NULL for this one). */
  double (*loss_mse)(cs_acts *A, int N, const double *y);
  /* Backward of the last value forward and loss: dL/dθ accumulated into M->grads. */
  int (*backward)(cs_model *M, cs_acts *A, int N, const double *x);
  /* Optional: forward, loss and backward of one training step on N
   * points in one call (*loss the loss op's value), with the bits of the
   * three calls; the activations after it are not those of a forward.
   * NULL: model_train_step makes the three calls. */
  int (*train_step)(cs_model *M, cs_acts *A, int N, const double *x, double *loss);
  /* Nominal flops of one forward per point (products only). */
  double (*flops_per_point)(const cs_config *cfg);
  /* The attention-sink sums after a value forward of N inputs (points, or
   * the bound sequences), for every layer l, over the queries t ≥ 1, in
   * sum[(stat·L + l)·H + j]: for the first two stats per group j < G
   * (G = H when sink_per_head, else 1: the heads pooled), for the third per
   * head j < H (terms·G/H of them per entry):
   *   MODEL_STAT_SINK_MASS  += their weights on token 0
   *   MODEL_STAT_MAX_ATTN   += their largest weights
   *   MODEL_STAT_HEAD_SINK  += their weights on token 0, one head's
   * returns the terms added per group entry. NULL: the family has no first
   * token (config's first_token; NaN in the results). model.c's
   * model_attention_sink makes the statistics of them. */
  double (*sink_sums)(const cs_model *M, const cs_acts *A, int N, double *sum);
  int sink_per_head;
  /* The family's terms of the memory estimate of a cell of config c (gate
   * width ng), with size.h's checked arithmetic (*over on overflow);
   * families on points take their jets and data from sizes_points. */
  void (*memory)(const cs_config *c, uint64_t ng, model_memory_terms *t, int *over);
  /* The sequence statistics of a token family after a value forward of N
   * sequences (model.c's attention map and extreme tokens; NULL for
   * families on points). attn_map_sums: map[t·T + s] += the weight query t
   * puts on key s in block l, over heads and sequences, returns the terms
   * per entry. extreme_collect: block l's residual stream h and values v at
   * the N·T positions, row p·T + t: abs_h (N·T × d) |h|, norm_h ‖h‖,
   * norm_v ‖v‖. */
  double (*attn_map_sums)(const cs_model *M, const cs_acts *A, int N, int l, double *map);
  /* gate_sums: sum[2l] += the gate values σ at the query positions t ≥ 1,
   * sum[2l + 1] += those at BOS (t = 0), over the gate's channels (or
   * heads) and the N sequences; returns the terms added to sum[2l]
   * (those of sum[2l + 1] are N·n_gate). Called only for a gated model. */
  double (*gate_sums)(const cs_model *M, const cs_acts *A, int N, double *sum);
  void (*extreme_collect)(const cs_model *M, const cs_acts *A, int N, int l, double *abs_h,
                          double *norm_h, double *norm_v);
  /* Block l's attention weights and gate after a value forward of N inputs
   * (model_block_view; NULL: the family has no attention blocks, e.g. mha,
   * whose model has no curvature rows either). */
  void (*block_view)(const cs_model *M, const cs_acts *A, int N, int l, model_block_view *v);
  /* 1: the family's value forward applies A->ablate_kind at block
   * A->ablate_layer (model_ablation, model.h: the lm family). */
  int ablates;
};

/* sizes.c: the memory estimate's terms every family on points shares: the
 * doubles of a row's input, embedding, readout and scratch (base); and the
 * jets of one curvature chunk of points and of the field grid through
 * activation rows of row doubles, and the datasets (t->jets, t->data). */
uint64_t sizes_point_base(const cs_config *c, int *over);
void sizes_points(const cs_config *c, uint64_t row, model_memory_terms *t, int *over);
/* sizes.c: the points of one curvature chunk (*chunk) and the jet
 * coefficients of a point (*C: value, gradient, Hessian). */
void sizes_chunk(const cs_config *c, uint64_t *chunk, uint64_t *C);

#define VIEW(M, r, c, ld, p) la_view((M)->team, (r), (c), (ld), (p))

/* ---- tensors.c: the parameter table ---- */
/* Append a tensor at the end of the parameter array; returns its offset.
 * Its initialisation follows its name: biases (a last path component
 * starting with b) and ln_b zeros, ln_g ones, every other tensor
 * N(0, 1/cols) (docs/MODELS.md); model_set_init overrides it. */
int64_t model_add_tensor(cs_model *M, const char *name, int rows, int cols, int decays);
/* Initialise the tensor appended last as kind (normal: N(0, std²)). */
void model_set_init(cs_model *M, init_kind kind, double std);
/* The same for "layer<l>/<short_name>". */
int64_t model_add_layer_tensor(cs_model *M, int layer, const char *short_name, int rows,
                               int cols, int decays);
/* Every tensor of the table from its own stream keyed by (seed, name). */
void model_init_tensors(cs_model *M);

#endif

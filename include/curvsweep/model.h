/* model.h — gated and ungated attention models (docs/MODELS.md): the
 * memory family below, the self family (family = self: feature tokens
 * with a CLS token, self-attention over tokens, the gate at g1..g5; the
 * representation h_l is the CLS row, with the same layout) and the lm
 * family (family = lm: a decoder-only transformer over token sequences,
 * its own calls at the end of this header).
 *
 *   h_0     = W_e x + b_e                                   embedding
 *   a       = h_l  or  LayerNorm(h_l)                        (norm = pre)
 *   layer   = memory attention (ungated | gated | gated-headwise) or mlp
 *   h_{l+1} = y  or  h_l + y                                 (residual)
 *   logits  = W_r h_L + b_r;  loss = softmax cross-entropy
 *
 * Parameters live in one flat array (llm.c style) described by a table of
 * named tensors; each tensor is initialised from its own counter-based
 * stream keyed by (seed, layer, name), so tensors two archs share are
 * bit-identical at the same seed.
 *
 * The forward pass runs on values (training) or on second-order jets
 * (geometry): one code path, jet_order 0 or 2. With jets, the activation
 * after layer l holds μ_l(x), ∂μ_l/∂x and ∂²μ_l/∂x² for every point, in the
 * layout of geom.h.
 *
 * Every function below serves every family: each family is one file of
 * src/model and one row of its family table (docs/ARCHITECTURE.md, "A new
 * model family"). */
#ifndef CURVSWEEP_MODEL_H
#define CURVSWEEP_MODEL_H

#include "curvsweep/config.h"
#include "curvsweep/la.h"
#include "curvsweep/size.h"
#include "curvsweep/tensor.h"

#include <stdint.h>

typedef struct cs_model cs_model;
typedef struct cs_acts cs_acts;

/* Build the model described by cfg (arch, depth, width, slots, heads,
 * residual, norm, input_dim, seed) and initialise its parameters. team is
 * the la team it computes on (NULL: 1×1). */
int model_create(const cs_config *cfg, const la_team *team, cs_model **out);
void model_free(cs_model *model);

int64_t model_param_count(const cs_model *model);
double *model_params(cs_model *model);
double *model_grads(cs_model *model);
int model_depth(const cs_model *model);
int model_width(const cs_model *model);
/* Classes of the readout: 2 for the point tasks, the vocabulary V for an
 * lm model (its logits per position), 0 for the mha family's real output. */
int model_classes(const cs_model *model);

/* Named tensors: a view into the parameter array (no copy). */
int model_tensor_count(const cs_model *model);
void model_tensor(cs_model *model, int i, cs_tensor *view, int *decays);
/* CS_ERR_INPUT when no tensor has that name. */
int model_find_tensor(cs_model *model, const char *name, cs_tensor *view);

/* Workspace for forward/backward on up to max_points points.
 * jet_order 0: values only (training, evaluation); 2: second-order jets. */
int model_acts_create(const cs_model *model, int max_points, int jet_order, cs_acts **out);
void model_acts_free(cs_acts *acts);
int model_acts_jet_rows(const cs_acts *acts); /* C: 1, or 1 + m + m(m+1)/2 */
int model_acts_capacity(const cs_acts *acts);  /* max_points */

/* Forward pass on n points x (n × m). Fills h_0..h_L; with jet_order 0
 * also the logits. */
int model_forward(const cs_model *model, cs_acts *acts, int n, const double *x);
/* h_l (l = 0..L) after the last forward: (n·C) × width rows. */
const double *model_layer_output(const cs_acts *acts, int l);
/* The logits after a value forward: n × the model's logits per point (2
 * classes for the point tasks; T·V for an lm sequence). */
const double *model_logits(const cs_acts *acts);

/* Mean softmax cross-entropy of the last forward against labels y, and the
 * number of correct predictions; also stores dL/dlogits for backward. */
double model_loss(cs_acts *acts, int n, const int *y, int *n_correct);
/* The mha family (docs/MODELS.md, "Estimation"): one real output per
 * point (model_logits, n × 1); *loss the mean squared error of the last
 * value forward against targets y, dL/dlogits stored for backward.
 * CS_ERR_INPUT for a classification family (model_loss is theirs; it is
 * NaN for this one). */
int model_loss_mse(cs_acts *acts, int n, const double *y, double *loss);
/* Backward of the last forward + loss: accumulates dL/dθ into the grads
 * array (the caller zeroes it). Needs a value forward (jet_order 0). */
int model_backward(cs_model *model, cs_acts *acts, int n, const double *x);
/* One training step of a classification family: model_forward on n
 * points x, model_loss against y (*loss) and, when the loss is finite,
 * model_backward. A family may run the three as one pass over chunks of
 * its inputs (the lm family, docs/DECISIONS.md "The lm family's training
 * step, chunk by chunk"): the same bits, but the activations after the
 * step are not the forward's, and with a non-finite loss the grads hold
 * the backward's terms (the caller discards the step). */
int model_train_step(cs_model *model, cs_acts *acts, int n, const double *x, const int *y,
                     double *loss);

/* ---- the lm family (docs/MODELS.md, "Language-model family") ----
 * Its inputs are token sequences: n sequences of T tokens (BOS = vocab at
 * position 0) with the scored targets (tasks.h). A sequence is a "point"
 * of the calls above: model_forward's x is then the probe-plane offset of
 * the last token's embedding (n × m), or NULL for none (training and
 * evaluation); model_layer_output is the residual stream at the last
 * position after each block; model_loss is the mean next-token
 * cross-entropy over the scored targets (y unused) and n_correct counts
 * the scored targets whose argmax is right. */
typedef struct {
  int T;                       /* tokens per sequence including BOS */
  const int *tokens;           /* n × T */
  const unsigned char *scored; /* n × T: target t of the prediction at t − 1 scored */
} cs_token_batch;

/* The sequences the next model_forward (and the model_loss and
 * model_backward after it) of an lm model reads: sequence p of the call is
 * row p of batch, which must stay valid until then. */
void model_acts_bind_tokens(cs_acts *acts, const cs_token_batch *batch);

/* The attention-sink statistics (docs/MODELS.md) at every prefix l = 1..L
 * of a family with a first token (the CLS token of the self family, BOS of
 * the lm family; config's first_token), from value forwards over n inputs:
 * the points x (n × m) of a family on points, or the sequences of batch of
 * a token family (the other may be NULL). sink_mass[l-1] the mean
 * attention weight the queries t ≥ 1 put on the first token, over heads,
 * queries and inputs; max_attn[l-1] the mean largest weight of such a
 * query, over the same; sink_headmax[l-1] the largest over heads of a
 * head's first-token share (the head's mean over queries and inputs). NaN
 * for a family without a first token (the memory family). */
int model_attention_sink(const cs_model *model, int n, const double *x, const cs_token_batch *batch,
                         double *sink_mass, double *max_attn, double *sink_headmax);

/* The lm family's attention map of block `layer` (0-based), from value
 * forwards over n sequences: map[t·T + s] (T × T, T = batch->T) the mean
 * over heads and sequences of the weight query t puts on key s (0 above
 * the diagonal: causal). CS_ERR_INPUT for another family or a bad layer. */
int model_attention_map_tokens(const cs_model *model, int n, const cs_token_batch *batch, int layer,
                               double *map);

/* The gate magnitudes of a gated lm model at every block l = 1..L, from
 * value forwards over n sequences (docs/MODELS.md): later[l-1] the mean
 * gate value σ over the gate's channels (or heads), sequences and the
 * positions t ≥ 1; bos[l-1] the same at BOS (t = 0). Where a gate is
 * nearly closed, the attention pattern it follows barely affects the loss.
 * CS_ERR_INPUT for an ungated model or another family. */
int model_gate_means_tokens(const cs_model *model, int n, const cs_token_batch *batch, double *later,
                            double *bos);

/* The lm family's other extreme-token statistics (docs/MODELS.md) after
 * every block l = 1..L, over n sequences (value forwards), into
 * out[(l-1)·MODEL_EXTREME_COUNT + k]:
 *   MODEL_EXTREME_MASSIVE  max |h| / median |h| over positions and channels
 *                          of the residual stream (Sun et al. 2024)
 *   MODEL_EXTREME_DRAIN    mean ‖v_BOS‖ / median over positions t ≥ 1 of ‖v_t‖,
 *                          v the block's values (after a g2 gate)
 *   MODEL_EXTREME_PEAK     mean ‖h_BOS‖ / median over t ≥ 1 of ‖h_t‖
 * (medians pooled over the sequences). In /curvature as massive_act,
 * value_drain, resid_peak (docs/ARCHIVE.md). */
typedef enum {
  MODEL_EXTREME_MASSIVE = 0,
  MODEL_EXTREME_DRAIN,
  MODEL_EXTREME_PEAK,
  MODEL_EXTREME_COUNT
} model_extreme;
int model_extreme_tokens(const cs_model *model, int n, const cs_token_batch *batch, double *out);

/* The per-layer attention and gate statistics of docs/MODELS.md ("Gate
 * scores and attention entropy") at every block l = 1..L, from value
 * forwards over n inputs (the points x of a family on points, the
 * sequences of batch of a token family; the other may be NULL):
 *   entropy[l-1]  the mean over inputs, query positions and heads of the
 *                 attention entropy −Σ_s p_s log p_s of a query over its
 *                 keys divided by log(its number of keys); queries with one
 *                 key (the lm family's BOS) are left out; NaN for a block
 *                 without attention (mlp) or with a single key
 *   *gates        (gated models; else NULL) malloc'ed L × *rows × *width
 *                 gate values σ: block l−1's rows, row p·positions + t for
 *                 input p and token position t (every position: the query
 *                 of the memory family, every token of the token
 *                 families), one column per gate channel (the heads of a
 *                 headwise gate); the caller frees it.
 * Families without attention blocks (mha): every entropy NaN, no gates. */
int model_block_stats(const cs_model *model, int n, const double *x, const cs_token_batch *batch,
                      double *entropy, double **gates, int64_t *rows, int *width);

/* The interventions of model_ablation_deltas (docs/MODELS.md, "What a
 * sink does"), at one block:
 *   MODEL_ABLATE_FIRST_TOKEN  every query t ≥ 1 attends to the keys s = 1..t
 *                             only: its softmax taken over them (the weights
 *                             renormalised without the first token); the
 *                             first query, which has no other key, unchanged
 *   MODEL_ABLATE_ATTENTION    the attention sublayer's output (after its
 *                             gate) removed: the block's residual stream
 *                             passes it unchanged */
typedef enum {
  MODEL_ABLATE_NONE = 0,
  MODEL_ABLATE_FIRST_TOKEN,
  MODEL_ABLATE_ATTENTION,
  MODEL_ABLATE_COUNT
} model_ablation;

/* The change in mean next-token loss over the scored targets of the n
 * sequences of batch when block l = 1..L alone is ablated (value forwards):
 * first_token[l-1] and attention[l-1] the ablated loss minus the intact
 * one, *intact (may be NULL) the intact loss. Every value NaN for a family
 * without interventions (every family but lm). */
int model_ablation_deltas(const cs_model *model, int n, const cs_token_batch *batch,
                          double *first_token, double *attention, double *intact);

/* Nominal floating-point operations of one forward pass per point (the
 * products only), for cost estimates and benchmarks. */
double model_forward_flops_per_point(const cs_config *cfg);

/* The memory estimate of a cell of config cfg (docs/SPEC.md, "Sizes"), in
 * bytes by part (size.h's CELL_MEM_*), from the family's own terms; *over
 * is set when a part passes 2^64 - 1. The spec's cell_memory for a run
 * (spec_load_options); model_create refuses a config past CELL_MAX_BYTES. */
void model_cell_memory(const cs_config *cfg, uint64_t part[CELL_MEM_PARTS], int *over);

#endif

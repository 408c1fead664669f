/* lm_check.c — the rows of `curvsweep verify` for the lm family
 * (docs/NUMERICS.md, "Checks of the lm family").
 *
 * The lm family has LayerNorm before every sublayer, so unlike the memory
 * and self families it has no affine skeleton whose flatness could be
 * checked: its representation is curved with or without a gate. What holds
 * exactly instead, and is checked on the probe plane's jets (value, first
 * and second rows at the last position, every prefix):
 *   1. an ungated model ignores `gate`: its jets at g2..g5 are bitwise those
 *      at g1 (the sweep trains such cells once, docs/SWEEP.md);
 *   2. a gate whose weights and bias are zero is σ(0) = 1/2 everywhere, so
 *      the gated model equals the ungated one with the gated tensor halved:
 *      g1 (on the SDPA output, before W_o) W_o; g2 (on V) W_v; g3 (on K)
 *      W_k; g4 (on Q) W_q; g5 (on the output projection) W_o and b_o. Both
 *      archs, elementwise and one gate per head. The two models' products
 *      have different shapes ([Q|K|V|Z] against [Q|K|V]), so only rounding
 *      agreement (1e-12 relative) is asserted; measured here, they agree
 *      bitwise. Halving a wrong tensor (W_q for g1) gives 0.36. */
#include "curvsweep/verify.h"

#include "curvsweep/config.h"
#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/rng.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LM_V = 8, LM_T = 6, LM_SEQ = 4, LM_WIDTH = 8, LM_HEADS = 2 };

static cs_config lm_config(cs_arch arch, cs_gate_pos gate, int depth, int mlp_ratio) {
  cs_config c = config_default();
  c.family = FAMILY_LM, c.task = TASK_BIGRAM_BACKCOPY, c.arch = arch, c.gate = gate;
  c.vocab = LM_V, c.seq_len = LM_T, c.width = LM_WIDTH, c.heads = LM_HEADS;
  c.mlp_ratio = mlp_ratio, c.depth = depth, c.input_dim = 2, c.seed = 7;
  return c;
}

/* Copy every tensor of src that dst has too (by name); then halve dst's
 * tensor `halve` in every block (NULL: none) and, with halve_bo, b_o. */
static int lm_copy_params(cs_model *src, cs_model *dst, const char *halve, int halve_bo) {
  for (int t = 0; t < model_tensor_count(dst); t++) {
    cs_tensor v, s;
    model_tensor(dst, t, &v, NULL);
    CS_CHECK(model_find_tensor(src, v.name, &s));
    memcpy(v.v, s.v, sizeof(double) * v.rows * v.cols);
    const char *leaf = strrchr(v.name, '/');
    leaf = leaf ? leaf + 1 : v.name;
    int in_block = strncmp(v.name, "layer", 5) == 0 && strchr(v.name, '/') == strrchr(v.name, '/');
    if (in_block && ((halve && !strcmp(leaf, halve)) || (halve_bo && !strcmp(leaf, "bo"))))
      for (int i = 0; i < v.rows * v.cols; i++) v.v[i] *= 0.5;
  }
  return CS_OK;
}

/* Zero every block's W_g and b_g (the gate is then σ(0) = 1/2). */
static int lm_zero_gates(cs_model *M) {
  for (int l = 0; l < model_depth(M); l++)
    for (int k = 0; k < 2; k++) {
      char name[32];
      cs_tensor g;
      snprintf(name, sizeof name, "layer%d/%s", l, k ? "bg" : "Wg");
      CS_CHECK(model_find_tensor(M, name, &g));
      memset(g.v, 0, sizeof(double) * g.rows * g.cols);
    }
  return CS_OK;
}

/* The jets of every prefix l = 1..L of M on fixed sequences at fixed
 * probe offsets: out[(l-1)·n + i], n = LM_SEQ · C · d each. */
static int lm_jets(const cs_model *M, double **out, int64_t *n) {
  int tok[LM_SEQ * LM_T];
  unsigned char scored[LM_SEQ * LM_T];
  rng_stream s = rng_stream_make(3, "verify-lm", 0, "tokens");
  for (int p = 0; p < LM_SEQ; p++)
    for (int t = 0; t < LM_T; t++) {
      tok[p * LM_T + t] = t == 0 ? LM_V : (int)(rng_uniform(&s) * LM_V) % LM_V;
      scored[p * LM_T + t] = t > 0;
    }
  double x[LM_SEQ * 2] = {0.3, -0.2, -0.4, 0.1, 0.05, 0.45, -0.25, -0.35};
  cs_acts *A;
  CS_CHECK(model_acts_create(M, LM_SEQ, 2, &A));
  model_acts_bind_tokens(A, &(cs_token_batch){LM_T, tok, scored});
  int rc = model_forward(M, A, LM_SEQ, x), L = model_depth(M);
  *n = (int64_t)LM_SEQ * model_acts_jet_rows(A) * model_width(M);
  if (!rc) rc = CS_CALLOC(*out, *n * L);
  for (int l = 1; !rc && l <= L; l++)
    memcpy(*out + (l - 1) * *n, model_layer_output(A, l), sizeof(double) * *n);
  model_acts_free(A);
  return rc;
}

/* A model of c with every tensor perturbed by 0.3·N(0, 1) from a stream
 * keyed by its name (biases and LayerNorm gains away from their init). */
static int lm_model(cs_config c, cs_model **M) {
  CS_CHECK(model_create(&c, NULL, M));
  for (int t = 0; t < model_tensor_count(*M); t++) {
    cs_tensor v;
    model_tensor(*M, t, &v, NULL);
    rng_stream s = rng_stream_make(5, "verify-lm", 0, v.name);
    for (int i = 0; i < v.rows * v.cols; i++) v.v[i] += 0.3 * rng_normal(&s);
  }
  return CS_OK;
}

int verify_lm_ungated_gate_free(int depth, int mlp_ratio, double *max_dev) {
  cs_model *ref = NULL;
  double *jr = NULL;
  int64_t n = 0;
  *max_dev = 0.0;
  int rc = lm_model(lm_config(ARCH_UNGATED, GATE_G1, depth, mlp_ratio), &ref);
  if (!rc) rc = lm_jets(ref, &jr, &n);
  for (int g = GATE_G2; !rc && g <= GATE_G5; g++) {
    cs_model *M = NULL;
    double *j = NULL;
    int64_t nj = 0;
    rc = lm_model(lm_config(ARCH_UNGATED, (cs_gate_pos)g, depth, mlp_ratio), &M);
    if (!rc) rc = lm_jets(M, &j, &nj);
    for (int64_t i = 0; !rc && i < n * depth; i++)
      *max_dev = fmax(*max_dev, isnan(j[i]) != isnan(jr[i]) ? INFINITY : fabs(j[i] - jr[i]));
    free(j);
    model_free(M);
  }
  free(jr);
  model_free(ref);
  return rc;
}

int verify_lm_half_gate(cs_arch arch, cs_gate_pos gate, int depth, int mlp_ratio, double *max_rel) {
  static const char *const HALVED[] = {[GATE_G1] = "Wo", [GATE_G2] = "Wv", [GATE_G3] = "Wk",
                                       [GATE_G4] = "Wq", [GATE_G5] = "Wo"};
  cs_model *G = NULL, *U = NULL;
  double *jg = NULL, *ju = NULL;
  int64_t n = 0, nu = 0;
  int rc = lm_model(lm_config(arch, gate, depth, mlp_ratio), &G);
  if (!rc) rc = lm_zero_gates(G);
  cs_config cu = lm_config(ARCH_UNGATED, gate, depth, mlp_ratio);
  if (!rc) rc = model_create(&cu, NULL, &U);
  if (!rc) rc = lm_copy_params(G, U, HALVED[gate], gate == GATE_G5);
  if (!rc) rc = lm_jets(G, &jg, &n);
  if (!rc) rc = lm_jets(U, &ju, &nu);
  *max_rel = 0.0;
  if (!rc) {
    double scale = 0.0;
    for (int64_t i = 0; i < n * depth; i++) scale = fmax(scale, fabs(ju[i]));
    for (int64_t i = 0; i < n * depth; i++)
      *max_rel = fmax(*max_rel, fabs(jg[i] - ju[i]) / (scale > 0 ? scale : 1.0));
    if (!(scale > 0) || !isfinite(*max_rel)) *max_rel = INFINITY;
  }
  free(jg), free(ju);
  model_free(G), model_free(U);
  return rc;
}

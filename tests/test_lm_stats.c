/* test_lm_stats.c — the lm family's extreme-token statistics as stored
 * (docs/MODELS.md, "Extreme-token statistics"; docs/ARCHIVE.md,
 * format_version 5):
 *   - a hand-made two-head model whose attention is worked out here: head 0
 *     uniform (W_q = W_k = 0: weight 1/(t+1) on each key s ≤ t), head 1
 *     scoring only BOS (one query and one key channel: score z on BOS, 0
 *     elsewhere, weight e^z/(e^z + t) on BOS), with z > 0 (head 1 the
 *     sink) and z < 0 (head 0 the larger share): the first-token share
 *     (mean over heads), its per-head maximum, the mean largest weight of
 *     a query and the attention map;
 *   - a trained cell (cell_run, lm family): the five columns of every
 *     prefix row are those of the statistics recomputed from the cell's
 *     own trained tensors on its evaluation sequences (a second path:
 *     rebuild from /params-like tensors, recompute), finite and in their
 *     domain; the memory family's rows leave the lm-only columns NaN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/cell.h"
#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void set(cs_model *M, const char *name, int i, int k, double v) {
  cs_tensor t;
  assert_ok(model_find_tensor(M, name, &t));
  t.v[i * t.cols + k] = v;
}

/* V = 4 (BOS = token 4), T = 3, d = 4, 2 heads of 2 channels, one
 * attention-only block, no positions. BOS embeds as (1, −1, 0, 0), every
 * other token as (0, 0, 1, −1), so LN₁ gives (c, −c, 0, 0) and (0, 0, c, −c),
 * c = 1/√(1/2 + ε). Head 1 (channels 2, 3): q_t[2] = β·LN_2 = βc at a
 * token, k_s[2] = LN_0 = c at BOS, 0 elsewhere: score z = βc²/√2 on BOS. */
static void test_share_hand_computed(void **state) {
  (void)state;
  cs_config c = config_default();
  c.family = FAMILY_LM, c.task = TASK_BIGRAM_BACKCOPY, c.arch = ARCH_UNGATED;
  c.heads = 2, c.width = 4, c.depth = 1, c.mlp_ratio = 0, c.vocab = 4, c.seq_len = 3;
  cs_model *M;
  assert_ok(model_create(&c, NULL, &M));
  memset(model_params(M), 0, sizeof(double) * (size_t)model_param_count(M));
  for (int k = 0; k < 4; k++) set(M, "layer0/ln_g", 0, k, 1.0);
  set(M, "embed/tokens", 4, 0, 1.0), set(M, "embed/tokens", 4, 1, -1.0);
  for (int j = 0; j < 4; j++) set(M, "embed/tokens", j, 2, 1.0), set(M, "embed/tokens", j, 3, -1.0);
  set(M, "layer0/Wk", 2, 0, 1.0);
  int tok[2 * 3] = {4, 0, 3, 4, 2, 1};
  unsigned char sc[2 * 3] = {0, 0, 1, 0, 0, 1};
  cs_token_batch b = {3, tok, sc};
  double share, top, headmax, map[9];
  double cc = 1.0 / (0.5 + 1e-5), h0 = (1.0 / 2 + 1.0 / 3) / 2; /* head 0: BOS share = largest */
  for (double beta = -2.0; beta <= 2.0; beta += 4.0) {
    set(M, "layer0/Wq", 2, 2, beta);
    assert_ok(model_attention_sink(M, 2, NULL, &b, &share, &top, &headmax));
    double z = beta * cc / sqrt(2.0), e = exp(z);
    double h1 = (e / (e + 1) + e / (e + 2)) / 2;                                 /* head 1's BOS share */
    double top1 = beta > 0 ? h1 : (1 / (e + 1) + 1 / (e + 2)) / 2;               /* its largest weight */
    assert_close(share, (h0 + h1) / 2, 1e-14);
    assert_close(top, (h0 + top1) / 2, 1e-14);
    assert_close(headmax, beta > 0 ? h1 : h0, 1e-14);
  }
  assert_ok(model_attention_map_tokens(M, 2, &b, 0, map));
  double z = 2.0 * cc / sqrt(2.0), e = exp(z);
  /* map: query t's row, mean of the two heads; 0 above the diagonal */
  double want[9] = {1, 0, 0,
                    (0.5 + e / (e + 1)) / 2, (0.5 + 1 / (e + 1)) / 2, 0,
                    (1.0 / 3 + e / (e + 2)) / 2, (1.0 / 3 + 1 / (e + 2)) / 2, (1.0 / 3 + 1 / (e + 2)) / 2};
  for (int i = 0; i < 9; i++) assert_close(map[i], want[i], 1e-14);
  assert_int_equal(model_attention_map_tokens(M, 2, &b, 1, map), CS_ERR_INPUT); /* one block */
  model_free(M);
}

/* The stored columns of a trained cell against the statistics recomputed
 * from its trained tensors on its evaluation sequences. */
static void test_cell_stores_statistics(void **state) {
  (void)state;
  cs_config c = config_default();
  c.family = FAMILY_LM, c.task = TASK_BIGRAM_BACKCOPY, c.arch = ARCH_GATED, c.gate = GATE_G2;
  c.heads = 2, c.width = 8, c.depth = 2, c.mlp_ratio = 2, c.vocab = 8, c.seq_len = 8;
  c.train_points = 64, c.test_points = 16, c.epochs = 1, c.batch = 16, c.points = 8, c.seed = 3;
  cell_options opt = {0, 1};
  cs_cell_result r;
  assert_ok(cell_run(&c, 0, &opt, NULL, NULL, &r));
  assert_int_equal(r.status, CELL_DONE);
  assert_int_equal(r.depth, 2);
  cs_model *M;
  assert_ok(model_create(&c, NULL, &M));
  for (int i = 0; i < r.n_tensors; i++) {
    cs_tensor t;
    assert_ok(model_find_tensor(M, r.tensors[i].name, &t));
    memcpy(t.v, r.tensors[i].v, sizeof(double) * (size_t)t.rows * t.cols);
  }
  cs_dataset ev;
  assert_ok(task_generate_sequences(c.task, c.vocab, c.seq_len, c.points, c.seed, SPLIT_EVAL, &ev));
  cs_token_batch b = {c.seq_len, ev.tokens, ev.scored};
  double share[2], top[2], headmax[2], ex[2 * MODEL_EXTREME_COUNT];
  assert_ok(model_attention_sink(M, c.points, NULL, &b, share, top, headmax));
  assert_ok(model_extreme_tokens(M, c.points, &b, ex));
  for (int l = 0; l < 2; l++) {
    const geom_stats *g = &r.curv[l];
    assert_true(g->sink_mass == share[l] && g->max_attn == top[l] && g->sink_headmax == headmax[l]);
    assert_true(g->massive_act == ex[l * MODEL_EXTREME_COUNT + MODEL_EXTREME_MASSIVE]);
    assert_true(g->value_drain == ex[l * MODEL_EXTREME_COUNT + MODEL_EXTREME_DRAIN]);
    assert_true(g->resid_peak == ex[l * MODEL_EXTREME_COUNT + MODEL_EXTREME_PEAK]);
    assert_true(g->sink_mass > 0 && g->sink_headmax >= g->sink_mass && g->sink_headmax <= 1);
    assert_true(g->max_attn >= g->sink_mass && g->max_attn <= 1);
    assert_true(g->massive_act >= 1 && g->value_drain > 0 && g->resid_peak > 0);
  }
  task_dataset_free(&ev);
  model_free(M);
  result_free(&r);
  /* the memory family: not applicable, NaN */
  cs_config m = config_default();
  m.depth = 1, m.train_points = 64, m.test_points = 16, m.epochs = 1, m.points = 8;
  assert_ok(cell_run(&m, 0, NULL, NULL, NULL, &r));
  assert_int_equal(r.status, CELL_DONE);
  assert_true(isnan(r.curv[0].massive_act) && isnan(r.curv[0].value_drain) && isnan(r.curv[0].resid_peak));
  result_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_share_hand_computed),
      cmocka_unit_test(test_cell_stores_statistics),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

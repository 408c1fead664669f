/* sequences.c — the token-sequence tasks of docs/MODELS.md ("Token tasks"),
 * trained by the lm family.
 *
 * A sequence is T tokens: BOS (token V, a token of its own that no task
 * ever emits) at position 0, then T − 1 task tokens in 0..V−1. The target
 * of the prediction at position t − 1 is token t (t = 1..T−1); scored[t]
 * says whether it counts in the loss and the accuracy.
 *
 * bigram-backcopy (Guo et al. 2024's Bigram-Backcopy, in the setting of
 * docs/MODELS.md): a seeded cyclic order of the V tokens (a permutation);
 * the successors of the token at place i of the order are the tokens at
 * places i+1, i+2, i+3 (mod V), each with probability 1/3, so the bigram
 * matrix is doubly stochastic and the tokens are uniform. TASK_BB_TRIGGERS
 * seeded trigger tokens. x_1 is uniform; for t ≥ 2, if x_{t−1} is a
 * trigger and t − 2 ≥ 1, x_t = x_{t−2} (the token before the trigger is
 * copied back); otherwise x_t is a successor of x_{t−1}. Every target but
 * BOS → x_1 is scored (t = 2..T−1).
 *
 * associative-recall: keys are tokens 0..K−1 (K = ⌊V/2⌋), values K..V−1.
 * Each sequence draws its own key → value map lazily (a key met again
 * keeps its value): P = ⌊(T − 3)/2⌋ pairs k_i v_i with k_i uniform over
 * the keys, then a query key (the key of a uniformly chosen pair) and its
 * value, the answer, at position T − 1: the only scored target. When T − 3
 * is odd, position 1 holds a filler: a uniform value token, no pair.
 *
 * Streams (rng.h): the order ("task:bigram-backcopy", −1, "order") and the
 * triggers (…, −1, "triggers") depend on the seed only, the same for every
 * split; the sequences of a split come in order from (…, split, "seq"), so
 * the first n' sequences of a dataset of n > n' are the dataset of n'. */
#include "curvsweep/error.h"
#include "curvsweep/rng.h"
#include "curvsweep/tasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names of tasks.c's table (this file sits above tasks.c: no call back). */
static const char *seq_name(cs_task_kind kind) {
  return kind == TASK_BIGRAM_BACKCOPY ? "bigram-backcopy" : "associative-recall";
}

static rng_stream seq_stream(cs_task_kind kind, int64_t seed, int64_t index, const char *purpose) {
  char domain[64];
  snprintf(domain, sizeof domain, "task:%s", seq_name(kind));
  return rng_stream_make((uint64_t)seed, domain, index, purpose);
}

int task_bb_structure(int64_t seed, int V, int *order, int *triggers) {
  /* order: (V) a seeded permutation; triggers: the first TASK_BB_TRIGGERS
   * tokens of a second, independent permutation */
  if (V < 4) return cs_error(CS_ERR_INPUT, "bigram-backcopy: vocab %d must be >= 4", V);
  int64_t *perm;
  CS_CHECK(CS_CALLOC(perm, V));
  rng_stream so = seq_stream(TASK_BIGRAM_BACKCOPY, seed, -1, "order");
  rng_permutation(&so, V, perm);
  for (int i = 0; i < V; i++) order[i] = (int)perm[i];
  rng_stream st = seq_stream(TASK_BIGRAM_BACKCOPY, seed, -1, "triggers");
  rng_permutation(&st, V, perm);
  for (int i = 0; i < TASK_BB_TRIGGERS; i++) triggers[i] = (int)perm[i];
  free(perm);
  return CS_OK;
}

/* n BB sequences of T tokens: tok n × T, scored n × T (zeroed by the caller). */
static int generate_bb(int64_t seed, cs_split split, int V, int T, int n, int *tok,
                       unsigned char *scored) {
  int *order, *place, triggers[TASK_BB_TRIGGERS];
  CS_CHECK(CS_CALLOC(order, 2 * (int64_t)V));
  place = order + V; /* place[token] = its index in the order */
  int rc = task_bb_structure(seed, V, order, triggers);
  for (int i = 0; i < V && !rc; i++) place[order[i]] = i;
  rng_stream s = seq_stream(TASK_BIGRAM_BACKCOPY, seed, split, "seq");
  for (int p = 0; p < n && !rc; p++) {
    int *x = tok + (int64_t)p * T;
    unsigned char *sc = scored + (int64_t)p * T;
    x[0] = V;
    if (T > 1) x[1] = (int)rng_below(&s, (uint64_t)V);
    for (int t = 2; t < T; t++) {
      int prev = x[t - 1], is_trigger = 0;
      for (int k = 0; k < TASK_BB_TRIGGERS; k++) is_trigger |= prev == triggers[k];
      if (is_trigger && t - 2 >= 1)
        x[t] = x[t - 2];
      else
        x[t] = order[(place[prev] + 1 + (int)rng_below(&s, TASK_BB_SUCCESSORS)) % V];
      sc[t] = 1;
    }
  }
  free(order);
  return rc;
}

/* n AR sequences of T ≥ 5 tokens: tok n × T, scored n × T (zeroed). */
static int generate_ar(int64_t seed, cs_split split, int V, int T, int n, int *tok,
                       unsigned char *scored) {
  int K = V / 2, P = (T - 3) / 2, first = 1 + (T - 3) % 2;
  int *map;
  CS_CHECK(CS_CALLOC(map, K));
  rng_stream s = seq_stream(TASK_ASSOC_RECALL, seed, split, "seq");
  for (int p = 0; p < n; p++) {
    int *x = tok + (int64_t)p * T;
    x[0] = V;
    if (first == 2) x[1] = K + (int)rng_below(&s, (uint64_t)(V - K)); /* filler */
    for (int k = 0; k < K; k++) map[k] = -1;
    for (int i = 0; i < P; i++) {
      int key = (int)rng_below(&s, (uint64_t)K);
      if (map[key] < 0) map[key] = K + (int)rng_below(&s, (uint64_t)(V - K));
      x[first + 2 * i] = key;
      x[first + 2 * i + 1] = map[key];
    }
    int q = x[first + 2 * (int)rng_below(&s, (uint64_t)P)];
    x[T - 2] = q;
    x[T - 1] = map[q];
    scored[(int64_t)p * T + T - 1] = 1;
  }
  free(map);
  return CS_OK;
}

int task_generate_sequences(cs_task_kind kind, int V, int T, int n, int64_t seed, cs_split split,
                            cs_dataset *out) {
  *out = (cs_dataset){0};
  if (!task_is_sequence(kind))
    return cs_error(CS_ERR_INPUT, "task %d has no token sequences", (int)kind);
  const char *name = seq_name(kind);
  if (V < 4) return cs_error(CS_ERR_INPUT, "task %s: vocab %d must be >= 4", name, V);
  if (T < task_min_seq_len(kind) || T > 256)
    return cs_error(CS_ERR_INPUT, "task %s: seq_len %d must lie in [%d, 256]", name, T,
                    task_min_seq_len(kind));
  if (n < 0) return cs_error(CS_ERR_INPUT, "task %s: %d sequences must be >= 0", name, n);
  if (split < SPLIT_TRAIN || split > SPLIT_EVAL)
    return cs_error(CS_ERR_INPUT, "task %s: unknown split %d", name, (int)split);
  int *tok = NULL;
  unsigned char *scored = NULL;
  int rc = CS_CALLOC(tok, (int64_t)n * T + 1);
  if (!rc) rc = CS_CALLOC(scored, (int64_t)n * T + 1);
  if (!rc)
    rc = kind == TASK_BIGRAM_BACKCOPY ? generate_bb(seed, split, V, T, n, tok, scored)
                                      : generate_ar(seed, split, V, T, n, tok, scored);
  if (rc)
    free(tok), free(scored);
  else
    *out = (cs_dataset){.n = n, .T = T, .vocab = V, .tokens = tok, .scored = scored};
  return rc;
}

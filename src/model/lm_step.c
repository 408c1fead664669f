/* lm_step.c — the lm family's training step (its train_step op): the value
 * forward, the next-token loss and the backward of one batch, chunk by
 * chunk of whole sequences instead of pass by pass over the batch
 * (docs/DECISIONS.md, "The lm family's training step, chunk by chunk").
 *
 * lm_forward, lm_loss and lm_backward run each pass over every chunk of
 * the batch before the next pass starts, so a step's activations (about
 * 6.6 KB per position and block at width 32) leave the core's L2 between
 * the forward and the backward and come back from L3. Here one chunk
 * (lm_chunk_seqs sequences, LM_CHUNK_ROWS positions) goes through every
 * block forward, the readout and the loss, then every block backward,
 * before the next chunk starts, and every chunk reuses the first rows of
 * the caches and backward buffers, which stay in the core's cache.
 *
 * The same bits as the three passes: every product has the same operands
 * and shape (the passes already ran chunk by chunk); every gradient
 * receives its chunks' terms in the same order (chunk 0 first), only
 * interleaved with other parameters' terms; the loss adds its rows in the
 * same order. The readout's weight gradient, one product over the whole
 * batch in lm_backward, stays one product over the whole batch here, after
 * the chunks (its inputs, the final LayerNorm's output and dlogits, are
 * kept for every row). test_model checks the step against the three calls,
 * bitwise. */
#include "curvsweep/error.h"
#include "lm_internal.h"

/* lm_internal.h: the training step on N bound sequences, x the probe
 * offsets (or NULL), *loss the mean loss (lm_loss). */
int lm_train_step(cs_model *M, cs_acts *A, int N, const double *x, double *loss) {
  lm_acts *S = A->fam;
  jet_shape vjs = {.m = M->m, .C = 1};
  int d = M->d, T = S->T, L = M->L, per = lm_chunk_seqs(T);
  CS_CHECK(lm_tokens_check(A, N));
  lm_weights_transpose(M, S);
  int64_t n_s = lm_scored_count(A, N);
  double sum = 0.0;
  int correct = 0;
  for (int p0 = 0; p0 < N; p0 += per) {
    int n = N - p0 < per ? N - p0 : per;
    int64_t r = (int64_t)p0 * T, rows = (int64_t)n * T;
    /* forward: h_0 .. h_L of the chunk in the first rows of S->x, block l's
     * caches in the first rows of S->cache[l] */
    LA_PROF_BEGIN(t0);
    lm_embed_values(M, n, A->tok.tokens + r, x ? x + (int64_t)p0 * M->m : NULL, S->x[0]);
    LA_PROF_END(t0, LA_PROF_ELEMENTWISE);
    for (int l = 0; l < L; l++)
      CS_CHECK(lm_block_forward(M, &vjs, S, &S->cache[l], n, l, MODEL_ABLATE_NONE, S->x[l],
                                S->x[l + 1]));
    /* logits at the chunk's rows of S->lnf and A->logits (the readout's
     * weight gradient reads every row of both after the loop), the loss */
    CS_CHECK(lm_readout_rows(M, A, r, (int)rows, S->x[L]));
    lm_loss_rows(A, r, r + rows, n_s, &sum, &correct);
    /* backward: the readout and the final LN;  the blocks, last first;
     * the embeddings */
    double *dXn = S->gr.dx_a, *dX = S->gr.dx_b;
    CS_CHECK(lm_readout_backward_rows(M, A, r, (int)rows, dXn));
    for (int l = L - 1; l >= 0; l--) {
      CS_CHECK(lm_block_backward_rows(M, S, &S->cache[l], n, l, dXn, dX));
      double *t = dXn;
      dXn = dX;
      dX = t;
    }
    lm_embed_backward(M, A, r, rows, dXn);
  }
  /* dW_r += dlogitsᵀ a_f;  db_r += Σ dlogits: over the whole batch, as lm_backward */
  CS_CHECK(linear_backward(M, N * T, d, S->V, S->lnf.a, M->params + M->readout_W, A->dlogits,
                           M->grads + M->readout_W, M->grads + M->readout_b, NULL, 0.0));
  *loss = n_s ? sum / n_s : 0.0;
  return CS_OK;
}

/* train.c — Adam training of one model on one dataset (docs/MODELS.md, "Training"). */
#include "curvsweep/train.h"

#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/rng.h"
#include "curvsweep/simd.h"
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADAM_B1 0.9
#define ADAM_B2 0.999
#define ADAM_EPS 1e-8

/* Learning rate at step t of T: constant, or cosine decay to 0:
 *   lr_t = lr · ½ (1 + cos(π t / T)). */
static double train_learning_rate(const cs_config *cfg, int64_t t, int64_t T) {
  if (cfg->schedule == SCHEDULE_COSINE) return cfg->lr * 0.5 * (1.0 + cos(M_PI * (double)t / T));
  return cfg->lr;
}

/* Adam on entries [lo, hi) of the flat parameter vector θ, grads g,
 * moments m, v, with bias corrections c1 = 1−β1^t, c2 = 1−β2^t:
 *   m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²
 *   θ ← θ − lr · m̂ / (√v̂ + ε),  m̂ = m/c1, v̂ = v/c2
 * computed as θ ← θ − (lr/c1) · m / (√v · (1/√c2) + ε): the two scalar
 * factors once per step, one division and one square root per entry (the
 * divider is what bounds this loop; docs/DECISIONS.md, "Training speed").
 * Then, when decays, decoupled weight decay θ ← θ − lr·λ·θ, and g ← 0 for
 * the next step's backward (which accumulates): one pass over the four
 * arrays. No branch in the loop, so it vectorises (sqrt and division are
 * exact in every lane: the bits of the scalar loop). */
CS_VECTOR_CLONES static void adam_range(int64_t lo, int64_t hi, double *restrict theta,
                                        double *restrict g, double *restrict m,
                                        double *restrict v, double step, double inv_sqrt_c2,
                                        double lr_wd, int decays) {
  if (decays) {
#pragma omp simd
    for (int64_t i = lo; i < hi; i++) {
      double gi = g[i];
      double mi = ADAM_B1 * m[i] + (1.0 - ADAM_B1) * gi;
      double vi = ADAM_B2 * v[i] + (1.0 - ADAM_B2) * gi * gi;
      double th = theta[i] - step * mi / (sqrt(vi) * inv_sqrt_c2 + ADAM_EPS);
      m[i] = mi, v[i] = vi, theta[i] = th - lr_wd * th, g[i] = 0.0;
    }
  } else {
#pragma omp simd
    for (int64_t i = lo; i < hi; i++) {
      double gi = g[i];
      double mi = ADAM_B1 * m[i] + (1.0 - ADAM_B1) * gi;
      double vi = ADAM_B2 * v[i] + (1.0 - ADAM_B2) * gi * gi;
      m[i] = mi, v[i] = vi, g[i] = 0.0;
      theta[i] -= step * mi / (sqrt(vi) * inv_sqrt_c2 + ADAM_EPS);
    }
  }
}

/* One Adam step over all n parameters, run by run of equal weight-decay
 * flag (runs: n_runs + 1 boundaries, run_decays: one flag per run;
 * train_internal.h). */
void train_adam_step(int n_runs, const int64_t *runs, const unsigned char *run_decays,
                     double *theta, double *g, double *m, double *v, double lr, double wd,
                     int64_t t) {
  double c1 = 1.0 - pow(ADAM_B1, (double)t), c2 = 1.0 - pow(ADAM_B2, (double)t);
  for (int r = 0; r < n_runs; r++)
    adam_range(runs[r], runs[r + 1], theta, g, m, v, lr / c1, 1.0 / sqrt(c2), lr * wd,
               wd > 0.0 && run_decays[r]);
}

/* The scored targets of sequences [p0, p0 + n) of a sequence dataset. */
static int64_t scored_count(const cs_dataset *data, int p0, int n) {
  int64_t c = 0;
  for (int64_t i = (int64_t)p0 * data->T; i < (int64_t)(p0 + n) * data->T; i++)
    c += data->scored[i] != 0;
  return c;
}

/* Bind sequences [p0, p0 + n) of a sequence dataset to the workspace. */
static void bind_sequences(cs_acts *A, const cs_dataset *data, int p0) {
  cs_token_batch b = {data->T, data->tokens + (int64_t)p0 * data->T,
                      data->scored + (int64_t)p0 * data->T};
  model_acts_bind_tokens(A, &b);
}

/* Point datasets: mean loss and accuracy over the points. Sequence
 * datasets (lm family): over the scored targets (next-token accuracy). */
int train_evaluate(const cs_model *M, cs_acts *A, const cs_dataset *data, double *loss,
                   double *acc) {
  double total = 0.0;
  int64_t correct = 0, terms = 0;
  int chunk = 0;
  while (chunk < data->n) {
    int cnt = data->n - chunk;
    if (cnt > model_acts_capacity(A)) cnt = model_acts_capacity(A);
    int ok;
    if (data->T > 0) {
      bind_sequences(A, data, chunk);
      CS_CHECK(model_forward(M, A, cnt, NULL));
      int64_t ns = scored_count(data, chunk, cnt);
      total += model_loss(A, cnt, NULL, &ok) * ns;
      terms += ns;
    } else {
      CS_CHECK(model_forward(M, A, cnt, data->x + (int64_t)chunk * data->m));
      total += model_loss(A, cnt, data->y + chunk, &ok) * cnt;
      terms += cnt;
    }
    correct += ok;
    chunk += cnt;
  }
  *loss = total / terms;
  *acc = (double)correct / terms;
  return CS_OK;
}

static int curve_append(cs_cell_result *res, int epoch, double loss, double acc, double tacc) {
  cs_curve_point *c = realloc(res->curve, sizeof *c * (size_t)(res->n_curve + 1));
  if (!c) return cs_error(CS_ERR_NOMEM, "out of memory growing the training curve");
  res->curve = c;
  c[res->n_curve++] = (cs_curve_point){epoch, loss, acc, tacc};
  return CS_OK;
}

typedef struct {
  double *m, *v, *xb;
  int *yb, *tb;       /* tb: B × T tokens of a batch of sequences */
  unsigned char *sb;  /* B × T scored targets */
  int64_t *perm;
  unsigned char *decay, *run_decays;
  int64_t *runs;
  int n_runs;
  cs_acts *acts;
} train_state;

static void train_state_free(train_state *s) {
  free(s->m), free(s->v), free(s->xb), free(s->yb), free(s->tb), free(s->sb), free(s->perm), free(s->decay), free(s->runs),
      free(s->run_decays);
  model_acts_free(s->acts);
}

static int train_loop(cs_model *M, const cs_config *cfg, const cs_dataset *tr,
                      const cs_dataset *te, const train_hooks *hooks, cs_cell_result *res,
                      train_state *s) {
  int64_t np = model_param_count(M);
  int n = tr->n, m = tr->m, Ts = tr->T; /* Ts > 0: sequences of Ts tokens */
  int B = (cfg->batch <= 0 || cfg->batch > n) ? n : cfg->batch;
  CS_CHECK(CS_CALLOC(s->m, np));
  CS_CHECK(CS_CALLOC(s->v, np));
  if (Ts > 0) { /* a batch of sequences (lm family) */
    CS_CHECK(CS_CALLOC(s->tb, (int64_t)B * Ts));
    CS_CHECK(CS_CALLOC(s->sb, (int64_t)B * Ts));
  } else {
    CS_CHECK(CS_CALLOC(s->xb, (int64_t)B * m));
    CS_CHECK(CS_CALLOC(s->yb, B));
  }
  CS_CHECK(CS_CALLOC(s->perm, n));
  CS_CHECK(CS_CALLOC(s->decay, np));
  CS_CHECK(model_acts_create(M, B, 0, &s->acts));
  /* weight-decay mask from the tensor table */
  double *theta = model_params(M), *grad = model_grads(M);
  for (int t = 0; t < model_tensor_count(M); t++) {
    cs_tensor view;
    int decays;
    model_tensor(M, t, &view, &decays);
    if (decays) memset(s->decay + (view.v - theta), 1, (size_t)view.rows * view.cols);
  }
  /* runs of equal decay flag: boundaries runs[0] = 0 < … < runs[n_runs] = np */
  int max_runs = model_tensor_count(M) + 1;
  CS_CHECK(CS_CALLOC(s->runs, max_runs + 1));
  CS_CHECK(CS_CALLOC(s->run_decays, max_runs));
  for (int64_t i = 0; i < np; i++)
    if (i == 0 || s->decay[i] != s->decay[i - 1]) {
      if (s->n_runs == max_runs) return cs_error(CS_ERR_INTERNAL, "train: weight-decay runs");
      s->runs[s->n_runs] = i;
      s->run_decays[s->n_runs++] = s->decay[i];
    }
  s->runs[s->n_runs] = np;
  memset(grad, 0, sizeof(double) * np);
  int64_t steps_per_epoch = (n + B - 1) / B, T = (int64_t)cfg->epochs * steps_per_epoch, t = 0;
  res->status = CELL_DONE;
  for (int epoch = 1; epoch <= cfg->epochs; epoch++) {
    /* deterministic shuffle: stream keyed by (seed, epoch) */
    rng_stream sh = rng_stream_make((uint64_t)cfg->seed, "shuffle", epoch, NULL);
    rng_permutation(&sh, n, s->perm);
    for (int b0 = 0; b0 < n; b0 += B) {
      int nb = n - b0 < B ? n - b0 : B;
      for (int i = 0; i < nb; i++) {
        int64_t src = s->perm[b0 + i];
        if (Ts > 0) {
          memcpy(s->tb + (int64_t)i * Ts, tr->tokens + src * Ts, sizeof(int) * Ts);
          memcpy(s->sb + (int64_t)i * Ts, tr->scored + src * Ts, (size_t)Ts);
        } else {
          memcpy(s->xb + (int64_t)i * m, tr->x + src * m, sizeof(double) * m);
          s->yb[i] = tr->y[src];
        }
      }
      if (Ts > 0) model_acts_bind_tokens(s->acts, &(cs_token_batch){Ts, s->tb, s->sb});
      double loss;
      CS_CHECK(model_train_step(M, s->acts, nb, s->xb, s->yb, &loss));
      if (!isfinite(loss)) {
        res->status = CELL_DIVERGED;
        snprintf(res->message, sizeof res->message, "non-finite loss at epoch %d, step %lld",
                 epoch, (long long)t + 1);
        res->train_loss = loss;
        return CS_OK;
      }
      /* grad held zero before the step: before the first step, and adam_step leaves it zero */
      t++;
      LA_PROF_BEGIN(t1);
      train_adam_step(s->n_runs, s->runs, s->run_decays, theta, grad, s->m, s->v,
                train_learning_rate(cfg, t - 1, T), cfg->weight_decay, t);
      LA_PROF_END(t1, LA_PROF_OPTIMIZER);
      if (hooks && hooks->between_steps) CS_CHECK(hooks->between_steps(hooks->ctx));
    }
    if (epoch % cfg->eval_every == 0 || epoch == cfg->epochs) {
      double loss, acc, tloss, tacc;
      CS_CHECK(train_evaluate(M, s->acts, tr, &loss, &acc));
      CS_CHECK(train_evaluate(M, s->acts, te, &tloss, &tacc));
      CS_CHECK(curve_append(res, epoch, loss, acc, tacc));
      res->train_loss = loss;
      res->train_acc = acc;
      res->test_acc = tacc;
      if (!isfinite(loss) || !isfinite(tloss)) {
        res->status = CELL_DIVERGED;
        snprintf(res->message, sizeof res->message, "non-finite evaluation loss at epoch %d",
                 epoch);
        return CS_OK;
      }
    }
  }
  return CS_OK;
}

int train_model(cs_model *M, const cs_config *cfg, const cs_dataset *train,
                const cs_dataset *test, const train_hooks *hooks, cs_cell_result *res) {
  train_state s;
  memset(&s, 0, sizeof s);
  int rc = train_loop(M, cfg, train, test, hooks, res, &s);
  train_state_free(&s);
  return rc;
}

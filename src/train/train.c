/* train.c — Adam training of one model on one dataset (DESIGN §4). */
#include "curvsweep/train.h"

#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/rng.h"

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

/* One Adam step over the flat parameter vector θ (n), grads g, moments m, v:
 *   m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²
 *   θ ← θ − lr · m̂ / (√v̂ + ε),  m̂ = m/(1−β1^t), v̂ = v/(1−β2^t)
 * then decoupled weight decay θ ← θ − lr·λ·θ on the masked entries. */
static void adam_step(int64_t n, double *theta, const double *g, double *m, double *v,
                      const unsigned char *decay_mask, double lr, double wd, int64_t t) {
  double c1 = 1.0 - pow(ADAM_B1, (double)t), c2 = 1.0 - pow(ADAM_B2, (double)t);
  for (int64_t i = 0; i < n; i++) {
    m[i] = ADAM_B1 * m[i] + (1.0 - ADAM_B1) * g[i];
    v[i] = ADAM_B2 * v[i] + (1.0 - ADAM_B2) * g[i] * g[i];
    double step = (m[i] / c1) / (sqrt(v[i] / c2) + ADAM_EPS);
    theta[i] -= lr * step;
    if (wd > 0.0 && decay_mask[i]) theta[i] -= lr * wd * theta[i];
  }
}

int train_evaluate(const cs_model *M, cs_acts *A, const cs_dataset *data, double *loss,
                   double *acc) {
  double total = 0.0;
  int64_t correct = 0;
  int chunk = 0;
  while (chunk < data->n) {
    int cnt = data->n - chunk;
    if (cnt > model_acts_capacity(A)) cnt = model_acts_capacity(A);
    CS_CHECK(model_forward(M, A, cnt, data->x + (int64_t)chunk * data->m));
    int ok;
    total += model_loss(A, cnt, data->y + chunk, &ok) * cnt;
    correct += ok;
    chunk += cnt;
  }
  *loss = total / data->n;
  *acc = (double)correct / data->n;
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
  int *yb;
  int64_t *perm;
  unsigned char *decay;
  cs_acts *acts;
} train_state;

static void train_state_free(train_state *s) {
  free(s->m), free(s->v), free(s->xb), free(s->yb), free(s->perm), free(s->decay);
  model_acts_free(s->acts);
}

static int train_loop(cs_model *M, const cs_config *cfg, const cs_dataset *tr,
                      const cs_dataset *te, const train_hooks *hooks, cs_cell_result *res,
                      train_state *s) {
  int64_t np = model_param_count(M);
  int n = tr->n, m = tr->m;
  int B = (cfg->batch <= 0 || cfg->batch > n) ? n : cfg->batch;
  CS_CHECK(CS_CALLOC(s->m, np));
  CS_CHECK(CS_CALLOC(s->v, np));
  CS_CHECK(CS_CALLOC(s->xb, (int64_t)B * m));
  CS_CHECK(CS_CALLOC(s->yb, B));
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
        memcpy(s->xb + (int64_t)i * m, tr->x + src * m, sizeof(double) * m);
        s->yb[i] = tr->y[src];
      }
      CS_CHECK(model_forward(M, s->acts, nb, s->xb));
      double loss = model_loss(s->acts, nb, s->yb, NULL);
      if (!isfinite(loss)) {
        res->status = CELL_DIVERGED;
        snprintf(res->message, sizeof res->message, "non-finite loss at epoch %d, step %lld",
                 epoch, (long long)t + 1);
        res->train_loss = loss;
        return CS_OK;
      }
      LA_PROF_BEGIN(t0);
      memset(grad, 0, sizeof(double) * np);
      LA_PROF_END(t0, LA_PROF_OPTIMIZER);
      CS_CHECK(model_backward(M, s->acts, nb, s->xb));
      t++;
      LA_PROF_BEGIN(t1);
      adam_step(np, theta, grad, s->m, s->v, s->decay, train_learning_rate(cfg, t - 1, T),
                cfg->weight_decay, t);
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

/* estim.c — the estimator of the teacher task (docs/MODELS.md,
 * "Estimation"; estim.h): the planted teacher, the data (token sets and
 * noisy targets, nested in n), restarts of full-batch Adam with a
 * decaying rate to a stopping rule, the lowest training loss kept, and the
 * per-cell errors (function error on fresh sets, Voronoi loss: voronoi.c). */
#include "curvsweep/estim.h"

#include "curvsweep/error.h"
#include "curvsweep/rng.h"
#include "curvsweep/tasks.h"
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The stopping rule's loss plateau (docs/MODELS.md): every ESTIM_WINDOW
 * steps, stop when the loss moved by at most ESTIM_PLATEAU_RTOL of itself
 * over the window. The rate decays as lr · 10^(−ESTIM_DECADES · t / cap). */
#define ESTIM_WINDOW 100
#define ESTIM_PLATEAU_RTOL 1e-8
#define ESTIM_DECADES 3.0
/* Restart 0 starts at the teacher (heads split) plus N(0, ESTIM_NEAR_SD²). */
#define ESTIM_NEAR_SD 0.05

/* Variance of one token entry: U[-1,1] 1/3, N(0,1) 1. */
static double token_variance(const cs_config *cfg) {
  return cfg->token_dist == TOKEN_DIST_GAUSSIAN ? 1.0 : 1.0 / 3.0;
}

/* ------------------------------------------------------------ teacher */

/* The teacher's scales (docs/MODELS.md): a query or key channel x·w of
 * standard deviation 1 (logits q·k/√dh of sd ≈ 1, so mostly within ±2);
 * value rows unit vectors and W_o = 1/√dh (‖u_h‖ ≈ 1; = 1 at dh = 1); gate
 * pre-activations of sd 2 with biases of sd 0.5 (σ mostly in 0.1..0.9);
 * b_o = 0. */
static void teacher_fill(cs_model *T, const cs_config *cfg) {
  int m = cfg->input_dim, dh = cfg->width / cfg->heads;
  double sd_in = 1.0 / sqrt(m * token_variance(cfg));
  for (int i = 0; i < model_tensor_count(T); i++) {
    cs_tensor t;
    model_tensor(T, i, &t, NULL);
    rng_stream s = rng_stream_make((uint64_t)cfg->seed, "teacher", 0, t.name);
    const char *leaf = strrchr(t.name, '/') + 1;
    int64_t count = (int64_t)t.rows * t.cols;
    for (int64_t k = 0; k < count; k++) {
      double z = rng_normal(&s);
      if (!strcmp(leaf, "Wq") || !strcmp(leaf, "Wk")) t.v[k] = sd_in * z;
      else if (!strcmp(leaf, "Wv")) t.v[k] = z;
      else if (!strcmp(leaf, "Wg")) t.v[k] = 2.0 * sd_in * z;
      else if (!strcmp(leaf, "bg")) t.v[k] = 0.5 * z;
      else if (!strcmp(leaf, "Wo")) t.v[k] = 1.0 / sqrt((double)dh);
      else t.v[k] = 0.0; /* bo */
    }
    if (!strcmp(leaf, "Wv")) /* each value row a unit vector */
      for (int r = 0; r < t.rows; r++) {
        double n2 = 0.0;
        for (int c = 0; c < t.cols; c++) n2 += t.v[r * t.cols + c] * t.v[r * t.cols + c];
        for (int c = 0; c < t.cols; c++) t.v[r * t.cols + c] /= sqrt(n2);
      }
  }
}

static cs_config teacher_config(const cs_config *cfg) {
  cs_config tc = *cfg;
  tc.heads = cfg->teacher_heads;
  tc.width = cfg->teacher_heads * (cfg->width / cfg->heads);
  return tc;
}

int estim_teacher_create(const cs_config *cfg, cs_model **teacher) {
  *teacher = NULL;
  if (cfg->family != FAMILY_MHA || cfg->task != TASK_TEACHER || cfg->heads < 1 ||
      cfg->width % cfg->heads != 0 || cfg->teacher_heads < 1)
    return cs_error(CS_ERR_INPUT, "estimation: needs family mha, task teacher, heads dividing "
                    "width and teacher_heads >= 1");
  cs_config tc = teacher_config(cfg);
  CS_CHECK(model_create(&tc, NULL, teacher));
  teacher_fill(*teacher, &tc);
  return CS_OK;
}

/* ---------------------------------------------------------------- data */

typedef struct {
  int n, n_test, w;        /* sets, fresh sets, T·m */
  double *x, *y;           /* n × w, n targets f*(X) + ε */
  double *x_test, *f_test; /* n_test × w, n_test teacher outputs f*(X) */
  double teacher_mse;      /* mean ε² over the training sets */
} estim_data;

static void estim_data_free(estim_data *D) {
  free(D->x), free(D->y), free(D->x_test), free(D->f_test);
  memset(D, 0, sizeof *D);
}

/* The model's outputs on n sets x into f (one forward). */
static int model_outputs(const cs_model *M, int n, const double *x, double *f) {
  cs_acts *A;
  CS_CHECK(model_acts_create(M, n, 0, &A));
  int rc = model_forward(M, A, n, x);
  if (!rc) memcpy(f, model_logits(A), sizeof(double) * (size_t)n);
  model_acts_free(A);
  return rc;
}

static int estim_data_make(const cs_config *cfg, const cs_model *teacher, estim_data *D) {
  memset(D, 0, sizeof *D);
  D->n = cfg->train_points, D->n_test = cfg->test_points, D->w = cfg->tokens * cfg->input_dim;
  double *eps = NULL;
  int rc = CS_CALLOC(D->x, (int64_t)D->n * D->w);
  if (!rc) rc = CS_CALLOC(D->y, D->n);
  if (!rc) rc = CS_CALLOC(eps, D->n);
  if (!rc) rc = CS_CALLOC(D->x_test, (int64_t)D->n_test * D->w);
  if (!rc) rc = CS_CALLOC(D->f_test, D->n_test);
  if (!rc) rc = task_token_sets(cfg->seed, SPLIT_TRAIN, 0, D->n, cfg->tokens, cfg->input_dim,
                                cfg->token_dist, D->x);
  if (!rc) rc = task_token_sets(cfg->seed, SPLIT_TEST, 0, D->n_test, cfg->tokens, cfg->input_dim,
                                cfg->token_dist, D->x_test);
  if (!rc) task_token_noise(cfg->seed, SPLIT_TRAIN, 0, D->n, cfg->noise, eps);
  if (!rc) rc = model_outputs(teacher, D->n, D->x, D->y);
  if (!rc) rc = model_outputs(teacher, D->n_test, D->x_test, D->f_test);
  for (int i = 0; i < D->n && !rc; i++) {
    D->y[i] += eps[i];
    D->teacher_mse += eps[i] * eps[i] / D->n;
  }
  free(eps);
  return rc;
}

/* ------------------------------------------------------------ restarts */

/* Restart 0: student head i copies teacher head i mod H* (i when H < H*),
 * W_o divided by the number of student heads that copy the same teacher
 * head (f unchanged), then every entry + N(0, ESTIM_NEAR_SD²). Restarts
 * r > 0: input weights N(0, 1/(m·var)), W_o N(0, 1/d), biases 0. Streams
 * keyed by (seed, "estimator", r, tensor name). */
static void restart_init(cs_model *S, const cs_config *cfg, cs_model *T, int r) {
  int m = cfg->input_dim, H = cfg->heads, Hs = cfg->teacher_heads, dh = cfg->width / H;
  double sd_in = 1.0 / sqrt(m * token_variance(cfg));
  for (int i = 0; i < model_tensor_count(S); i++) {
    cs_tensor s, t;
    model_tensor(S, i, &s, NULL);
    model_tensor(T, i, &t, NULL); /* the same table order and names */
    rng_stream st = rng_stream_make((uint64_t)cfg->seed, "estimator", r, s.name);
    const char *leaf = strrchr(s.name, '/') + 1;
    int per_head_rows = !strcmp(leaf, "Wq") || !strcmp(leaf, "Wk") || !strcmp(leaf, "Wv");
    int gate = !strcmp(leaf, "Wg") || !strcmp(leaf, "bg");
    int head_gate = gate && cfg->gate != GATE_G5;
    for (int64_t k = 0; k < (int64_t)s.rows * s.cols; k++) {
      double z = rng_normal(&st);
      if (r > 0) {
        s.v[k] = !strcmp(leaf, "Wo") ? z / sqrt((double)s.cols)
                 : leaf[0] == 'b'    ? 0.0
                                     : sd_in * z;
        continue;
      }
      /* the teacher entry this one copies: its head (-1: no head's) and
       * the entry's place within the head */
      int row = (int)(k / s.cols), col = (int)(k % s.cols), head = -1, copies = 1;
      if (per_head_rows) head = row / dh;            /* Wq, Wk, Wv: dh rows a head */
      else if (!strcmp(leaf, "Wo")) head = col / dh; /* Wo: dh columns a head */
      else if (head_gate) head = !strcmp(leaf, "Wg") ? row : col; /* one per head */
      double v = t.v[k];
      if (head >= 0) {
        int j = H >= Hs ? head % Hs : head;
        if (H >= Hs) copies = H / Hs + (head % Hs < H % Hs);
        int64_t tk = per_head_rows           ? ((int64_t)j * dh + row % dh) * s.cols + col
                     : !strcmp(leaf, "Wo")   ? (int64_t)j * dh + col % dh
                     : !strcmp(leaf, "Wg")   ? (int64_t)j * s.cols + col
                                             : j;
        v = t.v[tk];
        if (!strcmp(leaf, "Wo")) v /= copies;
      }
      s.v[k] = v + ESTIM_NEAR_SD * z;
    }
  }
}

/* One restart's outcome. */
typedef struct {
  double loss, grad_norm;
  int64_t steps;
  int converged, finite;
} restart_out;

/* Full-batch Adam from the model's parameters to the stopping rule: at
 * step t the loss and gradient at θ_t; stop when ‖∇‖ ≤ grad_tol or the
 * loss plateaus (converged), or at t = epochs (the cap); else one Adam
 * step at lr · 10^(−ESTIM_DECADES·t/cap). */
static int restart_run(cs_model *S, cs_acts *A, const cs_config *cfg, const estim_data *D,
                       double *mom, const train_hooks *hooks, restart_out *out) {
  int64_t P = model_param_count(S), cap = cfg->epochs;
  double *theta = model_params(S), *g = model_grads(S), *v = mom + P;
  int64_t runs[2] = {0, P};
  unsigned char decays[1] = {0};
  memset(mom, 0, sizeof(double) * 2 * (size_t)P);
  memset(g, 0, sizeof(double) * (size_t)P);
  double window_loss = NAN;
  *out = (restart_out){NAN, NAN, 0, 0, 1};
  for (int64_t t = 0;; t++) {
    double loss;
    CS_CHECK(model_forward(S, A, D->n, D->x));
    CS_CHECK(model_loss_mse(A, D->n, D->y, &loss));
    CS_CHECK(model_backward(S, A, D->n, D->x));
    double gn = 0.0;
    for (int64_t k = 0; k < P; k++) gn += g[k] * g[k];
    gn = sqrt(gn);
    out->loss = loss, out->grad_norm = gn, out->steps = t;
    if (!isfinite(loss) || !isfinite(gn)) {
      out->finite = 0;
      return CS_OK;
    }
    if (gn <= cfg->grad_tol) {
      out->converged = 1;
      return CS_OK;
    }
    if (t % ESTIM_WINDOW == 0) {
      if (t > 0 && fabs(window_loss - loss) <= ESTIM_PLATEAU_RTOL * loss) {
        out->converged = 1;
        return CS_OK;
      }
      window_loss = loss;
    }
    if (t >= cap) return CS_OK;
    double lr = cfg->lr * pow(10.0, -ESTIM_DECADES * (double)t / (double)cap);
    train_adam_step(1, runs, decays, theta, g, mom, v, lr, 0.0, t + 1);
    if (hooks && hooks->between_steps) CS_CHECK(hooks->between_steps(hooks->ctx));
  }
}

/* ------------------------------------------------------------- the cell */

typedef struct {
  cs_model *teacher, *student;
  cs_acts *acts;
  estim_data data;
  double *mom, *best, *f;
  estim_heads hs, ht;
  int *assign;
} estim_state;

int train_copy_tensors(cs_model *M, const char *prefix, cs_cell_result *res) {
  int nt = model_tensor_count(M), n0 = res->n_tensors;
  cs_tensor *grown = realloc(res->tensors, sizeof *grown * (size_t)(n0 + nt));
  if (!grown) return cs_error(CS_ERR_NOMEM, "estimation: out of memory saving parameters");
  res->tensors = grown;
  for (int i = 0; i < nt; i++) {
    cs_tensor view, *t = &res->tensors[n0 + i];
    model_tensor(M, i, &view, NULL);
    *t = view;
    snprintf(t->name, sizeof t->name, "%s%s", prefix, view.name);
    t->v = NULL;
    res->n_tensors = n0 + i + 1;
    CS_CHECK(CS_CALLOC(t->v, (int64_t)view.rows * view.cols));
    memcpy(t->v, view.v, sizeof(double) * (size_t)view.rows * view.cols);
  }
  return CS_OK;
}

static int estim_pipeline(const cs_config *cfg, const la_team *team, const train_hooks *hooks,
                          int save_params, cs_cell_result *res, estim_state *E) {
  CS_CHECK(estim_teacher_create(cfg, &E->teacher));
  CS_CHECK(estim_data_make(cfg, E->teacher, &E->data));
  CS_CHECK(model_create(cfg, team, &E->student));
  int64_t P = model_param_count(E->student);
  res->n_params = P;
  CS_CHECK(model_acts_create(E->student, E->data.n, 0, &E->acts));
  CS_CHECK(CS_CALLOC(E->mom, 2 * P));
  CS_CHECK(CS_CALLOC(E->best, P));
  cs_estimation *est = &res->est;
  est->present = 1;
  est->restarts = cfg->restarts;
  est->misspecified = cfg->heads < cfg->teacher_heads;
  est->teacher_mse = E->data.teacher_mse;
  est->kept = -1;
  double best_loss = INFINITY;
  restart_out kept = {0};
  for (int r = 0; r < cfg->restarts; r++) {
    restart_out o;
    restart_init(E->student, cfg, E->teacher, r);
    CS_CHECK(restart_run(E->student, E->acts, cfg, &E->data, E->mom, hooks, &o));
    est->steps_total += o.steps;
    if (o.finite && o.loss < best_loss) {
      best_loss = o.loss, kept = o, est->kept = r;
      memcpy(E->best, model_params(E->student), sizeof(double) * (size_t)P);
    }
  }
  if (est->kept < 0) {
    res->status = CELL_DIVERGED;
    snprintf(res->message, sizeof res->message, "every one of %d restarts reached a non-finite "
             "loss", cfg->restarts);
    res->train_loss = NAN;
    return CS_OK;
  }
  memcpy(model_params(E->student), E->best, sizeof(double) * (size_t)P);
  est->steps = kept.steps, est->grad_norm = kept.grad_norm, est->converged = kept.converged;
  est->train_mse = kept.loss;
  /* the function error on the fresh sets */
  CS_CHECK(CS_CALLOC(E->f, E->data.n_test));
  CS_CHECK(model_outputs(E->student, E->data.n_test, E->data.x_test, E->f));
  double se = 0.0;
  for (int i = 0; i < E->data.n_test; i++)
    se += (E->f[i] - E->data.f_test[i]) * (E->f[i] - E->data.f_test[i]);
  est->fn_error = sqrt(se / E->data.n_test);
  /* the Voronoi loss */
  cs_config tc = teacher_config(cfg);
  CS_CHECK(estim_heads_of(E->student, cfg, &E->hs));
  CS_CHECK(estim_heads_of(E->teacher, &tc, &E->ht));
  CS_CHECK(CS_CALLOC(E->assign, cfg->heads));
  est->param_error = estim_voronoi_loss(&E->hs, &E->ht, E->assign);
  res->status = CELL_DONE;
  res->train_loss = est->train_mse;
  res->train_acc = res->test_acc = NAN; /* regression: no accuracy */
  if (save_params) {
    CS_CHECK(train_copy_tensors(E->student, "", res));
    CS_CHECK(train_copy_tensors(E->teacher, "teacher/", res));
  }
  return CS_OK;
}

int estim_run(const cs_config *cfg, const la_team *team, const train_hooks *hooks,
              int save_params, cs_cell_result *res) {
  estim_state E;
  memset(&E, 0, sizeof E);
  res->depth = 0; /* no curvature: no input-coordinate surface (docs/MODELS.md) */
  int rc = estim_pipeline(cfg, team, hooks, save_params, res, &E);
  model_acts_free(E.acts);
  model_free(E.teacher), model_free(E.student);
  estim_data_free(&E.data);
  free(E.mom), free(E.best), free(E.f), free(E.assign);
  estim_heads_free(&E.hs), estim_heads_free(&E.ht);
  return rc;
}

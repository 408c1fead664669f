/* cell.c — one cell end to end: tasks → model → train → jets → geom. */
#include "curvsweep/error.h"
#include "curvsweep/geom.h"
#include "curvsweep/rng.h"
#include "curvsweep/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CURVATURE_CHUNK 256 /* points per jet forward pass */

/* Curvature at every prefix for n points x (n × m): jets through the model
 * in chunks, then geom per point. out: L × n geom_points (prefix-major). */
static int measure_points(const cs_model *M, const cs_config *cfg, int n, const double *x,
                          const char *stream_name, geom_point *out) {
  int L = model_depth(M), d = model_width(M), m = cfg->input_dim;
  int chunk = n < CURVATURE_CHUNK ? n : CURVATURE_CHUNK;
  cs_acts *A;
  CS_CHECK(model_acts_create(M, chunk, 2, &A));
  int C = model_acts_jet_rows(A), rc = CS_OK;
  geom_options opt = geom_options_default();
  opt.sigma = cfg->sigma;
  opt.exact_dim_max = cfg->exact_dim_max;
  for (int p0 = 0; p0 < n && !rc; p0 += chunk) {
    int cnt = n - p0 < chunk ? n - p0 : chunk;
    rc = model_forward(M, A, cnt, x + (int64_t)p0 * m);
    for (int l = 1; l <= L && !rc; l++) {
      const double *h = model_layer_output(A, l);
      for (int p = 0; p < cnt && !rc; p++) {
        /* Monte Carlo frames (m > exact_dim_max) keyed by (seed, prefix, point) */
        rng_stream mc = rng_stream_make((uint64_t)cfg->seed, stream_name, (int64_t)l << 32 | (p0 + p), "mc");
        rc = geom_point_curvature(d, m, h + (int64_t)p * C * d, &opt, &mc,
                                  &out[(int64_t)(l - 1) * n + p0 + p]);
      }
    }
  }
  model_acts_free(A);
  return rc;
}

typedef struct {
  cs_dataset eval;
  double *box_x;
  geom_point *pts, *box;
} measure_state;

static int measure(const cs_model *M, const cs_config *cfg, int save_points, cs_cell_result *res,
                   measure_state *s) {
  int L = model_depth(M), m = cfg->input_dim, n = cfg->points;
  /* evaluation points: the task's test distribution, their own split */
  CS_CHECK(task_generate(cfg->task, m, n, cfg->seed, SPLIT_EVAL, 0.0, &s->eval));
  CS_CHECK(CS_CALLOC(s->pts, (int64_t)L * n));
  CS_CHECK(measure_points(M, cfg, n, s->eval.x, "curv-eval", s->pts));
  /* ∫K dA (m = 2): uniform points over the input box, volume · mean(K √det g) */
  int n_box = m == 2 ? n : 0;
  double lo = 0, hi = 0, volume = 0;
  if (n_box) {
    task_domain(cfg->task, m, &lo, &hi);
    volume = (hi - lo) * (hi - lo);
    CS_CHECK(CS_CALLOC(s->box_x, (int64_t)n_box * m));
    rng_stream bs = rng_stream_make((uint64_t)cfg->seed, "curv-box", 0, config_task_name(cfg->task));
    for (int i = 0; i < n_box * m; i++) s->box_x[i] = lo + (hi - lo) * rng_uniform(&bs);
    CS_CHECK(CS_CALLOC(s->box, (int64_t)L * n_box));
    CS_CHECK(measure_points(M, cfg, n_box, s->box_x, "curv-box", s->box));
  }
  CS_CHECK(CS_CALLOC(res->curv, L));
  res->depth = L;
  for (int l = 0; l < L; l++)
    CS_CHECK(geom_stats_compute(n, s->pts + (int64_t)l * n, n_box,
                                n_box ? s->box + (int64_t)l * n_box : NULL, volume, m,
                                &res->curv[l]));
  if (save_points) {
    res->n_points = n;
    res->m = m;
    CS_CHECK(CS_CALLOC(res->pt_x, (int64_t)n * m));
    memcpy(res->pt_x, s->eval.x, sizeof(double) * n * m);
    CS_CHECK(CS_CALLOC(res->pt_S, (int64_t)L * n));
    CS_CHECK(CS_CALLOC(res->pt_S_tilde, (int64_t)L * n));
    CS_CHECK(CS_CALLOC(res->pt_logdet_g, (int64_t)L * n));
    CS_CHECK(CS_CALLOC(res->pt_H_norm, (int64_t)L * n));
    for (int64_t i = 0; i < (int64_t)L * n; i++) {
      const geom_point *p = &s->pts[i];
      res->pt_S[i] = p->degenerate ? NAN : p->S;
      res->pt_S_tilde[i] = p->degenerate ? NAN : p->S_tilde;
      res->pt_logdet_g[i] = p->degenerate ? NAN : p->logdet_g;
      res->pt_H_norm[i] = p->degenerate ? NAN : p->H_norm;
    }
  }
  return CS_OK;
}

int cell_measure_curvature(const cs_model *M, const cs_config *cfg, int save_points,
                           cs_cell_result *res) {
  measure_state s;
  memset(&s, 0, sizeof s);
  int rc = measure(M, cfg, save_points, res, &s);
  task_dataset_free(&s.eval);
  free(s.box_x), free(s.pts), free(s.box);
  return rc;
}

static double wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int copy_params(cs_model *M, cs_cell_result *res) {
  int nt = model_tensor_count(M);
  CS_CHECK(CS_CALLOC(res->tensors, nt));
  res->n_tensors = nt;
  for (int i = 0; i < nt; i++) {
    cs_tensor view;
    model_tensor(M, i, &view, NULL);
    res->tensors[i] = view;
    res->tensors[i].v = NULL;
    CS_CHECK(CS_CALLOC(res->tensors[i].v, (int64_t)view.rows * view.cols));
    memcpy(res->tensors[i].v, view.v, sizeof(double) * view.rows * view.cols);
  }
  return CS_OK;
}

typedef struct {
  cs_dataset train, test;
  cs_model *model;
} cell_state;

static int cell_pipeline(const cs_config *cfg, const cell_options *opt, const la_team *team,
                         const train_hooks *hooks, cs_cell_result *res, cell_state *s) {
  CS_CHECK(task_generate(cfg->task, cfg->input_dim, cfg->train_points, cfg->seed, SPLIT_TRAIN,
                         cfg->label_noise, &s->train));
  CS_CHECK(task_generate(cfg->task, cfg->input_dim, cfg->test_points, cfg->seed, SPLIT_TEST, 0.0,
                         &s->test));
  CS_CHECK(model_create(cfg, team, &s->model));
  res->n_params = model_param_count(s->model);
  CS_CHECK(train_model(s->model, cfg, &s->train, &s->test, hooks, res));
  if (res->status == CELL_DIVERGED) return CS_OK;
  CS_CHECK(cell_measure_curvature(s->model, cfg, opt && opt->save_points, res));
  if (opt && opt->save_params) CS_CHECK(copy_params(s->model, res));
  return CS_OK;
}

int cell_run(const cs_config *cfg, int64_t cell_id, const cell_options *opt, const la_team *team,
             const train_hooks *hooks, cs_cell_result *res) {
  memset(res, 0, sizeof *res);
  res->cell_id = cell_id;
  res->status = CELL_PENDING;
  double t0 = wall_seconds();
  cell_state s;
  memset(&s, 0, sizeof s);
  int rc = cell_pipeline(cfg, opt, team, hooks, res, &s);
  task_dataset_free(&s.train);
  task_dataset_free(&s.test);
  model_free(s.model);
  res->wall_s = wall_seconds() - t0;
  return rc;
}

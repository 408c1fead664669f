/* cell.c — one cell end to end: tasks → model → train → jets → geom. */
#include "curvsweep/clock.h"
#include "curvsweep/error.h"
#include "curvsweep/geom.h"
#include "curvsweep/rng.h"
#include "curvsweep/cell.h"
#include "curvsweep/cellstats.h"
#include "curvsweep/estim.h"
#include "train_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fenv.h>
#include <time.h>

#define CURVATURE_CHUNK 256 /* points per jet forward pass */
#define CHECK_STRIDE 32      /* every 32nd point checks the a-priori error estimate, */
#define CHECK_MIN 8          /* but at least 8 points (all of a smaller set) */
#define CHECK_ESCALATE 0.10  /* share of checks beyond it that triggers a full recompute */
#define LM_CHUNK_ROWS 8192   /* lm family: positions (sequences × seq_len) per jet chunk */

/* Curvature at every prefix for n points x (n × m) under the current
 * rounding mode: jets through the model in chunks, then geom per point.
 * index: (n) the points' indices in the evaluation set (NULL: 0..n-1),
 * which key the Monte Carlo frames so a recomputed point sees the same
 * frames. out: L × n geom_points (prefix-major). */
static int measure_points_once(const cs_model *M, cs_acts *A, const cs_config *cfg, int n,
                               const double *x, const cs_token_batch *tok, const int *index,
                               const char *stream_name, geom_point *out) {
  int L = model_depth(M), d = model_width(M), m = cfg->input_dim;
  int chunk = model_acts_capacity(A);
  int C = model_acts_jet_rows(A), rc = CS_OK;
  geom_options opt = geom_options_default();
  opt.sigma = cfg->sigma;
  opt.exact_dim_max = cfg->exact_dim_max;
  for (int p0 = 0; p0 < n && !rc; p0 += chunk) {
    int cnt = n - p0 < chunk ? n - p0 : chunk;
    if (tok) /* lm family: the sequences of these points */
      model_acts_bind_tokens(A, &(cs_token_batch){tok->T, tok->tokens + (int64_t)p0 * tok->T,
                                                  tok->scored + (int64_t)p0 * tok->T});
    rc = model_forward(M, A, cnt, x + (int64_t)p0 * m);
    for (int l = 1; l <= L && !rc; l++) {
      const double *h = model_layer_output(A, l);
      for (int p = 0; p < cnt && !rc; p++) {
        /* Monte Carlo frames (m > exact_dim_max only) keyed by (seed, prefix, point) */
        rng_stream mc, *mcp = NULL;
        if (m > opt.exact_dim_max) {
          int64_t key = index ? index[p0 + p] : p0 + p;
          mc = rng_stream_make((uint64_t)cfg->seed, stream_name, (int64_t)l << 32 | key, "mc");
          mcp = &mc;
        }
        rc = geom_point_curvature(d, m, h + (int64_t)p * C * d, &opt, mcp,
                                  &out[(int64_t)(l - 1) * n + p0 + p]);
      }
    }
  }
  return rc;
}

/* The same under a directed rounding mode (FE_UPWARD or FE_DOWNWARD) for
 * the k points index[0..k-1] of x: every operation of the jets and of the
 * geometry rounds one way, so the spread of the results measures how much
 * rounding moves S at that point. out: L × k. */
static int measure_points_directed(const cs_model *M, cs_acts *A, const cs_config *cfg,
                                   const double *x, const cs_token_batch *tok, int k,
                                   const int *index, const char *stream_name, int mode,
                                   geom_point *out) {
  int m = cfg->input_dim, T = tok ? tok->T : 0;
  double *xs;
  int *ts = NULL;
  unsigned char *ss = NULL;
  CS_CHECK(CS_CALLOC(xs, (int64_t)k * m));
  int rc = CS_OK;
  if (tok) rc = CS_CALLOC(ts, (int64_t)k * T);
  if (tok && !rc) rc = CS_CALLOC(ss, (int64_t)k * T);
  for (int i = 0; i < k && !rc; i++) {
    memcpy(xs + (int64_t)i * m, x + (int64_t)index[i] * m, sizeof(double) * m);
    if (tok) memcpy(ts + (int64_t)i * T, tok->tokens + (int64_t)index[i] * T, sizeof(int) * T);
    if (tok) memcpy(ss + (int64_t)i * T, tok->scored + (int64_t)index[i] * T, (size_t)T);
  }
  cs_token_batch sub = {T, ts, ss};
  int saved = fegetround();
  if (!rc && fesetround(mode) != 0)
    rc = cs_error(CS_ERR_INTERNAL, "curvature: this machine cannot switch the rounding mode");
  if (!rc) rc = measure_points_once(M, A, cfg, k, xs, tok ? &sub : NULL, index, stream_name, out);
  fesetround(saved);
  free(xs), free(ts), free(ss);
  return rc;
}

/* The check points of n: every stride-th, so that at least CHECK_MIN are checked. */
static int measure_check_stride(int n) {
  int stride = n / CHECK_MIN;
  return stride < 1 ? 1 : stride > CHECK_STRIDE ? CHECK_STRIDE : stride;
}

/* What the check points (index[i] % stride == 0, recomputed under directed
 * rounding) say of the a-priori estimate for this model:
 *   *kappa   max over checked (point, prefix) pairs of
 *            GEOM_SPREAD_FACTOR · spread / S_err, at least 1: the factor by
 *            which the a-priori estimate must grow to cover what the jets
 *            and geometry of this model actually do under rounding
 *   return   1 when the raw spread exceeds S_err at more than
 *            CHECK_ESCALATE of the checks: recompute every point */
static int measure_check_points(int L, int n, int stride, const geom_point *near, int k,
                                const int *index, const geom_point *up, const geom_point *down,
                                double *kappa) {
  int checks = 0, beyond = 0;
  *kappa = 1.0;
  for (int i = 0; i < k; i++) {
    if (index[i] % stride) continue;
    for (int l = 0; l < L; l++) {
      const geom_point *p = &near[(int64_t)l * n + index[i]];
      const geom_point *u = &up[(int64_t)l * k + i], *dn = &down[(int64_t)l * k + i];
      if (p->degenerate || u->degenerate || dn->degenerate) continue;
      double spread = fmax(fabs(u->S - p->S), fabs(dn->S - p->S));
      checks++;
      beyond += spread > p->S_err;
      if (p->S_err > 0.0 && GEOM_SPREAD_FACTOR * spread > *kappa * p->S_err)
        *kappa = GEOM_SPREAD_FACTOR * spread / p->S_err;
    }
  }
  return checks > 0 && beyond > CHECK_ESCALATE * checks;
}

/* Scale the a-priori S_err of every point by kappa ≥ 1 and classify again;
 * 1 when a point outside index[0..k-1] became doubtful (it needs the
 * directed recomputation too). */
static int measure_apply_kappa(int L, int n, geom_point *out, int k, const int *index,
                               double kappa) {
  int newly = 0;
  for (int p = 0, i = 0; p < n; p++) {
    int in_index = i < k && index[i] == p;
    i += in_index;
    for (int l = 0; l < L; l++) {
      geom_point *g = &out[(int64_t)l * n + p];
      if (g->degenerate) continue;
      g->S_err *= kappa;
      g->cls = geom_classify(g->S, g->S_err, g->T2);
      newly |= !in_index && geom_point_doubtful(g);
    }
  }
  return newly;
}

/* Curvature at every prefix with calibrated rounding errors
 * (docs/NUMERICS.md, "Rounding error"): one pass under round-to-nearest
 * gives S and its a-priori S_err; the doubtful points (geom_point_doubtful
 * at some prefix) and the check points (measure_check_stride) are
 * recomputed under upward and downward rounding, which sharpens their
 * S_err. The checks calibrate the a-priori estimate for this model: every
 * S_err is scaled by the largest factor the checks show it short by
 * (kappa ≥ 1); if that makes new points doubtful, or the checks show the
 * estimate too small at many points, every point is recomputed. out: L × n. */
static int curvature_points(const cs_model *M, cs_acts *work, const cs_config *cfg, int n,
                            const double *x, const cs_token_batch *tok, const char *stream_name,
                            geom_point *out) {
  int L = model_depth(M);
  cs_acts *A = work; /* one jet workspace for every pass */
  if (!A) CS_CHECK(model_acts_create(M, n < CURVATURE_CHUNK ? n : CURVATURE_CHUNK, 2, &A));
  int rc = CS_OK, *index = NULL, k = 0;
  if (model_acts_jet_rows(A) != geom_jet_rows(cfg->input_dim))
    rc = cs_error(CS_ERR_INTERNAL, "cell_curvature_points: the workspace holds no jets");
  if (!rc) rc = measure_points_once(M, A, cfg, n, x, tok, NULL, stream_name, out);
  if (!rc) rc = CS_CALLOC(index, n);
  int stride = measure_check_stride(n);
  for (int p = 0; p < n && !rc; p++) {
    int pick = p % stride == 0;
    for (int l = 0; l < L && !pick; l++) pick = geom_point_doubtful(&out[(int64_t)l * n + p]);
    if (pick) index[k++] = p;
  }
  geom_point *up = NULL, *down = NULL;
  for (int pass = 0; pass < 2 && k > 0 && !rc; pass++) {
    free(up), free(down);
    up = down = NULL;
    if (!rc) rc = CS_CALLOC(up, (int64_t)L * k);
    if (!rc) rc = CS_CALLOC(down, (int64_t)L * k);
    if (!rc) rc = measure_points_directed(M, A, cfg, x, tok, k, index, stream_name, FE_UPWARD, up);
    if (!rc)
      rc = measure_points_directed(M, A, cfg, x, tok, k, index, stream_name, FE_DOWNWARD, down);
    if (rc || pass == 1) break;
    double kappa;
    int escalate = measure_check_points(L, n, stride, out, k, index, up, down, &kappa);
    if (kappa > 1.0) escalate |= measure_apply_kappa(L, n, out, k, index, kappa);
    if (!escalate || k == n) break;
    for (int p = 0; p < n; p++) index[p] = p; /* escalate: every point */
    k = n;
  }
  for (int i = 0; i < k && !rc; i++)
    for (int l = 0; l < L; l++)
      geom_point_add_rounding_spread(&out[(int64_t)l * n + index[i]], &up[(int64_t)l * k + i],
                                     &down[(int64_t)l * k + i]);
  free(up), free(down), free(index);
  if (!work) model_acts_free(A);
  return rc;
}

int cell_curvature_points(const cs_model *M, cs_acts *work, const cs_config *cfg, int n,
                          const double *x, const char *stream_name, geom_point *out) {
  return curvature_points(M, work, cfg, n, x, NULL, stream_name, out);
}

/* A cell whose curvature overflowed is failed, never stored as done with
 * NaN or infinity: n points of which some are non-finite → CS_ERR_NUMERIC
 * naming the quantity and the σ that caused it. */
static int measure_check_finite(int64_t n, const geom_point *pts, const cs_config *cfg) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) bad += pts[i].nonfinite;
  if (bad)
    return cs_error(CS_ERR_NUMERIC, "curvature: %lld of %lld (point, prefix) pairs have a "
                    "non-finite S, S_tilde or metric (tr g, det g) at sigma = %g: the Fisher "
                    "scaling S = sigma^2 S_E, tr g = |J|^2 / sigma^2 overflows; choose a sigma "
                    "nearer 1", (long long)bad, (long long)n, cfg->sigma);
  return CS_OK;
}

/* The lm family's extreme-token statistics are finished results: a
 * non-finite one (a zero median norm: every value or residual row zero)
 * fails the cell instead of storing NaN (docs/ARCHIVE.md, "Reading an
 * archive"). */
static int measure_check_token_stats(int L, const geom_stats *st) {
  for (int l = 0; l < L; l++) {
    const geom_stats *g = &st[l];
    const char *bad = !isfinite(g->sink_mass)     ? "sink_mass"
                      : !isfinite(g->max_attn)    ? "max_attn"
                      : !isfinite(g->sink_headmax) ? "sink_headmax"
                      : !isfinite(g->massive_act) ? "massive_act"
                      : !isfinite(g->value_drain) ? "value_drain"
                      : !isfinite(g->resid_peak)  ? "resid_peak"
                                                  : NULL;
    if (bad)
      return cs_error(CS_ERR_NUMERIC, "extreme-token statistics: %s of block %d is not finite "
                      "(a median norm of zero: the block's values or residual stream vanish)",
                      bad, l + 1);
  }
  return CS_OK;
}

_Static_assert(CONFIG_FIELD_MAX == RESULT_FIELD_MAX, "the spec's field bound is the result's");

/* The model's predicted class (argmax of the logits, ties to class 0) at n
 * points x (n × m), from a value forward in chunks: pred (n). */
static int field_predict(const cs_model *M, int n, int m, const double *x, int8_t *pred) {
  cs_acts *V;
  CS_CHECK(model_acts_create(M, n < CURVATURE_CHUNK ? n : CURVATURE_CHUNK, 0, &V));
  int rc = CS_OK, chunk = model_acts_capacity(V);
  for (int p0 = 0; p0 < n && !rc; p0 += chunk) {
    int cnt = n - p0 < chunk ? n - p0 : chunk;
    rc = model_forward(M, V, cnt, x + (int64_t)p0 * m);
    const double *logits = model_logits(V); /* cnt × 2 */
    for (int p = 0; p < cnt && !rc; p++)
      pred[p0 + p] = (int8_t)(logits[2 * p + 1] > logits[2 * p]);
  }
  model_acts_free(V);
  return rc;
}

/* The curvature field (cfg->field = N > 0, m = 2; docs/ARCHIVE.md, "/fields"):
 * the N × N cell centres of the task's input box through the same jets →
 * geom path as the evaluation points (cell_curvature_points, its own
 * Monte Carlo stream "curv-field"), and the predicted class there. res:
 * field_n, field_lo/hi and the fd_* arrays. work: the jet workspace. */
static int measure_field(const cs_model *M, cs_acts *work, const cs_config *cfg,
                         cs_cell_result *res, double **grid, geom_point **pts) {
  int L = model_depth(M), N = cfg->field;
  int64_t ng = (int64_t)N * N, nl = (int64_t)L * ng;
  res->field_n = N;
  task_domain(cfg->task, 2, &res->field_lo, &res->field_hi);
  CS_CHECK(CS_CALLOC(*grid, 2 * ng));
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      (*grid)[2 * ((int64_t)i * N + j)] = result_field_coord(res, j);
      (*grid)[2 * ((int64_t)i * N + j) + 1] = result_field_coord(res, i);
    }
  CS_CHECK(CS_CALLOC(*pts, nl));
  CS_CHECK(cell_curvature_points(M, work, cfg, (int)ng, *grid, "curv-field", *pts));
  CS_CHECK(measure_check_finite(nl, *pts, cfg));
  double **fd[RESULT_N_FIELD_ARRAYS];
  result_field_arrays(res, fd);
  for (int k = 0; k < RESULT_N_FIELD_ARRAYS; k++) CS_CHECK(CS_CALLOC(*fd[k], nl));
  CS_CHECK(CS_CALLOC(res->fd_class, nl));
  CS_CHECK(CS_CALLOC(res->fd_pred, ng));
  for (int64_t i = 0; i < nl; i++) {
    const geom_point *p = &(*pts)[i];
    int deg = p->degenerate;
    res->fd_K[i] = deg ? NAN : p->K;
    res->fd_K_tilde[i] = deg ? NAN : p->K_tilde;
    res->fd_K_hat[i] = deg ? NAN : p->K_hat;
    res->fd_logdet_g[i] = deg ? NAN : p->logdet_g;
    res->fd_aniso[i] = deg ? NAN : geom_anisotropy_index(2, p->tr_g, p->logdet_g);
    res->fd_S_err[i] = deg ? NAN : p->S_err;
    res->fd_class[i] = (int8_t)p->cls;
  }
  return field_predict(M, (int)ng, 2, *grid, res->fd_pred);
}

typedef struct {
  cs_dataset eval;
  double *box_x, *field_x;
  geom_point *pts, *box, *field;
  double *sink; /* (4 + MODEL_EXTREME_COUNT)·L: sink_mass, max_attn, sink_headmax, attn_entropy,
                   then the extreme ratios per prefix */
  double *gate_values; /* L × gate_rows × gate_width (gated models) */
  cs_acts *jets; /* one jet workspace for the evaluation and the box points */
} measure_state;

/* The attention entropy of every block and the gate scores of every gated
 * block on the evaluation inputs (docs/MODELS.md, "Gate scores and
 * attention entropy"): model_block_stats, then cellstats_gate_scores per
 * block into res->gates. entropy: L values. */
static int measure_blocks(const cs_model *M, int n, const double *x, const cs_token_batch *tok,
                          double *entropy, cs_cell_result *res, measure_state *s) {
  int L = model_depth(M), width;
  int64_t rows;
  CS_CHECK(model_block_stats(M, n, x, tok, entropy, &s->gate_values, &rows, &width));
  if (!s->gate_values) return CS_OK;
  CS_CHECK(CS_CALLOC(res->gates, L));
  res->n_gates = L;
  for (int l = 0; l < L; l++) {
    res->gates[l].prefix = l + 1;
    CS_CHECK(cellstats_gate_scores(rows, width, s->gate_values + (int64_t)l * rows * width,
                                   &res->gates[l]));
  }
  return CS_OK;
}

static int measure(const cs_model *M, const cs_config *cfg, int save_points, cs_cell_result *res,
                   measure_state *s) {
  int L = model_depth(M), m = cfg->input_dim, n = cfg->points;
  int seq = config_family_tokens(cfg->family), chunk = n < CURVATURE_CHUNK ? n : CURVATURE_CHUNK;
  cs_token_batch tok = {0};
  if (seq) {
    /* lm family (docs/MODELS.md, "Curvature of the lm family"): held-out
     * sequences of their own split, each with a probe-plane point x drawn
     * uniformly in the task's probe box; jet chunks of at most
     * LM_CHUNK_ROWS positions */
    CS_CHECK(task_generate_sequences(cfg->task, cfg->vocab, cfg->seq_len, n, cfg->seed,
                                     SPLIT_EVAL, &s->eval));
    CS_CHECK(CS_CALLOC(s->eval.x, (int64_t)n * m));
    s->eval.m = m;
    double lo, hi;
    task_domain(cfg->task, m, &lo, &hi);
    rng_stream xs = rng_stream_make((uint64_t)cfg->seed, "curv-eval", 0, "lm-probe-x");
    for (int64_t i = 0; i < (int64_t)n * m; i++) s->eval.x[i] = lo + (hi - lo) * rng_uniform(&xs);
    tok = (cs_token_batch){cfg->seq_len, s->eval.tokens, s->eval.scored};
    int rows = LM_CHUNK_ROWS / cfg->seq_len;
    if (chunk > rows) chunk = rows > 0 ? rows : 1;
  } else {
    /* evaluation points: the task's test distribution, their own split */
    CS_CHECK(task_generate(cfg->task, m, n, cfg->seed, SPLIT_EVAL, 0.0, &s->eval));
  }
  CS_CHECK(CS_CALLOC(s->pts, (int64_t)L * n));
  CS_CHECK(model_acts_create(M, chunk, 2, &s->jets));
  CS_CHECK(curvature_points(M, s->jets, cfg, n, s->eval.x, seq ? &tok : NULL, "curv-eval",
                            s->pts));
  CS_CHECK(measure_check_finite(L * n, s->pts, cfg));
  /* ∫K dA (m = 2): uniform points over the input box, volume · mean(K √det g)
   * (not for the lm family: its points are sequences) */
  int n_box = m == 2 && !seq ? n : 0;
  double lo = 0, hi = 0, volume = 0;
  if (n_box) {
    task_domain(cfg->task, m, &lo, &hi);
    volume = (hi - lo) * (hi - lo);
    CS_CHECK(CS_CALLOC(s->box_x, (int64_t)n_box * m));
    rng_stream bs = rng_stream_make((uint64_t)cfg->seed, "curv-box", 0, config_task_name(cfg->task));
    for (int i = 0; i < n_box * m; i++) s->box_x[i] = lo + (hi - lo) * rng_uniform(&bs);
    CS_CHECK(CS_CALLOC(s->box, (int64_t)L * n_box));
    CS_CHECK(cell_curvature_points(M, s->jets, cfg, n_box, s->box_x, "curv-box", s->box));
    CS_CHECK(measure_check_finite(L * n_box, s->box, cfg));
  }
  CS_CHECK(CS_CALLOC(res->curv, L));
  res->depth = L;
  for (int l = 0; l < L; l++)
    CS_CHECK(geom_stats_compute(n, s->pts + (int64_t)l * n, n_box,
                                n_box ? s->box + (int64_t)l * n_box : NULL, volume, m,
                                &res->curv[l]));
  /* the attention-sink statistic of every prefix on the same evaluation
   * points or sequences (NaN for a family without a first token), and the
   * other extreme-token statistics of a token family, docs/MODELS.md */
  CS_CHECK(CS_CALLOC(s->sink, (4 + MODEL_EXTREME_COUNT) * (int64_t)L));
  CS_CHECK(model_attention_sink(M, n, s->eval.x, seq ? &tok : NULL, s->sink, s->sink + L,
                                s->sink + 2 * L));
  CS_CHECK(measure_blocks(M, n, s->eval.x, seq ? &tok : NULL, s->sink + 3 * L, res, s));
  if (seq) CS_CHECK(model_extreme_tokens(M, n, &tok, s->sink + 4 * L));
  for (int l = 0; l < L; l++) {
    geom_stats *g = &res->curv[l];
    const double *ex = s->sink + 4 * L + (int64_t)l * MODEL_EXTREME_COUNT;
    g->sink_mass = s->sink[l];
    g->max_attn = s->sink[L + l];
    g->sink_headmax = s->sink[2 * L + l];
    g->attn_entropy = s->sink[3 * L + l];
    if (seq) {
      g->massive_act = ex[MODEL_EXTREME_MASSIVE];
      g->value_drain = ex[MODEL_EXTREME_DRAIN];
      g->resid_peak = ex[MODEL_EXTREME_PEAK];
    }
  }
  if (seq) CS_CHECK(measure_check_token_stats(L, res->curv));
  if (cfg->field > 0 && m == 2) CS_CHECK(measure_field(M, s->jets, cfg, res, &s->field_x, &s->field));
  if (save_points) {
    res->n_points = n;
    res->m = m;
    CS_CHECK(CS_CALLOC(res->pt_x, (int64_t)n * m));
    memcpy(res->pt_x, s->eval.x, sizeof(double) * n * m);
    int64_t np = (int64_t)L * n;
    CS_CHECK(CS_CALLOC(res->pt_S, np));
    CS_CHECK(CS_CALLOC(res->pt_S_err, np));
    CS_CHECK(CS_CALLOC(res->pt_S_tilde, np));
    CS_CHECK(CS_CALLOC(res->pt_tr_g, np));
    CS_CHECK(CS_CALLOC(res->pt_logdet_g, np));
    CS_CHECK(CS_CALLOC(res->pt_H_norm, np));
    CS_CHECK(CS_CALLOC(res->pt_class, np));
    for (int64_t i = 0; i < np; i++) {
      const geom_point *p = &s->pts[i];
      res->pt_S[i] = p->degenerate ? NAN : p->S;
      res->pt_S_err[i] = p->degenerate ? NAN : p->S_err;
      res->pt_S_tilde[i] = p->degenerate ? NAN : p->S_tilde;
      res->pt_tr_g[i] = p->degenerate ? NAN : p->tr_g;
      res->pt_logdet_g[i] = p->degenerate ? NAN : p->logdet_g;
      res->pt_H_norm[i] = p->degenerate ? NAN : p->H_norm;
      res->pt_class[i] = (int8_t)p->cls;
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
  free(s.box_x), free(s.pts), free(s.box), free(s.sink), free(s.field_x), free(s.field);
  free(s.gate_values);
  model_acts_free(s.jets);
  return rc;
}

/* The calibration of the trained model's predictions on the test split
 * (docs/MODELS.md, "Calibration"): every test point against its label, or
 * every scored target of the test sequences against the prediction before
 * it (cellstats_calib_add over value forwards in chunks). */
static int measure_calibration(const cs_model *M, const cs_dataset *test, cs_cell_stats *cs) {
  int K = model_classes(M), T = test->T, chunk = T > 0 ? 64 : CURVATURE_CHUNK;
  cs_acts *A;
  CS_CHECK(model_acts_create(M, test->n < chunk ? test->n : chunk, 0, &A));
  cellstats_calib c;
  memset(&c, 0, sizeof c);
  int rc = CS_OK;
  for (int p0 = 0; p0 < test->n && !rc; p0 += chunk) {
    int cnt = test->n - p0 < chunk ? test->n - p0 : chunk;
    if (T > 0) {
      const int *tok = test->tokens + (int64_t)p0 * T;
      const unsigned char *sc = test->scored + (int64_t)p0 * T;
      model_acts_bind_tokens(A, &(cs_token_batch){T, tok, sc});
      rc = model_forward(M, A, cnt, NULL);
      const double *z = model_logits(A); /* cnt·T × V: row p·T + t predicts token t + 1 */
      for (int64_t r = 0; r < (int64_t)cnt * T && !rc; r++)
        if (r % T + 1 < T && sc[r + 1]) cellstats_calib_add(&c, K, z + r * K, tok[r + 1]);
    } else {
      rc = model_forward(M, A, cnt, test->x + (int64_t)p0 * test->m);
      const double *z = model_logits(A); /* cnt × K */
      for (int p = 0; p < cnt && !rc; p++) cellstats_calib_add(&c, K, z + (int64_t)p * K, test->y[p0 + p]);
    }
  }
  model_acts_free(A);
  double acc;
  cellstats_calib_finish(&c, &cs->test_nll, &cs->test_brier, &cs->test_ece, &acc);
  return rc;
}

/* What the trained model's outputs say besides curvature: calibration on
 * the test split (cs_cell_stats) and, for the lm family, the change in test
 * loss when each block's first-token attention or attention output is
 * removed (docs/MODELS.md, "What a sink does"), into res->curv. */
static int cell_measure_outputs(const cs_model *M, const cs_dataset *test, cs_cell_result *res) {
  CS_CHECK(measure_calibration(M, test, &res->cstats));
  if (test->T == 0) return CS_OK;
  int L = model_depth(M);
  double *d;
  CS_CHECK(CS_CALLOC(d, 2 * (int64_t)L));
  cs_token_batch tb = {test->T, test->tokens, test->scored};
  int rc = model_ablation_deltas(M, test->n, &tb, d, d + L, NULL);
  for (int l = 0; l < L && !rc && l < res->depth; l++) {
    res->curv[l].ablate_first = d[l];
    res->curv[l].ablate_attn = d[L + l];
    if (!isfinite(d[l]) || !isfinite(d[L + l]))
      rc = cs_error(CS_ERR_NUMERIC, "ablation of block %d: a non-finite test loss", l + 1);
  }
  free(d);
  return rc;
}

/* The stability of the training curve (docs/MODELS.md, "Stability"): its
 * loss spikes, measured against the loss of a uniform guess over the K
 * classes (log K). */
static int measure_stability(const cs_model *M, cs_cell_result *res) {
  double *loss;
  CS_CHECK(CS_CALLOC(loss, res->n_curve > 0 ? res->n_curve : 1));
  cs_cell_stats *cs = &res->cstats;
  cs->present = 1;
  cs->test_nll = cs->test_brier = cs->test_ece = NAN;
  for (int e = 0; e < res->n_curve; e++) loss[e] = res->curve[e].train_loss;
  cellstats_loss_spikes(res->n_curve, loss, log((double)model_classes(M)), &cs->spikes,
                        &cs->loss_ratio_max);
  free(loss);
  return CS_OK;
}

typedef struct {
  cs_dataset train, test;
  cs_model *model;
} cell_state;

static int cell_pipeline(const cs_config *cfg, const cell_options *opt, const la_team *team,
                         const train_hooks *hooks, cs_cell_result *res, cell_state *s) {
  if (cfg->task == TASK_TEACHER) /* the estimator (docs/MODELS.md, "Estimation") */
    return estim_run(cfg, team, hooks, opt && opt->save_params, res);
  if (task_is_sequence(cfg->task)) { /* token sequences (lm family) */
    CS_CHECK(task_generate_sequences(cfg->task, cfg->vocab, cfg->seq_len, cfg->train_points,
                                     cfg->seed, SPLIT_TRAIN, &s->train));
    CS_CHECK(task_generate_sequences(cfg->task, cfg->vocab, cfg->seq_len, cfg->test_points,
                                     cfg->seed, SPLIT_TEST, &s->test));
  } else {
    CS_CHECK(task_generate(cfg->task, cfg->input_dim, cfg->train_points, cfg->seed, SPLIT_TRAIN,
                           cfg->label_noise, &s->train));
    CS_CHECK(task_generate(cfg->task, cfg->input_dim, cfg->test_points, cfg->seed, SPLIT_TEST,
                           0.0, &s->test));
  }
  CS_CHECK(model_create(cfg, team, &s->model));
  res->n_params = model_param_count(s->model);
  CS_CHECK(train_model(s->model, cfg, &s->train, &s->test, hooks, res));
  CS_CHECK(measure_stability(s->model, res));
  if (res->status == CELL_DIVERGED) return CS_OK;
  CS_CHECK(cell_measure_curvature(s->model, cfg, opt && opt->save_points, res));
  CS_CHECK(cell_measure_outputs(s->model, &s->test, res));
  if (opt && opt->save_params) CS_CHECK(train_copy_tensors(s->model, "", res));
  return CS_OK;
}

int cell_run(const cs_config *cfg, int64_t cell_id, const cell_options *opt, const la_team *team,
             const train_hooks *hooks, cs_cell_result *res) {
  memset(res, 0, sizeof *res);
  res->cell_id = cell_id;
  res->status = CELL_PENDING;
  double t0 = cs_monotonic_seconds();
  cell_state s;
  memset(&s, 0, sizeof s);
  int rc = cell_pipeline(cfg, opt, team, hooks, res, &s);
  task_dataset_free(&s.train);
  task_dataset_free(&s.test);
  model_free(s.model);
  res->wall_s = cs_monotonic_seconds() - t0;
  return rc;
}

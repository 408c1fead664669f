/* test_analysis.c — `curvsweep analyze`: the paired bootstrap (deterministic, covering the
 * true exponent of a noisy power law), and whole reports of synthetic
 * archives written through archive.h, checked number by number against hand
 * computation; errors (mixed specs, no done cells, unreadable file) and a
 * missing gnuplot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/analysis.h"
#include "curvsweep/archive.h"
#include "curvsweep/error.h"
#include "curvsweep/quantile.h"
#include "curvsweep/result.h"
#include "curvsweep/rng.h"
#include "curvsweep/spec.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* helpers                                                                    */







/* A CSV file as rows of fields (no quoting: the report's fields have no commas). */
typedef struct {
  int n_rows, n_cols;
  char **header;
  char ***row;
  char *text;
} csv;

static int split(char *line, char **out, int max) {
  int n = 0;
  for (char *p = line; n < max;) {
    out[n++] = p;
    char *c = strchr(p, ',');
    if (!c) break;
    *c = '\0';
    p = c + 1;
  }
  return n;
}

static void csv_load(const char *path, csv *t) {
  memset(t, 0, sizeof *t);
  t->text = read_text(path);
  int lines = 0;
  for (char *c = t->text; *c; c++) lines += *c == '\n';
  t->row = calloc((size_t)lines + 1, sizeof *t->row);
  t->header = calloc(256, sizeof *t->header);
  char *save = NULL;
  int i = 0;
  for (char *line = strtok_r(t->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
    if (i == 0) {
      t->n_cols = split(line, t->header, 256);
    } else {
      t->row[t->n_rows] = calloc(256, sizeof(char *));
      assert_int_equal(split(line, t->row[t->n_rows], 256), t->n_cols);
      t->n_rows++;
    }
  }
}

static void csv_free(csv *t) {
  for (int i = 0; i < t->n_rows; i++) free(t->row[i]);
  free(t->row), free(t->header), free(t->text);
}

static int csv_col(const csv *t, const char *name) {
  for (int c = 0; c < t->n_cols; c++)
    if (!strcmp(t->header[c], name)) return c;
  fail_msg("no column %s", name);
  return -1;
}

/* The one row matching "col=value;col=value"; fails unless exactly one matches. */
static int csv_find(const csv *t, const char *where) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", where);
  char *conds[16];
  int nc = 0;
  for (char *save = NULL, *c = strtok_r(buf, ";", &save); c && nc < 16; c = strtok_r(NULL, ";", &save))
    conds[nc++] = c;
  int found = -1, count = 0;
  for (int r = 0; r < t->n_rows; r++) {
    int ok = 1;
    for (int k = 0; k < nc && ok; k++) {
      char *eq = strchr(conds[k], '=');
      assert_non_null(eq);
      *eq = '\0';
      ok = !strcmp(t->row[r][csv_col(t, conds[k])], eq + 1);
      *eq = '=';
    }
    if (ok) found = r, count++;
  }
  if (count != 1) fail_msg("%d rows match %s", count, where);
  return found;
}

static double csv_num(const csv *t, const char *where, const char *col) {
  return strtod(t->row[csv_find(t, where)][csv_col(t, col)], NULL);
}


/* Per-prefix values of a synthetic cell. */
typedef struct {
  double K, Kt, Kt_signed, logdet, intK;
} prefix_values;

/* A done result with the given accuracy and per-prefix statistics; with
 * n_points > 0 also per-point arrays (x on a seeded grid, K̃ = kt_scale·x1·x2). */
static cs_cell_result prefix_result(int64_t id, int L, double acc, const prefix_values *pv,
                                    int n_points, double kt_scale) {
  cs_cell_result r = make_result(id, L, acc);
  r.train_loss = 0.3;
  r.n_params = 100;
  for (int l = 0; l < L; l++) {
    geom_stats *g = &r.curv[l];
    g->n_points = 16;
    g->K_absmean = pv[l].K;
    g->K_mean = g->K_median = g->K_q05 = g->K_q95 = pv[l].K;
    g->Kt_absmean = pv[l].Kt;
    g->Kt_mean = pv[l].Kt_signed;
    g->Kt_median = g->Kt_q05 = g->Kt_q95 = pv[l].Kt;
    g->logdet_mean = pv[l].logdet;
    g->intK = pv[l].intK;
    g->S_se = NAN;
  }
  if (n_points > 0) {
    r.n_points = n_points, r.m = 2;
    r.pt_x = calloc((size_t)n_points * 2, sizeof(double));
    size_t np = (size_t)n_points * L;
    r.pt_S = calloc(np, sizeof(double)), r.pt_S_tilde = calloc(np, sizeof(double));
    r.pt_logdet_g = calloc(np, sizeof(double)), r.pt_H_norm = calloc(np, sizeof(double));
    /* every array of a result with points (result_pack copies them all): tr g = m = 2
     * (g = I, so K̂ = K̃ = K), S exact to 1e-18, every point curved */
    r.pt_S_err = calloc(np, sizeof(double)), r.pt_tr_g = calloc(np, sizeof(double));
    r.pt_class = calloc(np, sizeof(int8_t));
    for (size_t k = 0; k < np; k++) r.pt_S_err[k] = 1e-18, r.pt_tr_g[k] = 2.0, r.pt_class[k] = GEOM_CURVED;
    rng_stream s = rng_stream_make((uint64_t)id, "test:points", 0, NULL);
    for (int i = 0; i < n_points; i++) {
      double x1 = 2 * rng_uniform(&s) - 1, x2 = 2 * rng_uniform(&s) - 1;
      r.pt_x[2 * i] = x1, r.pt_x[2 * i + 1] = x2;
      for (int l = 0; l < L; l++) {
        r.pt_S_tilde[(size_t)l * n_points + i] = 2.0 * kt_scale * (l + 1) * x1 * x2;
        r.pt_S[(size_t)l * n_points + i] = 2.0 * kt_scale * x1 * x2;
      }
    }
  }
  return r;
}

/* Write the given results into a new archive of spec (mask may be NULL). */
static void write_archive(const char *path, const cs_spec *spec, const unsigned char *mask,
                          cs_cell_result *res, int n) {
  cs_archive *a = NULL;
  assert_ok(archive_open_write(path, spec, ARCHIVE_CREATE, mask, &a));
  for (int i = 0; i < n; i++)
    if (!mask || mask[res[i].cell_id]) assert_ok(archive_write_result(a, &res[i]));
  assert_ok(archive_close(a));
}

static int has_warning(const analysis_outcome *o, const char *text) {
  for (int i = 0; i < o->n_warnings; i++)
    if (strstr(o->warnings[i], text)) return 1;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* the bootstrap (the distributions and tests: test_analysis_inference.c)     */

/* y[g][s] = depth_g^1.5 · exp(noise · z): the bootstrap of the log-log slope. */
static void fill_power_law(double *y, const double *depth, int G, int S, double noise, uint64_t seed) {
  rng_stream s = rng_stream_make(seed, "test:power-law", 0, NULL);
  for (int g = 0; g < G; g++)
    for (int k = 0; k < S; k++) y[g * S + k] = pow(depth[g], 1.5) * exp(noise * rng_normal(&s));
}

/* rng_below_fill (the bootstrap's draws, division-free) gives exactly the
 * draws of rng_below on the same stream, for small, odd, large and
 * power-of-two n and for n close to 2^31. */
static void test_below_fill(void **state) {
  (void)state;
  const int ns[] = {1, 2, 3, 7, 10, 1000, 125000, 1 << 20, 2147483647, 1610612741};
  for (size_t j = 0; j < sizeof ns / sizeof *ns; j++) {
    rng_stream a = rng_stream_make(11, "test", (int64_t)j, "below"), b = a;
    int got[4096];
    rng_below_fill(&a, ns[j], 4096, got);
    for (int i = 0; i < 4096; i++) assert_int_equal(got[i], (int)rng_below(&b, (uint64_t)ns[j]));
    assert_true(a.counter == b.counter);
  }
}

static void test_bootstrap(void **state) {
  (void)state;
  enum { G = 4, S = 8 };
  double depth[G] = {1, 2, 4, 8}, y[G * S];
  /* exact power law: every replicate has slope 1.5 */
  fill_power_law(y, depth, G, S, 0.0, 1);
  rng_stream r1 = rng_stream_make(0, "analysis:bootstrap", 0, "test");
  analysis_boot b1, b2, b3;
  assert_ok(analysis_bootstrap_slope(G, S, depth, y, 1, 2000, 0.95, &r1, &b1));
  assert_close(b1.estimate, 1.5, 1e-12);
  assert_close(b1.lo, 1.5, 1e-12);
  assert_close(b1.hi, 1.5, 1e-12);
  assert_int_equal(b1.n_valid, 2000);
  /* lognormal noise (sd 0.3 in log): deterministic from the stream, covers 1.5 */
  fill_power_law(y, depth, G, S, 0.3, 2);
  r1 = rng_stream_make(0, "analysis:bootstrap", 0, "test");
  rng_stream r2 = rng_stream_make(0, "analysis:bootstrap", 0, "test");
  assert_ok(analysis_bootstrap_slope(G, S, depth, y, 1, 2000, 0.95, &r1, &b1));
  assert_ok(analysis_bootstrap_slope(G, S, depth, y, 1, 2000, 0.95, &r2, &b2));
  assert_true(b1.estimate == b2.estimate && b1.lo == b2.lo && b1.hi == b2.hi);
  assert_int_equal(b1.n_valid, b2.n_valid);
  assert_true(b1.lo < 1.5 && 1.5 < b1.hi);
  assert_true(b1.hi - b1.lo > 0.02 && b1.hi - b1.lo < 0.6);
  assert_close(b1.estimate, 1.5, 0.25);
  /* another stream gives another (but close) interval: the draws come from the stream */
  rng_stream r3 = rng_stream_make(1, "analysis:bootstrap", 0, "test");
  assert_ok(analysis_bootstrap_slope(G, S, depth, y, 1, 2000, 0.95, &r3, &b3));
  assert_true(b3.lo != b1.lo || b3.hi != b1.hi);
  assert_close(b3.estimate, b1.estimate, 0.0);
  /* coverage over 40 independent noisy data sets: nominal 95%, allow ≥ 80% */
  int covered = 0;
  for (int rep = 0; rep < 40; rep++) {
    fill_power_law(y, depth, G, S, 0.3, 100 + rep);
    rng_stream r = rng_stream_make(rep, "analysis:bootstrap", 0, "coverage");
    assert_ok(analysis_bootstrap_slope(G, S, depth, y, 1, 500, 0.95, &r, &b3));
    covered += b3.lo <= 1.5 && 1.5 <= b3.hi;
  }
  assert_true(covered >= 32);
  /* one seed: a slope but no interval */
  assert_ok(analysis_bootstrap_slope(G, 1, depth, y, 1, 100, 0.95, &r1, &b3));
  assert_true(isfinite(b3.estimate) && isnan(b3.lo) && isnan(b3.hi));
}

static void test_default_dir(void **state) {
  (void)state;
  char buf[256];
  assert_ok(analysis_default_dir("results/demo.h5", buf, sizeof buf));
  assert_string_equal(buf, "results/demo-report");
  assert_ok(analysis_default_dir("x", buf, sizeof buf));
  assert_string_equal(buf, "x-report");
  assert_int_equal(analysis_default_dir("results/demo.h5", buf, 8), CS_ERR_INPUT);
}

/* ------------------------------------------------------------------------ */
/* reports of synthetic archives                                              */

/* 2 archs × 2 depths × 2 tasks × 3 seeds; cell id = ((a·2 + d)·2 + t)·3 + s. */
static const char *HAND_SPEC = "[sweep]\nname = hand\n[grid]\narch = ungated, gated\n"
                               "depth = 1, 2\ntask = linear, circles\nseed = 0..2\n"
                               "[curvature]\npoints = 16\n";

/* Hand values: ungated acc 0.80 + 0.01 s, |K| = 1e-15 (s+1) l, K̃ = 2e-15 (s+1),
 * log det g = −0.5 l; gated acc = ungated + delta[task][s], |K| = (s+1) l²,
 * K̃ = {0.5, 0.7, 0.9}[s] · l, mean K̃ 0.1 (s+1), log det g = −l, ∫K dA 0.2 (s+1).
 * The cell (gated, depth 1, linear, seed 2) is left pending (HAND_PENDING). */
static const double HAND_DELTA[2][3] = {{0.01, -0.02, 0.0}, {0.10, 0.05, 0.15}};
static const double HAND_KT[3] = {0.5, 0.7, 0.9};
#define HAND_PENDING ((((1 * 2 + 0) * 2 + 0) * 3) + 2)

static int hand_results_bump(cs_cell_result *res, int with_points, double bump) {
  int n = 0;
  for (int a = 0; a < 2; a++)
    for (int d = 0; d < 2; d++)
      for (int t = 0; t < 2; t++)
        for (int s = 0; s < 3; s++) {
          int id = ((a * 2 + d) * 2 + t) * 3 + s, L = d + 1;
          if (id == HAND_PENDING) continue;
          prefix_values pv[2];
          for (int l = 1; l <= L; l++) {
            if (a == 0)
              pv[l - 1] = (prefix_values){1e-15 * (s + 1) * l, 2e-15 * (s + 1), 0.0, -0.5 * l, 0.0};
            else
              pv[l - 1] = (prefix_values){(s + 1.0) * l * l, HAND_KT[s] * l, 0.1 * (s + 1), -1.0 * l,
                                          0.2 * (s + 1)};
          }
          if (bump > 0 && a == 0 && d == 1 && t == 1 && s == 0) pv[1].Kt = bump;
          double acc = 0.80 + 0.01 * s;
          if (a == 1) acc += HAND_DELTA[t][s];
          res[n++] = prefix_result(id, L, acc, pv, with_points ? 16 : 0, a == 0 ? 1e-15 : 1.0);
        }
  return n;
}

static int hand_results(cs_cell_result *res, int with_points) {
  return hand_results_bump(res, with_points, 0.0);
}

static void test_report_hand(void **state) {
  (void)state;
  char dir[64], arch[128], out[128], path[256];
  cs_spec *spec = scratch(dir, arch, "hand", "hand.h5", HAND_SPEC);
  snprintf(out, sizeof out, "%s/report", dir);
  cs_cell_result res[24];
  int n = hand_results(res, 0);
  assert_int_equal(n, 23);
  /* cell 2 (ungated, depth 1, linear, seed 2) diverged instead */
  assert_int_equal(res[2].cell_id, 2);
  result_free(&res[2]);
  res[2].status = CELL_DIVERGED;
  res[2].test_acc = res[2].train_acc = res[2].train_loss = NAN;
  snprintf(res[2].message, sizeof res[2].message, "non-finite loss at epoch 3");
  write_archive(arch, spec, NULL, res, n);

  analysis_options no_plots = analysis_options_default();
  no_plots.gnuplot = "/nonexistent/gnuplot";
  const char *paths[1] = {arch};
  analysis_outcome o;
  assert_ok(analysis_run(paths, 1, out, &no_plots, &o));
  assert_int_equal(o.cells_total, 24);
  assert_int_equal(o.done, 22);
  assert_int_equal(o.pending, 1);
  assert_int_equal(o.diverged, 1);
  assert_true(has_warning(&o, "partial archive: 22 of 24 cells done"));
  assert_true(has_warning(&o, "gnuplot not found: plots skipped"));
  assert_int_equal(o.plots_written, 0);

  csv t;
  snprintf(path, sizeof path, "%s/summary.csv", out);
  csv_load(path, &t);
  assert_int_equal(t.n_rows, 8);
  /* gated, circles, depth 2: acc {0.90, 0.86, 0.97}: mean 0.91 ± t_{.975,2} √0.0031/√3 */
  const char *g = "arch=gated;task=circles;depth=2";
  assert_close(csv_num(&t, g, "n_seeds"), 3, 0);
  assert_close(csv_num(&t, g, "acc_mean"), 0.91, 1e-12);
  assert_close(csv_num(&t, g, "acc_ci_low"), 0.771689065761544, 1e-9);
  /* the t interval's upper end 1.0483109342384562 is clipped to 1 (analysis/README.md) */
  assert_close(csv_num(&t, g, "acc_ci_high"), 1.0, 0.0);
  /* |K| at l = 2: {4, 8, 12}: 8 ± 4.30265·4/√3; K̃ {1.0, 1.4, 1.8}: 1.4 ± 4.30265·0.4/√3 */
  assert_close(csv_num(&t, g, "K_absmean_mean"), 8.0, 1e-12);
  assert_close(csv_num(&t, g, "K_absmean_ci_low"), -1.9365508470013246, 1e-8);
  assert_close(csv_num(&t, g, "K_absmean_ci_high"), 17.936550847001325, 1e-8);
  assert_close(csv_num(&t, g, "Kt_absmean_mean"), 1.4, 1e-12);
  assert_close(csv_num(&t, g, "Kt_absmean_ci_low"), 0.4063449152998677, 1e-9);
  assert_close(csv_num(&t, g, "Kt_absmean_ci_high"), 2.3936550847001326, 1e-9);
  assert_close(csv_num(&t, g, "intK_mean"), 0.4, 1e-12);
  assert_close(csv_num(&t, g, "Kt_mean_mean"), 0.2, 1e-12);
  assert_close(csv_num(&t, g, "logdet_mean"), -2.0, 1e-12);
  assert_close(csv_num(&t, g, "skeleton"), 1, 0);
  /* gated, linear, depth 1: seed 2 pending: acc {0.81, 0.79}: 0.80 ± 12.7062·0.0141421/√2 */
  const char *p = "arch=gated;task=linear;depth=1";
  assert_close(csv_num(&t, p, "n_cells"), 3, 0);
  assert_close(csv_num(&t, p, "n_seeds"), 2, 0);
  assert_close(csv_num(&t, p, "acc_mean"), 0.80, 1e-12);
  assert_close(csv_num(&t, p, "acc_ci_low"), 0.6729379526382528, 1e-9);
  assert_close(csv_num(&t, p, "acc_ci_high"), 0.9270620473617472, 1e-9);
  assert_string_equal(t.row[csv_find(&t, p)][csv_col(&t, "boundary")], "linear");
  /* ungated, linear, depth 1: seed 2 diverged: acc {0.80, 0.81} */
  p = "arch=ungated;task=linear;depth=1";
  assert_close(csv_num(&t, p, "n_cells"), 3, 0);
  assert_close(csv_num(&t, p, "n_seeds"), 2, 0);
  assert_close(csv_num(&t, p, "n_diverged"), 1, 0);
  assert_close(csv_num(&t, p, "n_failed"), 0, 0);
  assert_close(csv_num(&t, p, "acc_mean"), 0.805, 1e-12);
  csv_free(&t);

  snprintf(path, sizeof path, "%s/gap.csv", out);
  csv_load(path, &t);
  assert_int_equal(t.n_rows, 4);
  /* circles, depth 2: Δacc {0.10, 0.05, 0.15}: 0.1 ± 4.30265·0.05/√3, 3 of 3 positive, p = 2/8 */
  g = "comparison=gated-ungated;task=circles;depth=2";
  assert_close(csv_num(&t, g, "n_pairs"), 3, 0);
  assert_close(csv_num(&t, g, "dacc_mean"), 0.1, 1e-12);
  assert_close(csv_num(&t, g, "dacc_ci_low"), -0.02420688558751652, 1e-9);
  assert_close(csv_num(&t, g, "dacc_ci_high"), 0.22420688558751656, 1e-9);
  assert_close(csv_num(&t, g, "dacc_npos"), 3, 0);
  assert_close(csv_num(&t, g, "dacc_nneg"), 0, 0);
  assert_close(csv_num(&t, g, "dacc_sign_p"), 0.25, 1e-12);
  /* d_z = 0.1/0.05 = 2, interval 2 ± t_{.975,2} √(1/3 + 2²/4), t_{.975,2} = 0.95/√(2·0.975·0.025) */
  double t2 = 0.95 / sqrt(2 * 0.975 * 0.025), dzh = t2 * sqrt(1.0 / 3 + 1.0);
  assert_close(csv_num(&t, g, "dacc_dz"), 2.0, 1e-9);
  assert_close(csv_num(&t, g, "dacc_dz_low"), 2.0 - dzh, 1e-9);
  assert_close(csv_num(&t, g, "dacc_dz_high"), 2.0 + dzh, 1e-9);
  /* ΔK̃ = {1.0 − 2e-15, 1.4 − 4e-15, 1.8 − 6e-15}; Δ|K| = 4(s+1) − 2e-15 (s+1) */
  assert_close(csv_num(&t, g, "dKt_mean"), 1.4 - 4e-15, 1e-12);
  assert_close(csv_num(&t, g, "dK_mean"), 8.0, 1e-12);
  /* linear, depth 2: Δacc {0.01, −0.02, 0}: one of each sign, the tie dropped, p = 1 */
  p = "comparison=gated-ungated;task=linear;depth=2";
  assert_close(csv_num(&t, p, "dacc_mean"), -0.01 / 3, 1e-12);
  assert_close(csv_num(&t, p, "dacc_ci_low"), -0.04127916366930094, 1e-9);
  assert_close(csv_num(&t, p, "dacc_npos"), 1, 0);
  assert_close(csv_num(&t, p, "dacc_nneg"), 1, 0);
  assert_close(csv_num(&t, p, "dacc_sign_p"), 1.0, 0);
  assert_close(csv_num(&t, "comparison=gated-ungated;task=linear;depth=1", "n_pairs"), 2, 0);
  csv_free(&t);

  snprintf(path, sizeof path, "%s/amplification.csv", out);
  csv_load(path, &t);
  assert_int_equal(t.n_rows, 4);
  /* gated circles: seed means |K| 2 (depth 1) and 8 (depth 2): slope log 4/log 2 = 2 in
   * every replicate; K̃ doubles: slope 1; log det g −1 → −2: slope −1/log 2 */
  g = "arch=gated;task=circles";
  assert_close(csv_num(&t, g, "K_depth_slope"), 2.0, 1e-12);
  assert_close(csv_num(&t, g, "K_depth_slope_ci_low"), 2.0, 1e-12);
  assert_close(csv_num(&t, g, "K_depth_slope_ci_high"), 2.0, 1e-12);
  assert_close(csv_num(&t, g, "Kt_depth_slope"), 1.0, 1e-12);
  assert_close(csv_num(&t, g, "Kt_depth_slope_ci_low"), 1.0, 1e-12);
  assert_close(csv_num(&t, g, "logdet_depth_slope"), -1.4426950408889634, 1e-12);
  assert_close(csv_num(&t, g, "K_ratio"), 4.0, 1e-12);
  assert_close(csv_num(&t, g, "Kt_ratio"), 2.0, 1e-12);
  assert_close(csv_num(&t, g, "prefix_depth"), 2, 0);
  assert_close(csv_num(&t, g, "K_prefix_slope"), 2.0, 1e-12);
  assert_close(csv_num(&t, g, "Kt_prefix_slope"), 1.0, 1e-12);
  assert_close(csv_num(&t, g, "Kt_prefix_ratio"), 2.0, 1e-12);
  assert_close(csv_num(&t, g, "Kt_absmean_max"), 1.8, 1e-12);
  assert_close(csv_num(&t, "arch=ungated;task=circles", "Kt_absmean_max"), 6e-15, 1e-27);
  assert_close(csv_num(&t, "arch=ungated;task=circles", "n_seeds"), 3, 0);
  csv_free(&t);

  snprintf(path, sizeof path, "%s/prefix.csv", out);
  csv_load(path, &t);
  assert_int_equal(t.n_rows, 12); /* 4 groups of depth 1, 4 of depth 2 with two prefixes */
  assert_close(csv_num(&t, "arch=gated;task=circles;depth=2;prefix=1", "K_absmean_mean"), 2.0, 1e-12);
  assert_close(csv_num(&t, "arch=gated;task=circles;depth=2;prefix=1", "Kt_absmean_max"), 0.9, 1e-12);
  csv_free(&t);

  /* index.md: the grid, the partial state and each verdict from the numbers above */
  snprintf(path, sizeof path, "%s/index.md", out);
  char *md = read_text(path);
  assert_non_null(strstr(md, "22 of 24 done (91.7%)**, 0 failed, 1 diverged, 1 pending"));
  assert_non_null(strstr(md, "Partial archive"));
  assert_non_null(strstr(md, "| seed | 0, 1, 2 | 3 |"));
  assert_non_null(strstr(md, "This archive carries no point classification"));
  assert_non_null(strstr(md, "flat to rounding"));
  free(md);
  /* the verdicts (verdicts.csv), from the numbers above */
  snprintf(path, sizeof path, "%s/verdicts.csv", out);
  char *vt = read_text(path);
  const char *header = "claim,scope,test,unit,n,effect,effect_lo,effect_hi,p_raw,p_adj,adjust,decision\n";
  assert_true(strncmp(vt, header, strlen(header)) == 0);
  free(vt);
  /* claim 1 (no classification): the K̃ bound, largest 6e-15 */
  assert_close(csv_number(path, "1,ungated affine skeleton,", "effect"), 6e-15, 1e-27);
  assert_csv_text(path, "1,ungated affine skeleton,", "decision", "supported");
  /* claim 2: every row has gated more curved, per seed +1: 3 seeds, one-sided exact
   * sign-flip p = 2^-3 (the one pattern of all + signs), family of one arch: too few (needs 5) */
  assert_close(csv_number(path, "2,gated;Kt,", "n"), 3, 0);
  assert_close(csv_number(path, "2,gated;Kt,", "effect"), 1.0, 0.0);
  assert_close(csv_number(path, "2,gated;Kt,", "p_raw"), 0.125, 0.0);
  assert_csv_text(path, "2,verdict,", "decision", "too few");
  /* claim 3, nonlinear (circles): per seed the mean of its depth-1 and depth-2 differences
   * = delta {0.10, 0.05, 0.15}: mean 0.1, p = 1/8 (3 seeds, all positive) → too few */
  const char *nl = "3,nonlinear;pooled,";
  assert_close(csv_number(path, nl, "effect"), 0.1, 1e-12);
  assert_close(csv_number(path, nl, "p_raw"), 0.125, 0.0);
  assert_csv_text(path, nl, "decision", "too few");
  /* linear: seed 0 (0.01 + 0.01)/2, seed 1 (−0.02 − 0.02)/2, seed 2 only depth 2: 0
   * → d = {0.01, −0.02, 0}; TOST against ±0.01 with df 2, where the t CDF is
   * ½ + x/(2√(2 + x²)): p = max(1 − F((d̄ + m)/se), F((d̄ − m)/se)) */
  double dbar = -0.01 / 3, sd = sqrt((pow(0.01 - dbar, 2) + pow(-0.02 - dbar, 2) + pow(dbar, 2)) / 2);
  double se = sd / sqrt(3.0), x1 = (dbar + 0.01) / se, x2 = (dbar - 0.01) / se;
  double F1 = 0.5 + x1 / (2 * sqrt(2 + x1 * x1)), F2 = 0.5 + x2 / (2 * sqrt(2 + x2 * x2));
  const char *li = "3,linear;pooled,";
  assert_close(csv_number(path, li, "effect"), dbar, 1e-15);
  assert_close(csv_number(path, li, "p_raw"), fmax(1 - F1, F2), 1e-12);
  /* the 90% interval: d̄ ± t_{0.95,2} se, t_{0.95,2} = 0.9/√(2 · 0.95 · 0.05) (ν = 2 closed form) */
  double t95 = 0.9 / sqrt(2 * 0.95 * 0.05);
  assert_close(csv_number(path, li, "effect_lo"), dbar - t95 * se, 1e-12);
  assert_close(csv_number(path, li, "effect_hi"), dbar + t95 * se, 1e-12);
  assert_csv_text(path, li, "decision", "inconclusive"); /* the interval straddles both margins */
  assert_csv_text(path, "3,verdict,", "decision", "too few");
  /* claim 4: K̃ = k_s · L per seed, slope exactly 1 in every seed, p = 1/8; no classification,
   * hence no K̂ or ∫|K| dA: not testable (the verdict row "inconclusive") */
  assert_close(csv_number(path, "4,gated;circles;all;across-depths;Kt,", "effect"), 1.0, 1e-12);
  assert_close(csv_number(path, "4,gated;circles;all;along-layers;Kt,", "p_raw"), 0.125, 0.0);
  assert_csv_text(path, "4,verdict,", "decision", "inconclusive");
  snprintf(path, sizeof path, "%s/index.md", out);
  md = read_text(path);
  assert_non_null(strstr(md, "[summary.csv](summary.csv)"));
  assert_non_null(strstr(md, "[gap.csv](gap.csv)"));
  assert_non_null(strstr(md, "[curvature_depth_circles.gp](curvature_depth_circles.gp)"));
  free(md);
  /* plots skipped but their scripts and data written; no PNG */
  snprintf(path, sizeof path, "%s/curvature_depth_linear.gp", out);
  assert_true(file_exists(path));
  snprintf(path, sizeof path, "%s/prefix_circles.dat", out);
  assert_true(file_exists(path));
  snprintf(path, sizeof path, "%s/curvature_depth_linear.png", out);
  assert_false(file_exists(path));
  assert_int_equal(o.plots_scripted, 6); /* (1)-(3) per task; no points: no histogram or map */

  /* the same archive as two shards merges to the same tables */
  char sa[128], sb[128], out2[128];
  snprintf(sa, sizeof sa, "%s/shard0.h5", dir);
  snprintf(sb, sizeof sb, "%s/shard1.h5", dir);
  snprintf(out2, sizeof out2, "%s/report2", dir);
  unsigned char mask0[24], mask1[24];
  for (int i = 0; i < 24; i++) mask0[i] = i % 2 == 0, mask1[i] = i % 2 == 1;
  write_archive(sa, spec, mask0, res, n);
  write_archive(sb, spec, mask1, res, n);
  const char *shards[2] = {sa, sb};
  analysis_outcome o2;
  assert_ok(analysis_run(shards, 2, out2, &no_plots, &o2));
  assert_int_equal(o2.done, 22);
  const char *tables[5] = {"summary.csv", "prefix.csv", "amplification.csv", "gap.csv", "verdicts.csv"};
  for (int i = 0; i < 5; i++) {
    char p1[256], p2[256];
    snprintf(p1, sizeof p1, "%s/%s", out, tables[i]);
    snprintf(p2, sizeof p2, "%s/%s", out2, tables[i]);
    char *a1 = read_text(p1), *a2 = read_text(p2);
    assert_string_equal(a1, a2);
    free(a1), free(a2);
  }
  free_results(res, n);
  spec_free(spec);
  remove_tree(dir);
}

/* Claim 1 with one ungated skeleton value above the absolute flat bound: below
 * 1e-6 × the gated mean |K̃| at the same place (circles, depth 2, prefix 2:
 * gated {1.0, 1.4, 1.8}, mean 1.4; 6 ungated prefix rows) it is rounding in an ill-conditioned model,
 * above it the claim is not supported. */
static void test_report_flatness(void **state) {
  (void)state;
  const double bump[2] = {1e-7, 1e-3};
  const char *verdict[2] = {"supported", "not supported"};
  for (int k = 0; k < 2; k++) {
    char dir[64], arch[128], out[128], path[256];
    cs_spec *spec = scratch(dir, arch, "flat", "hand.h5", HAND_SPEC);
    snprintf(out, sizeof out, "%s/report", dir);
    cs_cell_result res[24];
    int n = hand_results_bump(res, 0, bump[k]);
    write_archive(arch, spec, NULL, res, n);
    analysis_options opt = analysis_options_default();
    opt.render = 0;
    const char *paths[1] = {arch};
    assert_ok(analysis_run(paths, 1, out, &opt, NULL));
    snprintf(path, sizeof path, "%s/verdicts.csv", out);
    /* claim 1: the largest ungated skeleton mean |K̃| is the bump; 1e-7 ≤ 1e-6 × 1.4 holds */
    assert_close(csv_number(path, "1,ungated affine skeleton,", "effect"), bump[k], 0.0);
    assert_close(csv_number(path, "1,ungated affine skeleton,", "n"), 6, 0);
    assert_csv_text(path, "1,ungated affine skeleton,", "decision", verdict[k]);
    /* claim 4 tests the ungated circles row only when claim 1 does not read it as flat:
     * its K̃ slope checks exist for k = 1 only */
    char *text = read_text(path);
    const char *row = strstr(text, "\n4,ungated;circles;all;across-depths;Kt,");
    assert_true(k == 0 ? row == NULL : row != NULL);
    free(text);
    free_results(res, n);
    spec_free(spec);
    remove_tree(dir);
  }
}

/* K ∝ depth^1.5 × lognormal noise over 6 seeds, K̃ constant × noise, log det g = −3 log l. */
static const char *POWER_SPEC = "[sweep]\nname = power\n[grid]\narch = gated\n"
                                "depth = 1, 2, 4, 8\nseed = 0..5\n";

static void test_report_power_law(void **state) {
  (void)state;
  char dir[64], arch[128], out[128], out2[128], path[256];
  cs_spec *spec = scratch(dir, arch, "power", "power.h5", POWER_SPEC);
  snprintf(out, sizeof out, "%s/report", dir);
  snprintf(out2, sizeof out2, "%s/again", dir);
  cs_cell_result res[24];
  rng_stream noise = rng_stream_make(7, "test:noise", 0, NULL);
  for (int d = 0; d < 4; d++)
    for (int s = 0; s < 6; s++) {
      int L = 1 << d;
      prefix_values pv[8];
      for (int l = 1; l <= L; l++)
        pv[l - 1] = (prefix_values){pow(l, 1.5) * exp(0.3 * rng_normal(&noise)),
                                    0.5 * exp(0.3 * rng_normal(&noise)), 0.1, -3.0 * log(l), NAN};
      res[d * 6 + s] = prefix_result(d * 6 + s, L, 0.9, pv, 0, 0);
    }
  write_archive(arch, spec, NULL, res, 24);
  analysis_options opt = analysis_options_default();
  opt.render = 0;
  const char *paths[1] = {arch};
  assert_ok(analysis_run(paths, 1, out, &opt, NULL));
  assert_ok(analysis_run(paths, 1, out2, &opt, NULL));

  csv t;
  snprintf(path, sizeof path, "%s/amplification.csv", out);
  csv_load(path, &t);
  assert_int_equal(t.n_rows, 1);
  const char *g = "arch=gated";
  double lo = csv_num(&t, g, "K_depth_slope_ci_low"), hi = csv_num(&t, g, "K_depth_slope_ci_high");
  assert_true(lo < 1.5 && 1.5 < hi && hi - lo < 0.8);
  lo = csv_num(&t, g, "K_prefix_slope_ci_low"), hi = csv_num(&t, g, "K_prefix_slope_ci_high");
  assert_true(lo < 1.5 && 1.5 < hi && hi - lo < 0.8);
  lo = csv_num(&t, g, "Kt_depth_slope_ci_low"), hi = csv_num(&t, g, "Kt_depth_slope_ci_high");
  assert_true(lo < 0 && 0 < hi);
  assert_close(csv_num(&t, g, "logdet_depth_slope"), -3.0, 1e-12);
  assert_close(csv_num(&t, g, "logdet_depth_slope_ci_low"), -3.0, 1e-12);
  assert_close(csv_num(&t, g, "logdet_prefix_slope"), -3.0, 1e-12);
  /* ratio deepest/shallowest of the seed means, recomputed from the results */
  double m1 = 0, m8 = 0;
  for (int s = 0; s < 6; s++) m1 += res[s].curv[0].K_absmean / 6, m8 += res[18 + s].curv[7].K_absmean / 6;
  assert_close(csv_num(&t, g, "K_ratio"), m8 / m1, 1e-9 * m8 / m1);
  assert_close(csv_num(&t, g, "n_depths"), 4, 0);
  assert_close(csv_num(&t, g, "depth_max"), 8, 0);
  csv_free(&t);
  /* deterministic: a second run writes the same bytes */
  char p2[256];
  snprintf(path, sizeof path, "%s/amplification.csv", out);
  snprintf(p2, sizeof p2, "%s/amplification.csv", out2);
  char *a1 = read_text(path), *a2 = read_text(p2);
  assert_string_equal(a1, a2);
  free(a1), free(a2);
  /* raw K grows, K̃ does not: its per-seed slope tests (6 seeds, a family of 2, needing 6)
   * are not supported; the slope of each seed is its least squares on log depth */
  snprintf(path, sizeof path, "%s/verdicts.csv", out);
  for (int pre = 0; pre < 2; pre++) {
    char row[96];
    snprintf(row, sizeof row, "4,gated;circles;all;%s;Kt,", pre ? "along-layers" : "across-depths");
    assert_csv_text(path, row, "decision", "not supported");
    assert_csv_text(path, row, "adjust", "holm(2)");
    assert_close(csv_number(path, row, "n"), 6, 0);
    if (pre) continue;
    double mean = 0, lx[4], ly[4];
    for (int s = 0; s < 6; s++) {
      for (int d = 0; d < 4; d++) lx[d] = log(1 << d), ly[d] = log(res[d * 6 + s].curv[(1 << d) - 1].Kt_absmean);
      mean += analysis_ls_slope(lx, ly, 4, NULL) / 6;
    }
    assert_close(csv_number(path, row, "effect"), mean, 1e-12);
  }
  /* no K̂ or ∫|K| dA (unclassified): claim 4 is not testable */
  assert_csv_text(path, "4,verdict,", "decision", "inconclusive");
  snprintf(path, sizeof path, "%s/index.md", out);
  char *md = read_text(path);
  assert_non_null(strstr(md, "raw K grows but K̃ does not: shrinkage, not geometry (log det g falls)"));
  assert_non_null(strstr(md, "24 of 24 done (100.0%)"));
  assert_null(strstr(md, "Partial archive"));
  /* no ungated cells: claims 1-3 say they cannot be tested */
  assert_non_null(strstr(md, "**Not testable with this archive**: no done ungated cell"));
  free(md);
  free_results(res, 24);
  spec_free(spec);
  remove_tree(dir);
}

/* With gnuplot (a declared dependency): every plot rendered to a real PNG,
 * including the histogram and the map from /points. */
static void test_report_plots(void **state) {
  (void)state;
  char dir[64], arch[128], out[128], path[256];
  const char *spec_text = "[sweep]\nname = hand\nsave_points = yes\n[grid]\narch = ungated, gated\n"
                          "depth = 1, 2\ntask = linear, circles\nseed = 0..2\n[curvature]\npoints = 16\n";
  cs_spec *spec = scratch(dir, arch, "plots", "hand.h5", spec_text);
  snprintf(out, sizeof out, "%s/report", dir);
  cs_cell_result res[24];
  int n = hand_results(res, 1);
  write_archive(arch, spec, NULL, res, n);
  analysis_options opt = analysis_options_default();
  opt.gnuplot = "/usr/bin/gnuplot";
  analysis_outcome o;
  const char *paths[1] = {arch};
  assert_ok(analysis_run(paths, 1, out, &opt, &o));
  for (int i = 0; i < o.n_warnings; i++) print_message("warning: %s\n", o.warnings[i]);
  assert_int_equal(o.plots_scripted, 12); /* 6 kinds × 2 tasks */
  assert_int_equal(o.plots_written, 12);
  const char *names[6] = {"curvature_depth", "accuracy_depth", "prefix", "hist_Kt", "hist_Kh", "map_Kt"};
  for (int k = 0; k < 6; k++) {
    snprintf(path, sizeof path, "%s/%s_circles.png", out, names[k]);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char sig[8];
    assert_int_equal(fread(sig, 1, 8, f), 8);
    assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
    fseek(f, 0, SEEK_END);
    assert_true(ftell(f) > 5000);
    fclose(f);
  }
  /* the histogram data: the ungated points (K̃ ~ 1e-15, ten orders below the
   * gated ones; no point classes, so the row's: flat by claim 1's K̃ bound) are
   * flat to rounding and binned nowhere, its share line says all flat; the
   * gated ones are all curved, their fractions sum to 1 over the bins, and
   * K̃ = 2·x1·x2 spreads over both signs */
  snprintf(path, sizeof path, "%s/hist_Kt_circles.dat", out);
  char *dat = read_text(path);
  double sum_g = 0, neg_g = 0, pos_g = 0, share[2][2] = {{-1, -1}, {-1, -1}};
  int in_shares = 0, binned_u = 0, who = -1;
  for (char *save = NULL, *line = strtok_r(dat, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (!strncmp(line, "# row arch=", 11)) who = !strncmp(line + 11, "gated ", 6);
    if (!strncmp(line, "# shares", 8)) in_shares = 1;
    if (line[0] == '#') continue;
    double c, kt, g, flat, curved;
    if (in_shares) {
      assert_int_equal(sscanf(line, "%lf %lf %lf", &c, &flat, &curved), 3);
      share[who][0] = flat, share[who][1] = curved;
      continue;
    }
    assert_int_equal(sscanf(line, "%lf %lf %lf", &c, &kt, &g), 3);
    assert_true((c < 0) == (kt < 0));
    if (who == 0) binned_u++;
    sum_g += g;
    if (c < 0) neg_g += g;
    if (c > 0) pos_g += g;
  }
  assert_int_equal(binned_u, 0);
  assert_close(share[0][0], 1.0, 0.0), assert_close(share[0][1], 0.0, 0.0);
  assert_close(share[1][0], 0.0, 0.0), assert_close(share[1][1], 1.0, 0.0);
  assert_close(sum_g, 1.0, 1e-9);
  assert_true(neg_g > 0.2 && pos_g > 0.2);
  free(dat);
  snprintf(path, sizeof path, "%s/index.md", out);
  char *md = read_text(path);
  assert_non_null(strstr(md, "![map_Kt_circles](map_Kt_circles.png)"));
  free(md);
  free_results(res, n);
  spec_free(spec);
  remove_tree(dir);
}

/* Several archives of one spec combine by the rule merge uses (archive.h):
 * diverged beats failed beats pending whatever the order, and a cell done in
 * two archives with different values is refused naming both. */
static void test_combining_rule(void **state) {
  (void)state;
  char dir[64], a1[128], a2[128], out[128];
  cs_spec *spec = scratch(dir, a1, "combine", "one.h5", HAND_SPEC);
  snprintf(a2, sizeof a2, "%s/two.h5", dir);
  snprintf(out, sizeof out, "%s/report", dir);
  cs_cell_result res[24];
  int n = hand_results(res, 0);
  analysis_options opt = analysis_options_default();
  opt.render = 0;
  /* cell 2: failed in the first archive, diverged in the second */
  unsigned char only2[24] = {0};
  only2[2] = 1;
  cs_cell_result failed = res[2], diverged = res[2];
  failed.status = CELL_FAILED, diverged.status = CELL_DIVERGED;
  snprintf(failed.message, sizeof failed.message, "failed here");
  snprintf(diverged.message, sizeof diverged.message, "diverged there");
  cs_cell_result first[24];
  memcpy(first, res, sizeof first);
  first[2] = failed;
  write_archive(a1, spec, NULL, first, n);
  write_archive(a2, spec, only2, &diverged, 1);
  const char *both[2] = {a1, a2};
  analysis_outcome o;
  assert_ok(analysis_run(both, 2, out, &opt, &o));
  assert_int_equal(o.diverged, 1);
  assert_int_equal(o.failed, 0);
  assert_int_equal(o.done, 22);
  remove_tree(out);
  /* cell 5 done in both with a different test accuracy: refused */
  unsigned char only5[24] = {0};
  only5[5] = 1;
  cs_cell_result other = res[5];
  other.test_acc += 1e-12;
  remove(a2);
  write_archive(a2, spec, only5, &other, 1);
  assert_int_equal(analysis_run(both, 2, out, &opt, NULL), CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), "cell 5 is done in both"));
  assert_non_null(strstr(cs_error_message(), a1));
  assert_non_null(strstr(cs_error_message(), a2));
  assert_false(file_exists(out));
  /* the same value: accepted */
  remove(a2);
  write_archive(a2, spec, only5, &res[5], 1);
  assert_ok(analysis_run(both, 2, out, &opt, &o));
  assert_int_equal(o.done, 22);
  free_results(res, n);
  spec_free(spec);
  remove_tree(dir);
}

static void test_errors(void **state) {
  (void)state;
  char dir[64], a1[128], a2[128], a3[128], out[128];
  cs_spec *spec = scratch(dir, a1, "errors", "one.h5", HAND_SPEC);
  snprintf(a2, sizeof a2, "%s/other.h5", dir);
  snprintf(a3, sizeof a3, "%s/empty.h5", dir);
  snprintf(out, sizeof out, "%s/report", dir);
  cs_spec *other = spec_from(POWER_SPEC);
  cs_cell_result res[24];
  int n = hand_results(res, 0);
  write_archive(a1, spec, NULL, res, n);
  write_archive(a2, other, NULL, res, 0);
  cs_archive *a = NULL;
  assert_ok(archive_open_write(a3, spec, ARCHIVE_CREATE, NULL, &a));
  assert_ok(archive_close(a));

  /* archives of different specs */
  const char *mixed[2] = {a1, a2};
  assert_int_equal(analysis_run(mixed, 2, out, NULL, NULL), CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), a1));
  assert_non_null(strstr(cs_error_message(), a2));
  assert_non_null(strstr(cs_error_message(), "different sweeps"));
  assert_false(file_exists(out));
  /* no done cells */
  const char *empty[1] = {a3};
  assert_int_equal(analysis_run(empty, 1, out, NULL, NULL), CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), "no finished cells yet"));
  assert_non_null(strstr(cs_error_message(), a3));
  assert_false(file_exists(out));
  /* an unreadable file, named in the message */
  char missing[128];
  snprintf(missing, sizeof missing, "%s/missing.h5", dir);
  const char *gone[1] = {missing};
  assert_int_not_equal(analysis_run(gone, 1, out, NULL, NULL), CS_OK);
  assert_non_null(strstr(cs_error_message(), missing));
  assert_false(file_exists(out));
  /* an output path that is a file: refused, the file untouched */
  FILE *f = fopen(out, "w");
  fputs("keep", f);
  fclose(f);
  const char *ok[1] = {a1};
  analysis_options opt = analysis_options_default();
  opt.render = 0;
  assert_int_not_equal(analysis_run(ok, 1, out, &opt, NULL), CS_OK);
  char *keep = read_text(out);
  assert_string_equal(keep, "keep");
  free(keep);
  /* an output path that is a symbolic link to a directory, with or without
   * a trailing slash: refused before any work, nothing written where it
   * points (docs/SECURITY.md, "The report directory") */
  char target[160], link_dir[160], link_slash[168];
  snprintf(target, sizeof target, "%s/target", dir);
  snprintf(link_dir, sizeof link_dir, "%s/link-report", dir);
  snprintf(link_slash, sizeof link_slash, "%s/", link_dir);
  assert_int_equal(mkdir(target, 0755), 0);
  assert_int_equal(symlink(target, link_dir), 0);
  assert_int_equal(analysis_report_dir_check(link_dir), CS_ERR_INPUT);
  assert_int_equal(analysis_report_dir_check(target), CS_OK);
  const char *links[2] = {link_dir, link_slash};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(analysis_run(ok, 1, links[i], &opt, NULL), CS_ERR_INPUT);
    assert_non_null(strstr(cs_error_message(), "is a symbolic link"));
    assert_non_null(strstr(cs_error_message(), link_dir));
  }
  int64_t exported = -1;
  assert_int_equal(analysis_export_csv(a1, link_dir, &exported), CS_ERR_INPUT);
  DIR *d = opendir(target);
  assert_non_null(d);
  int entries = 0;
  for (struct dirent *e; (e = readdir(d));) entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  assert_int_equal(entries, 0);
  /* the directory itself is written */
  assert_ok(analysis_run(ok, 1, target, &opt, NULL));
  char index_md[176];
  snprintf(index_md, sizeof index_md, "%s/index.md", target);
  assert_true(file_exists(index_md));
  free_results(res, n);
  spec_free(spec);
  spec_free(other);
  remove_tree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bootstrap),
      cmocka_unit_test(test_below_fill),
      cmocka_unit_test(test_default_dir),    cmocka_unit_test(test_report_hand),
      cmocka_unit_test(test_report_flatness), cmocka_unit_test(test_report_power_law),
      cmocka_unit_test(test_report_plots),
      cmocka_unit_test(test_combining_rule),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

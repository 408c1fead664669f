/* archive_fixtures.c — what the archive tests share (archive_fixtures.h):
 * results with known numbers, bitwise comparisons, file helpers and the
 * archive calls that must succeed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "archive_fixtures.h"
#include "fixtures.h"

#include "curvsweep/spec.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The /curvature float64 columns in file order (the contract's names). */
const char *const STATS_NAMES[N_STATS] = {
    "degenerate_frac", "unresolved_frac", "flat_frac", "curved_frac", "K_mean", "K_median",
    "K_absmean", "K_q05", "K_q95", "K_fracpos", "S_mean", "S_se", "Kt_mean", "Kt_median",
    "Kt_absmean", "Kt_q05", "Kt_q95", "Kt_fracpos", "St_mean", "Kh_mean", "Kh_median",
    "Kh_absmean", "Kh_q05", "Kh_q95", "Kh_fracpos", "aniso_median", "H_norm_mean", "logdet_mean",
    "intK", "intabsK", "intK_err", "sink_mass", "max_attn", "massive_act", "value_drain",
    "resid_peak", "sink_headmax", "attn_entropy", "ablate_first", "ablate_attn"};

double *stats_field(geom_stats *s, int k) {
  double *f[N_STATS] = {
      &s->degenerate_frac, &s->unresolved_frac, &s->flat_frac, &s->curved_frac, &s->K_mean,
      &s->K_median, &s->K_absmean, &s->K_q05, &s->K_q95, &s->K_fracpos, &s->S_mean, &s->S_se,
      &s->Kt_mean, &s->Kt_median, &s->Kt_absmean, &s->Kt_q05, &s->Kt_q95, &s->Kt_fracpos,
      &s->St_mean, &s->Kh_mean, &s->Kh_median, &s->Kh_absmean, &s->Kh_q05, &s->Kh_q95,
      &s->Kh_fracpos, &s->aniso_median, &s->H_norm_mean, &s->logdet_mean, &s->intK, &s->intabsK, &s->intK_err,
      &s->sink_mass, &s->max_attn, &s->massive_act, &s->value_drain, &s->resid_peak,
      &s->sink_headmax, &s->attn_entropy, &s->ablate_first, &s->ablate_attn};
  return f[k];
}

/* A spec of 4 cells that is not demo-small (a different sha256). */
const char *const OTHER_SPEC = "[sweep]\nname = other\n[grid]\narch = gated\ndepth = 1..2\n"
                                "seed = 0..1\n";

long file_size(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return (long)st.st_size;
}

/* SHA-256 of a file's bytes ("absent" when it does not exist). */
void file_hash(const char *path, char out[65]) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    strcpy(out, "absent");
    return;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  spec_sha256_hex(b, (size_t)n, out);
  free(b);
}

void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* Number of entries in dir whose name starts with prefix. */
int count_prefixed(const char *dir, const char *prefix, char *first, size_t len) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
      if (n == 0 && first) {
        snprintf(first, len, "%s/%s", dir, e->d_name);
      }
      n++;
    }
  }
  closedir(d);
  return n;
}

/* The depth of a cell of spec (its config). */
int spec_depth(const cs_spec *spec, int64_t cell) {
  cs_config cfg;
  assert_int_equal(spec_cell_config(spec, cell, &cfg), 0);
  return cfg.depth;
}

/* A result with known numbers (the same formulas as tests/archive_h5py_check.py):
 *   rank = cell % 4, attempts = 1 (+1 when failed), wall_s = 1.5 + cell,
 *   train_loss = 0.25 + cell/64, train_acc = 0.5 + (cell mod 64)/128,
 *   test_acc = 0.375 + (cell mod 160)/256, n_params = 1000 + cell;
 *   curve: epochs 1..3, train_loss = 1/e + cell, train_acc = 0.125 (e-1),
 *   test_acc = 0.0625 (e-1) + cell/1024;
 *   curvature prefix l (1..depth): n_points = 16, field k =
 *   100 cell + l + k/32 - 3 (negative values too), intK NaN for odd cells;
 *   points (5 × m=2): x[i][j] = i + j/2 - cell; field f in S, S_tilde,
 *   logdet_g, H_norm at [l-1][i] = 10 f + l + i/8 + cell;
 *   params: embed/W 3×2, embed/b 1×3, layer0/Wq 3×3, readout/b 1×2 with
 *   v[t][i] = t + i/2 + cell;
 *   estimation (an /estimation row): restarts 3, kept = cell % 3, converged
 *   = cell % 2, misspecified 0, steps 10 + cell, steps_total 40 + 3 cell,
 *   grad_norm 1e-8 (1 + cell), train_mse 0.01 + cell/1024, teacher_mse
 *   0.0125, fn_error 0.5 / (1 + cell), param_error 2 / (1 + cell);
 *   gates (done cells, a /gates row per prefix l), u = (cell mod 32)/64:
 *   n_scores 64 + cell, mean 0.25 + u, median 0.125 + u + l/128, q10 l/64,
 *   q90 0.75 + u/4, frac_low l/32, var_query 0.5 - u/2, var_channel u/2,
 *   hist_b (b + 1)/210;
 *   cellstats (done and diverged cells): spikes cell mod 3, loss_ratio_max
 *   1.5 + cell/64; done: test_nll 0.5 + cell/512, test_brier 0.25 +
 *   (cell mod 64)/256, test_ece 0.0625 + (cell mod 16)/64; diverged: NaN.
 *   salt shifts train_loss (merge conflicts). */
cs_cell_result known_result(int64_t cell, int depth, cs_cell_status status, int flags,
                                   double salt) {
  cs_cell_result r = make_result(cell, depth, 0.0);
  double c = (double)cell;
  r.status = status;
  r.rank = (int)(cell % 4);
  r.attempts = status == CELL_FAILED ? 2 : 1;
  r.wall_s = 1.5 + c;
  r.train_loss = 0.25 + c / 64 + salt;
  r.train_acc = 0.5 + (double)(cell % 64) / 128;  // accuracies stay in [0, 1]: a done cell's
  r.test_acc = 0.375 + (double)(cell % 160) / 256; // outside it is damage (archive_check_metrics)
  r.n_params = 1000 + cell;
  if (status == CELL_FAILED) snprintf(r.message, sizeof r.message, "failed: cell %d", (int)cell);
  if (status == CELL_DIVERGED) snprintf(r.message, sizeof r.message, "diverged at epoch 2");
  r.n_curve = 3;
  r.curve = calloc(3, sizeof *r.curve);
  assert_non_null(r.curve);
  for (int e = 1; e <= 3; e++) {
    r.curve[e - 1].epoch = e;
    r.curve[e - 1].train_loss = 1.0 / e + c;
    r.curve[e - 1].train_acc = 0.125 * (e - 1);
    r.curve[e - 1].test_acc = 0.0625 * (e - 1) + c / 1024;
  }
  for (int l = 1; l <= depth; l++) {
    r.curv[l - 1].n_points = 16;
    for (int k = 0; k < N_STATS; k++) *stats_field(&r.curv[l - 1], k) = 100 * c + l + k / 32.0 - 3;
    if (cell % 2) r.curv[l - 1].intK = NAN;
  }
  if (status == CELL_DONE)
    r.est = (cs_estimation){1, 3, (int)(cell % 3), (int)(cell % 2), 0, 10 + cell, 40 + 3 * cell,
                            1e-8 * (1 + c), 0.01 + c / 1024, 0.0125, 0.5 / (1 + c), 2 / (1 + c)};
  if (status == CELL_DONE && depth > 0) {
    double u = (double)(cell % 32) / 64;
    r.n_gates = depth;
    r.gates = calloc((size_t)depth, sizeof *r.gates);
    assert_non_null(r.gates);
    for (int l = 1; l <= depth; l++) {
      cs_gate_scores *g = &r.gates[l - 1];
      *g = (cs_gate_scores){l, 64 + cell, 0.25 + u, 0.125 + u + l / 128.0, l / 64.0, 0.75 + u / 4,
                            l / 32.0, 0.5 - u / 2, u / 2, {0}};
      for (int b = 0; b < RESULT_GATE_BINS; b++) g->hist[b] = (b + 1) / 210.0;
    }
  }
  if (status == CELL_DONE)
    r.cstats = (cs_cell_stats){1, (int)(cell % 3), 1.5 + c / 64, 0.5 + c / 512,
                               0.25 + (double)(cell % 64) / 256, 0.0625 + (double)(cell % 16) / 64};
  if (status == CELL_DIVERGED)
    r.cstats = (cs_cell_stats){1, (int)(cell % 3), 1.5 + c / 64, NAN, NAN, NAN};
  if (flags & WITH_POINTS) {
    int n = 5, m = 2;
    r.n_points = n, r.m = m;
    r.pt_x = calloc((size_t)n * m, sizeof(double));
    double **f[RESULT_N_POINT_ARRAYS];
    result_point_arrays(&r, f);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < m; j++) r.pt_x[i * m + j] = i + j / 2.0 - c;
    r.pt_class = calloc((size_t)(depth ? depth : 1) * n, sizeof(int8_t));
    for (int i = 0; i < depth * n; i++) r.pt_class[i] = (int8_t)((i + (int)c) % 4);
    for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++) {
      *f[k] = calloc((size_t)(depth ? depth : 1) * n, sizeof(double));
      for (int l = 1; l <= depth; l++)
        for (int i = 0; i < n; i++) (*f[k])[(l - 1) * n + i] = 10 * k + l + i / 8.0 + c;
    }
  }
  if (flags & WITH_PARAMS) {
    static const struct { const char *name; int rows, cols; } T[4] = {
        {"embed/W", 3, 2}, {"embed/b", 1, 3}, {"layer0/Wq", 3, 3}, {"readout/b", 1, 2}};
    r.n_tensors = 4;
    r.tensors = calloc(4, sizeof *r.tensors);
    for (int t = 0; t < 4; t++) {
      snprintf(r.tensors[t].name, sizeof r.tensors[t].name, "%s", T[t].name);
      r.tensors[t].rows = T[t].rows, r.tensors[t].cols = T[t].cols;
      r.tensors[t].v = calloc((size_t)T[t].rows * T[t].cols, sizeof(double));
      for (int i = 0; i < T[t].rows * T[t].cols; i++) r.tensors[t].v[i] = t + i / 2.0 + c;
    }
  }
  return r;
}

/* Bitwise equality of doubles (NaN equals NaN). */
void assert_same_doubles(const double *a, const double *b, size_t n, const char *what) {
  if (n == 0) return;
  assert_non_null(a);
  assert_non_null(b);
  if (memcmp(a, b, n * sizeof *a) != 0) {
    for (size_t i = 0; i < n; i++)
      if (memcmp(&a[i], &b[i], sizeof *a)) print_error("%s[%zu]: %.17g != %.17g\n", what, i, a[i], b[i]);
    fail_msg("%s differs", what);
  }
}

/* Every field of two results. */
void assert_same_result(const cs_cell_result *a, const cs_cell_result *b) {
  assert_int_equal(a->cell_id, b->cell_id);
  assert_int_equal(a->status, b->status);
  assert_int_equal(a->rank, b->rank);
  assert_int_equal(a->attempts, b->attempts);
  double ma[4] = {a->wall_s, a->train_loss, a->train_acc, a->test_acc};
  double mb[4] = {b->wall_s, b->train_loss, b->train_acc, b->test_acc};
  assert_same_doubles(ma, mb, 4, "metrics");
  assert_int_equal(a->n_params, b->n_params);
  assert_string_equal(a->message, b->message);
  assert_int_equal(a->n_curve, b->n_curve);
  for (int e = 0; e < a->n_curve; e++) {
    assert_int_equal(a->curve[e].epoch, b->curve[e].epoch);
    double ca[3] = {a->curve[e].train_loss, a->curve[e].train_acc, a->curve[e].test_acc};
    double cb[3] = {b->curve[e].train_loss, b->curve[e].train_acc, b->curve[e].test_acc};
    assert_same_doubles(ca, cb, 3, "curve");
  }
  assert_int_equal(a->depth, b->depth);
  for (int l = 0; l < a->depth; l++) {
    assert_int_equal(a->curv[l].n_points, b->curv[l].n_points);
    for (int k = 0; k < N_STATS; k++)
      assert_same_doubles(stats_field((geom_stats *)&a->curv[l], k),
                          stats_field((geom_stats *)&b->curv[l], k), 1, STATS_NAMES[k]);
  }
  assert_int_equal(a->n_gates, b->n_gates);
  for (int g = 0; g < a->n_gates; g++) {
    const cs_gate_scores *x = &a->gates[g], *y = &b->gates[g];
    assert_int_equal(x->prefix, y->prefix);
    assert_int_equal(x->n_scores, y->n_scores);
    assert_same_doubles(&x->mean, &y->mean, 7, "gate scores");
    assert_same_doubles(x->hist, y->hist, RESULT_GATE_BINS, "gate histogram");
  }
  assert_int_equal(a->cstats.present, b->cstats.present);
  if (a->cstats.present) {
    assert_int_equal(a->cstats.spikes, b->cstats.spikes);
    assert_same_doubles(&a->cstats.loss_ratio_max, &b->cstats.loss_ratio_max, 4, "cellstats");
  }
  assert_int_equal(a->pt_x != NULL, b->pt_x != NULL);
  if (a->pt_x) {
    assert_int_equal(a->n_points, b->n_points);
    assert_int_equal(a->m, b->m);
    size_t np = (size_t)a->depth * a->n_points;
    assert_same_doubles(a->pt_x, b->pt_x, (size_t)a->n_points * a->m, "x");
    double **fa[RESULT_N_POINT_ARRAYS], **fb[RESULT_N_POINT_ARRAYS];
    result_point_arrays((cs_cell_result *)a, fa);
    result_point_arrays((cs_cell_result *)b, fb);
    for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
      assert_same_doubles(*fa[k], *fb[k], np, RESULT_POINT_NAMES[k]);
    assert_memory_equal(a->pt_class, b->pt_class, np);
  }
  assert_int_equal(a->n_tensors, b->n_tensors);
  for (int t = 0; t < a->n_tensors; t++) {
    assert_string_equal(a->tensors[t].name, b->tensors[t].name);
    assert_int_equal(a->tensors[t].rows, b->tensors[t].rows);
    assert_int_equal(a->tensors[t].cols, b->tensors[t].cols);
    assert_same_doubles(a->tensors[t].v, b->tensors[t].v,
                        (size_t)a->tensors[t].rows * a->tensors[t].cols, a->tensors[t].name);
  }
}

void assert_pending(const cs_cell_result *r, int64_t cell) {
  assert_int_equal(r->cell_id, cell);
  assert_int_equal(r->status, CELL_PENDING);
  assert_int_equal(r->rank, -1);
  assert_true(isnan(r->test_acc));
  assert_int_equal(r->depth, 0);
  assert_int_equal(r->n_curve, 0);
  assert_null(r->pt_x);
  assert_int_equal(r->n_tensors, 0);
}

cs_archive *open_ok(const char *path, const cs_spec *spec, cs_archive_mode mode,
                           const unsigned char *mask) {
  cs_archive *a = NULL;
  assert_ok(archive_open_write(path, spec, mode, mask, &a));
  assert_non_null(a);
  return a;
}

void write_ok(cs_archive *a, const cs_cell_result *r) {
  assert_ok(archive_write_result(a, r));
}

void close_ok(cs_archive *a) { assert_ok(archive_close(a)); }

cs_cell_result *read_ok(const char *path, int64_t *n) {
  cs_cell_result *res = NULL;
  assert_ok(archive_read_results(path, &res, n));
  return res;
}

cs_run_info make_run(const char *start, int ranks) {
  cs_run_info run;
  memset(&run, 0, sizeof run);
  snprintf(run.start, sizeof run.start, "%s", start);
  snprintf(run.hosts, sizeof run.hosts, "node1,node2");
  run.ranks = ranks;
  snprintf(run.team, sizeof run.team, "1x1");
  snprintf(run.slurm_job, sizeof run.slurm_job, "123_4");
  run.requeue_count = 1;
  return run;
}


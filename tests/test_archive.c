/* test_archive.c — the HDF5 archive: exact round trip of every result field,
 * schema (column names, filters), resume, journal replay after a simulated
 * crash, torn and corrupt journal records, rebuild of a damaged file,
 * interrupted-write repair, a catalogue of bad inputs (code, message, file
 * bytes unchanged), merge of shards, and 100 durable writes read back bit for bit.
 *
 * Run with CS_ARCHIVE_WRITE_DEMO=PATH it instead writes the demo archive
 * that tests/archive_h5py_check.py reads (see demo_archive below). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/archive.h"
#include "curvsweep/config.h"
#include "curvsweep/error.h"
#include "curvsweep/result.h"
#include "curvsweep/spec.h"
#include "../src/archive/archive_test.h"

#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* helpers                                                                    */

/* The /curvature float64 columns in file order (the contract's names). */
#define N_STATS 36
static const char *const STATS_NAMES[N_STATS] = {
    "degenerate_frac", "unresolved_frac", "flat_frac", "curved_frac", "K_mean", "K_median",
    "K_absmean", "K_q05", "K_q95", "K_fracpos", "S_mean", "S_se", "Kt_mean", "Kt_median",
    "Kt_absmean", "Kt_q05", "Kt_q95", "Kt_fracpos", "St_mean", "Kh_mean", "Kh_median",
    "Kh_absmean", "Kh_q05", "Kh_q95", "Kh_fracpos", "aniso_median", "H_norm_mean", "logdet_mean",
    "intK", "intabsK", "intK_err", "sink_mass", "max_attn", "massive_act", "value_drain",
    "resid_peak"};

static double *stats_field(geom_stats *s, int k) {
  double *f[N_STATS] = {
      &s->degenerate_frac, &s->unresolved_frac, &s->flat_frac, &s->curved_frac, &s->K_mean,
      &s->K_median, &s->K_absmean, &s->K_q05, &s->K_q95, &s->K_fracpos, &s->S_mean, &s->S_se,
      &s->Kt_mean, &s->Kt_median, &s->Kt_absmean, &s->Kt_q05, &s->Kt_q95, &s->Kt_fracpos,
      &s->St_mean, &s->Kh_mean, &s->Kh_median, &s->Kh_absmean, &s->Kh_q05, &s->Kh_q95,
      &s->Kh_fracpos, &s->aniso_median, &s->H_norm_mean, &s->logdet_mean, &s->intK, &s->intabsK, &s->intK_err,
      &s->sink_mass, &s->max_attn, &s->massive_act, &s->value_drain, &s->resid_peak};
  return f[k];
}



/* A spec of 4 cells that is not demo-small (a different sha256). */
static const char *OTHER_SPEC = "[sweep]\nname = other\n[grid]\narch = gated\ndepth = 1..2\n"
                                "seed = 0..1\n";

/* A fresh directory under the working (build) directory. */



static long file_size(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return (long)st.st_size;
}

/* SHA-256 of a file's bytes ("absent" when it does not exist). */
static void file_hash(const char *path, char out[65]) {
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

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* Number of entries in dir whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix, char *first, size_t len) {
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

enum { WITH_POINTS = 1, WITH_PARAMS = 2 };

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
 *   v[t][i] = t + i/2 + cell. salt shifts train_loss (merge conflicts). */
static cs_cell_result known_result(int64_t cell, int depth, cs_cell_status status, int flags,
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
static void assert_same_doubles(const double *a, const double *b, size_t n, const char *what) {
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
static void assert_same_result(const cs_cell_result *a, const cs_cell_result *b) {
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

static void assert_pending(const cs_cell_result *r, int64_t cell) {
  assert_int_equal(r->cell_id, cell);
  assert_int_equal(r->status, CELL_PENDING);
  assert_int_equal(r->rank, -1);
  assert_true(isnan(r->test_acc));
  assert_int_equal(r->depth, 0);
  assert_int_equal(r->n_curve, 0);
  assert_null(r->pt_x);
  assert_int_equal(r->n_tensors, 0);
}

static cs_archive *open_ok(const char *path, const cs_spec *spec, cs_archive_mode mode,
                           const unsigned char *mask) {
  cs_archive *a = NULL;
  assert_ok(archive_open_write(path, spec, mode, mask, &a));
  assert_non_null(a);
  return a;
}

static void write_ok(cs_archive *a, const cs_cell_result *r) {
  assert_ok(archive_write_result(a, r));
}

static void close_ok(cs_archive *a) { assert_ok(archive_close(a)); }

static cs_cell_result *read_ok(const char *path, int64_t *n) {
  cs_cell_result *res = NULL;
  assert_ok(archive_read_results(path, &res, n));
  return res;
}

static cs_run_info make_run(const char *start, int ranks) {
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

/* ------------------------------------------------------------------------ */
/* the lm family's extreme-token columns (format_version 5)                  */

/* A done lm result of depth 2 whose extreme-token columns are set from
 * v[0..4] (sink_mass, max_attn, massive_act, value_drain, resid_peak) at
 * prefix 1 and v + 1/8 at prefix 2 for the ratios. */
static cs_cell_result lm_result(int64_t cell, const double v[5]) {
  cs_cell_result r = known_result(cell, 2, CELL_DONE, 0, 0);
  for (int l = 0; l < 2; l++) {
    geom_stats *g = &r.curv[l];
    g->sink_mass = v[0], g->max_attn = v[1];
    g->massive_act = v[2] + l / 8.0, g->value_drain = v[3] + l / 8.0, g->resid_peak = v[4] + l / 8.0;
  }
  return r;
}

static void test_lm_token_columns(void **state) {
  (void)state;
  char dir[64], p[160];
  make_dir(dir, sizeof dir, "lmtok");
  cs_spec *spec = spec_from("[sweep]\nname = lmtok\n[grid]\ntask = bigram-backcopy\nseed = 0..2\n"
                            "[model]\nfamily = lm\n");
  // round trip: measured values bitwise, a cell without them (merged from
  // format_version 4: all three NaN) read as NaN, not refused
  snprintf(p, sizeof p, "%s/ok.h5", dir);
  cs_archive *a = open_ok(p, spec, ARCHIVE_CREATE, NULL);
  double good[5] = {0.625, 0.875, 37.5, 0.03125, 6.25};
  double old[5] = {0.5, 0.75, NAN, NAN, NAN};
  cs_cell_result w[2] = {lm_result(0, good), lm_result(2, old)};
  for (int i = 0; i < 2; i++) write_ok(a, &w[i]);
  close_ok(a);
  int64_t n;
  cs_cell_result *res = read_ok(p, &n);
  assert_int_equal(n, 3);
  assert_same_result(&res[0], &w[0]);
  assert_same_result(&res[2], &w[1]);
  assert_true(res[0].curv[1].massive_act == 37.625 && res[0].curv[1].value_drain == 0.15625);
  assert_true(isnan(res[2].curv[0].massive_act) && isnan(res[2].curv[1].resid_peak));
  free_results(res, n), free(res);
  free_results(w, 2);
  // damage: each a refusal naming the file, the cell, the prefix and why
  static const struct {
    double v[5];
    const char *why;
  } bad[] = {
      {{NAN, 0.875, 37.5, 0.03125, 6.25}, "prefix 1: sink_mass (first-token share) not in [0, 1]"},
      {{0.625, 1.5, 37.5, 0.03125, 6.25}, "prefix 1: max_attn (largest per-head share) not in [0, 1]"},
      {{0.625, 0.875, 37.5, NAN, 6.25}, "prefix 1: some but not all of massive_act"},
      {{0.625, 0.875, 0.75, 0.03125, 6.25}, "prefix 1: massive_act below 1"},
      {{0.625, 0.875, 37.5, 0.03125, -6.25}, "prefix 1: massive_act below 1, or value_drain or resid_peak negative"},
      {{0.625, 0.875, 37.5, INFINITY, 6.25}, "prefix 1: massive_act below 1, or value_drain or resid_peak negative"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    snprintf(p, sizeof p, "%s/bad%zu.h5", dir, k);
    a = open_ok(p, spec, ARCHIVE_CREATE, NULL);
    cs_cell_result r = lm_result(1, bad[k].v);
    write_ok(a, &r);
    close_ok(a);
    result_free(&r);
    res = NULL;
    cs_error_clear();
    int rc = archive_read_results(p, &res, &n);
    if (rc != CS_ERR_INPUT || !strstr(cs_error_message(), "damaged archive: /curvature: done cell 1 (family lm)") ||
        !strstr(cs_error_message(), bad[k].why) || !strstr(cs_error_message(), p))
      fail_msg("case %zu: rc %d, message \"%s\"", k, rc, cs_error_message());
  }
  // the same values in a memory-family archive are not the reader's concern
  cs_spec *mem = load_spec("tests/specs/demo-small.ini");
  snprintf(p, sizeof p, "%s/mem.h5", dir);
  a = open_ok(p, mem, ARCHIVE_CREATE, NULL);
  cs_cell_result r = lm_result(1, bad[0].v);
  write_ok(a, &r);
  close_ok(a);
  result_free(&r);
  res = read_ok(p, &n);
  free_results(res, n), free(res);
  spec_free(mem);
  spec_free(spec);
}

/* ------------------------------------------------------------------------ */
/* round trip and schema                                                      */

static void test_round_trip(void **state) {
  char dir[64], path[128], journal[160];
  // its directory sub/ does not exist yet: created
  cs_spec *spec = scratch(dir, path, "rt", "sub/rt.h5", NULL);
  snprintf(journal, sizeof journal, "%s.journal", path);
  assert_int_equal(spec_cell_count(spec), 8);

  cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
  cs_run_info run = make_run("2026-01-02T03:04:05Z", 3);
  assert_ok(archive_begin_run(a, &run));
  cs_cell_result w[3] = {known_result(0, 2, CELL_DONE, WITH_POINTS | WITH_PARAMS, 0),
                         known_result(3, 0, CELL_FAILED, 0, 0),
                         known_result(5, 2, CELL_DIVERGED, WITH_POINTS, 0)};
  for (int i = 0; i < 3; i++) write_ok(a, &w[i]);
  assert_int_equal(archive_cell_status(a, 0), CELL_DONE);
  assert_int_equal(archive_cell_status(a, 3), CELL_FAILED);
  assert_int_equal(archive_cell_status(a, 5), CELL_DIVERGED);
  assert_int_equal(archive_cell_status(a, 1), CELL_PENDING);
  int64_t sel, done, failed, div;
  archive_counts(a, &sel, &done, &failed, &div);
  assert_int_equal(sel, 8);
  assert_int_equal(done, 1);
  assert_int_equal(failed, 1);
  assert_int_equal(div, 1);
  snprintf(run.end, sizeof run.end, "2026-01-02T04:00:00Z");
  run.cells_run = 3;
  assert_ok(archive_end_run(a, &run));
  close_ok(a);
  assert_true(file_exists(journal));  // cells still pending: the journal stays

  // read back: every field of the written cells, the rest pending
  int64_t n = 0;
  cs_cell_result *res = read_ok(path, &n);
  assert_int_equal(n, 8);
  for (int64_t c = 0; c < 8; c++) {
    int k = c == 0 ? 0 : c == 3 ? 1 : c == 5 ? 2 : -1;
    if (k >= 0) assert_same_result(&res[c], &w[k]);
    else assert_pending(&res[c], c);
  }
  free_results(res, n), free(res);

  // summary and spec
  cs_archive_summary s;
  assert_ok(archive_summary(path, &s));
  assert_string_equal(s.name, "demo-small");
  assert_string_equal(s.spec_sha256, spec_sha256(spec));
  assert_string_equal(s.software_version, CS_VERSION);
  assert_int_equal(strlen(s.created), 20);  // 2026-01-02T03:04:05Z
  assert_int_equal(s.created[10], 'T');
  assert_int_equal(s.cells, 8);
  assert_int_equal(s.pending, 5);
  assert_int_equal(s.done, 1);
  assert_int_equal(s.failed, 1);
  assert_int_equal(s.diverged, 1);
  assert_true(s.wall_s == 1.5 + 4.5 + 6.5);
  assert_int_equal(s.runs, 1);
  assert_int_equal(s.max_ranks, 3);
  assert_string_equal(s.last_run_end, "2026-01-02T04:00:00Z");
  char *text = NULL;
  assert_ok(archive_read_spec(path, &text));
  assert_string_equal(text, spec_text(spec));
  free(text);

  free_results(w, 3);
  spec_free(spec);
  remove_tree(dir);
}

/* Names of the members of a dataset's compound type, comma-joined. */
static void compound_names(const char *path, const char *dset, char *out, size_t len) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  hid_t ds = H5Dopen2(f, dset, H5P_DEFAULT);
  assert_true(ds >= 0);
  hid_t t = H5Dget_type(ds);
  out[0] = '\0';
  for (int i = 0; i < H5Tget_nmembers(t); i++) {
    char *name = H5Tget_member_name(t, (unsigned)i);
    H5T_class_t cls = H5Tget_member_class(t, (unsigned)i);
    hid_t mt = H5Tget_member_type(t, (unsigned)i);
    char item[96];
    snprintf(item, sizeof item, "%s%s:%c%zu", i ? "," : "", name,
             cls == H5T_INTEGER ? 'i' : cls == H5T_FLOAT ? 'f' : cls == H5T_STRING ? 's' : '?',
             H5Tget_size(mt));
    strncat(out, item, len - strlen(out) - 1);
    H5Tclose(mt);
    H5free_memory(name);
  }
  H5Tclose(t);
  H5Dclose(ds);
  H5Fclose(f);
}

static void test_schema_columns(void **state) {
  char dir[64], path[128], got[4096];
  // extra axes of all three kinds: real lr, int width, string norm
  cs_spec *spec = scratch(dir, path, "schema", "schema.h5",
                          "[sweep]\nname = axes\n[grid]\nlr = 1e-3, 3e-3\nwidth = 8, 16\n"
                          "norm = none, pre\nseed = 0..1\n");
  cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
  close_ok(a);
  compound_names(path, "cells", got, sizeof got);
  assert_string_equal(got, "cell_id:i8,arch:s32,depth:i8,task:s32,seed:i8,lr:f8,width:i8,norm:s8,"
                           "status:s16,rank:i4,attempts:i4,wall_s:f8,train_loss:f8,train_acc:f8,"
                           "test_acc:f8,n_params:i8,message:s256");
  compound_names(path, "curvature", got, sizeof got);
  assert_string_equal(got, "cell_id:i8,prefix:i4,n_points:i4,degenerate_frac:f8,"
                           "unresolved_frac:f8,flat_frac:f8,curved_frac:f8,K_mean:f8,"
                           "K_median:f8,K_absmean:f8,K_q05:f8,K_q95:f8,K_fracpos:f8,S_mean:f8,"
                           "S_se:f8,Kt_mean:f8,Kt_median:f8,Kt_absmean:f8,Kt_q05:f8,Kt_q95:f8,"
                           "Kt_fracpos:f8,St_mean:f8,Kh_mean:f8,Kh_median:f8,Kh_absmean:f8,"
                           "Kh_q05:f8,Kh_q95:f8,Kh_fracpos:f8,aniso_median:f8,H_norm_mean:f8,"
                           "logdet_mean:f8,intK:f8,intabsK:f8,intK_err:f8,sink_mass:f8,max_attn:f8,"
                           "massive_act:f8,value_drain:f8,resid_peak:f8");
  compound_names(path, "curves", got, sizeof got);
  assert_string_equal(got, "cell_id:i8,epoch:i4,train_loss:f8,train_acc:f8,test_acc:f8");
  compound_names(path, "runs", got, sizeof got);
  assert_string_equal(got, "start:s32,end:s32,hosts:s256,ranks:i4,team:s16,shard:s32,"
                           "slurm_job:s64,nodelist:s256,requeue_count:i4,cells_run:i8");

  // the axis values of each row, read back with a memory type of our own
  typedef struct {
    int64_t cell_id;
    double lr;
    int64_t width;
    char norm[8], arch[32];
  } axes_row;
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, "cells", H5P_DEFAULT);
  hid_t s8 = H5Tcopy(H5T_C_S1), s32 = H5Tcopy(H5T_C_S1);
  H5Tset_size(s8, 8), H5Tset_size(s32, 32);
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(axes_row));
  H5Tinsert(mt, "cell_id", HOFFSET(axes_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(mt, "lr", HOFFSET(axes_row, lr), H5T_NATIVE_DOUBLE);
  H5Tinsert(mt, "width", HOFFSET(axes_row, width), H5T_NATIVE_INT64);
  H5Tinsert(mt, "norm", HOFFSET(axes_row, norm), s8);
  H5Tinsert(mt, "arch", HOFFSET(axes_row, arch), s32);
  axes_row rows[16];
  assert_true(H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0);
  // row-major, last axis fastest: lr (slowest), width, norm, seed
  for (int c = 0; c < 16; c++) {
    assert_int_equal(rows[c].cell_id, c);
    assert_true(rows[c].lr == (c < 8 ? 1e-3 : 3e-3));
    assert_int_equal(rows[c].width, (c / 4) % 2 ? 16 : 8);
    assert_string_equal(rows[c].norm, (c / 2) % 2 ? "pre" : "none");
    assert_string_equal(rows[c].arch, "gated");  // the default
  }
  H5Tclose(mt), H5Tclose(s8), H5Tclose(s32);
  H5Dclose(ds);
  H5Fclose(f);
  spec_free(spec);
  remove_tree(dir);
}

/* Shuffle, deflate and Fletcher32 on a dataset, chunked. */
/* name is chunked with exactly the filters of want: 1 shuffle, 2 deflate,
 * 4 fletcher32 (tables, /points/index and /spec: all three; the /points
 * arrays and per-cell /params arrays: no deflate). */
static void assert_filters(hid_t f, const char *name, int want) {
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  assert_true(ds >= 0);
  hid_t dcpl = H5Dget_create_plist(ds);
  assert_int_equal(H5Pget_layout(dcpl), H5D_CHUNKED);
  int found = 0, n = H5Pget_nfilters(dcpl);
  for (int i = 0; i < n; i++) {
    unsigned flags, cd[8];
    size_t ncd = 8;
    char fname[64];
    H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof fname, fname, NULL);
    if (id == H5Z_FILTER_SHUFFLE) found |= 1;
    if (id == H5Z_FILTER_DEFLATE) found |= 2;
    if (id == H5Z_FILTER_FLETCHER32) found |= 4;
  }
  if (found != want) fail_msg("%s: filters found mask %d, want %d (1 shuffle, 2 deflate, 4 fletcher32)", name, found, want);
  H5Pclose(dcpl);
  H5Dclose(ds);
}

static void test_filters(void **state) {
  char dir[64], path[128];
  cs_spec *spec = scratch(dir, path, "filters", "f.h5", NULL);
  cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
  cs_cell_result r = known_result(2, 2, CELL_DONE, WITH_POINTS | WITH_PARAMS, 0);
  write_ok(a, &r);
  close_ok(a);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  const char *tables[] = {"cells", "curvature", "curves", "runs", "spec", "points/index"};
  for (int i = 0; i < 6; i++) assert_filters(f, tables[i], 7);
  const char *arrays[] = {"points/x", "points/S", "points/S_err", "points/S_tilde", "points/tr_g",
                          "points/logdet_g", "points/H_norm", "points/class", "params/2/embed/W",
                          "params/2/readout/b"};
  for (int i = 0; i < 10; i++) assert_filters(f, arrays[i], 5);
  // tables are extendible
  hid_t ds = H5Dopen2(f, "curvature", H5P_DEFAULT), sp = H5Dget_space(ds);
  hsize_t dims, maxdims;
  H5Sget_simple_extent_dims(sp, &dims, &maxdims);
  assert_int_equal(dims, 2);
  assert_true(maxdims == H5S_UNLIMITED);
  H5Sclose(sp), H5Dclose(ds);
  // /points/index: cell 2 has 5 points in m = 2 over 2 prefixes, its values
  // at the start of /points/x (5 x 2) and /points/S (2 x 5), extendible
  struct { int64_t cell_id; int32_t n_points, m, depth; int64_t x_start, start; } ix;
  hid_t it = H5Tcreate(H5T_COMPOUND, sizeof ix);
  H5Tinsert(it, "cell_id", HOFFSET(__typeof__(ix), cell_id), H5T_NATIVE_INT64);
  H5Tinsert(it, "n_points", HOFFSET(__typeof__(ix), n_points), H5T_NATIVE_INT32);
  H5Tinsert(it, "m", HOFFSET(__typeof__(ix), m), H5T_NATIVE_INT32);
  H5Tinsert(it, "depth", HOFFSET(__typeof__(ix), depth), H5T_NATIVE_INT32);
  H5Tinsert(it, "x_start", HOFFSET(__typeof__(ix), x_start), H5T_NATIVE_INT64);
  H5Tinsert(it, "start", HOFFSET(__typeof__(ix), start), H5T_NATIVE_INT64);
  ds = H5Dopen2(f, "points/index", H5P_DEFAULT);
  assert_true(H5Dread(ds, it, H5S_ALL, H5S_ALL, H5P_DEFAULT, &ix) >= 0);
  assert_int_equal(ix.cell_id, 2), assert_int_equal(ix.n_points, 5), assert_int_equal(ix.m, r.m);
  assert_int_equal(ix.depth, 2), assert_int_equal(ix.x_start, 0), assert_int_equal(ix.start, 0);
  H5Tclose(it), H5Dclose(ds);
  ds = H5Dopen2(f, "points/S", H5P_DEFAULT), sp = H5Dget_space(ds);
  H5Sget_simple_extent_dims(sp, &dims, &maxdims);
  assert_int_equal(dims, 10);
  assert_true(maxdims == H5S_UNLIMITED);
  double S[10];
  assert_true(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, S) >= 0);
  assert_memory_equal(S, r.pt_S, sizeof S);
  H5Sclose(sp), H5Dclose(ds);
  ds = H5Dopen2(f, "points/x", H5P_DEFAULT), sp = H5Dget_space(ds);
  H5Sget_simple_extent_dims(sp, &dims, NULL);
  assert_int_equal(dims, 5 * (hsize_t)r.m);
  H5Sclose(sp), H5Dclose(ds);
  // /params/2/embed/b is 1 × 3
  hsize_t d2[2];
  ds = H5Dopen2(f, "params/2/embed/b", H5P_DEFAULT), sp = H5Dget_space(ds);
  H5Sget_simple_extent_dims(sp, d2, NULL);
  assert_int_equal(d2[0], 1), assert_int_equal(d2[1], 3);
  H5Sclose(sp), H5Dclose(ds);
  H5Fclose(f);
  result_free(&r);
  spec_free(spec);
  remove_tree(dir);
}

/* ------------------------------------------------------------------------ */
/* resume, journal, damage                                                    */

static void test_resume_and_journal_removal(void **state) {
  char dir[64], path[128], journal[160];
  cs_spec *spec = scratch(dir, path, "resume", "r.h5", NULL);
  snprintf(journal, sizeof journal, "%s.journal", path);
  cs_cell_result r[8];
  for (int c = 0; c < 8; c++) r[c] = known_result(c, 1 + c % 2, CELL_DONE, 0, 0);

  // RESUME of a missing file creates it
  cs_archive *a = open_ok(path, spec, ARCHIVE_RESUME, NULL);
  write_ok(a, &r[1]);
  write_ok(a, &r[2]);
  close_ok(a);
  // the resume sees them
  a = open_ok(path, spec, ARCHIVE_RESUME, NULL);
  assert_int_equal(archive_cell_status(a, 1), CELL_DONE);
  assert_int_equal(archive_cell_status(a, 2), CELL_DONE);
  assert_int_equal(archive_cell_status(a, 3), CELL_PENDING);
  int64_t sel, done;
  archive_counts(a, &sel, &done, NULL, NULL);
  assert_int_equal(sel, 8);
  assert_int_equal(done, 2);
  for (int c = 0; c < 8; c++)
    if (c != 1 && c != 2) write_ok(a, &r[c]);
  close_ok(a);
  // nothing pending: the journal is gone, every cell reads back
  assert_false(file_exists(journal));
  int64_t n;
  cs_cell_result *res = read_ok(path, &n);
  assert_int_equal(n, 8);
  for (int c = 0; c < 8; c++) assert_same_result(&res[c], &r[c]);
  free_results(res, n), free(res);
  // a resume of the finished archive changes nothing and leaves no journal
  char before[65], after[65];
  file_hash(path, before);
  a = open_ok(path, spec, ARCHIVE_RESUME, NULL);
  archive_counts(a, &sel, &done, NULL, NULL);
  assert_int_equal(done, 8);
  close_ok(a);
  file_hash(path, after);
  assert_string_equal(before, after);
  assert_false(file_exists(journal));

  free_results(r, 8);
  spec_free(spec);
  remove_tree(dir);
}

/* A child process writes, journals one more result without the HDF5
 * write, and is killed (SIGKILL: no close, no cleanup). */
static void crash_child(const char *path, const cs_spec *spec, const cs_cell_result *written,
                        int n_written, const cs_cell_result *journal_only) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    cs_archive *a = NULL;
    if (archive_open_write(path, spec, ARCHIVE_RESUME, NULL, &a)) _exit(3);
    cs_run_info run = make_run("2026-02-02T00:00:00Z", 2);
    if (archive_begin_run(a, &run)) _exit(4);
    for (int i = 0; i < n_written; i++)
      if (archive_write_result(a, &written[i])) _exit(5);
    if (journal_only && archive_test_journal_only(a, journal_only)) _exit(6);
    raise(SIGKILL);
    _exit(7);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGKILL);
}

static void test_journal_replay_after_kill(void **state) {
  char dir[64], path[128], journal[160];
  cs_spec *spec = scratch(dir, path, "replay", "j.h5", NULL);
  snprintf(journal, sizeof journal, "%s.journal", path);
  cs_cell_result r0 = known_result(0, 1, CELL_DONE, WITH_PARAMS, 0);
  cs_cell_result r6 = known_result(6, 2, CELL_DONE, WITH_POINTS | WITH_PARAMS, 0);
  crash_child(path, spec, &r0, 1, &r6);
  assert_true(file_exists(journal));

  // a reader sees the file as the crash left it: cell 6 not yet in it
  int64_t n;
  cs_cell_result *res = read_ok(path, &n);
  assert_int_equal(res[0].status, CELL_DONE);
  assert_pending(&res[6], 6);
  free_results(res, n), free(res);
  // the resume applies the journal: cell 6 is done, exactly as reported
  cs_archive *a = open_ok(path, spec, ARCHIVE_RESUME, NULL);
  assert_int_equal(archive_cell_status(a, 6), CELL_DONE);
  close_ok(a);
  res = read_ok(path, &n);
  assert_same_result(&res[0], &r0);
  assert_same_result(&res[6], &r6);
  free_results(res, n), free(res);
  cs_archive_summary s;
  assert_ok(archive_summary(path, &s));
  assert_int_equal(s.runs, 1);   // the begin_run of the killed process, once
  assert_int_equal(s.done, 2);

  result_free(&r0);
  result_free(&r6);
  spec_free(spec);
  remove_tree(dir);
}

static void test_torn_and_corrupt_journal(void **state) {
  char dir[64], path[128], journal[160];
  cs_spec *spec = scratch(dir, path, "torn", "t.h5", NULL);
  snprintf(journal, sizeof journal, "%s.journal", path);
  cs_cell_result r1 = known_result(1, 1, CELL_DONE, 0, 0), r2 = known_result(2, 2, CELL_DONE, 0, 0);
  cs_cell_result r3 = known_result(3, 2, CELL_DONE, 0, 0);

  // torn tail: record of cell 2 cut short
  cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
  assert_ok(archive_test_journal_only(a, &r1));
  long good = file_size(journal);
  assert_ok(archive_test_journal_only(a, &r2));
  long full = file_size(journal);
  close_ok(a);  // unapplied records: the journal stays
  assert_int_equal(file_size(journal), full);
  assert_int_equal(truncate(journal, full - 7), 0);
  a = open_ok(path, spec, ARCHIVE_RESUME, NULL);
  assert_int_equal(archive_cell_status(a, 1), CELL_DONE);
  assert_int_equal(archive_cell_status(a, 2), CELL_PENDING);  // never reported done
  assert_int_equal(file_size(journal), good);                 // the torn tail is cut away

  // bad checksum: flip one payload byte of the last record (cell 3)
  assert_ok(archive_test_journal_only(a, &r3));
  long end3 = file_size(journal);
  close_ok(a);
  FILE *f = fopen(journal, "r+b");
  assert_non_null(f);
  fseek(f, end3 - 9, SEEK_SET);
  int ch = fgetc(f);
  fseek(f, end3 - 9, SEEK_SET);
  fputc(ch ^ 0x5a, f);
  fclose(f);
  a = open_ok(path, spec, ARCHIVE_RESUME, NULL);
  assert_int_equal(archive_cell_status(a, 1), CELL_DONE);
  assert_int_equal(archive_cell_status(a, 3), CELL_PENDING);
  assert_int_equal(file_size(journal), good);
  close_ok(a);

  int64_t n;
  cs_cell_result *res = read_ok(path, &n);
  assert_same_result(&res[1], &r1);
  assert_pending(&res[2], 2);
  assert_pending(&res[3], 3);
  free_results(res, n), free(res);
  result_free(&r1), result_free(&r2), result_free(&r3);
  spec_free(spec);
  remove_tree(dir);
}

static void test_damaged_file_rebuilt(void **state) {
  char dir[64], path[128], journal[160], aside[4096];
  cs_spec *spec = scratch(dir, path, "damaged", "d.h5", NULL);
  snprintf(journal, sizeof journal, "%s.journal", path);
  cs_cell_result r[3] = {known_result(0, 1, CELL_DONE, 0, 0),
                         known_result(1, 2, CELL_DONE, WITH_POINTS | WITH_PARAMS, 0),
                         known_result(4, 0, CELL_FAILED, 0, 0)};
  cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
  cs_run_info run = make_run("2026-03-03T00:00:00Z", 4);
  assert_ok(archive_begin_run(a, &run));
  for (int i = 0; i < 3; i++) write_ok(a, &r[i]);
  snprintf(run.end, sizeof run.end, "2026-03-03T01:00:00Z");
  assert_ok(archive_end_run(a, &run));
  close_ok(a);

  // cut the HDF5 file to half
  long size = file_size(path);
  assert_int_equal(truncate(path, size / 2), 0);
  char damaged_hash[65];
  file_hash(path, damaged_hash);
  int64_t n;
  cs_cell_result *res = NULL;
  assert_int_equal(archive_read_results(path, &res, &n), CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), path));

  // resume: set aside (bytes kept), rebuilt from spec + journal
  a = open_ok(path, spec, ARCHIVE_RESUME, NULL);
  assert_int_equal(archive_cell_status(a, 1), CELL_DONE);
  close_ok(a);
  char prefix[64];
  snprintf(prefix, sizeof prefix, "d.h5.damaged-");
  assert_int_equal(count_prefixed(dir, prefix, aside, sizeof aside), 1);
  char aside_hash[65];
  file_hash(aside, aside_hash);
  assert_string_equal(aside_hash, damaged_hash);
  assert_int_equal(file_size(aside), size / 2);

  res = read_ok(path, &n);
  assert_int_equal(n, 8);
  assert_same_result(&res[0], &r[0]);
  assert_same_result(&res[1], &r[1]);
  assert_same_result(&res[4], &r[2]);
  assert_pending(&res[2], 2);
  free_results(res, n), free(res);
  cs_archive_summary s;
  assert_ok(archive_summary(path, &s));
  assert_int_equal(s.runs, 1);
  assert_int_equal(s.max_ranks, 4);
  assert_string_equal(s.last_run_end, "2026-03-03T01:00:00Z");

  free_results(r, 3);
  spec_free(spec);
  remove_tree(dir);
}

/* Rows beyond committed_rows (a write interrupted before its /cells row)
 * are ignored by readers and cut by the next writer; a finished cell that
 * is written again keeps only its new rows. */
static void test_interrupted_write_and_rewrite(void **state) {
  char dir[64], path[128];
  cs_spec *spec = scratch(dir, path, "orphan", "o.h5", NULL);
  cs_cell_result r0 = known_result(0, 2, CELL_DONE, 0, 0);
  cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
  write_ok(a, &r0);
  close_ok(a);

  // append 3 orphan /curves rows of pending cell 3 behind the library's back
  typedef struct { int64_t cell_id; int32_t epoch; double tl, ta, te; } curve_row;
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, "curves", H5P_DEFAULT);
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(curve_row));
  H5Tinsert(mt, "cell_id", HOFFSET(curve_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(mt, "epoch", HOFFSET(curve_row, epoch), H5T_NATIVE_INT32);
  H5Tinsert(mt, "train_loss", HOFFSET(curve_row, tl), H5T_NATIVE_DOUBLE);
  curve_row orphan[3] = {{3, 1, 9, 9, 9}, {3, 2, 9, 9, 9}, {3, 3, 9, 9, 9}};
  hsize_t len = 3, add = 3, total = 6;  // r0 wrote 3 curve rows
  assert_true(H5Dset_extent(ds, &total) >= 0);
  hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(1, &add, NULL);
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, &len, NULL, &add, NULL);
  assert_true(H5Dwrite(ds, mt, ms, fs, H5P_DEFAULT, orphan) >= 0);
  H5Sclose(fs), H5Sclose(ms), H5Tclose(mt), H5Dclose(ds);
  H5Fclose(f);

  int64_t n;
  cs_cell_result *res = read_ok(path, &n);
  assert_same_result(&res[0], &r0);
  assert_pending(&res[3], 3);
  free_results(res, n), free(res);
  // the writer cuts them, then writes cell 3 with its own 3 rows
  a = open_ok(path, spec, ARCHIVE_RESUME, NULL);
  cs_cell_result r3 = known_result(3, 1, CELL_FAILED, 0, 0);
  write_ok(a, &r3);
  // a retry of failed cell 3 that succeeds: the failed rows are replaced
  cs_cell_result r3b = known_result(3, 2, CELL_DONE, WITH_POINTS, 0);
  write_ok(a, &r3b);
  close_ok(a);
  f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  ds = H5Dopen2(f, "curves", H5P_DEFAULT);
  hid_t sp = H5Dget_space(ds);
  H5Sget_simple_extent_dims(sp, &len, NULL);
  assert_int_equal(len, 6);  // 3 of cell 0 + 3 of cell 3, no orphans, no failed rows
  H5Sclose(sp), H5Dclose(ds);
  ds = H5Dopen2(f, "curvature", H5P_DEFAULT), sp = H5Dget_space(ds);
  H5Sget_simple_extent_dims(sp, &len, NULL);
  assert_int_equal(len, 4);  // 2 + 2
  H5Sclose(sp), H5Dclose(ds);
  H5Fclose(f);
  res = read_ok(path, &n);
  assert_same_result(&res[0], &r0);
  assert_same_result(&res[3], &r3b);
  free_results(res, n), free(res);

  result_free(&r0), result_free(&r3), result_free(&r3b);
  spec_free(spec);
  remove_tree(dir);
}

/* docs/SWEEP.md: kill -9 at any moment loses no result reported done, and the
 * archive opens again (repaired if needed). A child writes results and
 * reports each cell through a pipe once archive_write_result returned; the
 * parent kills it after a random delay, resumes, and checks every reported
 * cell, over many trials (kills land in journal appends, HDF5 writes,
 * closes, creation). */
/* group: results added with archive_add_result and committed unforced
 * (the sweep's group commit), reported once archive_commit says durable. */
static void kill_trials(int group) {
  char dir[64], path[128];
  cs_spec *spec = scratch(dir, path, group ? "killg" : "kill", "k.h5",
                          "[sweep]\nname = kill\n[grid]\narch = ungated, gated\n"
                          "depth = 1..4\nseed = 0..24\n");
  const int ncells = 200, trials = 24;
  unsigned char *reported = calloc(ncells, 1);
  assert_non_null(reported);
  srand(20260501);
  for (int trial = 0; trial < trials; trial++) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      cs_archive *a = NULL;
      if (archive_open_write(path, spec, ARCHIVE_RESUME, NULL, &a)) _exit(3);
      int32_t opened = -1;
      if (write(fds[1], &opened, sizeof opened) != sizeof opened) _exit(5);
      int32_t added[200];
      int64_t n_added = 0, n_durable = 0;
      for (int c = 0; c < ncells; c++) {
        if (archive_cell_status(a, c) == CELL_DONE) continue;
        cs_cell_result r = known_result(c, 1 + c % 4, CELL_DONE, c % 3 ? 0 : WITH_POINTS | WITH_PARAMS, 0);
        if (!group) {
          if (archive_write_result(a, &r)) _exit(4);
          int32_t id = c;
          if (write(fds[1], &id, sizeof id) != sizeof id) _exit(5);
        } else {
          int64_t d = 0;
          if (archive_add_result(a, &r) || archive_commit(a, 0, &d)) _exit(4);
          added[n_added++] = c;
          // results become durable in the order they were added
          for (int64_t k = n_durable; k < n_durable + d; k++)
            if (write(fds[1], &added[k], sizeof added[k]) != sizeof added[k]) _exit(5);
          n_durable += d;
          usleep(1000);  // results arriving 1 ms apart: several group commits per trial
        }
        result_free(&r);
      }
      int64_t d = 0;
      if (group && archive_commit(a, 1, &d)) _exit(4);
      for (int64_t k = n_durable; k < n_durable + d; k++)
        if (write(fds[1], &added[k], sizeof added[k]) != sizeof added[k]) _exit(5);
      archive_close(a);
      _exit(0);
    }
    close(fds[1]);
    // even trials: a kill anywhere from the start (often inside open);
    // odd trials: anywhere in the writes after the first reported result
    // (however slow this build is: the sanitizer's writes take several
    // times longer than the delays below)
    int32_t id;
    if (trial % 2 && read(fds[0], &id, sizeof id) == sizeof id) {
      assert_int_equal(id, -1);
      if (read(fds[0], &id, sizeof id) == sizeof id && id >= 0) reported[id] = 1;
    }
    // group commit syncs 50 ms after a result at the latest: longer delays
    usleep((useconds_t)(rand() % (group ? 300000 : 25000)));
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      fail_msg("trial %d: child failed with status %d", trial, WEXITSTATUS(status));
    while (read(fds[0], &id, sizeof id) == sizeof id)
      if (id >= 0) reported[id] = 1;
    close(fds[0]);
    // every reported cell is done after a resume, whatever the kill hit
    cs_archive *a = open_ok(path, spec, ARCHIVE_RESUME, NULL);
    for (int c = 0; c < ncells; c++)
      if (reported[c] && archive_cell_status(a, c) != CELL_DONE)
        fail_msg("trial %d: cell %d was reported done but is %d after resume", trial, c,
                 (int)archive_cell_status(a, c));
    close_ok(a);
  }
  // finish the grid and compare every value
  cs_archive *a = open_ok(path, spec, ARCHIVE_RESUME, NULL);
  for (int c = 0; c < ncells; c++) {
    if (archive_cell_status(a, c) == CELL_DONE) continue;
    cs_cell_result r = known_result(c, 1 + c % 4, CELL_DONE, c % 3 ? 0 : WITH_POINTS | WITH_PARAMS, 0);
    write_ok(a, &r);
    result_free(&r);
  }
  close_ok(a);
  int64_t n;
  cs_cell_result *res = read_ok(path, &n);
  assert_int_equal(n, ncells);
  for (int c = 0; c < ncells; c++) {
    cs_cell_result r = known_result(c, 1 + c % 4, CELL_DONE, c % 3 ? 0 : WITH_POINTS | WITH_PARAMS, 0);
    assert_same_result(&res[c], &r);
    result_free(&r);
  }
  free_results(res, n), free(res);
  int nrep = 0;
  for (int c = 0; c < ncells; c++) nrep += reported[c];
  print_message("kill test%s: %d trials, %d cells reported done before a kill\n",
                group ? " (group commit)" : "", trials, nrep);
  assert_true(nrep > 0);
  free(reported);
  spec_free(spec);
  remove_tree(dir);
}

static void test_kill_anywhere(void **state) { kill_trials(0); }

static void test_kill_group_commit(void **state) { kill_trials(1); }

/* Group commit and batches (docs/ARCHIVE.md, "Write protocol"): added
 * results are done once committed (archive_cell_status); the first batch
 * goes into the file at once, later ones whole (never a part of one) after
 * a wait of 50 times the last batch's duration, at most 1 s, or with
 * archive_flush; everything reads back equal. */
static void add_results(cs_archive *a, int from, int to, int64_t *durable) {
  *durable = 0;
  for (int c = from; c < to; c++) {
    cs_cell_result r = known_result(c, 1 + c % 4, CELL_DONE, c % 3 ? 0 : WITH_POINTS | WITH_PARAMS, 0);
    assert_ok(archive_add_result(a, &r));
    result_free(&r);
  }
  int64_t d = 0;
  assert_ok(archive_commit(a, 1, &d));
  *durable += d;
  assert_ok(archive_commit(a, 1, &d));  // nothing new
  assert_int_equal(d, 0);
  for (int c = from; c < to; c++) assert_int_equal(archive_cell_status(a, c), CELL_DONE);
}

static int64_t file_done(const char *path) {
  cs_archive_summary sm;
  assert_ok(archive_summary(path, &sm));
  return sm.done;
}

static void test_group_commit_batches(void **state) {
  char dir[64], path[128];
  cs_spec *spec = scratch(dir, path, "batch", "b.h5",
                          "[sweep]\nname = batch\n[grid]\narch = ungated, gated\n"
                          "depth = 1..4\nseed = 0..4\n");
  cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
  int64_t durable;
  add_results(a, 0, 10, &durable);
  assert_int_equal(durable, 10);
  assert_int_equal(file_done(path), 10);  // the first batch: at once
  add_results(a, 10, 15, &durable);
  assert_int_equal(durable, 5);
  // the next batch waits 50 times the last one's duration: the file holds
  // all five or none of them, never a part
  int64_t shown = file_done(path);
  assert_true(shown == 10 || shown == 15);
  assert_ok(archive_flush(a));
  assert_int_equal(file_done(path), 15);
  // a batch is written by the first commit a second after the last one at the latest
  add_results(a, 15, 20, &durable);
  shown = file_done(path);
  assert_true(shown == 15 || shown == 20);
  usleep(1100000);
  int64_t d;
  assert_ok(archive_commit(a, 0, &d));
  assert_int_equal(d, 0);
  assert_int_equal(file_done(path), 20);
  int64_t n;
  cs_cell_result *res = read_ok(path, &n);
  for (int c = 0; c < 20; c++) {
    cs_cell_result r = known_result(c, 1 + c % 4, CELL_DONE, c % 3 ? 0 : WITH_POINTS | WITH_PARAMS, 0);
    assert_same_result(&res[c], &r);
    result_free(&r);
  }
  free_results(res, n), free(res);
  close_ok(a);
  spec_free(spec);
  remove_tree(dir);
}

/* ------------------------------------------------------------------------ */
/* bad inputs                                                                 */

/* The call must fail with code, a message naming name and containing
 * what; the file's bytes must be unchanged and no journal left behind
 * unless one was there. */
static void expect_refusal(int rc, int code, const char *name, const char *what, const char *file,
                           const char *hash_before, int journal_before) {
  if (rc != code) print_error("got %d (%s), want %d\n", rc, cs_error_message(), code);
  assert_int_equal(rc, code);
  const char *msg = cs_error_message();
  if (!strstr(msg, name) || !strstr(msg, what))
    fail_msg("message \"%s\" lacks \"%s\" or \"%s\"", msg, name, what);
  if (file) {
    char after[65], journal[300];
    file_hash(file, after);
    assert_string_equal(hash_before, after);
    snprintf(journal, sizeof journal, "%s.journal", file);
    assert_int_equal(file_exists(journal), journal_before);
  }
}

static int open_fails(const char *path, const cs_spec *spec, cs_archive_mode mode,
                      const unsigned char *mask) {
  cs_archive *a = (cs_archive *)0x1;
  cs_error_clear();
  int rc = archive_open_write(path, spec, mode, mask, &a);
  assert_null(a);
  return rc;
}

static void test_bad_inputs(void **state) {
  char dir[64], p[256], h[65];
  make_dir(dir, sizeof dir, "bad");
  cs_spec *spec = load_spec("tests/specs/demo-small.ini");
  cs_spec *other = spec_from(OTHER_SPEC);

  // 1. not HDF5
  snprintf(p, sizeof p, "%s/text.h5", dir);
  write_bytes(p, "just some text, not HDF5\n", 25);
  file_hash(p, h);
  expect_refusal(open_fails(p, spec, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, p, "not an HDF5 file", p, h, 0);
  cs_archive_summary s;
  expect_refusal(archive_summary(p, &s), CS_ERR_INPUT, p, "not an HDF5 file", p, h, 0);

  // 2. empty file
  snprintf(p, sizeof p, "%s/empty.h5", dir);
  write_bytes(p, "", 0);
  file_hash(p, h);
  expect_refusal(open_fails(p, spec, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, p, "empty", p, h, 0);

  // 3. truncated archive without a journal
  snprintf(p, sizeof p, "%s/trunc.h5", dir);
  cs_archive *a = open_ok(p, spec, ARCHIVE_CREATE, NULL);
  close_ok(a);  // no record: the journal is removed
  assert_int_equal(truncate(p, file_size(p) / 2), 0);
  file_hash(p, h);
  expect_refusal(open_fails(p, spec, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, p, "no journal", p, h, 0);
  expect_refusal(open_fails(p, spec, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, p, "truncated", p, h, 0);

  // 4. HDF5 without a format attribute; 5. another format
  snprintf(p, sizeof p, "%s/plain.h5", dir);
  hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(f);
  file_hash(p, h);
  expect_refusal(open_fails(p, spec, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, p, "no 'format' attribute", p, h, 0);
  char *text = NULL;
  expect_refusal(archive_read_spec(p, &text), CS_ERR_INPUT, p, "not a curvsweep archive", p, h, 0);
  snprintf(p, sizeof p, "%s/foreign.h5", dir);
  f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t st = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  H5Tset_size(st, 8);
  hid_t at = H5Acreate2(f, "format", st, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(at, st, "netcdf4");
  H5Aclose(at), H5Sclose(sp), H5Tclose(st);
  H5Fclose(f);
  file_hash(p, h);
  expect_refusal(open_fails(p, spec, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, p, "format is 'netcdf4'", p, h, 0);

  // 6. wrong format_version: a future one (6), and version 1 (before
  // per-point rounding errors), which is refused with the reason
  int64_t n;
  cs_cell_result *res = NULL;
  for (int v = 1; v <= 6; v += 5) {
    snprintf(p, sizeof p, "%s/v%d.h5", dir, v);
    a = open_ok(p, spec, ARCHIVE_CREATE, NULL);
    close_ok(a);
    f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    at = H5Aopen(f, "format_version", H5P_DEFAULT);
    H5Awrite(at, H5T_NATIVE_INT, &v);
    H5Aclose(at);
    H5Fclose(f);
    file_hash(p, h);
    const char *why = v == 1 ? "format_version 1, written before per-point rounding errors"
                             : "format_version 6";
    expect_refusal(open_fails(p, spec, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, p, why, p, h, 0);
    expect_refusal(archive_read_results(p, &res, &n), CS_ERR_INPUT, p, why, p, h, 0);
  }

  // 7. a different spec, exact message
  snprintf(p, sizeof p, "%s/spec.h5", dir);
  a = open_ok(p, spec, ARCHIVE_CREATE, NULL);
  cs_cell_result r = known_result(1, 1, CELL_DONE, 0, 0);
  write_ok(a, &r);
  close_ok(a);  // pending cells: the journal stays
  file_hash(p, h);
  char want[1024];  // every key that differs, old → new (docs/ARCHIVE.md, "Identity")
  snprintf(want, sizeof want, "%s was written by a different spec: [sweep] name: demo-small → "
           "other; [grid] arch: ungated, gated → gated; [grid] task: linear → circles; [task] "
           "train_points: 256 → 2048; [task] test_points: 256 → 2048; [model] width: 8 → 16; "
           "[train] epochs: 5 → 100; [train] batch: 64 → 256; [train] eval_every: 1 → 10; "
           "[curvature] points: 16 → 128 (archive → %s); only more [grid] values extend an "
           "archive: use a new -o path, or --overwrite to discard its results", p,
           spec_source(other));
  assert_int_equal(open_fails(p, other, ARCHIVE_RESUME, NULL), CS_ERR_INPUT);
  assert_string_equal(cs_error_message(), want);
  expect_refusal(open_fails(p, other, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, p, "different spec", p, h, 1);

  // 8. create on an existing archive
  expect_refusal(open_fails(p, spec, ARCHIVE_CREATE, NULL), CS_ERR_INPUT, p, "already exists", p, h, 1);

  // 9. a second writer while one holds the archive
  a = open_ok(p, spec, ARCHIVE_RESUME, NULL);
  expect_refusal(open_fails(p, spec, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, p, "another curvsweep process",
                 NULL, NULL, 0);
  // 10. results the archive cannot hold
  cs_cell_result bad = known_result(2, 1, CELL_PENDING, 0, 0);
  expect_refusal(archive_write_result(a, &bad), CS_ERR_INPUT, p, "must be done, failed or diverged",
                 NULL, NULL, 0);
  result_free(&bad);
  close_ok(a);

  // 11. unwritable places: below a regular file, and a missing directory there
  char reg[128];
  snprintf(reg, sizeof reg, "%s/regular", dir);
  write_bytes(reg, "x", 1);
  snprintf(p, sizeof p, "%s/x.h5", reg);
  expect_refusal(open_fails(p, spec, ARCHIVE_CREATE, NULL), CS_ERR_IO, p, "Not a directory", NULL, NULL, 0);
  snprintf(p, sizeof p, "%s/deeper/x.h5", reg);
  expect_refusal(open_fails(p, spec, ARCHIVE_RESUME, NULL), CS_ERR_IO, p, "Not a directory", NULL, NULL, 0);
  assert_int_equal(file_size(reg), 1);

  // 12. a journal of another spec where the archive is missing
  snprintf(p, sizeof p, "%s/lost.h5", dir);
  a = open_ok(p, other, ARCHIVE_CREATE, NULL);
  cs_cell_result ro = known_result(1, 1, CELL_DONE, 0, 0);
  assert_ok(archive_test_journal_only(a, &ro));
  close_ok(a);
  assert_int_equal(unlink(p), 0);
  char jp[300], jh[65], jh2[65];
  snprintf(jp, sizeof jp, "%s.journal", p);
  file_hash(jp, jh);
  expect_refusal(open_fails(p, spec, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, jp, "different spec", NULL, NULL, 0);
  file_hash(jp, jh2);
  assert_string_equal(jh, jh2);
  assert_false(file_exists(p));
  // ... and create refuses to start over it
  expect_refusal(open_fails(p, other, ARCHIVE_CREATE, NULL), CS_ERR_INPUT, jp, "resume to recover",
                 NULL, NULL, 0);
  // while resume with its own spec recovers cell 1 from it
  a = open_ok(p, other, ARCHIVE_RESUME, NULL);
  assert_int_equal(archive_cell_status(a, 1), CELL_DONE);
  close_ok(a);

  // 13. reading a file that does not exist
  snprintf(p, sizeof p, "%s/missing.h5", dir);
  expect_refusal(archive_summary(p, &s), CS_ERR_INPUT, p, "No such file", NULL, NULL, 0);

  result_free(&r), result_free(&ro);
  spec_free(spec);
  spec_free(other);
  remove_tree(dir);
}

static void test_overwrite(void **state) {
  char dir[64], path[128], journal[160];
  cs_spec *spec = scratch(dir, path, "over", "o.h5", NULL);
  snprintf(journal, sizeof journal, "%s.journal", path);
  cs_spec *other = spec_from(OTHER_SPEC);
  cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
  cs_cell_result r = known_result(1, 1, CELL_DONE, 0, 0);
  write_ok(a, &r);
  close_ok(a);
  assert_true(file_exists(journal));

  // overwrite with another spec: a fresh archive of that spec, old journal gone
  a = open_ok(path, other, ARCHIVE_OVERWRITE, NULL);
  int64_t sel, done;
  archive_counts(a, &sel, &done, NULL, NULL);
  assert_int_equal(sel, 4);
  assert_int_equal(done, 0);
  close_ok(a);
  assert_false(file_exists(journal));
  cs_archive_summary s;
  assert_ok(archive_summary(path, &s));
  assert_string_equal(s.spec_sha256, spec_sha256(other));
  assert_int_equal(s.cells, 4);
  assert_int_equal(s.done, 0);
  // no temporary files left beside it
  assert_int_equal(count_prefixed(dir, "o.h5.tmp", NULL, 0), 0);

  // a failed overwrite keeps the old file and its journal: a directory
  // squatting on the temporary name makes the new file impossible
  a = open_ok(path, other, ARCHIVE_RESUME, NULL);
  cs_cell_result r2 = known_result(2, 1, CELL_DONE, 0, 0);
  write_ok(a, &r2);
  close_ok(a);
  char tmp[200], h[65], hj[65], h2[65], hj2[65];
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
  assert_int_equal(mkdir(tmp, 0755), 0);
  file_hash(path, h);
  file_hash(journal, hj);
  assert_int_equal(open_fails(path, spec, ARCHIVE_OVERWRITE, NULL), CS_ERR_IO);
  assert_non_null(strstr(cs_error_message(), path));
  file_hash(path, h2);
  file_hash(journal, hj2);
  assert_string_equal(h, h2);
  assert_string_equal(hj, hj2);
  assert_int_equal(rmdir(tmp), 0);
  // and the old archive still resumes with its result
  a = open_ok(path, other, ARCHIVE_RESUME, NULL);
  assert_int_equal(archive_cell_status(a, 2), CELL_DONE);
  close_ok(a);
  result_free(&r2);

  result_free(&r);
  spec_free(spec);
  spec_free(other);
  remove_tree(dir);
}

/* ------------------------------------------------------------------------ */
/* shards and merge                                                           */

static void test_shards_and_merge(void **state) {
  char dir[64], pa[128], pb[128], pall[128], pm[128], pc[128];
  make_dir(dir, sizeof dir, "merge");
  snprintf(pa, sizeof pa, "%s/a.h5", dir);
  snprintf(pb, sizeof pb, "%s/b.h5", dir);
  snprintf(pc, sizeof pc, "%s/c.h5", dir);
  snprintf(pall, sizeof pall, "%s/all.h5", dir);
  snprintf(pm, sizeof pm, "%s/merged.h5", dir);
  cs_spec *spec = load_spec("tests/specs/demo-small.ini");
  cs_cell_result r[8];
  for (int c = 0; c < 8; c++)
    r[c] = known_result(c, 1 + c % 2, c == 5 ? CELL_FAILED : CELL_DONE, c == 2 ? WITH_POINTS | WITH_PARAMS : 0, 0);
  unsigned char even[8], odd[8];
  for (int c = 0; c < 8; c++) even[c] = c % 2 == 0, odd[c] = c % 2 == 1;

  // two shards (cell 7 of shard b left pending) and the single archive
  cs_archive *a = open_ok(pa, spec, ARCHIVE_CREATE, even), *b = open_ok(pb, spec, ARCHIVE_CREATE, odd);
  cs_archive *all = open_ok(pall, spec, ARCHIVE_CREATE, NULL);
  cs_run_info ra = make_run("2026-04-01T00:00:00Z", 2), rb = make_run("2026-04-01T00:00:01Z", 5);
  assert_ok(archive_begin_run(a, &ra));
  assert_ok(archive_begin_run(b, &rb));
  for (int c = 0; c < 7; c++) {
    write_ok(c % 2 ? b : a, &r[c]);
    write_ok(all, &r[c]);
  }
  // a shard lists only its cells; another shard's cell is refused
  int64_t sel;
  archive_counts(a, &sel, NULL, NULL, NULL);
  assert_int_equal(sel, 4);
  assert_int_equal(archive_write_result(a, &r[1]), CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), "not listed"));
  close_ok(a), close_ok(b), close_ok(all);
  // resuming shard a as the whole grid is refused; as its own shard is fine
  expect_refusal(open_fails(pa, spec, ARCHIVE_RESUME, NULL), CS_ERR_INPUT, pa, "another --shard",
                 NULL, NULL, 0);
  a = open_ok(pa, spec, ARCHIVE_RESUME, even);
  close_ok(a);

  int64_t n;
  cs_cell_result *res = read_ok(pa, &n);
  assert_int_equal(n, 4);
  for (int i = 0; i < 4; i++) assert_same_result(&res[i], &r[2 * i]);
  free_results(res, n), free(res);

  // merge == writing every cell into one archive
  const char *inputs[2] = {pa, pb};
  assert_ok(archive_merge(pm, inputs, 2, 0, 0, NULL));
  int64_t nm, na;
  cs_cell_result *merged = read_ok(pm, &nm), *single = read_ok(pall, &na);
  assert_int_equal(nm, 8);
  assert_int_equal(na, 8);
  for (int c = 0; c < 8; c++) assert_same_result(&merged[c], &single[c]);
  assert_pending(&merged[7], 7);
  free_results(merged, nm), free(merged);
  free_results(single, na), free(single);
  cs_archive_summary s;
  assert_ok(archive_summary(pm, &s));
  assert_int_equal(s.runs, 2);  // /runs concatenated
  assert_int_equal(s.max_ranks, 5);
  assert_int_equal(s.done, 6);
  assert_int_equal(s.failed, 1);
  assert_int_equal(s.pending, 1);

  // resuming the merged archive (it has no journal) and being killed inside
  // the first write: the journal was seeded with the merged results first,
  // so the rebuild holds them all, the new cell 7 and both /runs rows
  char mj[200];
  snprintf(mj, sizeof mj, "%s.journal", pm);
  assert_false(file_exists(mj));
  cs_archive *m = open_ok(pm, spec, ARCHIVE_RESUME, NULL);
  assert_ok(archive_test_journal_only(m, &r[7]));
  close_ok(m);
  m = open_ok(pm, spec, ARCHIVE_RESUME, NULL);  // dirty: rebuilt from the journal
  close_ok(m);
  assert_int_equal(count_prefixed(dir, "merged.h5.damaged-", NULL, 0), 1);
  merged = read_ok(pm, &nm);
  for (int c = 0; c < 8; c++) assert_same_result(&merged[c], &r[c]);
  free_results(merged, nm), free(merged);
  assert_ok(archive_summary(pm, &s));
  assert_int_equal(s.runs, 2);
  assert_int_equal(s.done, 7);
  assert_false(file_exists(mj));  // nothing pending: the journal is gone

  // merging a shard with the whole archive: overlaps agree, fine
  const char *agree[2] = {pa, pall};
  char pm2[160];
  snprintf(pm2, sizeof pm2, "%s/merged2.h5", dir);
  assert_ok(archive_merge(pm2, agree, 2, 0, 0, NULL));

  // refusals, each leaving the output untouched
  char hm[65];
  file_hash(pm, hm);
  expect_refusal(archive_merge(pm, inputs, 2, 0, 0, NULL), CS_ERR_INPUT, pm, "already exists", pm, hm, 0);
  // a cell done in two inputs with different values (cell 2, another train_loss)
  cs_archive *c = open_ok(pc, spec, ARCHIVE_CREATE, NULL);
  cs_cell_result r2x = known_result(2, 1, CELL_DONE, WITH_POINTS | WITH_PARAMS, 1.0 / 1024);
  write_ok(c, &r2x);
  close_ok(c);
  const char *conflict[2] = {pa, pc};
  expect_refusal(archive_merge(pm, conflict, 2, 1, 0, NULL), CS_ERR_INPUT, pc, "cell 2 is done in both", pm, hm, 0);
  assert_non_null(strstr(cs_error_message(), pa));
  // different specs
  char po[160];
  snprintf(po, sizeof po, "%s/other.h5", dir);
  cs_spec *other = spec_from(OTHER_SPEC);
  c = open_ok(po, other, ARCHIVE_CREATE, NULL);
  close_ok(c);
  const char *mixed[2] = {pa, po};
  expect_refusal(archive_merge(pm, mixed, 2, 1, 0, NULL), CS_ERR_INPUT, po, "different specs", pm, hm, 0);
  // an input that is not an archive
  char pt[160];
  snprintf(pt, sizeof pt, "%s/text.h5", dir);
  write_bytes(pt, "hello", 5);
  const char *junk[2] = {pa, pt};
  expect_refusal(archive_merge(pm, junk, 2, 1, 0, NULL), CS_ERR_INPUT, pt, "not an HDF5 file", pm, hm, 0);
  // an output path with a stale journal of an earlier run beside it
  char pj[160], pjj[200];
  snprintf(pj, sizeof pj, "%s/stale.h5", dir);
  snprintf(pjj, sizeof pjj, "%s.journal", pj);
  write_bytes(pjj, "old", 3);
  expect_refusal(archive_merge(pj, inputs, 2, 0, 0, NULL), CS_ERR_INPUT, pjj, "resume that run", NULL, NULL, 0);
  assert_false(file_exists(pj));
  assert_int_equal(file_size(pjj), 3);
  // an input whose writer was killed inside a write: resume it first
  char pd[160];
  snprintf(pd, sizeof pd, "%s/d.h5", dir);
  c = open_ok(pd, spec, ARCHIVE_CREATE, odd);
  assert_ok(archive_test_journal_only(c, &r[1]));
  close_ok(c);
  const char *killed[2] = {pa, pd};
  expect_refusal(archive_merge(pm, killed, 2, 1, 0, NULL), CS_ERR_INPUT, pd, "interrupted during a write", pm, hm, 0);
  assert_int_equal(count_prefixed(dir, "merged.h5.tmp", NULL, 0), 0);
  // ... resumed with a narrower mask (cells 1 and 3 only), the rebuilt file
  // still lists every cell it listed, and holds the journaled cell 1
  unsigned char narrow[8] = {0, 1, 0, 1, 0, 0, 0, 0};
  c = open_ok(pd, spec, ARCHIVE_RESUME, narrow);
  assert_int_equal(archive_cell_status(c, 1), CELL_DONE);
  archive_counts(c, &sel, NULL, NULL, NULL);
  assert_int_equal(sel, 2);
  close_ok(c);
  res = read_ok(pd, &n);
  assert_int_equal(n, 4);
  assert_same_result(&res[0], &r[1]);
  for (int i = 1; i < 4; i++) assert_pending(&res[i], 2 * i + 1);
  free_results(res, n), free(res);
  assert_ok(archive_merge(pm, killed, 2, 1, 0, NULL));

  result_free(&r2x);
  free_results(r, 8);
  spec_free(other);
  spec_free(spec);
  remove_tree(dir);
}

/* ------------------------------------------------------------------------ */
/* durable writes, one at a time                                              */

/* 100 results written one by one with archive_write_result (each durable
 * when the call returns, docs/ARCHIVE.md "Write protocol") read back bit for
 * bit after the close. What such a write costs is measured by
 * bench/archive.c ("synced 1"; bench/RESULTS.md), not asserted here: a
 * timed test would measure the machine it runs on. */
static void test_durable_writes(void **state) {
  char dir[64], path[128];
  // 400 cells; 100 small results (depth 4, 3 curve points)
  cs_spec *spec = scratch(dir, path, "durable", "c.h5",
                          "[sweep]\nname = cost\n[grid]\narch = ungated, gated\n"
                          "depth = 1..4\nseed = 0..49\n");
  cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
  enum { N = 100 };
  cs_cell_result w[N];
  for (int i = 0; i < N; i++) {
    w[i] = known_result(i * 4, 4, CELL_DONE, 0, 0);
    write_ok(a, &w[i]);
  }
  close_ok(a);
  int64_t n = 0;
  cs_cell_result *res = read_ok(path, &n);
  assert_int_equal(n, 400); // every cell of the grid, by cell id
  for (int i = 0; i < N; i++) assert_same_result(&res[i * 4], &w[i]);
  free_results(res, n), free(res);
  free_results(w, N);
  cs_archive_summary s;
  assert_ok(archive_summary(path, &s));
  assert_int_equal(s.done, N);
  assert_int_equal(s.pending, 400 - N);
  spec_free(spec);
  remove_tree(dir);
}

/* ------------------------------------------------------------------------ */
/* the archive tests/archive_h5py_check.py reads                              */

/* demo-small: cells 0..5 done (cell 1 with points and params, depth 2 for
 * odd cells, 1 for even), cell 6 failed, cell 7 pending; one run. */
static int demo_archive(const char *path) {
  cs_spec *spec = load_spec("tests/specs/demo-small.ini");
  cs_archive *a = NULL;
  if (archive_open_write(path, spec, ARCHIVE_OVERWRITE, NULL, &a)) goto fail;
  cs_run_info run = make_run("2026-05-01T00:00:00Z", 2);
  if (archive_begin_run(a, &run)) goto fail;
  for (int c = 0; c < 7; c++) {
    cs_cell_result r = known_result(c, 1 + c % 2, c == 6 ? CELL_FAILED : CELL_DONE,
                                   c == 1 ? WITH_POINTS | WITH_PARAMS : 0, 0);
    int rc = archive_write_result(a, &r);
    result_free(&r);
    if (rc) goto fail;
  }
  snprintf(run.end, sizeof run.end, "2026-05-01T00:10:00Z");
  run.cells_run = 7;
  if (archive_end_run(a, &run) || archive_close(a)) goto fail;
  spec_free(spec);
  return 0;
fail:
  fprintf(stderr, "demo archive: %s\n", cs_error_message());
  return 1;
}

int main(void) {
  const char *demo = getenv("CS_ARCHIVE_WRITE_DEMO");
  if (demo) return demo_archive(demo);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_schema_columns),
      cmocka_unit_test(test_lm_token_columns),
      cmocka_unit_test(test_filters),
      cmocka_unit_test(test_resume_and_journal_removal),
      cmocka_unit_test(test_journal_replay_after_kill),
      cmocka_unit_test(test_torn_and_corrupt_journal),
      cmocka_unit_test(test_damaged_file_rebuilt),
      cmocka_unit_test(test_interrupted_write_and_rewrite),
      cmocka_unit_test(test_kill_anywhere),
      cmocka_unit_test(test_kill_group_commit),
      cmocka_unit_test(test_group_commit_batches),
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_overwrite),
      cmocka_unit_test(test_shards_and_merge),
      cmocka_unit_test(test_durable_writes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

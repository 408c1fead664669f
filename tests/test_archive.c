/* test_archive.c — the HDF5 archive: exact round trip of every result field,
 * schema (column names, filters), the lm family's extreme-token columns and
 * 100 durable writes read back bit for bit (resume, journal and damage:
 * test_archive_resume.c; bad inputs and merge: test_archive_inputs.c).
 *
 * Run with CS_ARCHIVE_WRITE_DEMO=PATH it instead writes the demo archive
 * that tests/archive_h5py_check.py reads (see demo_archive below). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "archive_fixtures.h"
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
/* the lm family's extreme-token columns (format_version 5)                  */

/* A done lm result of depth 2 whose extreme-token columns are set from
 * v[0..5] (sink_mass, max_attn, massive_act, value_drain, resid_peak,
 * sink_headmax) at prefix 1 and v + 1/8 at prefix 2 for the ratios. */
static cs_cell_result lm_result(int64_t cell, const double v[6]) {
  cs_cell_result r = known_result(cell, 2, CELL_DONE, 0, 0);
  for (int l = 0; l < 2; l++) {
    geom_stats *g = &r.curv[l];
    g->sink_mass = v[0], g->max_attn = v[1], g->sink_headmax = v[5];
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
  double good[6] = {0.625, 0.875, 37.5, 0.03125, 6.25, 0.75};
  double old[6] = {0.5, 0.75, NAN, NAN, NAN, 0.625};
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
    double v[6];
    const char *why;
  } bad[] = {
      {{NAN, 0.875, 37.5, 0.03125, 6.25, 0.75}, "prefix 1: sink_mass (first-token share) not in [0, 1]"},
      {{0.625, 1.5, 37.5, 0.03125, 6.25, 0.75}, "prefix 1: max_attn (mean largest attention weight) not in [0, 1]"},
      {{0.625, NAN, 37.5, 0.03125, 6.25, 0.75}, "prefix 1: max_attn (mean largest attention weight) not in [0, 1]"},
      {{0.625, 0.875, 37.5, 0.03125, 6.25, 1.5}, "prefix 1: sink_headmax (largest per-head first-token share) not in [0, 1]"},
      {{0.625, 0.875, 37.5, 0.03125, 6.25, NAN}, "prefix 1: sink_headmax (largest per-head first-token share) not in [0, 1]"},
      {{0.625, 0.875, 37.5, NAN, 6.25, 0.75}, "prefix 1: some but not all of massive_act"},
      {{0.625, 0.875, 0.75, 0.03125, 6.25, 0.75}, "prefix 1: massive_act below 1"},
      {{0.625, 0.875, 37.5, 0.03125, -6.25, 0.75}, "prefix 1: massive_act below 1, or value_drain or resid_peak negative"},
      {{0.625, 0.875, 37.5, INFINITY, 6.25, 0.75}, "prefix 1: massive_act below 1, or value_drain or resid_peak negative"},
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
                           "massive_act:f8,value_drain:f8,resid_peak:f8,sink_headmax:f8,"
                           "attn_entropy:f8,ablate_first:f8,ablate_attn:f8");
  compound_names(path, "curves", got, sizeof got);
  assert_string_equal(got, "cell_id:i8,epoch:i4,train_loss:f8,train_acc:f8,test_acc:f8");
  compound_names(path, "gates", got, sizeof got);
  assert_string_equal(got, "cell_id:i8,prefix:i4,n_scores:i8,mean:f8,median:f8,q10:f8,q90:f8,"
                           "frac_low:f8,var_query:f8,var_channel:f8,hist_00:f8,hist_01:f8,"
                           "hist_02:f8,hist_03:f8,hist_04:f8,hist_05:f8,hist_06:f8,hist_07:f8,"
                           "hist_08:f8,hist_09:f8,hist_10:f8,hist_11:f8,hist_12:f8,hist_13:f8,"
                           "hist_14:f8,hist_15:f8,hist_16:f8,hist_17:f8,hist_18:f8,hist_19:f8");
  compound_names(path, "cellstats", got, sizeof got);
  assert_string_equal(got, "cell_id:i8,spikes:i4,loss_ratio_max:f8,test_nll:f8,test_brier:f8,"
                           "test_ece:f8");
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
  cs_run_info run = make_run("2026-05-01T00:00:00Z", 2);
  int rc = archive_open_write(path, spec, ARCHIVE_OVERWRITE, NULL, &a);
  if (!rc) rc = archive_begin_run(a, &run);
  for (int c = 0; !rc && c < 7; c++) {
    cs_cell_result r = known_result(c, 1 + c % 2, c == 6 ? CELL_FAILED : CELL_DONE,
                                   c == 1 ? WITH_POINTS | WITH_PARAMS : 0, 0);
    rc = archive_write_result(a, &r);
    result_free(&r);
  }
  snprintf(run.end, sizeof run.end, "2026-05-01T00:10:00Z");
  run.cells_run = 7;
  if (!rc) rc = archive_end_run(a, &run);
  if (!rc) rc = archive_close(a);
  if (rc) fprintf(stderr, "demo archive: %s\n", cs_error_message());
  spec_free(spec);
  return rc ? 1 : 0;
}

int main(void) {
  const char *demo = getenv("CS_ARCHIVE_WRITE_DEMO");
  if (demo) return demo_archive(demo);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_schema_columns),
      cmocka_unit_test(test_lm_token_columns),
      cmocka_unit_test(test_filters),
      cmocka_unit_test(test_durable_writes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

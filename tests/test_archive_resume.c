/* test_archive_resume.c — resume, journal replay after a simulated crash,
 * torn and corrupt journal records, rebuild of a damaged file,
 * interrupted-write repair, kill -9 anywhere, group commit. */
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
/* resume, journal, damage                                                    */

static void test_resume_and_journal_removal(void **state) {
  char dir[64], path[128], journal[160];
  cs_spec *spec = scratch(dir, path, "resume", "r.h5", NULL);
  snprintf(journal, sizeof journal, "%s.journal", path);
  cs_cell_result r[8];
  for (int c = 0; c < 8; c++) r[c] = known_result(c, spec_depth(spec, c), CELL_DONE, 0, 0);

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
  cs_cell_result r0 = known_result(0, spec_depth(spec, 0), CELL_DONE, WITH_PARAMS, 0);
  cs_cell_result r6 = known_result(6, spec_depth(spec, 6), CELL_DONE, WITH_POINTS | WITH_PARAMS, 0);
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
  cs_cell_result r1 = known_result(1, spec_depth(spec, 1), CELL_DONE, 0, 0), r2 = known_result(2, spec_depth(spec, 2), CELL_DONE, 0, 0);
  cs_cell_result r3 = known_result(3, spec_depth(spec, 3), CELL_DONE, 0, 0);

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
  cs_cell_result r[3] = {known_result(0, spec_depth(spec, 0), CELL_DONE, 0, 0),
                         known_result(1, spec_depth(spec, 1), CELL_DONE, WITH_POINTS | WITH_PARAMS, 0),
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
  cs_cell_result r0 = known_result(0, spec_depth(spec, 0), CELL_DONE, 0, 0);
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
  cs_cell_result r3b = known_result(3, spec_depth(spec, 3), CELL_DONE, WITH_POINTS, 0);
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
  assert_int_equal(len, spec_depth(spec, 0) + spec_depth(spec, 3));  // a prefix row each
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
        cs_cell_result r = known_result(c, spec_depth(spec, c), CELL_DONE, c % 3 ? 0 : WITH_POINTS | WITH_PARAMS, 0);
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
    cs_cell_result r = known_result(c, spec_depth(spec, c), CELL_DONE, c % 3 ? 0 : WITH_POINTS | WITH_PARAMS, 0);
    write_ok(a, &r);
    result_free(&r);
  }
  close_ok(a);
  int64_t n;
  cs_cell_result *res = read_ok(path, &n);
  assert_int_equal(n, ncells);
  for (int c = 0; c < ncells; c++) {
    cs_cell_result r = known_result(c, spec_depth(spec, c), CELL_DONE, c % 3 ? 0 : WITH_POINTS | WITH_PARAMS, 0);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resume_and_journal_removal),
      cmocka_unit_test(test_journal_replay_after_kill),
      cmocka_unit_test(test_torn_and_corrupt_journal),
      cmocka_unit_test(test_damaged_file_rebuilt),
      cmocka_unit_test(test_interrupted_write_and_rewrite),
      cmocka_unit_test(test_kill_anywhere),
      cmocka_unit_test(test_kill_group_commit),
      cmocka_unit_test(test_group_commit_batches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

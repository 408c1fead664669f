/* test_archive_inputs.c — a catalogue of bad inputs (code, message, file
 * bytes unchanged), --overwrite, and merge of shards. */
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

  // 6. wrong format_version: a future one (7), and version 1 (before
  // per-point rounding errors), which is refused with the reason
  int64_t n;
  cs_cell_result *res = NULL;
  for (int v = 1; v <= 7; v += 6) {
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
                             : "format_version 7";
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
  cs_cell_result r2 = known_result(2, spec_depth(other, 2), CELL_DONE, 0, 0);
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
    r[c] = known_result(c, c == 5 ? 2 : spec_depth(spec, c), c == 5 ? CELL_FAILED : CELL_DONE, c == 2 ? WITH_POINTS | WITH_PARAMS : 0, 0);
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
  cs_cell_result r2x = known_result(2, spec_depth(spec, 2), CELL_DONE, WITH_POINTS | WITH_PARAMS, 1.0 / 1024);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_overwrite),
      cmocka_unit_test(test_shards_and_merge),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

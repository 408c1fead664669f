/* test_archive_live.c — the archive's lock for live readers (docs/ARCHIVE.md,
 * "Live readers"): a reader holding the shared lock (as plain h5py does
 * while a file is open) defers the writer's batches and never makes them
 * fail; a write that cannot be deferred waits, then stops with its results
 * kept in the journal, and the next open writes them; a reader waits for
 * the writer's exclusive lock and then reads, and one that waited too long
 * says the archive is being written (CS_ERR_IO), never that it is damaged.
 * Results from bench/synth.h (the archive benches' synthetic cells). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "../../bench/synth.h"
#include "../src/archive/archive_test.h"
#include "curvsweep/archive.h"
#include "curvsweep/clock.h"
#include "curvsweep/error.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

/* The lock another process's reader (shared) or writer (exclusive) holds:
 * a descriptor of its own, as a separate open file description is. */
static int hold(const char *path, int op) {
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(flock(fd, op | LOCK_NB), 0);
  return fd;
}

static int64_t done_in_file(const char *path) {
  cs_archive_summary s;
  assert_ok(archive_summary(path, &s));
  return s.done;
}

static void add(cs_archive *a, const cs_spec *spec, int64_t cell) {
  cs_cell_result r;
  assert_ok(synth_result(spec, cell, 0, &r));
  assert_ok(archive_add_result(a, &r));
  result_free(&r);
}

/* Cells 0..5 are done in the synthetic spec (every 50th fails, every 37th
 * diverges). */
static void test_reader_defers_writer(void **state) {
  (void)state;
  char text[1024], dir[256], path[320], jpath[336];
  synth_spec_text(text, sizeof text, 16, 32, 0);
  cs_spec *spec = spec_from(text);
  make_dir(dir, sizeof dir, "live");
  snprintf(path, sizeof path, "%s/a.h5", dir);
  snprintf(jpath, sizeof jpath, "%s.journal", path);
  cs_archive *a;
  assert_ok(archive_open_write(path, spec, ARCHIVE_CREATE, NULL, &a));

  // a reader holds the file: commits succeed, the results are durable in
  // the journal, the file is not touched (and stays readable)
  int fd = hold(path, LOCK_SH);
  for (int64_t c = 0; c < 3; c++) {
    add(a, spec, c);
    int64_t durable = -1;
    assert_ok(archive_commit(a, 1, &durable));
    assert_int_equal(durable, 1);
  }
  assert_int_equal(done_in_file(path), 0);
  int64_t sel, done, failed, diverged;
  archive_counts(a, &sel, &done, &failed, &diverged);
  assert_int_equal(done, 3);
  // released: the next commit writes the deferred batch
  close(fd);
  assert_ok(archive_commit(a, 0, NULL));
  assert_int_equal(done_in_file(path), 3);

  // a write that cannot be deferred waits (0.3 s here), then stops; the
  // results stay in the journal and are not lost at close
  archive_test_lock_wait(0.3);
  fd = hold(path, LOCK_SH);
  add(a, spec, 3);
  add(a, spec, 4);
  double t0 = cs_monotonic_seconds();
  assert_int_equal(archive_flush(a), CS_ERR_IO);
  assert_true(cs_monotonic_seconds() - t0 >= 0.25);
  assert_has(cs_error_message(), "is held open by another process");
  assert_has(cs_error_message(), "stays in its journal");
  assert_ok(archive_close(a));  // the failure was reported; the journal is kept
  close(fd);
  archive_test_lock_wait(-1);
  assert_true(file_exists(jpath));
  assert_int_equal(done_in_file(path), 3);
  // the next open writes them (a resume applies the journal)
  assert_ok(archive_open_write(path, spec, ARCHIVE_RESUME, NULL, &a));
  assert_int_equal(done_in_file(path), 5);
  assert_ok(archive_close(a));
  spec_free(spec);
  remove_tree(dir);
}

static void test_reader_waits_for_writer(void **state) {
  (void)state;
  char text[1024], dir[256], path[320];
  synth_spec_text(text, sizeof text, 16, 32, 0);
  cs_spec *spec = spec_from(text);
  make_dir(dir, sizeof dir, "livewait");
  snprintf(path, sizeof path, "%s/a.h5", dir);
  cs_archive *a;
  assert_ok(archive_open_write(path, spec, ARCHIVE_CREATE, NULL, &a));
  add(a, spec, 0);
  assert_ok(archive_close(a));

  // a writer in another process holds the exclusive lock for 0.6 s
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(path, O_RDONLY);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
    if (write(ready[1], "x", 1) != 1) _exit(1);
    usleep(600000);
    _exit(0);
  }
  char x;
  assert_int_equal(read(ready[0], &x, 1), 1);
  double t0 = cs_monotonic_seconds();
  assert_int_equal(done_in_file(path), 1);  // waited, then read
  assert_true(cs_monotonic_seconds() - t0 >= 0.4);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  // held longer than a reader waits: "being written", not "damaged"
  archive_test_lock_wait(0.2);
  int fd = hold(path, LOCK_EX);
  cs_archive_summary s;
  assert_int_equal(archive_summary(path, &s), CS_ERR_IO);
  assert_has(cs_error_message(), "is being written");
  assert_has(cs_error_message(), "not damaged");
  int64_t damaged = -1;
  assert_int_equal(archive_check(path, NULL, NULL, &damaged), CS_ERR_IO);
  assert_has(cs_error_message(), "is being written");
  close(fd);
  archive_test_lock_wait(-1);
  assert_ok(archive_check(path, NULL, NULL, &damaged));
  assert_int_equal(damaged, 0);
  close(ready[0]), close(ready[1]);
  spec_free(spec);
  remove_tree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reader_defers_writer),
      cmocka_unit_test(test_reader_waits_for_writer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_archive_tables.c — the table of per-cell archive tables
 * (ARCHIVE_CELL_TABLES, src/archive/tables/archive_tables.c; the recipe "A new
 * per-cell archive table" in docs/ARCHITECTURE.md): every row is whole and
 * used — its row type is the row struct keyed by cell_id, a written result
 * puts rows_of rows into its dataset (the fixture result exercises every
 * table), its rows come back as the result they were made from and every
 * column of them reaches its comparison, and an archive whose
 * format_version predates a table reads as having no rows in it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "archive_fixtures.h"
#include "fixtures.h"

#include "../src/archive/archive_internal.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Cell 2 of tests/specs/demo-small.ini has depth 2, as the result below. */
#define CELL 2
#define DEPTH 2

/* Every row: a distinct name found by archive_cell_table_named, a version
 * this build reads, a row type of row_bytes whose first member is the
 * int64 cell_id, the operations each table must have, and rows -> result
 * either both given or both absent (the /points arrays read the rest). */
static void test_rows_whole(void **state) {
  (void)state;
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    assert_ptr_equal(archive_cell_table_named(T->name), T);
    for (int u = 0; u < t; u++) assert_string_not_equal(T->name, ARCHIVE_CELL_TABLES[u].name);
    assert_true(T->since >= ARCHIVE_FORMAT_VERSION_MIN && T->since <= ARCHIVE_FORMAT_VERSION);
    assert_non_null(T->row_type), assert_non_null(T->rows_of), assert_non_null(T->to_rows);
    assert_non_null(T->same);
    assert_true(!T->alloc == !T->place);
    assert_true(T->max_per_cell >= 0);
    hid_t mt = T->row_type();
    assert_true(mt >= 0);
    assert_int_equal(H5Tget_size(mt), T->row_bytes);
    char *first = H5Tget_member_name(mt, 0);
    assert_string_equal(first, "cell_id");
    H5free_memory(first);
    assert_int_equal(H5Tget_member_offset(mt, 0), 0);
    hid_t id = H5Tget_member_type(mt, 0);
    assert_true(H5Tequal(id, H5T_NATIVE_INT64) > 0);
    H5Tclose(id);
    H5Tclose(mt);
  }
  assert_null(archive_cell_table_named("cells"));
  assert_null(archive_cell_table_named("runs"));
}

/* The member names of a dataset's type, comma-joined (file) or of a type. */
static void type_names(hid_t t, char *out, size_t len) {
  out[0] = '\0';
  for (int i = 0; i < H5Tget_nmembers(t); i++) {
    char *name = H5Tget_member_name(t, (unsigned)i);
    snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", name);
    H5free_memory(name);
  }
}

/* A done result with points written through the writer and one through the
 * bulk builder: every table's dataset holds rows_of rows of it (more than
 * none: a table the fixture gives no rows fails here), committed, with the
 * columns of its row type. */
static void check_tables_of(const char *path, const cs_cell_result *r) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    int k = T->rows_of(r);
    if (k <= 0) fail_msg("the fixture result has no rows in /%s: give it some", T->name);
    hid_t ds = H5Dopen2(f, T->name, H5P_DEFAULT);
    assert_true(ds >= 0);
    assert_int_equal(archive_table_length(ds), (hsize_t)k);
    int64_t committed = -1;
    assert_int_equal(archive_attr_read_i64(ds, "committed_rows", &committed, NULL), 0);
    assert_int_equal(committed, k);
    char file_cols[4096], mem_cols[4096];
    hid_t ft = H5Dget_type(ds), mt = T->row_type();
    type_names(ft, file_cols, sizeof file_cols);
    type_names(mt, mem_cols, sizeof mem_cols);
    assert_string_equal(file_cols, mem_cols);
    H5Tclose(ft), H5Tclose(mt), H5Dclose(ds);
  }
  H5Fclose(f);
}

static void test_every_table_written(void **state) {
  (void)state;
  char dir[64], path[128], built[160];
  cs_spec *spec = scratch(dir, path, "tables", "w.h5", NULL);
  cs_cell_result r = known_result(CELL, DEPTH, CELL_DONE, WITH_POINTS, 0);
  cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
  write_ok(a, &r);
  close_ok(a);
  check_tables_of(path, &r);
  // the bulk builder: the same rows
  snprintf(built, sizeof built, "%s/b.h5", dir);
  cs_archive_builder *b = NULL;
  assert_ok(archive_build_begin(built, spec, NULL, 0, &b));
  assert_ok(archive_build_result(b, &r));
  assert_ok(archive_build_finish(b));
  check_tables_of(built, &r);
  int64_t n = 0;
  cs_cell_result *res = read_ok(built, &n);
  assert_same_result(&res[CELL], &r);
  free_results(res, n), free(res);
  free_results(&r, 1);
  spec_free(spec);
  remove_tree(dir);
}

/* A table's rows of r (archive_table_rows_add, the conversion the writer
 * and the builder share), a copy of t's rows into *rows. */
static size_t rows_of_table(const cs_cell_result *r, int t, unsigned char **rows) {
  archive_table_rows o;
  memset(&o, 0, sizeof o);
  assert_ok(archive_table_rows_add(&o, r));
  size_t n = o.n[t], rb = ARCHIVE_CELL_TABLES[t].row_bytes;
  *rows = malloc(n * rb + 1);
  assert_non_null(*rows);
  memcpy(*rows, o.rows[t], n * rb);
  archive_table_rows_free(&o);
  return n;
}

/* rows -> result of table t: a fresh result of cell_id (and status) from
 * n rows; NULL, or why a row does not fit. */
static const char *place_rows(int t, const unsigned char *rows, size_t n, cs_cell_result *q) {
  const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
  assert_ok(T->alloc(q, (int64_t)n, "test"));
  unsigned char *seen = calloc(n + 1, 1);
  const char *why = NULL;
  for (size_t k = 0; k < n && !why; k++) why = T->place(q, rows + k * T->row_bytes, (int64_t)k, seen);
  free(seen);
  return why;
}

/* result -> rows -> result gives back what the table holds (its
 * comparison says the same), and each column of its row type but cell_id,
 * changed in the first row, makes the rows refused or the comparison
 * differ: no column is left out of rows -> result or of the comparison. */
static void test_rows_round_trip(void **state) {
  (void)state;
  archive_budget_begin("/nonexistent");
  cs_cell_result r = known_result(CELL, DEPTH, CELL_DONE, WITH_POINTS, 0);
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    if (!T->place) continue;  // rows of the /points arrays: test_archive's round trip
    unsigned char *rows;
    size_t n = rows_of_table(&r, t, &rows);
    assert_int_equal(n, (size_t)T->rows_of(&r));
    /* the depth the /curvature rows give, read before the tables after it */
    cs_cell_result q = {.cell_id = CELL, .status = CELL_DONE, .depth = DEPTH};
    assert_null(place_rows(t, rows, n, &q));
    assert_true(T->same(&r, &q));
    result_free(&q);
    hid_t mt = T->row_type();
    for (int i = 1; i < H5Tget_nmembers(mt); i++) {
      size_t off = H5Tget_member_offset(mt, (unsigned)i);
      char *name = H5Tget_member_name(mt, (unsigned)i);
      rows[off] ^= 1;  // the lowest bit of an integer or a double's mantissa, a string's first byte
      cs_cell_result p = {.cell_id = CELL, .status = CELL_DONE, .depth = DEPTH};
      const char *why = place_rows(t, rows, n, &p);
      if (!why && T->same(&r, &p))
        fail_msg("/%s column %s changed, yet its rows read back as the same result", T->name, name);
      rows[off] ^= 1;
      result_free(&p);
      H5free_memory(name);
    }
    H5Tclose(mt);
    free(rows);
  }
  free_results(&r, 1);
}

/* An archive whose format_version predates a table (its dataset absent, the
 * version stamped one lower): read, summarised, checked and salvaged as
 * having no rows in it, not as damage. For every table added after the
 * oldest version read. */
static void test_absent_when_older(void **state) {
  (void)state;
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    if (T->since <= ARCHIVE_FORMAT_VERSION_MIN) continue;
    char dir[64], path[128], out[160];
    cs_spec *spec = scratch(dir, path, "older", "o.h5", NULL);
    cs_cell_result r = known_result(CELL, DEPTH, CELL_DONE, 0, 0);
    cs_archive *a = open_ok(path, spec, ARCHIVE_CREATE, NULL);
    write_ok(a, &r);
    close_ok(a);
    char journal[160];
    snprintf(journal, sizeof journal, "%s.journal", path);
    remove(journal);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(H5Ldelete(f, T->name, H5P_DEFAULT) >= 0);
    hid_t at = H5Aopen(f, "format_version", H5P_DEFAULT);
    int32_t v = T->since - 1;
    assert_true(H5Awrite(at, H5T_NATIVE_INT32, &v) >= 0);
    H5Aclose(at), H5Fclose(f);
    int64_t n = 0;
    cs_cell_result *res = read_ok(path, &n);
    assert_int_equal(res[CELL].status, CELL_DONE);
    assert_int_equal(T->rows_of(&res[CELL]), 0);
    free_results(res, n), free(res);
    cs_archive_summary s;
    assert_ok(archive_summary(path, &s));
    assert_int_equal(s.done, 1);
    int64_t damaged = -1;
    assert_ok(archive_check(path, NULL, NULL, &damaged));
    assert_int_equal(damaged, 0);
    snprintf(out, sizeof out, "%s/s.h5", dir);
    cs_archive_salvage_report rep;
    assert_ok(archive_salvage(out, path, 0, NULL, NULL, &rep));
    assert_int_equal(rep.kept, 1);
    assert_int_equal(rep.damaged, 0);
    free_results(&r, 1);
    spec_free(spec);
    remove_tree(dir);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_whole),
      cmocka_unit_test(test_every_table_written),
      cmocka_unit_test(test_rows_round_trip),
      cmocka_unit_test(test_absent_when_older),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

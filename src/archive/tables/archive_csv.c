/* archive_csv.c — the per-cell tables marked export_csv as CSV text
 * (archive.h; analysis/README.md, "Export"): the columns are the members of
 * the table's memory row type, in its order, so a column added to a table
 * reaches export with no edit here; the values are the rows the writer
 * would store (the table's to_rows), never a second conversion. */
#include "archive_internal.h"

#include "curvsweep/csv.h"
#include "curvsweep/error.h"

#include <stdlib.h>
#include <string.h>

const char *archive_csv_table(int i) {
  for (int t = 0, k = 0; t < ARCHIVE_N_CELL_TABLES; t++)
    if (ARCHIVE_CELL_TABLES[t].export_csv && k++ == i) return ARCHIVE_CELL_TABLES[t].name;
  return NULL;
}

static const archive_cell_table *archive_csv_of(const char *table) {
  const archive_cell_table *T = archive_cell_table_named(table);
  return T && T->export_csv ? T : NULL;
}

/* The members of T's row type after cell_id, one call of fn each with its
 * name, offset in the row and HDF5 class and size. */
typedef void (*archive_csv_member_fn)(FILE *f, const char *name, const unsigned char *at, H5T_class_t cls,
                                      size_t size);

static int archive_csv_members(FILE *f, const archive_cell_table *T, const unsigned char *row,
                               archive_csv_member_fn fn) {
  hid_t t = T->row_type();
  if (t < 0) return cs_error(CS_ERR_IO, "the row type of /%s cannot be made", T->name);
  int n = H5Tget_nmembers(t), rc = n < 0 ? cs_error(CS_ERR_IO, "the row type of /%s has no members", T->name)
                                         : CS_OK;
  for (int i = 0; !rc && i < n; i++) {
    char *name = H5Tget_member_name(t, (unsigned)i);
    hid_t m = H5Tget_member_type(t, (unsigned)i);
    if (!name || m < 0)
      rc = cs_error(CS_ERR_IO, "member %d of the row type of /%s cannot be read", i, T->name);
    else if (strcmp(name, "cell_id"))
      fn(f, name, row ? row + H5Tget_member_offset(t, (unsigned)i) : NULL, H5Tget_class(m), H5Tget_size(m));
    if (m >= 0) H5Tclose(m);
    H5free_memory(name);
  }
  H5Tclose(t);
  return rc;
}

static void archive_csv_name(FILE *f, const char *name, const unsigned char *at, H5T_class_t cls, size_t size) {
  (void)at, (void)cls, (void)size;
  fprintf(f, ",%s", name);
}

/* A value: the row types hold native int32, int64 and double members only. */
static void archive_csv_value(FILE *f, const char *name, const unsigned char *at, H5T_class_t cls,
                              size_t size) {
  (void)name;
  if (cls == H5T_FLOAT) {
    double v;
    memcpy(&v, at, sizeof v);
    cs_csv_double(f, v);
  } else if (size == sizeof(int64_t)) {
    int64_t v;
    memcpy(&v, at, sizeof v);
    fprintf(f, ",%lld", (long long)v);
  } else {
    int32_t v;
    memcpy(&v, at, sizeof v);
    fprintf(f, ",%d", (int)v);
  }
}

int archive_csv_header(FILE *f, const char *table) {
  const archive_cell_table *T = archive_csv_of(table);
  if (!T) return cs_error(CS_ERR_INPUT, "no per-cell table %s to export", table);
  return archive_csv_members(f, T, NULL, archive_csv_name);
}

int archive_csv_rows(const char *table, const cs_cell_result *r) {
  const archive_cell_table *T = archive_csv_of(table);
  return T ? T->rows_of(r) : 0;
}

int archive_csv_row(FILE *f, const char *table, const cs_cell_result *r, int k) {
  const archive_cell_table *T = archive_csv_of(table);
  if (!T) return cs_error(CS_ERR_INPUT, "no per-cell table %s to export", table);
  int n = T->rows_of(r);
  if (k < 0 || k >= n)
    return cs_error(CS_ERR_INPUT, "cell %lld has no row %d in /%s", (long long)r->cell_id, k, table);
  unsigned char *rows = calloc((size_t)n, T->row_bytes);
  if (!rows) return cs_error(CS_ERR_NOMEM, "no memory for the /%s rows of cell %lld", table, (long long)r->cell_id);
  int rc = T->to_rows(r, rows, NULL);
  if (!rc) rc = archive_csv_members(f, T, rows + (size_t)k * T->row_bytes, archive_csv_value);
  free(rows);
  return rc;
}

/* archive_write.c — checked results (or one /runs row) applied to an open
 * archive file in batches, each ending in the commit point of
 * docs/ARCHIVE.md ("Write protocol", step 4): groups written and rows
 * appended (one write per table per batch), flush, then the /cells rows
 * and committed_rows. */
#include "archive_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A result the archive can hold: a finished status and consistent arrays. */
/* Every per-point array of a result that carries points is present. */
static int archive_has_point_arrays(const cs_cell_result *r) {
  double **f[RESULT_N_POINT_ARRAYS];
  result_point_arrays((cs_cell_result *)r, f);
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
    if (!*f[k]) return 0;
  return r->pt_class != NULL;
}

int archive_check_result(const cs_archive *a, const cs_cell_result *r) {
  if (r->status != CELL_DONE && r->status != CELL_FAILED && r->status != CELL_DIVERGED)
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": a result must be done, failed or diverged "
                    "(status %d)", a->path, r->cell_id, (int)r->status);
  if (archive_find_row(a, r->cell_id) < 0)
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 " is not listed in this archive (another "
                    "shard's cell?)", a->path, r->cell_id);
  return archive_check_result_shape(a->path, r);
}

int archive_check_result_shape(const char *path, const cs_cell_result *r) {
  if (r->depth < 0 || (r->depth > 0 && !r->curv) || r->n_curve < 0 || (r->n_curve > 0 && !r->curve))
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": inconsistent result (depth %d, %d curve "
                    "points)", path, r->cell_id, r->depth, r->n_curve);
  if (r->n_gates < 0 || r->n_gates > r->depth || (r->n_gates > 0 && !r->gates))
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": inconsistent gate scores (%d blocks of "
                    "%d)", path, r->cell_id, r->n_gates, r->depth);
  if (r->pt_x && (r->n_points <= 0 || r->m <= 0 ||
                  (r->depth > 0 && !archive_has_point_arrays(r))))
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": inconsistent per-point arrays", path,
                    r->cell_id);
  CS_CHECK(archive_check_fields(path, r));
  for (int i = 0; i < r->n_tensors; i++) {
    const cs_tensor *T = &r->tensors[i];
    if (archive_check_tensor_name(T->name) != 0 || T->rows < 0 || T->cols < 0 ||
        ((int64_t)T->rows * T->cols > 0 && !T->v))
      return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": bad parameter tensor %d '%.48s' "
                      "(%d x %d)", path, r->cell_id, i, T->name, T->rows, T->cols);
  }
  return CS_OK;
}

/* Remove /params/<id> and /fields/<id> if present (a rewrite, or leftovers
 * of an interrupted write; a cell's /points are rows of /points/index,
 * removed with its other rows by archive_undo_cell). */
static int archive_delete_cell_groups(hid_t file, int64_t cell_id, const char *path) {
  for (int k = 0; k < ARCHIVE_N_CELL_GROUPS; k++) {
    const char *const *tops = ARCHIVE_CELL_GROUPS;
    if (!archive_link_exists(file, tops[k])) continue;
    char name[64];
    snprintf(name, sizeof name, "%s/%" PRId64, tops[k], cell_id);
    if (archive_link_exists(file, name) && H5Ldelete(file, name, H5P_DEFAULT) < 0)
      return archive_h5_error(CS_ERR_IO, "%s: cannot remove /%s", path, name);
  }
  return CS_OK;
}

/* Remove every row of cell_id from a table (rewrite of a finished cell;
 * rare): read all, keep the others, write back, shrink. */
static int archive_table_remove_cell(hid_t file, const char *name, hid_t mtype, int64_t cell_id,
                                     const char *path) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot open /%s", path, name);
  size_t rb = H5Tget_size(mtype);
  hsize_t n = archive_table_length(ds), kept = 0;
  unsigned char *rows = NULL;
  int rc = cs_calloc_bytes((void **)&rows, n ? n : 1, rb);
  if (!rc && archive_table_io(ds, mtype, 0, n, rows, 0) < 0)
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot read /%s", path, name);
  for (hsize_t i = 0; !rc && i < n; i++) {
    int64_t id;
    memcpy(&id, rows + i * rb, 8);  // cell_id is the first member of every row struct
    if (id != cell_id) memmove(rows + kept * rb, rows + i * rb, rb), kept++;
  }
  if (!rc && kept < n &&
      (archive_table_io(ds, mtype, 0, kept, rows, 1) < 0 || H5Dset_extent(ds, &kept) < 0))
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot rewrite /%s", path, name);
  if (!rc) rc = archive_attr_write_i64(ds, "committed_rows", H5T_STD_I64LE, (int64_t)kept, path);
  free(rows);
  H5Dclose(ds);
  return rc;
}

static void archive_cell_row_from_result(archive_cell_row *row, const cs_cell_result *r) {
  memset(row, 0, sizeof *row);
  row->cell_id = r->cell_id;
  cs_copy_str(row->status, sizeof row->status, result_status_name(r->status));
  row->rank = r->rank;
  row->attempts = r->attempts;
  row->wall_s = r->wall_s;
  row->train_loss = r->train_loss;
  row->train_acc = r->train_acc;
  row->test_acc = r->test_acc;
  row->n_params = r->n_params;
  cs_copy_str(row->message, sizeof row->message, r->message);
}

/* Write /cells rows: rows[i] to row index idx[i] (distinct), in one
 * H5Dwrite with an element selection. */
static int archive_write_cell_rows(hid_t file, const int64_t *idx, const archive_cell_row *rows,
                                   size_t n, const char *path) {
  if (n == 0) return CS_OK;
  hid_t ds = H5Dopen2(file, "cells", H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot open /cells", path);
  hid_t mt = archive_cell_row_type(), fs = H5Dget_space(ds);
  hsize_t count = n;
  hid_t ms = H5Screate_simple(1, &count, NULL);
  hsize_t *coord = NULL;
  int rc = CS_CALLOC(coord, n);
  for (size_t i = 0; !rc && i < n; i++) coord[i] = (hsize_t)idx[i];
  if (!rc && (mt < 0 || fs < 0 || ms < 0 || H5Sselect_elements(fs, H5S_SELECT_SET, n, coord) < 0 ||
              H5Dwrite(ds, mt, ms, fs, H5P_DEFAULT, rows) < 0))
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write %zu /cells rows (first: row %" PRId64 ")",
                          path, n, idx[0]);
  free(coord);
  archive_h5_close_id(&ms, H5Sclose);
  archive_h5_close_id(&fs, H5Sclose);
  archive_h5_close_id(&mt, H5Tclose);
  archive_h5_close_id(&ds, H5Dclose);
  return rc;
}

/* A rewrite of a finished cell: mark it pending (flushed), then remove its
 * rows of every per-cell table (its values in the /points arrays stay,
 * unreferenced). */
static int archive_undo_cell(cs_archive *a, hid_t file, int64_t row, int64_t cell_id) {
  const char *path = a->path;
  archive_cell_row cr;
  memset(&cr, 0, sizeof cr);
  cr.cell_id = cell_id;
  cr.rank = -1;
  cr.wall_s = cr.train_loss = cr.train_acc = cr.test_acc = NAN;
  cs_copy_str(cr.status, sizeof cr.status, "pending");
  CS_CHECK(archive_write_cell_rows(file, &row, &cr, 1, path));
  a->row_status[row] = CELL_PENDING;
  if (H5Fflush(file, H5F_SCOPE_LOCAL) < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot flush", path);
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    hid_t mt = ARCHIVE_CELL_TABLES[t].row_type();
    int rc = archive_table_remove_cell(file, ARCHIVE_CELL_TABLES[t].name, mt, cell_id, path);
    H5Tclose(mt);
    CS_CHECK(rc);
  }
  return CS_OK;
}

static int archive_grow(void **p, size_t *cap, size_t need, size_t size) {
  return archive_grow_buffer(p, cap, need, size, 64, "batching archive rows");
}

void archive_batch_free(archive_batch *b) {
  free(b->cells), free(b->cell_idx), free(b->in_batch);
  archive_table_rows_free(&b->tabs);
  memset(b, 0, sizeof *b);
}

/* The commit point of a batch (docs/ARCHIVE.md, "Write protocol"): its
 * per-point arrays and its rows of every per-cell table appended in one
 * write per dataset, flush, then every /cells row in one write, then
 * committed_rows. The batch is empty afterwards. */
int archive_batch_commit(cs_archive *a, hid_t file, archive_batch *b) {
  const char *path = a->path;
  if (b->n_cells == 0) return CS_OK;
  CS_CHECK(archive_table_rows_flush(file, &b->tabs, path));
  if (H5Fflush(file, H5F_SCOPE_LOCAL) < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot flush", path);
  CS_CHECK(archive_write_cell_rows(file, b->cell_idx, b->cells, b->n_cells, path));
  CS_CHECK(archive_tables_commit(file, path));
  for (size_t i = 0; i < b->n_cells; i++) {
    int64_t row = b->cell_idx[i];
    a->row_status[row] = (unsigned char)archive_status_parse(b->cells[i].status);
    a->row_attempts[row] = b->cells[i].attempts;
    b->in_batch[row] = 0;
  }
  b->n_cells = 0;
  return CS_OK;
}

/* Add one checked result to the batch: its /params group is written now
 * (leftovers of an interrupted write removed first), its per-point arrays,
 * rows of the per-cell tables and /cells row kept for the commit. A rewrite of a finished cell, or
 * a second result of a cell in the batch, commits the batch first. */
int archive_batch_add(cs_archive *a, hid_t file, archive_batch *b, const cs_cell_result *r) {
  const char *path = a->path;
  int64_t row = archive_find_row(a, r->cell_id);
  if (!b->in_batch) CS_CHECK(CS_CALLOC(b->in_batch, a->n_rows ? a->n_rows : 1));
  if (b->in_batch[row]) CS_CHECK(archive_batch_commit(a, file, b));
  if (a->row_status[row] != CELL_PENDING) {
    CS_CHECK(archive_batch_commit(a, file, b));
    CS_CHECK(archive_undo_cell(a, file, row, r->cell_id));
  }
  CS_CHECK(archive_delete_cell_groups(file, r->cell_id, path));
  if (r->n_tensors > 0) CS_CHECK(archive_write_params(file, r, path));
  if (r->fd_pred) CS_CHECK(archive_write_fields(file, r, path));
  CS_CHECK(archive_grow((void **)&b->cells, &b->cap_cells, b->n_cells + 1, sizeof *b->cells));
  CS_CHECK(archive_grow((void **)&b->cell_idx, &b->cap_idx, b->n_cells + 1, sizeof *b->cell_idx));
  CS_CHECK(archive_table_rows_add(&b->tabs, r));
  archive_cell_row_from_result(&b->cells[b->n_cells], r);
  b->cell_idx[b->n_cells++] = row;
  b->in_batch[row] = 1;
  return CS_OK;
}

/* Write one checked result into the open file: a batch of one. */
int archive_apply_result(cs_archive *a, hid_t file, const cs_cell_result *r) {
  archive_batch b;
  memset(&b, 0, sizeof b);
  int rc = archive_batch_add(a, file, &b, r);
  if (!rc) rc = archive_batch_commit(a, file, &b);
  archive_batch_free(&b);
  return rc;
}

/* /runs row: append (row == n_runs) or rewrite in place. */
int archive_apply_run(cs_archive *a, hid_t file, int64_t row, const cs_run_info *run) {
  hid_t ds = H5Dopen2(file, "runs", H5P_DEFAULT), mt = archive_run_row_type();
  int rc = CS_OK;
  if (ds < 0) rc = archive_h5_error(CS_ERR_IO, "%s: cannot open /runs", a->path);
  else if (row >= (int64_t)archive_table_length(ds)) {
    rc = archive_table_append(ds, mt, run, 1, a->path, "runs");
    if (!rc) row = (int64_t)archive_table_length(ds) - 1;
  } else if (archive_table_io(ds, mt, (hsize_t)row, 1, (void *)run, 1) < 0) {
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write /runs row %" PRId64, a->path, row);
  }
  if (!rc) a->n_runs = (int64_t)archive_table_length(ds);
  H5Tclose(mt);
  archive_h5_close_id(&ds, H5Dclose);
  return rc;
}

int archive_read_run(hid_t file, int64_t row, cs_run_info *run) {
  hid_t ds = H5Dopen2(file, "runs", H5P_DEFAULT), mt = archive_run_row_type();
  int ok = ds >= 0 && archive_table_io(ds, mt, (hsize_t)row, 1, run, 0) == 0;
  H5Tclose(mt);
  if (ds >= 0) H5Dclose(ds);
  return ok ? 0 : -1;
}

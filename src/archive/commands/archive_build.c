/* archive_build.c — bulk build of a new, complete archive from a stream of
 * results (merge, synthetic archives of the benches): no journal and no
 * per-result commit point, since nobody sees the file before it is
 * complete. The archive is created pending under a temporary name beside
 * its path (archive_create_temp), kept open while results arrive:
 *   per-cell tables      rows buffered and appended a block at a time, with
 *   (archive_tables.c)   the /points arrays they index (a few MiB at a
 *                        time), by the conversion the writer's batches use
 *   /params, /fields     a group written per result (archive_params.c,
 *                        archive_fields.c; a merge writes what it read and
 *                        checked, docs/SECURITY.md "Archives")
 *   /cells               result columns kept compactly in memory (no
 *                        message text for done cells) and written a block of
 *                        rows at a time at the end, then committed_rows
 * then flushed, closed, synced and renamed into place. Per-result cost is a
 * few appends to memory (plus the /params group, when saved); the layout is the one of
 * docs/ARCHIVE.md, the rows those archive_apply_result would write
 * (archive_table_rows_add serves both). */
#include "archive_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARCHIVE_BUILD_BUFFER_ROWS 8192 /* rows of a per-cell table per append */
#define ARCHIVE_BUILD_POINTS_BYTES ((size_t)8 << 20) /* staged /points bytes per append */

/* The /cells result columns of a finished row, without the message. */
typedef struct {
  int32_t rank, attempts;
  double wall_s, train_loss, train_acc, test_acc;
  int64_t n_params;
} archive_build_row;

struct cs_archive_builder {
  cs_archive *a;            /* rows of the output; a->path is the final path */
  char *tmp;                /* the temporary file being filled */
  int overwrite;
  hid_t file;
  archive_table_rows tabs;  /* pending rows of the per-cell tables and /points arrays */
  archive_build_row *rows;  /* (a->n_rows) result columns of finished rows */
  char **message;           /* (a->n_rows) message of a finished row, NULL when empty */
  cs_run_info *runs;
  int64_t n_runs, cap_runs;
};

void archive_build_abort(cs_archive_builder *b) {
  ARCHIVE_QUIET;
  if (!b) return;
  archive_h5_close_id(&b->file, H5Fclose);
  if (b->tmp) unlink(b->tmp);
  for (int64_t i = 0; b->message && b->a && i < b->a->n_rows; i++) free(b->message[i]);
  free(b->message), free(b->rows), free(b->runs), free(b->tmp);
  archive_table_rows_free(&b->tabs);
  archive_free(b->a);
  free(b);
}

/* Fill a new builder: its rows, buffers and the temporary archive, open
 * (b is freed by the caller, archive_build_abort, when this fails). */
static int archive_build_setup(cs_archive_builder *b, const char *path, const cs_spec *spec,
                               const unsigned char *mask, int overwrite) {
  b->overwrite = overwrite;
  if (overwrite) CS_CHECK(archive_check_replaceable(path));
  CS_CHECK(archive_new(path, &b->a));
  cs_copy_str(b->a->spec_sha256, sizeof b->a->spec_sha256, spec_canonical_sha256(spec));
  CS_CHECK(archive_rows_from_mask(b->a, spec, mask));
  int64_t n = b->a->n_rows;
  CS_CHECK(CS_CALLOC(b->rows, n ? n : 1));
  CS_CHECK(CS_CALLOC(b->message, n ? n : 1));
  if (spec_sweep(spec)->save_points)
    CS_CHECK(archive_points_stage_reserve(&b->tabs.pts, ARCHIVE_BUILD_POINTS_BYTES));
  b->a->table_chunk_bytes = ARCHIVE_BULK_CHUNK_BYTES;
  CS_CHECK(archive_create_temp(b->a, spec, &b->tmp));
  b->file = archive_h5_open(b->tmp, H5F_ACC_RDWR);
  if (b->file < 0) return archive_h5_error(CS_ERR_IO, "cannot open %s for writing", b->tmp);
  return CS_OK;
}

int archive_build_begin(const char *path, const cs_spec *spec, const unsigned char *mask,
                        int overwrite, cs_archive_builder **out) {
  ARCHIVE_QUIET;
  cs_archive_builder *b;
  *out = NULL;
  CS_CHECK(CS_CALLOC(b, 1));
  b->file = H5I_INVALID_HID;
  int rc = archive_build_setup(b, path, spec, mask, overwrite);
  if (rc) archive_build_abort(b);
  else *out = b;
  return rc;
}

int archive_build_result(cs_archive_builder *b, const cs_cell_result *r) {
  ARCHIVE_QUIET;
  CS_CHECK(archive_check_result(b->a, r));
  int64_t row = archive_find_row(b->a, r->cell_id);
  if (b->a->row_status[row] != CELL_PENDING)
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 " given twice to the archive builder",
                    b->a->path, r->cell_id);
  // the rows, appended a block at a time (a cell's rows stay together)
  CS_CHECK(archive_table_rows_add(&b->tabs, r));
  if (archive_table_rows_most(&b->tabs) >= ARCHIVE_BUILD_BUFFER_ROWS ||
      archive_points_stage_bytes(&b->tabs.pts) >= ARCHIVE_BUILD_POINTS_BYTES)
    CS_CHECK(archive_table_rows_flush(b->file, &b->tabs, b->tmp));
  if (r->n_tensors > 0) CS_CHECK(archive_write_params(b->file, r, b->tmp));
  if (r->fd_pred) CS_CHECK(archive_write_fields(b->file, r, b->tmp));
  b->rows[row] = (archive_build_row){r->rank, r->attempts, r->wall_s, r->train_loss,
                                     r->train_acc, r->test_acc, r->n_params};
  if (r->message[0]) {
    b->message[row] = cs_strdup_printf("%.*s", ARCHIVE_MESSAGE_BYTES - 1, r->message);
    if (!b->message[row]) return cs_error(CS_ERR_NOMEM, "out of memory");
  }
  b->a->row_status[row] = (unsigned char)r->status;
  b->a->row_attempts[row] = r->attempts;
  return CS_OK;
}


int archive_build_run(cs_archive_builder *b, const cs_run_info *run) {
  if (b->n_runs == b->cap_runs) {
    int64_t cap = b->cap_runs ? 2 * b->cap_runs : 16;
    cs_run_info *p = realloc(b->runs, (size_t)cap * sizeof *p);
    if (!p) return cs_error(CS_ERR_NOMEM, "out of memory");
    b->runs = p, b->cap_runs = cap;
  }
  b->runs[b->n_runs++] = *run;
  return CS_OK;
}

/* /cells result columns, a block of rows at a time: finished rows from
 * b->rows, pending ones as created (rank -1, metrics NaN). */
static int archive_build_write_cells(cs_archive_builder *b) {
  hid_t ds = H5Dopen2(b->file, "cells", H5P_DEFAULT), mt = archive_cell_row_type();
  archive_cell_row *buf = NULL;
  int64_t n = b->a->n_rows;
  int rc = ds < 0 ? archive_h5_error(CS_ERR_IO, "%s: cannot open /cells", b->tmp) : CS_OK;
  if (!rc) rc = CS_CALLOC(buf, n < ARCHIVE_BLOCK_ROWS ? (n ? n : 1) : ARCHIVE_BLOCK_ROWS);
  for (int64_t s = 0; !rc && s < n; s += ARCHIVE_BLOCK_ROWS) {
    int64_t k = n - s < ARCHIVE_BLOCK_ROWS ? n - s : ARCHIVE_BLOCK_ROWS;
    memset(buf, 0, (size_t)k * sizeof *buf);
    for (int64_t i = 0; i < k; i++) {
      archive_cell_row *c = &buf[i];
      const archive_build_row *f = &b->rows[s + i];
      int status = b->a->row_status[s + i];
      c->cell_id = b->a->row_cell[s + i];
      cs_copy_str(c->status, sizeof c->status, result_status_name((cs_cell_status)status));
      if (status == CELL_PENDING) {
        c->rank = -1;
        c->wall_s = c->train_loss = c->train_acc = c->test_acc = NAN;
        continue;
      }
      c->rank = f->rank, c->attempts = f->attempts, c->wall_s = f->wall_s;
      c->train_loss = f->train_loss, c->train_acc = f->train_acc, c->test_acc = f->test_acc;
      c->n_params = f->n_params;
      if (b->message[s + i]) cs_copy_str(c->message, sizeof c->message, b->message[s + i]);
    }
    if (archive_table_io(ds, mt, (hsize_t)s, (hsize_t)k, buf, 1) < 0)
      rc = archive_h5_error(CS_ERR_IO, "%s: cannot write /cells", b->tmp);
  }
  free(buf);
  H5Tclose(mt);
  archive_h5_close_id(&ds, H5Dclose);
  return rc;
}

static int archive_build_seal(cs_archive_builder *b) {
  CS_CHECK(archive_table_rows_flush(b->file, &b->tabs, b->tmp));
  CS_CHECK(archive_tables_commit(b->file, b->tmp));
  CS_CHECK(archive_build_write_cells(b));
  for (int64_t k = 0; k < b->n_runs; k++)
    CS_CHECK(archive_apply_run(b->a, b->file, b->a->n_runs, &b->runs[k]));
  herr_t e = H5Fclose(b->file);
  b->file = H5I_INVALID_HID;
  if (e < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot close", b->tmp);
  return cs_fsync_file(b->tmp);
}

int archive_build_close(cs_archive_builder *b, char **tmp) {
  ARCHIVE_QUIET;
  *tmp = NULL;
  int rc = archive_build_seal(b);
  if (!rc) *tmp = b->tmp, b->tmp = NULL;
  archive_build_abort(b);
  return rc;
}

int archive_build_finish(cs_archive_builder *b) {
  ARCHIVE_QUIET;
  int rc = archive_build_seal(b);
  // a stale journal of a replaced archive must not be replayed into it
  if (!rc && b->overwrite && cs_file_exists(b->a->journal_path) && unlink(b->a->journal_path) != 0)
    rc = cs_error(CS_ERR_IO, "cannot remove the old journal %s: %s", b->a->journal_path,
                  strerror(errno));
  if (!rc) rc = archive_rename_into_place(b->tmp, b->a->path);
  if (!rc) free(b->tmp), b->tmp = NULL;  // in place: nothing to remove
  archive_build_abort(b);
  return rc;
}

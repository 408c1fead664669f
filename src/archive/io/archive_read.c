/* archive_read.c — read-back of an archive: an open reader (probed, its
 * /spec loaded, its /cells rows), the summary (`curvsweep info`), the /spec
 * text, and every result (tables a block at a time, then /points, /params
 * and /fields). Readers ignore rows beyond committed_rows
 * (docs/ARCHIVE.md). */
#include "archive_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void archive_reader_close(archive_reader *rd) {
  if (rd->file >= 0) archive_h5_fclose(rd->file);
  archive_free(rd->a);
  if (rd->spec) spec_free(rd->spec);
  memset(rd, 0, sizeof *rd);
  rd->file = H5I_INVALID_HID;
}

/* The spec of the open archive, from /spec: what it may hold (the cells
 * of its grid, their depth, points and fields; docs/SECURITY.md). */
static int archive_reader_spec(archive_reader *rd, const char *path) {
  char *text = NULL;
  CS_CHECK(archive_spec_read(rd->file, path, &text));
  int rc = spec_load_string(text, path, &rd->spec);
  free(text);
  if (rc) return cs_error_context(rc, "%s: the archive's /spec does not load: ", path);
  rd->a->spec = rd->spec;
  return CS_OK;
}

int archive_reader_open(const char *path, archive_reader *rd) {
  memset(rd, 0, sizeof *rd);
  rd->file = H5I_INVALID_HID;
  archive_probe_class cls;
  CS_CHECK(archive_probe(path, H5F_ACC_RDONLY, &rd->file, &rd->meta, &cls));
  int rc = archive_new(path, &rd->a);
  if (!rc) rc = archive_reader_spec(rd, path);
  if (!rc) rc = archive_load_rows(rd->a, rd->file, path);
  if (!rc) rc = archive_read_n_runs(rd->a, rd->file);
  if (rc) archive_reader_close(rd);
  return rc;
}

int archive_reader_open_rows(const char *path, cs_archive *a, archive_reader *rd) {
  memset(rd, 0, sizeof *rd);
  rd->file = H5I_INVALID_HID;
  rd->a = a;  // freed by archive_reader_close from here, whatever happens
  a->spec = NULL;  // the spec of the earlier open is gone with it
  archive_probe_class cls;
  int rc = archive_probe(path, H5F_ACC_RDONLY, &rd->file, &rd->meta, &cls);
  if (!rc) rc = archive_reader_spec(rd, path);
  if (rc) archive_reader_close(rd);
  return rc;
}

/* All rows of a table up to its valid length, with a memory type. */
int archive_read_table(archive_reader *rd, const char *name, hid_t mtype, void **rows,
                              hsize_t *n) {
  *rows = NULL;
  *n = 0;
  hid_t ds;
  CS_CHECK(archive_dataset_open(rd->file, name, rd->a->path, &ds));
  hsize_t valid = 0, len = 0;
  int rc = archive_table_valid_rows(rd->a, ds, rd->a->path, name, &valid, &len);
  if (!rc) rc = archive_budget_take(valid, H5Tget_size(mtype), rd->a->path, name);
  if (!rc) rc = cs_calloc_bytes(rows, valid ? valid : 1, H5Tget_size(mtype));
  if (!rc && archive_table_io(ds, mtype, 0, valid, *rows, 0) < 0)
    rc = archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /%s", rd->a->path, name);
  H5Dclose(ds);
  if (rc) free(*rows), *rows = NULL;
  else *n = valid;
  return rc;
}

/* A table read a block of rows at a time (memory: one block, never the
 * whole table): fn(ctx, rows, start, k) per block of up to
 * ARCHIVE_BLOCK_ROWS valid rows. */
typedef int (*archive_block_fn)(void *ctx, const void *rows, hsize_t start, hsize_t k);

static int archive_table_blocks(archive_reader *rd, const char *name, hid_t mtype,
                                archive_block_fn fn, void *ctx) {
  const char *path = rd->a->path;
  hid_t ds;
  CS_CHECK(archive_dataset_open(rd->file, name, path, &ds));
  hsize_t valid = 0, len = 0;
  unsigned char *buf = NULL;
  size_t rb = H5Tget_size(mtype);
  int rc = archive_table_valid_rows(rd->a, ds, path, name, &valid, &len);
  if (!rc) rc = cs_calloc_bytes((void **)&buf, valid < ARCHIVE_BLOCK_ROWS ? (valid ? valid : 1)
                                                                         : ARCHIVE_BLOCK_ROWS, rb);
  for (hsize_t s = 0; !rc && s < valid; s += ARCHIVE_BLOCK_ROWS) {
    hsize_t k = valid - s < ARCHIVE_BLOCK_ROWS ? valid - s : ARCHIVE_BLOCK_ROWS;
    if (archive_table_io(ds, mtype, s, k, buf, 0) < 0)
      rc = archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /%s rows %llu..%llu",
                            path, name, (unsigned long long)s, (unsigned long long)(s + k - 1));
    else
      rc = fn(ctx, buf, s, k);
  }
  free(buf);
  H5Dclose(ds);
  return rc;
}

/* The summary's sum of wall_s over finished cells, one block of /cells at a
 * time; their metrics checked as every reader checks them. */
typedef struct {
  const cs_archive *a;
  const cs_spec *spec;
  double wall_s;
} archive_summary_wall;

static int archive_summary_wall_block(void *ctx, const void *rows, hsize_t start, hsize_t k) {
  archive_summary_wall *W = ctx;
  const archive_cell_row *cells = rows;
  for (hsize_t j = 0; j < k && (int64_t)(start + j) < W->a->n_rows; j++) {
    if (W->a->row_status[start + j] == CELL_PENDING) continue;
    cs_cell_result r = {.cell_id = cells[j].cell_id, .status = W->a->row_status[start + j],
                        .wall_s = cells[j].wall_s, .train_loss = cells[j].train_loss,
                        .train_acc = cells[j].train_acc, .test_acc = cells[j].test_acc};
    cs_config cfg;
    CS_CHECK(spec_cell_config(W->spec, r.cell_id, &cfg));
    CS_CHECK(archive_check_metrics(W->a->path, cfg.family, &r));
    if (isfinite(r.wall_s)) W->wall_s += r.wall_s;
  }
  return CS_OK;
}

/* The summary's /runs figures, one block of /runs at a time. */
static int archive_summary_runs_block(void *ctx, const void *rows, hsize_t start, hsize_t k) {
  cs_archive_summary *out = ctx;
  const cs_run_info *runs = rows;
  (void)start;
  for (hsize_t i = 0; i < k; i++) {
    out->runs++;
    if (runs[i].ranks > out->max_ranks) out->max_ranks = runs[i].ranks;
    if (runs[i].end[0]) cs_copy_str(out->last_run_end, sizeof out->last_run_end, runs[i].end);
    if (runs[i].shard[0]) cs_copy_str(out->shard, sizeof out->shard, runs[i].shard);
  }
  return CS_OK;
}

_Static_assert(ARCHIVE_N_CELL_TABLES <= sizeof ((cs_archive_summary *)0)->table /
                                           sizeof ((cs_archive_summary *)0)->table[0],
               "cs_archive_summary lists every per-cell table");

int archive_summary(const char *path, cs_archive_summary *out) {
  ARCHIVE_QUIET;
  memset(out, 0, sizeof *out);
  archive_reader rd;
  CS_CHECK(archive_reader_open(path, &rd));
  cs_copy_str(out->name, sizeof out->name, rd.meta.spec_name);
  cs_copy_str(out->spec_sha256, sizeof out->spec_sha256, rd.meta.spec_sha256);
  cs_copy_str(out->identity, sizeof out->identity, rd.meta.identity);
  out->grid_cells = spec_cell_count(rd.spec);
  int64_t partial = 0;  // absent: not a partial merge
  if (H5Aexists(rd.file, "partial") > 0 && archive_attr_read_i64(rd.file, "partial", &partial, NULL) != 0)
    partial = 1;  // present but not one integer: say partial rather than complete
  out->partial = partial != 0;
  cs_copy_str(out->created, sizeof out->created, rd.meta.created);
  cs_copy_str(out->software_version, sizeof out->software_version, rd.meta.software_version);
  // cells: counts (statuses read at open) and wall time of finished cells
  for (int64_t i = 0; i < rd.a->n_rows; i++) {
    out->cells++;
    switch (rd.a->row_status[i]) {
      case CELL_PENDING: out->pending++; break;
      case CELL_DONE: out->done++; break;
      case CELL_FAILED: out->failed++; break;
      case CELL_DIVERGED: out->diverged++; break;
    }
  }
  archive_summary_wall W = {rd.a, rd.spec, 0};
  hid_t mt = archive_cell_row_type();
  int rc = archive_table_blocks(&rd, "cells", mt, archive_summary_wall_block, &W);
  H5Tclose(mt);
  out->wall_s = W.wall_s;
  // the rows each per-cell table holds as every reader reads them (not the
  // rows themselves, nor the /points arrays)
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES && !rc; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    hid_t ds = H5I_INVALID_HID;
    hsize_t valid, len;
    if (!archive_cell_table_in(T, rd.meta.version)) continue;
    rc = archive_dataset_open(rd.file, T->name, path, &ds);
    if (!rc) rc = archive_table_valid_rows(rd.a, ds, path, T->name, &valid, &len);
    archive_h5_close_id(&ds, H5Dclose);
    if (!rc) {
      cs_copy_str(out->table[out->n_tables].name, sizeof out->table[0].name, T->name);
      out->table[out->n_tables++].rows = (int64_t)valid;
    }
    // rows that index the /points arrays: as archive_points_each reads them
    if (!rc && !T->place) rc = archive_points_index_check(rd.file, rd.a, path);
  }
  // runs, a block at a time (memory: one block, whatever /runs declares)
  if (!rc) {
    mt = archive_run_row_type();
    rc = archive_table_blocks(&rd, "runs", mt, archive_summary_runs_block, out);
    H5Tclose(mt);
  }
  archive_reader_close(&rd);
  return rc;
}


int archive_read_spec(const char *path, char **text) {
  ARCHIVE_QUIET;
  archive_reader rd;
  *text = NULL;
  CS_CHECK(archive_reader_open(path, &rd));
  int rc = archive_spec_read(rd.file, path, text);
  archive_reader_close(&rd);
  return rc;
}


void archive_results_free(cs_cell_result *res, int64_t n) {
  if (!res) return;
  for (int64_t i = 0; i < n; i++) result_free(&res[i]);
  free(res);
}

/* The spec's field N of a cell (what its /fields group must have). */
static int archive_reader_field_n(const archive_reader *rd, int64_t cell_id, int *n) {
  cs_config cfg;
  CS_CHECK(spec_cell_config(rd->spec, cell_id, &cfg));
  *n = cfg.field;
  return CS_OK;
}

int archive_read_cell_groups(const archive_reader *rd, cs_cell_result *r) {
  int field_n;
  if (rd->meta.version < 4) CS_CHECK(archive_read_points(rd->file, rd->a->path, r));
  CS_CHECK(archive_reader_field_n(rd, r->cell_id, &field_n));
  CS_CHECK(archive_read_fields(rd->file, rd->a->path, field_n, r));
  return archive_read_params(rd->file, rd->a->path, r);
}


int archive_read_results_rd(archive_reader *rd, cs_cell_result **results, int64_t *n_out) {
  return archive_read_results_flags(rd, 0, results, n_out);
}

/* The state of a read of every result. */
typedef struct {
  archive_reader *rd;
  cs_cell_result *res;      /* (n) one per /cells row */
  int64_t n;
  const archive_cell_table *table; /* the per-cell table being read */
  int64_t *count;           /* (n) rows of each finished cell in it; then rows placed */
  int64_t *start;           /* (n + 1) first of each cell's flags in seen */
  unsigned char *seen;      /* the flags of every cell's rows (archive_cell_table.place) */
  int64_t hint;             /* last row found (rows of a cell are contiguous) */
} archive_results_read;

/* Row of a cell among the finished rows, -1 when unlisted or pending. */
static int64_t archive_results_row(archive_results_read *R, int64_t cell_id) {
  int64_t i = R->hint;
  if (i < 0 || i >= R->n || R->res[i].cell_id != cell_id) i = archive_find_row(R->rd->a, cell_id);
  if (i < 0) return -1;
  R->hint = i;
  return R->res[i].status == CELL_PENDING ? -1 : i;
}

static int archive_results_cells(void *ctx, const void *rows, hsize_t start, hsize_t k) {
  archive_results_read *R = ctx;
  const archive_cell_row *cells = rows;
  for (hsize_t j = 0; j < k && (int64_t)(start + j) < R->n; j++) {
    int64_t i = (int64_t)(start + j);
    cs_cell_result *r = &R->res[i];
    r->cell_id = cells[j].cell_id;
    r->status = (cs_cell_status)R->rd->a->row_status[i];
    r->rank = cells[j].rank;
    r->attempts = cells[j].attempts;
    r->wall_s = cells[j].wall_s;
    r->train_loss = cells[j].train_loss;
    r->train_acc = cells[j].train_acc;
    r->test_acc = cells[j].test_acc;
    r->n_params = cells[j].n_params;
    cs_copy_str(r->message, sizeof r->message, cells[j].message);
  }
  return CS_OK;
}

/* Count pass (cell_id column only): rows of unlisted or pending cells are ignored. */
static int archive_results_count(void *ctx, const void *rows, hsize_t start, hsize_t k) {
  archive_results_read *R = ctx;
  const int64_t *ids = rows;
  (void)start;
  for (hsize_t j = 0; j < k; j++) {
    int64_t i = archive_results_row(R, ids[j]);
    if (i >= 0) R->count[i]++;
  }
  return CS_OK;
}

/* A block of the table's rows placed into their cells' results. */
static int archive_results_place(void *ctx, const void *rows, hsize_t start, hsize_t k) {
  archive_results_read *R = ctx;
  const archive_cell_table *T = R->table;
  for (hsize_t j = 0; j < k; j++) {
    const unsigned char *row = (const unsigned char *)rows + j * T->row_bytes;
    int64_t id;
    memcpy(&id, row, sizeof id);
    int64_t i = archive_results_row(R, id);
    if (i < 0) continue;
    const char *why = T->place(&R->res[i], row, R->count[i]++, R->seen + R->start[i]);
    if (why)
      return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s row %llu of cell %" PRId64 ": %s",
                      R->rd->a->path, T->name, (unsigned long long)(start + j), id, why);
  }
  return CS_OK;
}

/* A table small enough to read once for both passes (count, place):
 * *rows its valid rows (NULL when larger: each pass reads the file a block
 * at a time, so memory stays one block). */
#define ARCHIVE_TABLE_ONCE_BYTES ((hsize_t)64 << 20)
static int archive_results_table_once(archive_results_read *R, const char *name, hid_t mt,
                                      void **rows, hsize_t *n) {
  *rows = NULL;
  *n = 0;
  hid_t ds;
  CS_CHECK(archive_dataset_open(R->rd->file, name, R->rd->a->path, &ds));
  hsize_t len = archive_table_length(ds);
  archive_h5_close_id(&ds, H5Dclose);
  if (len * H5Tget_size(mt) > ARCHIVE_TABLE_ONCE_BYTES) return CS_OK;
  return archive_read_table(R->rd, name, mt, rows, n);
}

/* Rows per finished cell of a table (into R->count, zeroed first): from
 * rows in memory (n of rb bytes; cell_id leads every row type), or read. */
static int archive_results_count_table(archive_results_read *R, const char *name,
                                       const unsigned char *rows, hsize_t n, size_t rb) {
  memset(R->count, 0, (size_t)R->n * sizeof *R->count);
  if (rows) {
    for (hsize_t j = 0; j < n; j++) {
      int64_t id;
      memcpy(&id, rows + j * rb, sizeof id);
      int64_t i = archive_results_row(R, id);
      if (i >= 0) R->count[i]++;
    }
    return CS_OK;
  }
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(int64_t));
  H5Tinsert(mt, "cell_id", 0, H5T_NATIVE_INT64);
  int rc = archive_table_blocks(R->rd, name, mt, archive_results_count, R);
  H5Tclose(mt);
  return rc;
}

/* Room in the result of row i for its count rows of the table: no more than
 * its limit, and a done cell has rows where its config gives it some. */
static int archive_results_room(archive_results_read *R, int64_t i) {
  const archive_cell_table *T = R->table;
  const char *path = R->rd->a->path;
  cs_cell_result *r = &R->res[i];
  int64_t n = R->count[i];
  if (T->max_per_cell && n > T->max_per_cell)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s has %" PRId64 " rows of cell %" PRId64
                    " (a cell has at most %d)", path, T->name, n, r->cell_id, T->max_per_cell);
  if (r->status == CELL_DONE && n == 0 && T->done_rows) {
    cs_config cfg;
    CS_CHECK(spec_cell_config(R->rd->spec, r->cell_id, &cfg));
    if (archive_cell_table_want_rows(T, r->status, &cfg) > 0)
      return cs_error(CS_ERR_INPUT, "%s: damaged archive: cell %" PRId64 " is done but /%s has no "
                      "row of it", path, r->cell_id, T->name);
  }
  return T->alloc(r, n, path);
}

/* One per-cell table into the results: count the rows of each cell, make
 * room for them, place them (the table read once when small, else a block
 * at a time in each pass). */
static int archive_results_read_table(archive_results_read *R, const archive_cell_table *T) {
  int64_t n = R->n;
  void *rows = NULL;
  hsize_t n_rows = 0;
  R->table = T;
  hid_t mt = T->row_type();
  int rc = archive_results_table_once(R, T->name, mt, &rows, &n_rows);
  if (!rc) rc = archive_results_count_table(R, T->name, rows, n_rows, T->row_bytes);
  if (!rc) rc = CS_CALLOC(R->start, n + 1);
  for (int64_t i = 0; !rc && i < n; i++) {
    rc = archive_results_room(R, i);
    R->start[i + 1] = R->start[i] + R->count[i];
  }
  if (!rc) rc = CS_CALLOC(R->seen, R->start[n] ? R->start[n] : 1);
  if (!rc) memset(R->count, 0, (size_t)n * sizeof *R->count);
  if (!rc) rc = rows ? archive_results_place(R, rows, 0, n_rows)
                     : archive_table_blocks(R->rd, T->name, mt, archive_results_place, R);
  free(rows), free(R->start), free(R->seen);
  R->start = NULL, R->seen = NULL;
  H5Tclose(mt);
  return rc;
}

static int archive_results_read_tables(archive_results_read *R) {
  const char *path = R->rd->a->path;
  int64_t n = R->n;
  hsize_t ncells = 0, len = 0;
  hid_t ds;
  CS_CHECK(archive_dataset_open(R->rd->file, "cells", path, &ds));
  int rc = archive_table_valid_rows(R->rd->a, ds, path, "cells", &ncells, &len);
  H5Dclose(ds);
  CS_CHECK(rc);
  if ((int64_t)ncells != n)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /cells has %llu rows, %" PRId64 " expected",
                    path, (unsigned long long)ncells, n);
  hid_t mt = archive_cell_row_type();
  rc = archive_table_blocks(R->rd, "cells", mt, archive_results_cells, R);
  H5Tclose(mt);
  CS_CHECK(rc);
  for (int64_t i = 0; i < n; i++) {
    cs_config cfg;
    if (R->res[i].status != CELL_DONE) continue;
    CS_CHECK(spec_cell_config(R->rd->spec, R->res[i].cell_id, &cfg));
    CS_CHECK(archive_check_metrics(path, cfg.family, &R->res[i]));
  }
  // the per-cell tables whose rows hold values (the /points arrays: later)
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    if (T->place && archive_cell_table_in(T, R->rd->meta.version))
      CS_CHECK(archive_results_read_table(R, T));
  }
  /* the /curvature values in this version's meanings, then the extreme-token
   * columns for the cell's family */
  uint64_t absent = archive_stats_absent(R->rd->file);
  for (int64_t i = 0; i < n; i++) {
    cs_config cfg;
    R->res[i].stats_absent = absent;
    if (R->res[i].status != CELL_DONE && R->res[i].depth == 0) continue;
    CS_CHECK(spec_cell_config(R->rd->spec, R->res[i].cell_id, &cfg));
    archive_curv_as_read(&R->res[i], cfg.family, absent);
    if (R->res[i].status == CELL_DONE) CS_CHECK(archive_check_token_stats(path, cfg.family, &R->res[i]));
  }
  return CS_OK;
}

/* archive_points_each: a cell's per-point arrays into its result. */
static int archive_results_take_points(void *ctx, int64_t row, cs_cell_result *pts) {
  archive_results_read *R = ctx;
  return archive_points_take(&R->res[row], pts, ARCHIVE_POINTS_ALL, R->rd->a->path);
}

/* Every result: the three tables a block at a time, then (unless
 * ARCHIVE_READ_NO_GROUPS) the /points and /params groups of finished cells. */
int archive_read_results_flags(archive_reader *rd, int flags, cs_cell_result **results,
                               int64_t *n_out) {
  *results = NULL;
  *n_out = 0;
  archive_results_read R = {.rd = rd, .n = rd->a->n_rows, .hint = -1};
  int rc = CS_CALLOC(R.res, R.n ? R.n : 1);
  if (!rc) rc = CS_CALLOC(R.count, R.n ? R.n : 1);
  if (!rc) rc = archive_results_read_tables(&R);
  // format_version 4: every cell's /points a block of each array at a time
  if (!rc && !(flags & ARCHIVE_READ_NO_GROUPS) && rd->meta.version >= 4) {
    rc = archive_points_each(rd->file, rd->a, rd->a->path, archive_results_take_points, &R);
  }
  for (int64_t i = 0; i < R.n && !rc && !(flags & ARCHIVE_READ_NO_GROUPS); i++)
    if (R.res[i].status != CELL_PENDING) rc = archive_read_cell_groups(rd, &R.res[i]);
  free(R.count);
  if (rc) {
    archive_results_free(R.res, R.n);
  } else {
    *results = R.res;
    *n_out = R.n;
  }
  return rc;
}

int archive_read_results(const char *path, cs_cell_result **results, int64_t *n) {
  ARCHIVE_QUIET;
  archive_reader rd;
  *results = NULL;
  *n = 0;
  CS_CHECK(archive_reader_open(path, &rd));
  int rc = archive_read_results_rd(&rd, results, n);
  archive_reader_close(&rd);
  return rc;
}


int archive_read_results_tables(const char *path, cs_cell_result **results,
                                int64_t *n){
  ARCHIVE_QUIET;
  archive_reader rd;
  *results = NULL;
  *n = 0;
  CS_CHECK(archive_reader_open(path, &rd));
  int rc = archive_read_results_flags(&rd, ARCHIVE_READ_NO_GROUPS, results, n);
  archive_reader_close(&rd);
  return rc;
}


/* archive_points_each: the arrays of a wanted cell into its result. */
typedef struct {
  cs_cell_result *res;
  const unsigned char *want;
  unsigned keep;
  const char *path;
} archive_points_wanted;

static int archive_points_take_wanted(void *ctx, int64_t row, cs_cell_result *pts) {
  archive_points_wanted *W = ctx;
  return W->want[row] ? archive_points_take(&W->res[row], pts, W->keep, W->path) : CS_OK;
}

/* The archive at path still has the /cells rows res (n) was read from. */
static int archive_same_rows(const archive_reader *rd, const char *path, const cs_cell_result *res,
                             int64_t n) {
  if (n != rd->a->n_rows)
    return cs_error(CS_ERR_INPUT, "%s has %" PRId64 " /cells rows, %" PRId64 " when its results "
                    "were read: it changed in between", path, rd->a->n_rows, n);
  for (int64_t i = 0; i < n; i++)
    if (res[i].cell_id != rd->a->row_cell[i])
      return cs_error(CS_ERR_INPUT, "%s changed since its results were read (/cells row %" PRId64
                      ")", path, i);
  return CS_OK;
}

/* Reads one part of a wanted, finished cell into r (the drivers below). */
typedef int (*archive_part_fn)(archive_reader *rd, const char *path, cs_cell_result *r);

/* The driver of archive_read_{points,fields,params}_of: open path, check
 * that it still has the /cells rows res (n) was read from, and read the
 * part of every wanted cell that is not pending, cell by cell with one,
 * or (format 4 on, when all is given) in one pass over the file with all. */
static int archive_read_parts_of(const char *path, cs_cell_result *res, int64_t n,
                                 const unsigned char *want, archive_part_fn one,
                                 archive_points_fn all, void *ctx) {
  archive_reader rd;
  CS_CHECK(archive_reader_open(path, &rd));
  int rc = archive_same_rows(&rd, path, res, n), whole = all && rd.meta.version >= 4;
  if (!rc && whole) rc = archive_points_each(rd.file, rd.a, path, all, ctx);
  for (int64_t i = 0; !rc && !whole && i < n; i++)
    if (want[i] && res[i].status != CELL_PENDING) rc = one(&rd, path, &res[i]);
  archive_reader_close(&rd);
  return rc;
}

/* The points of one cell (formats before 4). */
static int archive_part_points(archive_reader *rd, const char *path, cs_cell_result *r) {
  return archive_read_points(rd->file, path, r);
}

/* The fields of one cell: as many as its /cells row says. */
static int archive_part_fields(archive_reader *rd, const char *path, cs_cell_result *r) {
  int field_n;
  CS_CHECK(archive_reader_field_n(rd, r->cell_id, &field_n));
  return archive_read_fields(rd->file, path, field_n, r);
}

/* The parameters of one cell, unless r holds them already. */
static int archive_part_params(archive_reader *rd, const char *path, cs_cell_result *r) {
  return r->n_tensors == 0 ? archive_read_params(rd->file, path, r) : CS_OK;
}

int archive_read_points_of(const char *path, cs_cell_result *res, int64_t n,
                           const unsigned char *want, unsigned keep){
  ARCHIVE_QUIET;
  archive_points_wanted W = {res, want, keep, path};
  return archive_read_parts_of(path, res, n, want, archive_part_points,
                               archive_points_take_wanted, &W);
}

int archive_read_fields_of(const char *path, cs_cell_result *res, int64_t n,
                           const unsigned char *want){
  ARCHIVE_QUIET;
  return archive_read_parts_of(path, res, n, want, archive_part_fields, NULL, NULL);
}

int archive_read_params_of(const char *path, cs_cell_result *res, int64_t n,
                           const unsigned char *want){
  ARCHIVE_QUIET;
  return archive_read_parts_of(path, res, n, want, archive_part_params, NULL, NULL);
}


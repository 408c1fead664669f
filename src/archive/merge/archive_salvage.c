/* archive_salvage.c — `curvsweep merge --salvage OUT DAMAGED.h5`: copy every
 * intact cell of a damaged archive into a fresh archive of the same spec;
 * the cells whose result cannot be read whole come back pending, so a `run`
 * resume of OUT recomputes them (docs/ARCHIVE.md, "Salvage").
 *
 * The damaged file is read a chunk of rows at a time, so one unreadable
 * chunk costs only the cells with rows in it:
 *   /spec      must be readable (fletcher32-checked): it names the cells.
 *   /cells     a row in an unreadable chunk (or out of order, or of an
 *              unknown status) leaves its cell pending; an unsharded archive
 *              lists every cell, so such a row is still known to be cell i;
 *              a shard archive lists every cell that row could be.
 *   per-cell tables (ARCHIVE_CELL_TABLES) with values in their rows
 *              (/curvature, /curves): a done cell keeps a table's rows when
 *              it has as many as its config gives it (/curvature: every
 *              prefix 1..depth read exactly once, rows placed by prefix);
 *              otherwise a cell's rows are contiguous, so they are whole
 *              when none of the table is unreadable, or when they are read
 *              and no unreadable row borders them. A table the archive's
 *              format_version predates is absent: no cell has rows in it.
 *   /points    format_version 4: /points/index read a chunk at a time like
 *              the tables, a cell's values read from the arrays (a cell
 *              whose values touch an unreadable chunk is lost); 2, 3: the
 *              group read whole per cell (archive_read_points);
 *   /params, /fields  read whole per cell (archive_read_params,
 *              archive_read_fields). A done cell of a spec that saves
 *              points (params, a field) must have them.
 *   /runs      every readable row is copied.
 * Every HDF5 identifier opened here is closed on every path
 * (salvage_state_free). */
#include "archive_internal.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One table read a chunk at a time: rows, and which of them could be read. */
typedef struct {
  void *rows;
  unsigned char *ok;
  hsize_t n;
  int any_bad;   /* some row (or the whole table) could not be read */
} salvage_table;

/* Everything a salvage holds; released in one place (salvage_state_free). */
typedef struct {
  const char *out, *in;
  int overwrite;
  cs_archive_salvage_fn fn;
  void *ctx;
  cs_archive_salvage_report *rep;
  hid_t file;                     /* the damaged archive */
  char *text;                     /* its /spec */
  cs_spec *spec;
  int64_t nc;                     /* cells of the spec */
  salvage_table cells, runs;
  salvage_table tab[ARCHIVE_N_CELL_TABLES];   /* the per-cell tables (absent: no rows) */
  int present[ARCHIVE_N_CELL_TABLES];         /* the archive has it */
  uint64_t stats_absent;          /* the statistics columns its /curvature lacks */
  int64_t *tab_start[ARCHIVE_N_CELL_TABLES], *tab_idx[ARCHIVE_N_CELL_TABLES]; /* rows grouped by
                                                 cell (tables with values in their rows) */
  int points_tables;              /* /points is format_version 4's index and arrays */
  salvage_table *pidx;            /* /points/index (in tab) */
  int64_t *pidx_of;               /* (nc) readable /points/index row of each cell, -1: none */
  int64_t *row_of;                /* /cells row of each cell, -1: none readable */
  unsigned char *listed;          /* the cell is a row of the new archive */
  cs_archive *a;                  /* the new archive (no journal) */
  char *tmp;                      /* its temporary name */
  hid_t out_file;
} salvage_state;

static void salvage_table_free(salvage_table *t) {
  free(t->rows);
  free(t->ok);
  memset(t, 0, sizeof *t);
}

static void salvage_state_free(salvage_state *s) {
  archive_h5_close_id(&s->out_file, archive_h5_fclose);
  archive_h5_close_id(&s->file, archive_h5_fclose);
  if (s->tmp) unlink(s->tmp);
  free(s->tmp);
  archive_free(s->a);
  free(s->text);
  if (s->spec) spec_free(s->spec);
  salvage_table_free(&s->cells), salvage_table_free(&s->runs);
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++)
    salvage_table_free(&s->tab[t]), free(s->tab_start[t]), free(s->tab_idx[t]);
  free(s->row_of), free(s->listed), free(s->pidx_of);
}

/* A cell that comes back pending, and why. */
static void salvage_damaged(salvage_state *s, int64_t cell, const char *reason) {
  s->rep->damaged++;
  if (s->fn) s->fn(cell, reason, s->ctx);
}

/* The output: not an existing file (unless overwrite), no stale journal
 * beside it, never the damaged input itself. */
static int salvage_check_output(const salvage_state *s) {
  struct stat so, si;
  if (stat(s->out, &so) == 0) {
    if (stat(s->in, &si) == 0 && so.st_dev == si.st_dev && so.st_ino == si.st_ino)
      return cs_error(CS_ERR_INPUT, "merge --salvage: the output %s is the damaged archive itself: "
                      "write the salvage to a new path", s->out);
    if (!s->overwrite)
      return cs_error(CS_ERR_INPUT, "%s already exists: use --overwrite to replace it, or another "
                      "output path", s->out);
    CS_CHECK(archive_check_replaceable(s->out));
  }
  char *journal = cs_strdup_printf("%s.journal", s->out);
  if (!journal) return cs_error(CS_ERR_NOMEM, "out of memory");
  int rc = cs_file_exists(journal) && !s->overwrite
               ? cs_error(CS_ERR_INPUT, "a journal %s exists beside the output (an earlier run): "
                          "move it away, use another output path, or --overwrite", journal)
               : CS_OK;
  free(journal);
  return rc;
}

/* Open the damaged file and load its spec. A file that is not a curvsweep
 * archive of this format is refused as merge refuses it; a damaged one is
 * opened as HDF5 whatever its identity check said, and needs /spec. */
static int salvage_open(salvage_state *s) {
  archive_meta meta;
  archive_probe_class cls;
  int rc = archive_probe(s->in, H5F_ACC_RDONLY, &s->file, &meta, &cls);
  if (rc && (cls == ARCHIVE_PROBE_FOREIGN || cls == ARCHIVE_PROBE_BUSY || cls == ARCHIVE_PROBE_HOSTILE ||
             cls == ARCHIVE_PROBE_NOT_FILE || !cs_file_exists(s->in)))
    return rc;
  if (rc) {
    cs_error_clear();
    s->file = archive_h5_open(s->in, H5F_ACC_RDONLY);
    if (s->file < 0)
      return archive_h5_error(CS_ERR_INPUT, "%s cannot be opened as HDF5 (its superblock or root "
                              "group is damaged): nothing can be salvaged; run the spec again into "
                              "a new archive", s->in);
  }
  rc = archive_spec_read(s->file, s->in, &s->text);
  if (rc) return cs_error_context(rc, "cannot salvage %s: without its /spec the cells cannot be "
                                  "identified: ", s->in);
  rc = spec_load_string(s->text, s->in, &s->spec);
  if (rc) return cs_error_context(rc, "cannot salvage %s: its /spec does not load: ", s->in);
  char sha[65];
  if (archive_attr_read_str(s->file, "spec_sha256", sha, sizeof sha, NULL) == 0 &&
      strcmp(sha, spec_sha256(s->spec)) != 0)
    return cs_error(CS_ERR_INPUT, "cannot salvage %s: its /spec does not hash to its spec_sha256 "
                    "attribute (%.12s…), so which spec wrote the results is unknown", s->in, sha);
  s->nc = spec_cell_count(s->spec);
  return CS_OK;
}

/* Rows [0, valid) of a table a chunk at a time (valid: committed_rows when
 * readable, else the length); rows of a chunk that cannot be read are
 * marked !ok. A table that cannot be opened has no rows and any_bad. */
static int salvage_read_table(salvage_state *s, const char *name, hid_t mt, hsize_t max_rows,
                              salvage_table *t) {
  memset(t, 0, sizeof *t);
  hid_t ds = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
  hsize_t n = 0, chunk = 0;
  int64_t committed = -1;
  // opened as every reader opens it (plain objects only); rows it declares
  // but does not store, or more than the spec allows, make it unreadable
  const char *why = "missing";
  int usable = archive_dataset_open(s->file, name, s->in, &ds) == CS_OK &&
               archive_table_length_checked(ds, s->in, name, &n) == CS_OK;
  if (usable && archive_attr_read_i64(ds, "committed_rows", &committed, &why) == 0 &&
      committed >= 0 && (hsize_t)committed < n)
    n = (hsize_t)committed;  // rows of an unfinished write: not part of any result
  usable = usable && (!why || !strcmp(why, "missing")); // which rows are whole is unknown otherwise
  if (!usable || n > max_rows || archive_table_check_stored(ds, n, s->in, name) != CS_OK ||
      archive_budget_take(n, H5Tget_size(mt) + 1, s->in, name) != CS_OK) {
    cs_error_clear();
    archive_h5_close_id(&ds, H5Dclose);
    t->any_bad = 1;
    return CS_OK;
  }
  dcpl = H5Dget_create_plist(ds);
  if (dcpl < 0 || H5Pget_layout(dcpl) != H5D_CHUNKED || H5Pget_chunk(dcpl, 1, &chunk) != 1 || chunk == 0)
    chunk = 64;  // read in small steps when the layout itself is unreadable
  archive_h5_close_id(&dcpl, H5Pclose);
  size_t row_bytes = H5Tget_size(mt);
  int rc = cs_calloc_bytes(&t->rows, n ? n : 1, row_bytes);
  if (!rc) rc = cs_calloc_bytes((void **)&t->ok, n ? n : 1, 1);
  for (hsize_t at = 0; !rc && at < n; at += chunk) {
    hsize_t k = n - at < chunk ? n - at : chunk;
    int good = archive_table_io(ds, mt, at, k, (char *)t->rows + at * row_bytes, 0) == 0;
    memset(t->ok + at, good, k);
    if (!good) t->any_bad = 1;
  }
  cs_error_clear();
  H5Dclose(ds);
  t->n = n;
  return rc;
}

/* /cells: the row of each cell, and which cells the new archive lists. */
static int salvage_cells(salvage_state *s) {
  hid_t mt = archive_cell_row_type();
  int rc = salvage_read_table(s, "cells", mt, (hsize_t)s->nc, &s->cells);
  H5Tclose(mt);
  CS_CHECK(rc);
  CS_CHECK(CS_CALLOC(s->row_of, s->nc));
  CS_CHECK(CS_CALLOC(s->listed, s->nc));
  for (int64_t c = 0; c < s->nc; c++) s->row_of[c] = -1;
  archive_cell_row *rows = s->cells.rows;
  int64_t n = (int64_t)s->cells.n, prev = -1;
  int every_cell = n == s->nc || n == 0;  // unsharded (or no /cells at all): row i is cell i
  // readable rows: a known status, ascending ids within the spec
  for (int64_t r = 0; r < n; r++) {
    int64_t id = rows[r].cell_id;
    if (s->cells.ok[r] && (archive_status_parse(rows[r].status) < 0 || id < 0 || id >= s->nc ||
                           id <= prev || (every_cell && id != r)))
      s->cells.ok[r] = 0;
    if (s->cells.ok[r]) s->row_of[id] = r, s->listed[id] = 1, prev = id;
  }
  if (every_cell) {
    for (int64_t c = 0; c < s->nc; c++) s->listed[c] = 1;
    return CS_OK;
  }
  // a shard: an unreadable run of rows [r, e) may be any cell between its readable neighbours
  for (int64_t r = 0; r < n; r++) {
    if (s->cells.ok[r]) continue;
    int64_t e = r;
    while (e < n && !s->cells.ok[e]) e++;
    int64_t lo = r > 0 ? rows[r - 1].cell_id + 1 : 0, hi = e < n ? rows[e].cell_id - 1 : s->nc - 1;
    for (int64_t c = lo; c <= hi; c++) s->listed[c] = 1;
    r = e;
  }
  return CS_OK;
}

/* Readable rows of a table grouped by cell (counting sort, row order kept):
 * rows of cell c are idx[start[c] .. start[c+1]). */
static int salvage_group(const salvage_state *s, const salvage_table *t, size_t row_bytes,
                         int64_t **start, int64_t **idx) {
  CS_CHECK(CS_CALLOC(*start, s->nc + 1));
  CS_CHECK(CS_CALLOC(*idx, t->n ? t->n : 1));
  int64_t *st = *start;
  for (hsize_t k = 0; k < t->n; k++) {
    int64_t id = *(const int64_t *)((const char *)t->rows + k * row_bytes);  // cell_id comes first
    if (t->ok[k] && id >= 0 && id < s->nc) st[id + 1]++;
  }
  for (int64_t c = 0; c < s->nc; c++) st[c + 1] += st[c];
  int64_t *fill = NULL;
  CS_CHECK(CS_CALLOC(fill, s->nc ? s->nc : 1));
  for (hsize_t k = 0; k < t->n; k++) {
    int64_t id = *(const int64_t *)((const char *)t->rows + k * row_bytes);
    if (t->ok[k] && id >= 0 && id < s->nc) (*idx)[st[id] + fill[id]++] = (int64_t)k;
  }
  free(fill);
  return CS_OK;
}

/* Are the rows idx[0..n) of one cell all of its rows? Contiguous, and no
 * unreadable row borders them (none at all when the cell has no row). */
static int salvage_rows_whole(const salvage_table *t, const int64_t *idx, int64_t n) {
  if (!t->any_bad) return 1;
  if (n == 0 || idx[n - 1] - idx[0] + 1 != n) return 0;
  int64_t before = idx[0] - 1, after = idx[n - 1] + 1;
  return (before < 0 || t->ok[before]) && (after >= (int64_t)t->n || t->ok[after]);
}

/* The rows of a finished cell of every per-cell table with values in its
 * rows into r; why (len bytes) names what is missing (r then incomplete),
 * empty when nothing is. */
static int salvage_rows(salvage_state *s, int64_t c, cs_cell_result *r, char *why, size_t len) {
  cs_config cfg;
  CS_CHECK(spec_cell_config(s->spec, c, &cfg));
  why[0] = '\0';
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES && !why[0]; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    if (!T->place || !s->present[t]) continue;
    const unsigned char *rows = s->tab[t].rows;
    const int64_t *idx = s->tab_idx[t] + s->tab_start[t][c];
    int64_t n = s->tab_start[t][c + 1] - s->tab_start[t][c];
    int want = archive_cell_table_want_rows(T, r->status, &cfg);
    if (want >= 0 ? n != want : !salvage_rows_whole(&s->tab[t], idx, n)) {
      snprintf(why, len, "its /%s rows are not all readable", T->name);
      break;
    }
    unsigned char *seen = NULL;
    CS_CHECK(T->alloc(r, n, s->in));
    CS_CHECK(CS_CALLOC(seen, n ? n : 1));
    const char *bad = NULL;
    for (int64_t k = 0; k < n && !bad; k++) bad = T->place(r, rows + idx[k] * T->row_bytes, k, seen);
    free(seen);
    if (bad) snprintf(why, len, "its /%s rows do not fit: %s", T->name, bad);
  }
  return CS_OK;
}

/* salvage_points_index: index rows (numbers into salvage_sort_rows) by
 * where their values start. */
#define SALVAGE_POINTS_OVERLAP (-2)
static _Thread_local const archive_point_row *salvage_sort_rows;
static int salvage_cmp_start(const void *x, const void *y) {
  const archive_point_row *p = &salvage_sort_rows[*(const int64_t *)x];
  const archive_point_row *q = &salvage_sort_rows[*(const int64_t *)y];
  return (p->start > q->start) - (p->start < q->start);
}

/* Every per-cell table of the archive (its format_version, or its dataset
 * found when that is unreadable) a chunk at a time, its rows grouped by
 * cell when they hold values. */
static int salvage_tables(salvage_state *s) {
  int64_t version = ARCHIVE_FORMAT_VERSION;
  int known = archive_attr_read_i64(s->file, "format_version", &version, NULL) == 0;
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    s->present[t] = known ? archive_cell_table_in(T, (int)version) ||
                                archive_link_exists(s->file, T->name)
                          : 1;
    cs_error_clear();
    if (!s->present[t]) continue;
    hsize_t most = T->max_per_cell ? (hsize_t)s->nc * (hsize_t)T->max_per_cell : (hsize_t)INT64_MAX;
    hid_t mt = T->row_type();
    int rc = salvage_read_table(s, T->name, mt, most, &s->tab[t]);
    H5Tclose(mt);
    CS_CHECK(rc);
    if (T->place) CS_CHECK(salvage_group(s, &s->tab[t], T->row_bytes, &s->tab_start[t], &s->tab_idx[t]));
  }
  s->stats_absent = archive_stats_absent(s->file);
  cs_error_clear();
  return CS_OK;
}

/* /points (format_version 4): each cell's readable /points/index row. */
static int salvage_points_index(salvage_state *s) {
  const archive_cell_table *T = archive_cell_table_named(ARCHIVE_POINTS_INDEX);
  s->points_tables = s->present[T - ARCHIVE_CELL_TABLES];
  s->pidx = &s->tab[T - ARCHIVE_CELL_TABLES];
  if (!s->points_tables) return CS_OK;
  CS_CHECK(CS_CALLOC(s->pidx_of, s->nc ? s->nc : 1));
  for (int64_t c = 0; c < s->nc; c++) s->pidx_of[c] = -1;
  const archive_point_row *rows = s->pidx->rows;
  for (hsize_t i = 0; i < s->pidx->n; i++)
    if (s->pidx->ok[i] && rows[i].cell_id >= 0 && rows[i].cell_id < s->nc)
      s->pidx_of[rows[i].cell_id] = (int64_t)i;
  // rows whose values overlap another's (every row at offset 0) lie: both lost
  int64_t *order = NULL, m = 0;
  CS_CHECK(CS_CALLOC(order, s->nc ? s->nc : 1));
  for (int64_t c = 0; c < s->nc; c++)
    if (s->pidx_of[c] >= 0) order[m++] = s->pidx_of[c];
  salvage_sort_rows = rows;
  qsort(order, (size_t)m, sizeof *order, salvage_cmp_start);
  for (int64_t k = 1; k < m; k++) {
    const archive_point_row *p = &rows[order[k - 1]], *q = &rows[order[k]];
    if (q->start < p->start + (int64_t)p->depth * p->n_points ||
        q->x_start < p->x_start + (int64_t)p->n_points * p->m)
      s->pidx_of[p->cell_id] = s->pidx_of[q->cell_id] = SALVAGE_POINTS_OVERLAP;
  }
  free(order);
  return CS_OK;
}

/* A cell's per-point arrays into r (none: r unchanged): its index row's
 * values (format_version 4), or its group (2, 3). */
static int salvage_points(salvage_state *s, int64_t c, cs_cell_result *r) {
  if (!s->points_tables) return archive_read_points(s->file, s->in, r);
  if (s->pidx_of[c] == SALVAGE_POINTS_OVERLAP)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: the /%s row of cell %" PRId64 " points at "
                    "values that overlap another cell's", s->in, ARCHIVE_POINTS_INDEX, c);
  if (s->pidx_of[c] < 0) return CS_OK;  // a done cell of save_points is then refused below
  return archive_points_read_cell(s->file, s->in, s->spec,
                                  (const archive_point_row *)s->pidx->rows + s->pidx_of[c], r);
}

/* One finished cell of the damaged archive: its whole result into the new
 * one, or reported damaged (left pending). */
static int salvage_cell(salvage_state *s, int64_t c) {
  const archive_cell_row *row = (const archive_cell_row *)s->cells.rows + s->row_of[c];
  cs_cell_result r;
  memset(&r, 0, sizeof r);
  r.cell_id = c;
  r.status = (cs_cell_status)archive_status_parse(row->status);
  r.rank = row->rank, r.attempts = row->attempts, r.wall_s = row->wall_s;
  r.train_loss = row->train_loss, r.train_acc = row->train_acc, r.test_acc = row->test_acc;
  r.n_params = row->n_params;
  cs_copy_str(r.message, sizeof r.message, row->message);
  const char *why = NULL;
  char reason[512], rows_why[256];
  int rc = salvage_rows(s, c, &r, rows_why, sizeof rows_why);
  if (!rc && rows_why[0]) why = rows_why;
  if (!rc && !why) {
    const cs_sweep_settings *sw = spec_sweep(s->spec);
    cs_config cfg;
    int got = spec_cell_config(s->spec, c, &cfg) == CS_OK;
    if (got) archive_curv_as_read(&r, cfg.family, s->stats_absent);
    got = got && salvage_points(s, c, &r) == CS_OK &&
              archive_read_params(s->file, s->in, &r) == CS_OK &&
              archive_read_fields(s->file, s->in, cfg.field, &r) == CS_OK &&
              archive_check_metrics(s->in, cfg.family, &r) == CS_OK &&
              archive_check_token_stats(s->in, cfg.family, &r) == CS_OK;
    if (!got) snprintf(reason, sizeof reason, "%s", cs_error_message()), why = reason;
    else if (r.status == CELL_DONE && sw->save_points && !r.pt_x)
      why = s->pidx->any_bad ? "its /points/index row is missing (part of /points/index is unreadable)"
                            : "its /points are missing";
    else if (r.status == CELL_DONE && cfg.field > 0 && !r.fd_pred) why = "its /fields group is missing";
    else if (r.status == CELL_DONE && sw->save_params && r.n_tensors == 0) why = "its /params group is missing";
    else if (archive_check_result(s->a, &r) != CS_OK)
      snprintf(reason, sizeof reason, "%s", cs_error_message()), why = reason;
    cs_error_clear();
  }
  if (!rc && why) salvage_damaged(s, c, why);
  if (!rc && !why) {
    rc = archive_apply_result(s->a, s->out_file, &r);
    if (!rc) s->rep->kept++;
  }
  result_free(&r);
  return rc;
}

/* The new archive: rows of the listed cells, the intact results, the
 * readable /runs rows; written under a temporary name, then put in place. */
static int salvage_write(salvage_state *s) {
  CS_CHECK(archive_new(s->out, &s->a));
  cs_copy_str(s->a->spec_sha256, sizeof s->a->spec_sha256, spec_canonical_sha256(s->spec));
  CS_CHECK(archive_rows_from_mask(s->a, s->spec, s->listed));
  CS_CHECK(archive_create_temp(s->a, s->spec, &s->tmp));
  char *final_path = s->a->path;
  s->a->path = s->tmp;  // for the messages while it is written
  int rc = archive_h5_session_open(s->a, &s->out_file);
  for (int64_t c = 0; !rc && c < s->nc; c++) {
    if (!s->listed[c]) continue;
    s->rep->cells++;
    int64_t row = s->row_of[c];
    if (row < 0) {
      salvage_damaged(s, c, "its /cells row is unreadable");
      continue;
    }
    if (archive_status_parse(((const archive_cell_row *)s->cells.rows)[row].status) == CELL_PENDING) {
      s->rep->pending++;
      continue;
    }
    rc = salvage_cell(s, c);
  }
  const cs_run_info *runs = s->runs.rows;
  for (hsize_t k = 0; !rc && k < s->runs.n; k++) {
    if (!s->runs.ok[k]) continue;
    rc = archive_apply_run(s->a, s->out_file, s->a->n_runs, &runs[k]);
    if (!rc) s->rep->runs_kept++;
  }
  s->rep->runs_lost = (int64_t)s->runs.n - s->rep->runs_kept;
  hid_t f = s->out_file;
  s->out_file = H5I_INVALID_HID;
  if (f >= 0) rc = archive_h5_session_close(s->a, f, rc);
  s->a->path = final_path;
  if (!rc) rc = cs_fsync_file(s->tmp);
  // a stale journal of the replaced output must not be replayed into it
  if (!rc && cs_file_exists(s->a->journal_path) && unlink(s->a->journal_path) != 0)
    rc = cs_error(CS_ERR_IO, "cannot remove the old journal %s", s->a->journal_path);
  if (!rc) rc = archive_rename_into_place(s->tmp, s->out);
  if (!rc) free(s->tmp), s->tmp = NULL;
  return rc;
}

static int salvage_pipeline(salvage_state *s) {
  CS_CHECK(salvage_check_output(s));
  CS_CHECK(salvage_open(s));
  CS_CHECK(salvage_cells(s));
  CS_CHECK(salvage_tables(s));
  hid_t mt = archive_run_row_type();
  int rc = salvage_read_table(s, "runs", mt, (hsize_t)INT64_MAX, &s->runs);
  H5Tclose(mt);
  CS_CHECK(rc);
  CS_CHECK(salvage_points_index(s));
  return salvage_write(s);
}

int archive_salvage(const char *out, const char *damaged, int overwrite,
                    cs_archive_salvage_fn fn, void *ctx,
                    cs_archive_salvage_report *rep){
  ARCHIVE_QUIET;
  memset(rep, 0, sizeof *rep);
  salvage_state s;
  memset(&s, 0, sizeof s);
  s.out = out, s.in = damaged, s.overwrite = overwrite, s.fn = fn, s.ctx = ctx, s.rep = rep;
  s.file = s.out_file = H5I_INVALID_HID;
  int rc = salvage_pipeline(&s);
  salvage_state_free(&s);
  return rc;
}


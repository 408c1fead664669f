/* archive_points_read.c — /points read back (docs/ARCHIVE.md, "On-disk
 * layout"; written by archive_points.c):
 *   reading    every cell's arrays in storage order, each array read a block
 *              at a time (archive_points_each: memory of one block per array),
 *              or one cell's (archive_points_read_cell: salvage); the valid
 *              /points/index rows as every reader checks them
 *   legacy     the /points/<cell_id> group of format_version 2, 3
 *              (archive_read_points) */
#include "archive_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARCHIVE_POINTS_BLOCK 131072   /* elements per read block of a /points array (1 MiB) */

/* The valid rows of /points/index (committed, by the rule of
 * archive_table_valid_rows), malloc'ed into *rows. */
static int archive_points_index_read(hid_t file, const cs_archive *a, const char *path,
                              archive_point_row **rows, int64_t *n) {
  *rows = NULL;
  *n = 0;
  hid_t ds, mt = archive_point_row_type();
  hsize_t valid = 0, len = 0;
  int rc = archive_dataset_open(file, ARCHIVE_POINTS_INDEX, path, &ds);
  if (!rc) rc = archive_table_valid_rows(a, ds, path, ARCHIVE_POINTS_INDEX, &valid, &len);
  if (!rc) rc = archive_budget_take(valid, sizeof **rows, path, "/" ARCHIVE_POINTS_INDEX);
  if (!rc) rc = CS_CALLOC(*rows, valid ? valid : 1);
  if (!rc && archive_table_io(ds, mt, 0, valid, *rows, 0) < 0)
    rc = archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /%s", path,
                          ARCHIVE_POINTS_INDEX);
  archive_h5_close_id(&ds, H5Dclose);
  H5Tclose(mt);
  if (rc) free(*rows), *rows = NULL;
  else *n = (int64_t)valid;
  return rc;
}

/* One /points array read a block at a time: a request [off, off + n) is
 * served from the block in memory, or a new block is read starting at off
 * (requests in ascending order read every element once). */
typedef struct {
  hid_t ds, mtype;
  size_t elem;
  unsigned char *buf;
  hsize_t lo, n, cap, len;
  hsize_t block;  /* elements per read (0: exactly the request) */
} archive_points_span;

static int archive_points_span_get(archive_points_span *sp, int k, hsize_t off, hsize_t n,
                                   void **at, const char *path) {
  *at = NULL;
  if (n == 0) return CS_OK;
  if (off + n > sp->len)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s has %llu elements, a cell's values "
                    "end at %llu", path, archive_points_name(k), (unsigned long long)sp->len,
                    (unsigned long long)(off + n));
  if (off < sp->lo || off + n > sp->lo + sp->n) {
    hsize_t want = n > sp->block ? n : sp->block;
    if (want > sp->len - off) want = sp->len - off;
    if (want > sp->cap) {
      void *p = realloc(sp->buf, (size_t)want * sp->elem);
      if (!p) return cs_error(CS_ERR_NOMEM, "out of memory reading /%s", archive_points_name(k));
      sp->buf = p, sp->cap = want;
    }
    sp->n = 0;
    if (archive_table_io(sp->ds, sp->mtype, off, want, sp->buf, 0) < 0)
      return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /%s elements "
                              "%llu..%llu", path, archive_points_name(k), (unsigned long long)off,
                              (unsigned long long)(off + want - 1));
    sp->lo = off, sp->n = want;
  }
  *at = sp->buf + (size_t)(off - sp->lo) * sp->elem;
  return CS_OK;
}

static int archive_points_cmp_start(const void *x, const void *y) {
  const archive_point_row *p = x, *q = y;
  if (p->start != q->start) return p->start < q->start ? -1 : 1;
  return (p->x_start > q->x_start) - (p->x_start < q->x_start);
}

int archive_points_fit(const cs_config *cfg, int n_points, int m, int depth) {
  return n_points > 0 && n_points <= cfg->points && m == cfg->input_dim && depth >= 0 &&
         depth <= ARCHIVE_MAX_DEPTH;
}

/* Index row i describes a cell's arrays as its spec allows them (m its
 * input_dim, at most its points, at most ARCHIVE_MAX_DEPTH prefixes;
 * docs/SECURITY.md, "Archives"): pts gets its sizes. */
static int archive_points_shape(cs_cell_result *pts, const archive_point_row *row, int64_t i,
                                const cs_spec *spec, const char *path) {
  cs_config cfg;
  if (row->cell_id < 0 || row->cell_id >= spec_cell_count(spec) ||
      spec_cell_config(spec, row->cell_id, &cfg) != CS_OK) {
    cs_error_clear();
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s row %" PRId64 " names cell %" PRId64
                    ", outside its spec's grid", path, ARCHIVE_POINTS_INDEX, i, row->cell_id);
  }
  if (!archive_points_fit(&cfg, row->n_points, row->m, row->depth) || row->x_start < 0 ||
      row->start < 0)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s row %" PRId64 " (cell %" PRId64
                    "): %d points, m %d, depth %d (its spec: at most %d points, m %d)", path,
                    ARCHIVE_POINTS_INDEX, i, row->cell_id, row->n_points, row->m, row->depth,
                    cfg.points, cfg.input_dim);
  memset(pts, 0, sizeof *pts);
  pts->cell_id = row->cell_id;
  pts->n_points = row->n_points, pts->m = row->m, pts->depth = row->depth;
  return CS_OK;
}

/* Where array k of pts points (x, the doubles, class). */
static void archive_points_set(cs_cell_result *pts, int k, void *at) {
  double **f[RESULT_N_POINT_ARRAYS];
  result_point_arrays(pts, f);
  if (k == 0) pts->pt_x = at;
  else if (k == ARCHIVE_POINT_ARRAYS - 1) pts->pt_class = at;
  else *f[k - 1] = at;
}

/* Elements of array k of a cell (index row). */
static hsize_t archive_points_count(const archive_point_row *row, int k) {
  return k == 0 ? (hsize_t)row->n_points * row->m : (hsize_t)row->depth * row->n_points;
}

void archive_points_free(cs_cell_result *r) {
  double **f[RESULT_N_POINT_ARRAYS];
  result_point_arrays(r, f);
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++) free(*f[k]), *f[k] = NULL;
  free(r->pt_x), free(r->pt_class);
  r->pt_x = NULL, r->pt_class = NULL;
}

/* Walk state: the index in storage order and one span reader per array. */
typedef struct {
  archive_point_row *rows;
  int64_t n;
  archive_points_span sp[ARCHIVE_POINT_ARRAYS];
  cs_cell_result pts;
} archive_points_walk;

static int archive_points_walk_open(hid_t file, const char *path, archive_points_walk *W) {
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) {
    archive_points_span *sp = &W->sp[k];
    hid_t ftype;
    archive_points_types(k, &ftype, &sp->mtype);
    H5Tclose(ftype);
    sp->elem = archive_points_elem(k);
    sp->block = ARCHIVE_POINTS_BLOCK;
    CS_CHECK(archive_dataset_open(file, archive_points_name(k), path, &sp->ds));
    CS_CHECK(archive_points_length(sp->ds, k, path, &sp->len));
  }
  return CS_OK;
}

static void archive_points_walk_close(archive_points_walk *W) {
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) {
    archive_h5_close_id(&W->sp[k].ds, H5Dclose);
    archive_h5_close_id(&W->sp[k].mtype, H5Tclose);
    free(W->sp[k].buf);
  }
  free(W->rows);
}

/* The valid rows of /points/index in storage order; each row of a finished
 * listed cell as the spec allows it, and its values not overlapping the
 * previous such row's (every row at offset 0 would read one cell's values
 * for all). */
int archive_points_index_checked(hid_t file, const cs_archive *a, const char *path,
                                 archive_point_row **rows, int64_t *n) {
  if (!a->spec) return cs_error(CS_ERR_INTERNAL, "%s: /points read without its spec", path);
  CS_CHECK(archive_points_index_read(file, a, path, rows, n));
  qsort(*rows, (size_t)*n, sizeof **rows, archive_points_cmp_start);
  hsize_t x_end = 0, end = 0;
  for (int64_t i = 0; i < *n; i++) {
    const archive_point_row *row = &(*rows)[i];
    int64_t cell_row = archive_find_row(a, row->cell_id);
    if (cell_row < 0 || a->row_status[cell_row] == CELL_PENDING) continue;
    cs_cell_result pts;
    CS_CHECK(archive_points_shape(&pts, row, i, a->spec, path));
    if ((hsize_t)row->x_start < x_end || (hsize_t)row->start < end)
      return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s: the values of cell %" PRId64 " (x at "
                      "%" PRId64 ", per-prefix at %" PRId64 ") overlap another cell's", path,
                      ARCHIVE_POINTS_INDEX, row->cell_id, row->x_start, row->start);
    x_end = (hsize_t)row->x_start + archive_points_count(row, 0);
    end = (hsize_t)row->start + archive_points_count(row, 1);
  }
  return CS_OK;
}

/* The /points/index row's check beyond its count (archive_tables.c): as
 * every reader checks the index (archive_points_index_checked). */
int archive_points_index_check(hid_t file, const cs_archive *a, const char *path) {
  archive_point_row *rows = NULL;
  int64_t n = 0;
  int rc = archive_points_index_checked(file, a, path, &rows, &n);
  free(rows);
  return rc;
}

static int archive_points_walk_run(hid_t file, const cs_archive *a, const char *path,
                                   archive_points_fn fn, void *ctx, archive_points_walk *W) {
  CS_CHECK(archive_points_index_checked(file, a, path, &W->rows, &W->n));
  CS_CHECK(archive_points_walk_open(file, path, W));
  for (int64_t i = 0; i < W->n; i++) {
    const archive_point_row *row = &W->rows[i];
    int64_t cell_row = archive_find_row(a, row->cell_id);
    if (cell_row < 0 || a->row_status[cell_row] == CELL_PENDING) continue;
    CS_CHECK(archive_points_shape(&W->pts, row, i, a->spec, path));
    for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) {
      void *at;
      hsize_t off = (hsize_t)(k == 0 ? row->x_start : row->start);
      CS_CHECK(archive_points_span_get(&W->sp[k], k, off, archive_points_count(row, k), &at, path));
      archive_points_set(&W->pts, k, at);
    }
    CS_CHECK(fn(ctx, cell_row, &W->pts));  // the arrays are the blocks': valid during fn only
  }
  return CS_OK;
}

int archive_points_each(hid_t file, const cs_archive *a, const char *path, archive_points_fn fn,
                        void *ctx) {
  archive_points_walk W;
  memset(&W, 0, sizeof W);
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) W.sp[k].ds = W.sp[k].mtype = H5I_INVALID_HID;
  int rc = archive_points_walk_run(file, a, path, fn, ctx, &W);
  archive_points_walk_close(&W);
  return rc;
}

int archive_points_lend(cs_cell_result *r, const cs_cell_result *pts, const char *path) {
  if (r->pt_x)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s lists cell %" PRId64 " twice", path,
                    ARCHIVE_POINTS_INDEX, r->cell_id);
  if (pts->depth != r->depth)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s gives cell %" PRId64 " %d prefixes, "
                    "/curvature %d", path, ARCHIVE_POINTS_INDEX, r->cell_id, pts->depth, r->depth);
  double **f[RESULT_N_POINT_ARRAYS], **g[RESULT_N_POINT_ARRAYS];
  result_point_arrays(r, f);
  result_point_arrays((cs_cell_result *)pts, g);
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++) *f[k] = *g[k];
  r->pt_x = pts->pt_x, r->pt_class = pts->pt_class;
  r->n_points = pts->n_points, r->m = pts->m;
  return CS_OK;
}

void archive_points_unlend(cs_cell_result *r) {
  double **f[RESULT_N_POINT_ARRAYS];
  result_point_arrays(r, f);
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++) *f[k] = NULL;
  r->pt_x = NULL, r->pt_class = NULL;
}

/* Array k of r (x, the doubles, class). */
static void *archive_points_get(cs_cell_result *r, int k) {
  double **f[RESULT_N_POINT_ARRAYS];
  result_point_arrays(r, f);
  if (k == 0) return r->pt_x;
  if (k == ARCHIVE_POINT_ARRAYS - 1) return r->pt_class;
  return *f[k - 1];
}

int archive_points_take(cs_cell_result *r, const cs_cell_result *pts, unsigned keep,
                        const char *path) {
  CS_CHECK(archive_points_lend(r, pts, path));
  const archive_point_row row = {r->cell_id, r->n_points, r->m, r->depth, 0, 0};
  int short_of_memory = 0;
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) {
    void *lent = archive_points_get(r, k), *own = NULL;
    if (k == 0 || ((keep >> (k - 1)) & 1u)) {
      size_t bytes = (size_t)archive_points_count(&row, k) * archive_points_elem(k);
      own = malloc(bytes ? bytes : 1);
      if (own) memcpy(own, lent, bytes);
      else short_of_memory = 1;
    }
    archive_points_set(r, k, own);
  }
  int rc = CS_OK;
  if (short_of_memory)
    rc = cs_error(CS_ERR_NOMEM, "out of memory reading /points of cell %" PRId64, r->cell_id);
  if (rc) archive_points_free(r);
  return rc;
}

int archive_points_read_cell(hid_t file, const char *path, const cs_spec *spec,
                             const archive_point_row *row, cs_cell_result *r) {
  cs_cell_result pts;
  CS_CHECK(archive_points_shape(&pts, row, 0, spec, path));
  void *at[ARCHIVE_POINT_ARRAYS] = {NULL};
  archive_points_span sp[ARCHIVE_POINT_ARRAYS];
  int rc = CS_OK;
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) sp[k] = (archive_points_span){.ds = H5I_INVALID_HID, .mtype = H5I_INVALID_HID};
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS && !rc; k++) {
    hid_t ftype;
    sp[k].elem = archive_points_elem(k);
    archive_points_types(k, &ftype, &sp[k].mtype);
    H5Tclose(ftype);
    rc = archive_dataset_open(file, archive_points_name(k), path, &sp[k].ds);
    if (!rc) rc = archive_points_length(sp[k].ds, k, path, &sp[k].len);
    hsize_t off = (hsize_t)(k == 0 ? row->x_start : row->start);
    if (!rc) rc = archive_points_span_get(&sp[k], k, off, archive_points_count(row, k), &at[k], path);
    if (!rc) archive_points_set(&pts, k, at[k]);
  }
  if (!rc) rc = archive_points_take(r, &pts, ARCHIVE_POINTS_ALL, path);
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) {
    archive_h5_close_id(&sp[k].ds, H5Dclose);
    archive_h5_close_id(&sp[k].mtype, H5Tclose);
    free(sp[k].buf);
  }
  return rc;
}

int archive_read_points(hid_t file, const char *path, cs_cell_result *r) {
  char name[64];
  hid_t g;
  CS_CHECK(archive_cell_group_open(file, "points", r->cell_id, path, name, &g));
  if (g < 0) return CS_OK;
  hsize_t dims[2], any[2] = {0, 0};
  int rc = archive_read_matrix(g, "x", any, path, &r->pt_x, dims);
  if (!rc && (dims[0] < 1 || dims[0] > INT32_MAX || dims[1] < 1 || dims[1] > ARCHIVE_MAX_DEPTH))
    rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s/x is %llu x %llu", path, name,
                  (unsigned long long)dims[0], (unsigned long long)dims[1]);
  r->n_points = (int)dims[0], r->m = (int)dims[1];
  const hsize_t want[2] = {(hsize_t)r->depth, (hsize_t)r->n_points};
  double **fields[RESULT_N_POINT_ARRAYS];
  result_point_arrays(r, fields);
  hid_t ct = archive_class_type(H5T_NATIVE_INT8);
  for (int k = 0; k <= RESULT_N_POINT_ARRAYS && !rc && r->depth > 0; k++) {
    const char *field = k < RESULT_N_POINT_ARRAYS ? RESULT_POINT_NAMES[k] : "class";
    if (k < RESULT_N_POINT_ARRAYS)
      rc = archive_read_matrix(g, field, want, path, fields[k], dims);
    else
      rc = archive_read_array(g, field, ct, sizeof(int8_t), H5T_ENUM, want, path,
                              (void **)&r->pt_class, dims);
  }
  if (!rc && r->depth == 0)
    rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s of a cell without prefixes", path, name);
  archive_h5_close_id(&ct, H5Tclose);
  H5Gclose(g);
  return rc;
}

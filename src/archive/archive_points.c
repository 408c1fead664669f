/* archive_points.c — /points of format_version 4 (docs/ARCHIVE.md,
 * "On-disk layout"): every cell's per-point arrays appended to eight
 * shared 1-D arrays, found through the table /points/index (one row per
 * cell: its n_points, m, depth and where its values start). A cell costs a
 * few appends to memory and one index row, not a group of eight datasets:
 * creating an HDF5 object costs ~30 µs, which capped writing and merging
 * per-cell groups at ~3,500 cells/s (docs/DECISIONS.md, "One /points table
 * per array").
 *   staging    results' arrays gathered in memory, appended in one write per
 *              array (archive_points_stage_*: batches and the bulk builder)
 *   reading    every cell's arrays in storage order, each array read a block
 *              at a time (archive_points_each: memory of one block per array),
 *              or one cell's (archive_points_read_cell: salvage)
 *   legacy     the /points/<cell_id> group of format_version 2, 3
 *              (archive_read_points) */
#include "archive_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ARCHIVE_POINTS_CHUNK_MIN 256   /* elements per chunk of a /points array: bounds */
#define ARCHIVE_POINTS_CHUNK_MAX 8192  /* (64 KiB of doubles) */
#define ARCHIVE_POINTS_BLOCK 131072   /* elements per read block of a /points array (1 MiB) */
#define ARCHIVE_POINTS_HUGE ((size_t)2 << 20) /* a transparent huge page (x86-64) */

/* The arrays in file order: x, the per-prefix doubles (RESULT_POINT_NAMES),
 * class. Index k of a cell's arrays: k == 0 x, 1..RESULT_N_POINT_ARRAYS the
 * doubles, ARCHIVE_POINT_ARRAYS - 1 class. */
static const char *archive_points_name(int k) {
  static const char *const FULL[ARCHIVE_POINT_ARRAYS] = {
      "points/x", "points/S", "points/S_err", "points/S_tilde", "points/tr_g",
      "points/logdet_g", "points/H_norm", "points/class"};
  return FULL[k];
}

hid_t archive_point_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_point_row));
  H5Tinsert(t, "cell_id", HOFFSET(archive_point_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "n_points", HOFFSET(archive_point_row, n_points), H5T_NATIVE_INT32);
  H5Tinsert(t, "m", HOFFSET(archive_point_row, m), H5T_NATIVE_INT32);
  H5Tinsert(t, "depth", HOFFSET(archive_point_row, depth), H5T_NATIVE_INT32);
  H5Tinsert(t, "x_start", HOFFSET(archive_point_row, x_start), H5T_NATIVE_INT64);
  H5Tinsert(t, "start", HOFFSET(archive_point_row, start), H5T_NATIVE_INT64);
  return t;
}

/* File and memory element types of array k (closed by the caller). */
static void archive_points_types(int k, hid_t *ftype, hid_t *mtype) {
  if (k == ARCHIVE_POINT_ARRAYS - 1) {
    *ftype = archive_class_type(H5T_STD_I8LE);
    *mtype = archive_class_type(H5T_NATIVE_INT8);
  } else {
    *ftype = H5Tcopy(H5T_IEEE_F64LE);
    *mtype = H5Tcopy(H5T_NATIVE_DOUBLE);
  }
}

static size_t archive_points_elem(int k) {
  return k == ARCHIVE_POINT_ARRAYS - 1 ? sizeof(int8_t) : sizeof(double);
}

/* Elements per chunk of the /points arrays: the values of about four of
 * the spec's largest cells (depth × points), so that a damaged chunk costs
 * a few cells (salvage) while a chunk stays large enough to read and write
 * fast; within [ARCHIVE_POINTS_CHUNK_MIN, ARCHIVE_POINTS_CHUNK_MAX]. */
static int archive_points_chunk(const cs_archive *a, const cs_spec *spec, hsize_t *chunk) {
  int64_t most = 1;
  for (int64_t i = 0; i < a->n_rows && spec_sweep(spec)->save_points; i++) {
    cs_config cfg;
    CS_CHECK(spec_cell_config(spec, a->row_cell[i], &cfg));
    int64_t n = (int64_t)cfg.points * (cfg.depth > cfg.input_dim ? cfg.depth : cfg.input_dim);
    if (n > most) most = n;
  }
  int64_t c = 4 * most;
  *chunk = (hsize_t)(c < ARCHIVE_POINTS_CHUNK_MIN ? ARCHIVE_POINTS_CHUNK_MIN
                     : c > ARCHIVE_POINTS_CHUNK_MAX ? ARCHIVE_POINTS_CHUNK_MAX : c);
  return CS_OK;
}

int archive_points_create(hid_t file, const cs_archive *a, const cs_spec *spec, const char *path) {
  hsize_t chunk;
  CS_CHECK(archive_points_chunk(a, spec, &chunk));
  hid_t g = H5Gcreate2(file, "points", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot create /points", path);
  H5Gclose(g);
  hid_t mt = archive_point_row_type(), ft = archive_packed(mt);
  int rc = archive_table_create(file, ARCHIVE_POINTS_INDEX, ft, 1, a->table_chunk_bytes, path);
  H5Tclose(ft), H5Tclose(mt);
  // the arrays: chunked, shuffled, Fletcher32-checked, not deflated (docs/ARCHIVE.md)
  hsize_t dims = 0, maxdims = H5S_UNLIMITED;
  hid_t space = H5Screate_simple(1, &dims, &maxdims), dcpl = archive_dcpl(1, &chunk, 0);
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS && !rc; k++) {
    hid_t ftype, mtype;
    archive_points_types(k, &ftype, &mtype);
    hid_t ds = H5Dcreate2(file, archive_points_name(k), ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds < 0) rc = archive_h5_error(CS_ERR_IO, "%s: cannot create /%s", path, archive_points_name(k));
    archive_h5_close_id(&ds, H5Dclose);
    H5Tclose(ftype), H5Tclose(mtype);
  }
  archive_h5_close_id(&dcpl, H5Pclose);
  archive_h5_close_id(&space, H5Sclose);
  return rc;
}

/* ---- staging ---- */

static int archive_points_grow(void **p, size_t *cap, size_t need, size_t size) {
  return archive_grow_buffer(p, cap, need, size, 1024, "staging per-point arrays");
}

/* Memory of at least bytes for staging, in whole huge pages, advised to be
 * backed by them: a few page faults for megabytes staged instead of one per
 * 4 KiB page, which on a virtual machine cost more than the copy itself
 * (bench/RESULTS.md, "Page faults of the bulk builder"). The memory is the
 * C library's (free, realloc). */
static void *archive_points_huge_alloc(size_t *bytes) {
  size_t len = (*bytes + ARCHIVE_POINTS_HUGE - 1) / ARCHIVE_POINTS_HUGE * ARCHIVE_POINTS_HUGE;
  if (!len) len = ARCHIVE_POINTS_HUGE;
  void *p = NULL;
  if (posix_memalign(&p, ARCHIVE_POINTS_HUGE, len)) return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, len, MADV_HUGEPAGE);  // advice only: 4 KiB pages when refused
#endif
  *bytes = len;
  return p;
}

int archive_points_stage_reserve(archive_points_stage *s, size_t bytes) {
  // x alone, or the per-prefix arrays alone, could fill the bytes
  size_t per_f = RESULT_N_POINT_ARRAYS * sizeof(double) + 1;
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) {
    size_t elem = archive_points_elem(k), need = k == 0 ? bytes / sizeof(double) : bytes / per_f;
    if (need <= s->cap[k]) continue;
    size_t len = need * elem;
    void *p = archive_points_huge_alloc(&len);
    if (!p) return cs_error(CS_ERR_NOMEM, "out of memory staging per-point arrays");
    if (s->cap[k]) memcpy(p, s->v[k], s->cap[k] * elem);
    free(s->v[k]);
    s->v[k] = p, s->cap[k] = len / elem;
  }
  return CS_OK;
}

int archive_points_stage_add(archive_points_stage *s, const cs_cell_result *r) {
  size_t nx = (size_t)r->n_points * r->m, nf = (size_t)r->depth * r->n_points;
  CS_CHECK(archive_points_grow((void **)&s->rows, &s->cap_rows, s->n_rows + 1, sizeof *s->rows));
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) {
    size_t have = k == 0 ? s->n_x : s->n_f, need = have + (k == 0 ? nx : nf);
    CS_CHECK(archive_points_grow((void **)&s->v[k], &s->cap[k], need, archive_points_elem(k)));
  }
  double **f[RESULT_N_POINT_ARRAYS];
  result_point_arrays((cs_cell_result *)r, f);
  s->rows[s->n_rows++] = (archive_point_row){r->cell_id, r->n_points, r->m, r->depth,
                                             (int64_t)s->n_x, (int64_t)s->n_f};
  memcpy((double *)s->v[0] + s->n_x, r->pt_x, nx * sizeof(double));
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
    if (nf) memcpy((double *)s->v[k + 1] + s->n_f, *f[k], nf * sizeof(double));
  if (nf) memcpy((int8_t *)s->v[ARCHIVE_POINT_ARRAYS - 1] + s->n_f, r->pt_class, nf);
  s->n_x += nx, s->n_f += nf;
  return CS_OK;
}

size_t archive_points_stage_bytes(const archive_points_stage *s) {
  return s->n_x * sizeof(double) + s->n_f * (RESULT_N_POINT_ARRAYS * sizeof(double) + 1);
}

/* Current length of array k (its dataset open as ds). */
static int archive_points_length(hid_t ds, int k, const char *path, hsize_t *n) {
  return archive_table_length_checked(ds, path, archive_points_name(k), n);
}

int archive_points_stage_flush(hid_t file, archive_points_stage *s, const char *path) {
  if (s->n_rows == 0) return CS_OK;
  int rc = CS_OK;
  hsize_t x_len = 0, f_len = 0;
  // the arrays first (x, then the per-prefix ones, which share one length),
  // then the index rows that point into them
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS && !rc; k++) {
    const char *name = archive_points_name(k);
    hid_t ds = H5Dopen2(file, name, H5P_DEFAULT), ftype, mtype;
    archive_points_types(k, &ftype, &mtype);
    hsize_t len = 0;
    if (ds < 0) rc = archive_h5_error(CS_ERR_IO, "%s: cannot open /%s", path, name);
    if (!rc) rc = archive_points_length(ds, k, path, &len);
    if (!rc && k == 0) x_len = len;
    if (!rc && k == 1) f_len = len;
    if (!rc && k > 1 && len != f_len)
      rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s has %llu elements, /points/S %llu", path,
                    name, (unsigned long long)len, (unsigned long long)f_len);
    if (!rc) rc = archive_table_append(ds, mtype, s->v[k], k == 0 ? s->n_x : s->n_f, path, name + 7);
    archive_h5_close_id(&ds, H5Dclose);
    H5Tclose(ftype), H5Tclose(mtype);
  }
  for (size_t i = 0; !rc && i < s->n_rows; i++)
    s->rows[i].x_start += (int64_t)x_len, s->rows[i].start += (int64_t)f_len;
  if (!rc) {
    hid_t ds = H5Dopen2(file, ARCHIVE_POINTS_INDEX, H5P_DEFAULT), mt = archive_point_row_type();
    if (ds < 0) rc = archive_h5_error(CS_ERR_IO, "%s: cannot open /%s", path, ARCHIVE_POINTS_INDEX);
    else rc = archive_table_append(ds, mt, s->rows, s->n_rows, path, ARCHIVE_POINTS_INDEX);
    archive_h5_close_id(&ds, H5Dclose);
    H5Tclose(mt);
  }
  s->n_rows = s->n_x = s->n_f = 0;
  return rc;
}

void archive_points_stage_free(archive_points_stage *s) {
  free(s->rows);
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) free(s->v[k]);
  memset(s, 0, sizeof *s);
}

/* ---- reading ---- */

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
  if (row->n_points <= 0 || row->n_points > cfg.points || row->m != cfg.input_dim ||
      row->depth < 0 || row->depth > ARCHIVE_MAX_DEPTH || row->x_start < 0 || row->start < 0)
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
  int rc = short_of_memory ? cs_error(CS_ERR_NOMEM, "out of memory reading /points of cell %" PRId64,
                                      r->cell_id)
                           : CS_OK;
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

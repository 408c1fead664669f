/* archive_points.c — /points of format_version 4 (docs/ARCHIVE.md,
 * "On-disk layout"): every cell's per-point arrays appended to eight
 * shared 1-D arrays, found through the table /points/index (one row per
 * cell: its n_points, m, depth and where its values start). A cell costs a
 * few appends to memory and one index row, not a group of eight datasets:
 * creating an HDF5 object costs ~30 µs, which capped writing and merging
 * per-cell groups at ~3,500 cells/s (docs/DECISIONS.md, "One /points table
 * per array"). Here: the arrays' names and types, /points created, and
 *   staging    results' arrays gathered in memory, appended in one write per
 *              array (archive_points_stage_*: batches and the bulk builder),
 *              with the /points/index row of the table of per-cell tables
 *              (archive_tables.c) and the comparison of two results' arrays.
 * Reading them: archive_points_read.c. */
#include "archive_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ARCHIVE_POINTS_CHUNK_MIN 256   /* elements per chunk of a /points array: bounds */
#define ARCHIVE_POINTS_CHUNK_MAX 8192  /* (64 KiB of doubles) */
#define ARCHIVE_POINTS_HUGE ((size_t)2 << 20) /* a transparent huge page (x86-64) */

/* The arrays in file order: x, the per-prefix doubles (RESULT_POINT_NAMES),
 * class. Index k of a cell's arrays: k == 0 x, 1..RESULT_N_POINT_ARRAYS the
 * doubles, ARCHIVE_POINT_ARRAYS - 1 class. */
const char *archive_points_name(int k) {
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
void archive_points_types(int k, hid_t *ftype, hid_t *mtype) {
  if (k == ARCHIVE_POINT_ARRAYS - 1) {
    *ftype = archive_class_type(H5T_STD_I8LE);
    *mtype = archive_class_type(H5T_NATIVE_INT8);
  } else {
    *ftype = H5Tcopy(H5T_IEEE_F64LE);
    *mtype = H5Tcopy(H5T_NATIVE_DOUBLE);
  }
}

size_t archive_points_elem(int k) {
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
 * (docs/DECISIONS.md, "Merge decodes what it copies"). The memory is the
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

int archive_points_stage_add(archive_points_stage *s, const cs_cell_result *r,
                             archive_point_row *row) {
  size_t nx = (size_t)r->n_points * r->m, nf = (size_t)r->depth * r->n_points;
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) {
    size_t have = k == 0 ? s->n_x : s->n_f, need = have + (k == 0 ? nx : nf);
    CS_CHECK(archive_points_grow((void **)&s->v[k], &s->cap[k], need, archive_points_elem(k)));
  }
  double **f[RESULT_N_POINT_ARRAYS];
  result_point_arrays((cs_cell_result *)r, f);
  *row = (archive_point_row){r->cell_id, r->n_points, r->m, r->depth, (int64_t)s->n_x,
                             (int64_t)s->n_f};
  memcpy((double *)s->v[0] + s->n_x, r->pt_x, nx * sizeof(double));
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
    if (nf) memcpy((double *)s->v[k + 1] + s->n_f, *f[k], nf * sizeof(double));
  if (nf) memcpy((int8_t *)s->v[ARCHIVE_POINT_ARRAYS - 1] + s->n_f, r->pt_class, nf);
  s->n_x += nx, s->n_f += nf, s->n_cells++;
  return CS_OK;
}

/* The /points/index row of the table of per-cell tables (archive_tables.c):
 * a result with points has one, pointing into the staged arrays. */
int archive_points_rows_of(const cs_cell_result *r) {
  return r->pt_x != NULL;
}

int archive_points_to_rows(const cs_cell_result *r, void *rows, archive_points_stage *pts) {
  return archive_points_stage_add(pts, r, rows);
}

void archive_points_rebase(void *rows, size_t n, const archive_points_stage *pts) {
  archive_point_row *p = rows;
  for (size_t i = 0; i < n; i++)
    p[i].x_start += (int64_t)pts->x_base, p[i].start += (int64_t)pts->f_base;
}

size_t archive_points_stage_bytes(const archive_points_stage *s) {
  return s->n_x * sizeof(double) + s->n_f * (RESULT_N_POINT_ARRAYS * sizeof(double) + 1);
}

/* Current length of array k (its dataset open as ds). */
int archive_points_length(hid_t ds, int k, const char *path, hsize_t *n) {
  return archive_table_length_checked(ds, path, archive_points_name(k), n);
}

int archive_points_stage_flush(hid_t file, archive_points_stage *s, const char *path) {
  if (s->n_cells == 0) return CS_OK;
  int rc = CS_OK;
  hsize_t x_len = 0, f_len = 0;
  // x, then the per-prefix arrays, which share one length; the index rows
  // that point into them follow (archive_table_rows_flush)
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
  s->x_base = x_len, s->f_base = f_len;
  s->n_cells = s->n_x = s->n_f = 0;
  return rc;
}

void archive_points_stage_free(archive_points_stage *s) {
  for (int k = 0; k < ARCHIVE_POINT_ARRAYS; k++) free(s->v[k]);
  memset(s, 0, sizeof *s);
}

/* Two results' per-point arrays agree bitwise (both absent counts as agreeing). */
static int archive_points_same_doubles(const double *x, const double *y, size_t n) {
  return n == 0 || (x && y ? !memcmp(x, y, n * sizeof *x) : x == y);
}

int archive_points_same(const cs_cell_result *x, const cs_cell_result *y) {
  if (x->n_points != y->n_points || x->m != y->m || !x->pt_x != !y->pt_x || x->depth != y->depth)
    return 0;
  if (!x->pt_x) return 1;
  size_t np = (size_t)x->depth * x->n_points;
  double **fx[RESULT_N_POINT_ARRAYS], **fy[RESULT_N_POINT_ARRAYS];
  result_point_arrays((cs_cell_result *)x, fx);
  result_point_arrays((cs_cell_result *)y, fy);
  if (!archive_points_same_doubles(x->pt_x, y->pt_x, (size_t)x->n_points * x->m) ||
      (np && memcmp(x->pt_class, y->pt_class, np)))
    return 0;
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
    if (!archive_points_same_doubles(*fx[k], *fy[k], np)) return 0;
  return 1;
}

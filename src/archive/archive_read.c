/* archive_read.c — read-back of an archive: summary (`curvsweep info`),
 * the /spec text, and every result (tables, /points, /params). Readers
 * ignore rows beyond committed_rows (docs/ARCHIVE.md). */
#include "archive_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void archive_reader_close(archive_reader *rd) {
  if (rd->file >= 0) H5Fclose(rd->file);
  archive_free(rd->a);
  memset(rd, 0, sizeof *rd);
  rd->file = H5I_INVALID_HID;
}

int archive_reader_open(const char *path, archive_reader *rd) {
  memset(rd, 0, sizeof *rd);
  rd->file = H5I_INVALID_HID;
  archive_probe_class cls;
  CS_CHECK(archive_probe(path, H5F_ACC_RDONLY, &rd->file, &rd->meta, &cls));
  int rc = archive_new(path, &rd->a);
  if (!rc) rc = archive_load_rows(rd->a, rd->file, path);
  if (!rc) rc = archive_read_n_runs(rd->a, rd->file);
  if (rc) archive_reader_close(rd);
  return rc;
}

/* All rows of a table up to its valid length, with a memory type. */
int archive_read_table(archive_reader *rd, const char *name, hid_t mtype, void **rows,
                              hsize_t *n) {
  *rows = NULL;
  *n = 0;
  hid_t ds = H5Dopen2(rd->file, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: no /%s", rd->a->path, name);
  hsize_t valid = 0, len = 0;
  int rc = archive_table_valid_rows(rd->a, ds, rd->a->path, name, &valid, &len);
  if (!rc) rc = cs_calloc_bytes(rows, valid ? valid : 1, H5Tget_size(mtype));
  if (!rc && archive_table_io(ds, mtype, 0, valid, *rows, 0) < 0)
    rc = archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /%s", rd->a->path, name);
  H5Dclose(ds);
  if (rc) {
    free(*rows);
    *rows = NULL;
    return rc;
  }
  *n = valid;
  return CS_OK;
}

static int archive_summary_impl(const char *path, cs_archive_summary *out) {
  memset(out, 0, sizeof *out);
  archive_reader rd;
  CS_CHECK(archive_reader_open(path, &rd));
  archive_copy_str(out->name, sizeof out->name, rd.meta.spec_name);
  archive_copy_str(out->spec_sha256, sizeof out->spec_sha256, rd.meta.spec_sha256);
  archive_copy_str(out->created, sizeof out->created, rd.meta.created);
  archive_copy_str(out->software_version, sizeof out->software_version, rd.meta.software_version);
  // cells: counts and wall time of finished cells
  archive_cell_row *cells = NULL;
  cs_run_info *runs = NULL;
  hsize_t nc = 0, nr = 0;
  hid_t mt = archive_cell_row_type();
  int rc = archive_read_table(&rd, "cells", mt, (void **)&cells, &nc);
  H5Tclose(mt);
  for (hsize_t i = 0; !rc && i < nc; i++) {
    out->cells++;
    switch (rd.a->row_status[i]) {
      case CELL_PENDING: out->pending++; break;
      case CELL_DONE: out->done++; break;
      case CELL_FAILED: out->failed++; break;
      case CELL_DIVERGED: out->diverged++; break;
    }
    if (rd.a->row_status[i] != CELL_PENDING && isfinite(cells[i].wall_s)) out->wall_s += cells[i].wall_s;
  }
  // runs
  if (!rc) {
    mt = archive_run_row_type();
    rc = archive_read_table(&rd, "runs", mt, (void **)&runs, &nr);
    H5Tclose(mt);
  }
  for (hsize_t i = 0; !rc && i < nr; i++) {
    out->runs++;
    if (runs[i].ranks > out->max_ranks) out->max_ranks = runs[i].ranks;
    if (runs[i].end[0]) archive_copy_str(out->last_run_end, sizeof out->last_run_end, runs[i].end);
  }
  free(cells);
  free(runs);
  archive_reader_close(&rd);
  return rc;
}

int archive_summary(const char *path, cs_archive_summary *out) {
  ARCHIVE_QUIETLY(archive_summary_impl(path, out));
}

static int archive_read_spec_impl(const char *path, char **text) {
  archive_reader rd;
  *text = NULL;
  CS_CHECK(archive_reader_open(path, &rd));
  int rc = archive_spec_read(rd.file, path, text);
  archive_reader_close(&rd);
  return rc;
}

int archive_read_spec(const char *path, char **text) {
  ARCHIVE_QUIETLY(archive_read_spec_impl(path, text));
}

/* A 2-D dataset into a fresh array of elements of memory type mtype
 * (elem_bytes each); dims out. A missing or unreadable dataset is a
 * refusal naming it. */
static int archive_read_array(hid_t loc, const char *name, hid_t mtype, size_t elem_bytes,
                              const char *path, void **v, hsize_t dims[2]) {
  *v = NULL;
  dims[0] = dims[1] = 0;
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: no dataset %s", path, name);
  hid_t space = H5Dget_space(ds);
  int rc = CS_OK;
  if (space < 0 || H5Sget_simple_extent_ndims(space) != 2) {
    rc = cs_error(CS_ERR_INPUT, "%s: dataset %s is not 2-D", path, name);
  } else {
    H5Sget_simple_extent_dims(space, dims, NULL);
    size_t n = (size_t)(dims[0] * dims[1]);
    if (n > 0) {
      rc = cs_calloc_bytes(v, n, elem_bytes);
      if (!rc && H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *v) < 0)
        rc = archive_h5_error(CS_ERR_INPUT, "%s: cannot read %s", path, name);
    }
  }
  if (space >= 0) H5Sclose(space);
  H5Dclose(ds);
  if (rc) {
    free(*v);
    *v = NULL;
  }
  return rc;
}

/* A 2-D float64 dataset into a fresh array; dims out. */
static int archive_read_matrix(hid_t loc, const char *name, const char *path, double **v,
                               hsize_t dims[2]) {
  return archive_read_array(loc, name, H5T_NATIVE_DOUBLE, sizeof(double), path, (void **)v, dims);
}

/* Does a link exist? A failed lookup (damaged group) is a refusal, never "no". */
static int archive_link_lookup(hid_t loc, const char *name, const char *path, int *there) {
  htri_t e = H5Lexists(loc, name, H5P_DEFAULT);
  *there = e > 0;
  if (e < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot look up /%s", path, name);
  return CS_OK;
}

/* Open the group /<top>/<cell_id> when there is one (*g < 0: none); its
 * name into name. */
static int archive_cell_group_open(hid_t file, const char *top, int64_t cell_id, const char *path,
                                   char name[64], hid_t *g) {
  *g = H5I_INVALID_HID;
  snprintf(name, 64, "%s/%" PRId64, top, cell_id);
  int there;
  CS_CHECK(archive_link_lookup(file, top, path, &there));
  if (there) CS_CHECK(archive_link_lookup(file, name, path, &there));
  if (!there) return CS_OK;
  *g = H5Gopen2(file, name, H5P_DEFAULT);
  if (*g < 0) return archive_h5_error(CS_ERR_INPUT, "%s: cannot open /%s", path, name);
  return CS_OK;
}

static int archive_read_points(hid_t file, const char *path, cs_cell_result *r) {
  char name[64];
  hid_t g;
  CS_CHECK(archive_cell_group_open(file, "points", r->cell_id, path, name, &g));
  if (g < 0) return CS_OK;
  hsize_t dims[2];
  int rc = archive_read_matrix(g, "x", path, &r->pt_x, dims);
  r->n_points = (int)dims[0], r->m = (int)dims[1];
  double **fields[RESULT_N_POINT_ARRAYS];
  result_point_arrays(r, fields);
  hid_t ct = archive_class_type(H5T_NATIVE_INT8);
  for (int k = 0; k <= RESULT_N_POINT_ARRAYS && !rc; k++) {
    const char *field = k < RESULT_N_POINT_ARRAYS ? RESULT_POINT_NAMES[k] : "class";
    if (k < RESULT_N_POINT_ARRAYS)
      rc = archive_read_matrix(g, field, path, fields[k], dims);
    else
      rc = archive_read_array(g, field, ct, sizeof(int8_t), path, (void **)&r->pt_class, dims);
    if (!rc && (dims[0] != (hsize_t)r->depth || dims[1] != (hsize_t)r->n_points))
      rc = cs_error(CS_ERR_INPUT, "%s: /%s/%s is %llu x %llu, expected %d x %d", path, name,
                    field, (unsigned long long)dims[0], (unsigned long long)dims[1], r->depth,
                    r->n_points);
  }
  archive_h5_close_id(&ct, H5Tclose);
  H5Gclose(g);
  return rc;
}

static int archive_read_params(hid_t file, const char *path, cs_cell_result *r) {
  char name[64];
  hid_t g;
  CS_CHECK(archive_cell_group_open(file, "params", r->cell_id, path, name, &g));
  if (g < 0) return CS_OK;
  // the names, in order, from the attribute "tensors"
  hid_t attr = H5Aopen(g, "tensors", H5P_DEFAULT), space = H5I_INVALID_HID;
  hid_t t = archive_str_type(ARCHIVE_TENSOR_NAME_BYTES);
  char *names = NULL;
  hsize_t n = 0;
  int rc = CS_OK;
  if (attr < 0 || (space = H5Aget_space(attr)) < 0 || H5Sget_simple_extent_ndims(space) != 1) {
    rc = archive_h5_error(CS_ERR_INPUT, "%s: /%s has no tensors attribute", path, name);
  } else {
    H5Sget_simple_extent_dims(space, &n, NULL);
    rc = cs_calloc_bytes((void **)&names, n ? n : 1, ARCHIVE_TENSOR_NAME_BYTES);
    if (!rc && n > 0 && H5Aread(attr, t, names) < 0)
      rc = archive_h5_error(CS_ERR_INPUT, "%s: cannot read /%s tensors", path, name);
  }
  if (!rc && n > 0) rc = CS_CALLOC(r->tensors, n);
  for (hsize_t i = 0; !rc && i < n; i++) {
    cs_tensor *T = &r->tensors[i];
    archive_copy_str(T->name, sizeof T->name, names + i * ARCHIVE_TENSOR_NAME_BYTES);
    hsize_t dims[2];
    r->n_tensors = (int)i + 1;
    rc = archive_read_matrix(g, T->name, path, &T->v, dims);
    T->rows = (int)dims[0], T->cols = (int)dims[1];
  }
  free(names);
  archive_h5_close_id(&t, H5Tclose);
  archive_h5_close_id(&space, H5Sclose);
  archive_h5_close_id(&attr, H5Aclose);
  H5Gclose(g);
  return rc;
}

void archive_results_free(cs_cell_result *res, int64_t n) {
  if (!res) return;
  for (int64_t i = 0; i < n; i++) result_free(&res[i]);
  free(res);
}

int archive_read_groups(hid_t file, const char *path, cs_cell_result *r) {
  CS_CHECK(archive_read_points(file, path, r));
  return archive_read_params(file, path, r);
}

int archive_read_results_rd(archive_reader *rd, cs_cell_result **results, int64_t *n_out) {
  return archive_read_results_flags(rd, 0, results, n_out);
}

int archive_read_results_flags(archive_reader *rd, int flags, cs_cell_result **results,
                               int64_t *n_out) {
  *results = NULL;
  *n_out = 0;
  const char *path = rd->a->path;
  int64_t n = rd->a->n_rows;
  archive_cell_row *cells = NULL;
  archive_curv_row *cv = NULL;
  archive_curve_row *cu = NULL;
  cs_cell_result *res = NULL;
  int64_t *count_cv = NULL, *count_cu = NULL, *start_cv = NULL;
  unsigned char *filled = NULL;
  hsize_t ncells = 0, ncv = 0, ncu = 0;
  hid_t mt;
  int rc;
  // the three tables
  mt = archive_cell_row_type();
  rc = archive_read_table(rd, "cells", mt, (void **)&cells, &ncells);
  H5Tclose(mt);
  if (!rc) {
    mt = archive_curv_row_type();
    rc = archive_read_table(rd, "curvature", mt, (void **)&cv, &ncv);
    H5Tclose(mt);
  }
  if (!rc) {
    mt = archive_curve_row_type();
    rc = archive_read_table(rd, "curves", mt, (void **)&cu, &ncu);
    H5Tclose(mt);
  }
  if (!rc) rc = CS_CALLOC(res, n);
  if (!rc) rc = CS_CALLOC(count_cv, n);
  if (!rc) rc = CS_CALLOC(count_cu, n);
  if (rc) goto done;
  // the /cells columns
  for (int64_t i = 0; i < n; i++) {
    cs_cell_result *r = &res[i];
    r->cell_id = cells[i].cell_id;
    r->status = (cs_cell_status)rd->a->row_status[i];
    r->rank = cells[i].rank;
    r->attempts = cells[i].attempts;
    r->wall_s = cells[i].wall_s;
    r->train_loss = cells[i].train_loss;
    r->train_acc = cells[i].train_acc;
    r->test_acc = cells[i].test_acc;
    r->n_params = cells[i].n_params;
    archive_copy_str(r->message, sizeof r->message, cells[i].message);
  }
  // count rows per cell (rows of unlisted or pending cells are ignored)
  for (hsize_t k = 0; k < ncv; k++) {
    int64_t i = archive_find_row(rd->a, cv[k].cell_id);
    if (i >= 0 && res[i].status != CELL_PENDING) count_cv[i]++;
  }
  for (hsize_t k = 0; k < ncu; k++) {
    int64_t i = archive_find_row(rd->a, cu[k].cell_id);
    if (i >= 0 && res[i].status != CELL_PENDING) count_cu[i]++;
  }
  for (int64_t i = 0; i < n && !rc; i++) {
    if (res[i].status == CELL_DONE && count_cv[i] == 0)
      rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: cell %" PRId64 " is done but /curvature "
                    "has no row of it", path, res[i].cell_id);
    if (!rc && count_cv[i]) rc = CS_CALLOC(res[i].curv, count_cv[i]);
    if (!rc && count_cu[i]) rc = CS_CALLOC(res[i].curve, count_cu[i]);
    res[i].depth = (int)count_cv[i];
  }
  // place the rows: curvature by prefix (each of 1..L exactly once), curves in row order
  if (!rc) rc = CS_CALLOC(start_cv, n + 1);
  if (!rc) rc = CS_CALLOC(filled, ncv);
  for (int64_t i = 0; i < n && !rc; i++) start_cv[i + 1] = start_cv[i] + count_cv[i];
  for (hsize_t k = 0; k < ncv && !rc; k++) {
    int64_t i = archive_find_row(rd->a, cv[k].cell_id);
    if (i < 0 || res[i].status == CELL_PENDING) continue;
    int p = cv[k].prefix;
    if (p < 1 || p > res[i].depth || filled[start_cv[i] + p - 1]) {
      rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: /curvature row %llu: cell %" PRId64
                    " prefix %d repeated or outside 1..%d", path, (unsigned long long)k,
                    cv[k].cell_id, p, res[i].depth);
      break;
    }
    filled[start_cv[i] + p - 1] = 1;
    res[i].curv[p - 1] = cv[k].st;
  }
  for (hsize_t k = 0; k < ncu && !rc; k++) {
    int64_t i = archive_find_row(rd->a, cu[k].cell_id);
    if (i < 0 || res[i].status == CELL_PENDING) continue;
    cs_curve_point *p = &res[i].curve[res[i].n_curve++];
    p->epoch = cu[k].epoch;
    p->train_loss = cu[k].train_loss;
    p->train_acc = cu[k].train_acc;
    p->test_acc = cu[k].test_acc;
  }
  // per-cell groups of finished cells
  for (int64_t i = 0; i < n && !rc && !(flags & ARCHIVE_READ_NO_GROUPS); i++)
    if (res[i].status != CELL_PENDING) rc = archive_read_groups(rd->file, path, &res[i]);
done:
  free(cells), free(cv), free(cu), free(count_cv), free(count_cu), free(start_cv), free(filled);
  if (rc) {
    archive_results_free(res, n);
    return rc;
  }
  *results = res;
  *n_out = n;
  return CS_OK;
}

static int archive_read_results_impl(const char *path, cs_cell_result **results, int64_t *n) {
  archive_reader rd;
  *results = NULL;
  *n = 0;
  CS_CHECK(archive_reader_open(path, &rd));
  int rc = archive_read_results_rd(&rd, results, n);
  archive_reader_close(&rd);
  return rc;
}

int archive_read_results(const char *path, cs_cell_result **results, int64_t *n) {
  ARCHIVE_QUIETLY(archive_read_results_impl(path, results, n));
}

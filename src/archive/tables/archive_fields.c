/* archive_fields.c — the curvature field of a cell ([curvature] field = N,
 * docs/ARCHIVE.md, "/fields"): the group /fields/<cell_id> with
 *   K, K_tilde, K_hat, logdet_g, aniso, S_err   float64 (L, N·N)
 *   class                                       int8 enum geom_class (L, N·N)
 *   pred                                        int8 (N, N), predicted class
 * and the attributes N (int64) and box (float64 [lo, hi]). Column g = i·N + j
 * of an (L, N·N) dataset, and pred[i][j], is the grid point
 * x = (lo + (j + ½)h, lo + (i + ½)h), h = (hi − lo)/N. The group is optional:
 * readers that do not know it never open it, so it needs no format_version
 * of its own (docs/DECISIONS.md). */
#include "archive_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int archive_check_fields(const char *path, const cs_cell_result *r) {
  if (!r->fd_pred && r->field_n == 0) return CS_OK;
  double **fd[RESULT_N_FIELD_ARRAYS];
  result_field_arrays((cs_cell_result *)r, fd);
  int whole = r->fd_pred && r->field_n >= 1 && r->field_n <= RESULT_FIELD_MAX &&
              (r->depth == 0 || r->fd_class) && isfinite(r->field_lo) &&
              isfinite(r->field_hi) && r->field_lo < r->field_hi;
  for (int k = 0; k < RESULT_N_FIELD_ARRAYS && whole; k++) whole = r->depth == 0 || *fd[k];
  if (!whole)
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": inconsistent curvature field (N %d, "
                    "box [%g, %g])", path, r->cell_id, r->field_n, r->field_lo, r->field_hi);
  return CS_OK;
}

/* The attribute box = [lo, hi] (float64). */
static int fields_write_box(hid_t g, double lo, double hi, const char *path) {
  hsize_t two = 2;
  double box[2] = {lo, hi};
  hid_t space = H5Screate_simple(1, &two, NULL), attr = H5I_INVALID_HID;
  if (space >= 0) attr = H5Acreate2(g, "box", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  int rc = CS_OK;
  if (attr < 0 || H5Awrite(attr, H5T_NATIVE_DOUBLE, box) < 0) {
    archive_h5_note();
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write the attribute box", path);
  }
  archive_h5_close_id(&attr, H5Aclose);
  archive_h5_close_id(&space, H5Sclose);
  return rc;
}

static int fields_read_box(hid_t g, double box[2], const char *path, const char *name) {
  htri_t e = H5Aexists(g, "box");
  hid_t attr = e > 0 ? H5Aopen(g, "box", H5P_DEFAULT) : H5I_INVALID_HID, space = H5I_INVALID_HID;
  hid_t ft = attr >= 0 ? H5Aget_type(attr) : H5I_INVALID_HID;
  hsize_t n = 0;
  int ok = attr >= 0 && ft >= 0 && H5Tget_class(ft) == H5T_FLOAT &&
           (space = H5Aget_space(attr)) >= 0 && H5Sget_simple_extent_ndims(space) == 1 &&
           H5Sget_simple_extent_dims(space, &n, NULL) == 1 && n == 2 &&
           H5Aread(attr, H5T_NATIVE_DOUBLE, box) >= 0;
  archive_h5_close_id(&ft, H5Tclose);
  archive_h5_close_id(&space, H5Sclose);
  archive_h5_close_id(&attr, H5Aclose);
  if (!ok) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: /%s has no box attribute [lo, hi] (two float64)", path, name);
  if (!isfinite(box[0]) || !isfinite(box[1]) || !(box[0] < box[1]))
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s box [%g, %g] is not an interval", path,
                    name, box[0], box[1]);
  return CS_OK;
}

int archive_write_fields(hid_t file, const cs_cell_result *r, const char *path) {
  char name[64];
  hid_t g;
  CS_CHECK(archive_cell_group_create(file, "fields", r->cell_id, path, name, &g));
  hsize_t N = (hsize_t)r->field_n, L = (hsize_t)r->depth;
  int rc = archive_attr_write_i64(g, "N", H5T_STD_I64LE, r->field_n, path);
  if (!rc) rc = fields_write_box(g, r->field_lo, r->field_hi, path);
  double **fd[RESULT_N_FIELD_ARRAYS];
  result_field_arrays((cs_cell_result *)r, fd);
  for (int k = 0; k < RESULT_N_FIELD_ARRAYS && !rc; k++)
    rc = archive_write_array(g, RESULT_FIELD_NAMES[k], L, N * N, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                             sizeof(double), *fd[k], path);
  hid_t ft = archive_class_type(H5T_STD_I8LE), mt = archive_class_type(H5T_NATIVE_INT8);
  if (!rc && (ft < 0 || mt < 0))
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot build the class enum type", path);
  if (!rc)
    rc = archive_write_array(g, "class", L, N * N, ft, mt, sizeof(int8_t), r->fd_class, path);
  if (!rc)
    rc = archive_write_array(g, "pred", N, N, H5T_STD_I8LE, H5T_NATIVE_INT8, sizeof(int8_t),
                             r->fd_pred, path);
  archive_h5_close_id(&ft, H5Tclose);
  archive_h5_close_id(&mt, H5Tclose);
  H5Gclose(g);
  return rc;
}

/* One dataset of the group into *v, its class and shape (rows × cols)
 * checked before anything is allocated (archive_read_array). */
static int fields_read_one(hid_t g, const char *field, hid_t mt, size_t elem, H5T_class_t cls,
                           hsize_t rows, hsize_t cols, const char *path, void **v) {
  hsize_t dims[2], want[2] = {rows, cols};
  if (rows == 0 || cols == 0) return cs_error(CS_ERR_INPUT, "%s: damaged archive: an empty field", path);
  return archive_read_array(g, field, mt, elem, cls, want, path, v, dims);
}

/* The datasets of a /fields/<cell_id> group, its only members. */
static const char *const FIELDS_MEMBERS[RESULT_N_FIELD_ARRAYS + 2] = {
    "K", "K_tilde", "K_hat", "logdet_g", "aniso", "S_err", "class", "pred"};

int archive_fields_check_values(const char *path, const char *name, int expect_n,
                                const cs_cell_result *r) {
  if (r->field_n < 1 || r->field_n > RESULT_FIELD_MAX || (expect_n >= 0 && r->field_n != expect_n))
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s has N = %d, its spec's field is %d",
                    path, name, r->field_n, expect_n);
  if (!isfinite(r->field_lo) || !isfinite(r->field_hi) || !(r->field_lo < r->field_hi))
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s box [%g, %g] is not an interval", path,
                    name, r->field_lo, r->field_hi);
  size_t ng = (size_t)r->field_n * (size_t)r->field_n, L = r->depth > 0 ? (size_t)r->depth : 0;
  for (size_t i = 0; r->fd_class && i < L * ng; i++)
    if (r->fd_class[i] < GEOM_DEGENERATE || r->fd_class[i] > GEOM_UNRESOLVED)
      return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s/class holds %d, not a class", path,
                      name, r->fd_class[i]);
  for (size_t i = 0; r->fd_pred && i < ng; i++)
    if (r->fd_pred[i] < 0)
      return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s/pred holds %d, not a class", path,
                      name, r->fd_pred[i]);
  return CS_OK;
}

static int fields_read_group(hid_t g, const char *path, const char *name, int expect_n,
                             cs_cell_result *r) {
  int64_t N = 0;
  const char *why = "out of range";
  if (archive_attr_read_i64(g, "N", &N, &why) != 0 || N < 1 || N > RESULT_FIELD_MAX)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s has no attribute N in 1..%d (it is %s)",
                    path, name, RESULT_FIELD_MAX, why);
  if (expect_n >= 0 && N != expect_n)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s has N = %" PRId64 ", its spec's field "
                    "is %d", path, name, N, expect_n);
  if (r->depth < 1)
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s of a cell without prefixes", path, name);
  for (int k = 0; k < RESULT_N_FIELD_ARRAYS; k++)
    if (strcmp(FIELDS_MEMBERS[k], RESULT_FIELD_NAMES[k]))
      return cs_error(CS_ERR_INTERNAL, "archive_fields.c: field names out of step with result.h");
  CS_CHECK(archive_group_members_check(g, FIELDS_MEMBERS, NULL, RESULT_N_FIELD_ARRAYS + 2, path, name));
  double box[2];
  CS_CHECK(fields_read_box(g, box, path, name));
  r->field_n = (int)N, r->field_lo = box[0], r->field_hi = box[1];
  hsize_t L = (hsize_t)r->depth, ng = (hsize_t)(N * N);
  double **fd[RESULT_N_FIELD_ARRAYS];
  result_field_arrays(r, fd);
  for (int k = 0; k < RESULT_N_FIELD_ARRAYS; k++)
    CS_CHECK(fields_read_one(g, RESULT_FIELD_NAMES[k], H5T_NATIVE_DOUBLE, sizeof(double), H5T_FLOAT,
                             L, ng, path, (void **)fd[k]));
  hid_t ct = archive_class_type(H5T_NATIVE_INT8);
  if (ct < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot build the class enum type", path);
  int rc = fields_read_one(g, "class", ct, sizeof(int8_t), H5T_ENUM, L, ng, path, (void **)&r->fd_class);
  H5Tclose(ct);
  CS_CHECK(rc);
  CS_CHECK(fields_read_one(g, "pred", H5T_NATIVE_INT8, sizeof(int8_t), H5T_INTEGER, (hsize_t)N,
                           (hsize_t)N, path, (void **)&r->fd_pred));
  return archive_fields_check_values(path, name, expect_n, r);
}

int archive_read_fields(hid_t file, const char *path, int expect_n, cs_cell_result *r) {
  char name[64];
  hid_t g;
  CS_CHECK(archive_cell_group_open(file, "fields", r->cell_id, path, name, &g));
  if (g < 0) return CS_OK;
  int rc = fields_read_group(g, path, name, expect_n, r);
  H5Gclose(g);
  return rc;
}

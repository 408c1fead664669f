/* archive_params.c — the trained parameters of a cell (save_params,
 * docs/ARCHIVE.md "/params"): the group /params/<cell_id> holding one
 * float64 dataset (rows × cols) per tensor, named in order by its
 * attribute "tensors"; written per result, read back as untrusted input
 * (names checked, nothing but the named datasets, finite values;
 * docs/SECURITY.md, "Archives"). */
#include "archive_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A 2-D float64 dataset (rows × cols), chunked and filtered. */
static int archive_write_matrix(hid_t loc, const char *name, hsize_t rows, hsize_t cols,
                                const double *v, const char *path) {
  return archive_write_array(loc, name, rows, cols, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                             sizeof(double), v, path);
}

int archive_write_params(hid_t file, const cs_cell_result *r, const char *path) {
  char name[64];
  hid_t g;
  CS_CHECK(archive_cell_group_create(file, "params", r->cell_id, path, name, &g));
  int rc = CS_OK;
  // the tensors, then their names in order as the attribute "tensors"
  for (int i = 0; i < r->n_tensors && !rc; i++)
    rc = archive_write_matrix(g, r->tensors[i].name, (hsize_t)r->tensors[i].rows,
                              (hsize_t)r->tensors[i].cols, r->tensors[i].v, path);
  char *names = NULL;
  if (!rc) rc = cs_calloc_bytes((void **)&names, (size_t)r->n_tensors, ARCHIVE_TENSOR_NAME_BYTES);
  if (!rc) {
    for (int i = 0; i < r->n_tensors; i++)
      cs_copy_str(names + (size_t)i * ARCHIVE_TENSOR_NAME_BYTES, ARCHIVE_TENSOR_NAME_BYTES,
                       r->tensors[i].name);
    hsize_t n = (hsize_t)r->n_tensors;
    hid_t t = archive_str_type(ARCHIVE_TENSOR_NAME_BYTES), space = H5Screate_simple(1, &n, NULL);
    hid_t attr = H5Acreate2(g, "tensors", t, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, t, names) < 0)
      rc = archive_h5_error(CS_ERR_IO, "%s: cannot write /%s attribute tensors", path, name);
    archive_h5_close_id(&attr, H5Aclose);
    H5Sclose(space), H5Tclose(t);
  }
  free(names);
  H5Gclose(g);
  return rc;
}

/* The tensor names of /params/<id> (attribute "tensors": a 1-D array of
 * strings, at most ARCHIVE_MAX_TENSORS), each a valid name, into *names. */
#define ARCHIVE_MAX_TENSORS 4096

static int archive_read_tensor_names(hid_t g, const char *path, const char *name, char **names,
                                     hsize_t *n) {
  *names = NULL;
  *n = 0;
  htri_t e = H5Aexists(g, "tensors");
  hid_t attr = e > 0 ? H5Aopen(g, "tensors", H5P_DEFAULT) : H5I_INVALID_HID;
  hid_t space = attr >= 0 ? H5Aget_space(attr) : H5I_INVALID_HID;
  hid_t ft = attr >= 0 ? H5Aget_type(attr) : H5I_INVALID_HID;
  hid_t t = archive_str_type(ARCHIVE_TENSOR_NAME_BYTES);
  int rc = CS_OK;
  if (space < 0 || ft < 0 || H5Sget_simple_extent_ndims(space) != 1 ||
      H5Tget_class(ft) != H5T_STRING || H5Tis_variable_str(ft) != 0 ||
      H5Tget_size(ft) > ARCHIVE_TENSOR_NAME_BYTES) {
    rc = archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: /%s has no tensors attribute (a 1-D "
                          "array of names of at most %d bytes)", path, name, ARCHIVE_TENSOR_NAME_BYTES);
  } else {
    H5Sget_simple_extent_dims(space, n, NULL);
    if (*n > ARCHIVE_MAX_TENSORS)
      rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s lists %llu tensors", path, name,
                    (unsigned long long)*n);
    if (!rc) rc = cs_calloc_bytes((void **)names, *n ? *n : 1, ARCHIVE_TENSOR_NAME_BYTES);
    if (!rc && *n > 0 && H5Aread(attr, t, *names) < 0)
      rc = archive_h5_error(CS_ERR_INPUT, "%s: cannot read /%s tensors", path, name);
  }
  for (hsize_t i = 0; !rc && i < *n; i++) {
    char *ti = *names + i * ARCHIVE_TENSOR_NAME_BYTES;
    ti[ARCHIVE_TENSOR_NAME_BYTES - 1] = '\0';
    int dup = 0;
    for (hsize_t j = 0; j < i && !dup; j++) dup = !strcmp(ti, *names + j * ARCHIVE_TENSOR_NAME_BYTES);
    if (dup || archive_check_tensor_name(ti) != 0)
      rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s tensors lists '%s' %s", path, name, ti,
                    dup ? "twice" : "(not a tensor name)");
  }
  archive_h5_close_id(&t, H5Tclose);
  archive_h5_close_id(&ft, H5Tclose);
  archive_h5_close_id(&space, H5Sclose);
  archive_h5_close_id(&attr, H5Aclose);
  if (rc) free(*names), *names = NULL, *n = 0;
  return rc;
}

int archive_params_check_values(const char *path, const char *name, const cs_cell_result *r) {
  for (int i = 0; i < r->n_tensors; i++) {
    const cs_tensor *T = &r->tensors[i];
    if (archive_check_tensor_name(T->name) != 0)
      return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s: tensor %d has no valid name", path,
                      name, i);
    for (int j = 0; j < i; j++)
      if (!strcmp(r->tensors[j].name, T->name))
        return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s names %.48s twice", path, name,
                        T->name);
    // trained weights of a finished cell are finite (only done cells save them)
    for (size_t k = 0; T->v && k < (size_t)T->rows * (size_t)T->cols; k++)
      if (!isfinite(T->v[k]))
        return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s/%s holds a non-finite value", path,
                        name, T->name);
  }
  return CS_OK;
}

int archive_read_params(hid_t file, const char *path, cs_cell_result *r) {
  char name[64];
  hid_t g;
  CS_CHECK(archive_cell_group_open(file, "params", r->cell_id, path, name, &g));
  if (g < 0) return CS_OK;
  // the names, in order, from the attribute "tensors": the group holds them and nothing else
  char *names = NULL;
  hsize_t n = 0;
  int rc = archive_read_tensor_names(g, path, name, &names, &n);
  if (!rc) rc = archive_group_members_check(g, NULL, names, (int64_t)n, path, name);
  if (!rc && n > 0) rc = CS_CALLOC(r->tensors, n);
  for (hsize_t i = 0; !rc && i < n; i++) {
    cs_tensor *T = &r->tensors[i];
    cs_copy_str(T->name, sizeof T->name, names + i * ARCHIVE_TENSOR_NAME_BYTES);
    hsize_t dims[2], any[2] = {0, 0};
    r->n_tensors = (int)i + 1;
    rc = archive_read_matrix(g, T->name, any, path, &T->v, dims);
    if (!rc && (dims[0] > INT32_MAX || dims[1] > INT32_MAX))
      rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s/%s is %llu x %llu", path, name, T->name,
                    (unsigned long long)dims[0], (unsigned long long)dims[1]);
    T->rows = (int)dims[0], T->cols = (int)dims[1];
  }
  if (!rc) rc = archive_params_check_values(path, name, r);
  free(names);
  H5Gclose(g);
  return rc;
}

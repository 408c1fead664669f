/* archive_format.c — the on-disk format on the HDF5 side (docs/ARCHIVE.md,
 * "On-disk layout") above the primitives (archive_h5.c) and the checks of
 * untrusted input (archive_guard.c): the compound row types, the 1-D
 * extendible tables (created, appended, read a range of rows at a time
 * through one conversion buffer), 2-D arrays written and read (shape,
 * class and size checked before anything is allocated), and the per-cell
 * groups /<top>/<cell_id> (created, opened through hard links only, their
 * members checked). */
#include "archive_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* /points/<id>/class: an HDF5 enum over int8 with the geom_class codes. */
hid_t archive_class_type(hid_t base) {
  static const struct {
    const char *name;
    int8_t code;
  } CODES[] = {{"degenerate", GEOM_DEGENERATE}, {"flat", GEOM_FLAT}, {"curved", GEOM_CURVED},
               {"unresolved", GEOM_UNRESOLVED}};
  hid_t t = H5Tenum_create(base);
  for (size_t i = 0; t >= 0 && i < sizeof CODES / sizeof CODES[0]; i++)
    H5Tenum_insert(t, CODES[i].name, &CODES[i].code);
  return t;
}

/* Memory type of the /cells result columns (archive_cell_row). */
hid_t archive_cell_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_cell_row));
  hid_t st = archive_str_type(ARCHIVE_STATUS_BYTES), mt = archive_str_type(ARCHIVE_MESSAGE_BYTES);
  H5Tinsert(t, "cell_id", HOFFSET(archive_cell_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "status", HOFFSET(archive_cell_row, status), st);
  H5Tinsert(t, "rank", HOFFSET(archive_cell_row, rank), H5T_NATIVE_INT32);
  H5Tinsert(t, "attempts", HOFFSET(archive_cell_row, attempts), H5T_NATIVE_INT32);
  H5Tinsert(t, "wall_s", HOFFSET(archive_cell_row, wall_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "train_loss", HOFFSET(archive_cell_row, train_loss), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "train_acc", HOFFSET(archive_cell_row, train_acc), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "test_acc", HOFFSET(archive_cell_row, test_acc), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "n_params", HOFFSET(archive_cell_row, n_params), H5T_NATIVE_INT64);
  H5Tinsert(t, "message", HOFFSET(archive_cell_row, message), mt);
  H5Tclose(st);
  H5Tclose(mt);
  return t;
}

/* Memory type of a /runs row: cs_run_info itself. */
hid_t archive_run_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(cs_run_info));
  hid_t s16 = archive_str_type(16), s32 = archive_str_type(32), s64 = archive_str_type(64),
        s256 = archive_str_type(256);
  H5Tinsert(t, "start", HOFFSET(cs_run_info, start), s32);
  H5Tinsert(t, "end", HOFFSET(cs_run_info, end), s32);
  H5Tinsert(t, "hosts", HOFFSET(cs_run_info, hosts), s256);
  H5Tinsert(t, "ranks", HOFFSET(cs_run_info, ranks), H5T_NATIVE_INT32);
  H5Tinsert(t, "team", HOFFSET(cs_run_info, team), s16);
  H5Tinsert(t, "shard", HOFFSET(cs_run_info, shard), s32);
  H5Tinsert(t, "slurm_job", HOFFSET(cs_run_info, slurm_job), s64);
  H5Tinsert(t, "nodelist", HOFFSET(cs_run_info, nodelist), s256);
  H5Tinsert(t, "requeue_count", HOFFSET(cs_run_info, requeue_count), H5T_NATIVE_INT32);
  H5Tinsert(t, "cells_run", HOFFSET(cs_run_info, cells_run), H5T_NATIVE_INT64);
  H5Tclose(s16), H5Tclose(s32), H5Tclose(s64), H5Tclose(s256);
  return t;
}

/* Packed copy of a memory compound type, for the file. */
hid_t archive_packed(hid_t mem_type) {
  hid_t t = H5Tcopy(mem_type);
  if (t >= 0) H5Tpack(t);
  return t;
}

hsize_t archive_table_chunk_rows(size_t row_bytes, size_t chunk_bytes) {
  hsize_t n = (chunk_bytes ? chunk_bytes : ARCHIVE_CHUNK_BYTES) / (row_bytes ? row_bytes : 1);
  return n < 16 ? 16 : n;
}

/* Create an empty extendible table (plus committed_rows = 0 when asked). */
int archive_table_create(hid_t file, const char *name, hid_t ftype, int committed,
                         size_t chunk_bytes, const char *path) {
  hsize_t dims = 0, maxdims = H5S_UNLIMITED;
  hsize_t chunk = archive_table_chunk_rows(H5Tget_size(ftype), chunk_bytes);
  hid_t space = H5Screate_simple(1, &dims, &maxdims), dcpl = archive_dcpl(1, &chunk, 1);
  hid_t ds = space >= 0 && dcpl >= 0
                 ? H5Dcreate2(file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)
                 : H5I_INVALID_HID;
  int rc = ds < 0 ? archive_h5_error(CS_ERR_IO, "%s: cannot create the table /%s", path, name) : CS_OK;
  if (!rc && committed) rc = archive_attr_write_i64(ds, "committed_rows", H5T_STD_I64LE, 0, path);
  archive_h5_close_id(&ds, H5Dclose);
  archive_h5_close_id(&dcpl, H5Pclose);
  archive_h5_close_id(&space, H5Sclose);
  return rc;
}

hsize_t archive_table_length(hid_t ds) {
  hid_t space = H5Dget_space(ds);
  hsize_t n = 0;
  if (space >= 0) {
    if (H5Sget_simple_extent_ndims(space) == 1) H5Sget_simple_extent_dims(space, &n, NULL);
    H5Sclose(space);
  }
  return n;
}

/* The length of a table for a reader: a dataspace that cannot be read or is
 * not 1-D is a damaged archive (never an empty table). */
int archive_table_length_checked(hid_t ds, const char *path, const char *name, hsize_t *n) {
  *n = 0;
  hid_t space = H5Dget_space(ds);
  int nd = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
  int ok = nd == 1 && H5Sget_simple_extent_dims(space, n, NULL) == 1;
  if (!ok) archive_h5_note();
  if (space >= 0) H5Sclose(space);
  if (!ok)
    return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read the extent of /%s "
                            "(%d dimensions)", path, name, nd);
  return CS_OK;
}

/* Before a read: float64 members of the memory type that the file's table
 * lacks (a format_version 2 /curvature has no sink_mass, max_attn) are NaN
 * in every row; HDF5 leaves members it does not convert untouched. */
static void archive_fill_absent_columns(hid_t ds, hid_t mtype, hsize_t n, void *rows) {
  hid_t ftype = H5Dget_type(ds);
  if (ftype < 0) return;
  size_t row_bytes = H5Tget_size(mtype);
  int nm = H5Tget_class(mtype) == H5T_COMPOUND ? H5Tget_nmembers(mtype) : 0;
  for (int i = 0; i < nm; i++) {
    char *name = H5Tget_member_name(mtype, (unsigned)i);
    hid_t member = H5Tget_member_type(mtype, (unsigned)i);
    int absent = name && H5Tget_member_index(ftype, name) < 0;
    if (absent && member >= 0 && H5Tequal(member, H5T_NATIVE_DOUBLE) > 0) {
      size_t off = H5Tget_member_offset(mtype, (unsigned)i);
      double nan = NAN;
      for (hsize_t r = 0; r < n; r++) memcpy((char *)rows + r * row_bytes + off, &nan, sizeof nan);
    }
    if (member >= 0) H5Tclose(member);
    H5free_memory(name);
  }
  H5Tclose(ftype);
}

/* The dataset transfer of table reads and writes: one type-conversion and
 * one background buffer for the process, set once (H5Pset_buffer). By
 * default HDF5 allocates both afresh for every H5Dread and H5Dwrite that
 * converts (the file's packed rows to the padded structs), the background
 * one zero-filled: a megabyte mapped and faulted in per read, most of a
 * merge's time (docs/DECISIONS.md, "Merge decodes what it copies"). The values
 * converted are the same either way. H5P_DEFAULT when the buffers cannot be
 * had. */
#define ARCHIVE_TCONV_BYTES ((size_t)1 << 20)
static hid_t archive_xfer_id = H5I_INVALID_HID;

hid_t archive_table_xfer(void) {
  if (archive_xfer_id >= 0) return archive_xfer_id;
  static void *tconv, *bkg;  // live as long as the process, like the property list
  if (!tconv) tconv = malloc(ARCHIVE_TCONV_BYTES);
  if (!bkg) bkg = malloc(ARCHIVE_TCONV_BYTES);
  if (!tconv || !bkg) return H5P_DEFAULT;
  hid_t x = H5Pcreate(H5P_DATASET_XFER);
  if (x < 0) return H5P_DEFAULT;
  if (H5Pset_buffer(x, ARCHIVE_TCONV_BYTES, tconv, bkg) < 0) archive_h5_close_id(&x, H5Pclose);
  if (x < 0) return H5P_DEFAULT;
  archive_xfer_id = x;
  return x;
}

/* Read or write rows [start, start+n) of a table with a memory type. */
int archive_table_io(hid_t ds, hid_t mtype, hsize_t start, hsize_t n, void *rows, int write) {
  if (n == 0) return 0;
  if (!write) archive_fill_absent_columns(ds, mtype, n, rows);
  hid_t fspace = H5Dget_space(ds), mspace = H5Screate_simple(1, &n, NULL), x = archive_table_xfer();
  int ok = fspace >= 0 && mspace >= 0 &&
           H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &n, NULL) >= 0;
  if (ok) ok = (write ? H5Dwrite(ds, mtype, mspace, fspace, x, rows)
                      : H5Dread(ds, mtype, mspace, fspace, x, rows)) >= 0;
  if (!ok) archive_h5_note();
  if (mspace >= 0) H5Sclose(mspace);
  if (fspace >= 0) H5Sclose(fspace);
  return ok ? 0 : -1;
}

/* Append n rows at the end. */
int archive_table_append(hid_t ds, hid_t mtype, const void *rows, hsize_t n,
                                const char *path, const char *name) {
  if (n == 0) return CS_OK;
  hsize_t len = archive_table_length(ds), new_len = len + n;
  if (H5Dset_extent(ds, &new_len) < 0 || archive_table_io(ds, mtype, len, n, (void *)rows, 1) < 0)
    return archive_h5_error(CS_ERR_IO, "%s: cannot append %llu rows to /%s", path,
                            (unsigned long long)n, name);
  return CS_OK;
}

/* A 2-D dataset (rows × cols) of file type ftype from memory of type mtype
 * (elements of elem_bytes), chunked, shuffled and Fletcher32-checked but not
 * deflated: per-point curvature and trained weights are full-precision
 * doubles that deflate shrinks by ~18% at ~100 µs per chunk, most of the
 * cost of a result with points (docs/DECISIONS.md, "Per-point arrays without deflate"). */
int archive_write_array(hid_t loc, const char *name, hsize_t rows, hsize_t cols,
                               hid_t ftype, hid_t mtype, size_t elem_bytes, const void *v,
                               const char *path) {
  hsize_t dims[2] = {rows, cols}, maxdims[2], chunk[2];
  for (int k = 0; k < 2; k++) maxdims[k] = dims[k] ? dims[k] : H5S_UNLIMITED;
  chunk[1] = cols ? cols : 1;
  chunk[0] = (ARCHIVE_CHUNK_BYTES * 2 / elem_bytes) / chunk[1];
  if (chunk[0] < 1) chunk[0] = 1;
  if (rows && chunk[0] > rows) chunk[0] = rows;
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t space = H5Screate_simple(2, dims, maxdims), dcpl = archive_dcpl(2, chunk, 0);
  hid_t ds = H5Dcreate2(loc, name, ftype, space, lcpl, dcpl, H5P_DEFAULT);
  int rc = CS_OK;
  if (ds < 0 || (rows * cols > 0 && H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)) {
    archive_h5_note();
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write the dataset %s", path, name);
  }
  archive_h5_close_id(&ds, H5Dclose);
  archive_h5_close_id(&dcpl, H5Pclose);
  archive_h5_close_id(&space, H5Sclose);
  archive_h5_close_id(&lcpl, H5Pclose);
  return rc;
}

/* Create the group /<top>/<cell_id> (and /<top>); its name into name. */
int archive_cell_group_create(hid_t file, const char *top, int64_t cell_id, const char *path,
                                     char name[64], hid_t *g) {
  snprintf(name, 64, "%s/%" PRId64, top, cell_id);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  *g = H5Gcreate2(file, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Pclose(lcpl);
  if (*g < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot create /%s", path, name);
  return CS_OK;
}

/* A 2-D dataset of class cls into a fresh array of elements of memory type
 * mtype (elem_bytes each); dims out. Shape (want) and class are checked and
 * the size taken from the budget before anything is allocated
 * (docs/SECURITY.md, "Archives"). */
int archive_read_array(hid_t loc, const char *name, hid_t mtype, size_t elem_bytes, H5T_class_t cls,
                       const hsize_t want[2], const char *path, void **v, hsize_t dims[2]) {
  *v = NULL;
  dims[0] = dims[1] = 0;
  char full[640];
  if (H5Iget_name(loc, full, sizeof full) < 0) full[0] = '\0';
  snprintf(full + strlen(full), sizeof full - strlen(full), "%s%s",
           full[0] && full[strlen(full) - 1] == '/' ? "" : "/", name);
  hid_t ds, space = H5I_INVALID_HID, ft = H5I_INVALID_HID;
  CS_CHECK(archive_dataset_open(loc, name, path, &ds));
  int rc = CS_OK;
  if ((space = H5Dget_space(ds)) < 0 || (ft = H5Dget_type(ds)) < 0) {
    rc = archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read %s", path, full);
  } else if (H5Sget_simple_extent_ndims(space) != 2) {
    rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: dataset %s is not 2-D", path, full);
  } else if (H5Tget_class(ft) != cls) {
    rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: dataset %s is not of type %s", path, full,
                  cls == H5T_FLOAT ? "float64" : cls == H5T_ENUM ? "class (enum)" : "int8");
  } else {
    H5Sget_simple_extent_dims(space, dims, NULL);
    if ((want[0] && dims[0] != want[0]) || (want[1] && dims[1] != want[1]))
      rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: %s is %llu x %llu, expected %llu x %llu",
                    path, full, (unsigned long long)dims[0], (unsigned long long)dims[1],
                    (unsigned long long)want[0], (unsigned long long)want[1]);
    hsize_t n = 0;
    if (!rc && __builtin_mul_overflow(dims[0], dims[1], &n))
      rc = cs_error(CS_ERR_INPUT, "%s: damaged archive: %s is too large", path, full);
    if (!rc && n > 0) rc = archive_dataset_check_stored_bytes(ds, path, full);
    if (!rc) rc = archive_budget_take(n, elem_bytes, path, full);
    if (!rc && n > 0) {
      rc = cs_calloc_bytes(v, n, elem_bytes);
      if (!rc && H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *v) < 0)
        rc = archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read %s", path, full);
    }
  }
  archive_h5_close_id(&ft, H5Tclose);
  archive_h5_close_id(&space, H5Sclose);
  H5Dclose(ds);
  if (rc) {
    free(*v);
    *v = NULL;
  }
  return rc;
}

/* A 2-D float64 dataset of shape want into a fresh array; dims out. */
int archive_read_matrix(hid_t loc, const char *name, const hsize_t want[2], const char *path,
                               double **v, hsize_t dims[2]) {
  return archive_read_array(loc, name, H5T_NATIVE_DOUBLE, sizeof(double), H5T_FLOAT, want, path,
                            (void **)v, dims);
}

/* Does a link exist (name: one component)? A failed lookup (damaged group)
 * is a refusal, never "no". */
static int archive_link_lookup(hid_t loc, const char *name, const char *path, const char *full,
                               int *there) {
  htri_t e = H5Lexists(loc, name, H5P_DEFAULT);
  *there = e > 0;
  if (e < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot look up /%s", path, full);
  return CS_OK;
}

/* Open the group /<top>/<cell_id> when there is one (*g < 0: none); its
 * name into name. One component at a time, each a hard link
 * (archive_group_open): a link out of the file is never followed. */
int archive_cell_group_open(hid_t file, const char *top, int64_t cell_id, const char *path,
                                   char name[64], hid_t *g) {
  *g = H5I_INVALID_HID;
  snprintf(name, 64, "%s/%" PRId64, top, cell_id);
  int there;
  CS_CHECK(archive_link_lookup(file, top, path, top, &there));
  if (!there) return CS_OK;
  hid_t tg;
  CS_CHECK(archive_group_open(file, top, path, &tg));
  int rc = archive_link_lookup(tg, name + strlen(top) + 1, path, name, &there);
  if (!rc && there) rc = archive_group_open(tg, name + strlen(top) + 1, path, g);
  H5Gclose(tg);
  return rc;
}

/* Every member of a per-cell group is one of the n names of want (nested
 * groups on the way to them allowed): nothing else is read, copied or
 * trusted (docs/SECURITY.md, "Archives"). */
typedef struct {
  const char *const *want;
  const char *names;  /* or: n names of ARCHIVE_TENSOR_NAME_BYTES each */
  int64_t n;
  char bad[256];
} archive_members;

static int archive_members_is(const archive_members *M, const char *name, int prefix) {
  size_t len = strlen(name);
  for (int64_t i = 0; i < M->n; i++) {
    const char *w = M->want ? M->want[i] : M->names + i * ARCHIVE_TENSOR_NAME_BYTES;
    if (prefix ? !strncmp(w, name, len) && w[len] == '/' : !strcmp(w, name)) return 1;
  }
  return 0;
}

static int archive_members_link(hid_t g, const char *name, const char *rel, const H5L_info_t *li,
                                void *ctx) {
  archive_members *M = ctx;
  H5O_info_t oi;
  int ok = li->type == H5L_TYPE_HARD && H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) >= 0;
  if (ok && oi.type == H5O_TYPE_GROUP) ok = archive_members_is(M, rel, 1);
  else if (ok) ok = oi.type == H5O_TYPE_DATASET && archive_members_is(M, rel, 0);
  if (!ok) snprintf(M->bad, sizeof M->bad, "%s", rel);
  return ok ? 0 : 1;
}

int archive_group_members_check(hid_t g, const char *const *want, const char *names, int64_t n,
                                const char *path, const char *group) {
  archive_members M = {want, names, n, ""};
  char start[320];
  snprintf(start, sizeof start, "/%s", group);
  int e = archive_walk(g, start, path, archive_members_link, &M, NULL, 0);  // bounded, iterative
  if (M.bad[0])
    return cs_error(CS_ERR_INPUT, "%s: damaged archive: /%s/%s is not one of the group's "
                    "objects (docs/ARCHIVE.md)", path, group, M.bad);
  if (e < 0) return cs_error_message()[0] ? CS_ERR_INPUT
                                          : cs_error(CS_ERR_INPUT, "%s: damaged archive: cannot list /%s", path, group);
  return CS_OK;
}

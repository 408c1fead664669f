/* archive_format.c — the on-disk format on the HDF5 side (docs/ARCHIVE.md,
 * "On-disk layout"): HDF5 error capture and quieting, file access, string
 * and compound row types, attributes, and the 1-D extendible tables. */
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

/* HDF5 clears its error stack at the next API call, so a helper that must
 * close things after a failure notes the reason first (archive_h5_note). */
static _Thread_local char archive_saved_reason[256];

archive_quiet archive_quiet_begin(void) {
  archive_quiet q = {NULL, NULL};
  H5Eget_auto2(H5E_DEFAULT, &q.func, &q.data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  archive_saved_reason[0] = '\0';
  return q;
}

void archive_quiet_end(archive_quiet q) { H5Eset_auto2(H5E_DEFAULT, q.func, q.data); }

/* The innermost description, passing over the plugin loader's: for a
 * filter the library lacks, its innermost entry is the plugin directory it
 * searched, the filter's own ("required filter 'X' is not registered")
 * comes next (docs/SECURITY.md). */
static herr_t archive_h5_walk(unsigned n, const H5E_error2_t *e, void *data) {
  char *buf = data;
  if (!buf[0] && e->desc && e->maj_num != H5E_PLUGIN) archive_copy_str(buf, 256, e->desc);
  return 0;
}

void archive_h5_note(void) {
  char buf[256] = "";
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, archive_h5_walk, buf);
  if (buf[0]) archive_copy_str(archive_saved_reason, sizeof archive_saved_reason, buf);
}

/* The innermost HDF5 error description (what actually went wrong). */
static const char *archive_h5_reason(char buf[256]) {
  buf[0] = '\0';
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, archive_h5_walk, buf);
  if (!buf[0]) archive_copy_str(buf, 256, archive_saved_reason);
  if (!buf[0]) archive_copy_str(buf, 256, "HDF5 error");
  archive_saved_reason[0] = '\0';
  return buf;
}

/* cs_error with the HDF5 reason appended: "<message>: <reason>". */
int archive_h5_error(int code, const char *fmt, ...) {
  char reason[256], msg[1536];
  archive_h5_reason(reason);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cs_error(code, "%s: %s", msg, reason);
}

void archive_h5_close_id(hid_t *id, herr_t (*close_fn)(hid_t)) {
  if (*id >= 0) close_fn(*id);
  *id = H5I_INVALID_HID;
}

/* File access: sec2 driver, no HDF5 file locking (a reader such as an open
 * h5py session must never make the sweep's writes fail; the journal lock
 * keeps writers exclusive), every object closed with the file. */
static hid_t archive_fapl(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) return fapl;
  H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
  H5Pset_file_locking(fapl, 0, 1);
  return fapl;
}

static int archive_open_refused; /* the cs code of the last read-only open's lock refusal */

int archive_h5_lock_refused(void) {
  return archive_open_refused;
}

/* Writers use the HDF5 1.10 file format (libver bounds v110..latest):
 * checksummed superblock, object headers and B-trees, also for objects a
 * later writer adds to an archive first written with older bounds. A
 * read-only open holds the archive's shared lock until archive_h5_fclose
 * (docs/ARCHIVE.md, "Live readers"); a read-write one is a writer's, which
 * took the exclusive lock itself (archive_h5_session_open) or writes a
 * file no reader knows yet (a temporary name). */
hid_t archive_h5_open(const char *path, unsigned flags) {
  archive_open_refused = CS_OK;
  int lock_fd = -1;
  if (!(flags & H5F_ACC_RDWR)) {
    int rc = archive_file_lock(path, 0, ARCHIVE_READ_WAIT_SECONDS, &lock_fd, NULL);
    if (rc) {
      archive_open_refused = rc;
      return H5I_INVALID_HID;
    }
  }
  hid_t fapl = archive_fapl(), f = H5I_INVALID_HID;
  if (fapl >= 0 && (!(flags & H5F_ACC_RDWR) ||
                    H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST) >= 0))
    f = H5Fopen(path, flags, fapl);
  if (fapl >= 0) H5Pclose(fapl);
  if (f < 0) archive_file_unlock(&lock_fd);
  else archive_file_lock_attach(lock_fd, f);
  return f;
}

/* A new file only (H5F_ACC_EXCL: O_CREAT | O_EXCL, so never through a
 * symbolic link or over a file already there; docs/SECURITY.md). */
hid_t archive_h5_create(const char *path) {
  hid_t fapl = archive_fapl();
  if (fapl < 0) return fapl;
  if (H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST) < 0) {
    H5Pclose(fapl);
    return H5I_INVALID_HID;
  }
  hid_t f = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  return f;
}

/* Fixed-length NUL-terminated ASCII string type of n bytes. */
hid_t archive_str_type(size_t n) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0) return t;
  H5Tset_size(t, n);
  H5Tset_strpad(t, H5T_STR_NULLTERM);
  return t;
}

/* Dataset creation: chunked, shuffle (+ deflate when asked) + Fletcher32. */
hid_t archive_dcpl(int rank, const hsize_t *chunk, int deflate) {
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (dcpl < 0) return dcpl;
  if (H5Pset_chunk(dcpl, rank, chunk) < 0 || H5Pset_shuffle(dcpl) < 0 ||
      (deflate && H5Pset_deflate(dcpl, ARCHIVE_DEFLATE_LEVEL) < 0) || H5Pset_fletcher32(dcpl) < 0) {
    H5Pclose(dcpl);
    return H5I_INVALID_HID;
  }
  return dcpl;
}

static int archive_attr_write(hid_t obj, const char *name, hid_t type, const void *value,
                              const char *path) {
  hid_t space = H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
  int rc = CS_OK;
  if (H5Aexists(obj, name) > 0) attr = H5Aopen(obj, name, H5P_DEFAULT);
  else attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (space < 0 || attr < 0 || H5Awrite(attr, type, value) < 0) {
    archive_h5_note();
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write the attribute %s", path, name);
  }
  archive_h5_close_id(&attr, H5Aclose);
  archive_h5_close_id(&space, H5Sclose);
  return rc;
}

int archive_attr_write_str(hid_t obj, const char *name, const char *value, const char *path) {
  hid_t t = archive_str_type(strlen(value) + 1);
  if (t < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot make a string type", path);
  int rc = archive_attr_write(obj, name, t, value, path);
  H5Tclose(t);
  return rc;
}

int archive_attr_write_i64(hid_t obj, const char *name, hid_t file_type, int64_t v,
                                  const char *path) {
  hid_t space = H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
  int rc = CS_OK;
  if (H5Aexists(obj, name) > 0) attr = H5Aopen(obj, name, H5P_DEFAULT);
  else attr = H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (space < 0 || attr < 0 || H5Awrite(attr, H5T_NATIVE_INT64, &v) < 0) {
    archive_h5_note();
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot write the attribute %s", path, name);
  }
  archive_h5_close_id(&attr, H5Aclose);
  archive_h5_close_id(&space, H5Sclose);
  return rc;
}

/* Attributes are untrusted (docs/SECURITY.md, "Archives"): one value
 * (scalar or one element) of the expected class and a bounded size
 * (archive_attr_open_one), else -1 and the reason in *why (may be NULL). */
#define ARCHIVE_ATTR_STR_MAX 4096 /* bytes of a fixed-length string attribute */

/* Read a string attribute (fixed or variable length) into buf. */
int archive_attr_read_str(hid_t obj, const char *name, char *buf, size_t len, const char **why) {
  buf[0] = '\0';
  const char *reason;
  hid_t attr, ft, mt = H5I_INVALID_HID;
  if (archive_attr_open_one(obj, name, H5T_STRING, ARCHIVE_ATTR_STR_MAX, &attr, &ft, &reason) != 0) {
    if (why) *why = reason;
    return -1;
  }
  int ok = -1;
  if (H5Tis_variable_str(ft) > 0) {
    char *s = NULL;
    mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, H5T_VARIABLE);
    if (H5Aread(attr, mt, &s) >= 0 && s) {
      archive_copy_str(buf, len, s);
      ok = 0;
    }
    if (s) H5free_memory(s);
  } else {
    char tmp[ARCHIVE_ATTR_STR_MAX + 1];
    size_t n = H5Tget_size(ft);
    mt = archive_str_type(n + 1);
    memset(tmp, 0, sizeof tmp);
    if (mt >= 0 && H5Aread(attr, mt, tmp) >= 0) {
      archive_copy_str(buf, len, tmp);
      ok = 0;
    }
  }
  if (ok != 0 && why) *why = "unreadable";
  archive_h5_close_id(&mt, H5Tclose);
  archive_h5_close_id(&ft, H5Tclose);
  H5Aclose(attr);
  return ok;
}

/* Read an integer attribute (at most 64 bits). */
int archive_attr_read_i64(hid_t obj, const char *name, int64_t *v, const char **why) {
  const char *reason;
  hid_t attr, ft;
  if (archive_attr_open_one(obj, name, H5T_INTEGER, sizeof(int64_t), &attr, &ft, &reason) != 0) {
    if (why) *why = reason;
    return -1;
  }
  int64_t x = 0;
  int ok = H5Aread(attr, H5T_NATIVE_INT64, &x) >= 0 ? 0 : -1;
  if (ok == 0) *v = x;
  else if (why) *why = "unreadable";
  archive_h5_close_id(&ft, H5Tclose);
  H5Aclose(attr);
  return ok;
}

int archive_link_exists(hid_t loc, const char *name) {
  return H5Lexists(loc, name, H5P_DEFAULT) > 0;
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

hid_t archive_curv_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_curv_row));
  H5Tinsert(t, "cell_id", HOFFSET(archive_curv_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "prefix", HOFFSET(archive_curv_row, prefix), H5T_NATIVE_INT32);
  H5Tinsert(t, "n_points", HOFFSET(archive_curv_row, st.n_points), H5T_NATIVE_INT32);
  for (size_t i = 0; i < ARCHIVE_N_STATS_FIELDS; i++)
    H5Tinsert(t, ARCHIVE_STATS_FIELDS[i].name,
              offsetof(archive_curv_row, st) + ARCHIVE_STATS_FIELDS[i].offset, H5T_NATIVE_DOUBLE);
  return t;
}

hid_t archive_curve_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_curve_row));
  H5Tinsert(t, "cell_id", HOFFSET(archive_curve_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "epoch", HOFFSET(archive_curve_row, epoch), H5T_NATIVE_INT32);
  H5Tinsert(t, "train_loss", HOFFSET(archive_curve_row, train_loss), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "train_acc", HOFFSET(archive_curve_row, train_acc), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "test_acc", HOFFSET(archive_curve_row, test_acc), H5T_NATIVE_DOUBLE);
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
 * merge's time (bench/RESULTS.md, "HDF5 table reads"). The values
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
  if (H5Pset_buffer(x, ARCHIVE_TCONV_BYTES, tconv, bkg) < 0) {
    H5Pclose(x);
    return H5P_DEFAULT;
  }
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

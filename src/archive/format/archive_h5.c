/* archive_h5.c — the HDF5 primitives every other file of src/archive uses
 * (docs/ARCHIVE.md, "On-disk layout"): HDF5's printing off in public
 * functions (ARCHIVE_QUIET), its error reason captured into cs_error,
 * identifiers closed, files opened and created (under the archive's lock,
 * archive_lock.c) and the per-write session of a writer, string types and
 * dataset creation properties, and attributes: written, and read as
 * untrusted input (one value of the expected class and a bounded size;
 * docs/SECURITY.md, "Archives"). */
#include "archive_internal.h"

#include "curvsweep/path.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

void archive_quiet_end(archive_quiet *q) { H5Eset_auto2(H5E_DEFAULT, q->func, q->data); }

/* The innermost description, passing over the plugin loader's: for a
 * filter the library lacks, its innermost entry is the plugin directory it
 * searched, the filter's own ("required filter 'X' is not registered")
 * comes next (docs/SECURITY.md). */
static herr_t archive_h5_walk(unsigned n, const H5E_error2_t *e, void *data) {
  char *buf = data;
  if (!buf[0] && e->desc && e->maj_num != H5E_PLUGIN) cs_copy_str(buf, 256, e->desc);
  return 0;
}

void archive_h5_note(void) {
  char buf[256] = "";
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, archive_h5_walk, buf);
  if (buf[0]) cs_copy_str(archive_saved_reason, sizeof archive_saved_reason, buf);
}

/* The innermost HDF5 error description (what actually went wrong). */
static const char *archive_h5_reason(char buf[256]) {
  buf[0] = '\0';
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, archive_h5_walk, buf);
  if (!buf[0]) cs_copy_str(buf, 256, archive_saved_reason);
  if (!buf[0]) cs_copy_str(buf, 256, "HDF5 error");
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
  // a regular file only, looked at without blocking (O_NONBLOCK): HDF5's
  // open, and the lock's, would wait forever on a FIFO (docs/SECURITY.md,
  // "Hostile archives: second audit")
  const char *why = NULL;
  int fd = cs_open_regular(path, O_RDONLY, 0, NULL, &why);
  if (fd == -2) {
    archive_open_refused = cs_error(CS_ERR_INPUT, "%s is %s, so not a curvsweep archive", path, why);
    return H5I_INVALID_HID;
  }
  if (fd >= 0) close(fd);
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
  hid_t fapl = archive_fapl(), f = H5I_INVALID_HID;
  if (fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST) >= 0)
    f = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  archive_h5_close_id(&fapl, H5Pclose);
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
  if (dcpl >= 0 && (H5Pset_chunk(dcpl, rank, chunk) < 0 || H5Pset_shuffle(dcpl) < 0 ||
                    (deflate && H5Pset_deflate(dcpl, ARCHIVE_DEFLATE_LEVEL) < 0) ||
                    H5Pset_fletcher32(dcpl) < 0))
    archive_h5_close_id(&dcpl, H5Pclose);
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

/* An attribute of one value (scalar or one element) of class cls and at
 * most max_bytes (variable-length strings: any length). */
int archive_attr_open_one(hid_t obj, const char *name, H5T_class_t cls, size_t max_bytes,
                          hid_t *attr, hid_t *ftype, const char **why) {
  *attr = *ftype = H5I_INVALID_HID;
  *why = "missing";
  htri_t e = H5Aexists(obj, name);
  if (e <= 0) {
    if (e < 0) *why = "unreadable";
    return -1;
  }
  *attr = H5Aopen(obj, name, H5P_DEFAULT);
  hid_t space = *attr >= 0 ? H5Aget_space(*attr) : H5I_INVALID_HID;
  *ftype = *attr >= 0 ? H5Aget_type(*attr) : H5I_INVALID_HID;
  H5S_class_t sc = space >= 0 ? H5Sget_simple_extent_type(space) : H5S_NO_CLASS;
  hssize_t npoints = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
  size_t size = *ftype >= 0 ? H5Tget_size(*ftype) : 0;
  int ok = 0;
  if (*attr < 0 || space < 0 || *ftype < 0) *why = "unreadable";
  else if (H5Tget_class(*ftype) != cls) *why = cls == H5T_STRING ? "not a string" : "not an integer";
  else if (sc != H5S_SCALAR && !(sc == H5S_SIMPLE && npoints == 1))
    *why = "not a single value (an array, or empty)";
  else if (cls == H5T_STRING && H5Tis_variable_str(*ftype) > 0) ok = 1;
  else if (size == 0 || size > max_bytes) *why = "of an impossible size";
  else ok = 1;
  archive_h5_close_id(&space, H5Sclose);
  if (ok) {
    *why = NULL;
  } else {
    archive_h5_close_id(ftype, H5Tclose);
    archive_h5_close_id(attr, H5Aclose);
  }
  return ok ? 0 : -1;
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
      cs_copy_str(buf, len, s);
      ok = 0;
    }
    if (s) H5free_memory(s);
  } else {
    char tmp[ARCHIVE_ATTR_STR_MAX + 1];
    size_t n = H5Tget_size(ft);
    mt = archive_str_type(n + 1);
    memset(tmp, 0, sizeof tmp);
    if (mt >= 0 && H5Aread(attr, mt, tmp) >= 0) {
      cs_copy_str(buf, len, tmp);
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

/* Per-write HDF5 session: lock, open, do, close (readers open the file
 * between writes, under the shared lock; docs/ARCHIVE.md, "Live readers"). */
int archive_h5_session_lock(const cs_archive *a, double wait_s, int *lock_fd, int *busy) {
  return archive_file_lock(a->path, 1, wait_s, lock_fd, busy);
}

int archive_h5_session_open_locked(const cs_archive *a, int *lock_fd, hid_t *file) {
  *file = archive_h5_open(a->path, H5F_ACC_RDWR);
  if (*file < 0) {
    int rc = archive_h5_error(CS_ERR_IO, "cannot open the archive %s for writing", a->path);
    archive_file_unlock(lock_fd);
    return rc;
  }
  archive_file_lock_attach(*lock_fd, *file);
  *lock_fd = -1;
  return CS_OK;
}

int archive_h5_session_open(const cs_archive *a, hid_t *file) {
  int fd = -1;
  *file = H5I_INVALID_HID;
  CS_CHECK(archive_h5_session_lock(a, ARCHIVE_WRITE_WAIT_SECONDS, &fd, NULL));
  return archive_h5_session_open_locked(a, &fd, file);
}

int archive_h5_session_close(const cs_archive *a, hid_t file, int rc) {
  if (archive_h5_fclose(file) < 0 && rc == CS_OK)
    rc = archive_h5_error(CS_ERR_IO, "cannot close the archive %s", a->path);
  return rc;
}

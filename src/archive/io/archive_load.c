/* archive_load.c — an existing archive opened and checked before anything
 * trusts it (docs/ARCHIVE.md, "Identity", "Reading an archive"): the probe
 * (a regular HDF5 file, ours by its attributes, a supported format_version,
 * plain objects only, /spec matching spec_sha256; its identity computed),
 * its /cells rows loaded into memory, the rows of a table that belong to
 * finished writes (committed_rows), the /runs count, and whether a file
 * --overwrite may replace is one of ours. */
#include "archive_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Open an existing archive and check its identity (format, version). On
 * error the message names the file and the problem, *cls says which kind. */
int archive_probe(const char *path, unsigned flags, hid_t *file, archive_meta *meta,
                         archive_probe_class *cls) {
  *file = H5I_INVALID_HID;
  *cls = ARCHIVE_PROBE_UNREADABLE;
  memset(meta, 0, sizeof *meta);
  // the file itself
  struct stat st;
  if (stat(path, &st) != 0)
    return cs_error(errno == ENOENT ? CS_ERR_INPUT : CS_ERR_IO, "cannot open the archive %s: %s",
                    path, strerror(errno));
  if (!S_ISREG(st.st_mode)) {  // a FIFO would block every open of it: never opened
    *cls = ARCHIVE_PROBE_NOT_FILE;
    return cs_error(CS_ERR_INPUT, "%s is not a regular file%s, so not a curvsweep archive", path,
                    S_ISFIFO(st.st_mode) ? " (a FIFO)" : S_ISDIR(st.st_mode) ? " (a directory)" : "");
  }
  if (st.st_size == 0)
    return cs_error(CS_ERR_INPUT, "%s is empty (0 bytes): not a curvsweep archive", path);
  htri_t is = H5Fis_hdf5(path);
  if (is == 0)
    return cs_error(CS_ERR_INPUT, "%s is not an HDF5 file (no HDF5 signature), so not a curvsweep "
                    "archive", path);
  archive_budget_begin(path);
  hid_t f = archive_h5_open(path, flags);
  if (f < 0 && archive_h5_lock_refused()) {  // being written (or gone), not damaged
    *cls = ARCHIVE_PROBE_BUSY;
    return archive_h5_lock_refused();
  }
  if (f < 0)
    return archive_h5_error(CS_ERR_INPUT, "%s cannot be opened as HDF5 (the file is truncated or "
                            "damaged)", path);
  // identity: format, format_version (attributes are untrusted: one value
  // of the expected class and size each, docs/SECURITY.md "Archives")
  char format[64];
  int64_t version = 0;
  const char *why = NULL;
  *cls = ARCHIVE_PROBE_FOREIGN;
  int rc = CS_OK, hostile = 0;
  htri_t has_format = H5Aexists(f, "format");
  if (has_format < 0) {  // the root object header itself is damaged: ours or not, unreadable
    *cls = ARCHIVE_PROBE_UNREADABLE;
    rc = archive_h5_error(CS_ERR_INPUT, "%s is damaged: its root attributes cannot be read", path);
  } else if (archive_attr_read_str(f, "format", format, sizeof format, &why) != 0)
    rc = !strcmp(why, "missing")
             ? cs_error(CS_ERR_INPUT, "%s is an HDF5 file but not a curvsweep archive (no 'format' "
                        "attribute)", path)
             : cs_error(CS_ERR_INPUT, "%s is an HDF5 file but not a curvsweep archive (its "
                        "'format' attribute is %s)", path, why);
  else if (strcmp(format, ARCHIVE_FORMAT) != 0)
    rc = cs_error(CS_ERR_INPUT, "%s is an HDF5 file but not a curvsweep archive (format is '%s', "
                  "not '%s')", path, format, ARCHIVE_FORMAT);
  else if (archive_attr_read_i64(f, "format_version", &version, &why) != 0)
    rc = cs_error(CS_ERR_INPUT, "%s: curvsweep archive whose root attribute format_version is %s",
                  path, why);
  else if (version == 1)
    rc = cs_error(CS_ERR_INPUT, "%s has format_version 1, written before per-point rounding "
                  "errors: its curvature statistics count points zeroed by a rounding floor as "
                  "flat (docs/NUMERICS.md). This curvsweep (%s) reads format_version %d: re-run "
                  "the spec into a new archive, or read it with curvsweep 0.1", path, CS_VERSION,
                  ARCHIVE_FORMAT_VERSION);
  else if (version < ARCHIVE_FORMAT_VERSION_MIN || version > ARCHIVE_FORMAT_VERSION)
    rc = cs_error(CS_ERR_INPUT, "%s has format_version %" PRId64 "; this curvsweep (%s) reads "
                  "format_version %d..%d: use the curvsweep version that wrote it", path, version,
                  CS_VERSION, ARCHIVE_FORMAT_VERSION_MIN, ARCHIVE_FORMAT_VERSION);
  else if (archive_attr_read_str(f, "spec_sha256", meta->spec_sha256, sizeof meta->spec_sha256,
                                 &why) != 0)
    rc = cs_error(CS_ERR_INPUT, "%s: curvsweep archive whose root attribute spec_sha256 is %s",
                  path, why);
  else if ((rc = archive_structure_check(f, path, NULL, NULL, &hostile)))
    *cls = hostile ? ARCHIVE_PROBE_HOSTILE : ARCHIVE_PROBE_UNREADABLE;
  else if ((rc = archive_spec_verify(f, path, meta->spec_sha256, meta->identity)))
    *cls = ARCHIVE_PROBE_UNREADABLE;  // ours, damaged: rebuilt from a journal that covers it
  // the descriptive attributes: absent is allowed, anything else is read as one string
  static const char *const DESCRIPTIVE[] = {"spec_name", "created", "software_version"};
  char *dst[] = {meta->spec_name, meta->created, meta->software_version};
  size_t cap[] = {sizeof meta->spec_name, sizeof meta->created, sizeof meta->software_version};
  for (int k = 0; k < 3 && !rc; k++)
    if (archive_attr_read_str(f, DESCRIPTIVE[k], dst[k], cap[k], &why) != 0 && strcmp(why, "missing"))
      rc = cs_error(CS_ERR_INPUT, "%s: curvsweep archive whose root attribute %s is %s", path,
                    DESCRIPTIVE[k], why);
  if (rc) {
    archive_h5_fclose(f);
  } else {
    meta->version = (int)version;
    *cls = ARCHIVE_PROBE_OK;
    *file = f;
  }
  return rc;
}

/* Check rows [start, start + k) of /cells (in buf) and keep their cell
 * ids, statuses and attempts: ascending ids inside the spec's grid (nc
 * cells), known statuses. */
static int archive_load_block(cs_archive *a, const archive_cell_row *buf, hsize_t start, hsize_t k,
                              int64_t nc, const char *path) {
  for (hsize_t i = 0; i < k; i++) {
    int64_t r = (int64_t)(start + i);
    int status = archive_status_parse(buf[i].status);
    if (status < 0 || (r > 0 && buf[i].cell_id <= a->row_cell[r - 1]) || buf[i].cell_id < 0)
      return cs_error(CS_ERR_INPUT, "%s: damaged archive: /cells row %" PRId64 " (cell_id %" PRId64
                      ", status '%.16s') is out of order or has an unknown status", path, r,
                      buf[i].cell_id, buf[i].status);
    if (buf[i].cell_id >= nc)
      return cs_error(CS_ERR_INPUT, "%s: damaged archive: /cells row %" PRId64 " lists cell %" PRId64
                      ", outside its spec's grid of %" PRId64 " cells", path, r, buf[i].cell_id, nc);
    a->row_cell[r] = buf[i].cell_id;
    a->row_status[r] = (unsigned char)status;
    a->row_attempts[r] = buf[i].attempts;
  }
  return CS_OK;
}

static int archive_load_rows_from(cs_archive *a, hid_t ds, hid_t mt, archive_cell_row **buf,
                                  const char *path) {
  hsize_t n = 0;
  if (!a->spec) return cs_error(CS_ERR_INTERNAL, "%s: /cells read without its spec", path);
  int64_t nc = spec_cell_count(a->spec);
  CS_CHECK(archive_table_length_checked(ds, path, "cells", &n));
  // what the spec implies, before anything is allocated: at most one row per cell
  if (n > (hsize_t)nc)
    return cs_error(CS_ERR_INPUT, "%s: damaged or hostile archive: /cells declares %llu rows, its "
                    "spec has %" PRId64 " cells", path, (unsigned long long)n, nc);
  CS_CHECK(archive_table_check_stored(ds, n, path, "cells"));
  CS_CHECK(archive_alloc_rows(a, (int64_t)n));
  CS_CHECK(CS_CALLOC(*buf, n < ARCHIVE_BLOCK_ROWS ? (n ? n : 1) : ARCHIVE_BLOCK_ROWS));
  for (hsize_t s = 0; s < n; s += ARCHIVE_BLOCK_ROWS) {
    hsize_t k = n - s < ARCHIVE_BLOCK_ROWS ? n - s : ARCHIVE_BLOCK_ROWS;
    if (archive_table_io(ds, mt, s, k, *buf, 0) < 0)
      return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /cells rows "
                              "%llu..%llu", path, (unsigned long long)s,
                              (unsigned long long)(s + k - 1));
    CS_CHECK(archive_load_block(a, *buf, s, k, nc, path));
  }
  return CS_OK;
}

/* Read every /cells row (result columns) into a->rows. Any failure here
 * means a damaged file (CS_ERR_INPUT, naming it). */
int archive_load_rows(cs_archive *a, hid_t file, const char *path) {
  hid_t ds, mt = archive_cell_row_type();
  archive_cell_row *buf = NULL;
  int rc = archive_dataset_open(file, "cells", path, &ds);
  if (!rc) rc = archive_load_rows_from(a, ds, mt, &buf, path);
  free(buf);
  archive_h5_close_id(&mt, H5Tclose);
  archive_h5_close_id(&ds, H5Dclose);
  return rc;
}

/* The most rows the spec lets a table hold for the listed cells of a
 * (docs/ARCHIVE.md): one /cells row per cell, a per-cell table's limit per
 * cell (ARCHIVE_CELL_TABLES); other tables, and per-cell tables without a
 * limit: no bound here (their rows are bounded by what is stored and by
 * the budget). */
static hsize_t archive_table_max_rows(const cs_archive *a, const char *name) {
  if (!strcmp(name, "cells")) return (hsize_t)a->n_rows;
  const archive_cell_table *t = archive_cell_table_named(name);
  if (t && t->max_per_cell) return (hsize_t)a->n_rows * (hsize_t)t->max_per_cell;
  return (hsize_t)-1;
}

/* Rows of a table that belong to finished writes: committed_rows, plus
 * rows beyond it when they were all stored and all belong to cells already
 * marked finished (a crash after the /cells row but before committed_rows).
 * Valid rows the table does not store, or more than the spec allows, are
 * damage, refused before anything is allocated for them. */
int archive_table_valid_rows(const cs_archive *a, hid_t ds, const char *path,
                                    const char *name, hsize_t *valid, hsize_t *length) {
  hsize_t n = 0;
  CS_CHECK(archive_table_length_checked(ds, path, name, &n));
  int64_t committed = (int64_t)n;
  // committed_rows may be absent (/runs has none); present but unreadable is damage
  const char *why = NULL;
  htri_t has = H5Aexists(ds, "committed_rows");
  if (has < 0 || (has > 0 && archive_attr_read_i64(ds, "committed_rows", &committed, &why) != 0))
    return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: the committed_rows attribute of "
                            "/%s is %s", path, name, why ? why : "unreadable");
  *length = n;
  *valid = committed < 0 || (hsize_t)committed >= n ? n : (hsize_t)committed;
  hsize_t most = archive_table_max_rows(a, name);
  if (*valid > most)
    return cs_error(CS_ERR_INPUT, "%s: damaged or hostile archive: /%s declares %llu rows, more "
                    "than its %" PRId64 " listed cells can have", path, name,
                    (unsigned long long)*valid, a->n_rows);
  CS_CHECK(archive_table_check_stored(ds, *valid, path, name));
  // the tail: one cell id column, when it was stored and the spec allows it
  if (*valid == n || n > most || archive_table_check_stored(ds, n, path, name) != CS_OK) {
    cs_error_clear();
    return CS_OK;
  }
  hsize_t k = n - (hsize_t)committed;
  int64_t *ids = NULL;
  CS_CHECK(archive_budget_take(k, sizeof *ids, path, name));
  CS_CHECK(CS_CALLOC(ids, k));
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(int64_t));
  H5Tinsert(mt, "cell_id", 0, H5T_NATIVE_INT64);
  int bad = archive_table_io(ds, mt, (hsize_t)committed, k, ids, 0) < 0;
  H5Tclose(mt);
  int rc = bad ? archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /%s", path, name)
               : CS_OK;
  int finished = 1;
  for (hsize_t i = 0; !rc && i < k && finished; i++) {
    int64_t r = archive_find_row(a, ids[i]);
    finished = r >= 0 && a->row_status[r] != CELL_PENDING;
  }
  free(ids);
  if (!rc) *valid = finished ? n : (hsize_t)committed;
  return rc;
}

int archive_check_replaceable(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return errno == ENOENT ? CS_OK : cs_error(CS_ERR_IO, "cannot look at "
                                                    "%s: %s", path, strerror(errno));
  const char *refuse = "--overwrite replaces only a curvsweep archive, and %s is %s: remove it "
                       "yourself if it is to go, or use another output path";
  if (!S_ISREG(st.st_mode)) return cs_error(CS_ERR_INPUT, refuse, path, "not a regular file");
  if (st.st_size == 0 || H5Fis_hdf5(path) <= 0)
    return cs_error(CS_ERR_INPUT, refuse, path, "not an HDF5 file");
  hid_t f = archive_h5_open(path, H5F_ACC_RDONLY);
  char format[64] = "";
  int ours = f >= 0 && H5Aexists(f, "format") > 0 &&
             archive_attr_read_str(f, "format", format, sizeof format, NULL) == 0 &&
             strcmp(format, ARCHIVE_FORMAT) == 0;
  if (f >= 0) archive_h5_fclose(f);
  return ours ? CS_OK : cs_error(CS_ERR_INPUT, refuse, path, "not a curvsweep archive");
}

int archive_read_n_runs(cs_archive *a, hid_t file) {
  hid_t ds;
  CS_CHECK(archive_dataset_open(file, "runs", a->path, &ds));
  hsize_t n = 0;
  int rc = archive_table_length_checked(ds, a->path, "runs", &n);
  a->n_runs = (int64_t)n;
  H5Dclose(ds);
  return rc;
}

/* archive_create.c — an existing archive probed (identity, rows, the
 * committed_rows repair of interrupted writes), a new archive created under
 * a temporary name and renamed into place, and a damaged one rebuilt from
 * spec + journal (docs/ARCHIVE.md, "Resume"). */
#include "archive_internal.h"
#include "curvsweep/config.h"
#include "curvsweep/clock.h"
#include "curvsweep/path.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The full /cells row of a spec: fixed columns, the other axes, the result
 * columns; packed offsets (memory layout = file layout). */
typedef struct {
  int n_extra;           /* axes other than arch, depth, task, seed */
  int *extra_axis;       /* their spec axis indices */
  size_t *extra_off, *extra_width;
  size_t off_cell_id, off_arch, off_depth, off_task, off_seed, off_result;
  size_t row_bytes;
} archive_cells_layout;

static void archive_layout_free(archive_cells_layout *L) {
  free(L->extra_axis), free(L->extra_off), free(L->extra_width);
  memset(L, 0, sizeof *L);
}

static int archive_is_fixed_axis(const char *name) {
  return !strcmp(name, "arch") || !strcmp(name, "depth") || !strcmp(name, "task") ||
         !strcmp(name, "seed");
}

/* Widest text value of a string axis + 1 (at least 8): a function of the
 * spec only, so shards of one spec share one type. Row-major numbering:
 * value v of axis a is at cell v * stride(a). */
static int archive_axis_width(const cs_spec *spec, int axis, size_t *width) {
  int64_t stride = 1;
  for (int b = spec_axis_count(spec) - 1; b > axis; b--) stride *= spec_axis_length(spec, b);
  size_t w = 8;
  for (int v = 0; v < spec_axis_length(spec, axis); v++) {
    char text[256];
    CS_CHECK(spec_axis_value_text(spec, axis, (int64_t)v * stride, text, sizeof text));
    if (strlen(text) + 1 > w) w = strlen(text) + 1;
  }
  *width = w;
  return CS_OK;
}

static int archive_layout_build(const cs_spec *spec, archive_cells_layout *L) {
  memset(L, 0, sizeof *L);
  int na = spec_axis_count(spec);
  CS_CHECK(CS_CALLOC(L->extra_axis, na));
  CS_CHECK(CS_CALLOC(L->extra_off, na));
  CS_CHECK(CS_CALLOC(L->extra_width, na));
  // fixed columns first
  size_t off = 0;
  L->off_cell_id = off, off += 8;
  L->off_arch = off, off += ARCHIVE_NAME_BYTES;
  L->off_depth = off, off += 8;
  L->off_task = off, off += ARCHIVE_NAME_BYTES;
  L->off_seed = off, off += 8;
  // every other axis in [grid] order
  for (int a = 0; a < na; a++) {
    if (archive_is_fixed_axis(spec_axis_name(spec, a))) continue;
    size_t w = 8;
    if (spec_axis_type(spec, a) == SPEC_AXIS_STRING) CS_CHECK(archive_axis_width(spec, a, &w));
    L->extra_axis[L->n_extra] = a;
    L->extra_off[L->n_extra] = off;
    L->extra_width[L->n_extra] = w;
    L->n_extra++;
    off += w;
  }
  // the result columns, packed (archive_cell_row minus cell_id)
  L->off_result = off;
  off += ARCHIVE_STATUS_BYTES + 4 + 4 + 4 * 8 + 8 + ARCHIVE_MESSAGE_BYTES;
  L->row_bytes = off;
  return CS_OK;
}

static hid_t archive_layout_type(const cs_spec *spec, const archive_cells_layout *L) {
  hid_t t = H5Tcreate(H5T_COMPOUND, L->row_bytes);
  hid_t sname = archive_str_type(ARCHIVE_NAME_BYTES);
  H5Tinsert(t, "cell_id", L->off_cell_id, H5T_STD_I64LE);
  H5Tinsert(t, "arch", L->off_arch, sname);
  H5Tinsert(t, "depth", L->off_depth, H5T_STD_I64LE);
  H5Tinsert(t, "task", L->off_task, sname);
  H5Tinsert(t, "seed", L->off_seed, H5T_STD_I64LE);
  H5Tclose(sname);
  for (int i = 0; i < L->n_extra; i++) {
    int a = L->extra_axis[i];
    const char *name = spec_axis_name(spec, a);
    switch (spec_axis_type(spec, a)) {
      case SPEC_AXIS_INT: H5Tinsert(t, name, L->extra_off[i], H5T_STD_I64LE); break;
      case SPEC_AXIS_REAL: H5Tinsert(t, name, L->extra_off[i], H5T_IEEE_F64LE); break;
      default: {
        hid_t s = archive_str_type(L->extra_width[i]);
        H5Tinsert(t, name, L->extra_off[i], s);
        H5Tclose(s);
      }
    }
  }
  hid_t st = archive_str_type(ARCHIVE_STATUS_BYTES), mt = archive_str_type(ARCHIVE_MESSAGE_BYTES);
  size_t o = L->off_result;
  H5Tinsert(t, "status", o, st), o += ARCHIVE_STATUS_BYTES;
  H5Tinsert(t, "rank", o, H5T_STD_I32LE), o += 4;
  H5Tinsert(t, "attempts", o, H5T_STD_I32LE), o += 4;
  H5Tinsert(t, "wall_s", o, H5T_IEEE_F64LE), o += 8;
  H5Tinsert(t, "train_loss", o, H5T_IEEE_F64LE), o += 8;
  H5Tinsert(t, "train_acc", o, H5T_IEEE_F64LE), o += 8;
  H5Tinsert(t, "test_acc", o, H5T_IEEE_F64LE), o += 8;
  H5Tinsert(t, "n_params", o, H5T_STD_I64LE), o += 8;
  H5Tinsert(t, "message", o, mt);
  H5Tclose(st);
  H5Tclose(mt);
  return t;
}

/* Fill the full pending /cells row of one cell (packed, little-endian host). */
static int archive_layout_fill(const cs_spec *spec, const archive_cells_layout *L, int64_t cell,
                               unsigned char *row) {
  cs_config c;
  CS_CHECK(spec_cell_config(spec, cell, &c));
  memset(row, 0, L->row_bytes);
  int64_t depth = c.depth, seed = c.seed;
  memcpy(row + L->off_cell_id, &cell, 8);
  archive_copy_str((char *)row + L->off_arch, ARCHIVE_NAME_BYTES, config_arch_name(c.arch));
  memcpy(row + L->off_depth, &depth, 8);
  archive_copy_str((char *)row + L->off_task, ARCHIVE_NAME_BYTES, config_task_name(c.task));
  memcpy(row + L->off_seed, &seed, 8);
  for (int i = 0; i < L->n_extra; i++) {
    int a = L->extra_axis[i];
    char text[256];
    CS_CHECK(spec_axis_value_text(spec, a, cell, text, sizeof text));
    unsigned char *dst = row + L->extra_off[i];
    if (spec_axis_type(spec, a) == SPEC_AXIS_INT) {
      int64_t v = strtoll(text, NULL, 10);
      memcpy(dst, &v, 8);
    } else if (spec_axis_type(spec, a) == SPEC_AXIS_REAL) {
      double v = spec_axis_value_number(spec, a, cell);
      memcpy(dst, &v, 8);
    } else {
      archive_copy_str((char *)dst, L->extra_width[i], text);
    }
  }
  // result columns of a pending cell: rank -1, metrics NaN
  unsigned char *o = row + L->off_result;
  int32_t rank = -1, attempts = 0;
  double nan = NAN;
  int64_t n_params = 0;
  archive_copy_str((char *)o, ARCHIVE_STATUS_BYTES, "pending"), o += ARCHIVE_STATUS_BYTES;
  memcpy(o, &rank, 4), o += 4;
  memcpy(o, &attempts, 4), o += 4;
  for (int k = 0; k < 4; k++) memcpy(o, &nan, 8), o += 8;
  memcpy(o, &n_params, 8);
  return CS_OK;
}

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
  if (!S_ISREG(st.st_mode))
    return cs_error(CS_ERR_INPUT, "%s is not a regular file, so not a curvsweep archive", path);
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
    return rc;
  }
  meta->version = (int)version;
  *cls = ARCHIVE_PROBE_OK;
  *file = f;
  return CS_OK;
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
 * (docs/ARCHIVE.md): one /points/index row per cell, at most
 * ARCHIVE_MAX_DEPTH /curvature rows per cell; other tables: no bound here
 * (their rows are bounded by what is stored and by the budget). */
static hsize_t archive_table_max_rows(const cs_archive *a, const char *name) {
  if (!strcmp(name, "curvature")) return (hsize_t)a->n_rows * ARCHIVE_MAX_DEPTH;
  if (!strcmp(name, ARCHIVE_POINTS_INDEX)) return (hsize_t)a->n_rows;
  if (!strcmp(name, "cells")) return (hsize_t)a->n_rows;
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
  if (bad) {
    free(ids);
    return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read /%s", path, name);
  }
  int finished = 1;
  for (hsize_t i = 0; i < k && finished; i++) {
    int64_t r = archive_find_row(a, ids[i]);
    finished = r >= 0 && a->row_status[r] != CELL_PENDING;
  }
  free(ids);
  *valid = finished ? n : (hsize_t)committed;
  return CS_OK;
}

/* Does a table need the repair below? (read-only) */
int archive_table_needs_repair(const cs_archive *a, hid_t file, const char *name, int *need) {
  hid_t ds;
  CS_CHECK(archive_dataset_open(file, name, a->path, &ds));
  hsize_t valid = 0, n = 0;
  int64_t committed = -1;
  int rc = archive_table_valid_rows(a, ds, a->path, name, &valid, &n);
  archive_attr_read_i64(ds, "committed_rows", &committed, NULL);
  *need = !rc && (valid != n || committed != (int64_t)n);
  H5Dclose(ds);
  return rc;
}

/* Writer's repair at open: make committed_rows and the extent agree. */
int archive_table_repair(const cs_archive *a, hid_t file, const char *name) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: no /%s", a->path, name);
  hsize_t valid = 0, n = 0;
  int rc = archive_table_valid_rows(a, ds, a->path, name, &valid, &n);
  if (!rc && valid < n && H5Dset_extent(ds, &valid) < 0)
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot cut the unfinished rows of /%s", a->path, name);
  if (!rc) rc = archive_attr_write_i64(ds, "committed_rows", H5T_STD_I64LE, (int64_t)valid, a->path);
  H5Dclose(ds);
  return rc;
}

/* What creating an archive file holds open; closed in one place
 * (archive_create_file). */
typedef struct {
  archive_cells_layout L;
  hid_t ctype, space, dcpl, ds;
  unsigned char *rows;
} archive_create_state;

/* Root attributes and /spec (the exact text, chunked and checksummed). */
static int archive_write_root(hid_t file, const cs_spec *spec, const char *path) {
  char created[32];
  int32_t version = ARCHIVE_FORMAT_VERSION;
  cs_utc_now(created, sizeof created, 0);
  CS_CHECK(archive_attr_write_str(file, "format", ARCHIVE_FORMAT, path));
  CS_CHECK(archive_attr_write_i64(file, "format_version", H5T_STD_I32LE, version, path));
  CS_CHECK(archive_attr_write_str(file, "software_version", CS_VERSION, path));
  CS_CHECK(archive_attr_write_str(file, "created", created, path));
  CS_CHECK(archive_attr_write_str(file, "spec_sha256", spec_sha256(spec), path));
  CS_CHECK(archive_attr_write_str(file, "spec_canonical_sha256", spec_canonical_sha256(spec), path));
  CS_CHECK(archive_attr_write_str(file, "spec_name", spec_sweep(spec)->name, path));
  return archive_spec_write(file, spec_text(spec), path);
}

/* /cells: every listed cell, pending. */
static int archive_write_cells(const cs_archive *a, const cs_spec *spec, hid_t file,
                               archive_create_state *s, const char *path) {
  s->ctype = archive_layout_type(spec, &s->L);
  hsize_t n = (hsize_t)a->n_rows, maxdims = H5S_UNLIMITED;
  hsize_t chunk = archive_table_chunk_rows(s->L.row_bytes, a->table_chunk_bytes);
  s->space = H5Screate_simple(1, &n, &maxdims);
  s->dcpl = archive_dcpl(1, &chunk, 1);
  s->ds = H5Dcreate2(file, "cells", s->ctype, s->space, H5P_DEFAULT, s->dcpl, H5P_DEFAULT);
  if (s->ctype < 0 || s->ds < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot create /cells", path);
  CS_CHECK(cs_calloc_bytes((void **)&s->rows, n < ARCHIVE_BLOCK_ROWS ? (n ? n : 1) : ARCHIVE_BLOCK_ROWS,
                           s->L.row_bytes));
  for (hsize_t b = 0; b < n; b += ARCHIVE_BLOCK_ROWS) {
    hsize_t k = n - b < ARCHIVE_BLOCK_ROWS ? n - b : ARCHIVE_BLOCK_ROWS;
    for (hsize_t i = 0; i < k; i++)
      CS_CHECK(archive_layout_fill(spec, &s->L, a->row_cell[b + i], s->rows + i * s->L.row_bytes));
    if (archive_table_io(s->ds, s->ctype, b, k, s->rows, 1) < 0)
      return archive_h5_error(CS_ERR_IO, "%s: cannot write /cells", path);
  }
  archive_h5_close_id(&s->ds, H5Dclose);
  return CS_OK;
}

/* An empty table of the packed file type of mt (mt is closed here). */
static int archive_create_empty_table(const cs_archive *a, hid_t file, const char *name, hid_t mt,
                                      int committed, const char *path) {
  hid_t ft = archive_packed(mt);
  int rc = archive_table_create(file, name, ft, committed, a->table_chunk_bytes, path);
  H5Tclose(ft), H5Tclose(mt);
  return rc;
}

static int archive_create_pipeline(const cs_archive *a, const cs_spec *spec, hid_t file,
                                   archive_create_state *s, const char *path) {
  CS_CHECK(archive_layout_build(spec, &s->L));
  CS_CHECK(archive_write_root(file, spec, path));
  CS_CHECK(archive_write_cells(a, spec, file, s, path));
  CS_CHECK(archive_create_empty_table(a, file, "curvature", archive_curv_row_type(), 1, path));
  CS_CHECK(archive_create_empty_table(a, file, "curves", archive_curve_row_type(), 1, path));
  CS_CHECK(archive_points_create(file, a, spec, path));
  return archive_create_empty_table(a, file, "runs", archive_run_row_type(), 0, path);
}

/* Write a complete pending archive of spec (rows of a) to path. */
static int archive_create_file(const cs_archive *a, const cs_spec *spec, const char *path) {
  hid_t file = archive_h5_create(path);
  if (file < 0) return archive_h5_error(CS_ERR_IO, "cannot create the archive %s", path);
  archive_create_state s;
  memset(&s, 0, sizeof s);
  s.ctype = s.space = s.dcpl = s.ds = H5I_INVALID_HID;
  int rc = archive_create_pipeline(a, spec, file, &s, path);
  free(s.rows);
  archive_layout_free(&s.L);
  archive_h5_close_id(&s.dcpl, H5Pclose);
  archive_h5_close_id(&s.ds, H5Dclose);
  archive_h5_close_id(&s.space, H5Sclose);
  archive_h5_close_id(&s.ctype, H5Tclose);
  if (H5Fclose(file) < 0 && !rc) rc = archive_h5_error(CS_ERR_IO, "%s: cannot close", path);
  return rc;
}

/* Reserve the temporary name ARCHIVE.tmp-<pid> beside the archive, in its
 * directory dfd (docs/SECURITY.md, "Shared directories"): created with
 * O_EXCL | O_NOFOLLOW, so a symbolic link planted there is refused, never
 * followed; a stale temporary of this user (a killed run of the same pid)
 * is replaced. Then the name is freed again for HDF5, which creates by
 * name with H5F_ACC_EXCL (O_CREAT | O_EXCL: whatever appears there in
 * between makes the create fail, it is never opened). */
static int archive_temp_reserve(const cs_archive *a, int dfd, const char *tmp, const char *name) {
  const char *why;
  int fd = cs_create_fresh_at(dfd, name, 0644, &why);
  if (fd < 0)
    return cs_error(fd == -2 ? CS_ERR_INPUT : CS_ERR_IO, "cannot create the archive %s (temporary "
                    "file %s): %s%s", a->path, tmp, why,
                    fd == -2 ? " (curvsweep never writes through one: docs/SECURITY.md); remove it"
                             : "");
  close(fd);
  if (unlinkat(dfd, name, 0) != 0)
    return cs_error(CS_ERR_IO, "cannot create the archive %s (temporary file %s): %s", a->path, tmp,
                    strerror(errno));
  return CS_OK;
}

/* The new temporary as the archive's mode (0644 less the umask, as before
 * HDF5 made it 0666 less the umask), synced; opened without following a
 * link and checked to be the regular file this user just made. */
static int archive_temp_seal(int dfd, const char *name, const char *tmp) {
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int rc = cs_error(CS_ERR_IO, "cannot open %s to sync it: %s", tmp, strerror(errno));
    if (fd >= 0) close(fd);
    return rc;
  }
  int rc = CS_OK;
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
    rc = cs_error(CS_ERR_IO, "%s was replaced while it was written (not the regular file this "
                  "process created)", tmp);
  else if (fchmod(fd, st.st_mode & 0644) != 0 || fsync(fd) != 0)
    rc = cs_error(CS_ERR_IO, "cannot sync %s: %s", tmp, strerror(errno));
  close(fd);
  return rc;
}

static int archive_create_temp_at(const cs_archive *a, const cs_spec *spec, int dfd,
                                  const char *base, char **tmp_out) {
  char *tmp = archive_strdup_printf("%s.tmp-%ld", a->path, (long)getpid());
  char *name = archive_strdup_printf("%s.tmp-%ld", base, (long)getpid());
  int rc = !tmp || !name ? cs_error(CS_ERR_NOMEM, "out of memory")
                         : archive_temp_reserve(a, dfd, tmp, name);
  int made = 0;
  if (!rc) rc = archive_create_file(a, spec, tmp), made = 1;
  if (!rc) rc = archive_temp_seal(dfd, name, tmp);
  if (rc && made) unlinkat(dfd, name, 0);
  free(name);
  if (rc) {
    free(tmp);
    return rc;
  }
  *tmp_out = tmp;
  return CS_OK;
}

/* Build the archive under a temporary name beside path, sync it, and hand
 * back the name (the caller renames it into place). */
int archive_create_temp(const cs_archive *a, const cs_spec *spec, char **tmp_out) {
  *tmp_out = NULL;
  CS_CHECK(archive_make_parent_dirs(a->path));
  int dfd;
  const char *base, *why;
  if (cs_dir_open(a->path, &dfd, &base, &why) != 0)
    return cs_error(CS_ERR_IO, "cannot create the archive %s: its directory: %s", a->path, why);
  int rc = archive_create_temp_at(a, spec, dfd, base, tmp_out);
  close(dfd);
  return rc;
}

int archive_rename_into_place(const char *tmp, const char *path) {
  if (rename(tmp, path) != 0) {
    int rc = cs_error(CS_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    unlink(tmp);
    return rc;
  }
  archive_fsync_dir(path);
  return CS_OK;
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

/* Set a damaged archive aside as ARCHIVE.damaged-<UTC time>[-k]. */
static int archive_set_aside(const char *path, char **aside_out) {
  char stamp[32];
  cs_utc_now(stamp, sizeof stamp, 1);
  char *aside = NULL;
  for (int k = 0; k < 1000; k++) {
    free(aside);
    aside = k ? archive_strdup_printf("%s.damaged-%s-%d", path, stamp, k)
              : archive_strdup_printf("%s.damaged-%s", path, stamp);
    if (!aside) return cs_error(CS_ERR_NOMEM, "out of memory");
    if (!archive_file_exists(aside)) break;
  }
  if (rename(path, aside) != 0) {
    int rc = cs_error(CS_ERR_IO, "cannot set the damaged archive %s aside as %s: %s", path, aside,
                      strerror(errno));
    free(aside);
    return rc;
  }
  archive_fsync_dir(path);
  if (aside_out) *aside_out = aside;
  else free(aside);
  return CS_OK;
}

/* Rebuild from spec + journal: a complete new file listing the mask's
 * cells and every journaled cell is built under a temp name with every
 * record applied; then the old file (if any) is set aside, never deleted,
 * and the new one renamed into place. A crash at any point leaves the old
 * file or no file, and the journal, so the next resume starts over. */
int archive_rebuild(cs_archive *a, const cs_spec *spec, const unsigned char *mask,
                           const archive_journal_scan *s, int keep_rows) {
  int64_t nc = spec_cell_count(spec);
  unsigned char *sel = NULL;
  CS_CHECK(CS_CALLOC(sel, nc));
  for (int64_t c = 0; c < nc; c++) sel[c] = !mask || mask[c];
  // the rows the old file listed (when it could be read) stay listed
  for (int64_t r = 0; keep_rows && r < a->n_rows; r++)
    if (a->row_cell[r] >= 0 && a->row_cell[r] < nc) sel[a->row_cell[r]] = 1;
  for (int64_t i = 0; i < s->n; i++) {
    if (s->recs[i].kind != ARCHIVE_REC_RESULT) continue;
    if (s->recs[i].cell_id < 0 || s->recs[i].cell_id >= nc) {
      free(sel);
      return cs_error(CS_ERR_INPUT, "%s: journal record of cell %" PRId64 " outside the spec's 0..%"
                      PRId64, a->journal_path, s->recs[i].cell_id, nc - 1);
    }
    sel[s->recs[i].cell_id] = 1;
  }
  int rc = archive_rows_from_mask(a, spec, sel);
  free(sel);
  CS_CHECK(rc);
  // the new file, complete, under a temp name
  char *tmp = NULL, *final_path = a->path;
  CS_CHECK(archive_create_temp(a, spec, &tmp));
  a->path = tmp;
  a->n_runs = 0;
  hid_t file;
  rc = archive_h5_session_open(a, &file);
  if (!rc) {
    rc = archive_journal_replay(a, file, s, 1, 0, NULL);
    rc = archive_h5_session_close(a, file, rc);
  }
  a->path = final_path;
  if (!rc) rc = archive_fsync_file(tmp);
  // the old file aside, the new one in place, the journal clean
  if (!rc && archive_file_exists(a->path)) rc = archive_set_aside(a->path, NULL);
  if (!rc) rc = archive_rename_into_place(tmp, a->path);
  else unlink(tmp);
  free(tmp);
  if (!rc && s->header_ok) rc = archive_journal_set_dirty(a, 0, 1);
  CS_CHECK(rc);
  // rows outside the mask were added for journaled cells: keep them unselected
  for (int64_t r = 0; r < a->n_rows; r++) a->row_selected[r] = !mask || mask[a->row_cell[r]];
  return CS_OK;
}

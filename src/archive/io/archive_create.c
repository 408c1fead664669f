/* archive_create.c — a new archive: the /cells layout of a spec (fixed
 * columns, the other axes, the result columns), every object of a pending
 * archive written under a temporary name beside the archive (never through
 * a symbolic link; docs/SECURITY.md, "Shared directories"), synced, and
 * renamed into place (docs/ARCHIVE.md, "On-disk layout"). */
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
  cs_copy_str((char *)row + L->off_arch, ARCHIVE_NAME_BYTES, config_arch_name(c.arch));
  memcpy(row + L->off_depth, &depth, 8);
  cs_copy_str((char *)row + L->off_task, ARCHIVE_NAME_BYTES, config_task_name(c.task));
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
      cs_copy_str((char *)dst, L->extra_width[i], text);
    }
  }
  // result columns of a pending cell: rank -1, metrics NaN
  unsigned char *o = row + L->off_result;
  int32_t rank = -1, attempts = 0;
  double nan = NAN;
  int64_t n_params = 0;
  cs_copy_str((char *)o, ARCHIVE_STATUS_BYTES, "pending"), o += ARCHIVE_STATUS_BYTES;
  memcpy(o, &rank, 4), o += 4;
  memcpy(o, &attempts, 4), o += 4;
  for (int k = 0; k < 4; k++) memcpy(o, &nan, 8), o += 8;
  memcpy(o, &n_params, 8);
  return CS_OK;
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
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    CS_CHECK(T->create ? T->create(file, a, spec, path)
                       : archive_create_empty_table(a, file, T->name, T->row_type(), 1, path));
  }
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
  int rc = CS_OK;
  if (fd < 0 || fstat(fd, &st) != 0)
    rc = cs_error(CS_ERR_IO, "cannot open %s to sync it: %s", tmp, strerror(errno));
  else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
    rc = cs_error(CS_ERR_IO, "%s was replaced while it was written (not the regular file this "
                  "process created)", tmp);
  else if (fchmod(fd, st.st_mode & 0644) != 0 || fsync(fd) != 0)
    rc = cs_error(CS_ERR_IO, "cannot sync %s: %s", tmp, strerror(errno));
  if (fd >= 0) close(fd);
  return rc;
}

static int archive_create_temp_at(const cs_archive *a, const cs_spec *spec, int dfd,
                                  const char *base, char **tmp_out) {
  char *tmp = cs_strdup_printf("%s.tmp-%ld", a->path, (long)getpid());
  char *name = cs_strdup_printf("%s.tmp-%ld", base, (long)getpid());
  int rc = !tmp || !name ? cs_error(CS_ERR_NOMEM, "out of memory")
                         : archive_temp_reserve(a, dfd, tmp, name);
  int made = 0;
  if (!rc) rc = archive_create_file(a, spec, tmp), made = 1;
  if (!rc) rc = archive_temp_seal(dfd, name, tmp);
  if (rc && made) unlinkat(dfd, name, 0);
  free(name);
  if (rc) free(tmp);
  else *tmp_out = tmp;
  return rc;
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
  cs_fsync_dir(path);
  return CS_OK;
}

/* mkdir -p of the directory that will hold the archive path. */
int archive_make_parent_dirs(const char *path) {
  char *dir = cs_dirname(path);
  if (!dir) return cs_error(CS_ERR_NOMEM, "out of memory");
  int rc = cs_mkdir_p(dir);
  free(dir);
  if (rc) return cs_error_context(rc, "cannot create the archive %s: ", path);
  return CS_OK;
}

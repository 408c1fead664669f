/* archive.c — the HDF5 result archive: open (create, overwrite, resume),
 * write one result or /runs row, close. Serial HDF5, used by rank 0 only.
 * The file layout, the journal and the write/resume protocol are
 * docs/ARCHIVE.md; the files of src/archive are listed in archive_internal.h.
 * Every public entry point runs under ARCHIVE_QUIETLY (HDF5 prints nothing). */
#include "archive_internal.h"
#include "curvsweep/clock.h"
#include "curvsweep/path.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

char *archive_strdup_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

/* Copy a string, truncating to len - 1 bytes; dst always NUL-terminated. */
void archive_copy_str(char *dst, size_t len, const char *src) {
  if (len == 0) return;
  size_t n = src ? strnlen(src, len - 1) : 0;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
}

/* Directory part of path ("." when none), into a malloc'ed string. */
static char *archive_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return archive_strdup_printf(".");
  if (slash == path) return archive_strdup_printf("/");
  return archive_strdup_printf("%.*s", (int)(slash - path), path);
}

/* mkdir -p of the directory that will hold the archive path. */
int archive_make_parent_dirs(const char *path) {
  char *dir = archive_dirname(path);
  if (!dir) return cs_error(CS_ERR_NOMEM, "out of memory");
  int rc = cs_mkdir_p(dir);
  free(dir);
  if (rc) return cs_error_context(rc, "cannot create the archive %s: ", path);
  return CS_OK;
}

/* fsync a directory so a rename or a new file in it is durable. */
void archive_fsync_dir(const char *path) {
  char *dir = archive_dirname(path);
  if (!dir) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(dir);
}

int archive_fsync_file(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return cs_error(CS_ERR_IO, "cannot open %s to sync it: %s", path, strerror(errno));
  int rc = fsync(fd) == 0 ? CS_OK : cs_error(CS_ERR_IO, "cannot sync %s: %s", path, strerror(errno));
  close(fd);
  return rc;
}

int archive_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int64_t archive_find_row(const cs_archive *a, int64_t cell_id) {
  int64_t lo = 0, hi = a->n_rows - 1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (a->row_cell[mid] == cell_id) return mid;
    if (a->row_cell[mid] < cell_id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

int archive_alloc_rows(cs_archive *a, int64_t n) {
  free(a->row_cell), free(a->row_status), free(a->row_attempts), free(a->row_selected);
  free(a->row_journal);
  a->row_cell = NULL, a->row_status = NULL, a->row_attempts = NULL, a->row_selected = NULL;
  a->row_journal = NULL;
  a->n_rows = n;
  CS_CHECK(CS_CALLOC(a->row_journal, n));
  CS_CHECK(CS_CALLOC(a->row_cell, n));
  CS_CHECK(CS_CALLOC(a->row_status, n));
  CS_CHECK(CS_CALLOC(a->row_attempts, n));
  CS_CHECK(CS_CALLOC(a->row_selected, n));
  return CS_OK;
}

int archive_status_parse(const char *s) {
  for (int k = CELL_PENDING; k <= CELL_DIVERGED; k++)
    if (!strcmp(s, result_status_name((cs_cell_status)k))) return k;
  return -1;
}

void archive_free(cs_archive *a) {
  if (!a) return;
  if (a->journal_fd >= 0) close(a->journal_fd);
  free(a->path), free(a->journal_path);
  free(a->row_cell), free(a->row_status), free(a->row_attempts), free(a->row_selected);
  free(a->row_journal), free(a->staged);
  free(a);
}

int archive_new(const char *path, cs_archive **out) {
  cs_archive *a;
  *out = NULL;
  CS_CHECK(CS_CALLOC(a, 1));
  a->journal_fd = -1;
  a->run_row = -1;
  a->path = archive_strdup_printf("%s", path);
  a->journal_path = archive_strdup_printf("%s.journal", path);
  if (!a->path || !a->journal_path) {
    archive_free(a);
    return cs_error(CS_ERR_NOMEM, "out of memory");
  }
  *out = a;
  return CS_OK;
}

/* Rows of a new archive: the cells selected by mask, ascending. */
int archive_rows_from_mask(cs_archive *a, const cs_spec *spec, const unsigned char *mask) {
  int64_t nc = spec_cell_count(spec), n = 0;
  for (int64_t c = 0; c < nc; c++) n += !mask || mask[c];
  CS_CHECK(archive_alloc_rows(a, n));
  n = 0;
  for (int64_t c = 0; c < nc; c++)
    if (!mask || mask[c]) a->row_cell[n] = c, a->row_selected[n] = 1, n++;
  return CS_OK;
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

int archive_read_n_runs(cs_archive *a, hid_t file) {
  hid_t ds;
  CS_CHECK(archive_dataset_open(file, "runs", a->path, &ds));
  hsize_t n = 0;
  int rc = archive_table_length_checked(ds, a->path, "runs", &n);
  a->n_runs = (int64_t)n;
  H5Dclose(ds);
  return rc;
}

/* The selection of this open inside the listed rows: every selected cell
 * must be listed (another shard's archive is refused). */
static int archive_apply_mask(cs_archive *a, const cs_spec *spec, const unsigned char *mask) {
  int64_t nc = spec_cell_count(spec), missing = 0, first_missing = -1;
  for (int64_t c = 0; c < nc; c++) {
    if (mask && !mask[c]) continue;
    int64_t r = archive_find_row(a, c);
    if (r < 0) {
      if (first_missing < 0) first_missing = c;
      missing++;
    } else {
      a->row_selected[r] = 1;
    }
  }
  if (missing)
    return cs_error(CS_ERR_INPUT, "%s does not list %" PRId64 " of the selected cells (e.g. cell "
                    "%" PRId64 "): it was written for another --shard; use a separate -o per shard "
                    "and `curvsweep merge`", a->path, missing, first_missing);
  return CS_OK;
}

/* Create a new archive (rows from mask) under a temp name and rename it
 * into place; the journal is reset just before (it belonged to whatever
 * the path held, which the user asked to replace). */
static int archive_create_fresh(cs_archive *a, const cs_spec *spec, const unsigned char *mask) {
  CS_CHECK(archive_rows_from_mask(a, spec, mask));
  char *tmp = NULL;
  CS_CHECK(archive_create_temp(a, spec, &tmp));
  int rc = archive_journal_reset(a, 1);
  if (!rc) rc = archive_rename_into_place(tmp, a->path);
  else unlink(tmp);
  free(tmp);
  a->n_runs = 0;
  return rc;
}

/* Another spec's archive: the refusal names the keys that differ
 * (archive_identity_refusal), from the archive's own /spec. */
static int archive_sha_mismatch(const char *path, const cs_spec *spec) {
  char *text = NULL;
  cs_spec *old_spec = NULL;
  int rc = archive_read_spec(path, &text);
  if (!rc) rc = spec_load_string(text, path, &old_spec);
  free(text);
  if (!rc) rc = archive_identity_refusal(path, old_spec, spec);
  spec_free(old_spec);
  return rc;
}

/* A file found damaged while it is repaired or replayed into (a bad chunk
 * or object header the identity checks did not read) is rebuilt from the
 * journal that covers it, like an unreadable one (docs/ARCHIVE.md, "Resume
 * protocol"): its rows stay listed, the old file is set aside. */
static int archive_rebuild_damaged(cs_archive *a, const cs_spec *spec, const unsigned char *mask,
                                   const archive_journal_scan *s) {
  cs_error_clear();
  return archive_rebuild(a, spec, mask, s, 1);
}

/* A cell of this open's selection is pending: the run will write. */
static int archive_any_selected_pending(const cs_archive *a) {
  for (int64_t r = 0; r < a->n_rows; r++)
    if (a->row_status[r] == CELL_PENDING && (!a->row_selected || a->row_selected[r])) return 1;
  return 0;
}

/* Resume an existing file (the journal is locked and scanned):
 *   identity and spec checked read-only (refusals touch nothing);
 *   unreadable, or left dirty by a killed write -> rebuilt from a journal
 *   that covers it (else refused: damaged, nothing to rebuild from);
 *   otherwise interrupted rows are cut and unapplied records applied. */
static int archive_resume_existing(cs_archive *a, const cs_spec *spec, const unsigned char *mask,
                                   archive_journal_scan *s, int journal_created) {
  hid_t file;
  archive_meta meta;
  archive_probe_class cls;
  int rc = archive_probe(a->path, H5F_ACC_RDONLY, &file, &meta, &cls);
  if (!rc && strcmp(meta.identity, a->spec_sha256) != 0) {
    archive_h5_fclose(file);
    return archive_sha_mismatch(a->path, spec);
  }
  // the structure: /cells rows, /runs
  if (!rc) {
    rc = archive_load_rows(a, file, a->path);
    if (!rc) rc = archive_read_n_runs(a, file);
    if (rc) cls = ARCHIVE_PROBE_UNREADABLE;
    archive_h5_fclose(file);
  }
  int covers = !journal_created && s->header_ok && s->covers && !strcmp(s->sha, a->spec_sha256);
  if (rc) {
    if (cls == ARCHIVE_PROBE_UNREADABLE && covers) {
      cs_error_clear();
      return archive_rebuild(a, spec, mask, s, 0);
    }
    if (cls == ARCHIVE_PROBE_UNREADABLE) {
      char msg[1024];
      archive_copy_str(msg, sizeof msg, cs_error_message());
      return cs_error(rc, "%s; there is no journal %s holding its results to rebuild it from: "
                      "move it away or use another -o path", msg, a->journal_path);
    }
    return rc;
  }
  CS_CHECK(archive_journal_check_spec(a, s));
  CS_CHECK(archive_apply_mask(a, spec, mask));
  if (s->dirty && covers) return archive_rebuild(a, spec, mask, s, 1);
  // anything to repair or apply? (decided read-only: a resume with nothing
  // to do leaves the file untouched)
  int need_repair = 0, need_replay = 0;
  file = archive_h5_open(a->path, H5F_ACC_RDONLY);
  if (file < 0) return archive_h5_error(CS_ERR_IO, "cannot open the archive %s", a->path);
  rc = archive_table_needs_repair(a, file, "curvature", &need_repair);
  if (!rc && !need_repair) rc = archive_table_needs_repair(a, file, "curves", &need_repair);
  if (!rc && !need_repair && meta.version >= 4)
    rc = archive_table_needs_repair(a, file, ARCHIVE_POINTS_INDEX, &need_repair);
  if (!rc) rc = archive_journal_replay(a, file, s, 0, 1, &need_replay);
  archive_h5_fclose(file);
  if (rc && covers) return archive_rebuild_damaged(a, spec, mask, s);
  CS_CHECK(rc);
  if (meta.version < ARCHIVE_FORMAT_VERSION &&
      (need_repair || need_replay || archive_any_selected_pending(a)))
    return cs_error(CS_ERR_INPUT, "%s has format_version %d (%s); this curvsweep (%s) writes "
                    "format_version %d: finish the sweep with the curvsweep that wrote it, or "
                    "`curvsweep merge NEW.h5 %s` (which writes format_version %d) and resume "
                    "NEW.h5", a->path, meta.version, meta.version < 4 ? "a /points group per cell"
                    : "no extreme-token columns in /curvature", CS_VERSION, ARCHIVE_FORMAT_VERSION,
                    a->path, ARCHIVE_FORMAT_VERSION);
  if (!need_repair && !need_replay) return CS_OK;
  // repair interrupted writes, then apply the journal (which already
  // covers the file when covers: no seeding, so no read of a damaged file)
  a->journal_covers = covers;
  CS_CHECK(archive_window_begin(a, 1));
  rc = archive_h5_session_open(a, &file);
  if (!rc) {
    rc = archive_table_repair(a, file, "curvature");
    if (!rc) rc = archive_table_repair(a, file, "curves");
    if (!rc) rc = archive_table_repair(a, file, ARCHIVE_POINTS_INDEX);
    if (!rc) rc = archive_journal_replay(a, file, s, 0, 0, NULL);
    rc = archive_h5_session_close(a, file, rc);
  }
  if (rc && covers) return archive_rebuild_damaged(a, spec, mask, s);
  if (!rc) rc = archive_window_end(a);
  return rc;
}

static int archive_any_finished(const cs_archive *a) {
  for (int64_t r = 0; r < a->n_rows; r++)
    if (a->row_status[r] != CELL_PENDING) return 1;
  return 0;
}

static int archive_open_write_impl(const char *path, const cs_spec *spec, cs_archive_mode mode,
                                   const unsigned char *mask, cs_archive **out) {
  *out = NULL;
  if (!path || !path[0] || !spec) return cs_error(CS_ERR_INPUT, "archive_open_write: no path or spec");
  if (mode != ARCHIVE_CREATE && mode != ARCHIVE_OVERWRITE && mode != ARCHIVE_RESUME)
    return cs_error(CS_ERR_INPUT, "archive_open_write: unknown mode %d", (int)mode);
  cs_archive *a;
  CS_CHECK(archive_new(path, &a));
  archive_copy_str(a->spec_sha256, sizeof a->spec_sha256, spec_canonical_sha256(spec));
  a->spec = spec;
  int exists = archive_file_exists(path), jexists = archive_file_exists(a->journal_path);
  int created = 0, rc = CS_OK;
  archive_journal_scan scan;
  memset(&scan, 0, sizeof scan);

  // refusals that need no lock and touch nothing
  if (mode == ARCHIVE_CREATE && exists)
    rc = cs_error(CS_ERR_INPUT, "%s already exists: use --overwrite to replace it, run the same "
                  "spec again to resume it, or use another -o path", path);
  else if (mode == ARCHIVE_CREATE && jexists)
    rc = cs_error(CS_ERR_INPUT, "%s does not exist but its journal %s does (an earlier run): resume "
                  "to recover it, or move the journal away", path, a->journal_path);
  if (!rc && mode == ARCHIVE_OVERWRITE) rc = archive_check_replaceable(path);
  struct stat st;
  if (!rc && exists && stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    rc = cs_error(CS_ERR_INPUT, "%s is not a regular file, so not a curvsweep archive: use another "
                  "-o path", path);
  if (!rc) rc = archive_make_parent_dirs(path);
  if (!rc) rc = archive_journal_lock(a, &created);
  if (rc) goto fail;
  // look again now that this process is the only writer: another one may
  // have created, finished or removed things since the looks above
  exists = archive_file_exists(path), jexists = !created;
  if (mode == ARCHIVE_CREATE && (exists || jexists)) {
    rc = cs_error(CS_ERR_INPUT, "%s was created by another curvsweep process while this one "
                  "started: run the same spec again to resume it, or use another -o path", path);
    goto fail;
  }

  if (mode == ARCHIVE_RESUME && (exists || jexists)) {
    // read the journal (untouched until everything checks out)
    rc = archive_journal_scan_fd(a->journal_fd, a->journal_path, &scan);
    if (!rc && exists) rc = archive_resume_existing(a, spec, mask, &scan, created);
    else if (!rc) rc = archive_journal_check_spec(a, &scan);
    if (!rc && !exists) rc = archive_rebuild(a, spec, mask, &scan, 0);  // journal without archive
    if (rc) goto fail;
    if (!scan.header_ok || strcmp(scan.sha, a->spec_sha256) != 0) {
      // no usable header (or an empty journal of another spec): start afresh
      rc = archive_journal_reset(a, !archive_any_finished(a));
    } else {
      // cut a torn tail away
      if (scan.good_end < scan.size && (ftruncate(a->journal_fd, scan.good_end) != 0 ||
                                        fdatasync(a->journal_fd) != 0))
        rc = cs_error(CS_ERR_IO, "cannot cut the torn tail of the journal %s: %s", a->journal_path,
                      strerror(errno));
      a->journal_records = scan.n;
      a->journal_covers = scan.covers;
    }
  } else {
    // create or overwrite: a complete new file replaces the path atomically
    rc = archive_create_fresh(a, spec, mask);
  }
  archive_scan_free(&scan);
  if (rc) {
    // past the point of changes: keep the journal if it may hold results
    archive_journal_abandon(a, created && a->journal_records == 0);
    archive_free(a);
    return rc;
  }
  *out = a;
  return CS_OK;

fail:
  archive_scan_free(&scan);
  archive_journal_abandon(a, created);
  archive_free(a);
  return rc;
}

/* A resume first grows an archive of a spec this one extends
 * (archive_grow.c; docs/ARCHIVE.md, "Growing a sweep"). */
static int archive_open_write_grow(const char *path, const cs_spec *spec, cs_archive_mode mode,
                                   const unsigned char *mask, cs_archive **out) {
  *out = NULL;
  if (mode == ARCHIVE_RESUME && path && spec) CS_CHECK(archive_grow_if_needed(path, spec, mask));
  return archive_open_write_impl(path, spec, mode, mask, out);
}

int archive_open_write(const char *path, const cs_spec *spec, cs_archive_mode mode,
                       const unsigned char *mask, cs_archive **out) {
  ARCHIVE_QUIETLY(archive_open_write_grow(path, spec, mode, mask, out));
}

cs_cell_status archive_cell_status(const cs_archive *a, int64_t cell_id) {
  int64_t r = archive_find_row(a, cell_id);
  if (r < 0) return CELL_PENDING;
  return (cs_cell_status)(a->row_journal[r] ? a->row_journal[r] : a->row_status[r]);
}

void archive_counts(const cs_archive *a, int64_t *selected, int64_t *done, int64_t *failed,
                    int64_t *diverged) {
  int64_t n[4] = {0, 0, 0, 0}, sel = 0;
  for (int64_t r = 0; r < a->n_rows; r++) {
    if (!a->row_selected[r]) continue;
    sel++;
    n[(a->row_journal[r] ? a->row_journal[r] : a->row_status[r]) & 3]++;
  }
  if (selected) *selected = sel;
  if (done) *done = n[CELL_DONE];
  if (failed) *failed = n[CELL_FAILED];
  if (diverged) *diverged = n[CELL_DIVERGED];
}

/* One result: dirty flag and record in the journal (one sync), the HDF5
 * write, the flag cleared. The dirty flag stays set when the HDF5 write
 * fails, so the next resume rebuilds the file from the journal. */
/* Refuse a write the file system cannot hold before HDF5 sees it: an HDF5
 * flush that fails with ENOSPC leaves a file that its library cannot close
 * again (and crashes at exit). need: bytes the write may take. */
static int archive_check_space(const cs_archive *a, size_t need) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", a->path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  if (!dir[0]) snprintf(dir, sizeof dir, "/");
  struct statvfs st;
  if (statvfs(dir, &st) != 0) return CS_OK; /* cannot tell: let the write report */
  double avail = (double)st.f_bavail * (double)st.f_frsize;
  if (avail < (double)need)
    return cs_error(CS_ERR_IO,
                    "cannot write to the archive %s: %.0f kB free on its file system, a result "
                    "needs about %.0f kB (No space left on device); free some space and resume "
                    "with the same command",
                    a->path, avail / 1024, (double)need / 1024);
  return CS_OK;
}

/* Bytes a result of len packed bytes may occupy in journal + HDF5 (chunk
 * overheads included). */
static size_t archive_footprint(size_t len) {
  return 3 * len + ((size_t)1 << 20);
}

/* The file as the journal says it should be: rebuilt from a fresh scan of
 * a covering journal (every record so far, the one just written included),
 * rows and selection kept, the old file set aside (docs/ARCHIVE.md, "Resume
 * protocol"). CS_ERR_IO when there is no covering journal to rebuild from. */
static int archive_rebuild_from_journal(cs_archive *a) {
  if (!a->spec || a->journal_fd < 0 || !a->journal_covers)
    return cs_error(CS_ERR_IO, "%s: no journal covering it to rebuild it from", a->path);
  archive_journal_scan s;
  CS_CHECK(archive_journal_scan_fd(a->journal_fd, a->journal_path, &s));
  unsigned char *mask = NULL;
  int rc = CS_CALLOC(mask, spec_cell_count(a->spec));
  for (int64_t r = 0; !rc && r < a->n_rows; r++) mask[a->row_cell[r]] = a->row_selected[r];
  if (!rc && !(s.header_ok && s.covers))
    rc = cs_error(CS_ERR_IO, "%s: its journal does not cover it", a->path);
  if (!rc) rc = archive_rebuild(a, a->spec, mask, &s, 1);
  free(mask);
  archive_scan_free(&s);
  return rc;
}

/* An HDF5 write that failed (rc) on a file the journal covers: the file is
 * damaged where the write touched it (a bad chunk or header no earlier read
 * saw), so it is rebuilt from the journal, which already holds the write.
 * Returns CS_OK when rebuilt, else rc with both reasons. */
static int archive_write_failed(cs_archive *a, int rc) {
  char first[1024];
  archive_copy_str(first, sizeof first, cs_error_message());
  cs_error_clear();
  if (archive_rebuild_from_journal(a) == CS_OK) return CS_OK;
  return cs_error(rc, "%s (and rebuilding it from the journal %s failed: %s); resume with the "
                  "same command", first, a->journal_path, cs_error_message());
}

/* A journaled result whose HDF5 write is still to come: its status is what
 * archive_cell_status and archive_counts report. */
static void archive_stage_status(cs_archive *a, int64_t cell_id, int status) {
  int64_t row = archive_find_row(a, cell_id);
  if (row >= 0) a->row_journal[row] = (unsigned char)status;
}

/* Add one result: checked, packed, appended to the journal (no sync yet:
 * archive_commit syncs a group of them) and staged for the next batch. */
static int archive_add_impl(cs_archive *a, const cs_cell_result *r) {
  CS_CHECK(archive_check_result(a, r));
  if (a->journal_fd < 0) {  // no journal (not a sweep's archive): straight into the file
    hid_t file;
    CS_CHECK(archive_h5_session_open(a, &file));
    return archive_h5_session_close(a, file, archive_apply_result(a, file, r));
  }
  unsigned char *buf = NULL;
  size_t len = 0;
  CS_CHECK(result_pack(r, &buf, &len));
  int rc = archive_check_space(a, archive_footprint(len));
  if (!rc) rc = archive_journal_seed(a);
  if (!rc && a->n_staged == a->cap_staged) {
    int64_t cap = a->cap_staged ? 2 * a->cap_staged : 256;
    archive_record_ref *p = realloc(a->staged, (size_t)cap * sizeof *p);
    if (!p) rc = cs_error(CS_ERR_NOMEM, "out of memory staging results for %s", a->path);
    else a->staged = p, a->cap_staged = cap;
  }
  off_t at = 0;
  if (!rc) rc = archive_journal_append_at(a, ARCHIVE_REC_RESULT, buf, len, 0, &at);
  free(buf);
  CS_CHECK(rc);
  double now = cs_monotonic_seconds();
  if (a->unsynced++ == 0) a->unsynced_since = now;
  a->staged[a->n_staged++] =
      (archive_record_ref){ARCHIVE_REC_RESULT, at, len, r->cell_id, (int)r->status, r->attempts};
  a->staged_bytes += len;
  archive_stage_status(a, r->cell_id, (int)r->status);
  return CS_OK;
}

/* The journal's appended records made durable. */
static int archive_journal_sync(cs_archive *a) {
  if (a->unsynced > 0 && fdatasync(a->journal_fd) != 0)
    return cs_error(CS_ERR_IO, "cannot sync the journal %s: %s", a->journal_path, strerror(errno));
  a->unsynced = 0;
  return CS_OK;
}

/* The staged results into the HDF5 file as one batch: dirty flag set (and
 * synced with the journal records it follows), one open, the batch, one
 * close, flag cleared. A failed write on a covered file rebuilds it from
 * the journal (which holds the batch). */
static int archive_apply_staged(cs_archive *a, int defer) {
  if (a->n_staged == 0) return CS_OK;
  double t0 = cs_monotonic_seconds();
  CS_CHECK(archive_check_space(a, archive_footprint(a->staged_bytes)));
  // the file's lock first: a batch that readers hold off stays staged (it
  // is in the journal) and is tried again at the next commit
  int lock_fd = -1, busy = 0;
  int rc = archive_h5_session_lock(a, defer ? 0.0 : ARCHIVE_WRITE_WAIT_SECONDS, &lock_fd, &busy);
  if (rc && busy && defer) {
    cs_error_clear();
    return archive_journal_sync(a);
  }
  if (rc) {  // held by readers past the wait: the batch stays in the journal only
    a->unapplied += a->n_staged;
    a->n_staged = 0, a->staged_bytes = 0;
    return rc;
  }
  rc = archive_journal_set_dirty(a, 1, 0);
  if (!rc && fdatasync(a->journal_fd) != 0)
    rc = cs_error(CS_ERR_IO, "cannot sync the journal %s: %s", a->journal_path, strerror(errno));
  if (rc) {
    archive_file_unlock(&lock_fd);
    return rc;
  }
  a->unsynced = 0;
  hid_t file;
  rc = archive_h5_session_open_locked(a, &lock_fd, &file);
  if (!rc) rc = archive_h5_session_close(a, file, archive_journal_apply_refs(a, file, a->staged, a->n_staged));
  if (rc) rc = archive_write_failed(a, rc);
  if (rc) {
    // the batch stays in the journal only: unapplied, so the dirty flag
    // stays set and the journal is kept until a resume applies it
    a->unapplied += a->n_staged;
    a->n_staged = 0, a->staged_bytes = 0;
    return rc;
  }
  for (int64_t i = 0; i < a->n_staged; i++) archive_stage_status(a, a->staged[i].cell_id, 0);
  a->n_staged = 0, a->staged_bytes = 0;
  a->last_apply = cs_monotonic_seconds();
  a->last_apply_s = a->last_apply - t0;
  return archive_window_end(a);
}

/* Group commit: the journal synced when forced or when its oldest unsynced
 * result has waited ARCHIVE_SYNC_SECONDS (*durable: results made durable by
 * this call); the staged batch written to HDF5 once ARCHIVE_APPLY_RATIO
 * times the last batch's duration, at most ARCHIVE_APPLY_SECONDS, has
 * passed since it, or when it is large (docs/ARCHIVE.md, "Write
 * protocol"). */
static int archive_commit_impl(cs_archive *a, int force, int64_t *durable) {
  if (durable) *durable = 0;
  if (a->journal_fd < 0) return CS_OK;
  double now = cs_monotonic_seconds();
  double wait = ARCHIVE_APPLY_RATIO * a->last_apply_s;
  if (wait > ARCHIVE_APPLY_SECONDS) wait = ARCHIVE_APPLY_SECONDS;
  int apply = a->n_staged > 0 && (now - a->last_apply >= wait ||
                                  a->n_staged >= ARCHIVE_APPLY_RESULTS ||
                                  a->staged_bytes >= ARCHIVE_APPLY_BYTES);
  int64_t n = a->unsynced;
  if (apply) {
    CS_CHECK(archive_apply_staged(a, 1));  // syncs the journal first (also when deferred)
  } else if (n > 0 && (force || now - a->unsynced_since >= ARCHIVE_SYNC_SECONDS)) {
    if (fdatasync(a->journal_fd) != 0)
      return cs_error(CS_ERR_IO, "cannot sync the journal %s: %s", a->journal_path, strerror(errno));
    a->unsynced = 0;
  } else {
    n = 0;
  }
  if (durable) *durable = n;
  return CS_OK;
}

/* Everything journaled made durable and written to the HDF5 file. */
static int archive_flush_impl(cs_archive *a) {
  if (a->journal_fd < 0) return CS_OK;
  if (a->n_staged > 0) return archive_apply_staged(a, 0);
  return archive_journal_sync(a);
}

int archive_add_result(cs_archive *a, const cs_cell_result *r) {
  ARCHIVE_QUIETLY(archive_add_impl(a, r));
}

int archive_commit(cs_archive *a, int force, int64_t *durable) {
  ARCHIVE_QUIETLY(archive_commit_impl(a, force, durable));
}

int archive_flush(cs_archive *a) {
  ARCHIVE_QUIETLY(archive_flush_impl(a));
}

static int archive_write_result_impl(cs_archive *a, const cs_cell_result *r) {
  CS_CHECK(archive_add_impl(a, r));
  return archive_commit_impl(a, 1, NULL);
}

int archive_write_result(cs_archive *a, const cs_cell_result *r) {
  ARCHIVE_QUIETLY(archive_write_result_impl(a, r));
}

/* Test hook: a writer killed inside the HDF5 write of r (dirty flag set,
 * record synced, nothing applied). */
static int archive_journal_only_impl(cs_archive *a, const cs_cell_result *r) {
  CS_CHECK(archive_check_result(a, r));
  CS_CHECK(archive_flush_impl(a));
  CS_CHECK(archive_window_begin(a, 0));
  CS_CHECK(archive_journal_result(a, r, 1));
  a->unapplied++;
  return CS_OK;
}

int archive_test_journal_only(cs_archive *a, const cs_cell_result *r) {
  ARCHIVE_QUIETLY(archive_journal_only_impl(a, r));
}

static int archive_run_impl(cs_archive *a, const cs_run_info *run, int begin) {
  if (!begin && a->run_row < 0)
    return cs_error(CS_ERR_INTERNAL, "%s: archive_end_run without archive_begin_run", a->path);
  archive_run_payload p;
  memset(&p, 0, sizeof p);
  p.row = begin ? a->n_runs : a->run_row;
  p.info = *run;
  CS_CHECK(archive_flush_impl(a));
  CS_CHECK(archive_check_space(a, (size_t)1 << 20));
  // journal first, then the file
  if (a->journal_fd >= 0) {
    CS_CHECK(archive_window_begin(a, 0));
    CS_CHECK(archive_journal_append(a, begin ? ARCHIVE_REC_RUN_BEGIN : ARCHIVE_REC_RUN_END, &p,
                                    sizeof p, 1));
  }
  hid_t file;
  int rc = archive_h5_session_open(a, &file);
  if (!rc) {
    rc = archive_apply_run(a, file, p.row, run);
    rc = archive_h5_session_close(a, file, rc);
  }
  if (rc && a->journal_fd >= 0) rc = archive_write_failed(a, rc);
  if (rc) return rc;
  if (begin) a->run_row = a->n_runs - 1;
  return archive_window_end(a);
}

int archive_begin_run(cs_archive *a, const cs_run_info *run) {
  ARCHIVE_QUIETLY(archive_run_impl(a, run, 1));
}

int archive_end_run(cs_archive *a, const cs_run_info *run) {
  ARCHIVE_QUIETLY(archive_run_impl(a, run, 0));
}

/* The verified close (docs/ARCHIVE.md, "Resume protocol"): before the
 * journal goes, every result it records is read back from the file and
 * compared; a file that does not hold them is rebuilt from the journal (the
 * damaged one set aside, never deleted) and read back again. A journal is
 * never removed while it holds something the file does not. */
static int archive_close_verified(cs_archive *a) {
  archive_journal_scan s;
  CS_CHECK(archive_journal_scan_fd(a->journal_fd, a->journal_path, &s));
  int intact = 0;
  int rc = archive_journal_verify(a, &s, &intact);
  if (!rc && !intact && s.header_ok && s.covers && a->spec) {
    a->journal_covers = 1;
    rc = archive_rebuild_from_journal(a);
    if (!rc) rc = archive_journal_verify(a, &s, &intact);
  }
  if (!rc && !intact)
    rc = cs_error(CS_ERR_IO, "%s does not hold every result its journal %s records and could not "
                  "be rebuilt from it: the journal is kept; resume with the same command",
                  a->path, a->journal_path);
  if (!rc) {
    unlink(a->journal_path);
    archive_fsync_dir(a->journal_path);
  }
  archive_scan_free(&s);
  return rc;
}

static int archive_close_impl(cs_archive *a) {
  if (!a) return CS_OK;
  // the journal goes once the file holds all of it (clean, nothing
  // unapplied, read back) and nothing is pending, or when it holds no record
  int rc = archive_flush_impl(a);
  int64_t pending = 0;
  for (int64_t r = 0; r < a->n_rows; r++) pending += a->row_status[r] == CELL_PENDING;
  if (!rc && a->journal_fd >= 0 && a->unapplied == 0 && !a->dirty) {
    if (a->journal_records == 0) {
      unlink(a->journal_path);
      archive_fsync_dir(a->journal_path);
    } else if (pending == 0) {
      rc = archive_close_verified(a);
    }
  }
  archive_free(a);
  return rc;
}

int archive_close(cs_archive *a) {
  ARCHIVE_QUIETLY(archive_close_impl(a));
}

/* archive_commit.c — results into an archive open for writing
 * (docs/ARCHIVE.md, "Write protocol"): each added result checked, packed
 * and appended to the journal, staged; the journal synced as a group
 * commit, the staged results written into the HDF5 file as one batch under
 * the file's exclusive lock (deferred while readers hold it); /runs rows
 * journaled then written; and the verified close that removes the journal
 * only once the file holds all of it. A write that fails on a file the
 * journal covers rebuilds the file from the journal (archive_open.c). */
#include "archive_internal.h"
#include "curvsweep/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Refuse a write the file system cannot hold before HDF5 sees it: an HDF5
 * flush that fails with ENOSPC leaves a file that its library cannot close
 * again (and crashes at exit). need: bytes the write may take. */
static int archive_check_space(const cs_archive *a, size_t need) {
  char *dir = cs_dirname(a->path);
  struct statvfs st;
  int known = dir && statvfs(dir, &st) == 0;
  free(dir);
  if (!known) return CS_OK; /* cannot tell: let the write report */
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
  cs_first_error first = {0};
  cs_first_error_note(&first, rc);
  cs_error_clear();
  if (archive_rebuild_from_journal(a) == CS_OK) return CS_OK;
  return cs_error(rc, "%s (and rebuilding it from the journal %s failed: %s); resume with the "
                  "same command", first.message, a->journal_path, cs_error_message());
}

/* A journaled result whose HDF5 write is still to come: its status is what
 * archive_cell_status and archive_counts report. */
static void archive_stage_status(cs_archive *a, int64_t cell_id, int status) {
  int64_t row = archive_find_row(a, cell_id);
  if (row >= 0) a->row_journal[row] = (unsigned char)status;
}

/* Add one result: checked, packed, appended to the journal (no sync yet:
 * archive_commit syncs a group of them) and staged for the next batch. */
int archive_add_result(cs_archive *a, const cs_cell_result *r) {
  ARCHIVE_QUIET;
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
  if (rc) archive_file_unlock(&lock_fd);  // nothing written: the journal does not cover it
  CS_CHECK(rc);
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
int archive_commit(cs_archive *a, int force, int64_t *durable) {
  ARCHIVE_QUIET;
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
int archive_flush(cs_archive *a) {
  ARCHIVE_QUIET;
  if (a->journal_fd < 0) return CS_OK;
  if (a->n_staged > 0) return archive_apply_staged(a, 0);
  return archive_journal_sync(a);
}




int archive_write_result(cs_archive *a, const cs_cell_result *r) {
  ARCHIVE_QUIET;
  CS_CHECK(archive_add_result(a, r));
  return archive_commit(a, 1, NULL);
}


/* Test hook: a writer killed inside the HDF5 write of r (dirty flag set,
 * record synced, nothing applied). */
int archive_test_journal_only(cs_archive *a, const cs_cell_result *r) {
  ARCHIVE_QUIET;
  CS_CHECK(archive_check_result(a, r));
  CS_CHECK(archive_flush(a));
  CS_CHECK(archive_window_begin(a, 0));
  CS_CHECK(archive_journal_result(a, r, 1));
  a->unapplied++;
  return CS_OK;
}


/* A /runs row: begun (appended) or ended (its row rewritten), journaled
 * first, then written. */
static int archive_run_record(cs_archive *a, const cs_run_info *run, int begin) {
  if (!begin && a->run_row < 0)
    return cs_error(CS_ERR_INTERNAL, "%s: archive_end_run without archive_begin_run", a->path);
  archive_run_payload p;
  memset(&p, 0, sizeof p);
  p.row = begin ? a->n_runs : a->run_row;
  p.info = *run;
  CS_CHECK(archive_flush(a));
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
  ARCHIVE_QUIET;
  return archive_run_record(a, run, 1);
}

int archive_end_run(cs_archive *a, const cs_run_info *run) {
  ARCHIVE_QUIET;
  return archive_run_record(a, run, 0);
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
    cs_fsync_dir(a->journal_path);
  }
  archive_scan_free(&s);
  return rc;
}

int archive_close(cs_archive *a) {
  ARCHIVE_QUIET;
  if (!a) return CS_OK;
  // the journal goes once the file holds all of it (clean, nothing
  // unapplied, read back) and nothing is pending, or when it holds no record
  int rc = archive_flush(a);
  int64_t pending = 0;
  for (int64_t r = 0; r < a->n_rows; r++) pending += a->row_status[r] == CELL_PENDING;
  if (!rc && a->journal_fd >= 0 && a->unapplied == 0 && !a->dirty) {
    if (a->journal_records == 0) {
      unlink(a->journal_path);
      cs_fsync_dir(a->journal_path);
    } else if (pending == 0) {
      rc = archive_close_verified(a);
    }
  }
  archive_free(a);
  return rc;
}


/* archive_journal_state.c — what `curvsweep info` says of the journal
 * beside an archive (docs/ARCHIVE.md, "A journal beside the archive"): is
 * one there, what it holds, what of it the archive lacks, and whether a
 * process of this machine holds its lock.
 *
 * Read only, and never in the way of a writer: the journal is opened
 * read-only (never created, never through a symbolic link, never blocking
 * on a FIFO) and scanned like a resume scans it (archive_journal_scan_fd:
 * records up to the first torn or bad one; a record being appended is
 * such a one). Its lock is never taken, not even for an instant: a run
 * starting then would find it held and be refused. Whether a process holds
 * it is read from /proc/locks, which takes no lock and changes nothing. The
 * archive is read like any reader reads it (its shared lock, released
 * before the journal is scanned). */
#include "archive_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Does a process of this machine hold a flock on the file (dev, ino)?
 * /proc/locks lists one line per lock, "N: FLOCK  ADVISORY  WRITE PID
 * MAJ:MIN:INODE START END" (major and minor in hex; a line with "->" is a
 * process waiting for it, not holding it). 1 (*pid: the holder, 0 when the
 * kernel does not show it to this process), 0 when none is listed, -1 when
 * /proc/locks cannot be read. A writer on another machine of a shared file
 * system, or a file system whose stat device is not the one listed (btrfs
 * subvolumes), is not seen: 0 is "none seen", never "none". */
static int journal_lock_holder(dev_t dev, ino_t ino, long *pid) {
  *pid = 0;
  FILE *f = fopen("/proc/locks", "re");
  if (!f) return -1;
  char line[256];
  int held = 0;
  while (!held && fgets(line, sizeof line, f)) {
    char kind[16];
    long p;
    unsigned maj, min;
    unsigned long long in;
    if (strstr(line, "->") ||
        sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", kind, &p, &maj, &min, &in) != 5)
      continue;
    if (!strcmp(kind, "FLOCK") && maj == major(dev) && min == minor(dev) && in == (unsigned long long)ino)
      held = 1, *pid = p > 0 ? p : 0;
  }
  fclose(f);
  return held;
}

/* The scanned journal's records counted into *out; with the archive's rows
 * (a, NULL when the archive could not be read), the cells whose last
 * journaled state (status and attempts: the rule of a resume's replay) the
 * archive does not hold, and the records of cells it does not list. */
static int journal_state_count(const archive_journal_scan *s, const cs_archive *a,
                               cs_archive_journal_state *out) {
  for (int64_t i = 0; i < s->n; i++) {
    if (s->recs[i].kind == ARCHIVE_REC_RESULT) out->results++;
    else out->runs++;
  }
  if (!a) return CS_OK;
  int64_t *last = NULL;  // per row of the archive: its cell's last result record, -1: none
  CS_CHECK(CS_CALLOC(last, a->n_rows ? a->n_rows : 1));
  for (int64_t r = 0; r < a->n_rows; r++) last[r] = -1;
  for (int64_t i = 0; i < s->n; i++) {
    if (s->recs[i].kind != ARCHIVE_REC_RESULT) continue;
    int64_t row = archive_find_row(a, s->recs[i].cell_id);
    if (row < 0) out->foreign++;
    else last[row] = i;
  }
  out->unapplied = 0;
  for (int64_t r = 0; r < a->n_rows; r++)
    if (last[r] >= 0 && (a->row_status[r] != s->recs[last[r]].status ||
                         a->row_attempts[r] != s->recs[last[r]].attempts))
      out->unapplied++;
  free(last);
  return CS_OK;
}

/* What a run would refuse, for the report (never an error of info). */
static void journal_state_refused(cs_archive_journal_state *out, const char *what) {
  snprintf(out->problem, sizeof out->problem, "%s; a run refuses it (a journal must be a regular "
           "file of this user, docs/SECURITY.md)", what);
}

int archive_journal_state(const char *path, cs_archive_journal_state *out) {
  ARCHIVE_QUIET;
  memset(out, 0, sizeof *out);
  out->unapplied = -1;
  out->lock = -1;
  char *jpath = cs_strdup_printf("%s.journal", path);
  if (!jpath) return cs_error(CS_ERR_NOMEM, "out of memory");
  cs_copy_str(out->path, sizeof out->path, jpath);
  struct stat st;
  if (lstat(jpath, &st) != 0) {  // none (or none this user may see): nothing to say
    free(jpath);
    return CS_OK;
  }
  out->present = 1;
  out->bytes = (int64_t)st.st_size;
  // the archive's rows first, under its shared lock, released before the
  // journal is read: results reach the journal before the archive, so what
  // the journal holds then includes every result the archive held
  archive_reader rd;
  cs_archive *rows = NULL;
  if (archive_reader_open(path, &rd) == CS_OK) {
    cs_copy_str(out->identity, sizeof out->identity, rd.meta.identity);
    archive_h5_fclose(rd.file);  // the lock goes with the file; the rows stay
    rd.file = H5I_INVALID_HID;
    rows = rd.a;
  } else {
    cs_error_clear();
  }
  const char *why = NULL;
  int fd = -1;
  if (S_ISLNK(st.st_mode)) {
    journal_state_refused(out, "a symbolic link");
  } else {
    fd = cs_open_regular(jpath, O_RDONLY | O_NOFOLLOW, 0, &st, &why);
    if (fd == -1 && errno == ENOENT) out->present = 0;  // removed since: the run ended
    else if (fd == -1) snprintf(out->problem, sizeof out->problem, "cannot be read: %s", why);
    else if (fd == -2) journal_state_refused(out, why);
    else if (st.st_uid != geteuid()) journal_state_refused(out, "owned by another user");
    if (out->present) out->lock = journal_lock_holder(st.st_dev, st.st_ino, &out->lock_pid);
  }
  if (fd >= 0 && !out->problem[0]) {
    archive_journal_scan s;
    int rc = archive_journal_scan_fd(fd, jpath, &s);
    if (rc == CS_OK) {
      out->bytes = (int64_t)s.size;
      out->header = s.header_ok;
      out->dirty = s.dirty;
      // a resume refuses a journal of another spec that holds records
      // (archive_journal_check_spec)
      out->other_spec = rows && s.header_ok && s.n > 0 && strcmp(s.sha, out->identity) != 0;
      rc = journal_state_count(&s, rows, out);
      archive_scan_free(&s);
    }
    if (rc) {  // a journal that cannot be scanned is reported, not an error of info
      cs_copy_str(out->problem, sizeof out->problem, cs_error_message());
      cs_error_clear();
    }
  }
  if (fd >= 0) close(fd);
  if (rows) archive_reader_close(&rd);
  free(jpath);
  return CS_OK;
}

/* archive_lock.c — one writer per archive: the journal's flock, taken
 * lock-then-verify (docs/DECISIONS.md, "One writer: the journal lock").
 *
 * A writer that finishes removes its journal while holding the lock. A
 * process that opened that file just before could then lock an unlinked
 * file while a third process creates and locks a new one at the path, and
 * both would write. So once flock succeeds, the locked descriptor must still
 * be the file at the path (same device and inode), else it is closed and the
 * open retried. A process that does not get the lock never removes anything:
 * the winner holds that file.
 *
 * The journal is opened relative to its directory's descriptor without
 * following a symbolic link, and must be a regular file of this user
 * (path.h, docs/SECURITY.md). */
#include "archive_internal.h"

#include "curvsweep/clock.h"
#include "curvsweep/path.h"

#include "curvsweep/error.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ARCHIVE_LOCK_RETRIES 1000

/* Open (creating when absent) the journal at jpath relative to its
 * directory's descriptor dfd (base: its name there), never through a
 * symbolic link, and refuse one that is not a regular file of this user
 * (docs/SECURITY.md): such a journal would let whoever placed it choose
 * what curvsweep truncates, writes or replays. */
static int archive_lock_open(int dfd, const char *base, const char *jpath, const char *path,
                             struct stat *held, int *fd_out, int *created) {
  const char *why;
  int fd = cs_open_owned_at(dfd, base, 0644, held, created, &why);
  if (fd == -1)
    return cs_error(CS_ERR_IO, "cannot open the journal %s of the archive %s: %s", jpath, path,
                    why);
  if (fd == -2)
    return cs_error(CS_ERR_INPUT, "the journal %s of the archive %s cannot be used (%s; a journal "
                    "must be a regular file of this user, docs/SECURITY.md): move it away or use "
                    "another -o path", jpath, path, why);
  *fd_out = fd;
  return CS_OK;
}

static int archive_lock_journal_at(int dfd, const char *base, const char *jpath, const char *path,
                                   int *fd_out, int *created) {
  for (int attempt = 0;; attempt++) {
    struct stat held, now;
    int fd = -1;
    CS_CHECK(archive_lock_open(dfd, base, jpath, path, &held, &fd, created));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      close(fd);  // never unlink: whoever holds the lock owns the file
      if (err == EINTR) continue;
      if (err == EWOULDBLOCK || err == EAGAIN)
        return cs_error(CS_ERR_INPUT, "%s is being written by another curvsweep process (its journal "
                        "%s is locked): wait for it to finish or use another -o path", path, jpath);
      return cs_error(CS_ERR_IO, "cannot lock the journal %s of the archive %s: %s", jpath, path,
                      strerror(err));
    }
    // verify: the locked file is the one at the path (a symbolic link put
    // there since is not it)
    if (fstat(fd, &held) != 0 || fstatat(dfd, base, &now, AT_SYMLINK_NOFOLLOW) != 0 ||
        now.st_dev != held.st_dev || now.st_ino != held.st_ino) {
      close(fd);
      if (attempt < ARCHIVE_LOCK_RETRIES) continue;
      return cs_error(CS_ERR_IO, "cannot lock the journal %s of the archive %s: it was replaced %d "
                      "times while being locked", jpath, path, ARCHIVE_LOCK_RETRIES);
    }
    *created = held.st_size == 0;
    *fd_out = fd;
    if (*created) fsync(dfd);
    return CS_OK;
  }
}

int archive_lock_journal(const char *jpath, const char *path, int *fd_out, int *created) {
  *created = 0;
  *fd_out = -1;
  int dfd;
  const char *base, *why;
  if (cs_dir_open(jpath, &dfd, &base, &why) != 0)
    return cs_error(CS_ERR_IO, "cannot open the directory of the journal %s of the archive %s: %s",
                    jpath, path, why);
  int rc = archive_lock_journal_at(dfd, base, jpath, path, fd_out, created);
  close(dfd);
  return rc;
}

/* ---- The archive file's own lock: live readers (docs/ARCHIVE.md, "Live
 * readers") ----
 *
 * The writer applies a batch under an exclusive flock on the archive file
 * itself; every reader holds a shared one while its HDF5 file is open. It
 * is the lock HDF5's own file locking takes (flock on the file, shared for
 * a read-only open, held while the file is open), so h5py and h5dump with
 * their default settings take part too. HDF5's own locking stays off in
 * curvsweep's file access (archive_h5.c): flock locks belong to an open
 * file description, and the library's descriptor would conflict with ours.
 *
 * Each lock is a descriptor of its own, kept in a small table with the
 * HDF5 file it protects until archive_h5_fclose. A process holding the
 * exclusive lock reads its own file without a shared one (it is the
 * writer). On a file system without flock (ENOLCK, EOPNOTSUPP) nothing is
 * locked, as HDF5 does when told to ignore disabled locking. */
enum { ARCHIVE_HELD_MAX = 256 };

typedef struct {
  int fd;          /* -1: free slot */
  hid_t file;      /* the HDF5 file opened under it (H5I_INVALID_HID: not yet) */
  dev_t dev;
  ino_t ino;
  int exclusive;
} archive_held_lock;

static archive_held_lock archive_held[ARCHIVE_HELD_MAX];
static int archive_held_init;

static void archive_held_setup(void) {
  if (archive_held_init) return;
  for (int k = 0; k < ARCHIVE_HELD_MAX; k++) archive_held[k].fd = -1;
  archive_held_init = 1;
}

/* The held lock on (dev, ino) of this process, or NULL. */
static archive_held_lock *archive_held_find(dev_t dev, ino_t ino) {
  archive_held_setup();
  for (int k = 0; k < ARCHIVE_HELD_MAX; k++)
    if (archive_held[k].fd >= 0 && archive_held[k].dev == dev && archive_held[k].ino == ino)
      return &archive_held[k];
  return NULL;
}

static void archive_pause(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* The writer's gate: a byte lock (fcntl, of the open file description) far
 * beyond the end of the archive, held by a writer whose exclusive lock was
 * refused until it gets it. A reader does not take its shared lock while
 * the gate is up, so readers whose reads overlap one another cannot hold a
 * writer off for ever: the ones reading finish, the writer writes, the
 * others then read. (fcntl locks and flock are independent on Linux.) A
 * file system without such locks has no gate. */
#define ARCHIVE_GATE_OFFSET ((off_t)1 << 62)
static int archive_gate_fd = -1;
static dev_t archive_gate_dev;
static ino_t archive_gate_ino;

/* A writer other than this process waits at the gate of fd's file. */
static int archive_gate_up(int fd) {
  struct stat st;
  if (archive_gate_fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == archive_gate_dev &&
      st.st_ino == archive_gate_ino)
    return 0;  // this process's own gate: it is the writer
  struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = ARCHIVE_GATE_OFFSET,
                     .l_len = 1};
  if (fcntl(fd, F_OFD_GETLK, &fl) != 0) return 0;
  return fl.l_type != F_UNLCK;
}

static void archive_gate_raise(const char *path) {
  if (archive_gate_fd >= 0) return;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = ARCHIVE_GATE_OFFSET,
                     .l_len = 1};
  if (fd < 0) return;
  if (fstat(fd, &st) != 0 || fcntl(fd, F_OFD_SETLK, &fl) != 0) {  // a reader looking: next time
    close(fd);
    return;
  }
  archive_gate_fd = fd, archive_gate_dev = st.st_dev, archive_gate_ino = st.st_ino;
}

static void archive_gate_lower(void) {
  if (archive_gate_fd >= 0) close(archive_gate_fd);
  archive_gate_fd = -1;
}

/* One attempt: 1 locked (*fd), 0 busy, -1 error (*code, message set), 2
 * flock is not supported here (nothing locked). */
static int archive_flock_once(const char *path, int exclusive, int *fd_out, struct stat *st,
                              int *code) {
  // O_NONBLOCK: a FIFO put at the path never blocks the open (it is then
  // refused: not the regular file that was looked at)
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), got = 1, err = 0;
  struct stat now;
  if (fd >= 0 && (fstat(fd, st) != 0 || !S_ISREG(st->st_mode))) {
    close(fd);
    *code = cs_error(CS_ERR_INPUT, "%s is not a regular file, so not a curvsweep archive", path);
    return -1;
  }
  if (fd < 0) {
    *code = cs_error(errno == ENOENT ? CS_ERR_INPUT : CS_ERR_IO, "cannot open the archive %s: %s",
                     path, strerror(errno));
    got = -1;
  } else if (!exclusive && archive_gate_up(fd)) {
    got = 0;
  } else if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    err = errno;
    if (err == EWOULDBLOCK || err == EAGAIN || err == EINTR) got = 0;
    else if (err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS) got = 2;
    else
      got = -1, *code = cs_error(CS_ERR_IO, "cannot lock the archive %s: %s", path, strerror(err));
  } else if (fstat(fd, st) != 0 || stat(path, &now) != 0 || now.st_dev != st->st_dev ||
             now.st_ino != st->st_ino) {
    // the locked file must still be the one at the path (a rebuild renames a
    // new file into place; a reader of the old one would wait on nothing)
    got = 0;
  }
  if (got == 1) *fd_out = fd;
  else if (fd >= 0) close(fd);
  return got;
}

static double archive_lock_wait_override = -1; /* archive_test_lock_wait */

void archive_test_lock_wait(double seconds) {
  archive_lock_wait_override = seconds;
}

int archive_file_lock(const char *path, int exclusive, double wait_s, int *fd_out, int *busy) {
  *fd_out = -1;
  if (wait_s > 0 && archive_lock_wait_override >= 0) wait_s = archive_lock_wait_override;
  if (busy) *busy = 0;
  struct stat st;
  if (stat(path, &st) == 0) {
    archive_held_lock *h = archive_held_find(st.st_dev, st.st_ino);
    if (h && h->exclusive && !exclusive) return CS_OK;  // the writer reading its own file
    if (h && exclusive)
      return cs_error(CS_ERR_INTERNAL, "%s: this process already holds a lock on it and asked for "
                      "the exclusive one", path);
  }
  double t0 = cs_monotonic_seconds(), pause = 0.001;
  for (;;) {
    int fd = -1, code = CS_OK;
    int got = archive_flock_once(path, exclusive, &fd, &st, &code);
    if (got < 0) return code;
    if (got == 2) return CS_OK;
    if (got == 1) {
      if (exclusive) archive_gate_lower();
      archive_held_setup();
      int k = 0;
      while (k < ARCHIVE_HELD_MAX && archive_held[k].fd >= 0) k++;
      int rc = k < ARCHIVE_HELD_MAX ? CS_OK
                                    : cs_error(CS_ERR_INTERNAL, "%s: more than %d archives open "
                                               "at once", path, ARCHIVE_HELD_MAX);
      if (rc) {
        close(fd);
      } else {
        archive_held[k] = (archive_held_lock){fd, H5I_INVALID_HID, st.st_dev, st.st_ino, exclusive};
        *fd_out = fd;
      }
      return rc;
    }
    if (exclusive) archive_gate_raise(path);  // no new readers until this writer has written
    double waited = cs_monotonic_seconds() - t0;
    if (waited >= wait_s) {
      if (busy) *busy = 1;
      if (exclusive && wait_s > 0) archive_gate_lower();  // gave up: readers go on
      if (exclusive)
        return cs_error(CS_ERR_IO, "%s is held open by another process for more than %.3g s (a "
                        "program reading it with HDF5 file locking, such as h5py, h5dump, or a "
                        "curvsweep reader): what is not written yet stays in its journal; close "
                        "it there and run the same command again to write it (nothing is "
                        "recomputed)", path, wait_s);
      return cs_error(CS_ERR_IO, "%s is being written (locked by the process writing it for more "
                      "than %.3g s; docs/ARCHIVE.md, \"Live readers\"): it is not damaged, try "
                      "again", path, wait_s);
    }
    archive_pause(pause);
    if (pause < 0.02) pause *= 2;
  }
}

void archive_file_unlock(int *fd) {
  if (*fd < 0) return;
  for (int k = 0; archive_held_init && k < ARCHIVE_HELD_MAX; k++)
    if (archive_held[k].fd == *fd) archive_held[k].fd = -1;
  close(*fd);  // releases the flock
  *fd = -1;
}

void archive_file_lock_attach(int fd, hid_t file) {
  for (int k = 0; fd >= 0 && archive_held_init && k < ARCHIVE_HELD_MAX; k++)
    if (archive_held[k].fd == fd) archive_held[k].file = file;
}

herr_t archive_h5_fclose(hid_t file) {
  herr_t e = H5Fclose(file);
  for (int k = 0; archive_held_init && k < ARCHIVE_HELD_MAX; k++)
    if (archive_held[k].fd >= 0 && archive_held[k].file == file) {
      int fd = archive_held[k].fd;
      archive_file_unlock(&fd);
    }
  return e;
}

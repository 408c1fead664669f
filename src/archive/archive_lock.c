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

#include "curvsweep/path.h"

#include "curvsweep/error.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
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

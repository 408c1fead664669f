/* archive_lock.c — one writer per archive: the journal's flock, taken
 * lock-then-verify (docs/DECISIONS.md, "One writer: the journal lock").
 *
 * A writer that finishes removes its journal while holding the lock. A
 * process that opened that file just before could then lock an unlinked
 * file while a third process creates and locks a new one at the path, and
 * both would write. So once flock succeeds, the locked descriptor must still
 * be the file at the path (same device and inode), else it is closed and the
 * open retried. A process that does not get the lock never removes anything:
 * the winner holds that file. */
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

int archive_lock_journal(const char *jpath, const char *path, int *fd_out, int *created) {
  *created = 0;
  *fd_out = -1;
  for (int attempt = 0;; attempt++) {
    // a FIFO at the journal path must not block the open; anything but a
    // regular file is refused
    struct stat held, now;
    const char *why;
    int fd = cs_open_regular(jpath, O_RDWR | O_CREAT, 0644, &held, &why);
    if (fd == -1)
      return cs_error(CS_ERR_IO, "cannot open the journal %s of the archive %s: %s", jpath, path,
                      why);
    if (fd == -2)
      return cs_error(CS_ERR_INPUT, "the journal %s of the archive %s cannot be used (%s): move it "
                      "away or use another -o path", jpath, path, why);
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
    // verify: the locked file is the one at the path
    if (fstat(fd, &held) != 0 || stat(jpath, &now) != 0 || now.st_dev != held.st_dev ||
        now.st_ino != held.st_ino) {
      close(fd);
      if (attempt < ARCHIVE_LOCK_RETRIES) continue;
      return cs_error(CS_ERR_IO, "cannot lock the journal %s of the archive %s: it was replaced %d "
                      "times while being locked", jpath, path, ARCHIVE_LOCK_RETRIES);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *created = held.st_size == 0;
    *fd_out = fd;
    if (*created) archive_fsync_dir(jpath);
    return CS_OK;
  }
}

/* path.c — mkdir -p, and opening a path that must be a regular file. */
#include "curvsweep/path.h"

#include "curvsweep/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cs_mkdir_p(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
    return cs_error(CS_ERR_INPUT, "directory name too long: %s", dir);
  /* every prefix ending at a '/' (and the whole path), in order */
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char keep = *p;
    *p = '\0';
    struct stat st;
    if (stat(path, &st) != 0) {
      if (errno != ENOENT || (mkdir(path, 0777) != 0 && errno != EEXIST))
        return cs_error(CS_ERR_IO, "cannot create the directory %s: %s", path, strerror(errno));
    } else if (!S_ISDIR(st.st_mode)) {
      return cs_error(CS_ERR_IO, "cannot create the directory %s: it exists (%s)", path,
                      strerror(ENOTDIR));
    }
    *p = keep;
    if (!keep) break;
  }
  return CS_OK;
}

int cs_open_regular(const char *path, int flags, int mode, struct stat *st, const char **why) {
  struct stat own;
  if (!st) st = &own;
  int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0) {
    *why = strerror(errno);
    return -1;
  }
  if (fstat(fd, st) != 0) {
    int err = errno;
    close(fd);
    *why = strerror(err);
    errno = err;
    return -1;
  }
  if (!S_ISREG(st->st_mode)) {
    close(fd);
    *why = S_ISDIR(st->st_mode)    ? strerror(EISDIR)
           : S_ISFIFO(st->st_mode) ? "not a regular file (a FIFO)"
           : S_ISSOCK(st->st_mode) ? "not a regular file (a socket)"
                                   : "not a regular file (a device or other special file)";
    return -2;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && !(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

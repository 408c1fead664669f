/* path.c — names of files (printf, bounded copies, the directory part),
 * existence and fsync, mkdir -p, opening a path that must be a regular
 * file, and creating files relative to a directory descriptor without
 * following symbolic links (docs/SECURITY.md). */
#include "curvsweep/path.h"

#include "curvsweep/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *cs_strdup_printf(const char *fmt, ...) {
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

void cs_copy_str(char *dst, size_t len, const char *src) {
  if (len == 0) return;
  size_t n = src ? strnlen(src, len - 1) : 0;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
}

char *cs_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return cs_strdup_printf(".");
  if (slash == path) return cs_strdup_printf("/");
  return cs_strdup_printf("%.*s", (int)(slash - path), path);
}

int cs_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

void cs_fsync_dir(const char *path) {
  char *dir = cs_dirname(path);
  if (!dir) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(dir);
}

int cs_fsync_file(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return cs_error(CS_ERR_IO, "cannot open %s to sync it: %s", path, strerror(errno));
  int rc = fsync(fd) == 0 ? CS_OK : cs_error(CS_ERR_IO, "cannot sync %s: %s", path, strerror(errno));
  close(fd);
  return rc;
}

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

/* Why a non-regular file is not one (st from fstat or fstatat). */
static const char *cs_file_kind(const struct stat *st) {
  return S_ISDIR(st->st_mode)    ? strerror(EISDIR)
         : S_ISLNK(st->st_mode)  ? "a symbolic link"
         : S_ISFIFO(st->st_mode) ? "not a regular file (a FIFO)"
         : S_ISSOCK(st->st_mode) ? "not a regular file (a socket)"
                                 : "not a regular file (a device or other special file)";
}

/* fd is open on a file: keep it if it is a regular file (and, with owned,
 * this user's), clearing O_NONBLOCK unless keep_nonblock: fd; otherwise it
 * is closed: -1 (fstat failed: why its error, errno kept) or -2 (why: what
 * the file is, or whose). */
static int cs_fd_regular(int fd, struct stat *st, int owned, int keep_nonblock, const char **why) {
  int r = fd, err = 0;
  if (fstat(fd, st) != 0) err = errno, *why = strerror(err), r = -1;
  else if (!S_ISREG(st->st_mode)) *why = cs_file_kind(st), r = -2;
  else if (owned && st->st_uid != geteuid()) *why = "owned by another user", r = -2;
  if (r < 0) {
    close(fd);
  } else {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && !keep_nonblock) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  }
  if (err) errno = err;
  return r;
}

int cs_open_regular_at(int dirfd, const char *name, int flags, int mode, struct stat *st,
                       const char **why) {
  struct stat own;
  if (!st) st = &own;
  int fd = openat(dirfd, name, flags | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0 && errno == ELOOP && (flags & O_NOFOLLOW)) {
    *why = "a symbolic link";
    return -2;
  }
  if (fd < 0) {
    *why = strerror(errno);
    return -1;
  }
  return cs_fd_regular(fd, st, 0, flags & O_NONBLOCK, why);
}

int cs_open_regular(const char *path, int flags, int mode, struct stat *st, const char **why) {
  return cs_open_regular_at(AT_FDCWD, path, flags, mode, st, why);
}

int cs_dir_open(const char *path, int *dirfd, const char **base, const char **why) {
  const char *slash = strrchr(path, '/');
  char dir[4096];
  *dirfd = -1;
  *base = slash ? slash + 1 : path;
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == path) snprintf(dir, sizeof dir, "/");
  else if ((size_t)(slash - path) >= sizeof dir) {
    errno = ENAMETOOLONG;
    *why = strerror(errno);
    return -1;
  } else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    *why = strerror(errno);
    return -1;
  }
  *dirfd = fd;
  return 0;
}

int cs_create_fresh_at(int dirfd, const char *name, int mode, const char **why) {
  for (int attempt = 0; attempt < 2; attempt++) {
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) return fd;
    int err = errno;
    struct stat st;
    if (err != EEXIST || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      *why = strerror(err);
      errno = err;
      return -1;
    }
    if (S_ISLNK(st.st_mode) || (S_ISREG(st.st_mode) && st.st_uid != geteuid())) {
      *why = S_ISLNK(st.st_mode) ? "a symbolic link is there" : "a file of another user is there";
      return -2;
    }
    // a stale temporary of ours is removed; anything else stays and fails
    if (!S_ISREG(st.st_mode) || attempt > 0 || unlinkat(dirfd, name, 0) != 0) {
      *why = strerror(EEXIST);
      errno = EEXIST;
      return -1;
    }
  }
  *why = strerror(EEXIST);
  errno = EEXIST;
  return -1;
}

int cs_open_owned_at(int dirfd, const char *name, int mode, struct stat *st, int *created,
                     const char **why) {
  struct stat own;
  if (!st) st = &own;
  *created = 0;
  // open what is there, else create it; a name that appears or vanishes
  // between the two is looked at again
  for (int attempt = 0; attempt < 100; attempt++) {
    int fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) return cs_fd_regular(fd, st, 1, 0, why);
    if (errno == ELOOP) {
      *why = "a symbolic link";
      return -2;
    }
    if (errno != ENOENT) break;
    fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
    if (fd >= 0) {
      *created = 1;
      return cs_fd_regular(fd, st, 1, 0, why);
    }
    if (errno != EEXIST) break;
  }
  *why = strerror(errno);
  return -1;
}

static int cs_transfer_all(int fd, void *p, size_t n, int writing) {
  unsigned char *b = p;
  while (n > 0) {
    ssize_t k = writing ? write(fd, b, n) : read(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    b += k, n -= (size_t)k;
  }
  return 0;
}

int cs_write_all(int fd, const void *p, size_t n) { return cs_transfer_all(fd, (void *)p, n, 1); }

int cs_read_all(int fd, void *p, size_t n) { return cs_transfer_all(fd, p, n, 0); }

/* path.h — file-system helpers shared by every module, and the strings
 * that name files (built with printf, copied into fixed-size fields). */
#ifndef CURVSWEEP_PATH_H
#define CURVSWEEP_PATH_H

#include <stddef.h>
#include <sys/stat.h>

/* A malloc'ed string built by printf (a path such as "%s.journal"); NULL
 * when out of memory. */
char *cs_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Copy src (NULL: "") into dst of len bytes, truncating to len - 1 bytes;
 * dst is always NUL-terminated. */
void cs_copy_str(char *dst, size_t len, const char *src);

/* The directory part of path ("." when it has no '/', "/" for "/name"),
 * malloc'ed; NULL when out of memory. */
char *cs_dirname(const char *path);

/* Is there something at path (stat succeeds)? */
int cs_file_exists(const char *path);

/* fsync the directory holding path, so that an entry created, renamed or
 * removed there is durable (best effort: nothing is reported). */
void cs_fsync_dir(const char *path);

/* fsync the file at path: CS_ERR_IO naming it when it cannot be opened or
 * synced. */
int cs_fsync_file(const char *path);

/* mkdir -p: create dir and every missing parent (mode 0777 & umask).
 * CS_ERR_IO naming the component that cannot be created, or that exists
 * and is not a directory. */
int cs_mkdir_p(const char *dir);

/* open(2) a path that must be a regular file, never blocking on a FIFO
 * (O_NONBLOCK is added for the open and cleared after it). Returns the
 * descriptor (st, if not NULL, filled by fstat); -1 when it cannot be
 * opened (*why: strerror, errno kept) or -2 when it is not a regular file
 * (*why: "Is a directory", "not a regular file (a FIFO)", ...). */
int cs_open_regular(const char *path, int flags, int mode, struct stat *st, const char **why);
/* The same for name relative to dirfd (AT_FDCWD: the working directory);
 * with O_NOFOLLOW in flags a symbolic link at name is -2 ("a symbolic
 * link"). */
int cs_open_regular_at(int dirfd, const char *name, int flags, int mode, struct stat *st,
                       const char **why);

/* All n bytes at p written to fd, or read from it: short counts resumed,
 * EINTR retried. 0, or -1 on an error (errno) or the end of the file. */
int cs_write_all(int fd, const void *p, size_t n);
int cs_read_all(int fd, void *p, size_t n);

/* Where curvsweep writes (docs/SECURITY.md, "Shared directories"): files
 * are created and opened relative to a descriptor of their directory,
 * never through a symbolic link at their name, and renamed into place with
 * renameat. */

/* Open the directory that holds path (O_DIRECTORY; "." when path has no
 * '/'): *dirfd, and *base pointing at the last component inside path.
 * Returns 0, or -1 with errno (*why: strerror). */
int cs_dir_open(const char *path, int *dirfd, const char **base, const char **why);

/* Create dirfd/name afresh for writing (O_CREAT | O_EXCL | O_NOFOLLOW): never
 * through a symbolic link, never into a file someone else put there. A
 * regular file of this user already at name (a temporary a killed run left)
 * is removed first. Returns the descriptor; -1 on a system error or when
 * something else is at name (a directory, a FIFO: errno EEXIST), *why
 * strerror; -2 when it is refused: a symbolic link, or a file of another
 * user (*why says which). */
int cs_create_fresh_at(int dirfd, const char *name, int mode, const char **why);

/* Open dirfd/name for reading and writing, creating it (O_EXCL) when
 * absent: it must be a regular file owned by this user (geteuid) and is
 * never reached through a symbolic link (O_NOFOLLOW; a FIFO never blocks
 * the open). *created: this call made it; st (if not NULL) filled by
 * fstat. Returns the descriptor, -1 when it cannot be opened (*why:
 * strerror, errno kept) or -2 when what is there is refused (*why: "a
 * symbolic link", "owned by another user", "not a regular file (a FIFO)",
 * ...). */
int cs_open_owned_at(int dirfd, const char *name, int mode, struct stat *st, int *created,
                     const char **why);

#endif

/* path.h — file-system helpers shared by every module. */
#ifndef CURVSWEEP_PATH_H
#define CURVSWEEP_PATH_H

#include <sys/stat.h>

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

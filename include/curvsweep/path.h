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

#endif

/* path.h — file-system helpers shared by every module. */
#ifndef CURVSWEEP_PATH_H
#define CURVSWEEP_PATH_H

/* mkdir -p: create dir and every missing parent (mode 0777 & umask).
 * CS_ERR_IO naming the component that cannot be created, or that exists
 * and is not a directory. */
int cs_mkdir_p(const char *dir);

#endif

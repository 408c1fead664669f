/* path.c — mkdir -p. */
#include "curvsweep/path.h"

#include "curvsweep/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

/* output.c — the leaf helpers of the report's writers (output.h): warnings,
 * atomic files, the report directory. */
#include "output.h"

#include "curvsweep/path.h"
#include "curvsweep/error.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void analysis_warn(analysis_outcome *out, const char *fmt, ...) {
  if (!out || out->n_warnings >= ANALYSIS_MAX_WARNINGS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->warnings[out->n_warnings++], sizeof out->warnings[0], fmt, ap);
  va_end(ap);
}

static void analysis_file_close_dir(analysis_file *o) {
  if (o->dirfd >= 0) close(o->dirfd);
  o->dirfd = -1;
}

int analysis_file_open(analysis_file *o, const char *dir, const char *name) {
  o->f = NULL;
  o->dirfd = -1;
  int n1 = snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
  int n2 = snprintf(o->tmp, sizeof o->tmp, "%s/.%s.tmp", dir, name);
  if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof o->path || (size_t)n2 >= sizeof o->tmp)
    return cs_error(CS_ERR_INPUT, "report path too long: %s/%s", dir, name);
  o->name = o->path + strlen(dir) + 1;
  o->tmp_name = o->tmp + strlen(dir) + 1;
  o->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (o->dirfd < 0) return cs_error(CS_ERR_IO, "%s: cannot write: %s", o->tmp, strerror(errno));
  const char *why;
  int fd = cs_create_fresh_at(o->dirfd, o->tmp_name, 0644, &why), rc = CS_OK;
  if (fd < 0)
    rc = cs_error(fd == -2 ? CS_ERR_INPUT : CS_ERR_IO, "%s: cannot write: %s%s", o->tmp, why,
                  fd == -2 ? " (curvsweep never writes through one: docs/SECURITY.md); "
                             "remove it"
                           : "");
  if (!rc && !(o->f = fdopen(fd, "w")))
    rc = cs_error(CS_ERR_IO, "%s: cannot write: %s", o->tmp, strerror(errno));
  // on failure: the temporary file (if made) and the directory go
  if (rc && fd >= 0) close(fd), unlinkat(o->dirfd, o->tmp_name, 0);
  if (rc) analysis_file_close_dir(o);
  return rc;
}

int analysis_file_commit(analysis_file *o) {
  int bad = ferror(o->f);
  if (fclose(o->f) != 0) bad = 1;
  o->f = NULL;
  int rc = CS_OK;
  if (bad) {
    unlinkat(o->dirfd, o->tmp_name, 0);
    rc = cs_error(CS_ERR_IO, "%s: write failed (disk full?)", o->path);
  } else if (renameat(o->dirfd, o->tmp_name, o->dirfd, o->name) != 0) {
    int e = errno;
    unlinkat(o->dirfd, o->tmp_name, 0);
    rc = cs_error(CS_ERR_IO, "%s: cannot rename into place: %s", o->path, strerror(e));
  }
  analysis_file_close_dir(o);
  return rc;
}

void analysis_file_abort(analysis_file *o) {
  if (o->f) fclose(o->f);
  o->f = NULL;
  if (o->dirfd >= 0) unlinkat(o->dirfd, o->tmp_name, 0);
  analysis_file_close_dir(o);
}

const char *analysis_md_text(const char *s, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char piece[8];
    if (*p < 0x20 || *p == 0x7f) snprintf(piece, sizeof piece, "\\x%02X", *p);
    else if (*p == '<') snprintf(piece, sizeof piece, "&lt;");
    else if (*p == '>') snprintf(piece, sizeof piece, "&gt;");
    else if (*p == '&') snprintf(piece, sizeof piece, "&amp;");
    else if (*p == '"') snprintf(piece, sizeof piece, "&quot;");
    else if (strchr("\\`*_[]()#!|~", *p)) snprintf(piece, sizeof piece, "\\%c", *p);
    else snprintf(piece, sizeof piece, "%c", *p);
    size_t k = strlen(piece);
    if (used + k + 1 > len) break;
    memcpy(buf + used, piece, k + 1);
    used += k;
  }
  return buf;
}

const char *analysis_f4(char *buf, double v) {
  if (isnan(v))
    snprintf(buf, 32, "n/a");
  else
    snprintf(buf, 32, "%.4g", v);
  return buf;
}

const char *analysis_ci_text(char *buf, size_t len, const analysis_ci *c) {
  char a[32], b[32], m[32];
  if (c->n == 0)
    snprintf(buf, len, "–");
  else if (isnan(c->lo))
    snprintf(buf, len, "%s", analysis_f4(m, c->mean));
  else
    snprintf(buf, len, "%s [%s, %s]", analysis_f4(m, c->mean), analysis_f4(a, c->lo), analysis_f4(b, c->hi));
  return buf;
}

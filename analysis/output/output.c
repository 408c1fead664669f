/* output.c — the leaf helpers of the report's writers (output.h): warnings,
 * the report directory, atomic files in it (docs/SECURITY.md, "The report
 * directory"). */
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

/* ---- the report directory (docs/SECURITY.md, "The report directory") ---- */

/* path without its trailing slashes ("/" stays), into buf: "DIR/" names
 * the link at DIR as "DIR" does, not the directory it points to. */
static int analysis_dir_name(const char *path, char *buf, size_t len) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  if (n >= len) return cs_error(CS_ERR_INPUT, "report directory name too long: %s", path);
  memcpy(buf, path, n);
  buf[n] = '\0';
  return CS_OK;
}

int analysis_report_dir_check(const char *path) {
  struct stat st;
  char name[4096];
  if (!path || !*path) return cs_error(CS_ERR_INPUT, "no report directory given");
  CS_CHECK(analysis_dir_name(path, name, sizeof name));
  if (lstat(name, &st) != 0) return CS_OK; /* missing: created (or refused) when written */
  if (S_ISLNK(st.st_mode))
    return cs_error(CS_ERR_INPUT, "the report directory %s is a symbolic link: curvsweep never "
                    "writes a report through one (docs/SECURITY.md); remove it, or name the "
                    "directory it points to", name);
  if (!S_ISDIR(st.st_mode))
    return cs_error(CS_ERR_INPUT, "the report directory %s exists and is not a directory: use -o "
                    "with a new path or an existing directory", name);
  return CS_OK;
}

int analysis_outdir_open(analysis_outdir *d, const char *path) {
  *d = (analysis_outdir){.path = path, .fd = -1, .render_fd = -1};
  char name[4096];
  CS_CHECK(analysis_report_dir_check(path));
  CS_CHECK(analysis_dir_name(path, name, sizeof name));
  CS_CHECK(cs_mkdir_p(name));
  // the last component is not followed: a link planted since the check
  // (or between mkdir and here) is refused, not written through
  d->fd = open(name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d->fd >= 0) return CS_OK;
  int e = errno;
  if (e == ELOOP || e == ENOTDIR) {
    int rc = analysis_report_dir_check(path); /* names what is there now */
    return rc ? rc : cs_error(CS_ERR_INPUT, "the report directory %s: %s", name, strerror(e));
  }
  return cs_error(CS_ERR_IO, "cannot open the report directory %s: %s", name, strerror(e));
}

void analysis_outdir_close(analysis_outdir *d) {
  if (d->fd >= 0) close(d->fd);
  d->fd = -1;
}

/* ---- files in it ---- */

int analysis_file_open(analysis_file *o, const analysis_outdir *dir, const char *name) {
  o->f = NULL;
  o->dirfd = dir->fd;
  int n1 = snprintf(o->path, sizeof o->path, "%s/%s", dir->path, name);
  int n2 = snprintf(o->tmp, sizeof o->tmp, "%s/.%s.tmp", dir->path, name);
  if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof o->path || (size_t)n2 >= sizeof o->tmp)
    return cs_error(CS_ERR_INPUT, "report path too long: %s/%s", dir->path, name);
  o->name = o->path + strlen(dir->path) + 1;
  o->tmp_name = o->tmp + strlen(dir->path) + 1;
  const char *why;
  int fd = cs_create_fresh_at(o->dirfd, o->tmp_name, 0644, &why), rc = CS_OK;
  if (fd < 0)
    rc = cs_error(fd == -2 ? CS_ERR_INPUT : CS_ERR_IO, "%s: cannot write: %s%s", o->tmp, why,
                  fd == -2 ? " (curvsweep never writes through one: docs/SECURITY.md); "
                             "remove it"
                           : "");
  if (!rc && !(o->f = fdopen(fd, "w")))
    rc = cs_error(CS_ERR_IO, "%s: cannot write: %s", o->tmp, strerror(errno));
  // on failure: the temporary file (if made) goes
  if (rc && fd >= 0) close(fd), unlinkat(o->dirfd, o->tmp_name, 0);
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
  return rc;
}

void analysis_file_abort(analysis_file *o) {
  if (o->f) fclose(o->f);
  o->f = NULL;
  unlinkat(o->dirfd, o->tmp_name, 0);
}

int analysis_file_write(const analysis_outdir *dir, const char *name, const char *buf, size_t n) {
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, name));
  if (n) fwrite(buf, 1, n, o.f);
  return analysis_file_commit(&o);
}

FILE *analysis_file_read(const analysis_outdir *dir, const char *name, int *rc) {
  const char *why = NULL;
  int fd = cs_open_regular_at(dir->fd, name, O_RDONLY | O_NOFOLLOW, 0, NULL, &why);
  FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
  if (f) return f;
  if (fd >= 0) why = strerror(errno), close(fd);
  /* what is there is refused (-2: CS_ERR_INPUT), not a system error */
  *rc = cs_error(fd == -2 ? CS_ERR_INPUT : CS_ERR_IO, "%s/%s: cannot read it: %s", dir->path, name, why);
  return NULL;
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

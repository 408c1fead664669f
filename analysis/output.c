/* output.c — the leaf helpers of the report's writers (output.h): warnings,
 * atomic files, the report directory. */
#include "output.h"

#include "curvsweep/path.h"
#include "curvsweep/error.h"

#include <errno.h>
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

int analysis_file_open(analysis_file *o, const char *dir, const char *name) {
  int n1 = snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
  int n2 = snprintf(o->tmp, sizeof o->tmp, "%s/.%s.tmp", dir, name);
  if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof o->tmp)
    return cs_error(CS_ERR_INPUT, "report path too long: %s/%s", dir, name);
  o->f = fopen(o->tmp, "w");
  if (!o->f) return cs_error(CS_ERR_IO, "%s: cannot write: %s", o->tmp, strerror(errno));
  return CS_OK;
}

int analysis_file_commit(analysis_file *o) {
  int bad = ferror(o->f);
  if (fclose(o->f) != 0) bad = 1;
  o->f = NULL;
  if (bad) {
    unlink(o->tmp);
    return cs_error(CS_ERR_IO, "%s: write failed (disk full?)", o->path);
  }
  if (rename(o->tmp, o->path) != 0) {
    int e = errno;
    unlink(o->tmp);
    return cs_error(CS_ERR_IO, "%s: cannot rename into place: %s", o->path, strerror(e));
  }
  return CS_OK;
}

void analysis_file_abort(analysis_file *o) {
  if (o->f) fclose(o->f);
  o->f = NULL;
  unlink(o->tmp);
}


const char *analysis_f4(char *buf, double v) {
  if (isnan(v))
    snprintf(buf, 32, "n/a");
  else
    snprintf(buf, 32, "%.4g", v);
  return buf;
}

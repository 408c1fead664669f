/* output.h — the leaf helpers every writer of the report uses (output.c,
 * internal to analysis/): files written atomically, the report directory,
 * warnings for the caller to print. Reads only public headers. */
#ifndef CURVSWEEP_ANALYSIS_OUTPUT_H
#define CURVSWEEP_ANALYSIS_OUTPUT_H

#include "curvsweep/analysis.h"

#include <stdio.h>

/* Append a warning to out (NULL: dropped; at most ANALYSIS_MAX_WARNINGS). */
void analysis_warn(analysis_outcome *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The report directory (docs/SECURITY.md, "The report directory"): opened
 * once, its last component never a symbolic link (O_DIRECTORY |
 * O_NOFOLLOW), and every file of the report created relative to fd, so a
 * co-tenant who swaps the directory, or a name in it, for a link never
 * redirects a write. render_fd is the private directory gnuplot renders in
 * while the figures are drawn (plots_render.c), -1 otherwise. */
typedef struct {
  const char *path;     /* as given: for messages only, never opened again */
  int fd;
  int render_fd;
  char render_name[32]; /* render_fd's name inside fd */
} analysis_outdir;

/* mkdir -p path, then open it as d (analysis_report_dir_check's refusals,
 * and a link planted at path after the check: CS_ERR_INPUT naming it). */
int analysis_outdir_open(analysis_outdir *d, const char *path);
void analysis_outdir_close(analysis_outdir *d);

/* A file written atomically: written as dir/.name.tmp, renamed on commit, so
 * a failure never leaves a half-written file under the final name. The
 * temporary is created relative to dir->fd with O_EXCL | O_NOFOLLOW and
 * renamed with renameat (path.h, docs/SECURITY.md): a symbolic link planted
 * at dir/.name.tmp is refused (CS_ERR_INPUT naming it), never written
 * through. */
typedef struct {
  FILE *f;
  int dirfd;             /* dir->fd (borrowed) */
  char tmp[4096], path[4096];
  const char *tmp_name;  /* ".name.tmp" inside tmp */
  const char *name;      /* "name" inside path */
} analysis_file;

int analysis_file_open(analysis_file *o, const analysis_outdir *dir, const char *name);
/* The n bytes of buf as dir/name, atomically (analysis_file). */
int analysis_file_write(const analysis_outdir *dir, const char *name, const char *buf, size_t n);
/* Open dir/name for reading: a regular file reached without following a
 * link and never blocking on a FIFO; NULL with CS_ERR_IO (CS_ERR_INPUT for
 * a link or another kind of file) naming it in *rc. */
FILE *analysis_file_read(const analysis_outdir *dir, const char *name, int *rc);
/* fclose, check for write errors, rename into place. */
int analysis_file_commit(analysis_file *o);
/* fclose and remove the temporary (after an error). */
void analysis_file_abort(analysis_file *o);

/* %.4g into buf (32 bytes), "n/a" for NaN: the number format of the
 * verdicts in index.md; F4(v) with a buffer of its own. */
const char *analysis_f4(char *buf, double v);

#define F4(v) analysis_f4((char[32]){0}, (v))
/* "0.9 [0.85, 0.95]" of an interval (F4 numbers), "0.9" with one value,
 * "–" with none: into buf (len bytes); returns buf. */
const char *analysis_ci_text(char *buf, size_t len, const analysis_ci *c);

/* Untrusted text (a spec name) as Markdown that renders it literally:
 * the Markdown punctuation that could start a link, image, code span,
 * emphasis, table cell or heading end (\ ` * _ [ ] ( ) # ! | ~)
 * backslash-escaped, <, >, & and " as HTML entities,
 * control characters as \xHH (docs/SECURITY.md). Into buf (len bytes,
 * cut at a whole character); returns buf. */
const char *analysis_md_text(const char *s, char *buf, size_t len);


#endif

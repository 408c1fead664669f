/* cmd_analyze.c — `curvsweep analyze ARCHIVE... [-o DIR]`: the depth-amplification report. */
#include "cli.h"

#include "curvsweep/analysis.h"
#include "curvsweep/archive.h"
#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *ANALYZE_HELP =
    "usage: curvsweep analyze ARCHIVE... [-o DIR] [--target-acc X] [--alpha A] [--margin M]\n\n"
    "Turn a sweep archive into the depth-amplification report (docs/SPEC.md): CSV tables,\n"
    "gnuplot figures (PNG, with their .gp scripts and .dat data) and DIR/index.md with a\n"
    "verdict on each claim, computed from the tables. Several archives are merged on the\n"
    "fly when they hold one spec (e.g. the shards of a sweep). A running or interrupted\n"
    "sweep can be analysed: the report says which fraction of the grid is done.\n\n"
    "  -o DIR   report directory (default: ARCHIVE without .h5, plus '-report', next to\n"
    "           the first archive); created if missing, earlier report files replaced;\n"
    "           a symbolic link there is refused (docs/SECURITY.md)\n"
    "  --target-acc X  learning curves (a train_points axis): the test accuracy in (0, 1]\n"
    "           whose sample count is compared (default: 95% of the best mean accuracy\n"
    "           any arch reaches on the curve)\n"
    "  --alpha A  family-wise error rate of every verdict, in (0, 0.5) (default 0.05;\n"
    "           Holm over each verdict's checks)\n"
    "  --margin M  equivalence margin of claim 3's linear tasks, test accuracy in\n"
    "           (0, 1) (default 0.01, one percentage point)\n\n";

/* After the list of tables (analysis_report_table). */
static const char *ANALYZE_HELP_END =
    "Also: *.gp, *.dat, *.png (the figures), index.md (a summary table of every verdict,\n"
    "a table of contents, then the sections) and COLUMNS.md (what every column of the\n"
    "tables means).\n"
    "Environment: CS_GNUPLOT names the gnuplot binary (default: gnuplot on PATH);\n"
    "without gnuplot the tables, scripts and index.md are written and plots skipped.\n"
    "Exit status: 0 report written; 1 gnuplot failed on a plot (the report is written,\n"
    "gnuplot's message printed) or the report directory cannot be written (the default\n"
    "one lies next to the first archive: use -o); 2 bad arguments or archives.\n";

/* The display columns of the n bytes of UTF-8 text s: one per code point
 * (the first byte of each), none for a combining mark (the accents of K̃
 * and K̂); the help has no double-width characters. */
static int analyze_help_columns(const char *s, size_t n) {
  int cols = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char b = (unsigned char)s[i];
    if ((b & 0xC0) == 0x80) continue; /* a continuation byte */
    /* U+0300..U+036F, the combining diacritical marks: 0xCC 0x80 .. 0xCD 0xAF */
    int combining = i + 1 < n && (b == 0xCC || (b == 0xCD && (unsigned char)s[i + 1] <= 0xAF));
    cols += !combining;
  }
  return cols;
}

/* One table of the help: "  file  (when) about", the text wrapped at
 * column 88 (display columns, not bytes) under its first column. */
static void analyze_help_table(const analysis_table_info *t) {
  enum { INDENT = 25, WIDTH = 88 };
  char text[512];
  snprintf(text, sizeof text, "%s%s%s%s", t->when[0] ? "(" : "", t->when, t->when[0] ? ") " : "", t->about);
  int col = 2 + analyze_help_columns(t->file, strlen(t->file));
  printf("  %s", t->file);
  do col += putchar(' ') != EOF;
  while (col < INDENT);
  for (const char *w = text; *w;) {
    size_t len = strcspn(w, " ");
    int width = analyze_help_columns(w, len);
    if (col > INDENT && col + 1 + width > WIDTH) col = printf("\n%*s", INDENT, "") - 1;
    else if (col > INDENT) col += putchar(' ') != EOF;
    fwrite(w, 1, len, stdout);
    col += width;
    w += len;
    while (*w == ' ') w++;
  }
  putchar('\n');
}

/* 1 when the report directory dir can be written: it is a writable
 * directory, or it is missing and its parent is one; else *why. */
static int analyze_dir_writable(const char *dir, const char **why) {
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", dir);
  struct stat st;
  const char *probe = dir;
  if (stat(dir, &st) != 0) {
    char *slash = strrchr(parent, '/');
    if (!slash) snprintf(parent, sizeof parent, ".");
    else if (slash == parent) parent[1] = '\0';
    else *slash = '\0';
    probe = parent;
  }
  if (access(probe, W_OK | X_OK) == 0) return 1;
  *why = strerror(errno);
  return 0;
}

/* The number after option argv[i] within (lo, hi) (hi inclusive when
 * hi_incl), into *v; 0 on success, else the usage error's exit code. */
static int analyze_number(int argc, char **argv, int i, double lo, double hi, int hi_incl,
                          const char *what, double *v) {
  char *end = NULL;
  if (i + 1 < argc) *v = strtod(argv[i + 1], &end);
  int ok = i + 1 < argc && end && end != argv[i + 1] && !*end && *v > lo && (hi_incl ? *v <= hi : *v < hi);
  if (ok) return 0;
  return cli_usage_error("analyze", "%s needs %s%s%s%s", argv[i], what, i + 1 < argc ? ", not '" : "",
                         i + 1 < argc ? argv[i + 1] : "", i + 1 < argc ? "'" : "");
}

/* The default report directory buf, next to the first archive, refused up
 * front when it cannot be written; an exit status. */
static int analyze_default_writable(const char *buf) {
  // the default lies next to the archive, which may be read-only (a
  // shared or archived results directory): say so before any work
  const char *why = NULL;
  if (!analyze_dir_writable(buf, &why)) {
    cli_print(stderr, "curvsweep analyze: cannot write the report next to the archive, in %s: "
              "%s; give a writable directory with -o DIR\n", buf, why);
    return EXIT_RUNTIME;
  }
  return EXIT_OK;
}

/* The report of the n archives into dir, and its summary lines; an exit status. */
static int analyze_report(const char **paths, int n, const char *dir, const analysis_options *opt) {
  // one archive that is a shard, or a partial merge, holds part of its
  // sweep: the report says so (docs/ARCHIVE.md, "Merge")
  cs_archive_summary sum;
  if (n == 1 && archive_summary(paths[0], &sum) == CS_OK && sum.grid_cells > sum.cells)
    cli_print(stderr, "curvsweep analyze: warning: %s is %s%s: it holds %lld of the sweep's %lld "
              "cells, and the report only those\n", paths[0],
              sum.partial ? "a partial merge" : sum.shard[0] ? "shard " : "a part of its sweep",
              sum.partial ? "" : sum.shard, (long long)sum.cells, (long long)sum.grid_cells);
  cs_error_clear();
  analysis_outcome out;
  int rc = analysis_run(paths, n, dir, opt, &out);
  if (rc) return cli_fail(rc);
  for (int i = 0; i < out.n_warnings; i++)
    cli_print(stderr, "curvsweep analyze: warning: %s\n", out.warnings[i]);
  printf("analysed %lld of %lld cells done (%lld failed, %lld diverged, %lld pending); "
         "%d of %d plots rendered\n",
         (long long)out.done, (long long)out.cells_total, (long long)out.failed,
         (long long)out.diverged, (long long)out.pending, out.plots_written, out.plots_scripted);
  cli_print(stdout, "report: %s/index.md\n", dir);
  // a plot gnuplot failed on is a failed run, with gnuplot's own message
  // (the report is written; `gnuplot NAME.gp` in DIR re-renders a plot)
  if (out.plots_failed) {
    cli_print(stderr, "curvsweep analyze: %d plot%s failed; %s\n", out.plots_failed,
              out.plots_failed > 1 ? "s" : "", out.plot_error);
    return EXIT_RUNTIME;
  }
  return EXIT_OK;
}

int cmd_analyze(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(ANALYZE_HELP, stdout);
    // the tables, from the report's own section table (analysis/sections/sections.c)
    puts("Tables (CSV), each with when it is written if not always:");
    const analysis_table_info *t;
    for (int i = 0; (t = analysis_report_table(i)); i++) analyze_help_table(t);
    fputs(ANALYZE_HELP_END, stdout);
    return EXIT_OK;
  }
  const char *dir = NULL;
  double target_acc = NAN, alpha = ANALYSIS_ALPHA, margin = ANALYSIS_MARGIN;
  const char **paths = calloc(argc > 1 ? (size_t)argc : 1, sizeof *paths);
  if (!paths) {
    fprintf(stderr, "curvsweep analyze: out of memory\n");
    return EXIT_RUNTIME;
  }
  int n = 0, status = EXIT_OK;
  for (int i = 1; i < argc && status == EXIT_OK; i++) {
    if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
      if (i + 1 >= argc)
        status = cli_usage_error("analyze", "-o needs a directory");
      else
        dir = argv[++i];
    } else if (strcmp(argv[i], "--target-acc") == 0 || strcmp(argv[i], "--alpha") == 0 ||
               strcmp(argv[i], "--margin") == 0) {
      int ta = argv[i][2] == 't', al = argv[i][2] == 'a';
      double *v = ta ? &target_acc : al ? &alpha : &margin;
      status = analyze_number(argc, argv, i, 0.0, ta ? 1.0 : al ? 0.5 : 1.0, ta,
                              ta ? "a test accuracy in (0, 1]"
                              : al ? "a family-wise error rate in (0, 0.5)"
                                   : "an accuracy margin in (0, 1)",
                              v);
      i++;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      status = cli_usage_error("analyze", "unknown option '%s'", argv[i]);
    } else {
      paths[n++] = argv[i];
    }
  }
  if (status == EXIT_OK && n == 0) status = cli_usage_error("analyze", "missing ARCHIVE");
  char default_dir[4096];
  int is_default = status == EXIT_OK && !dir, rc = CS_OK;
  if (is_default && (rc = analysis_default_dir(paths[0], default_dir, sizeof default_dir)))
    status = cli_fail(rc);
  if (is_default) dir = default_dir;
  // one check of the report directory, -o DIR and the default alike: a
  // file or a symbolic link there is bad input (exit 2), refused before
  // any archive is read (docs/SECURITY.md, "The report directory")
  if (status == EXIT_OK && (rc = analysis_report_dir_check(dir))) status = cli_fail(rc);
  if (status == EXIT_OK && is_default) status = analyze_default_writable(dir);
  analysis_options opt = analysis_options_default();
  const char *gnuplot = getenv("CS_GNUPLOT");
  if (gnuplot && *gnuplot) opt.gnuplot = gnuplot;
  opt.target_acc = target_acc;
  opt.alpha = alpha;
  opt.margin = margin;
  if (status == EXIT_OK) status = analyze_report(paths, n, dir, &opt);
  free(paths);
  return status;
}

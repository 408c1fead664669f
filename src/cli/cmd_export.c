/* cmd_export.c — `curvsweep export ARCHIVE --csv DIR`: the archive's tables
 * as CSV files (analysis_export_csv; analysis/README.md, "Export"). */
#include "cli.h"

#include "curvsweep/analysis.h"
#include "curvsweep/archive.h"
#include "curvsweep/error.h"

#include <stdio.h>
#include <string.h>

static const char *EXPORT_HELP =
    "usage: curvsweep export ARCHIVE --csv DIR\n\n"
    "Write the archive's tables as CSV files into DIR (created if missing; files of an\n"
    "earlier export replaced), each row with the cell's axis values decoded:\n"
    "  cells.csv      one row per cell: axes, status, rank, attempts, wall_s,\n"
    "                 train_loss, train_acc, test_acc, n_params, message\n"
    "  curvature.csv  one row per done cell and prefix: axes, prefix, n_points and\n"
    "                 the per-prefix statistics (docs/ARCHIVE.md, /curvature)\n"
    "  curves.csv     one row per finished cell and evaluation: axes, epoch,\n"
    "                 train_loss, train_acc, test_acc\n"
    "  estimation.csv, gates.csv, cellstats.csv\n"
    "                 the teacher-student estimator, the gate scores per gated block\n"
    "                 and the calibration and stability per cell (format 6; the\n"
    "                 archive's columns, docs/ARCHIVE.md); header only when absent\n"
    "Numbers read back exactly (%.17g; nan, inf). From Python, python/curvsweep_archive\n"
    "returns the same tables as pandas DataFrames.\n";

int cmd_export(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(EXPORT_HELP, stdout);
    return EXIT_OK;
  }
  const char *archive = NULL, *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--csv")) {
      if (i + 1 >= argc) return cli_usage_error("export", "--csv needs a directory");
      dir = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return cli_usage_error("export", "unknown option '%s'", argv[i]);
    } else if (!archive) {
      archive = argv[i];
    } else {
      return cli_usage_error("export", "unexpected argument '%s' (one archive at a time)", argv[i]);
    }
  }
  if (!archive) return cli_usage_error("export", "missing ARCHIVE");
  if (!dir) return cli_usage_error("export", "missing --csv DIR (the only export format)");
  int64_t n = 0;
  int rc = analysis_export_csv(archive, dir, &n);
  if (rc) return cli_fail(rc);
  cli_print(stdout, "exported %lld cells of %s: %s/cells.csv, %s/curvature.csv, %s/curves.csv", (long long)n,
            archive, dir, dir, dir);
  for (int t = 0; archive_csv_table(t); t++) cli_print(stdout, ", %s/%s.csv", dir, archive_csv_table(t));
  cli_print(stdout, "\n");
  return EXIT_OK;
}

/* cmd_archive.c — `curvsweep info ARCHIVE`, `curvsweep merge OUT IN...` and
 * `curvsweep merge --salvage OUT DAMAGED`. */
#include "cli.h"

#include "curvsweep/archive.h"
#include "curvsweep/error.h"

#include <stdio.h>
#include <string.h>

static const char *INFO_HELP =
    "usage: curvsweep info ARCHIVE\n"
    "       curvsweep info --check ARCHIVE\n\n"
    "Print the spec name, grid size, how many cells are done, pending, failed and\n"
    "diverged, the rows of each per-cell table (/curvature, /estimation, /gates, ...),\n"
    "the total training time and the ranks used. Works on the archive of\n"
    "a running sweep (it is written between results). A journal beside the archive\n"
    "(ARCHIVE.journal: a run is writing it, or one was interrupted) adds two lines:\n"
    "what it holds that the archive does not yet, whether a process of this machine\n"
    "holds its lock, and how to resume (docs/ARCHIVE.md, \"A journal beside the\n"
    "archive\"). The journal's lock is never taken.\n\n"
    "  --check  read every object of the archive (/spec, every /cells, /curvature,\n"
    "           /curves and /runs row, every /points and /params dataset) and print\n"
    "           one line per damaged object naming it; exit 0 when all is intact,\n"
    "           2 when something is damaged (curvsweep merge --salvage then copies\n"
    "           the intact cells into a new archive).\n";

static const char *MERGE_HELP =
    "usage: curvsweep merge OUT.h5 IN.h5... [--overwrite] [--partial]\n"
    "       curvsweep merge --salvage OUT.h5 DAMAGED.h5 [--overwrite]\n\n"
    "Combine the archives of shards of one sweep (curvsweep run --shard I/N), or of\n"
    "specs that differ only in [grid] values (OUT.h5 then holds the union of their\n"
    "grids), into OUT.h5, and say which shards it got. Refuses specs that differ\n"
    "elsewhere, cells done in two inputs with different values, and an incomplete\n"
    "set (naming the missing shards). OUT.h5 must not exist unless --overwrite.\n\n"
    "  --partial  accept an incomplete set; OUT.h5 records that it is partial\n"
    "             (root attribute partial = 1; info and analyze say so).\n"
    "  --salvage  copy every intact cell of one damaged archive (see info --check)\n"
    "             into the new archive OUT.h5; cells whose result cannot be read\n"
    "             whole are listed as pending, one line each, so that\n"
    "             curvsweep run SPEC -o OUT.h5 recomputes them. The damaged\n"
    "             archive's /spec must be readable.\n";

static void salvage_line(int64_t cell_id, const char *reason, void *ctx) {
  (void)ctx;
  cli_print(stdout, "pending   cell %lld: %s\n", (long long)cell_id, reason);
}

/* `merge --salvage` (docs/ARCHIVE.md, "Salvage"). */
static int merge_salvage(const char *out, const char *damaged, int overwrite) {
  cs_archive_salvage_report r;
  int rc = archive_salvage(out, damaged, overwrite, salvage_line, NULL, &r);
  if (rc) return cli_fail(rc);
  cli_print(stderr, "curvsweep: salvaged %s into %s: %lld cells, %lld finished kept, %lld damaged "
          "now pending, %lld pending before; %lld /runs rows kept, %lld unreadable\n",
          damaged, out, (long long)r.cells, (long long)r.kept, (long long)r.damaged,
          (long long)r.pending, (long long)r.runs_kept, (long long)r.runs_lost);
  if (r.damaged + r.pending > 0)
    cli_print(stderr, "curvsweep: resume to compute the pending cells: curvsweep run SPEC -o %s\n",
              out);
  return EXIT_OK;
}

static void info_check_line(const char *object, const char *reason, void *ctx) {
  (void)ctx;
  cli_print(stdout, "damaged   %s: %s\n", object, reason);
}

/* `info --check`: one line per damaged object (docs/ARCHIVE.md, "Checking an archive"). */
static int info_check(const char *path) {
  int64_t damaged = 0;
  int rc = archive_check(path, info_check_line, NULL, &damaged);
  if (rc) return cli_fail(rc);
  if (damaged) {
    cli_print(stderr, "curvsweep: %s: %lld damaged object(s)\n", path, (long long)damaged);
    return EXIT_USAGE;
  }
  cli_print(stdout, "intact    %s: every object read\n", path);
  return EXIT_OK;
}

/* What the journal j holds (line 1 of info_journal); 0 when a run would
 * refuse it (the line says why, and what to do). */
static int info_journal_holds(FILE *f, const char *lead, const cs_archive_journal_state *j) {
  if (j->problem[0]) {
    cli_print(f, "%s%s: %lld bytes, %s\n", lead, j->path, (long long)j->bytes, j->problem);
    return 0;
  }
  if (!j->header) {
    cli_print(f, "%s%s: %lld bytes, no record yet\n", lead, j->path, (long long)j->bytes);
    return 1;
  }
  char applied[96] = "";
  if (j->unapplied > 0)
    snprintf(applied, sizeof applied, ", %lld cell(s) not in the archive yet",
             (long long)j->unapplied);
  else if (j->unapplied == 0)
    snprintf(applied, sizeof applied, ", all in the archive");
  // the dirty flag of a run writing now is no news: said when none is seen
  cli_print(f, "%s%s: %lld bytes, %lld result(s) and %lld /runs record(s)%s%s%s\n", lead, j->path,
            (long long)j->bytes, (long long)j->results, (long long)j->runs, applied,
            j->dirty && j->lock != 1 ? "; dirty (a write on the archive was under way)" : "",
            j->other_spec ? "; written by another spec than the archive's (a run refuses it: "
                            "finish that sweep, or move the journal away)" : "");
  if (j->foreign > 0)
    cli_print(f, "%s%lld result(s) of cells the archive does not list (a run refuses it: is it "
              "from another shard's archive?)\n", lead, (long long)j->foreign);
  return !j->other_spec && j->foreign == 0;
}

/* The journal beside the archive, if one is there (docs/ARCHIVE.md, "A
 * journal beside the archive"): what it holds, then whether a process of
 * this machine holds its lock and what to do; each line led by lead, on f.
 * Read without its lock. */
static void info_journal(FILE *f, const char *lead, const char *path) {
  cs_archive_journal_state j;
  if (archive_journal_state(path, &j) != CS_OK) {  // out of memory: say so, info goes on
    cli_print(f, "%scannot look at the journal beside %s: %s\n", lead, path, cs_error_message());
    cs_error_clear();
    return;
  }
  if (!j.present) return;
  int usable = info_journal_holds(f, lead, &j);
  if (j.problem[0]) return;
  if (j.lock == 1) {
    char pid[32] = "";
    if (j.lock_pid > 0) snprintf(pid, sizeof pid, " (pid %ld)", j.lock_pid);
    cli_print(f, "%sits lock is held by a process of this machine%s: a run is writing the "
              "archive\n", lead, pid);
    return;
  }
  char resume[160 + 4096] = "";
  if (usable)
    snprintf(resume, sizeof resume, "; resume with the same command (curvsweep run SPEC -o %s): "
             "it writes what the journal holds%s and runs only the cells not done", path,
             j.dirty ? ", repairing the archive from it," : "");
  cli_print(f, "%s%s: a run was interrupted, or one on another machine is writing the "
            "archive%s\n", lead,
            j.lock == 0 ? "no process of this machine holds its lock"
                        : "whether a process holds its lock cannot be seen (/proc/locks)",
            resume);
}

int cmd_info(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(INFO_HELP, stdout);
    return EXIT_OK;
  }
  if (argc == 3 && !strcmp(argv[1], "--check")) return info_check(argv[2]);
  if (argc != 2) return cli_usage_error("info", argc < 2 ? "missing ARCHIVE" : "unexpected argument '%s'", argv[argc - 1]);
  cs_archive_summary s;
  int rc = archive_summary(argv[1], &s);
  if (rc) {
    rc = cli_fail(rc);
    info_journal(stderr, "curvsweep: ", argv[1]);  // a journal may rebuild it
    return rc;
  }
  cli_print(stdout, "archive   %s\n", argv[1]);
  cli_print(stdout, "spec      %s (identity %.16s…)\n", s.name, s.identity);
  cli_print(stdout, "created   %s by curvsweep %s\n", s.created, s.software_version);
  cli_print(stdout,
            "cells     %lld: %lld done, %lld pending, %lld failed, %lld diverged (%.1f%% finished)\n",
         (long long)s.cells, (long long)s.done, (long long)s.pending, (long long)s.failed,
         (long long)s.diverged,
         s.cells ? 100.0 * (s.cells - s.pending) / s.cells : 0.0);
  if (s.grid_cells > s.cells)  // docs/ARCHIVE.md, "Merge": shards and partial archives
    cli_print(stdout, "%s %s: %lld of the sweep's %lld cells; %lld outside it (%s)\n",
              s.partial ? "partial  " : "shard    ", s.partial || !s.shard[0] ? "subset" : s.shard,
              (long long)s.cells, (long long)s.grid_cells, (long long)(s.grid_cells - s.cells),
              s.partial ? "merged with --partial: the missing shards were never merged"
                        : "curvsweep merge with the other shards completes the sweep");
  cli_print(stdout, "tables   ");
  for (int t = 0; t < s.n_tables; t++)
    cli_print(stdout, "%s /%s %lld rows", t ? "," : "", s.table[t].name, (long long)s.table[t].rows);
  cli_print(stdout, "\n");
  cli_print(stdout, "wall time %.1f s of training in finished cells\n", s.wall_s);
  cli_print(stdout, "runs      %d invocation(s), at most %d ranks%s%s\n", s.runs, s.max_ranks,
         s.last_run_end[0] ? ", last ended " : "", s.last_run_end);
  info_journal(stdout, "journal   ", argv[1]);
  return EXIT_OK;
}

int cmd_merge(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(MERGE_HELP, stdout);
    return EXIT_OK;
  }
  const char *out = NULL, *inputs[1024];
  int n = 0, overwrite = 0, salvage = 0, partial = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--overwrite"))
      overwrite = 1;
    else if (!strcmp(argv[i], "--salvage"))
      salvage = 1;
    else if (!strcmp(argv[i], "--partial"))
      partial = 1;
    else if (argv[i][0] == '-')
      return cli_usage_error("merge", "unknown option '%s'", argv[i]);
    else if (!out)
      out = argv[i];
    else if (n < 1024)
      inputs[n++] = argv[i];
    else
      return cli_usage_error("merge", "at most 1024 inputs");
  }
  if (salvage) {
    if (!out || n != 1) return cli_usage_error("merge", "--salvage needs OUT.h5 and one DAMAGED.h5");
    return merge_salvage(out, inputs[0], overwrite);
  }
  if (!out || n == 0) return cli_usage_error("merge", "need OUT.h5 and at least one IN.h5");
  cs_archive_merge_report m;
  int rc = archive_merge(out, inputs, n, overwrite, partial, &m);
  if (m.inputs > 0)  // what it got, refused or not (docs/ARCHIVE.md, "Merge")
    cli_print(stderr, "curvsweep: merge of sweep %s (identity %.16s…%s): got %s%s%s\n", m.sweep,
              m.identity, m.grids ? ", the union of their grids" : "", m.got,
              m.missing_shards[0] ? "; missing shards " : "", m.missing_shards);
  if (rc) return cli_fail(rc);
  cs_archive_summary s;
  if (archive_summary(out, &s) == CS_OK)
    cli_print(stderr,
              "curvsweep: merged %d archive(s) into %s: %lld cells, %lld done, %lld pending%s\n",
            n, out, (long long)s.cells, (long long)s.done, (long long)s.pending,
            s.partial ? "; partial (--partial): not every cell of the sweep is in it" : "");
  return EXIT_OK;
}

/* cli.h — shared pieces of the curvsweep command line (only src/cli prints
 * to the user and chooses exit codes). */
#ifndef CURVSWEEP_CLI_H
#define CURVSWEEP_CLI_H

#include "curvsweep/geom.h"
#include "curvsweep/spec.h"

#include <stdio.h>

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Print fmt's text with every control character (ESC, CR, BEL, NUL..US,
 * DEL, newlines inside it) written as \xHH, except one final newline:
 * names and messages from archives, specs and the command line never
 * reach a terminal raw (docs/SECURITY.md, "Printing"). */
void cli_print(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "curvsweep: <message>" for a library error and map it to an exit status. */
int cli_fail(int rc);
/* Print "curvsweep COMMAND: <message>" + a hint to run --help; returns EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 when argv contains -h or --help. */
int cli_wants_help(int argc, char **argv);
/* `--set section.key=value` at argv[*i] (docs/SPEC.md, "Overrides"): 1 and
 * the value appended to sets (room for argc entries), *i moved to it; 0 when
 * argv[*i] is another argument; -1 when the value is missing (the usage
 * error printed when print is set). */
int cli_take_set(const char *cmd, int argc, char **argv, int *i, const char **sets, int *n,
                 int print);
/* Parse a non-negative integer option value; -1 on error. */
long long cli_parse_count(const char *s);

/* Per-prefix curvature table to stdout. */
void cli_print_curvature_table(int depth, const geom_stats *curv);

/* run --dry-run (cmd_plan.c): the plan of spec on archive for shard si/sn
 * and the given number of ranks, to stdout; an exit status. */
int cli_dry_run(const cs_spec *spec, const char *archive, int si, int sn, long long ranks);

int cmd_train(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_check(int argc, char **argv);

#endif

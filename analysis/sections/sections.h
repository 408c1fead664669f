/* sections.h — the parts of the report after the core numbers as one
 * table (sections.c): claims 1–4, then the optional sections; each is one
 * file of analysis/ plus one row here. Each row's functions do nothing
 * when the sweep lacks what the section reads (train_points for the
 * learning curves, gate for the gate positions, gated and ungated cells
 * for claim 2), and a row leaves NULL what its section does not do (a
 * claim writes no table). The drivers call, in row order, skipping NULL:
 * compute after the core numbers (compute.c), checks before Holm and
 * verdicts after it (compute.c), write_tables (csv.c), plot for every
 * (task, regime) after the core figures (plots.c), write_md and
 * list_tables for index.md (index.c), free (load.c).
 * A section s declares its functions in a header of its own (with
 * ANALYSIS_SECTION_DECLARE(s) when it has them all), and sections.c, the
 * only file that includes the sections' headers, lists its row
 * (ANALYSIS_SECTION_ROW, or the fields it has by name): the drivers see
 * the table, never a section. Claims 1–4 find their checks by the key
 * they gave each (analysis_check_keyed, checks.h), not by rebuilding their
 * scopes; the sections after them still look theirs up by scope.
 * Internal to analysis/; docs/ARCHITECTURE.md, "Adding a report section". */
#ifndef CURVSWEEP_ANALYSIS_SECTIONS_H
#define CURVSWEEP_ANALYSIS_SECTIONS_H

#include "writers.h"

#include <stdio.h>

/* A figure writer: fills P (name, caption) and writes P->name.dat and .gp
 * into dir; *made = 0 when there is nothing to draw (then nothing is written). */
typedef int (*analysis_plot_writer)(const analysis_data *D, int t, int r, const analysis_outdir *dir,
                                    int variant, analysis_plot *P, int *made);

/* A claim of the report: its name (verdicts.csv's claim column), what it
 * says (index.md's summary table) and the start of the heading of the
 * section that tests it (the summary's link). */
typedef struct {
  const char *claim, *says, *heading;
} analysis_claim_info;

/* The meaning of the columns of `table` whose name matches `pattern`
 * (fnmatch) in COLUMNS.md (columns.c): first match wins. */
typedef struct {
  const char *table, *pattern, *meaning;
} analysis_column_rule;

/* The common endings of the meanings: an interval over seeds, the signs
 * and the paired effect of a difference. */
#define ANALYSIS_COLUMN_CI "; `_mean` over seeds, `_ci_low`, `_ci_high` its 95% Student-t interval"
#define ANALYSIS_COLUMN_SIGNS                                                                       \
  "; `_npos`, `_nneg` pairs with a positive / negative difference, `_sign_p` the two-sided sign " \
  "test, `_dz` (`_dz_low`, `_dz_high`) the paired standardised effect mean/sd with its interval"

/* What a section adds to the report besides its functions, each list ended
 * by a {NULL} entry: its claims, in the order of index.md and verdicts.csv;
 * its tables (analyze --help); the meanings of its tables' columns. Read
 * by index.c, csv.c and columns.c, so a section lists them only here. */
typedef struct {
  const analysis_claim_info *claims;
  const analysis_table_info *tables;
  const analysis_column_rule *columns;
} analysis_section_about;

/* The empty lists of a section without tables (a claim). */
#define ANALYSIS_NO_TABLES ((const analysis_table_info[]){{NULL, NULL, NULL}})
#define ANALYSIS_NO_COLUMNS ((const analysis_column_rule[]){{NULL, NULL, NULL}})

/* A row: its name (its state slot's), its about and its functions, each
 * NULL when the section does not do it. */
typedef struct {
  const char *name;
  const analysis_section_about *about;
  int (*compute)(analysis_data *D);
  int (*checks)(analysis_data *D);   /* add its checks (verdicts.csv) */
  int (*verdicts)(analysis_data *D); /* after Holm: its verdict rows */
  int (*write_tables)(const analysis_data *D, const analysis_outdir *dir);
  int (*write_md)(FILE *f, const analysis_data *D);
  void (*list_tables)(FILE *f, const analysis_data *D); /* its lines of index.md's table list */
  analysis_plot_writer plot;
  void (*free)(analysis_data *D);
} analysis_section;

/* The row of a section s with every function: analysis_<s>_compute …
 * _free (the fields above, in order) and its analysis_<s>_about; declared
 * by the section's header, listed in the table by sections.c. */
#define ANALYSIS_SECTION_DECLARE(s)                                                             \
  int analysis_##s##_compute(analysis_data *D);                                                \
  int analysis_##s##_checks(analysis_data *D);                                                 \
  int analysis_##s##_verdicts(analysis_data *D);                                               \
  int analysis_##s##_write_tables(const analysis_data *D, const analysis_outdir *dir);                    \
  int analysis_##s##_write_md(FILE *f, const analysis_data *D);                                \
  void analysis_##s##_list_tables(FILE *f, const analysis_data *D);                            \
  int analysis_##s##_plot(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant, \
                          analysis_plot *P, int *made);                                       \
  void analysis_##s##_free(analysis_data *D);                                                  \
  extern const analysis_section_about analysis_##s##_about
#define ANALYSIS_SECTION_ROW(name, s)                                                            \
  {                                                                                             \
    name, &analysis_##s##_about, analysis_##s##_compute, analysis_##s##_checks,                 \
        analysis_##s##_verdicts, analysis_##s##_write_tables, analysis_##s##_write_md,          \
        analysis_##s##_list_tables, analysis_##s##_plot, analysis_##s##_free                    \
  }

/* The row of a claim s (claims.h): its checks on the core numbers, its
 * verdicts, its part of index.md, and its about, which
 * ANALYSIS_CLAIM_ABOUT(s, claim, says, heading) defines in its file: one
 * claim (analysis_claim_info), no table, no column. */
#define ANALYSIS_CLAIM_DECLARE(s)                                                               \
  int analysis_##s##_checks(analysis_data *D);                                                  \
  int analysis_##s##_verdicts(analysis_data *D);                                                \
  int analysis_##s##_write_md(FILE *f, const analysis_data *D);                                 \
  extern const analysis_section_about analysis_##s##_about
#define ANALYSIS_CLAIM_ROW(label, s)                                                            \
  {                                                                                             \
    .name = label, .about = &analysis_##s##_about, .checks = analysis_##s##_checks,             \
    .verdicts = analysis_##s##_verdicts, .write_md = analysis_##s##_write_md                    \
  }
#define ANALYSIS_CLAIM_ABOUT(s, claim, says, heading)                                           \
  const analysis_section_about analysis_##s##_about = {                                         \
      (const analysis_claim_info[]){{claim, says, heading}, {NULL, NULL, NULL}},                \
      ANALYSIS_NO_TABLES, ANALYSIS_NO_COLUMNS}

extern const analysis_section ANALYSIS_SECTIONS[];
extern const int ANALYSIS_N_SECTIONS;

/* The slot of the section named `name` for its state (values.c; its own
 * entry of D->section_state, found by name, so that a section never reads
 * the table): set by its compute, read by its other functions, cleared by
 * its free; NULL when every slot is taken by other names. */
void **analysis_section_state(analysis_data *D, const char *name);
/* Its state, or NULL (no slot claimed). */
const void *analysis_section_get(const analysis_data *D, const char *name);

/* A claim's place in the order of index.md and verdicts.csv: each row's
 * claims in table order (claims 1–4 first); 99 for a claim no list has
 * (after the others). *info (may be NULL): its entry, or NULL. */
int analysis_claim_rank(const char *claim, const analysis_claim_info **info);

#endif

/* writers.h — the parts of the report, each written into the report
 * directory by one file of analysis/ and called in turn by the driver
 * (report.c): CSV tables (csv.c), figures (plots.c), index.md (index.c)
 * with every section's part (sections.h). Internal to analysis/. */
#ifndef CURVSWEEP_ANALYSIS_WRITERS_H
#define CURVSWEEP_ANALYSIS_WRITERS_H

#include "data.h"
#include "output.h"

#include <stdio.h>

/* csv.c — summary.csv, prefix.csv, amplification.csv, gap.csv (columns:
 * analysis/README.md). */
int analysis_write_tables(const analysis_data *D, const analysis_outdir *dir);
/* csv_cells.c — the cells of a row: ",%.15g" ("nan", "inf"); mean,lo,hi of an
 * interval (and of an estimate with its interval); mean,lo,hi,npos,nneg,sign_p
 * of a paired difference; the header NAME_mean,NAME_ci_low,NAME_ci_high. */
void analysis_csv_num(FILE *f, double v);
void analysis_csv_ci(FILE *f, const analysis_ci *c);
void analysis_csv_boot(FILE *f, const analysis_boot *b);
void analysis_csv_diff(FILE *f, const analysis_diff *d);
void analysis_csv_ci_header(FILE *f, const char *name);

/* csv.c — verdicts.csv: every check and verdict of D->checks, per claim in
 * the order of analysis_claim_rank (sections.c). */
int analysis_write_verdicts_table(const analysis_data *D, const analysis_outdir *dir);


/* plots.c — writes .gp/.dat (always) and renders them when gnuplot is
 * available (*rendered = PNG count; plots_render.c); appends warnings to out. Each plot
 * written is listed in plots (name without extension) for index.md. */
typedef struct {
  char name[ANALYSIS_NAME_LEN + 64];
  char caption[ANALYSIS_NAME_LEN + 768];
  int rendered;
  /* while gnuplot is to run: the script, the bytes of NAME.gp, which
   * gnuplot reads from a pipe (plots_render.c); NULL otherwise */
  char *script;
  size_t script_len;
} analysis_plot;

int analysis_write_plots(const analysis_data *D, const analysis_outdir *dir, analysis_plot **plots,
                         int *n_plots, analysis_outcome *out);

/* columns.c — DIR/COLUMNS.md: the meaning of every column of the tables
 * (file names in dir, e.g. "summary.csv"), read from their header lines. */
int analysis_write_columns(const analysis_data *D, const analysis_outdir *dir, const char *const *tables,
                           int n_tables);

/* index.c — index.md: the grid, the verdicts, links to the tables and every
 * plot (rendered or not), the warnings of out. */
int analysis_write_index(const analysis_data *D, const analysis_outdir *dir, const analysis_plot *plots,
                         int n_plots, const analysis_outcome *out);

#endif

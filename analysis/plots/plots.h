/* plots.h — the drawing helpers of the report's figures (plots_draw.c),
 * shared by every figure writer of analysis/ (plots.c, plots_fields.c,
 * plots_learning.c, plots_gates.c, plots_sinks.c). Internal to analysis/. */
#ifndef CURVSWEEP_ANALYSIS_PLOTS_H
#define CURVSWEEP_ANALYSIS_PLOTS_H

#include "writers.h"

#include <stdio.h>

/* " %.10g", or " NaN" (gnuplot's missing value) for a non-finite v. */
void analysis_dat_num(FILE *f, double v);
/* Three columns "mean lo hi" of the band of c on a log (log_y) or linear
 * axis; *valid |= the mean is finite. */
void analysis_dat_band(FILE *f, const analysis_ci *c, int log_y, int *valid);
/* The header of a .dat file of bands: "# COLUMNS (95% t interval over
 * seeds)" and "# one block per BLOCKS". */
void analysis_dat_header(FILE *f, const char *columns, const char *blocks);
/* The common preamble of every script (pngcairo, utf8, NaN missing, grid). */
void analysis_gp_header(FILE *f, const char *name, const char *caption, int width, int height);
/* An empty panel with a note. */
void analysis_gp_empty(FILE *f, const char *note);
/* plot: a band (columns c_lo:c_hi) and a line (c_mean) for each valid block
 * b of blocks block0 .. block0 + n_blocks − 1 of dat, coloured by archs[b]. */
void analysis_gp_band_plot_at(FILE *f, const char *dat, int block0, int n_blocks,
                              const cs_arch *archs, const int *valid, int c_mean, int c_lo, int c_hi,
                              int log_y, const char *empty_note);
void analysis_gp_band_plot(FILE *f, const char *dat, int n_blocks, const cs_arch *archs,
                           const int *valid, int c_mean, int c_lo, int c_hi, int log_y,
                           const char *empty_note);
/* File name stem ("circles" or "circles_<regime tag>") and caption suffix of (task, regime). */
void analysis_plot_label(const analysis_data *D, int t, int r, char *tag, size_t len, char *desc,
                         size_t dlen);
/* NAME.dat by dat(f, ctx), then NAME.gp by gp(f, ctx, P, "NAME.dat"), each atomically. */
int analysis_write_dat_gp(const char *dir, const analysis_plot *P, void *ctx,
                          int (*dat)(FILE *f, void *ctx),
                          void (*gp)(FILE *f, void *ctx, const analysis_plot *P, const char *dat));
/* Signed log scale s(v) = sign(v) log10(1 + |v|/k0), and tics labelled with v itself. */
double analysis_slog(double v, double k0);
void analysis_gp_slog_tics(FILE *f, const char *axis, double k0, double vmax);

/* field_Kh_* (plots_fields.c): the curvature-field heat maps. */
int analysis_plot_field(const analysis_data *D, int t, int r, const char *dir, int variant,
                        analysis_plot *P, int *made);
/* 1 when some arch of (task t, regime r) has a cell with a curvature field
 * (then field_Kh_* replaces map_Kt_*). */
int analysis_fields_present(const analysis_data *D, int t, int r);

#endif

/* plots.h — the drawing helpers of the report's figures (plots_draw.c),
 * shared by every figure writer of analysis/ (plots.c, plots_points.c,
 * plots_fields.c, plots_learning.c, plots_gates.c, plots_sinks.c,
 * plots_estimation.c), and running gnuplot (plots_render.c). Internal to
 * analysis/. */
#ifndef CURVSWEEP_ANALYSIS_PLOTS_H
#define CURVSWEEP_ANALYSIS_PLOTS_H

#include "rounding.h"
#include "writers.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* " %.10g", or " NaN" (gnuplot's missing value) for a non-finite v. */
void analysis_dat_num(FILE *f, double v);
/* Three columns "mean lo hi" of the band of c on a log (log_y) or linear
 * axis; *valid counts the finite means (one: an error bar, not a band). */
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
/* ---- curvature panels: the rows without a curvature value (rounding.h) ----
 *
 * A row of a curvature figure whose class is flat or unresolved carries no
 * curvature value in the .dat (NaN) and is drawn as a marker in a grey strip
 * along the bottom of the panel (analysis/README.md, "Figures"). Every .dat
 * line of a row is preceded by its key ("# row arch=A task=T depth=D
 * regime=R prefix=L", tests/support/plots_flat.py reads it). */

/* The colour of points flat to rounding in the maps (map_Kt_*, field_Kh_*):
 * a pale green, off the blue–white–red scale of the curvature. */
#define ANALYSIS_FLAT_COLOR "#c7e9c0"

/* The positive values a log axis shows: their smallest and largest (NaN: none). */
typedef struct {
  double lo, hi;
} analysis_span;
#define ANALYSIS_SPAN_EMPTY ((analysis_span){NAN, NAN})
void analysis_span_add(analysis_span *s, double v);
/* The key line of row (a, t, d, r) after layer l; cell_id >= 0 adds "cell=ID". */
void analysis_dat_row_key(FILE *f, const analysis_data *D, int a, int t, int d, int r, int l, int64_t cell_id);
/* The band of a curvature c on a log axis as analysis_dat_band, when cls is
 * curved (*valid counts finite means, span takes the three values); NaN NaN NaN
 * otherwise. */
void analysis_dat_curv(FILE *f, const analysis_ci *c, analysis_row_class cls, int *valid, analysis_span *span);
/* "10⁻³" (UTF-8 superscripts; "1" and "10" for k = 0, 1) into buf. */
void analysis_pow10_label(int k, char *buf, size_t len);
/* A log axis ("y", "x", "cb") over span with room for a strip of height
 * strip (graph fraction; 0: none) below the values: its range and, over
 * two decades or more, tics at powers of ten labelled 10ᵏ ("%g" below). */
void analysis_gp_log_axis(FILE *f, const char *axis, const analysis_span *span, double strip);
/* The strip: graph height of a strip holding n rows of markers. */
double analysis_strip_height(int n);
/* Before the plot: the strip's grey background (y2 axis 0..1). After it: analysis_gp_strip_end. */
void analysis_gp_strip_begin(FILE *f, double height);
void analysis_gp_strip_end(FILE *f);
/* One plot clause of the strip: the rows of block `block` of dat whose
 * column c_class is cls, at x column c_x and strip height y (y2 axis),
 * marked in colour; its legend entry "<who>: flat to rounding" or
 * "<who>: unresolved". */
void analysis_gp_strip_clause(FILE *f, const char *sep, const char *dat, int block, int c_x, int c_class,
                              analysis_row_class cls, double y, const char *color, const char *who);
/* A log-axis curvature panel: a band and a line for each valid block (as
 * analysis_gp_band_plot_at), and the strip for the blocks whose rows have
 * a class in classes[b] (a bit 1 << class per class present) other than
 * curved; the y axis over span. An empty_note when nothing is drawn. */
void analysis_gp_curv_plot(FILE *f, const char *dat, int block0, int n_blocks, const cs_arch *archs,
                           const int *valid, const unsigned *classes, int c_mean, int c_lo, int c_hi,
                           int c_class, const analysis_span *span, const char *empty_note);

/* File name stem ("circles" or "circles_<regime tag>") and caption suffix of (task, regime). */
void analysis_plot_label(const analysis_data *D, int t, int r, char *tag, size_t len, char *desc,
                         size_t dlen);
/* NAME.dat by dat(f, ctx), then NAME.gp by gp(f, ctx, P, "NAME.dat"), each
 * atomically; while gnuplot is to run, the data staged for it too and the
 * script kept in P->script (plots_draw.c). */
int analysis_write_dat_gp(const analysis_outdir *dir, analysis_plot *P, void *ctx,
                          int (*dat)(FILE *f, void *ctx),
                          void (*gp)(FILE *f, void *ctx, const analysis_plot *P, const char *dat));

/* ---- running gnuplot (plots_render.c; docs/SECURITY.md, "The report
 * directory"): in a private directory (mode 0700) made inside the report
 * directory, which holds the copies of the data gnuplot reads and the PNGs
 * it writes; each script fed on a pipe; each finished PNG renamed from
 * there into the report directory. ---- */

/* The gnuplot to use: opt->gnuplot (a path, or a name execvp searches on
 * PATH), else "gnuplot", into path. 1 when it can be run. */
int analysis_render_find(const analysis_options *opt, char *path, size_t len);
/* Make the private directory (dir->render_fd, dir->render_name). */
int analysis_render_begin(analysis_outdir *dir);
/* The n bytes of buf as the private directory's file name. */
int analysis_render_stage(const analysis_outdir *dir, const char *name, const char *buf, size_t n);
/* Render P (P->script on gnuplot's standard input, in the private
 * directory), then move P->name.png into the report directory. 1 when
 * gnuplot exited 0 and wrote a PNG that is not empty; else 0, why into why
 * (gnuplot's own last words and its exit status), and no P->name.png left
 * in the report directory. */
int analysis_render(const char *gnuplot, const analysis_outdir *dir, const analysis_plot *P, char *why,
                    size_t why_len);
/* Remove the private directory and what it holds (after a failure too). */
void analysis_render_end(analysis_outdir *dir);

/* Signed log scale s(v) = sign(v) log10(1 + |v|/k0), and tics labelled with v itself. */
double analysis_slog(double v, double k0);
void analysis_gp_slog_tics(FILE *f, const char *axis, double k0, double vmax);

/* hist_Kt_* (variant 0), hist_Kh_* (1) and map_Kt_* (plots_points.c): the per-point figures. */
int analysis_plot_hist(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                       analysis_plot *P, int *made);
int analysis_plot_map(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                      analysis_plot *P, int *made);
/* field_Kh_* (plots_fields.c): the curvature-field heat maps. */
int analysis_plot_field(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                        analysis_plot *P, int *made);
/* 1 when some arch of (task t, regime r) has a cell with a curvature field
 * (then field_Kh_* replaces map_Kt_*). */
int analysis_fields_present(const analysis_data *D, int t, int r);

#endif

/* plots_draw.c — the drawing helpers of every figure (plots.h): arch
 * colours, .dat numbers and bands, the gnuplot preamble, empty panels,
 * band plots, the (task, regime) label, the pair of files NAME.dat and
 * NAME.gp, the signed log scale; and of every curvature panel: the row
 * keys of its .dat, its log axis with tics at powers of ten, the grey
 * strip of the rows without a curvature value (analysis/README.md,
 * "Figures"). Below the figure writers: plots.c (the core figures and the
 * driver), plots_points.c, plots_fields.c and the sections' own
 * (plots_learning.c, plots_gates.c, plots_sinks.c, plots_estimation.c). */
#include "output.h"
#include "plots.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Numbers in .dat files: %.10g, NaN for anything not finite (gnuplot's missing value). */
void analysis_dat_num(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, " %.10g", v);
  else
    fprintf(f, " NaN");
}

/* The log-axis band of an interval: [lo, hi] with lo clipped to mean/1000
 * when it is not positive, and both set to the mean when there is no interval. */
static void analysis_log_band(const analysis_ci *c, double *mean, double *lo, double *hi) {
  *mean = c->mean > 0 && isfinite(c->mean) ? c->mean : NAN;
  *lo = c->lo, *hi = c->hi;
  if (isnan(*mean)) {
    *lo = *hi = NAN;
    return;
  }
  if (!isfinite(*lo) || !isfinite(*hi)) *lo = *hi = *mean;
  if (!(*lo > 0)) *lo = *mean / 1000.0;
}

static void analysis_lin_band(const analysis_ci *c, double *mean, double *lo, double *hi) {
  *mean = c->mean, *lo = c->lo, *hi = c->hi;
  if (!isfinite(*lo) || !isfinite(*hi)) *lo = *hi = *mean;
}

/* The common preamble of every script. */
void analysis_gp_header(FILE *f, const char *name, const char *caption, int width, int height) {
  fprintf(f,
          "# %s\n"
          "# Data: %s.dat (one block per arch unless said, blocks separated by two blank\n"
          "# lines; columns listed in its header). Render: gnuplot %s.gp -> %s.png\n"
          "set encoding utf8\n"
          "set terminal pngcairo noenhanced size %d,%d font 'Sans,11'\n"
          "set output '%s.png'\n"
          "set datafile missing 'NaN'\n"
          "set grid\n"
          "set key below\n",
          caption, name, name, name, width, height, name);
}

/* An empty panel with a note (gnuplot refuses to autoscale no data). */
void analysis_gp_empty(FILE *f, const char *note) {
  fprintf(f,
          "set label 1 '%s' at graph 0.5,0.5 center\n"
          "unset logscale y\n"
          "plot [1:2][0:1] NaN notitle\n" /* [1:2]: valid on a log x axis too */
          "unset label 1\n",
          note);
}

/* One block's clauses: its band (columns lo:hi) and its line (column mean);
 * a block of one finite row (n == 1) has no band to fill: an error bar, its
 * x moved by the factor shift so that the bars of several archs stand apart. */
static void analysis_gp_band_clause(FILE *f, const char *sep, const char *dat, int block, int n, double shift,
                                    cs_arch arch, int c_mean, int c_lo, int c_hi) {
  const char *col = config_arch_color(arch);
  if (n == 1) {
    fprintf(f, "%s'%s' index %d using ($1*%.4g):%d:%d:%d with yerrorbars lc rgb '%s' lw 1.5 pt 7 ps 1.2 "
               "title '%s'", sep, dat, block, shift, c_mean, c_lo, c_hi, col, config_arch_name(arch));
    return;
  }
  fprintf(f, "%s'%s' index %d using 1:%d:%d with filledcurves fc rgb '%s' fs transparent solid 0.18 "
             "noborder notitle, \\\n", sep, dat, block, c_lo, c_hi, col);
  fprintf(f, "     '%s' index %d using 1:%d with linespoints lc rgb '%s' lw 2 pt 7 ps 1.2 title '%s'", dat, block,
          c_mean, col, config_arch_name(arch));
}

/* The x factor of block b of n in a panel: 2.5% apart, centred on 1. */
static double analysis_gp_shift(int b, int n) { return 1.0 + 0.025 * (b - 0.5 * (n - 1)); }

/* "plot " and a band clause per valid block; returns the separator the
 * next clause of the same plot command starts with ("" when none was written). */
static const char *analysis_gp_band_clauses(FILE *f, const char *dat, int block0, int n_blocks,
                                            const cs_arch *archs, const int *valid, int c_mean, int c_lo,
                                            int c_hi) {
  fprintf(f, "plot ");
  const char *sep = "";
  for (int b = 0; b < n_blocks; b++) {
    if (!valid[b]) continue;
    analysis_gp_band_clause(f, sep, dat, block0 + b, valid[b], analysis_gp_shift(b, n_blocks), archs[b], c_mean,
                            c_lo, c_hi);
    sep = ", \\\n     ";
  }
  return sep;
}

/* plot: a band (column lo:hi) and a line (column mean) for each valid block. */
void analysis_gp_band_plot_at(FILE *f, const char *dat, int block0, int n_blocks,
                              const cs_arch *archs, const int *valid, int c_mean, int c_lo, int c_hi,
                              int log_y, const char *empty_note) {
  int any = 0;
  for (int b = 0; b < n_blocks; b++) any |= valid[b];
  if (!any) {
    analysis_gp_empty(f, empty_note);
    return;
  }
  fprintf(f, log_y ? "set logscale y\n" : "unset logscale y\n");
  analysis_gp_band_clauses(f, dat, block0, n_blocks, archs, valid, c_mean, c_lo, c_hi);
  fprintf(f, "\n");
}

void analysis_gp_band_plot(FILE *f, const char *dat, int n_blocks, const cs_arch *archs,
                           const int *valid, int c_mean, int c_lo, int c_hi, int log_y,
                           const char *empty_note) {
  analysis_gp_band_plot_at(f, dat, 0, n_blocks, archs, valid, c_mean, c_lo, c_hi, log_y, empty_note);
}

/* File name stem and caption suffix for a (task, regime). */
void analysis_plot_label(const analysis_data *D, int t, int r, char *tag, size_t len,
                                char *desc, size_t dlen) {
  if (D->n_regime > 1)
    snprintf(tag, len, "%s_%s", config_task_name(D->task[t]), D->regime[r].file_tag);
  else
    snprintf(tag, len, "%s", config_task_name(D->task[t]));
  snprintf(desc, dlen, "task %s, regime %s", config_task_name(D->task[t]), D->regime[r].name);
}

/* Three columns "mean lo hi" of the band of c on a log (log_y) or linear
 * axis; *valid counts the finite means (the rows the panel draws). */
void analysis_dat_band(FILE *f, const analysis_ci *c, int log_y, int *valid) {
  double m, lo, hi;
  if (log_y)
    analysis_log_band(c, &m, &lo, &hi);
  else
    analysis_lin_band(c, &m, &lo, &hi);
  *valid += isfinite(m);
  analysis_dat_num(f, m), analysis_dat_num(f, lo), analysis_dat_num(f, hi);
}

/* What f (an open_memstream of *buf) holds once closed: CS_OK, or out of
 * memory naming the file. */
static int analysis_memfile_close(FILE *f, const char *name) {
  return fclose(f) == 0 ? CS_OK : cs_error(CS_ERR_NOMEM, "out of memory writing %s", name);
}

/* One plot's two files: NAME.dat written by dat(f, ctx), then NAME.gp by
 * gp(f, ctx, P, "NAME.dat") (the script reads its data by relative name), each
 * atomically; dat may leave in ctx what gp needs. Both are made in memory
 * first: when gnuplot is to run (dir->render_fd open), the data also go into
 * its private directory, the one gnuplot reads, and the script stays in
 * P->script for gnuplot's pipe, so neither copy in the report directory is
 * what gnuplot reads (docs/SECURITY.md, "The report directory"). */
int analysis_write_dat_gp(const analysis_outdir *dir, analysis_plot *P, void *ctx,
                          int (*dat)(FILE *f, void *ctx),
                          void (*gp)(FILE *f, void *ctx, const analysis_plot *P, const char *dat)) {
  char dat_name[sizeof P->name + 8], gp_name[sizeof P->name + 8];
  snprintf(dat_name, sizeof dat_name, "%s.dat", P->name);
  snprintf(gp_name, sizeof gp_name, "%s.gp", P->name);
  char *data = NULL, *script = NULL;
  size_t data_len = 0, script_len = 0;
  FILE *f = open_memstream(&data, &data_len);
  if (!f) return cs_error(CS_ERR_NOMEM, "out of memory writing %s", dat_name);
  int rc = dat(f, ctx), rc_close = analysis_memfile_close(f, dat_name);
  if (!rc) rc = rc_close;
  if (!rc) rc = analysis_file_write(dir, dat_name, data, data_len);
  if (!rc && dir->render_fd >= 0) rc = analysis_render_stage(dir, dat_name, data, data_len);
  free(data);
  if (!rc && !(f = open_memstream(&script, &script_len)))
    rc = cs_error(CS_ERR_NOMEM, "out of memory writing %s", gp_name);
  if (!rc) {
    gp(f, ctx, P, dat_name);
    rc = analysis_memfile_close(f, gp_name);
  }
  if (!rc) rc = analysis_file_write(dir, gp_name, script, script_len);
  free(P->script);
  P->script = NULL, P->script_len = 0;
  if (!rc && dir->render_fd >= 0) P->script = script, P->script_len = script_len, script = NULL;
  free(script);
  return rc;
}

/* Signed log scale for heavy-tailed K̃: s(v) = sign(v) log10(1 + |v|/k0);
 * linear near 0 (|v| ≪ k0), logarithmic beyond. */
double analysis_slog(double v, double k0) {
  double m = log10(1.0 + fabs(v) / k0);
  return v < 0 ? -m : m;
}

/* Tics of a signed log axis labelled with K̃ itself: 0 and ±10^e for the round
 * powers of ten between 3·k0 (closer ticks would crowd the 0) and vmax. */
void analysis_gp_slog_tics(FILE *f, const char *axis, double k0, double vmax) {
  fprintf(f, "set %s (\"0\" 0", axis);
  for (int e = (int)ceil(log10(3.0 * k0)); e <= (int)floor(log10(vmax) + 1e-9); e++) {
    double v = pow(10.0, e);
    char label[64];
    analysis_pow10_label(e, label, sizeof label);
    fprintf(f, ", \"%s\" %.10g, \"−%s\" %.10g", label, analysis_slog(v, k0), label, -analysis_slog(v, k0));
  }
  fprintf(f, ")\n");
}

void analysis_dat_header(FILE *f, const char *columns, const char *blocks) {
  fprintf(f, "# %s (95%% t interval over seeds)\n# one block per %s\n", columns, blocks);
}

/* ---- curvature panels: the rows without a curvature value (plots.h) ---- */

void analysis_span_add(analysis_span *s, double v) {
  if (!(v > 0) || !isfinite(v)) return;
  if (!(v >= s->lo)) s->lo = v;
  if (!(v <= s->hi)) s->hi = v;
}

void analysis_dat_row_key(FILE *f, const analysis_data *D, int a, int t, int d, int r, int l, int64_t cell_id) {
  fprintf(f, "# row arch=%s task=%s depth=%d regime=%s prefix=%d", config_arch_name(D->arch[a]),
          config_task_name(D->task[t]), D->depth[d], D->regime[r].name, l);
  if (cell_id >= 0) fprintf(f, " cell=%lld", (long long)cell_id);
  fprintf(f, "\n");
}

void analysis_dat_curv(FILE *f, const analysis_ci *c, analysis_row_class cls, int *valid, analysis_span *span) {
  if (cls != ANALYSIS_ROW_CURVED) {
    fprintf(f, " NaN NaN NaN");
    return;
  }
  double m, lo, hi;
  analysis_log_band(c, &m, &lo, &hi);
  *valid += isfinite(m);
  analysis_span_add(span, m), analysis_span_add(span, lo), analysis_span_add(span, hi);
  analysis_dat_num(f, m), analysis_dat_num(f, lo), analysis_dat_num(f, hi);
}

void analysis_pow10_label(int k, char *buf, size_t len) {
  static const char *const SUP[10] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
  if (k == 0 || k == 1) {
    snprintf(buf, len, "%s", k ? "10" : "1");
    return;
  }
  char digits[16];
  snprintf(digits, sizeof digits, "%d", k < 0 ? -k : k);
  size_t used = (size_t)snprintf(buf, len, "10%s", k < 0 ? "⁻" : "");
  for (const char *c = digits; *c && used < len; c++) used += (size_t)snprintf(buf + used, len - used, "%s", SUP[*c - '0']);
}

/* The range: the values' decades (at least one) in the middle of the axis,
 * 4% of it free above them and below them (plus the strip). */
void analysis_gp_log_axis(FILE *f, const char *axis, const analysis_span *span, double strip) {
  if (!(span->lo > 0) || !(span->hi > 0)) {
    fprintf(f, "set %srange [*:*]\nset %stics auto\nset format %s '%%g'\n", axis, axis, axis);
    return;
  }
  double L = log10(span->lo), U = log10(span->hi);
  if (U - L < 1.0) {
    double mid = 0.5 * (L + U);
    L = mid - 0.5, U = mid + 0.5;
  }
  double below = strip + 0.04, above = 0.04, T = (U - L) / (1.0 - below - above);
  double bottom = L - below * T, top = U + above * T;
  fprintf(f, "set %srange [%.6g:%.6g]\nset format %s '%%g'\n", axis, pow(10.0, bottom), pow(10.0, top), axis);
  /* no tic inside the strip: its markers are not values */
  int k0 = (int)ceil(bottom + strip * T), k1 = (int)floor(top);
  if (k1 - k0 < 2) {
    /* within two decades: 1, 2 and 5 times the powers of ten, "%g" */
    double from = pow(10.0, bottom + strip * T), to = pow(10.0, top);
    const char *sep = "";
    fprintf(f, "set %stics (", axis);
    for (int k = (int)floor(bottom + strip * T); k <= k1; k++)
      for (int m = 1; m <= 5; m += m == 1 ? 1 : 3) {
        double v = m * pow(10.0, k);
        if (v >= from && v <= to) fprintf(f, "%s\"%g\" %.6g", sep, v, v), sep = ", ";
      }
    fprintf(f, ")\n");
    return;
  }
  int step = (k1 - k0) / 8 + 1; /* at most nine labels */
  int first = (int)ceil((double)k0 / step) * step;
  fprintf(f, "set %stics (", axis);
  for (int k = first; k <= k1; k += step) {
    char label[64];
    analysis_pow10_label(k, label, sizeof label);
    fprintf(f, "%s\"%s\" 1e%d", k == first ? "" : ", ", label, k);
  }
  fprintf(f, ")\n");
}

double analysis_strip_height(int n) { return n > 0 ? 0.04 * (n + 1) : 0.0; }

void analysis_gp_strip_begin(FILE *f, double height) {
  fprintf(f, "set y2range [0:1]\nunset y2tics\n"
             "set object 9 rect from graph 0, graph 0 to graph 1, graph %.4g fc rgb '#e6e6e6' "
             "fs solid 1.0 noborder behind\n", height);
}

void analysis_gp_strip_end(FILE *f) { fprintf(f, "unset object 9\n"); }

void analysis_gp_strip_clause(FILE *f, const char *sep, const char *dat, int block, int c_x, int c_class,
                              analysis_row_class cls, double y, const char *color, const char *who) {
  fprintf(f, "%s'%s' index %d using %d:($%d == %d ? %.4g : NaN) axes x1y2 with points pt %d ps 1.4 lw 2 "
             "lc rgb '%s' title '%s: %s'",
          sep, dat, block, c_x, c_class, (int)cls, y, cls == ANALYSIS_ROW_FLAT ? 4 : 2, color, who,
          analysis_row_class_name(cls));
}

void analysis_gp_curv_plot(FILE *f, const char *dat, int block0, int n_blocks, const cs_arch *archs,
                           const int *valid, const unsigned *classes, int c_mean, int c_lo, int c_hi,
                           int c_class, const analysis_span *span, const char *empty_note) {
  const unsigned no_value = 1u << ANALYSIS_ROW_FLAT | 1u << ANALYSIS_ROW_UNRESOLVED;
  int any = 0, marked = 0;
  for (int b = 0; b < n_blocks; b++) any |= valid[b], marked += (classes[b] & no_value) != 0;
  if (!any && !marked) {
    analysis_gp_empty(f, empty_note);
    return;
  }
  double h = analysis_strip_height(marked);
  if (marked) analysis_gp_strip_begin(f, h);
  /* a NaN breaks the line: no curve runs through a row without a value */
  fprintf(f, "unset datafile missing\n");
  if (any) {
    fprintf(f, "set logscale y\n");
    analysis_gp_log_axis(f, "y", span, h);
  } else {
    /* nothing curved: the strip alone, under a note */
    fprintf(f, "unset logscale y\nset yrange [0:1]\nunset ytics\n"
               "set label 1 'no curved row: every row is flat to rounding or unresolved' at graph 0.5,0.6 center\n");
  }
  const char *sep = analysis_gp_band_clauses(f, dat, block0, n_blocks, archs, valid, c_mean, c_lo, c_hi);
  for (int b = 0, k = 0; b < n_blocks; b++) {
    if (!(classes[b] & no_value)) continue;
    double y = h * (k + 1) / (marked + 1);
    for (int c = ANALYSIS_ROW_FLAT; c <= ANALYSIS_ROW_UNRESOLVED; c++)
      if (classes[b] & 1u << c) {
        analysis_gp_strip_clause(f, sep, dat, block0 + b, 1, c_class, (analysis_row_class)c, y,
                                 config_arch_color(archs[b]), config_arch_name(archs[b]));
        sep = ", \\\n     ";
      }
    k++;
  }
  fprintf(f, "\n");
  if (marked) analysis_gp_strip_end(f);
  if (!any) fprintf(f, "unset label 1\nset ytics\n");
  fprintf(f, "set datafile missing 'NaN'\nset yrange [*:*]\nset ytics auto\nset format y '%%g'\n");
}

/* plots_draw.c — the drawing helpers of every figure (plots.h): arch
 * colours, .dat numbers and bands, the gnuplot preamble, empty panels,
 * band plots, the (task, regime) label, the pair of files NAME.dat and
 * NAME.gp, the signed log scale. Below the figure writers: plots.c (the
 * core figures and the driver), plots_fields.c and the sections' own
 * (plots_learning.c, plots_gates.c, plots_sinks.c). */
#include "output.h"
#include "plots.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
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
  fprintf(f, "plot ");
  int first = 1;
  for (int b = 0; b < n_blocks; b++) {
    if (!valid[b]) continue;
    const char *col = config_arch_color(archs[b]);
    fprintf(f,
            "%s'%s' index %d using 1:%d:%d with filledcurves fc rgb '%s' fs transparent solid 0.18 "
            "noborder notitle, \\\n"
            "     '%s' index %d using 1:%d with linespoints lc rgb '%s' lw 2 pt 7 ps 1.2 title '%s'",
            first ? "" : ", \\\n     ", dat, block0 + b, c_lo, c_hi, col, dat, block0 + b, c_mean, col,
            config_arch_name(archs[b]));
    first = 0;
  }
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
 * axis; *valid |= the mean is finite (the panel has something to draw). */
void analysis_dat_band(FILE *f, const analysis_ci *c, int log_y, int *valid) {
  double m, lo, hi;
  if (log_y)
    analysis_log_band(c, &m, &lo, &hi);
  else
    analysis_lin_band(c, &m, &lo, &hi);
  *valid |= isfinite(m);
  analysis_dat_num(f, m), analysis_dat_num(f, lo), analysis_dat_num(f, hi);
}

/* One plot's two files: NAME.dat written by dat(f, ctx), then NAME.gp by
 * gp(f, ctx, P, "NAME.dat") (the script reads its data by relative name), each
 * atomically; dat may leave in ctx what gp needs. */
int analysis_write_dat_gp(const char *dir, const analysis_plot *P, void *ctx,
                                 int (*dat)(FILE *f, void *ctx),
                                 void (*gp)(FILE *f, void *ctx, const analysis_plot *P, const char *dat)) {
  char dat_name[sizeof P->name + 8], gp_name[sizeof P->name + 8];
  snprintf(dat_name, sizeof dat_name, "%s.dat", P->name);
  snprintf(gp_name, sizeof gp_name, "%s.gp", P->name);
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, dat_name));
  int rc = dat(o.f, ctx);
  if (rc) {
    analysis_file_abort(&o);
    return rc;
  }
  CS_CHECK(analysis_file_commit(&o));
  CS_CHECK(analysis_file_open(&o, dir, gp_name));
  gp(o.f, ctx, P, dat_name);
  return analysis_file_commit(&o);
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
    fprintf(f, ", \"%g\" %.10g, \"-%g\" %.10g", v, analysis_slog(v, k0), v, -analysis_slog(v, k0));
  }
  fprintf(f, ")\n");
}

void analysis_dat_header(FILE *f, const char *columns, const char *blocks) {
  fprintf(f, "# %s (95%% t interval over seeds)\n# one block per %s\n", columns, blocks);
}

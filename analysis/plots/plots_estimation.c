/* plots_estimation.c — estimation_rates (analysis/README.md, "Figures"):
 * when the sweep has teacher–student cells, one figure of four panels: the
 * function error and the Voronoi loss against n on log–log axes, per group
 * (arch, gate, H, H*; exact and over-specified) the geometric mean over
 * seeds with its 95% interval and the fitted line (the slope of
 * estimation_slopes.csv through the mean log error); below each, the local
 * slopes on the lower and upper halves of the n range with their seed-
 * bootstrap intervals, beside n^-1/2, the polynomial bound n^-1/4 and the
 * local slope −1/log n of a logarithmic rate (estimation.c, estimation_fit.c). */
#include "estimation.h"

#include "plots.h"
#include "sections.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  const analysis_estimation *E;
  int n_shown;
  int shown[256]; /* the groups drawn (not misspecified) */
} analysis_est_plot;

/* exp(intercept + slope · log n) of fit F through the mean log error of
 * group g over sizes i0..i1 (the least-squares line's intercept ȳ − b x̄). */
static double analysis_est_fitted(const analysis_est_group *g, int e, int f, int i0, int i1, double n) {
  double b = g->fit[e][f].boot.estimate, sx = 0, sy = 0;
  int k = 0;
  for (int i = i0; i <= i1; i++) {
    double ly = log(g->pt[e][i].gmean.mean);
    if (isfinite(ly)) sx += log((double)g->x[i]), sy += ly, k++;
  }
  return k && isfinite(b) ? exp(sy / k + b * (log(n) - sx / k)) : NAN;
}

/* The geometric middle of sizes i0..i1. */
static double analysis_est_mid(const analysis_est_group *g, int i0, int i1) {
  return sqrt((double)g->x[i0] * g->x[i1]);
}

static int analysis_est_dat(FILE *f, void *ctx) {
  const analysis_est_plot *Q = ctx;
  fprintf(f, "# blocks 0 .. 2G-1: per error (fn, then voronoi) and group: n gmean gmean_lo gmean_hi fitted\n"
             "# blocks 2G .. 4G-1: per error and group: n_mid local_slope boot_lo boot_hi (lower, upper half)\n");
  int block = 0;
  for (int e = 0; e < EE_COUNT; e++)
    for (int j = 0; j < Q->n_shown; j++, block++) {
      const analysis_est_group *g = &Q->E->group[Q->shown[j]];
      fprintf(f, "%s# %s, group %d\n", block ? "\n\n" : "", analysis_est_error_name(e), j);
      for (int i = 0; i < g->n_x; i++) {
        const analysis_ci *c = &g->pt[e][i].gmean;
        fprintf(f, "%d", g->x[i]);
        analysis_dat_num(f, c->mean), analysis_dat_num(f, c->lo), analysis_dat_num(f, c->hi);
        analysis_dat_num(f, analysis_est_fitted(g, e, EF_FULL, 0, g->n_x - 1, g->x[i]));
        fprintf(f, "\n");
      }
    }
  for (int e = 0; e < EE_COUNT; e++)
    for (int j = 0; j < Q->n_shown; j++, block++) {
      const analysis_est_group *g = &Q->E->group[Q->shown[j]];
      fprintf(f, "\n\n# local slopes of %s, group %d\n", analysis_est_error_name(e), j);
      int half[2][3] = {{EF_LOWER, 0, g->lo_end}, {EF_UPPER, g->up_start, g->n_x - 1}};
      for (int h = 0; h < 2; h++) {
        const analysis_boot *b = &g->fit[e][half[h][0]].boot;
        analysis_dat_num(f, analysis_est_mid(g, half[h][1], half[h][2]));
        analysis_dat_num(f, b->estimate), analysis_dat_num(f, b->lo), analysis_dat_num(f, b->hi);
        fprintf(f, "\n");
      }
    }
  return CS_OK;
}

/* A group's name fit for a single-quoted gnuplot string (no quote, no backslash). */
static void analysis_est_title(const analysis_estimation *E, const analysis_est_group *g, char *buf, size_t len) {
  analysis_est_group_name(buf, len, E, g);
  for (char *p = buf; *p; p++)
    if (*p == '\'' || *p == '\\') *p = '_';
}

static void analysis_est_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_est_plot *Q = ctx;
  static const char *const WHAT[EE_COUNT] = {"function error ||f - f*||", "Voronoi loss"};
  int lo = Q->E->group[Q->shown[0]].x[0], hi = lo;
  for (int j = 0; j < Q->n_shown; j++) {
    const analysis_est_group *g = &Q->E->group[Q->shown[j]];
    if (g->x[0] < lo) lo = g->x[0];
    if (g->x[g->n_x - 1] > hi) hi = g->x[g->n_x - 1];
  }
  analysis_gp_header(f, P->name, P->caption, 1400, 1100);
  fprintf(f, "set multiplot layout 2,2 title 'estimation rates: geometric mean over seeds and fitted slope; local "
             "slopes on the halves of the n range'\n");
  fprintf(f, "set logscale x\nset xrange [%g:%g]\nset xlabel 'training points n (log scale)'\n", lo / 1.3, hi * 1.3);
  for (int e = 0; e < EE_COUNT; e++) {
    fprintf(f, "set title '%s'\nset logscale y\nset ylabel '%s (log scale)'\nplot ", WHAT[e], WHAT[e]);
    for (int j = 0; j < Q->n_shown; j++) {
      char t[ANALYSIS_NAME_LEN + 96];
      analysis_est_title(Q->E, &Q->E->group[Q->shown[j]], t, sizeof t);
      fprintf(f, "%s'%s' index %d using 1:2:3:4 with yerrorbars lt %d pt 7 title '%s', '' index %d using 1:5 with "
                 "lines lt %d notitle",
              j ? ", \\\n  " : "", dat, e * Q->n_shown + j, j + 1, t, e * Q->n_shown + j, j + 1);
    }
    fprintf(f, "\n");
  }
  for (int e = 0; e < EE_COUNT; e++) {
    fprintf(f, "set title 'local slope of log %s on log n (lower, upper half)'\nunset logscale y\n"
               "set ylabel 'slope'\nset yrange [*:*]\nplot -0.5 dt 2 lc rgb '#444444' title 'n^-1/2', "
               "%g dt 3 lc rgb '#aa0000' title 'bound n^-1/4', -1/log(x) dt 4 lc rgb '#666666' title "
               "'slope of the rate 1/log n'",
            WHAT[e], ANALYSIS_EST_POLY_SLOPE);
    for (int j = 0; j < Q->n_shown; j++)
      fprintf(f, ", \\\n  '%s' index %d using 1:2:3:4 with yerrorlines lt %d pt 7 notitle", dat,
              (EE_COUNT + e) * Q->n_shown + j, j + 1);
    fprintf(f, "\n");
  }
  fprintf(f, "unset multiplot\n");
}

/* estimation_rates: written once, at the first (task, regime) holding an estimation cell. */
int analysis_estimation_plot(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                             analysis_plot *P, int *made) {
  (void)variant;
  *made = 0;
  const analysis_estimation *E = analysis_estimation_of(D);
  if (!E || E->plot.t != t || E->plot.r != r) return CS_OK;
  analysis_est_plot Q = {.E = E};
  for (int i = 0; i < E->n_group && Q.n_shown < 256; i++)
    if (E->group[i].regime != ER_MISSPECIFIED) Q.shown[Q.n_shown++] = i;
  if (!Q.n_shown) return CS_OK;
  snprintf(P->name, sizeof P->name, "estimation_rates");
  snprintf(P->caption, sizeof P->caption,
           "Estimation rates: the function error and the Voronoi loss against the training points n (log-log), "
           "per (arch, gate, H, H*) the geometric mean over seeds with its 95%% t interval and the line of the "
           "fitted slope; below, the local slopes on the lower and upper halves of the n range with seed-"
           "bootstrap intervals beside n^-1/2, the bound n^-1/4 and the local slope of 1/log n "
           "(estimation_slopes.csv)");
  *made = 1;
  return analysis_write_dat_gp(dir, P, &Q, analysis_est_dat, analysis_est_gp);
}

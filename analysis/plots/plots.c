/* plots.c — the report's figures as gnuplot scripts (.gp) with their data
 * (.dat), rendered to PNG with gnuplot's pngcairo terminal when gnuplot is
 * available (plots_render.c: in a private directory, each script on a pipe,
 * docs/SECURITY.md "The report directory"). Scripts are self-contained and
 * read their data by relative name, so `cd REPORT && gnuplot NAME.gp`
 * re-renders a restyled figure.
 *
 * Per task (and regime when there are several):
 *   curvature_depth_*  mean |K|, mean |K̃|, mean |K̂| (log-log) and the median
 *                      anisotropy index at the deepest prefix vs depth, 95% t
 *                      bands over seeds, one line per arch
 *   accuracy_depth_*   test accuracy vs depth
 *   prefix_*           the same and mean log det g vs prefix l in each arch's
 *                      deepest models (accumulation under composition)
 *   hist_Kt_*, hist_Kh_*, map_Kt_*  the per-point figures (plots_points.c),
 *                      field_Kh_* (plots_fields.c)
 * A curvature is drawn only for a row (and a point) classified curved
 * (rounding.h); the others are marked as flat to rounding or unresolved
 * (analysis/README.md, "Figures"). */
#include "sections.h"
#include "output.h"
#include "plots.h"
#include "writers.h"

#include "curvsweep/error.h"
#include "curvsweep/quantile.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


static analysis_plot *analysis_new_plot(analysis_plot **plots, int *n, int *cap) {
  if (*n == *cap) {
    int nc = *cap ? 2 * *cap : 16;
    analysis_plot *p = realloc(*plots, sizeof *p * nc);
    if (!p) return NULL;
    *plots = p, *cap = nc;
  }
  analysis_plot *p = &(*plots)[(*n)++];
  memset(p, 0, sizeof *p);
  return p;
}

/* ---- (1) curvature vs depth, (2) accuracy vs depth, (3) per-prefix ---- */

/* The band plots: one data block per arch with values, panels of mean with
 * 95% band; the .dat pass fills archs, nb, valid, classes and span for the
 * .gp pass. A curvature panel draws a row only when it is curved
 * (rounding.h); the others are marked in its strip. */
typedef struct {
  const analysis_data *D;
  int t, r;
  int accuracy;                  /* depth plots: 1 accuracy, 0 curvature */
  char desc[ANALYSIS_NAME_LEN + 64];
  int nb;                        /* data blocks written */
  cs_arch archs[ARCH_COUNT];     /* the arch of each block */
  int valid[5][ARCH_COUNT];      /* [panel][block]: some finite mean */
  unsigned classes[ARCH_COUNT];  /* [block]: 1 << class of each row class present */
  analysis_span span[5];         /* [panel]: the positive values of a log panel */
  int dmin, dmax;                /* depth plot: the depths drawn */
  int maxL;                      /* prefix plot: the deepest depth drawn */
} analysis_band_plot;

#define ANALYSIS_CLASS_NOTE                                                                      \
  "# class: 0 curved, 1 flat to rounding, 2 unresolved (analysis/stats/rounding.c, claim 1's rule);\n" \
  "# the curvature columns (K_*, Kt_*, Kh_*) are NaN unless the row is curved\n"

static int analysis_depth_dat(FILE *f, void *ctx) {
  analysis_band_plot *B = ctx;
  const analysis_data *D = B->D;
  int t = B->t, r = B->r;
  if (B->accuracy)
    fprintf(f, "# depth acc_mean acc_band_lo acc_band_hi (band: 95%% t interval over seeds)\n");
  else
    fprintf(f, "# columns: depth K_absmean K_band_lo K_band_hi Kt_absmean Kt_band_lo Kt_band_hi "
               "Kh_absmean Kh_band_lo Kh_band_hi aniso aniso_band_lo aniso_band_hi class\n"
               "# (bands: 95%% t interval over seeds, curvature bands' lower end clipped to\n"
               "# mean/1000 for the log axis; exact intervals in summary.csv)\n" ANALYSIS_CLASS_NOTE);
  for (int a = 0; a < D->n_arch; a++) {
    int rows = 0;
    for (int d = 0; d < D->n_depth; d++) rows += D->group[analysis_gidx(D, a, t, d, r)].n_done > 0;
    if (!rows) continue;
    fprintf(f, "%s# arch %s\n", B->nb ? "\n\n" : "", config_arch_name(D->arch[a]));
    int b = B->nb++;
    B->archs[b] = D->arch[a];
    for (int d = 0; d < D->n_depth; d++) {
      const analysis_group *g = &D->group[analysis_gidx(D, a, t, d, r)];
      if (g->n_done == 0) continue;
      if (!B->dmin || D->depth[d] < B->dmin) B->dmin = D->depth[d];
      if (D->depth[d] > B->dmax) B->dmax = D->depth[d];
      if (B->accuracy) {
        fprintf(f, "%d", D->depth[d]);
        analysis_dat_band(f, &g->m[MEASURE_ACC], 0, &B->valid[0][b]);
      } else {
        analysis_row_class cls = analysis_row_class_of(D, a, t, d, r, D->depth[d]);
        B->classes[b] |= 1u << cls;
        analysis_dat_row_key(f, D, a, t, d, r, D->depth[d], -1);
        fprintf(f, "%d", D->depth[d]);
        analysis_dat_curv(f, &g->m[MEASURE_K_ABS], cls, &B->valid[0][b], &B->span[0]);
        analysis_dat_curv(f, &g->m[MEASURE_KT_ABS], cls, &B->valid[1][b], &B->span[1]);
        analysis_dat_curv(f, &g->m[MEASURE_KH_ABS], cls, &B->valid[2][b], &B->span[2]);
        analysis_dat_band(f, &g->m[MEASURE_ANISO], 0, &B->valid[3][b]);
        fprintf(f, " %d", (int)cls);
      }
      fprintf(f, "\n");
    }
  }
  return CS_OK;
}

static void analysis_depth_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_band_plot *B = ctx;
  const analysis_data *D = B->D;
  analysis_gp_header(f, P->name, P->caption, B->accuracy ? 800 : 1400, B->accuracy ? 560 : 1000);
  /* the depths drawn, a little room either side (log axis) */
  fprintf(f, "set logscale x 2\nset xrange [%.6g:%.6g]\nset xtics (", B->dmin / 1.15, B->dmax * 1.15);
  int first = 1;
  for (int d = 0; d < D->n_depth; d++) {
    int any = 0;
    for (int a = 0; a < D->n_arch; a++) any |= D->group[analysis_gidx(D, a, B->t, d, B->r)].n_done > 0;
    if (any) fprintf(f, "%s%d", first ? "" : ", ", D->depth[d]), first = 0;
  }
  fprintf(f, ")\nset xlabel 'depth L (layers)'\n");
  if (B->accuracy) {
    fprintf(f, "set title 'test accuracy vs depth — %s'\nset ylabel 'test accuracy'\nset yrange [*:1]\n",
            B->desc);
    analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[0], 2, 3, 4, 0, "no accuracy values");
    return;
  }
  fprintf(f, "set multiplot layout 2,2 title 'curvature of the last layer vs depth — %s'\n", B->desc);
  fprintf(f, "set title 'raw curvature (shrinks with the representation)'\n"
             "set ylabel 'mean |K|'\n");
  analysis_gp_curv_plot(f, dat, 0, B->nb, B->archs, B->valid[0], B->classes, 2, 3, 4, 14, &B->span[0],
                        "no positive mean |K|");
  fprintf(f, "set title 'trace-normalised K̃ = K tr(g)/m (grows with anisotropy)'\n"
             "set ylabel 'mean |K̃|'\n");
  analysis_gp_curv_plot(f, dat, 0, B->nb, B->archs, B->valid[1], B->classes, 5, 6, 7, 14, &B->span[1],
                        "no positive mean |K̃|");
  fprintf(f, "set title 'area-normalised K̂ = K det(g)^{1/m}'\nset ylabel 'mean |K̂|'\n");
  analysis_gp_curv_plot(f, dat, 0, B->nb, B->archs, B->valid[2], B->classes, 8, 9, 10, 14, &B->span[2],
                        "no K̂ in this archive");
  fprintf(f, "set title 'anisotropy index log(AM/GM of g) = log(K̃/K̂)'\n"
             "set ylabel 'median anisotropy index'\nset yrange [0:*]\n");
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[3], 11, 12, 13, 0,
                        "no anisotropy in this archive");
  fprintf(f, "unset multiplot\n");
}

/* 1 when row (a, t, d, r) after layer l has something to draw: a finite
 * accuracy (accuracy 1), or a curvature measured (classified, or a finite
 * |K̃|; family mha measures none, analysis/README.md "Figures"). */
static int analysis_row_measured(const analysis_data *D, int a, int t, int d, int r, int l, int accuracy) {
  if (accuracy) return isfinite(D->group[analysis_gidx(D, a, t, d, r)].m[MEASURE_ACC].mean);
  analysis_rounding R;
  return analysis_rounding_of(D, a, t, d, r, l, &R) && (R.classified || isfinite(R.kt_max));
}

/* variant 0: curvature_depth_*, 1: accuracy_depth_*; *made = 0 when no row has a value. */
static int analysis_plot_depth(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                               analysis_plot *P, int *made) {
  int any = 0;
  for (int a = 0; a < D->n_arch; a++)
    for (int d = 0; d < D->n_depth; d++)
      any |= D->group[analysis_gidx(D, a, t, d, r)].n_done > 0 && analysis_row_measured(D, a, t, d, r, D->depth[d], variant);
  *made = 0;
  if (!any) return CS_OK;
  analysis_band_plot B = {.D = D, .t = t, .r = r, .accuracy = variant};
  for (int k = 0; k < 5; k++) B.span[k] = ANALYSIS_SPAN_EMPTY;
  char tag[ANALYSIS_NAME_LEN + 32];
  analysis_plot_label(D, t, r, tag, sizeof tag, B.desc, sizeof B.desc);
  snprintf(P->name, sizeof P->name, "%s_%s", B.accuracy ? "accuracy_depth" : "curvature_depth", tag);
  if (B.accuracy)
    snprintf(P->caption, sizeof P->caption,
             "Test accuracy vs depth (%s): mean over seeds with 95%% t interval", B.desc);
  else
    snprintf(P->caption, sizeof P->caption,
             "Curvature vs depth (%s): raw mean |K|, trace-normalised mean |K̃|, area-normalised "
             "mean |K̂| and the median anisotropy index log(AM/GM of g) of the last layer, mean "
             "over seeds with 95%% t interval (on the log axes an interval reaching 0 is cut at "
             "mean/1000); a row flat to rounding or unresolved (claim 1's classification) has no "
             "curvature value and is marked in the grey strip at the bottom", B.desc);
  *made = 1;
  return analysis_write_dat_gp(dir, P, &B, analysis_depth_dat, analysis_depth_gp);
}

static int analysis_prefix_dat(FILE *f, void *ctx) {
  analysis_band_plot *B = ctx;
  const analysis_data *D = B->D;
  int t = B->t, r = B->r;
  fprintf(f, "# columns: prefix K_absmean K_band_lo K_band_hi Kt_absmean Kt_band_lo Kt_band_hi logdet "
             "logdet_band_lo logdet_band_hi Kh_absmean Kh_band_lo Kh_band_hi aniso aniso_band_lo "
             "aniso_band_hi class\n"
             "# (bands: 95%% t interval over seeds; K bands clipped below at mean/1000 for the "
             "log axis; exact values in prefix.csv)\n" ANALYSIS_CLASS_NOTE);
  for (int a = 0; a < D->n_arch; a++) {
    int dd = -1;
    for (int d = 0; d < D->n_depth; d++)
      if (D->prefix[analysis_gidx(D, a, t, d, r)]) dd = d;
    if (dd < 0) continue;
    const analysis_prefix *p = D->prefix[analysis_gidx(D, a, t, dd, r)];
    int L = D->depth[dd];
    if (L > B->maxL) B->maxL = L;
    fprintf(f, "%s# arch %s, depth %d\n", B->nb ? "\n\n" : "", config_arch_name(D->arch[a]), L);
    int b = B->nb++;
    B->archs[b] = D->arch[a];
    for (int l = 1; l <= L; l++) {
      analysis_row_class cls = analysis_row_class_of(D, a, t, dd, r, l);
      B->classes[b] |= 1u << cls;
      analysis_dat_row_key(f, D, a, t, dd, r, l, -1);
      fprintf(f, "%d", l);
      analysis_dat_curv(f, &p[l - 1].m[MEASURE_K_ABS], cls, &B->valid[0][b], &B->span[0]);
      analysis_dat_curv(f, &p[l - 1].m[MEASURE_KT_ABS], cls, &B->valid[1][b], &B->span[1]);
      analysis_dat_band(f, &p[l - 1].m[MEASURE_LOGDET], 0, &B->valid[2][b]);
      analysis_dat_curv(f, &p[l - 1].m[MEASURE_KH_ABS], cls, &B->valid[3][b], &B->span[3]);
      analysis_dat_band(f, &p[l - 1].m[MEASURE_ANISO], 0, &B->valid[4][b]);
      fprintf(f, " %d\n", (int)cls);
    }
  }
  return CS_OK;
}

static void analysis_prefix_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_band_plot *B = ctx;
  analysis_gp_header(f, P->name, P->caption, 1800, 1000);
  fprintf(f, "set xlabel 'prefix l (representation after layer l)'\nset xtics 1\n");
  fprintf(f, "set xrange [0.8:%g]\n", B->maxL + 0.2);
  fprintf(f, "set multiplot layout 2,3 title 'accumulation over layers in the deepest models — %s'\n",
          B->desc);
  fprintf(f, "set title 'raw curvature'\nset ylabel 'mean |K|'\n");
  analysis_gp_curv_plot(f, dat, 0, B->nb, B->archs, B->valid[0], B->classes, 2, 3, 4, 17, &B->span[0],
                        "no positive mean |K|");
  fprintf(f, "set title 'trace-normalised K̃ (grows with anisotropy)'\nset ylabel 'mean |K̃|'\n");
  analysis_gp_curv_plot(f, dat, 0, B->nb, B->archs, B->valid[1], B->classes, 5, 6, 7, 17, &B->span[1],
                        "no positive mean |K̃|");
  fprintf(f, "set title 'area-normalised K̂'\nset ylabel 'mean |K̂|'\n");
  analysis_gp_curv_plot(f, dat, 0, B->nb, B->archs, B->valid[3], B->classes, 11, 12, 13, 17, &B->span[3],
                        "no K̂ in this archive");
  fprintf(f, "set title 'contraction: log det g (falls when layers shrink)'\n"
             "set ylabel 'mean log det g'\n");
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[2], 8, 9, 10, 0, "no log det g values");
  fprintf(f, "set title 'anisotropy index log(AM/GM of g)'\nset ylabel 'median anisotropy index'\n"
             "set yrange [0:*]\n");
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[4], 14, 15, 16, 0,
                        "no anisotropy in this archive");
  fprintf(f, "unset multiplot\n");
}

/* prefix_*: accumulation under composition in each arch's deepest models;
 * *made = 0 when no row has a curvature measured. */
static int analysis_plot_prefix(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                                analysis_plot *P, int *made) {
  int any = 0;
  for (int a = 0; a < D->n_arch; a++)
    for (int d = 0; d < D->n_depth; d++)
      for (int l = 1; D->prefix[analysis_gidx(D, a, t, d, r)] && l <= D->depth[d]; l++)
        any |= analysis_row_measured(D, a, t, d, r, l, 0);
  *made = 0;
  if (!any) return CS_OK;
  analysis_band_plot B = {.D = D, .t = t, .r = r};
  for (int k = 0; k < 5; k++) B.span[k] = ANALYSIS_SPAN_EMPTY;
  char tag[ANALYSIS_NAME_LEN + 32];
  analysis_plot_label(D, t, r, tag, sizeof tag, B.desc, sizeof B.desc);
  snprintf(P->name, sizeof P->name, "prefix_%s", tag);
  snprintf(P->caption, sizeof P->caption,
           "Accumulation under composition (%s): mean |K|, mean |K̃|, mean |K̂|, mean log det g "
           "and the median anisotropy index after each layer l of the deepest models, mean over "
           "seeds with 95%% t interval (on the log axes an interval reaching 0 is cut at mean/1000); a row "
           "flat to rounding or unresolved has no curvature value and is marked in the grey strip at the "
           "bottom", B.desc);
  *made = 1;
  return analysis_write_dat_gp(dir, P, &B, analysis_prefix_dat, analysis_prefix_gp);
}

/* ---- the plots of one (task, regime), in the order of index.md ---- */


static const struct {
  analysis_plot_writer write;
  int variant;
} ANALYSIS_PLOT_KINDS[] = {
    {analysis_plot_depth, 0},  /* curvature_depth_* */
    {analysis_plot_depth, 1},  /* accuracy_depth_* */
    {analysis_plot_prefix, 0}, /* prefix_* */
    {analysis_plot_hist, 0},   /* hist_Kt_* */
    {analysis_plot_hist, 1},   /* hist_Kh_* */
    {analysis_plot_field, 0},  /* field_Kh_* (plots_fields.c; cells with a curvature field) */
    {analysis_plot_map, 0},    /* map_Kt_* (none where field_Kh_* is drawn) */
};
enum { ANALYSIS_N_KINDS = sizeof ANALYSIS_PLOT_KINDS / sizeof *ANALYSIS_PLOT_KINDS };

int analysis_write_plots(const analysis_data *D, const analysis_outdir *dir, analysis_plot **plots,
                         int *n_plots, analysis_outcome *out) {
  int cap = 0, rc = CS_OK;
  *plots = NULL, *n_plots = 0;
  // gnuplot, when it is to run, works in a private directory of its own
  // (plots_render.c): made before the figures, whose data are staged there
  char gnuplot[4096] = "";
  int render = D->opt.render && analysis_render_find(&D->opt, gnuplot, sizeof gnuplot);
  analysis_outdir rdir = *dir;
  rdir.render_fd = -1;
  if (render) rc = analysis_render_begin(&rdir);
  for (int t = 0; t < D->n_task && !rc; t++)
    for (int r = 0; r < D->n_regime && !rc; r++) {
      int any = 0;
      for (int a = 0; a < D->n_arch; a++)
        for (int d = 0; d < D->n_depth; d++) any |= D->group[analysis_gidx(D, a, t, d, r)].n_done > 0;
      if (!any) continue;
      /* the kinds above, then each section's figure (sections.c) */
      for (int k = 0; k < ANALYSIS_N_KINDS + ANALYSIS_N_SECTIONS && !rc; k++) {
        analysis_plot *P = analysis_new_plot(plots, n_plots, &cap);
        if (!P) {
          rc = cs_error(CS_ERR_NOMEM, "out of memory listing plots");
          break;
        }
        int made = 0;
        if (k < ANALYSIS_N_KINDS)
          rc = ANALYSIS_PLOT_KINDS[k].write(D, t, r, &rdir, ANALYSIS_PLOT_KINDS[k].variant, P, &made);
        else if (ANALYSIS_SECTIONS[k - ANALYSIS_N_KINDS].plot)
          rc = ANALYSIS_SECTIONS[k - ANALYSIS_N_KINDS].plot(D, t, r, &rdir, 0, P, &made);
        if (!made) (*n_plots)--;
      }
    }
  if (!rc && out) out->plots_scripted = *n_plots;
  if (!rc && D->opt.render && !render)
    analysis_warn(out, "gnuplot not found: plots skipped ('%s' %s; the .gp scripts and .dat data "
                       "are written, render them with 'gnuplot NAME.gp' in %s)",
                  gnuplot, strchr(gnuplot, '/') ? "is not an executable" : "does not run from PATH",
                  dir->path);
  // a plot gnuplot fails on is a failure of the run (analyze exits 1, the
  // first failure's message in out->plot_error); the others still render
  for (int i = 0; !rc && render && i < *n_plots; i++) {
    char why[900];
    (*plots)[i].rendered = analysis_render(gnuplot, &rdir, &(*plots)[i], why, sizeof why);
    if ((*plots)[i].rendered) {
      if (out) out->plots_written++;
      continue;
    }
    if (!out) continue;
    if (out->plots_failed++ == 0)
      if (snprintf(out->plot_error, sizeof out->plot_error, "gnuplot (%s) failed on %s/%s.gp: %s",
                   gnuplot, dir->path, (*plots)[i].name, why) < 0)
        out->plot_error[0] = '\0';  // (a long message is cut, never lost whole)
  }
  if (!rc && out && out->plots_failed)
    analysis_warn(out, "%d of %d plots not rendered (gnuplot failed; the first failure is "
                       "reported below)", out->plots_failed, *n_plots);
  // the scripts were kept for gnuplot's pipe only
  for (int i = 0; i < *n_plots; i++) free((*plots)[i].script), (*plots)[i].script = NULL;
  analysis_render_end(&rdir);
  return rc;
}

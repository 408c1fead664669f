/* plots.c — the report's figures as gnuplot scripts (.gp) with their data
 * (.dat), rendered to PNG with gnuplot's pngcairo terminal when gnuplot is
 * available. Scripts are self-contained and read their data by relative
 * name, so `cd REPORT && gnuplot NAME.gp` re-renders a restyled figure.
 *
 * Per task (and regime when there are several):
 *   curvature_depth_*  mean |K|, mean |K̃|, mean |K̂| (log-log) and the median
 *                      anisotropy index at the deepest prefix vs depth, 95% t
 *                      bands over seeds, one line per arch
 *   accuracy_depth_*   test accuracy vs depth
 *   prefix_*           the same and mean log det g vs prefix l in each arch's
 *                      deepest models (accumulation under composition)
 *   hist_Kt_*, hist_Kh_*  histograms of per-point K̃ and K̂ at the deepest
 *                      depth, per arch (needs /points)
 *   map_Kt_*           m = 2: evaluation points coloured by K̃ over the input
 *                      plane with the task's test set by class (needs /points;
 *                      replaced by field_Kh_* of plots_fields.c when the cells
 *                      carry a curvature field)
 * Per-point plots use only points classified flat or curved when the
 * archive carries pt_class (analysis/README.md, "Figures"). */
#include "sections.h"
#include "output.h"
#include "plots.h"
#include "writers.h"

#include "curvsweep/error.h"
#include "curvsweep/quantile.h"
#include "curvsweep/tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define ANALYSIS_HIST_BINS 41 /* odd: K̃ = 0 is the centre of the middle bin */
#define ANALYSIS_MAP_CLASS_POINTS 1500

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
 * 95% band; the .dat pass fills archs, nb and valid for the .gp pass. */
typedef struct {
  const analysis_data *D;
  int t, r;
  int accuracy;                  /* depth plots: 1 accuracy, 0 curvature */
  char desc[ANALYSIS_NAME_LEN + 64];
  int nb;                        /* data blocks written */
  cs_arch archs[ARCH_COUNT];     /* the arch of each block */
  int valid[5][ARCH_COUNT];      /* [panel][block]: some finite mean */
  int maxL;                      /* prefix plot: the deepest depth drawn */
} analysis_band_plot;

static int analysis_depth_dat(FILE *f, void *ctx) {
  analysis_band_plot *B = ctx;
  const analysis_data *D = B->D;
  int t = B->t, r = B->r;
  if (B->accuracy)
    fprintf(f, "# depth acc_mean acc_band_lo acc_band_hi (band: 95%% t interval over seeds)\n");
  else
    fprintf(f, "# depth K_absmean K_band_lo K_band_hi Kt_absmean Kt_band_lo Kt_band_hi Kh_absmean "
               "Kh_band_lo Kh_band_hi aniso aniso_band_lo aniso_band_hi\n"
               "# (bands: 95%% t interval over seeds, curvature bands' lower end clipped to\n"
               "# mean/1000 for the log axis; exact intervals in summary.csv)\n");
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
      fprintf(f, "%d", D->depth[d]);
      if (B->accuracy) {
        analysis_dat_band(f, &g->m[MEASURE_ACC], 0, &B->valid[0][b]);
      } else {
        analysis_dat_band(f, &g->m[MEASURE_K_ABS], 1, &B->valid[0][b]);
        analysis_dat_band(f, &g->m[MEASURE_KT_ABS], 1, &B->valid[1][b]);
        analysis_dat_band(f, &g->m[MEASURE_KH_ABS], 1, &B->valid[2][b]);
        analysis_dat_band(f, &g->m[MEASURE_ANISO], 0, &B->valid[3][b]);
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
  fprintf(f, "set logscale x 2\nset xtics (");
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
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[0], 2, 3, 4, 1, "no positive mean |K|");
  fprintf(f, "set title 'trace-normalised K̃ = K tr(g)/m (grows with anisotropy)'\n"
             "set ylabel 'mean |K̃|'\n");
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[1], 5, 6, 7, 1, "no positive mean |K̃|");
  fprintf(f, "set title 'area-normalised K̂ = K det(g)^{1/m}'\nset ylabel 'mean |K̂|'\n");
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[2], 8, 9, 10, 1, "no K̂ in this archive");
  fprintf(f, "set title 'anisotropy index log(AM/GM of g) = log(K̃/K̂)'\n"
             "set ylabel 'median anisotropy index'\n");
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[3], 11, 12, 13, 0,
                        "no anisotropy in this archive");
  fprintf(f, "unset multiplot\n");
}

/* variant 0: curvature_depth_*, 1: accuracy_depth_*. */
static int analysis_plot_depth(const analysis_data *D, int t, int r, const char *dir, int variant,
                               analysis_plot *P, int *made) {
  analysis_band_plot B = {.D = D, .t = t, .r = r, .accuracy = variant};
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
             "over seeds with 95%% t interval", B.desc);
  *made = 1;
  return analysis_write_dat_gp(dir, P, &B, analysis_depth_dat, analysis_depth_gp);
}

static int analysis_prefix_dat(FILE *f, void *ctx) {
  analysis_band_plot *B = ctx;
  const analysis_data *D = B->D;
  int t = B->t, r = B->r;
  fprintf(f, "# prefix K_absmean K_band_lo K_band_hi Kt_absmean Kt_band_lo Kt_band_hi logdet "
             "logdet_band_lo logdet_band_hi Kh_absmean Kh_band_lo Kh_band_hi aniso aniso_band_lo "
             "aniso_band_hi\n"
             "# (bands: 95%% t interval over seeds; K bands clipped below at mean/1000 for the "
             "log axis; exact values in prefix.csv)\n");
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
      fprintf(f, "%d", l);
      analysis_dat_band(f, &p[l - 1].m[MEASURE_K_ABS], 1, &B->valid[0][b]);
      analysis_dat_band(f, &p[l - 1].m[MEASURE_KT_ABS], 1, &B->valid[1][b]);
      analysis_dat_band(f, &p[l - 1].m[MEASURE_LOGDET], 0, &B->valid[2][b]);
      analysis_dat_band(f, &p[l - 1].m[MEASURE_KH_ABS], 1, &B->valid[3][b]);
      analysis_dat_band(f, &p[l - 1].m[MEASURE_ANISO], 0, &B->valid[4][b]);
      fprintf(f, "\n");
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
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[0], 2, 3, 4, 1, "no positive mean |K|");
  fprintf(f, "set title 'trace-normalised K̃ (grows with anisotropy)'\nset ylabel 'mean |K̃|'\n");
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[1], 5, 6, 7, 1, "no positive mean |K̃|");
  fprintf(f, "set title 'area-normalised K̂'\nset ylabel 'mean |K̂|'\n");
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[3], 11, 12, 13, 1, "no K̂ in this archive");
  fprintf(f, "set title 'contraction: log det g (falls when layers shrink)'\n"
             "set ylabel 'mean log det g'\n");
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[2], 8, 9, 10, 0, "no log det g values");
  fprintf(f, "set title 'anisotropy index log(AM/GM of g)'\nset ylabel 'median anisotropy index'\n");
  analysis_gp_band_plot(f, dat, B->nb, B->archs, B->valid[4], 14, 15, 16, 0,
                        "no anisotropy in this archive");
  fprintf(f, "unset multiplot\n");
}

/* prefix_*: accumulation under composition in each arch's deepest models. */
static int analysis_plot_prefix(const analysis_data *D, int t, int r, const char *dir, int variant,
                                analysis_plot *P, int *made) {
  analysis_band_plot B = {.D = D, .t = t, .r = r};
  char tag[ANALYSIS_NAME_LEN + 32];
  analysis_plot_label(D, t, r, tag, sizeof tag, B.desc, sizeof B.desc);
  snprintf(P->name, sizeof P->name, "prefix_%s", tag);
  snprintf(P->caption, sizeof P->caption,
           "Accumulation under composition (%s): mean |K|, mean |K̃|, mean |K̂|, mean log det g "
           "and the median anisotropy index after each layer l of the deepest models, mean over "
           "seeds with 95%% t interval", B.desc);
  *made = 1;
  return analysis_write_dat_gp(dir, P, &B, analysis_prefix_dat, analysis_prefix_gp);
}

/* ---- per-point K̃ (needs /points) ---- */

/* The deepest depth index with a done cell carrying points for (a, t, r), or -1. */
static int analysis_points_depth(const analysis_data *D, int a, int t, int r) {
  for (int d = D->n_depth - 1; d >= 0; d--)
    for (int s = 0; s < D->n_seed; s++) {
      const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
      if (c && c->n_points > 0 && c->pt_S_tilde && c->pt_x && c->depth >= 1) return d;
    }
  return -1;
}

/* Per-point curvature of the last prefix of a cell: hat = 0 K̃ = S̃/(m(m−1)),
 * hat = 1 K̂ = S/(m(m−1)) · exp(log det g / m). NaN at a point whose class
 * (pt_class, when the archive has it) is neither flat nor curved, and when
 * the arrays are missing. */
static double analysis_point_value(const cs_cell_result *c, int i, int hat) {
  int m = c->m;
  if (m < 2 || c->depth < 1) return NAN;
  size_t k = (size_t)(c->depth - 1) * c->n_points + i;
  if (c->pt_class && c->pt_class[k] != GEOM_FLAT && c->pt_class[k] != GEOM_CURVED) return NAN;
  if (hat)
    return c->pt_S && c->pt_logdet_g ? c->pt_S[k] / (m * (m - 1.0)) * exp(c->pt_logdet_g[k] / m) : NAN;
  return c->pt_S_tilde ? c->pt_S_tilde[k] / (m * (m - 1.0)) : NAN;
}

static double analysis_point_Kt(const cs_cell_result *c, int i) { return analysis_point_value(c, i, 0); }

/* ---- (4) histograms of per-point K̃ and K̂ at the deepest depth ---- */

typedef struct {
  const analysis_data *D;
  int t, r;
  int hat;                       /* 0: K̃ (hist_Kt_*), 1: K̂ (hist_Kh_*) */
  const char *sym;               /* "K̃" or "K̂" */
  char desc[ANALYSIS_NAME_LEN + 64];
  int pd[ARCH_COUNT];            /* per arch: the depth index drawn, or -1 */
  double cmax, k0, smax, width;  /* signed log scale: slog(cmax, k0) = smax; bin width in slog */
  double frac[ARCH_COUNT][ANALYSIS_HIST_BINS]; /* fraction of the arch's points per bin */
  int depth_of[ARCH_COUNT], present[ARCH_COUNT];
} analysis_hist;

/* The cell of arch a, seed s at H->pd[a] when it carries per-point values, or NULL. */
static const cs_cell_result *analysis_hist_cell(const analysis_hist *H, int a, int s) {
  if (H->pd[a] < 0) return NULL;
  const cs_cell_result *c = H->D->cell[analysis_cidx(H->D, a, H->t, H->pd[a], H->r, s)];
  return c && c->pt_S_tilde && c->m >= 2 ? c : NULL;
}

/* The scale: k0 = 1e-4 × the 99% quantile of |value| pooled over every arch
 * at its deepest depth with points. 0 when there is no finite value. */
static int analysis_hist_scale(analysis_hist *H, int *any) {
  const analysis_data *D = H->D;
  size_t total = 0;
  *any = 0;
  for (int a = 0; a < D->n_arch; a++) {
    H->pd[a] = analysis_points_depth(D, a, H->t, H->r);
    for (int s = 0; s < D->n_seed; s++)
      if (analysis_hist_cell(H, a, s)) total += (size_t)analysis_hist_cell(H, a, s)->n_points;
  }
  if (total == 0) return CS_OK;
  double *all;
  CS_CHECK(CS_CALLOC(all, total));
  size_t n_all = 0;
  for (int a = 0; a < D->n_arch; a++)
    for (int s = 0; s < D->n_seed; s++) {
      const cs_cell_result *c = analysis_hist_cell(H, a, s);
      for (int i = 0; c && i < c->n_points; i++) {
        double v = analysis_point_value(c, i, H->hat);
        if (isfinite(v)) all[n_all++] = fabs(v);
      }
    }
  if (n_all > 0) {
    qsort(all, n_all, sizeof *all, cs_compare_doubles);
    H->cmax = cs_quantile_sorted(all, (int)n_all, 0.99);
    if (!(H->cmax > 0)) H->cmax = 1e-12;
    H->k0 = H->cmax * 1e-4;
    H->smax = analysis_slog(H->cmax, H->k0);
    H->width = 2.0 * H->smax / ANALYSIS_HIST_BINS;
    *any = 1;
  }
  free(all);
  return CS_OK;
}

/* Per arch, the fraction of its finite points in each bin (end bins take the rest). */
static void analysis_hist_count(analysis_hist *H) {
  const analysis_data *D = H->D;
  for (int a = 0; a < D->n_arch; a++) {
    memset(H->frac[a], 0, sizeof H->frac[a]);
    H->depth_of[a] = H->pd[a] >= 0 ? D->depth[H->pd[a]] : 0;
    int k = 0;
    for (int s = 0; s < D->n_seed; s++) {
      const cs_cell_result *c = analysis_hist_cell(H, a, s);
      for (int i = 0; c && i < c->n_points; i++) {
        double v = analysis_point_value(c, i, H->hat);
        if (!isfinite(v)) continue;
        int b = (int)floor((analysis_slog(v, H->k0) + H->smax) / H->width);
        if (b < 0) b = 0;
        if (b >= ANALYSIS_HIST_BINS) b = ANALYSIS_HIST_BINS - 1;
        H->frac[a][b] += 1.0, k++;
      }
    }
    for (int b = 0; k && b < ANALYSIS_HIST_BINS; b++) H->frac[a][b] /= k;
    H->present[a] = k > 0;
  }
}

static int analysis_hist_dat(FILE *f, void *ctx) {
  const analysis_hist *H = ctx;
  const analysis_data *D = H->D;
  fprintf(f, "# bin_center_slog bin_center_Kt");
  for (int a = 0; a < D->n_arch; a++)
    if (H->present[a]) fprintf(f, " %s(depth%d)", config_arch_name(D->arch[a]), H->depth_of[a]);
  fprintf(f, "\n# one block; slog = sign(Kt) log10(1 + |Kt|/k0), k0 = %.6g; fraction of the "
             "arch's points in each bin of width %.6g in slog\n", H->k0, H->width);
  for (int b = 0; b < ANALYSIS_HIST_BINS; b++) {
    double c = -H->smax + (b + 0.5) * H->width;
    analysis_dat_num(f, c);
    analysis_dat_num(f, (c < 0 ? -1.0 : 1.0) * H->k0 * (pow(10.0, fabs(c)) - 1.0));
    for (int a = 0; a < D->n_arch; a++)
      if (H->present[a]) analysis_dat_num(f, H->frac[a][b]);
    fprintf(f, "\n");
  }
  return CS_OK;
}

static void analysis_hist_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_hist *H = ctx;
  const analysis_data *D = H->D;
  analysis_gp_header(f, P->name, P->caption, 1000, 560);
  fprintf(f, "set title 'per-point %s at the deepest depth — %s'\n", H->sym, H->desc);
  fprintf(f, "set xlabel '%s  (signed log axis)'\nset ylabel 'fraction of points'\n"
             "set key top right\n",
          H->hat ? "K̂ = K det(g)^{1/m}" : "K̃ = K tr(g)/m");
  analysis_gp_slog_tics(f, "xtics", H->k0, H->cmax);
  fprintf(f, "set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 2 lc rgb '#444444'\n");
  fprintf(f, "set xrange [%.10g:%.10g]\nset yrange [0:*]\nplot ", -H->smax, H->smax);
  int col = 3, first = 1;
  for (int a = 0; a < D->n_arch; a++) {
    if (!H->present[a]) continue;
    fprintf(f, "%s'%s' using 1:%d with histeps lw 2 lc rgb '%s' title '%s (depth %d)'",
            first ? "" : ", \\\n     ", dat, col++, config_arch_color(D->arch[a]),
            config_arch_name(D->arch[a]), H->depth_of[a]);
    first = 0;
  }
  fprintf(f, "\n");
}

/* variant 0: histogram of K̃ (hist_Kt_*), 1: of K̂ (hist_Kh_*); *made = 0
 * when no arch has a finite per-point value. */
static int analysis_plot_hist(const analysis_data *D, int t, int r, const char *dir, int variant,
                              analysis_plot *P, int *made) {
  analysis_hist H = {.D = D, .t = t, .r = r, .hat = variant, .sym = variant ? "K̂" : "K̃"};
  char tag[ANALYSIS_NAME_LEN + 32];
  analysis_plot_label(D, t, r, tag, sizeof tag, H.desc, sizeof H.desc);
  CS_CHECK(analysis_hist_scale(&H, made));
  if (!*made) return CS_OK;
  analysis_hist_count(&H);
  const char *sym = H.sym;
  snprintf(P->name, sizeof P->name, "hist_%s_%s", H.hat ? "Kh" : "Kt", tag);
  snprintf(P->caption, sizeof P->caption,
           "Per-point %s curvature %s of the last layer at each arch's deepest depth "
           "(%s), pooled over seeds: fraction of points per bin on a signed log axis "
           "sign(%s)·log10(1 + |%s|/k0), k0 = 1e-4 × the pooled 99%% quantile of |%s| (larger "
           "values in the end bins; flat points sit in the middle bin); %s",
           H.hat ? "area-normalised" : "trace-normalised", sym, H.desc, sym, sym, sym,
           D->has_point_class ? "points classified flat or curved only (unresolved and "
                                "degenerate ones excluded)"
                              : "every finite point (this archive has no point classification)");
  return analysis_write_dat_gp(dir, P, &H, analysis_hist_dat, analysis_hist_gp);
}

/* ---- (5) m = 2: K̃ over the input plane ---- */

typedef struct {
  const analysis_data *D;
  int t, r;
  char desc[ANALYSIS_NAME_LEN + 64];
  int na;                                /* panels: one model per arch with points */
  const cs_cell_result *cell[ARCH_COUNT];
  int64_t seed_of[ARCH_COUNT];
  int arch_of[ARCH_COUNT];
  double cmax, k0, smax;                 /* colour scale: slog(cmax, k0) = smax */
} analysis_map;

/* Per arch, the first seed at its deepest depth with m = 2 per-point values. */
static void analysis_map_cells(analysis_map *M) {
  const analysis_data *D = M->D;
  for (int a = 0; a < D->n_arch; a++) {
    int d = analysis_points_depth(D, a, M->t, M->r);
    for (int s = 0; d >= 0 && s < D->n_seed; s++) {
      const cs_cell_result *c = D->cell[analysis_cidx(D, a, M->t, d, M->r, s)];
      if (c && c->pt_S_tilde && c->pt_x && c->m == 2 && c->n_points > 0) {
        M->cell[M->na] = c, M->seed_of[M->na] = D->seed[s], M->arch_of[M->na] = a, M->na++;
        break;
      }
    }
  }
}

/* One colour scale for every panel: signed log, 3 decades below the largest |K̃|. */
static int analysis_map_scale(analysis_map *M) {
  size_t total = 0;
  for (int i = 0; i < M->na; i++) total += (size_t)M->cell[i]->n_points;
  double *absv;
  CS_CHECK(CS_CALLOC(absv, total));
  size_t k = 0;
  for (int i = 0; i < M->na; i++)
    for (int p = 0; p < M->cell[i]->n_points; p++) {
      double v = analysis_point_Kt(M->cell[i], p);
      if (isfinite(v)) absv[k++] = fabs(v);
    }
  qsort(absv, k, sizeof *absv, cs_compare_doubles);
  M->cmax = k ? absv[k - 1] : 1.0;
  free(absv);
  if (!(M->cmax > 0)) M->cmax = 1e-12;
  M->k0 = M->cmax * 1e-3;
  M->smax = analysis_slog(M->cmax, M->k0);
  return CS_OK;
}

/* Panel i's three blocks: the task's test points of class 0 and of class 1
 * (x1 x2), then the model's evaluation points (x1 x2 Kt slog). */
static int analysis_map_dat_panel(FILE *f, const analysis_map *M, int i) {
  const analysis_data *D = M->D;
  const cs_cell_result *c = M->cell[i];
  const char *arch = config_arch_name(D->arch[M->arch_of[i]]);
  cs_dataset ds = {0};
  int n_cls = D->regime[M->r].cfg.test_points;
  if (n_cls > ANALYSIS_MAP_CLASS_POINTS || n_cls < 1) n_cls = ANALYSIS_MAP_CLASS_POINTS;
  CS_CHECK(task_generate(D->task[M->t], 2, n_cls, M->seed_of[i], SPLIT_TEST, 0.0, &ds));
  for (int cls = 0; cls < 2; cls++) {
    fprintf(f, "%s# arch %s seed %lld depth %d: test points of class %d\n", i || cls ? "\n\n" : "",
            arch, (long long)M->seed_of[i], c->depth, cls);
    for (int p = 0; p < ds.n; p++)
      if (ds.y[p] == cls) fprintf(f, "%.10g %.10g\n", ds.x[2 * p], ds.x[2 * p + 1]);
  }
  task_dataset_free(&ds);
  fprintf(f, "\n\n# arch %s seed %lld depth %d: evaluation points x1 x2 Kt slog\n", arch,
          (long long)M->seed_of[i], c->depth);
  for (int p = 0; p < c->n_points; p++) {
    fprintf(f, "%.10g %.10g", c->pt_x[2 * p], c->pt_x[2 * p + 1]);
    double v = analysis_point_Kt(c, p);
    analysis_dat_num(f, v);
    analysis_dat_num(f, isfinite(v) ? analysis_slog(v, M->k0) : NAN);
    fprintf(f, "\n");
  }
  return CS_OK;
}

static int analysis_map_dat(FILE *f, void *ctx) {
  const analysis_map *M = ctx;
  fprintf(f, "# per arch three blocks: test points of class 0 (x1 x2), of class 1 (x1 x2),\n"
             "# evaluation points (x1 x2 Kt slog) of the model, slog = sign(Kt) log10(1 + |Kt|/k0)\n"
             "# with k0 = %.6g\n", M->k0);
  for (int i = 0; i < M->na; i++) CS_CHECK(analysis_map_dat_panel(f, M, i));
  return CS_OK;
}

static void analysis_map_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_map *M = ctx;
  const analysis_data *D = M->D;
  int cols = M->na > 2 ? 2 : M->na, rows = (M->na + cols - 1) / cols;
  analysis_gp_header(f, P->name, P->caption, 640 * cols + 120, 560 * rows + 40);
  fprintf(f, "set size ratio -1\nset xlabel 'x1'\nset ylabel 'x2'\nset key below\n"
             "set palette defined (-1 '#2166ac', 0 '#f2f2f2', 1 '#b2182b')\n"
             "set cbrange [%.10g:%.10g]\nset cblabel 'K̃ (signed log scale)'\n",
          -M->smax, M->smax);
  analysis_gp_slog_tics(f, "cbtics", M->k0, M->cmax);
  fprintf(f, "set multiplot layout %d,%d title 'K̃ over the input plane — %s'\n", rows, cols, M->desc);
  for (int i = 0; i < M->na; i++) {
    fprintf(f, "set title '%s (seed %lld, depth %d)'\n", config_arch_name(D->arch[M->arch_of[i]]),
            (long long)M->seed_of[i], M->cell[i]->depth);
    fprintf(f,
            "plot '%s' index %d using 1:2 with points pt 7 ps 0.35 lc rgb '#9ecae1' title 'class 0', \\\n"
            "     '%s' index %d using 1:2 with points pt 7 ps 0.35 lc rgb '#fdae6b' title 'class 1', \\\n"
            "     '%s' index %d using 1:2:4 with points pt 7 ps 1.4 lc palette notitle, \\\n"
            "     '%s' index %d using 1:2 with points pt 6 ps 1.4 lc rgb '#333333' lw 0.5 "
            "title 'evaluation points'\n",
            dat, 3 * i, dat, 3 * i + 1, dat, 3 * i + 2, dat, 3 * i + 2);
  }
  fprintf(f, "unset multiplot\n");
}

/* map_Kt_* (m = 2 only): K̃ over the input plane with the task's classes, one
 * panel per arch; *made = 0 when no arch has m = 2 per-point values. */
static int analysis_plot_map(const analysis_data *D, int t, int r, const char *dir, int variant,
                             analysis_plot *P, int *made) {
  *made = 0;
  if (D->regime[r].cfg.input_dim != 2 || analysis_fields_present(D, t, r)) return CS_OK;
  analysis_map M = {.D = D, .t = t, .r = r};
  char tag[ANALYSIS_NAME_LEN + 32];
  analysis_plot_label(D, t, r, tag, sizeof tag, M.desc, sizeof M.desc);
  analysis_map_cells(&M);
  if (M.na == 0) return CS_OK;
  CS_CHECK(analysis_map_scale(&M));
  snprintf(P->name, sizeof P->name, "map_Kt_%s", tag);
  snprintf(P->caption, sizeof P->caption,
           "Trace-normalised curvature K̃ of the last layer over the input plane (%s): evaluation "
           "points coloured by K̃ on a signed log scale sign(K̃)·log10(1 + |K̃|/k0), k0 = 1e-3 × "
           "the largest |K̃| (one scale for all panels; flat points are white%s), one model per "
           "arch at its deepest depth, over the task's test set drawn by class", M.desc,
           D->has_point_class ? "; unresolved and degenerate points left uncoloured" : "");
  *made = 1;
  return analysis_write_dat_gp(dir, P, &M, analysis_map_dat, analysis_map_gp);
}

/* ---- running gnuplot ---- */

/* The gnuplot to use: opt->gnuplot (a path, or a name execvp searches on
 * PATH), else "gnuplot". Returns 1 when it can be run: a path must be an
 * executable file; a bare name must answer `NAME --version` with exit 0. */
static int analysis_find_gnuplot(const analysis_options *opt, char *path, size_t len) {
  snprintf(path, len, "%s", opt->gnuplot && *opt->gnuplot ? opt->gnuplot : "gnuplot");
  if (strchr(path, '/')) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
  }
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, 0), dup2(null, 1), dup2(null, 2);
    char *argv[] = {path, (char *)"--version", NULL};
    execvp(path, argv);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* gnuplot's output (stdout and stderr) as one line: the last `len` - 1
 * bytes of it, newlines as " | ", blank lines dropped. */
static void analysis_tail_line(const char *text, size_t n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && used + 4 < len; i++) {
    char c = text[i];
    if (c == '\n' || c == '\r') {
      if (used > 0 && strcmp(buf + (used >= 3 ? used - 3 : 0), " | ") != 0)
        used += (size_t)snprintf(buf + used, len - used, " | ");
      continue;
    }
    buf[used++] = c;
    buf[used] = '\0';
  }
  while (used >= 3 && strcmp(buf + used - 3, " | ") == 0) buf[used -= 3] = '\0';
  while (used > 0 && buf[used - 1] == ' ') buf[--used] = '\0';
}

/* Read fd to its end (so that the writer never blocks on a full pipe),
 * keeping the last cap bytes in out: their count. */
static size_t analysis_read_tail(int fd, char *out, size_t cap) {
  size_t n = 0;
  for (;;) {
    char chunk[512];
    ssize_t got = read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (n + (size_t)got > cap) {
      size_t drop = n + (size_t)got - cap;
      if (drop > n) drop = n;
      memmove(out, out + drop, n - drop);
      n -= drop;
    }
    size_t keep = (size_t)got < cap ? (size_t)got : cap;
    memcpy(out + n, chunk + (size_t)got - keep, keep);
    n += keep;
  }
  return n;
}

/* Run `gnuplot NAME.gp` in dir. Returns 1 when it exited 0 and NAME.png
 * exists and is not empty; otherwise why into why (gnuplot's own output,
 * e.g. `"x.gp" line 3: undefined variable`, and its exit status). */
static int analysis_render(const char *gnuplot, const char *dir, const char *name, char *why,
                           size_t why_len) {
  char script[ANALYSIS_NAME_LEN + 80], png[4096 + ANALYSIS_NAME_LEN + 80];
  snprintf(script, sizeof script, "%s.gp", name);
  snprintf(png, sizeof png, "%s/%s.png", dir, name);
  unlink(png); /* a stale figure must not pass for a fresh one */
  snprintf(why, why_len, "could not be started");
  int fds[2] = {-1, -1};
  pid_t pid = pipe(fds) == 0 ? fork() : -1;
  if (pid == 0) {
    close(fds[0]);
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, 0);
    dup2(fds[1], 1), dup2(fds[1], 2);
    if (chdir(dir) != 0) {
      dprintf(2, "cannot enter %s: %s\n", dir, strerror(errno));
      _exit(126);
    }
    char *argv[] = {(char *)"gnuplot", script, NULL};
    execvp(gnuplot, argv);
    dprintf(2, "cannot run %s: %s\n", gnuplot, strerror(errno));
    _exit(127);
  }
  if (fds[1] >= 0) close(fds[1]);
  // keep the end of the output (the error is gnuplot's last words)
  char out[2048];
  size_t n = pid > 0 ? analysis_read_tail(fds[0], out, sizeof out) : 0;
  if (fds[0] >= 0) close(fds[0]);
  if (pid < 0) return 0;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 0;
  char said[900];
  analysis_tail_line(out, n, said, sizeof said);
  struct stat st;
  int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (ok && stat(png, &st) == 0 && st.st_size > 0) return 1;
  if (!WIFEXITED(status))
    snprintf(why, why_len, "killed by signal %d%s%s", WTERMSIG(status), *said ? ": " : "", said);
  else if (!ok)
    snprintf(why, why_len, "exit status %d%s%s", WEXITSTATUS(status), *said ? ": " : "",
             *said ? said : " (no message)");
  else
    snprintf(why, why_len, "exit status 0 but no %s.png written%s%s", name, *said ? ": " : "", said);
  return 0;
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

int analysis_write_plots(const analysis_data *D, const char *dir, analysis_plot **plots, int *n_plots,
                         analysis_outcome *out) {
  int cap = 0, rc = CS_OK;
  *plots = NULL, *n_plots = 0;
  for (int t = 0; t < D->n_task && !rc; t++)
    for (int r = 0; r < D->n_regime && !rc; r++) {
      int any = 0;
      for (int a = 0; a < D->n_arch; a++)
        for (int d = 0; d < D->n_depth; d++) any |= D->group[analysis_gidx(D, a, t, d, r)].n_done > 0;
      if (!any) continue;
      /* the kinds above, then each section's figure (sections.c) */
      for (int k = 0; k < ANALYSIS_N_KINDS + ANALYSIS_N_SECTIONS && !rc; k++) {
        analysis_plot *P = analysis_new_plot(plots, n_plots, &cap);
        if (!P) return cs_error(CS_ERR_NOMEM, "out of memory listing plots");
        int made = 0;
        if (k < ANALYSIS_N_KINDS)
          rc = ANALYSIS_PLOT_KINDS[k].write(D, t, r, dir, ANALYSIS_PLOT_KINDS[k].variant, P, &made);
        else if (ANALYSIS_SECTIONS[k - ANALYSIS_N_KINDS].plot)
          rc = ANALYSIS_SECTIONS[k - ANALYSIS_N_KINDS].plot(D, t, r, dir, 0, P, &made);
        if (!made) (*n_plots)--;
      }
    }
  if (rc) return rc;
  if (out) out->plots_scripted = *n_plots;
  if (!D->opt.render) return CS_OK;
  char gnuplot[4096];
  if (!analysis_find_gnuplot(&D->opt, gnuplot, sizeof gnuplot)) {
    analysis_warn(out, "gnuplot not found: plots skipped ('%s' %s; the .gp scripts and .dat data "
                       "are written, render them with 'gnuplot NAME.gp' in %s)",
                  gnuplot, strchr(gnuplot, '/') ? "is not an executable" : "does not run from PATH",
                  dir);
    return CS_OK;
  }
  // a plot gnuplot fails on is a failure of the run (analyze exits 1, the
  // first failure's message in out->plot_error); the others still render
  for (int i = 0; i < *n_plots; i++) {
    char why[900];
    (*plots)[i].rendered = analysis_render(gnuplot, dir, (*plots)[i].name, why, sizeof why);
    if ((*plots)[i].rendered) {
      if (out) out->plots_written++;
      continue;
    }
    if (!out) continue;
    if (out->plots_failed++ == 0)
      if (snprintf(out->plot_error, sizeof out->plot_error, "gnuplot (%s) failed on %s/%s.gp: %s",
                   gnuplot, dir, (*plots)[i].name, why) < 0)
        out->plot_error[0] = '\0';  // (a long message is cut, never lost whole)
  }
  if (out && out->plots_failed)
    analysis_warn(out, "%d of %d plots not rendered (gnuplot failed; the first failure is "
                       "reported below)", out->plots_failed, *n_plots);
  return CS_OK;
}


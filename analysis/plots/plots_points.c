/* plots_points.c — the figures of per-point curvature (cells with /points;
 * analysis/README.md, "Figures"), per task and regime:
 *   hist_Kt_*, hist_Kh_*  per arch at its deepest depth with points, pooled
 *                      over seeds: the share of its resolved (flat + curved)
 *                      points flat to rounding (a bar, left), and its curved
 *                      points binned on a signed log axis (right); points
 *                      flat, unresolved or degenerate are never binned
 *   map_Kt_*           m = 2: one model per arch, its evaluation points
 *                      coloured by K̃ where curved, flat ones in a pale
 *                      colour of their own, unresolved and degenerate ones
 *                      grey, over the task's test set drawn by class
 *                      (replaced by field_Kh_* of plots_fields.c when the
 *                      cells carry a curvature field)
 * A point's class is its pt_class; in a row without classification (no
 * pt_class) the row's (rounding.h): its finite points are curved in a
 * curved row, flat in a flat one. */
#include "plots.h"

#include "curvsweep/error.h"
#include "curvsweep/quantile.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ANALYSIS_HIST_BINS 41 /* odd: K̃ = 0 is the centre of the middle bin */
#define ANALYSIS_MAP_CLASS_POINTS 1500

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
 * hat = 1 K̂ = S/(m(m−1)) · exp(log det g / m); NaN when the arrays are missing. */
static double analysis_point_value(const cs_cell_result *c, int i, int hat) {
  int m = c->m;
  if (m < 2 || c->depth < 1) return NAN;
  size_t k = (size_t)(c->depth - 1) * c->n_points + i;
  if (hat)
    return c->pt_S && c->pt_logdet_g ? c->pt_S[k] / (m * (m - 1.0)) * exp(c->pt_logdet_g[k] / m) : NAN;
  return c->pt_S_tilde ? c->pt_S_tilde[k] / (m * (m - 1.0)) : NAN;
}

/* The class (geom.h) of point i of the last prefix of a cell of a row of
 * class row: its pt_class; without one, curved or flat as the row when
 * its value is finite, unresolved otherwise. */
static int analysis_point_class(const cs_cell_result *c, int i, int hat, analysis_row_class row) {
  if (c->pt_class) return c->pt_class[(size_t)(c->depth - 1) * c->n_points + i];
  if (!isfinite(analysis_point_value(c, i, hat))) return GEOM_UNRESOLVED;
  return row == ANALYSIS_ROW_CURVED ? GEOM_CURVED : GEOM_FLAT;
}

/* How a point is shown: curved only in a curved row; a resolved point of a
 * row that is not curved is flat to rounding (claim 1's class of the row
 * decides, as for the whole panel of a field map); the others as classed. */
static int analysis_point_shown(const cs_cell_result *c, int i, int hat, analysis_row_class row) {
  int k = analysis_point_class(c, i, hat, row);
  return k == GEOM_CURVED && row != ANALYSIS_ROW_CURVED ? GEOM_FLAT : k;
}

/* The value drawn: the point's curvature when it is shown curved, NaN otherwise. */
static double analysis_point_drawn(const cs_cell_result *c, int i, int hat, analysis_row_class row) {
  return analysis_point_shown(c, i, hat, row) == GEOM_CURVED ? analysis_point_value(c, i, hat) : NAN;
}

/* ---- histograms of per-point K̃ and K̂ at the deepest depth ---- */

typedef struct {
  const analysis_data *D;
  int t, r;
  int hat;                       /* 0: K̃ (hist_Kt_*), 1: K̂ (hist_Kh_*) */
  const char *sym, *col;         /* "K̃" or "K̂"; the .dat column "Kt" or "Kh" */
  char desc[ANALYSIS_NAME_LEN + 64];
  int pd[ARCH_COUNT];            /* per arch: the depth index drawn, or -1 */
  analysis_row_class cls[ARCH_COUNT]; /* per arch: its row's class there */
  double cmax, k0, smax, width;  /* signed log scale: slog(cmax, k0) = smax; bin width in slog */
  double frac[ARCH_COUNT][ANALYSIS_HIST_BINS]; /* curved points per bin / resolved points */
  double flat[ARCH_COUNT], curved[ARCH_COUNT]; /* shares of the resolved points */
  int resolved[ARCH_COUNT];      /* flat + curved points */
  int n_binned;                  /* archs with a curved point: the first blocks of the .dat */
  double fmax;                   /* the largest bin */
} analysis_hist;

/* The cell of arch a, seed s at H->pd[a] when it carries per-point values, or NULL. */
static const cs_cell_result *analysis_hist_cell(const analysis_hist *H, int a, int s) {
  if (H->pd[a] < 0) return NULL;
  const cs_cell_result *c = H->D->cell[analysis_cidx(H->D, a, H->t, H->pd[a], H->r, s)];
  return c && c->pt_S_tilde && c->m >= 2 ? c : NULL;
}

/* The scale: k0 = 1e-4 × the 99% quantile of |value| of the curved points
 * pooled over every arch at its deepest depth with points (cmax = 0: none). */
static int analysis_hist_scale(analysis_hist *H) {
  const analysis_data *D = H->D;
  size_t total = 0;
  for (int a = 0; a < D->n_arch; a++) {
    H->pd[a] = analysis_points_depth(D, a, H->t, H->r);
    H->cls[a] = H->pd[a] >= 0 ? analysis_row_class_of(D, a, H->t, H->pd[a], H->r, D->depth[H->pd[a]])
                              : ANALYSIS_ROW_UNRESOLVED;
    for (int s = 0; s < D->n_seed; s++)
      if (analysis_hist_cell(H, a, s)) total += (size_t)analysis_hist_cell(H, a, s)->n_points;
  }
  H->cmax = 0;
  if (total == 0) return CS_OK;
  double *all;
  CS_CHECK(CS_CALLOC(all, total));
  size_t n_all = 0;
  for (int a = 0; a < D->n_arch; a++)
    for (int s = 0; s < D->n_seed; s++) {
      const cs_cell_result *c = analysis_hist_cell(H, a, s);
      for (int i = 0; c && i < c->n_points; i++) {
        double v = analysis_point_drawn(c, i, H->hat, H->cls[a]);
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
  }
  free(all);
  return CS_OK;
}

/* Per arch, its flat and curved points among the resolved ones, and the
 * curved ones per bin (end bins take the rest). */
static void analysis_hist_count(analysis_hist *H) {
  const analysis_data *D = H->D;
  for (int a = 0; a < D->n_arch; a++) {
    memset(H->frac[a], 0, sizeof H->frac[a]);
    int n_flat = 0, n_curved = 0;
    for (int s = 0; s < D->n_seed; s++) {
      const cs_cell_result *c = analysis_hist_cell(H, a, s);
      for (int i = 0; c && i < c->n_points; i++) {
        int k = analysis_point_shown(c, i, H->hat, H->cls[a]);
        n_flat += k == GEOM_FLAT;
        double v = analysis_point_drawn(c, i, H->hat, H->cls[a]);
        if (k != GEOM_CURVED || !isfinite(v) || !(H->cmax > 0)) continue;
        int b = (int)floor((analysis_slog(v, H->k0) + H->smax) / H->width);
        if (b < 0) b = 0;
        if (b >= ANALYSIS_HIST_BINS) b = ANALYSIS_HIST_BINS - 1;
        H->frac[a][b] += 1.0, n_curved++;
      }
    }
    H->resolved[a] = n_flat + n_curved;
    for (int b = 0; H->resolved[a] && b < ANALYSIS_HIST_BINS; b++) {
      H->frac[a][b] /= H->resolved[a];
      if (H->frac[a][b] > H->fmax) H->fmax = H->frac[a][b];
    }
    H->flat[a] = H->resolved[a] ? (double)n_flat / H->resolved[a] : NAN;
    H->curved[a] = H->resolved[a] ? (double)n_curved / H->resolved[a] : NAN;
    H->n_binned += n_curved > 0;
  }
}

/* Blocks: one per arch with curved points (bins), then one of every arch's shares. */
static int analysis_hist_dat(FILE *f, void *ctx) {
  const analysis_hist *H = ctx;
  const analysis_data *D = H->D;
  fprintf(f, "# per-point %s of the last layer at each arch's deepest depth with points, pooled over seeds\n"
             "# blocks 0 .. %d: one per arch with curved points, its curved points binned on\n"
             "# slog = sign(%s) log10(1 + |%s|/k0), k0 = %.6g, bins of width %.6g in slog\n"
             "# (%s_frac: the arch's curved points in the bin over its resolved points);\n"
             "# last block: per arch the shares of its resolved points flat to rounding and curved\n"
             "# columns: bin_slog bin_center %s_frac\n",
          H->col, H->n_binned - 1, H->col, H->col, H->k0, H->width, H->col, H->col);
  int block = 0;
  for (int a = 0; a < D->n_arch; a++) {
    if (H->resolved[a] == 0 || !(H->curved[a] > 0)) continue;
    fprintf(f, "%s# arch %s, depth %d\n", block++ ? "\n\n" : "", config_arch_name(D->arch[a]), D->depth[H->pd[a]]);
    analysis_dat_row_key(f, D, a, H->t, H->pd[a], H->r, D->depth[H->pd[a]], -1);
    for (int b = 0; b < ANALYSIS_HIST_BINS; b++) {
      double c = -H->smax + (b + 0.5) * H->width;
      analysis_dat_num(f, c);
      analysis_dat_num(f, (c < 0 ? -1.0 : 1.0) * H->k0 * (pow(10.0, fabs(c)) - 1.0));
      analysis_dat_num(f, H->frac[a][b]);
      fprintf(f, "\n");
    }
  }
  fprintf(f, "%s# shares of the resolved points (class: the row's, 0 curved, 1 flat to rounding, 2 unresolved)\n"
             "# columns: bar flat_frac curved_frac resolved_points class\n", block ? "\n\n" : "");
  for (int a = 0, bar = 0; a < D->n_arch; a++) {
    if (H->resolved[a] == 0) continue;
    analysis_dat_row_key(f, D, a, H->t, H->pd[a], H->r, D->depth[H->pd[a]], -1);
    fprintf(f, "%d", bar++);
    analysis_dat_num(f, H->flat[a]), analysis_dat_num(f, H->curved[a]);
    fprintf(f, " %d %d\n", H->resolved[a], (int)H->cls[a]);
  }
  return CS_OK;
}

/* Two panels: the flat shares as bars (left), the curved points' histogram (right). */
static void analysis_hist_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_hist *H = ctx;
  const analysis_data *D = H->D;
  analysis_gp_header(f, P->name, P->caption, 1200, 560);
  fprintf(f, "set multiplot title 'per-point %s at the deepest depth — %s'\n", H->sym, H->desc);
  fprintf(f, "set tmargin at screen 0.86\nset bmargin at screen 0.22\n");
  /* left: one bar per arch with resolved points */
  int n_bar = 0;
  for (int a = 0; a < D->n_arch; a++) n_bar += H->resolved[a] > 0;
  fprintf(f, "set lmargin at screen 0.07\nset rmargin at screen 0.25\nunset key\n"
             "set title 'flat to rounding'\nset ylabel 'fraction of resolved points'\n"
             "set xrange [-0.6:%g]\nset yrange [0:1.12]\nset ytics 0.2\nset grid noxtics\n"
             "set style fill solid 0.55 border -1\nset xtics rotate by -35 (",
          n_bar - 0.4);
  for (int a = 0, bar = 0; a < D->n_arch; a++)
    if (H->resolved[a] > 0) fprintf(f, "%s'%s' %d", bar ? ", " : "", config_arch_name(D->arch[a]), bar), bar++;
  fprintf(f, ")\nplot ");
  for (int a = 0, bar = 0; a < D->n_arch; a++) {
    if (H->resolved[a] == 0) continue;
    fprintf(f, "%s'%s' index %d every ::%d::%d using 1:2:(0.7) with boxes fc rgb '%s' notitle, \\\n"
               "     '' index %d every ::%d::%d using 1:2:(sprintf('%%.0f%%%%', 100*$2)) with labels "
               "offset 0,0.8 notitle",
            bar ? ", \\\n     " : "", dat, H->n_binned, bar, bar, config_arch_color(D->arch[a]), H->n_binned,
            bar, bar);
    bar++;
  }
  fprintf(f, "\n");
  /* right: the curved points */
  fprintf(f, "set lmargin at screen 0.33\nset rmargin at screen 0.97\nset grid xtics ytics\n"
             "set title 'curved points (flat, unresolved and degenerate ones not binned)'\n"
             "set xlabel '%s  (signed log axis)'\nset ylabel 'fraction of resolved points'\n"
             "set key inside top right opaque box\nset ytics auto\nset xtics norotate\n",
          H->hat ? "K̂ = K det(g)^{1/m}" : "K̃ = K tr(g)/m");
  if (H->n_binned == 0) {
    fprintf(f, "set xtics auto\nset xlabel ''\n");
    analysis_gp_empty(f, "no curved point: every resolved point is flat to rounding");
    fprintf(f, "unset multiplot\n");
    return;
  }
  analysis_gp_slog_tics(f, "xtics", H->k0, H->cmax);
  fprintf(f, "set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 2 lc rgb '#444444'\n");
  /* room above the bins for the key */
  fprintf(f, "set xrange [%.10g:%.10g]\nset yrange [0:%.6g]\nplot ", -H->smax, H->smax, 1.4 * H->fmax);
  const char *sep = "";
  for (int a = 0, block = 0; a < D->n_arch; a++) {
    if (H->resolved[a] == 0) continue;
    int depth = D->depth[H->pd[a]];
    if (H->curved[a] > 0)
      fprintf(f, "%s'%s' index %d using 1:3 with histeps lw 2 lc rgb '%s' title '%s (depth %d)'", sep, dat,
              block++, config_arch_color(D->arch[a]), config_arch_name(D->arch[a]), depth);
    else /* nothing to bin: the legend says so */
      fprintf(f, "%skeyentry with boxes fc rgb '%s' fs solid 0.55 title '%s (depth %d): %s'", sep,
              config_arch_color(D->arch[a]), config_arch_name(D->arch[a]), depth,
              H->cls[a] == ANALYSIS_ROW_FLAT ? "every resolved point flat to rounding" : "no curved point");
    sep = ", \\\n     ";
  }
  fprintf(f, "\nunset arrow 1\nunset multiplot\n");
}

/* variant 0: histogram of K̃ (hist_Kt_*), 1: of K̂ (hist_Kh_*); *made = 0
 * when no arch has a resolved point. */
int analysis_plot_hist(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                       analysis_plot *P, int *made) {
  analysis_hist *H;
  CS_CHECK(CS_CALLOC(H, 1));
  *H = (analysis_hist){.D = D, .t = t, .r = r, .hat = variant, .sym = variant ? "K̂" : "K̃",
                       .col = variant ? "Kh" : "Kt"};
  char tag[ANALYSIS_NAME_LEN + 32];
  analysis_plot_label(D, t, r, tag, sizeof tag, H->desc, sizeof H->desc);
  int rc = analysis_hist_scale(H);
  *made = 0;
  if (!rc) {
    analysis_hist_count(H);
    for (int a = 0; a < D->n_arch; a++) *made |= H->resolved[a] > 0;
  }
  if (!rc && *made) {
    const char *sym = H->sym;
    snprintf(P->name, sizeof P->name, "hist_%s_%s", H->col, tag);
    snprintf(P->caption, sizeof P->caption,
             "Per-point %s curvature %s of the last layer at each arch's deepest depth (%s), pooled "
             "over seeds: left, the share of each arch's resolved (flat or curved) points that are flat "
             "to rounding; right, its curved points per bin on a signed log axis sign(%s)·log10(1 + "
             "|%s|/k0), k0 = 1e-4 × the pooled 99%% quantile of the curved |%s| (larger values in the end "
             "bins), as a fraction of its resolved points. Flat, unresolved and degenerate points are never "
             "binned: their values are rounding, not curvature",
             H->hat ? "area-normalised" : "trace-normalised", sym, H->desc, sym, sym, sym);
    rc = analysis_write_dat_gp(dir, P, H, analysis_hist_dat, analysis_hist_gp);
  }
  free(H);
  return rc;
}

/* ---- m = 2: K̃ over the input plane ---- */

typedef struct {
  const analysis_data *D;
  int t, r;
  char desc[ANALYSIS_NAME_LEN + 64];
  int na;                                /* panels: one model per arch with points */
  const cs_cell_result *cell[ARCH_COUNT];
  int64_t seed_of[ARCH_COUNT];
  int arch_of[ARCH_COUNT], d_of[ARCH_COUNT];
  analysis_row_class cls[ARCH_COUNT];    /* each panel's row */
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
        M->cell[M->na] = c, M->seed_of[M->na] = D->seed[s], M->arch_of[M->na] = a, M->d_of[M->na] = d;
        M->cls[M->na] = analysis_row_class_of(D, a, M->t, d, M->r, D->depth[d]);
        M->na++;
        break;
      }
    }
  }
}

/* One colour scale for every panel: signed log, 3 decades below the largest curved |K̃|. */
static void analysis_map_scale(analysis_map *M) {
  M->cmax = 0;
  for (int i = 0; i < M->na; i++)
    for (int p = 0; p < M->cell[i]->n_points; p++) {
      double v = analysis_point_drawn(M->cell[i], p, 0, M->cls[i]);
      if (isfinite(v) && fabs(v) > M->cmax) M->cmax = fabs(v);
    }
  if (!(M->cmax > 0)) M->cmax = 1.0;
  M->k0 = M->cmax * 1e-3;
  M->smax = analysis_slog(M->cmax, M->k0);
}

/* Panel i's five blocks: the task's test points of class 0 and of class 1
 * (x1 x2), the model's evaluation points (x1 x2 Kt slog point_class; Kt
 * NaN unless drawn), its flat points and its unresolved or degenerate
 * points (x1 x2). */
static int analysis_map_dat_panel(FILE *f, const analysis_map *M, int i) {
  const analysis_data *D = M->D;
  const cs_cell_result *c = M->cell[i];
  const char *arch = config_arch_name(D->arch[M->arch_of[i]]);
  cs_dataset ds = {0};
  int n_cls = D->regime[M->r].cfg.test_points;
  if (n_cls > ANALYSIS_MAP_CLASS_POINTS || n_cls < 1) n_cls = ANALYSIS_MAP_CLASS_POINTS;
  CS_CHECK(task_generate(D->task[M->t], 2, n_cls, M->seed_of[i], SPLIT_TEST, 0.0, &ds));
  for (int cls = 0; cls < 2; cls++) {
    fprintf(f, "%s# arch %s seed %lld depth %d: test points of class %d\n# columns: x1 x2\n",
            i || cls ? "\n\n" : "", arch, (long long)M->seed_of[i], c->depth, cls);
    for (int p = 0; p < ds.n; p++)
      if (ds.y[p] == cls) fprintf(f, "%.10g %.10g\n", ds.x[2 * p], ds.x[2 * p + 1]);
  }
  task_dataset_free(&ds);
  fprintf(f, "\n\n# arch %s seed %lld depth %d: evaluation points (row class %d)\n# columns: x1 x2 Kt slog point_class\n",
          arch, (long long)M->seed_of[i], c->depth, (int)M->cls[i]);
  analysis_dat_row_key(f, D, M->arch_of[i], M->t, M->d_of[i], M->r, c->depth, c->cell_id);
  for (int p = 0; p < c->n_points; p++) {
    fprintf(f, "%.10g %.10g", c->pt_x[2 * p], c->pt_x[2 * p + 1]);
    double v = analysis_point_drawn(c, p, 0, M->cls[i]);
    analysis_dat_num(f, v);
    analysis_dat_num(f, isfinite(v) ? analysis_slog(v, M->k0) : NAN);
    fprintf(f, " %d\n", analysis_point_class(c, p, 0, M->cls[i]));
  }
  for (int want = 0; want < 2; want++) {
    int rows = 0;
    fprintf(f, "\n\n# %s points (x1 x2)\n# columns: x1 x2\n", want ? "unresolved or degenerate" : "flat to rounding");
    for (int p = 0; p < c->n_points; p++) {
      int k = analysis_point_shown(c, p, 0, M->cls[i]);
      if (k == GEOM_CURVED || (k == GEOM_FLAT) != !want) continue;
      fprintf(f, "%.10g %.10g\n", c->pt_x[2 * p], c->pt_x[2 * p + 1]), rows++;
    }
    if (!rows) fprintf(f, "NaN NaN\n"); /* an empty block still needs a line gnuplot can skip */
  }
  return CS_OK;
}

static int analysis_map_dat(FILE *f, void *ctx) {
  const analysis_map *M = ctx;
  fprintf(f, "# per arch five blocks: test points of class 0 (x1 x2), of class 1 (x1 x2), the\n"
             "# evaluation points of the model (x1 x2 Kt slog point_class), its points flat to\n"
             "# rounding (x1 x2) and its unresolved or degenerate points (x1 x2);\n"
             "# slog = sign(Kt) log10(1 + |Kt|/k0) with k0 = %.6g; Kt and slog are NaN unless the\n"
             "# point is curved in a curved row (analysis/stats/rounding.c); point_class: 0 degenerate,\n"
             "# 1 flat, 2 curved, 3 unresolved\n", M->k0);
  for (int i = 0; i < M->na; i++) CS_CHECK(analysis_map_dat_panel(f, M, i));
  return CS_OK;
}

static void analysis_map_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_map *M = ctx;
  const analysis_data *D = M->D;
  int cols = M->na > 2 ? 2 : M->na, rows = (M->na + cols - 1) / cols;
  analysis_gp_header(f, P->name, P->caption, 640 * cols + 120, 600 * rows + 40);
  fprintf(f, "set size ratio -1\nset xlabel 'x1'\nset ylabel 'x2'\nset key below\n"
             "set palette defined (-1 '#2166ac', 0 '#f2f2f2', 1 '#b2182b')\n"
             "set cbrange [%.10g:%.10g]\nset cblabel 'K̃ of curved points (signed log scale)'\n",
          -M->smax, M->smax);
  analysis_gp_slog_tics(f, "cbtics", M->k0, M->cmax);
  fprintf(f, "set multiplot layout %d,%d title 'K̃ over the input plane — %s'\n", rows, cols, M->desc);
  for (int i = 0; i < M->na; i++) {
    fprintf(f, "set title '%s (seed %lld, depth %d)%s'\n", config_arch_name(D->arch[M->arch_of[i]]),
            (long long)M->seed_of[i], M->cell[i]->depth,
            M->cls[i] == ANALYSIS_ROW_CURVED ? "" : M->cls[i] == ANALYSIS_ROW_FLAT ? ": flat to rounding" : ": unresolved");
    fprintf(f,
            "plot '%s' index %d using 1:2 with points pt 7 ps 0.35 lc rgb '#9ecae1' notitle, \\\n"
            "     '%s' index %d using 1:2 with points pt 7 ps 0.35 lc rgb '#fdae6b' notitle, \\\n"
            "     keyentry with points pt 7 ps 1 lc rgb '#9ecae1' title 'test class 0', \\\n"
            "     keyentry with points pt 7 ps 1 lc rgb '#fdae6b' title 'test class 1', \\\n"
            "     '%s' index %d using 1:2:4 with points pt 7 ps 1.4 lc palette notitle, \\\n"
            "     '%s' index %d using 1:2 with points pt 7 ps 1.4 lc rgb '" ANALYSIS_FLAT_COLOR "' "
            "title 'flat to rounding', \\\n"
            "     '%s' index %d using 1:2 with points pt 7 ps 1.4 lc rgb '#9e9e9e' "
            "title 'unresolved or degenerate', \\\n"
            "     '%s' index %d using 1:2 with points pt 6 ps 1.4 lc rgb '#333333' lw 0.5 "
            "title 'evaluation points'\n",
            dat, 5 * i, dat, 5 * i + 1, dat, 5 * i + 2, dat, 5 * i + 3, dat, 5 * i + 4, dat, 5 * i + 2);
  }
  fprintf(f, "unset multiplot\n");
}

/* map_Kt_* (m = 2 only): K̃ over the input plane with the task's classes, one
 * panel per arch; *made = 0 when no arch has m = 2 per-point values. */
int analysis_plot_map(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                      analysis_plot *P, int *made) {
  (void)variant;
  *made = 0;
  if (D->regime[r].cfg.input_dim != 2 || analysis_fields_present(D, t, r)) return CS_OK;
  analysis_map M = {.D = D, .t = t, .r = r};
  char tag[ANALYSIS_NAME_LEN + 32];
  analysis_plot_label(D, t, r, tag, sizeof tag, M.desc, sizeof M.desc);
  analysis_map_cells(&M);
  if (M.na == 0) return CS_OK;
  analysis_map_scale(&M);
  snprintf(P->name, sizeof P->name, "map_Kt_%s", tag);
  snprintf(P->caption, sizeof P->caption,
           "Trace-normalised curvature K̃ of the last layer over the input plane (%s): evaluation "
           "points coloured by K̃ where curved, on a signed log scale sign(K̃)·log10(1 + |K̃|/k0), "
           "k0 = 1e-3 × the largest curved |K̃| (one scale for all panels); points flat to rounding "
           "pale green, unresolved and degenerate ones grey (a model whose row is flat to rounding "
           "has no curved point), one model per arch at its deepest depth, over the task's test set "
           "drawn by class", M.desc);
  *made = 1;
  return analysis_write_dat_gp(dir, P, &M, analysis_map_dat, analysis_map_gp);
}

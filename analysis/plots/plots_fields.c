/* plots_fields.c — field_Kh_* (analysis/README.md, "Figures"): when cells
 * carry a curvature field ([curvature] field = N, /fields in docs/ARCHIVE.md),
 * per task and regime one heat map per arch, of the model at its deepest
 * depth (lowest seed with a field): K̂ of the last layer over the N × N grid
 * of the input box on a signed log colour scale
 *   s(K̂) = sign(K̂) · log10(1 + |K̂|/K0),  K0 = 1e-3 × the largest resolved |K̂|
 * of the figure's panels (one scale for all), where the grid point is
 * curved and the model's row is (rounding.h); grid points flat to rounding
 * (and every resolved point of a model whose row is flat) in a pale green
 * of their own, those neither flat nor curved (unresolved, degenerate) in
 * a neutral grey, the
 * decision boundary as the contour of the predicted class (the edges between
 * grid cells of different predicted class), and a sample of the training
 * data drawn faintly over it. It replaces map_Kt_* for that (task, regime). */
#include "plots.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ANALYSIS_FIELD_TRAIN_POINTS 1500 /* training points drawn at most per panel */
#define ANALYSIS_FIELD_K0_REL 1e-3       /* K0 relative to the largest |K̂| */

typedef struct {
  const analysis_data *D;
  int t, r;
  char desc[ANALYSIS_NAME_LEN + 64];
  int na; /* panels: one model per arch with a field */
  const cs_cell_result *cell[ARCH_COUNT];
  int64_t seed_of[ARCH_COUNT];
  int arch_of[ARCH_COUNT], d_of[ARCH_COUNT];
  analysis_row_class cls[ARCH_COUNT]; /* each panel's row */
  double cmax, k0, smax; /* colour scale: slog(cmax, k0) = smax */
} analysis_field_map;

static int analysis_has_field(const cs_cell_result *c) {
  return c && c->fd_pred && c->fd_K_hat && c->fd_class && c->field_n > 0 && c->depth >= 1;
}

/* The cell drawn for arch a: deepest depth with a field (its index in *d), lowest seed there. */
static const cs_cell_result *analysis_field_cell(const analysis_data *D, int a, int t, int r,
                                                 int64_t *seed, int *d_of) {
  for (int d = D->n_depth - 1; d >= 0; d--)
    for (int s = 0; s < D->n_seed; s++) {
      const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
      if (analysis_has_field(c)) {
        *seed = D->seed[s], *d_of = d;
        return c;
      }
    }
  return NULL;
}

int analysis_fields_present(const analysis_data *D, int t, int r) {
  int64_t seed;
  int d;
  for (int a = 0; a < D->n_arch; a++)
    if (analysis_field_cell(D, a, t, r, &seed, &d)) return 1;
  return 0;
}

/* The class (geom.h) of grid point g at the last prefix. */
static int analysis_field_class(const cs_cell_result *c, int64_t g) {
  return c->fd_class[(int64_t)(c->depth - 1) * c->field_n * c->field_n + g];
}

/* K̂ of the last prefix at grid point g of panel i, NaN unless the point is
 * curved and the panel's row too. */
static double analysis_field_Kh(const analysis_field_map *M, int i, int64_t g) {
  const cs_cell_result *c = M->cell[i];
  if (M->cls[i] != ANALYSIS_ROW_CURVED || analysis_field_class(c, g) != GEOM_CURVED) return NAN;
  return c->fd_K_hat[(int64_t)(c->depth - 1) * c->field_n * c->field_n + g];
}

static void analysis_field_scale(analysis_field_map *M) {
  M->cmax = 0.0;
  for (int i = 0; i < M->na; i++) {
    const cs_cell_result *c = M->cell[i];
    for (int64_t g = 0; g < (int64_t)c->field_n * c->field_n; g++) {
      double v = analysis_field_Kh(M, i, g);
      if (isfinite(v) && fabs(v) > M->cmax) M->cmax = fabs(v);
    }
  }
  if (!(M->cmax > 0)) M->cmax = 1e-12;
  M->k0 = M->cmax * ANALYSIS_FIELD_K0_REL;
  M->smax = analysis_slog(M->cmax, M->k0);
}

/* An empty block still needs a line gnuplot can skip (a missing point). */
static void analysis_field_block_end(FILE *f, int rows) {
  if (!rows) fprintf(f, "NaN NaN\n");
}

/* The boundary of the predicted class: the edges between neighbouring grid
 * cells of different class, one two-point segment each. */
static void analysis_field_boundary(FILE *f, const cs_cell_result *c) {
  int N = c->field_n, rows = 0;
  double lo = c->field_lo, h = (c->field_hi - c->field_lo) / N;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      int8_t p = c->fd_pred[(int64_t)i * N + j];
      if (j + 1 < N && c->fd_pred[(int64_t)i * N + j + 1] != p) /* vertical edge x = (j+1)h */
        fprintf(f, "%.10g %.10g\n%.10g %.10g\n\n", lo + (j + 1) * h, lo + i * h, lo + (j + 1) * h,
                lo + (i + 1) * h), rows++;
      if (i + 1 < N && c->fd_pred[(int64_t)(i + 1) * N + j] != p) /* horizontal edge y = (i+1)h */
        fprintf(f, "%.10g %.10g\n%.10g %.10g\n\n", lo + j * h, lo + (i + 1) * h, lo + (j + 1) * h,
                lo + (i + 1) * h), rows++;
    }
  analysis_field_block_end(f, rows);
}

/* Panel i's six blocks: the grid (x1 x2 Kh slog point_class; Kh NaN and
 * slog 0 where not drawn), its points flat to rounding (x1 x2), its
 * unresolved or degenerate points (x1 x2), the boundary segments (x1 x2),
 * the training points of class 0 and of class 1 (x1 x2). */
static int analysis_field_dat_panel(FILE *f, const analysis_field_map *M, int i) {
  const analysis_data *D = M->D;
  const cs_cell_result *c = M->cell[i];
  const char *arch = config_arch_name(D->arch[M->arch_of[i]]);
  int N = c->field_n, rows = 0;
  fprintf(f, "%s# arch %s seed %lld depth %d: grid %dx%d (row class %d)\n"
             "# columns: x1 x2 Kh slog point_class\n", i ? "\n\n" : "", arch,
          (long long)M->seed_of[i], c->depth, N, N, (int)M->cls[i]);
  analysis_dat_row_key(f, D, M->arch_of[i], M->t, M->d_of[i], M->r, c->depth, c->cell_id);
  for (int a = 0; a < N; a++) {
    for (int b = 0; b < N; b++) {
      int64_t g = (int64_t)a * N + b;
      double v = analysis_field_Kh(M, i, g);
      fprintf(f, "%.10g %.10g", result_field_coord(c, b), result_field_coord(c, a));
      analysis_dat_num(f, v);
      /* gnuplot's image needs every pixel: 0 under the marks of the points not drawn */
      analysis_dat_num(f, isfinite(v) ? analysis_slog(v, M->k0) : 0.0);
      fprintf(f, " %d\n", analysis_field_class(c, g));
    }
    fprintf(f, "\n"); /* one scan line per grid row (gnuplot's image format) */
  }
  for (int want = 0; want < 2; want++) {
    fprintf(f, "\n# %s grid points: x1 x2\n# columns: x1 x2\n",
            want ? "unresolved or degenerate" : "flat to rounding (every resolved one of a flat row)");
    rows = 0;
    for (int64_t g = 0; g < (int64_t)N * N; g++) {
      int k = analysis_field_class(c, g), resolved = k == GEOM_FLAT || k == GEOM_CURVED;
      if (isfinite(analysis_field_Kh(M, i, g)) || resolved == want) continue;
      fprintf(f, "%.10g %.10g\n", result_field_coord(c, (int)(g % N)), result_field_coord(c, (int)(g / N))), rows++;
    }
    analysis_field_block_end(f, rows);
    fprintf(f, "\n");
  }
  fprintf(f, "\n# decision boundary (edges between grid cells of different predicted class)\n");
  analysis_field_boundary(f, c);
  cs_dataset ds = {0};
  const cs_config *cfg = &D->regime[M->r].cfg;
  int n = cfg->train_points;
  if (n > ANALYSIS_FIELD_TRAIN_POINTS || n < 1) n = ANALYSIS_FIELD_TRAIN_POINTS;
  CS_CHECK(task_generate(D->task[M->t], 2, n, M->seed_of[i], SPLIT_TRAIN, cfg->label_noise, &ds));
  for (int cls = 0; cls < 2; cls++) {
    fprintf(f, "\n\n# training points of class %d: x1 x2\n", cls);
    rows = 0;
    for (int p = 0; p < ds.n; p++)
      if (ds.y[p] == cls) fprintf(f, "%.10g %.10g\n", ds.x[2 * p], ds.x[2 * p + 1]), rows++;
    analysis_field_block_end(f, rows);
  }
  task_dataset_free(&ds);
  return CS_OK;
}

static int analysis_field_dat(FILE *f, void *ctx) {
  const analysis_field_map *M = ctx;
  fprintf(f, "# per arch six blocks: the grid (x1 x2 Kh slog point_class; Kh NaN and slog 0 unless\n"
             "# the point is curved in a curved row, analysis/stats/rounding.c: drawn by the next two\n"
             "# blocks), its points flat to rounding, its unresolved or degenerate points,\n"
             "# decision-boundary segments, training points of class 0 and of class 1;\n"
             "# slog = sign(Kh) log10(1 + |Kh|/K0) with K0 = %.6g; point_class: 0 degenerate,\n"
             "# 1 flat, 2 curved, 3 unresolved\n", M->k0);
  for (int i = 0; i < M->na; i++) CS_CHECK(analysis_field_dat_panel(f, M, i));
  return CS_OK;
}

static void analysis_field_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_field_map *M = ctx;
  const analysis_data *D = M->D;
  int cols = M->na > 2 ? 2 : M->na, rows = (M->na + cols - 1) / cols;
  analysis_gp_header(f, P->name, P->caption, 640 * cols + 120, 600 * rows + 40);
  fprintf(f, "set size ratio -1\nset xlabel 'x1'\nset ylabel 'x2'\nunset grid\n"
             "set palette defined (-1 '#2166ac', 0 '#f7f7f7', 1 '#b2182b')\n"
             "set cbrange [%.10g:%.10g]\nset cblabel 'K̂ of curved points (signed log scale, K0 = %.3g)'\n",
          -M->smax, M->smax, M->k0);
  analysis_gp_slog_tics(f, "cbtics", M->k0, M->cmax);
  fprintf(f, "set multiplot layout %d,%d title 'K̂ over the input plane — %s'\n", rows, cols, M->desc);
  for (int i = 0; i < M->na; i++) {
    const cs_cell_result *c = M->cell[i];
    double h = (c->field_hi - c->field_lo) / c->field_n;
    fprintf(f, "set title '%s (seed %lld, depth %d, %dx%d grid)%s'\n",
            config_arch_name(D->arch[M->arch_of[i]]), (long long)M->seed_of[i], c->depth,
            c->field_n, c->field_n,
            M->cls[i] == ANALYSIS_ROW_CURVED ? "" : M->cls[i] == ANALYSIS_ROW_FLAT ? ": flat to rounding" : ": unresolved");
    fprintf(f, "set xrange [%.10g:%.10g]\nset yrange [%.10g:%.10g]\n", c->field_lo, c->field_hi,
            c->field_lo, c->field_hi);
    fprintf(f,
            "plot '%s' index %d using 1:2:4 with image notitle, \\\n"
            "     '%s' index %d using 1:2:(%.10g):(%.10g) with boxxyerror fs solid 1.0 noborder "
            "lc rgb '" ANALYSIS_FLAT_COLOR "' title 'flat to rounding', \\\n"
            "     '%s' index %d using 1:2:(%.10g):(%.10g) with boxxyerror fs solid 1.0 noborder "
            "lc rgb '#9e9e9e' title 'unresolved or degenerate', \\\n"
            "     '%s' index %d using 1:2 with points pt 7 ps 0.25 lc rgb '#a01f4e79' notitle, \\\n"
            "     '%s' index %d using 1:2 with points pt 7 ps 0.25 lc rgb '#a0a6611a' notitle, \\\n"
            "     keyentry with points pt 7 ps 1 lc rgb '#1f4e79' title 'training class 0', \\\n"
            "     keyentry with points pt 7 ps 1 lc rgb '#a6611a' title 'training class 1', \\\n"
            "     '%s' index %d using 1:2 with lines lw 2 lc rgb '#000000' title 'decision boundary'\n",
            dat, 6 * i, dat, 6 * i + 1, h / 2, h / 2, dat, 6 * i + 2, h / 2, h / 2, dat, 6 * i + 4, dat,
            6 * i + 5, dat, 6 * i + 3);
  }
  fprintf(f, "unset multiplot\n");
}

int analysis_plot_field(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                        analysis_plot *P, int *made) {
  (void)variant;
  *made = 0;
  analysis_field_map M = {.D = D, .t = t, .r = r};
  for (int a = 0; a < D->n_arch; a++) {
    const cs_cell_result *c = analysis_field_cell(D, a, t, r, &M.seed_of[M.na], &M.d_of[M.na]);
    if (!c) continue;
    M.cell[M.na] = c, M.arch_of[M.na] = a;
    M.cls[M.na] = analysis_row_class_of(D, a, t, M.d_of[M.na], r, c->depth);
    M.na++;
  }
  if (M.na == 0) return CS_OK;
  char tag[ANALYSIS_NAME_LEN + 32];
  analysis_plot_label(D, t, r, tag, sizeof tag, M.desc, sizeof M.desc);
  analysis_field_scale(&M);
  snprintf(P->name, sizeof P->name, "field_Kh_%s", tag);
  snprintf(P->caption, sizeof P->caption,
           "Area-normalised curvature K̂ of the last layer over the task's input box (%s): one "
           "model per arch at its deepest depth, K̂ on the %dx%d field grid on a signed log scale "
           "sign(K̂)·log10(1 + |K̂|/K0), K0 = %g × the largest curved |K̂| (one scale for all "
           "panels) where the grid point is curved; grid points flat to rounding pale green (every "
           "resolved one of a model whose evaluation points are flat to rounding, claim 1's "
           "classification), unresolved and degenerate ones grey; the decision boundary (black) "
           "where the predicted class changes; a sample of the training data drawn faintly",
           M.desc, M.cell[0]->field_n, M.cell[0]->field_n, ANALYSIS_FIELD_K0_REL);
  *made = 1;
  return analysis_write_dat_gp(dir, P, &M, analysis_field_dat, analysis_field_gp);
}

/* plots_learning.c — learning_curve_* (analysis/README.md, "Figures"): when
 * the sweep has a train_points axis, per task and base regime (the regime
 * without train_points) one panel per depth: test accuracy against the
 * number of training points on a log axis, one line per arch with its 95% t
 * band over seeds, the target accuracy as a dashed line and each arch's
 * interpolated sample count as a marker on it (learning.c). */
#include "learning.h"

#include "compute.h"
#include "plots.h"
#include "sections.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const analysis_data *D;
  int t, r;
  int n_curve;
  const analysis_lcurve *curve[64];      /* the panels: one per depth */
  int block0[64], nb[64];                /* each panel's first data block and block count */
  cs_arch archs[64][ARCH_COUNT];
  int valid[64][ARCH_COUNT];
  char desc[ANALYSIS_NAME_LEN + 64];
} analysis_lc_plot;

static int analysis_lc_dat(FILE *f, void *ctx) {
  analysis_lc_plot *Q = ctx;
  const analysis_data *D = Q->D;
  analysis_dat_header(f, "train_points acc_mean acc_band_lo acc_band_hi", "(depth panel, arch)");
  int block = 0;
  for (int i = 0; i < Q->n_curve; i++) {
    const analysis_lcurve *c = Q->curve[i];
    Q->block0[i] = block;
    for (int a = 0; a < D->n_arch; a++) {
      int rows = 0;
      for (int k = 0; k < c->n_x; k++) rows += c->acc[(size_t)a * c->n_x + k].n > 0;
      if (!rows) continue;
      fprintf(f, "%s# depth %d, arch %s\n", block ? "\n\n" : "", D->depth[c->d], config_arch_name(D->arch[a]));
      int b = Q->nb[i]++;
      Q->archs[i][b] = D->arch[a];
      block++;
      for (int k = 0; k < c->n_x; k++) {
        const analysis_ci *ci = &c->acc[(size_t)a * c->n_x + k];
        if (ci->n == 0) continue;
        fprintf(f, "%d", c->x[k]);
        analysis_dat_band(f, ci, 0, &Q->valid[i][b]);
        fprintf(f, "\n");
      }
    }
  }
  return CS_OK;
}

static void analysis_lc_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_lc_plot *Q = ctx;
  const analysis_data *D = Q->D;
  int cols = Q->n_curve > 2 ? 2 : Q->n_curve, rows = (Q->n_curve + cols - 1) / cols;
  analysis_gp_header(f, P->name, P->caption, 760 * cols + 80, 560 * rows + 40);
  fprintf(f, "set logscale x 2\nset xlabel 'training points (log scale)'\nset ylabel 'test accuracy'\nset yrange [*:1]\n");
  fprintf(f, "set multiplot layout %d,%d title 'learning curves — %s'\n", rows, cols, Q->desc);
  for (int i = 0; i < Q->n_curve; i++) {
    const analysis_lcurve *c = Q->curve[i];
    fprintf(f, "set title 'depth %d (target %.4g%s)'\n", D->depth[c->d], c->target,
            c->target_given ? ", given" : ", 95% of the best");
    fprintf(f, "set xrange [%g:%g]\n", c->x[0] / 1.2, c->x[c->n_x - 1] * 1.2);
    if (isfinite(c->target)) /* no accuracy on the curve (family mha: NaN accuracies), no target line */
      fprintf(f, "set arrow 1 from graph 0, first %.10g to graph 1, first %.10g nohead dt 2 lc rgb '#444444'\n",
              c->target, c->target);
    int k = 2;
    for (int a = 0; a < D->n_arch; a++)
      if (c->reached[a] >= 1 && isfinite(c->samples[a].estimate))
        fprintf(f, "set arrow %d from %.10g, graph 0 to %.10g, first %.10g nohead dt 3 lw 2 lc rgb '%s'\n",
                k++, c->samples[a].estimate, c->samples[a].estimate, c->target,
                config_arch_color(D->arch[a]));
    analysis_gp_band_plot_at(f, dat, Q->block0[i], Q->nb[i], Q->archs[i], Q->valid[i], 2, 3, 4, 0,
                             "no accuracy values");
    fprintf(f, "unset arrow\n");
  }
  fprintf(f, "unset multiplot\n");
}

/* learning_curve_*: written for (t, r) when r is the smallest-size regime of
 * some learning curve of task t with an accuracy (one figure per base
 * regime, panels per depth). */
int analysis_learning_plot(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                           analysis_plot *P, int *made) {
  (void)variant;
  *made = 0;
  analysis_lc_plot *Q;
  CS_CHECK(CS_CALLOC(Q, 1));
  Q->D = D, Q->t = t, Q->r = r;
  const analysis_learning *L = analysis_section_get(D, ANALYSIS_LEARNING_NAME);
  /* the curves with an accuracy (family mha has none: no figure of nothing) */
  for (int i = 0; L && i < L->n_lc && Q->n_curve < 64; i++) {
    const analysis_lcurve *c = &L->lc[i];
    int any = 0;
    for (int k = 0; k < D->n_arch * c->n_x; k++) any |= c->acc[k].n > 0 && isfinite(c->acc[k].mean);
    if (c->t == t && c->regime[0] == r && any) Q->curve[Q->n_curve++] = c;
  }
  int rc = CS_OK;
  if (Q->n_curve > 0) {
    const analysis_lcurve *c = Q->curve[0];
    char tag[ANALYSIS_NAME_LEN + 32];
    if (strcmp(c->base, "all") != 0)
      snprintf(tag, sizeof tag, "%s_%s", config_task_name(D->task[t]), c->file_tag);
    else
      snprintf(tag, sizeof tag, "%s", config_task_name(D->task[t]));
    snprintf(Q->desc, sizeof Q->desc, "task %s, regime %s", config_task_name(D->task[t]), c->base);
    snprintf(P->name, sizeof P->name, "learning_curve_%s", tag);
    snprintf(P->caption, sizeof P->caption,
             "Learning curves (%s): test accuracy against the number of training points (log "
             "axis), mean over seeds with 95%% t interval, one panel per depth; the dashed line is "
             "the target accuracy, the dotted verticals each arch's interpolated sample count "
             "(samples_to_target.csv)", Q->desc);
    *made = 1;
    rc = analysis_write_dat_gp(dir, P, Q, analysis_lc_dat, analysis_lc_gp);
  }
  free(Q);
  return rc;
}

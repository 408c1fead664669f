/* plots_gatescores.c — gatescores_* (analysis/README.md, "Figures"): per model
 * family with gate scores, the mean histogram of the gate values σ (20
 * bins of width 0.05 over [0, 1]) of every gated arch (a row of panels) at
 * every gate position (a column), each panel titled with its median and
 * its share below 0.1 (gatescores.c). */
#include "gatescores.h"

#include "compute.h"
#include "plots.h"
#include "sections.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const analysis_data *D;
  const analysis_gatescores *G;
  cs_family family;
  int n_arch, arch[ARCH_COUNT]; /* the gated archs with rows, D->arch order */
  int n_gate, gate[GATE_COUNT + 1]; /* the gate positions with rows, ascending (-1 first) */
  int block[ARCH_COUNT][GATE_COUNT + 1]; /* the .dat block of each panel; -1: none */
} analysis_gs_plot;

static int analysis_gs_dat(FILE *f, void *ctx) {
  analysis_gs_plot *Q = ctx;
  const analysis_gatescores *G = Q->G;
  fprintf(f, "# bin_centre share: the mean share of the gate scores in each bin of width 0.05\n"
             "# one block per (arch, gate position)\n");
  int b = 0;
  for (int i = 0; i < Q->n_arch; i++)
    for (int j = 0; j < Q->n_gate; j++) {
      Q->block[i][j] = -1;
      for (int k = 0; k < G->n_row; k++) {
        const analysis_gs_row *R = &G->row[k];
        if (R->family != Q->family || R->a != Q->arch[i] || R->gate != Q->gate[j] || R->n_cells == 0) continue;
        Q->block[i][j] = b++;
        fprintf(f, "%s# %s\n", Q->block[i][j] ? "\n\n" : "", R->scope);
        for (int h = 0; h < RESULT_GATE_BINS; h++) {
          fprintf(f, "%.4f", (h + 0.5) / RESULT_GATE_BINS);
          analysis_dat_num(f, R->hist[h]);
          fprintf(f, "\n");
        }
      }
    }
  return CS_OK;
}

static void analysis_gs_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_gs_plot *Q = ctx;
  const analysis_data *D = Q->D;
  analysis_gp_header(f, P->name, P->caption, 360 * Q->n_gate + 80, 300 * Q->n_arch + 60);
  fprintf(f, "set xrange [0:1]\nset yrange [0:*]\nset xtics 0.2\nset xlabel 'gate score σ'\n"
             "set ylabel 'share of the scores'\nset style fill solid 0.6 border -1\nset boxwidth 0.05\n");
  fprintf(f, "set multiplot layout %d,%d title 'gate scores (%s family): histograms per arch × gate position'\n",
          Q->n_arch, Q->n_gate, config_family_name(Q->family));
  for (int i = 0; i < Q->n_arch; i++)
    for (int j = 0; j < Q->n_gate; j++) {
      const analysis_gs_row *R = NULL;
      for (int k = 0; k < Q->G->n_row && !R; k++)
        if (Q->G->row[k].family == Q->family && Q->G->row[k].a == Q->arch[i] && Q->G->row[k].gate == Q->gate[j])
          R = &Q->G->row[k];
      const char *g = Q->gate[j] >= 0 ? config_gate_name((cs_gate_pos)Q->gate[j]) : "output gate";
      if (Q->block[i][j] < 0 || !R) {
        fprintf(f, "set title '%s %s'\n", config_arch_name(D->arch[Q->arch[i]]), g);
        analysis_gp_empty(f, "no cells with gate scores");
        continue;
      }
      fprintf(f, "set title '%s %s: median %.3g, %.0f%% < 0.1'\n", config_arch_name(D->arch[Q->arch[i]]), g,
              R->q[GS_MEDIAN].mean, 100 * R->q[GS_LOW].mean);
      fprintf(f, "plot '%s' index %d using 1:2 with boxes lc rgb '%s' notitle\n", dat, Q->block[i][j],
              config_arch_color(D->arch[Q->arch[i]]));
    }
  fprintf(f, "unset multiplot\n");
}

/* gatescores_<family>: at the first (task, regime) with a done cell of a
 * gated arch of that family (once per family). */
int analysis_gatescores_plot(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                             analysis_plot *P, int *made) {
  (void)variant;
  *made = 0;
  const analysis_gatescores *G = analysis_section_get(D, ANALYSIS_GATESCORES_NAME);
  if (!G || G->n_measured == 0) return CS_OK;
  cs_family fam = D->regime[r].cfg.family;
  int first_t = -1, first_r = -1;
  for (int tt = 0; tt < D->n_task && first_r < 0; tt++)
    for (int rr = 0; rr < D->n_regime && first_r < 0; rr++) {
      if (D->regime[rr].cfg.family != fam) continue;
      for (int a = 0; a < D->n_arch && first_r < 0; a++)
        for (int d = 0; d < D->n_depth && first_r < 0; d++)
          if (config_arch_gated(D->arch[a]) && D->group[analysis_gidx(D, a, tt, d, rr)].n_done) first_t = tt, first_r = rr;
    }
  if (first_t != t || first_r != r) return CS_OK;
  analysis_gs_plot *Q;
  CS_CHECK(CS_CALLOC(Q, 1));
  *Q = (analysis_gs_plot){.D = D, .G = G, .family = fam};
  for (int a = 0; a < D->n_arch; a++)
    for (int k = 0; k < G->n_row; k++)
      if (G->row[k].family == fam && G->row[k].a == a && G->row[k].n_cells > 0) {
        Q->arch[Q->n_arch++] = a;
        break;
      }
  for (int g = -1; g < GATE_COUNT; g++)
    for (int k = 0; k < G->n_row; k++)
      if (G->row[k].family == fam && G->row[k].gate == g && G->row[k].n_cells > 0) {
        Q->gate[Q->n_gate++] = g;
        break;
      }
  int rc = CS_OK;
  if (Q->n_arch > 0 && Q->n_gate > 0) {
    snprintf(P->name, sizeof P->name, "gatescores_%s", config_family_name(fam));
    snprintf(P->caption, sizeof P->caption,
             "Gate scores of the %s family: the mean histogram of the gate values σ over held-out inputs, "
             "every position and channel (20 bins of width 0.05; per seed the mean over cells and blocks, "
             "then over seeds), one row per gated arch, one column per gate position; each panel's median "
             "and share below 0.1 in its title (gatescores.csv)", config_family_name(fam));
    *made = 1;
    rc = analysis_write_dat_gp(dir, P, Q, analysis_gs_dat, analysis_gs_gp);
  }
  free(Q);
  return rc;
}

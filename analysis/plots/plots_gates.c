/* plots_gates.c — gates_* (analysis/README.md, "Figures"): when the sweep
 * has a gate axis, per regime without the gate one figure with one column
 * of panels per task: test accuracy (top) and mean |K̂| at the last layer
 * (bottom, log axis) against the gate position (ungated, g1 … g5), one line
 * per (gated arch, depth) with 95% t intervals over seeds as error bars,
 * the archs that ignore the gate as points at "ungated" (gates.c). */
#include "gates.h"

#include "compute.h"
#include "plots.h"
#include "sections.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const analysis_data *D;
  const analysis_gates *G;
  int base;
  int n_block;
  int *task, *arch, *depth; /* (n_block) each block's task index, arch index, depth index */
  int *valid_acc, *valid_kh;
} analysis_gate_plot;

static int analysis_gate_dat(FILE *f, void *ctx) {
  analysis_gate_plot *Q = ctx;
  const analysis_data *D = Q->D;
  const analysis_gates *G = Q->G;
  const analysis_gate_base *B = &G->base[Q->base];
  fprintf(f, "# x acc_mean acc_band_lo acc_band_hi Kh_mean Kh_band_lo Kh_band_hi (95%% t interval over "
             "seeds; x: 0 ungated, k gate gk, shifted by depth)\n# one block per (task, arch, depth)\n");
  for (int t = 0; t < D->n_task; t++)
    for (int a = 0; a < D->n_arch; a++)
      for (int d = 0; d < D->n_depth; d++) {
        int rows = 0;
        for (int i = 0; i < G->n_row; i++) {
          const analysis_gate_row *R = &G->row[i];
          const analysis_gate_unit *U = &G->unit[R->unit];
          if (U->base != Q->base || U->t != t || U->d != d || R->a != a) continue;
          if (!rows++) {
            int b = Q->n_block++;
            Q->task[b] = t, Q->arch[b] = a, Q->depth[b] = d;
            fprintf(f, "%s# task %s, arch %s, depth %d\n", b ? "\n\n" : "", config_task_name(D->task[t]),
                    config_arch_name(D->arch[a]), D->depth[d]);
          }
          int b = Q->n_block - 1;
          /* x: 0 for an arch ignoring the gate, gate index + 1 else; moved
           * sideways by depth (and arch) so the error bars do not overlap */
          double x = R->pos < 0 ? 0.03 * a : (double)B->gate[R->pos] + 1.0;
          fprintf(f, "%.6g", x + 0.08 * (d - 0.5 * (D->n_depth - 1)));
          analysis_dat_band(f, &R->q[MEASURE_ACC], 0, &Q->valid_acc[b]);
          analysis_dat_band(f, &R->q[MEASURE_KH_ABS], 1, &Q->valid_kh[b]);
          fprintf(f, "\n");
        }
      }
  return CS_OK;
}

static void analysis_gate_panel(FILE *f, const analysis_gate_plot *Q, const char *dat, int t, int kh) {
  const analysis_data *D = Q->D;
  const char *sep = "plot ";
  for (int b = 0; b < Q->n_block; b++) {
    if (Q->task[b] != t || !(kh ? Q->valid_kh[b] : Q->valid_acc[b])) continue;
    int gated = config_arch_gated(D->arch[Q->arch[b]]);
    fprintf(f, "%s'%s' index %d using 1:%d:%d:%d with %s lc rgb '%s' lw 1.5 dt %d pt %d ps 1.1 "
               "title '%s, depth %d'",
            sep, dat, b, kh ? 5 : 2, kh ? 6 : 3, kh ? 7 : 4, gated ? "yerrorlines" : "yerrorbars",
            config_arch_color(D->arch[Q->arch[b]]), 1 + Q->depth[b] % 5, 5 + 2 * (Q->depth[b] % 6),
            config_arch_name(D->arch[Q->arch[b]]), D->depth[Q->depth[b]]);
    sep = ", \\\n     ";
  }
  if (sep[0] == 'p') analysis_gp_empty(f, kh ? "no |K̂| values (unclassified archive)" : "no accuracy values");
  else fprintf(f, "\n");
}

static void analysis_gate_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_gate_plot *Q = ctx;
  const analysis_data *D = Q->D;
  const analysis_gate_base *B = &Q->G->base[Q->base];
  int cols = D->n_task;
  analysis_gp_header(f, P->name, P->caption, 620 * cols + 80, 1000);
  fprintf(f, "set xrange [-0.6:%d.6]\nset xtics (", GATE_COUNT);
  fprintf(f, "'ungated' 0");
  for (int k = 0; k < B->n_pos; k++) fprintf(f, ", '%s' %d", config_gate_name(B->gate[k]), (int)B->gate[k] + 1);
  fprintf(f, ")\nset key outside bottom center horizontal font ',9'\n");
  fprintf(f, "set multiplot layout 2,%d title 'gate positions — regime %s'\n", cols, B->name);
  for (int row = 0; row < 2; row++)
    for (int t = 0; t < D->n_task; t++) {
      fprintf(f, "set title '%s: %s'\n", config_task_name(D->task[t]),
              row ? "mean |K̂| at the last layer" : "test accuracy");
      fprintf(f, "%s\nset ylabel '%s'\n", row ? "set logscale y" : "unset logscale y",
              row ? "mean |K̂| (log scale)" : "test accuracy");
      analysis_gate_panel(f, Q, dat, t, row);
    }
  fprintf(f, "unset multiplot\n");
}

/* gates_*: written for (t, r) when they are the base's first (task, regime) with a done cell. */
int analysis_gates_plot(const analysis_data *D, int t, int r, const char *dir, int variant,
                        analysis_plot *P, int *made) {
  (void)variant;
  *made = 0;
  const analysis_gates *G = analysis_section_get(D, ANALYSIS_GATES_NAME);
  if (!G) return CS_OK;
  int base = -1;
  for (int b = 0; b < G->n_base; b++)
    if (G->plot_t[b] == t && G->plot_r[b] == r && analysis_gates_ranked(G->base[b].family)) base = b;
  if (base < 0 || G->axis_len < 2) return CS_OK;
  analysis_gate_plot Q = {.D = D, .G = G, .base = base};
  size_t cap = (size_t)D->n_task * D->n_arch * D->n_depth;
  int rc = CS_CALLOC(Q.task, cap);
  if (!rc) rc = CS_CALLOC(Q.arch, cap);
  if (!rc) rc = CS_CALLOC(Q.depth, cap);
  if (!rc) rc = CS_CALLOC(Q.valid_acc, cap);
  if (!rc) rc = CS_CALLOC(Q.valid_kh, cap);
  if (!rc) {
    const analysis_gate_base *B = &G->base[base];
    if (strcmp(B->name, "all") != 0)
      snprintf(P->name, sizeof P->name, "gates_%s", B->tag);
    else
      snprintf(P->name, sizeof P->name, "gates");
    snprintf(P->caption, sizeof P->caption,
             "Gate positions (regime %s): test accuracy (top) and mean |K̂| at the last layer (bottom, "
             "log axis) at each gate position, one panel per task, one line per gated arch and depth, "
             "mean over seeds with 95%% t interval; the archs that ignore the gate at 'ungated' "
             "(gates.csv)", B->name);
    *made = 1;
    rc = analysis_write_dat_gp(dir, P, &Q, analysis_gate_dat, analysis_gate_gp);
  }
  free(Q.task), free(Q.arch), free(Q.depth), free(Q.valid_acc), free(Q.valid_kh);
  return rc;
}

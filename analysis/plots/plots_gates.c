/* plots_gates.c — gates_* (analysis/README.md, "Figures"): when the sweep
 * has a gate axis, per regime without the gate one figure with one column
 * of panels per task: test accuracy (top) and mean |K̂| at the last layer
 * (bottom, log axis) against the gate position (ungated, g1 … g5), one line
 * per (gated arch, depth) with 95% t intervals over seeds as error bars,
 * the archs that ignore the gate as points at "ungated" (gates.c); a row
 * flat to rounding or unresolved (rounding.h) has no |K̂| value and is
 * marked in a grey strip at the bottom of its panel instead. */
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
  unsigned *classes;        /* (n_block) 1 << class of each row class of the block */
  analysis_span *span;      /* (n_task) the |K̂| values of each task's panel */
} analysis_gate_plot;

static int analysis_gate_dat(FILE *f, void *ctx) {
  analysis_gate_plot *Q = ctx;
  const analysis_data *D = Q->D;
  const analysis_gates *G = Q->G;
  const analysis_gate_base *B = &G->base[Q->base];
  fprintf(f, "# columns: x acc_mean acc_band_lo acc_band_hi Kh_absmean Kh_band_lo Kh_band_hi class\n"
             "# (95%% t interval over seeds; x: 0 ungated, k gate gk, shifted by depth; class: 0 curved,\n"
             "# 1 flat to rounding, 2 unresolved, analysis/stats/rounding.c: Kh NaN unless curved)\n"
             "# one block per (task, arch, depth)\n");
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
          analysis_row_class cls = analysis_row_class_of(D, a, t, d, R->r, D->depth[d]);
          Q->classes[b] |= 1u << cls;
          analysis_dat_row_key(f, D, a, t, d, R->r, D->depth[d], -1);
          /* x: 0 for an arch ignoring the gate, gate index + 1 else; moved
           * sideways by depth (and arch) so the error bars do not overlap */
          double x = R->pos < 0 ? 0.03 * a : (double)B->gate[R->pos] + 1.0;
          fprintf(f, "%.6g", x + 0.08 * (d - 0.5 * (D->n_depth - 1)));
          analysis_dat_band(f, &R->q[MEASURE_ACC], 0, &Q->valid_acc[b]);
          analysis_dat_curv(f, &R->q[MEASURE_KH_ABS], cls, &Q->valid_kh[b], &Q->span[t]);
          fprintf(f, " %d\n", (int)cls);
        }
      }
  return CS_OK;
}

/* A line (gated arch) or points (an arch ignoring the gate) with error bars
 * for block b: columns c, c + 1, c + 2. */
static void analysis_gate_line(FILE *f, const analysis_gate_plot *Q, const char *dat, const char *sep, int b, int c) {
  const analysis_data *D = Q->D;
  int gated = config_arch_gated(D->arch[Q->arch[b]]);
  fprintf(f, "%s'%s' index %d using 1:%d:%d:%d with %s lc rgb '%s' lw 1.5 dt %d pt %d ps 1.1 "
             "title '%s, depth %d'",
          sep, dat, b, c, c + 1, c + 2, gated ? "yerrorlines" : "yerrorbars",
          config_arch_color(D->arch[Q->arch[b]]), 1 + Q->depth[b] % 5, 5 + 2 * (Q->depth[b] % 6),
          config_arch_name(D->arch[Q->arch[b]]), D->depth[Q->depth[b]]);
}

static void analysis_gate_panel(FILE *f, const analysis_gate_plot *Q, const char *dat, int t, int kh) {
  const analysis_data *D = Q->D;
  const unsigned no_value = 1u << ANALYSIS_ROW_FLAT | 1u << ANALYSIS_ROW_UNRESOLVED;
  int any = 0, marked = 0;
  for (int b = 0; b < Q->n_block; b++)
    if (Q->task[b] == t) any |= kh ? Q->valid_kh[b] : Q->valid_acc[b], marked += kh && (Q->classes[b] & no_value);
  if (!any && !marked) {
    analysis_gp_empty(f, kh ? "no |K̂| values (unclassified archive)" : "no accuracy values");
    return;
  }
  if (!kh) {
    fprintf(f, "unset logscale y\nset yrange [*:*]\nset ytics auto\nplot ");
    for (int b = 0, first = 1; b < Q->n_block; b++)
      if (Q->task[b] == t && Q->valid_acc[b]) analysis_gate_line(f, Q, dat, first ? "" : ", \\\n     ", b, 2), first = 0;
    fprintf(f, "\n");
    return;
  }
  /* |K̂|: the curved rows on a log axis, the others in the strip */
  double h = analysis_strip_height(marked);
  if (marked) analysis_gp_strip_begin(f, h);
  if (any) {
    fprintf(f, "set logscale y\n");
    analysis_gp_log_axis(f, "y", &Q->span[t], h);
  } else {
    fprintf(f, "unset logscale y\nset yrange [0:1]\nunset ytics\n"
               "set label 1 'no curved row: every row is flat to rounding or unresolved' at graph 0.5,0.6 center\n");
  }
  fprintf(f, "unset datafile missing\nplot ");
  const char *sep = "";
  for (int b = 0; b < Q->n_block; b++)
    if (Q->task[b] == t && Q->valid_kh[b]) analysis_gate_line(f, Q, dat, sep, b, 5), sep = ", \\\n     ";
  for (int b = 0, k = 0; b < Q->n_block; b++) {
    if (Q->task[b] != t || !(Q->classes[b] & no_value)) continue;
    char who[ANALYSIS_NAME_LEN];
    snprintf(who, sizeof who, "%s, depth %d", config_arch_name(D->arch[Q->arch[b]]), D->depth[Q->depth[b]]);
    for (int c = ANALYSIS_ROW_FLAT; c <= ANALYSIS_ROW_UNRESOLVED; c++)
      if (Q->classes[b] & 1u << c)
        analysis_gp_strip_clause(f, sep, dat, b, 1, 8, (analysis_row_class)c, h * (k + 1) / (marked + 1),
                                 config_arch_color(D->arch[Q->arch[b]]), who),
            sep = ", \\\n     ";
    k++;
  }
  fprintf(f, "\nset datafile missing 'NaN'\n");
  if (marked) analysis_gp_strip_end(f);
  if (!any) fprintf(f, "unset label 1\nset ytics\n");
}

static void analysis_gate_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_gate_plot *Q = ctx;
  const analysis_data *D = Q->D;
  const analysis_gate_base *B = &Q->G->base[Q->base];
  int cols = D->n_task;
  analysis_gp_header(f, P->name, P->caption, 620 * cols + 80, 1000);
  int last = 0; /* the rightmost position drawn */
  for (int k = 0; k < B->n_pos; k++)
    if ((int)B->gate[k] + 1 > last) last = (int)B->gate[k] + 1;
  /* the same margins in every panel, so that the positions line up down a column */
  fprintf(f, "set lmargin 12\nset rmargin 3\nset xrange [-0.6:%d.6]\nset xtics (", last);
  fprintf(f, "'ungated' 0");
  for (int k = 0; k < B->n_pos; k++) fprintf(f, ", '%s' %d", config_gate_name(B->gate[k]), (int)B->gate[k] + 1);
  fprintf(f, ")\n");
  fprintf(f, "set multiplot layout 2,%d title 'gate positions — regime %s (legend under the lower panels)'\n", cols,
          B->name);
  /* one legend per column, under its lower panel: the upper panel has the same lines */
  for (int row = 0; row < 2; row++)
    for (int t = 0; t < D->n_task; t++) {
      fprintf(f, "set title '%s: %s'\n", config_task_name(D->task[t]),
              row ? "mean |K̂| at the last layer" : "test accuracy");
      fprintf(f, "%s\nset ylabel '%s'\n",
              row ? "set key outside bottom center horizontal font ',9'" : "unset key",
              row ? "mean |K̂| (log scale)" : "test accuracy");
      analysis_gate_panel(f, Q, dat, t, row);
    }
  fprintf(f, "unset multiplot\n");
}

/* gates_*: written for (t, r) when they are the base's first (task, regime) with a done cell. */
int analysis_gates_plot(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
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
  if (!rc) rc = CS_CALLOC(Q.classes, cap);
  if (!rc) rc = CS_CALLOC(Q.span, D->n_task);
  for (int k = 0; !rc && k < D->n_task; k++) Q.span[k] = ANALYSIS_SPAN_EMPTY;
  if (!rc) {
    const analysis_gate_base *B = &G->base[base];
    if (strcmp(B->name, "all") != 0)
      snprintf(P->name, sizeof P->name, "gates_%s", B->tag);
    else
      snprintf(P->name, sizeof P->name, "gates");
    snprintf(P->caption, sizeof P->caption,
             "Gate positions (regime %s): test accuracy (top) and mean |K̂| at the last layer (bottom, "
             "log axis) at each gate position, one panel per task, one line per gated arch and depth, "
             "mean over seeds with 95%% t interval; the archs that ignore the gate at 'ungated'; rows "
             "flat to rounding or unresolved marked in a grey strip at the bottom, without a value "
             "(gates.csv)", B->name);
    *made = 1;
    rc = analysis_write_dat_gp(dir, P, &Q, analysis_gate_dat, analysis_gate_gp);
  }
  free(Q.task), free(Q.arch), free(Q.depth), free(Q.valid_acc), free(Q.valid_kh), free(Q.classes), free(Q.span);
  return rc;
}

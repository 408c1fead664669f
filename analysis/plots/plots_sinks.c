/* plots_sinks.c — sinks_* (analysis/README.md, "Figures"): for the lm
 * family, per regime without the gate and per task, the profile over
 * layers of the deepest models: one column of panels per arch (ungated,
 * gated, gated-headwise), the first-token share (top) and the massive
 * activation (bottom, log axis) against the layer, one line per gate
 * position with 95% t intervals over seeds as error bars, the ungated
 * profile repeated in grey in every gated column (sinks.c). */
#include "sinks.h"

#include "compute.h"
#include "plots.h"
#include "sections.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const analysis_data *D;
  const analysis_sinks *S;
  int base, t, d;          /* the base, task and depth index drawn */
  int n_block;
  int block_row[1 + ARCH_COUNT * GATE_COUNT]; /* the row of each block */
  int valid_share[1 + ARCH_COUNT * GATE_COUNT], valid_massive[1 + ARCH_COUNT * GATE_COUNT];
  int maps;                /* draw the attention maps (a third row): this is their base and task */
  int map_block[ARCH_COUNT]; /* the block of S->map[k]'s map; -1: none */
} analysis_sink_plot;

static int analysis_sink_dat(FILE *f, void *ctx) {
  analysis_sink_plot *Q = ctx;
  const analysis_sinks *S = Q->S;
  analysis_dat_header(f, "layer share_mean share_band_lo share_band_hi massive_mean massive_band_lo massive_band_hi",
                      "(arch, gate)");
  for (int i = 0; i < S->n_row; i++) {
    const analysis_sink_row *R = &S->row[i];
    const analysis_sink_unit *U = &S->unit[R->unit];
    if (U->base != Q->base || U->t != Q->t || U->d != Q->d) continue;
    int b = Q->n_block++;
    Q->block_row[b] = i;
    fprintf(f, "%s# arch %s, gate %s\n", b ? "\n\n" : "", config_arch_name(Q->D->arch[R->a]),
            R->pos < 0 ? "-" : config_gate_name(S->base[U->base].gate[R->pos]));
    for (int l = 0; l < R->L; l++) {
      fprintf(f, "%d", l + 1);
      analysis_dat_band(f, &R->q[analysis_sink_q(l, MEASURE_SINK_MASS)], 0, &Q->valid_share[b]);
      analysis_dat_band(f, &R->q[analysis_sink_q(l, MEASURE_MASSIVE_ACT)], 1, &Q->valid_massive[b]);
      fprintf(f, "\n");
    }
  }
  /* the attention maps: one block each, "key query weight" (key 0 = BOS) */
  int next = Q->n_block;
  for (int k = 0; Q->maps && k < S->n_map; k++) {
    const analysis_sink_map *m = &S->map[k];
    Q->map_block[k] = -1;
    if (!m->map) continue;
    Q->map_block[k] = next++;
    fprintf(f, "\n\n# attention map: arch %s, cell %lld, block %d (key query weight)\n",
            config_arch_name(Q->D->arch[m->a]), (long long)m->cell_id, m->layer + 1);
    for (int t = 0; t < m->T; t++) {
      for (int u = 0; u < m->T; u++) {
        fprintf(f, "%d %d", u, t);
        analysis_dat_num(f, m->map[(size_t)t * m->T + u]); /* 0 above the diagonal */
        fprintf(f, "\n");
      }
      fprintf(f, "\n");
    }
  }
  return CS_OK;
}

/* The heat map of S->map[k] (panel of the third row). */
static void analysis_sink_heat(FILE *f, const analysis_sink_plot *Q, const char *dat, int a) {
  const analysis_sinks *S = Q->S;
  for (int k = 0; k < S->n_map; k++) {
    const analysis_sink_map *m = &S->map[k];
    if (m->a != a) continue;
    if (Q->map_block[k] < 0) {
      fprintf(f, "set title '%s: attention map'\n", config_arch_name(Q->D->arch[a]));
      analysis_gp_empty(f, "no stored parameters (save_params = yes draws the map)");
      return;
    }
    fprintf(f, "set title '%s: attention, block %d (cell %lld, share on BOS %.3g)'\n",
            config_arch_name(Q->D->arch[a]), m->layer + 1, (long long)m->cell_id, m->share);
    fprintf(f, "unset logscale y\nset xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\nset cbrange [0:1]\n"
               "set xtics ('BOS' 0, 8, 16, 24, 32, 48, 64, 128, 192, 256)\nset ytics auto\n"
               "set xlabel 'key position (0 = BOS)'\nset ylabel 'query position'\nset palette defined "
               "(0 'white', 0.2 '#fdd49e', 0.5 '#fc8d59', 1 '#7f0000')\n",
            m->T - 1, m->T - 1);
    fprintf(f, "plot '%s' index %d using 1:2:3 with image notitle\n", dat, Q->map_block[k]);
    return;
  }
  fprintf(f, "set title '%s: attention map'\n", config_arch_name(Q->D->arch[a]));
  analysis_gp_empty(f, "no cell drawn");
}

/* One panel: the blocks of arch a (and the ungated block in grey). */
static void analysis_sink_panel(FILE *f, const analysis_sink_plot *Q, const char *dat, int a, int massive) {
  const analysis_data *D = Q->D;
  const analysis_sinks *S = Q->S;
  const char *sep = "plot ";
  for (int b = 0; b < Q->n_block; b++) {
    const analysis_sink_row *R = &S->row[Q->block_row[b]];
    int ungated = R->pos < 0;
    if ((R->a != a && !ungated) || !(massive ? Q->valid_massive[b] : Q->valid_share[b])) continue;
    if (ungated && R->a != a)
      fprintf(f, "%s'%s' index %d using 1:%d:%d:%d with yerrorlines lc rgb '#999999' lw 1 dt 2 pt 1 "
                 "title 'ungated'", sep, dat, b, massive ? 5 : 2, massive ? 6 : 3, massive ? 7 : 4);
    else
      fprintf(f, "%s'%s' index %d using 1:%d:%d:%d with yerrorlines lc rgb '%s' lw 1.5 dt %d pt %d "
                 "title '%s'", sep, dat, b, massive ? 5 : 2, massive ? 6 : 3, massive ? 7 : 4,
              config_arch_color(D->arch[R->a]), ungated ? 1 : 1 + R->pos % 5, ungated ? 7 : 5 + 2 * R->pos,
              ungated ? "ungated" : config_gate_name(S->base[S->unit[R->unit].base].gate[R->pos]));
    sep = ", \\\n     ";
  }
  if (sep[0] == 'p')
    analysis_gp_empty(f, massive ? "no massive activation (format_version 4 or older)" : "no cells");
  else
    fprintf(f, "\n");
}

static void analysis_sink_gp(FILE *f, void *ctx, const analysis_plot *P, const char *dat) {
  const analysis_sink_plot *Q = ctx;
  const analysis_data *D = Q->D;
  int cols = 0, arch[ARCH_COUNT];
  for (int a = 0; a < D->n_arch; a++)
    if (D->arch[a] == ARCH_UNGATED || config_arch_gated(D->arch[a])) arch[cols++] = a;
  int rows = Q->maps ? 3 : 2;
  analysis_gp_header(f, P->name, P->caption, 520 * cols + 80, 450 * rows);
  fprintf(f, "set xrange [0.5:%d.5]\nset xtics 1\nset xlabel 'layer'\n", D->depth[Q->d]);
  fprintf(f, "set key outside bottom center horizontal font ',9'\n");
  fprintf(f, "set multiplot layout %d,%d title 'attention sink by layer — %s, depth %d, regime %s'\n", rows, cols,
          config_task_name(D->task[Q->t]), D->depth[Q->d], Q->S->base[Q->base].name);
  for (int row = 0; row < 2; row++)
    for (int k = 0; k < cols; k++) {
      fprintf(f, "set title '%s: %s'\n", config_arch_name(D->arch[arch[k]]),
              row ? "massive activation" : "first-token share");
      fprintf(f, "%s\nset ylabel '%s'\n", row ? "set logscale y\nset yrange [*:*]" : "unset logscale y\nset yrange [0:1]",
              row ? "max |h| / median |h| (log scale)" : "attention on BOS");
      analysis_sink_panel(f, Q, dat, arch[k], row);
    }
  for (int k = 0; Q->maps && k < cols; k++) analysis_sink_heat(f, Q, dat, arch[k]);
  fprintf(f, "unset multiplot\n");
}

/* sinks_*: for (t, r) when r is the first regime of its base with a done
 * cell of task t; the deepest depth with a unit there. */
int analysis_sinks_plot(const analysis_data *D, int t, int r, const analysis_outdir *dir, int variant,
                        analysis_plot *P, int *made) {
  (void)variant;
  *made = 0;
  const analysis_sinks *S = analysis_section_get(D, ANALYSIS_SINKS_NAME);
  if (!S) return CS_OK;
  for (int b = 0; b < S->n_base; b++) {
    const analysis_sink_base *B = &S->base[b];
    int first = -1;
    for (int k = 0; k < B->n_pos && first < 0; k++)
      for (int a = 0; a < D->n_arch && first < 0; a++)
        for (int d = 0; d < D->n_depth && first < 0; d++)
          if (D->group[analysis_gidx(D, a, t, d, B->regime[k])].n_done) first = B->regime[k];
    if (first != r) continue;
    int dd = -1;
    for (int u = 0; u < S->n_unit; u++)
      if (S->unit[u].base == b && S->unit[u].t == t && S->unit[u].d > dd) dd = S->unit[u].d;
    if (dd < 0) return CS_OK;
    analysis_sink_plot *Q;
    CS_CHECK(CS_CALLOC(Q, 1));
    *Q = (analysis_sink_plot){.D = D, .S = S, .base = b, .t = t, .d = dd};
    Q->maps = S->n_unit > 0 && b == S->unit[0].base && t == S->unit[0].t && S->n_map > 0;
    if (strcmp(B->name, "all") != 0)
      snprintf(P->name, sizeof P->name, "sinks_%s_%s", config_task_name(D->task[t]), B->tag);
    else
      snprintf(P->name, sizeof P->name, "sinks_%s", config_task_name(D->task[t]));
    snprintf(P->caption, sizeof P->caption,
             "Attention sink by layer (%s, depth %d, regime %s): first-token share (top) and massive "
             "activation (bottom, log axis) per layer, one column per arch, one line per gate position, "
             "mean over seeds with 95%% t interval; the ungated profile in grey in the gated columns "
             "(sinks.csv)%s", config_task_name(D->task[t]), D->depth[dd], B->name,
             Q->maps ? "; bottom: one cell's attention map per arch (mean over heads and 64 held-out "
                       "sequences, its block of largest first-token share, computed from its /params; "
                       "the BOS column at key 0)" : "");
    *made = 1;
    int rc = analysis_write_dat_gp(dir, P, Q, analysis_sink_dat, analysis_sink_gp);
    free(Q);
    return rc;
  }
  return CS_OK;
}

/* gatescores.h — are the gate scores sparse and query-dependent?
 * (analysis/VERDICTS.md, "Gate scores"): the /gates rows (docs/MODELS.md,
 * "Gate scores and attention entropy") of every gated arch per gate
 * position and family, the numbers and the verdict (gatescores.c), the
 * histograms (plots_gatescores.c). Internal to analysis/; a row of the
 * section table (sections.c), its state in the row's slot.
 *
 * A row is a gated arch at one gate position of one family (the position
 * -1 for a family that places no gate: the memory family, whose gate is on
 * the attention's output, G1's place); its cells are the done cells of
 * that arch in the family's regimes of that position, every task and
 * depth. */
#ifndef CURVSWEEP_ANALYSIS_GATESCORES_H
#define CURVSWEEP_ANALYSIS_GATESCORES_H

#include "data.h"
#include "sections.h"

#include <stdio.h>

#define ANALYSIS_GATESCORES_NAME "gate scores"
#define ANALYSIS_SPARSE_CLAIM "gate-sparse"
/* "Sparse" (analysis/VERDICTS.md, "Gate scores"): more than this share of
 * the gate scores below RESULT_GATE_LOW (0.1), i.e. the median score below
 * 0.1: most of what the gate multiplies is cut by at least 90%. */
#define ANALYSIS_SPARSE_SHARE 0.5

/* The summaries of a /gates row, in cs_gate_scores order. */
typedef enum {
  GS_MEAN = 0,
  GS_MEDIAN,
  GS_Q10,
  GS_Q90,
  GS_LOW,       /* frac_low */
  GS_VQUERY,    /* var_query */
  GS_VCHANNEL,  /* var_channel */
  GS_COUNT
} analysis_gs_q;

typedef struct {
  int a;                 /* index into D->arch (a gated arch) */
  int gate;              /* cs_gate_pos, or -1: the family places no gate (its gate is G1's) */
  cs_family family;
  char scope[96];        /* "self gated g1" */
  int n_cells;           /* done cells with /gates rows */
  int n_unmeasured;      /* done cells without (format_version 5 or older) */
  analysis_ci q[GS_COUNT]; /* per seed the mean over its cells and blocks; over seeds */
  double hist[RESULT_GATE_BINS]; /* per bin: per seed the mean share, then the mean over seeds */
  double *low_seed;      /* (n_seed) per-seed frac_low (NaN: no cell) */
} analysis_gs_row;

typedef struct {
  int n_row;
  analysis_gs_row *row;
  int n_gated, n_measured; /* done gated cells (attention blocks); with /gates rows */
} analysis_gatescores;

/* The row is at G1's place (the sparsity verdict's rows). */
static inline int analysis_gs_is_g1(const analysis_gs_row *R) {
  return R->gate < 0 || R->gate == GATE_G1;
}

ANALYSIS_SECTION_DECLARE(gatescores);

#endif

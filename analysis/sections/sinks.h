/* sinks.h — do gates remove the attention sink? (analysis/VERDICTS.md,
 * "Attention sinks"): the lm family's extreme-token statistics per layer
 * (docs/MODELS.md), every gated (arch, gate position) against ungated,
 * paired by seed: the numbers (sinks.c) and the profile figure
 * (plots_sinks.c). Internal to analysis/; a row of the section table
 * (sections.c), its state in the row's slot (analysis_section_state).
 *
 * A unit is one (task, depth, base regime), the base regime being the
 * regime without its gate component; its rows are the ungated arch (its
 * cells at the unit's first gate value with a done ungated cell of that
 * seed: ungated ignores the gate) and one per (gated arch, gate position). */
#ifndef CURVSWEEP_ANALYSIS_SINKS_H
#define CURVSWEEP_ANALYSIS_SINKS_H

#include "data.h"
#include "sections.h"

#include <stdio.h>

#define ANALYSIS_SINKS_NAME "attention sinks"

/* The index of measure m (measures.c; those of sinks.csv) at layer l
 * (0-based) in a row's q and vs_u. */
static inline size_t analysis_sink_q(int l, analysis_measure_id m) {
  return (size_t)l * ANALYSIS_N_MEASURES + m;
}

/* A base of the lm regimes (compute.h). */
typedef analysis_gate_group analysis_sink_base;

typedef struct {
  int unit, a;     /* a: index into D->arch */
  int pos;         /* index into the base's gates; -1: the ungated row */
  int L;           /* layers (the unit's depth) */
  int n_seeds;     /* done cells */
  int n_measured;  /* of them, cells with the format_version 5 ratios */
  int n_pairs;     /* seeds with this and the ungated cell done */
  analysis_ci *q;  /* [analysis_sink_q(l, m)], over seeds */
  analysis_diff *vs_u; /* [analysis_sink_q(l, m)]: this − ungated, paired by seed (gated rows) */
  /* the gate magnitudes (gated rows), from each cell's /params at analyze
   * time: gate[2l] the mean gate value at the positions t ≥ 1, gate[2l + 1]
   * at BOS, over seeds (model_gate_means_tokens) */
  analysis_ci *gate;
  int n_gate;          /* cells whose gates were measured */
  char gate_why[160];  /* why a done cell's were not (the first such cell; "" when none) */
} analysis_sink_row;

typedef struct {
  int t, d, base;
  int row0, n_rows;
} analysis_sink_unit;

/* The attention map of one arch (analysis/VERDICTS.md, "Attention sinks"):
 * a representative cell's block of largest first-token share, run forward
 * from its /params on held-out sequences at analyze time. */
typedef struct {
  int a;             /* index into D->arch */
  int64_t cell_id;   /* the cell drawn (-1: none) */
  int row;           /* its row in the rows */
  int seed_index;    /* its seed */
  int layer;         /* 0-based block */
  int T, n_seq;      /* tokens per sequence, sequences averaged */
  double share;      /* the cell's first-token share at that block */
  double *map;       /* T × T: mean over heads and sequences; NULL: see why */
  char why[160];     /* why there is no map ("" when there is) */
} analysis_sink_map;

/* Held-out sequences the attention maps average over. */
#define ANALYSIS_SINK_MAP_SEQ 64

typedef struct {
  int n_base, n_unit, n_row;
  analysis_sink_base *base;
  analysis_sink_unit *unit;
  analysis_sink_row *row;
  int n_cells, n_measured; /* done lm cells; with the ratios */
  int n_gated, n_gate;     /* done gated lm cells; with gate magnitudes */
  int n_map;
  analysis_sink_map map[ARCH_COUNT]; /* ungated, then each gated arch (at g1 when present) */
} analysis_sinks;

/* The ungated cell of unit u at seed s (NULL: none). */
const cs_cell_result *analysis_sink_ungated(const analysis_data *D, const analysis_sinks *S, int u,
                                            int s);

/* Qiu et al.'s first-token share without and with the G1 gate. */
#define ANALYSIS_QIU_UNGATED 0.467
#define ANALYSIS_QIU_G1 0.048

/* Its row of the section table (sinks.csv); its figure, analysis_sinks_plot,
 * is plots_sinks.c (sinks_*: per base and task the profile over layers). */
ANALYSIS_SECTION_DECLARE(sinks);

#endif

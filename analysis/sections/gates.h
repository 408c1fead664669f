/* gates.h — the gate-position ablation of a sweep with a gate axis (the
 * self family, docs/MODELS.md): the numbers (gates.c) shared with its
 * figure (plots_gates.c). Internal to analysis/; columns and verdict rules
 * in analysis/VERDICTS.md, "Gate positions".
 *
 * A unit is one (task, depth, base regime), the base regime being the
 * regime without its gate component; its rows are one per (arch, gate
 * position) for the gated archs, and one per arch that ignores the gate
 * (ungated, mlp; its cells repeat at every gate value, the row reads the
 * unit's first position). Every value is of the last layer (the deepest
 * prefix l = L). */
#ifndef CURVSWEEP_ANALYSIS_GATES_H
#define CURVSWEEP_ANALYSIS_GATES_H

#include "data.h"
#include "sections.h"

#include <stdio.h>

#define ANALYSIS_GATES_NAME "gate positions"

typedef struct {
  int unit, a;
  int pos;                       /* index into the base's gates, -1: an arch ignoring the gate */
  int r;                         /* the regime of the row's cells */
  analysis_ci q[ANALYSIS_N_MEASURES]; /* the measures of gates.csv (measures.c) over seeds */
  double rank[3];                /* acc, Kh, Kt among this arch's positions in the unit (1: highest); NaN: none */
  int n_pairs_u, n_pairs_g1;     /* seeds with both cells */
  analysis_diff vs_u[ANALYSIS_N_MEASURES];  /* this − ungated at the same regime, paired by seed */
  analysis_diff vs_g1[ANALYSIS_N_MEASURES]; /* this − the same arch at g1, paired by seed */
} analysis_gate_row;

/* 1 when this section ranks the gate positions of family f: it places its
 * gate by the gate key and trains on points (the config family table); a
 * family on token sequences is compared with ungated by the sinks section,
 * the teacher task's student by the estimation section, one ignoring the
 * gate key has nothing to rank. */
static inline int analysis_gates_ranked(cs_family f) {
  const cs_family_info *F = config_family_info(f);
  return F->gate_positions && !F->tokens && !F->estimation;
}

/* A base (compute.h); only the bases of a family analysis_gates_ranked
 * enter the verdicts and the figure. */
typedef analysis_gate_group analysis_gate_base;

typedef struct {
  int t, d, base;
  int n_seeds;                   /* seeds with a done cell in the unit */
  int row0, n_rows;
} analysis_gate_unit;

/* Pairs pooled over units, archs and seeds, descriptive (the tests are
 * per seed, checks.c): n pairs (zero differences included), the signs of
 * the non-zero ones, their sign-test p (not a valid test: pairs share
 * seeds), and the means of the two sides over the pairs. */
typedef struct {
  int n, n_pos, n_neg;
  double p, mean_a, mean_b;
} analysis_gate_test;

typedef struct {
  int n_base, n_unit, n_row;
  analysis_gate_base *base;
  int *plot_t, *plot_r;                  /* [base]: where plots.c's loop writes its figure; -1: none */
  analysis_gate_unit *unit;
  analysis_gate_row *row;
  int axis_len;                          /* values of the gate axis in the spec */
  int has_sink;                          /* some cell carries a finite sink_mass */
  analysis_gate_test g1_vs[GATE_COUNT];  /* [q]: acc(g1) − acc(q), gated archs, self family */
  analysis_gate_test sink[ARCH_COUNT];   /* [arch]: sink(ungated) − sink(arch at g1); a = ungated, b = arch */
  analysis_gate_test ov_qk;              /* mean acc (g1, g2) − mean acc (g3, g4) */
} analysis_gates;

/* Its row of the section table (gates.csv); its figure, analysis_gates_plot, is
 * plots_gates.c (gates_*: per base regime, one column of panels per task). */
ANALYSIS_SECTION_DECLARE(gates);

#endif

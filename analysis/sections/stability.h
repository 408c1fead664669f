/* stability.h — does gating tolerate larger learning rates?
 * (analysis/VERDICTS.md, "Stability"): the loss spikes of /cellstats and the
 * diverged cells (docs/MODELS.md, "Stability") per arch and learning rate,
 * each seed's largest stable learning rate and the verdict (stability.c).
 * Internal to analysis/; a row of the section table (sections.c), its
 * state in the row's slot.
 *
 * A cell is unstable when it diverged or its training curve spiked, stable
 * when it is done with no spike (and its /cellstats row), unknown
 * otherwise (failed, pending, or not measured). A base is a regime without
 * its lr component; a unit one (task, depth, base); a comparison a gated
 * arch at one gate position of one family (calibration.h's rows) against
 * ungated. */
#ifndef CURVSWEEP_ANALYSIS_STABILITY_H
#define CURVSWEEP_ANALYSIS_STABILITY_H

#include "data.h"
#include "sections.h"

#include <stdio.h>

#define ANALYSIS_STABILITY_NAME "stability"
#define ANALYSIS_STAB_CLAIM "stab-lr"

/* A regime without its lr component and its lr values ascending. */
typedef struct {
  char name[ANALYSIS_NAME_LEN];
  int n_lr;
  double *lr;       /* (n_lr) ascending */
  int *regime;      /* (n_lr) the regime of each */
} analysis_stab_base;

/* Per (arch, gate, family, lr value of the axis): the ended cells over
 * every unit and seed. */
typedef struct {
  int a, gate;
  cs_family family;
  int lr;           /* index into the lr axis values (analysis_stability.lr) */
  int n_cells, n_diverged, n_spiked, n_unknown;
} analysis_stab_cell;

/* A comparison: per seed the mean over units of log10 of the largest
 * stable lr (below-grid and top-of-grid values censored) of ungated and the
 * arch, and their difference. */
typedef struct {
  int a, gate;
  cs_family family;
  char scope[96];
  int n_units;
  analysis_ci lstar_u, lstar_g, dlstar; /* log10 lr*: ungated, gated, gated − ungated */
  double *d_seed;   /* (n_seed) the per-seed differences (NaN: no unit) */
} analysis_stab_row;

typedef struct {
  int ax_lr;        /* the lr axis, or -1 */
  int n_lr;
  double *lr;       /* (n_lr) the axis values ascending */
  int n_base;
  analysis_stab_base *base;
  int n_cell;
  analysis_stab_cell *cell;
  int n_row;
  analysis_stab_row *row;
  int n_ended, n_measured; /* ended cells of the classification families; with /cellstats */
  int n_spiked, n_diverged;
} analysis_stability;

ANALYSIS_SECTION_DECLARE(stability);

#endif

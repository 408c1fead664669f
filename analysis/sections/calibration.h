/* calibration.h — does gating lower the calibration error? (analysis/VERDICTS.md,
 * "Calibration error"): the test-set calibration of /cellstats (docs/MODELS.md,
 * "Calibration") of every gated arch against ungated, paired by seed, with
 * the accuracy difference beside it (calibration.c). Internal to
 * analysis/; a row of the section table (sections.c), its state in the
 * row's slot (analysis_section_state).
 *
 * A row is one comparison: a gated arch at one gate position of one model
 * family (the position only for a family that places the gate); its units
 * are the (task, depth, regime) of that family and position where both
 * the arch and ungated have done cells. */
#ifndef CURVSWEEP_ANALYSIS_CALIBRATION_H
#define CURVSWEEP_ANALYSIS_CALIBRATION_H

#include "data.h"
#include "sections.h"

#include <stdio.h>

#define ANALYSIS_CALIB_NAME "calibration"
#define ANALYSIS_CALIB_CLAIM "calib-ece"

/* The quantities of a row, each per seed the mean over the row's units of
 * the ungated and the gated cell's value (both done and measured). */
typedef enum {
  CALIB_ECE = 0,
  CALIB_NLL,
  CALIB_BRIER,
  CALIB_ACC,
  CALIB_ENTROPY, /* attention entropy, mean over the blocks */
  CALIB_COUNT
} analysis_calib_q;

typedef struct {
  int a;                 /* index into D->arch (a gated arch) */
  int gate;              /* cs_gate_pos, or -1: the family places no gate */
  cs_family family;
  char scope[96];        /* "self gated g1", "memory gated" */
  int n_units;           /* units with a measured pair at some seed */
  int n_pairs;           /* (unit, seed) pairs measured */
  analysis_ci u[CALIB_COUNT], g[CALIB_COUNT]; /* ungated, gated: over seeds */
  analysis_ci dece;      /* ECE ungated − gated per seed (> 0: gating lowers it) */
  analysis_ci dacc;      /* accuracy gated − ungated per seed */
  double *dece_seed;     /* (n_seed) the per-seed ECE differences (NaN: no pair) */
} analysis_calib_row;

typedef struct {
  int n_row;
  analysis_calib_row *row;
  int n_done, n_measured; /* done cells of the classification families; with /cellstats */
} analysis_calib;

ANALYSIS_SECTION_DECLARE(calibration);

#endif

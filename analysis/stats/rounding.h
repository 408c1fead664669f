/* rounding.h — the class of a report row: whether the curvature of the
 * cells of one (arch, task, depth, regime) after layer l is a value
 * (curved), zero to within rounding (flat) or not resolved at all
 * (unresolved) (analysis/README.md, "Measures" and "Figures"). Claim 1's
 * verdict (claim1.c) and every figure that draws a curvature (plots*.c)
 * read it here, so a figure never draws as a value what claim 1 calls
 * flat. Internal to analysis/. */
#ifndef CURVSWEEP_ANALYSIS_ROUNDING_H
#define CURVSWEEP_ANALYSIS_ROUNDING_H

#include "data.h"

/* The classes; the numbers are the `class` column of the figures' .dat files. */
typedef enum {
  ANALYSIS_ROW_CURVED = 0,     /* some seed has curved points: its curvature is a value */
  ANALYSIS_ROW_FLAT = 1,       /* every resolved point of every seed flat: zero to within rounding */
  ANALYSIS_ROW_UNRESOLVED = 2, /* no resolved point (all unresolved or degenerate), or no value */
  ANALYSIS_ROW_CLASSES
} analysis_row_class;

/* A row's class and what decided it. With the point classification (some
 * seed's prefix row carries it, analysis_stats_classified): curved when
 * some seed's curved fraction is above 0, else flat when the mean flat +
 * curved fraction is above 0, else unresolved. Without it (no seed
 * classified): the K̃ bound, flat when the largest seed mean |K̃| is at
 * most ANALYSIS_FLAT_KT, or at most ANALYSIS_FLAT_REL × the mean |K̃| of
 * the reference gated arch (gated, else gated-headwise) at the same
 * (task, depth, regime, l) when the row is of another arch; curved above
 * that; unresolved when no seed has a finite |K̃|. */
typedef struct {
  analysis_row_class cls;
  int classified;    /* 1: decided by the point classes; 0: by the K̃ bound */
  int by_ratio;      /* unclassified, above ANALYSIS_FLAT_KT, flat by the relative bound */
  double kt_max;     /* largest seed mean |K̃| (NaN: none finite) */
  double ratio;      /* kt_max / the reference gated arch's mean |K̃| there (NaN: none) */
  double logdet;     /* mean log det g over seeds */
  double resolved;   /* classified: mean flat + curved fraction over seeds */
  double curved_max; /* classified: largest curved fraction of any seed */
} analysis_rounding;

/* Row (a, t, d, r) after layer l (1 ≤ l ≤ D->depth[d]) into *out. Returns
 * 0 (and an unresolved *out) when the row has no done cell, 1 otherwise. */
int analysis_rounding_of(const analysis_data *D, int a, int t, int d, int r, int l, analysis_rounding *out);
/* Its class alone. */
analysis_row_class analysis_row_class_of(const analysis_data *D, int a, int t, int d, int r, int l);
/* "curved", "flat to rounding", "unresolved". */
const char *analysis_row_class_name(analysis_row_class c);

#endif

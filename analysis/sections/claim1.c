/* claim1.c — claim 1, ungated attention is flat in the structured (affine)
 * regime (analysis/VERDICTS.md, "Verdicts in index.md"): every resolved point
 * of the ungated affine-skeleton cells must be flat (point classes; the K̃
 * bound only for archives without classification). The verdict row of
 * verdicts.csv (a check on every point, no test: unit "row", n the
 * classified (task, depth, prefix) rows, effect the largest curved
 * fraction) and the claim's section of index.md, with each group's
 * degenerate share: a row of the section table (claims.h). */
#include "claims.h"

#include "checks.h"
#include "compute.h"
#include "output.h"
#include "rounding.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Median of the finite values (NaN when none). */
static double analysis_median(const double *v, int n) {
  analysis_ci m;
  if (analysis_median_ci(v, n, ANALYSIS_LEVEL, &m, NULL) != CS_OK) return NAN;
  return m.mean;
}

/* Flatness of the ungated affine-skeleton cells of task t and regime r (every
 * task and regime when t < 0) without point classification, prefix row by
 * prefix row (depth, l), by the K̃ bound of the row classes (rounding.h): a
 * row is flat when its largest mean |K̃| over seeds is at most
 * ANALYSIS_FLAT_KT, or at most ANALYSIS_FLAT_REL × the mean |K̃| of the
 * gated cells at the same (task, depth, regime, l): K̃ is invariant to
 * uniform rescaling only, so in a model whose metric has collapsed
 * anisotropically (log det g → −∞) the rounding error of K̃ grows with the
 * condition number of J. */
typedef struct {
  int rows, cells;        /* prefix rows checked; done cells behind them */
  int abs_flat, rel_flat; /* rows flat by the absolute bound; by the relative one only */
  double max_abs;         /* largest Kt_max */
  int max_t, max_d, max_l;
  double max_logdet;      /* mean log det g at that row */
  double worst_rel;       /* largest ratio to gated among rows above the absolute bound */
} analysis_flatness;

/* Walks the (task, regime, depth) groups of arch a on the affine skeleton
 * that have prefix rows, restricted to task t_only and regime r_only when
 * those are >= 0, in task, regime, depth order. Start with
 * {.t = 0, .r = 0, .d = -1}; returns 0 after the last group. */
typedef struct {
  int t, r, d;
} analysis_group_pos;

static int analysis_skeleton_next(const analysis_data *D, int a, int t_only, int r_only,
                                  analysis_group_pos *it) {
  for (;;) {
    if (++it->d >= D->n_depth) it->d = 0, it->r++;
    if (it->r >= D->n_regime) it->r = 0, it->t++;
    if (it->t >= D->n_task) return 0;
    if ((t_only >= 0 && it->t != t_only) || (r_only >= 0 && it->r != r_only) ||
        !D->regime[it->r].skeleton)
      continue;
    if (D->prefix[analysis_gidx(D, a, it->t, it->d, it->r)]) return 1;
  }
}

static analysis_flatness analysis_ungated_flatness(const analysis_data *D, int t_only, int r_only) {
  analysis_flatness F = {0, 0, 0, 0, NAN, -1, -1, -1, NAN, NAN};
  int u = analysis_find_arch(D, ARCH_UNGATED);
  if (u < 0) return F;
  analysis_group_pos it = {0, 0, -1};
  while (analysis_skeleton_next(D, u, t_only, r_only, &it)) {
    int t = it.t, d = it.d, r = it.r;
    F.cells += D->group[analysis_gidx(D, u, t, d, r)].n_done;
    for (int l = 1; l <= D->depth[d]; l++) {
      analysis_rounding R;
      analysis_rounding_of(D, u, t, d, r, l, &R);
      double v = R.kt_max;
      if (!isfinite(v)) continue;
      F.rows++;
      if (!(v <= F.max_abs)) F.max_abs = v, F.max_t = t, F.max_d = d, F.max_l = l, F.max_logdet = R.logdet;
      if (v <= ANALYSIS_FLAT_KT) {
        F.abs_flat++;
        continue;
      }
      if (!(R.ratio <= F.worst_rel)) F.worst_rel = R.ratio;
      F.rel_flat += R.by_ratio;
    }
  }
  return F;
}

/* The point classes of the ungated affine-skeleton cells of task t and
 * regime r (every task and regime when t < 0), over the prefix rows (depth,
 * l) whose seeds carry the classification (analysis_stats_classified). */
typedef struct {
  int rows, cells;          /* classified prefix rows; done cells behind the groups */
  int unclassified_rows;    /* prefix rows without classification */
  int curved_rows;          /* rows where some seed has curved points */
  double resolved;          /* largest flat + curved fraction of any row (0: nothing resolved) */
  double max_curved;        /* largest curved_frac of any seed and row */
  int max_t, max_d, max_l;  /* where */
  int groups, flagged;      /* (task, depth, regime) groups; above ANALYSIS_UNRESOLVED_WARN */
  int degenerate_flagged;   /* groups whose resolved (flat + curved) share is below one half */
} analysis_classflat;

/* Mean flat, curved and unresolved fractions of group (a,t,d,r) over its
 * classified seeds and prefixes, and the unresolved share of the
 * non-degenerate points Σ unresolved·n / Σ (1 − degenerate)·n. 0 when none. */
static int analysis_group_classes(const analysis_data *D, int a, int t, int d, int r, double *flat,
                                  double *curved, double *unres, double *share, double *degen) {
  double sf = 0, sc = 0, su = 0, nu = 0, nn = 0, sd = 0;
  int k = 0;
  for (int s = 0; s < D->n_seed; s++) {
    const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
    for (int l = 0; c && c->curv && l < c->depth; l++) {
      const geom_stats *g = &c->curv[l];
      if (!analysis_stats_classified(g)) continue;
      double n = g->n_points > 0 ? g->n_points : 1;
      sf += g->flat_frac, sc += g->curved_frac, su += g->unresolved_frac, sd += g->degenerate_frac, k++;
      nu += g->unresolved_frac * n, nn += (1.0 - g->degenerate_frac) * n;
    }
  }
  *flat = k ? sf / k : NAN, *curved = k ? sc / k : NAN, *unres = k ? su / k : NAN;
  *degen = k ? sd / k : NAN;
  *share = nn > 0 ? nu / nn : NAN;
  return k;
}

static analysis_classflat analysis_ungated_classes(const analysis_data *D, int t_only, int r_only) {
  analysis_classflat C = {0, 0, 0, 0, 0.0, NAN, -1, -1, -1, 0, 0, 0};
  int u = analysis_find_arch(D, ARCH_UNGATED);
  if (u < 0) return C;
  analysis_group_pos it = {0, 0, -1};
  while (analysis_skeleton_next(D, u, t_only, r_only, &it)) {
    int t = it.t, d = it.d, r = it.r;
    double fl, cu, un, share, dg;
    if (analysis_group_classes(D, u, t, d, r, &fl, &cu, &un, &share, &dg) > 0) {
      C.groups++;
      C.flagged += share > ANALYSIS_UNRESOLVED_WARN;
      C.degenerate_flagged += fl + cu < 0.5;
      C.cells += D->group[analysis_gidx(D, u, t, d, r)].n_done;
    }
    for (int l = 1; l <= D->depth[d]; l++) {
      analysis_rounding R;
      analysis_rounding_of(D, u, t, d, r, l, &R);
      if (!R.classified) {
        C.unclassified_rows++;
        continue;
      }
      C.rows++;
      if (R.resolved > C.resolved) C.resolved = R.resolved;
      C.curved_rows += R.cls == ANALYSIS_ROW_CURVED;
      if (!(R.curved_max <= C.max_curved)) C.max_curved = R.curved_max, C.max_t = t, C.max_d = d, C.max_l = l;
    }
  }
  return C;
}

/* 1 when the ungated skeleton cells of (t, r) are flat by claim 1's rule:
 * classified, every resolved point flat; otherwise the K̃ bound. */
int analysis_ungated_flat(const analysis_data *D, int t, int r) {
  analysis_classflat C = analysis_ungated_classes(D, t, r);
  if (C.rows > 0) return C.curved_rows == 0 && C.resolved > 0;
  analysis_flatness F = analysis_ungated_flatness(D, t, r);
  return F.rows > 0 && F.abs_flat + F.rel_flat == F.rows;
}

/* Claim 1 on the point classes: one line per (task, depth, regime) group of
 * ungated skeleton cells with its fractions, flagged above 1% unresolved. */
static void analysis_md_claim1_classified(FILE *f, const analysis_data *D, const analysis_classflat *C) {
  int u = analysis_find_arch(D, ARCH_UNGATED);
  fprintf(f, "Ungated cells with the affine-skeleton config: %d done, their points classified after "
             "every layer (flat: zero to within rounding; curved: resolved non-zero; unresolved: "
             "too uncertain to call, excluded from every statistic and counted). Per (task, depth, "
             "regime), mean fractions of all points over seeds and layers (prefix.csv "
             "`flat_frac_*`, `curved_frac_*`, `unresolved_frac_*`):\n\n",
          C->cells);
  analysis_group_pos it = {0, 0, -1};
  while (analysis_skeleton_next(D, u, -1, -1, &it)) {
    double fl, cu, un, share, dg;
    if (analysis_group_classes(D, u, it.t, it.d, it.r, &fl, &cu, &un, &share, &dg) == 0) continue;
    fprintf(f, "- %s, depth %d, %s: flat %s, curved %s, unresolved %s (%s%% of the "
               "non-degenerate points), degenerate %s%s%s\n",
            config_task_name(D->task[it.t]), D->depth[it.d], D->regime[it.r].name, F4(fl), F4(cu),
            F4(un), F4(100.0 * share), F4(dg),
            share > ANALYSIS_UNRESOLVED_WARN ? " — **more than 1% unresolved**" : "",
            fl + cu < 0.5 ? " — **drawn from under half of the points** (the rest degenerate or "
                            "unresolved)" : "");
  }
  /* both normalisations, for reference: flat points contribute their rounding-level values */
  double kt = NAN, kh = NAN;
  it = (analysis_group_pos){0, 0, -1};
  while (analysis_skeleton_next(D, u, -1, -1, &it)) {
    const analysis_prefix *p = D->prefix[analysis_gidx(D, u, it.t, it.d, it.r)];
    for (int l = 0; l < D->depth[it.d]; l++) {
      if (isfinite(p[l].max[MEASURE_KT_ABS]) && !(p[l].max[MEASURE_KT_ABS] <= kt)) kt = p[l].max[MEASURE_KT_ABS];
      if (isfinite(p[l].m[MEASURE_KH_ABS].mean) && !(p[l].m[MEASURE_KH_ABS].mean <= kh)) kh = p[l].m[MEASURE_KH_ABS].mean;
    }
  }
  fprintf(f, "\nOn both normalisations, for reference: largest mean |K̃| of any ungated skeleton "
             "cell and prefix %s, largest seed-mean |K̂| %s (prefix.csv).\n\n",
          F4(kt), F4(kh));
  if (C->resolved <= 0)
    fprintf(f, "**Not testable with these data**: no resolved (flat or curved) point in the ungated "
               "skeleton cells.\n\n");
  else if (C->curved_rows == 0)
    fprintf(f, "**Supported**: every resolved point of ungated skeleton cells is flat (%d (task, "
               "depth, prefix) rows, no curved point in any seed).\n\n",
            C->rows);
  else
    fprintf(f, "**Not supported by these data**: %d of %d (task, depth, prefix) rows of ungated "
               "skeleton cells have curved points (largest curved fraction **%s**, at task %s, depth "
               "%d, prefix %d); check the geometry engine with `curvsweep verify`.\n\n",
            C->curved_rows, C->rows, F4(C->max_curved), config_task_name(D->task[C->max_t]),
            D->depth[C->max_d], C->max_l);
  if (C->degenerate_flagged)
    fprintf(f, "**Caution**: in %d of %d groups fewer than half of the points are resolved (the "
               "rest degenerate, cond(J) > 1e10, or unresolved): there the verdict rests on a "
               "minority of the points.\n\n",
            C->degenerate_flagged, C->groups);
  if (C->flagged)
    fprintf(f, "**Caution**: in %d of %d groups more than 1%% of the non-degenerate points are "
               "unresolved; the verdict covers the resolved points only.\n\n",
            C->flagged, C->groups);
  if (C->unclassified_rows)
    fprintf(f, "%d (task, depth, prefix) rows carry no classification (older archive) and are not "
               "counted above.\n\n",
            C->unclassified_rows);
}

/* Claim 1 without a point classification: the K̃ bound of the ungated
 * skeleton cells, the gated skeleton and the other ungated cells for
 * contrast (gated_skel, ungated_other: scratch of cap values each). */
static void claim1_md_bound(FILE *f, const analysis_data *D, double *gated_skel,
                            double *ungated_other) {
  int u = analysis_find_arch(D, ARCH_UNGATED);
  int n_g = 0, n_o = 0;
  for (int a = 0; a < D->n_arch; a++)
    for (int t = 0; t < D->n_task; t++)
      for (int d = 0; d < D->n_depth; d++)
        for (int r = 0; r < D->n_regime; r++) {
          const analysis_prefix *p = D->prefix[analysis_gidx(D, a, t, d, r)];
          int skel = D->regime[r].skeleton;
          for (int l = 0; p && l < D->depth[d]; l++) {
            if (a == u && !skel && isfinite(p[l].m[MEASURE_KT_ABS].mean)) ungated_other[n_o++] = p[l].m[MEASURE_KT_ABS].mean;
            if (config_arch_gated(D->arch[a]) && skel && isfinite(p[l].m[MEASURE_KT_ABS].mean))
              gated_skel[n_g++] = p[l].m[MEASURE_KT_ABS].mean;
          }
        }
  analysis_flatness F = analysis_ungated_flatness(D, -1, -1);
  if (F.rows == 0) {
    fprintf(f, "**Not testable with this archive**: no done ungated cell has the affine-skeleton "
               "config (add `arch = ungated` in the memory family with heads 1, slots = input_dim + 1, residual no, "
               "norm none).\n\n");
  } else {
    fprintf(f, "This archive carries no point classification (flat / curved / unresolved): the "
               "K̃ bound below stands in for it.\n");
    fprintf(f, "Ungated cells with the affine-skeleton config: %d done; largest mean |K̃| over "
               "every cell and prefix (prefix.csv `Kt_absmean_max`): **%s** (flat bound %g), at "
               "task %s, depth %d, prefix %d, where mean log det g is %s.\n",
            F.cells, F4(F.max_abs), ANALYSIS_FLAT_KT, config_task_name(D->task[F.max_t]),
            D->depth[F.max_d], F.max_l, F4(F.max_logdet));
    if (n_g) fprintf(f, "For contrast, median over prefixes of mean |K̃| in gated skeleton cells: %s.\n",
                     F4(analysis_median(gated_skel, n_g)));
    if (n_o) fprintf(f, "Ungated cells outside the skeleton (not flat in general): median mean |K̃| %s.\n",
                     F4(analysis_median(ungated_other, n_o)));
    int above = F.rows - F.abs_flat;
    if (above == 0)
      fprintf(f, "\n**Supported**: every ungated skeleton cell is flat to rounding at every depth "
                 "and prefix.\n\n");
    else if (F.abs_flat + F.rel_flat == F.rows)
      fprintf(f, "\n**Supported, up to rounding in ill-conditioned models**: %d of %d (task, depth, "
                 "prefix) rows exceed the absolute bound, but each stays below %g × the gated mean "
                 "|K̃| at the same task, depth and prefix (largest ratio **%s**). These models have "
                 "collapsed their metric (mean log det g down to %s): K̃ is invariant to uniform "
                 "rescaling only, and its rounding error grows with the condition number of J.\n\n",
              above, F.rows, ANALYSIS_FLAT_REL, F4(F.worst_rel), F4(F.max_logdet));
    else
      fprintf(f, "\n**Not supported by these data**: %d of %d (task, depth, prefix) rows of "
                 "ungated skeleton cells exceed both the flat bound %g and %g × the gated mean "
                 "|K̃| at the same place (largest ratio **%s**); check the geometry engine with "
                 "`curvsweep verify`.\n\n",
              F.rows - F.abs_flat - F.rel_flat, F.rows, ANALYSIS_FLAT_KT, ANALYSIS_FLAT_REL,
              F4(F.worst_rel));
  }
}

int analysis_claim1_write_md(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 1 — ungated attention is flat in the structured (affine) regime\n\n");
  analysis_classflat C = analysis_ungated_classes(D, -1, -1);
  if (C.rows > 0) {
    analysis_md_claim1_classified(f, D, &C);
    return CS_OK;
  }
  int cap = 1;
  for (int d = 0; d < D->n_depth; d++) cap += D->depth[d];
  cap *= D->n_arch * D->n_task * D->n_regime;
  double *gated_skel = NULL, *ungated_other = NULL;
  int rc = CS_CALLOC(gated_skel, cap);
  if (!rc) rc = CS_CALLOC(ungated_other, cap);
  if (!rc) claim1_md_bound(f, D, gated_skel, ungated_other);
  free(gated_skel), free(ungated_other);
  return rc;
}

int analysis_claim1_verdicts(analysis_data *D) {
  analysis_check *v;
  analysis_classflat C = analysis_ungated_classes(D, -1, -1);
  if (C.rows > 0) {
    CS_CHECK(analysis_check_add(D, "1", NULL, 1, &v, "ungated affine skeleton"));
    snprintf(v->test, sizeof v->test, "every resolved point flat");
    snprintf(v->unit, sizeof v->unit, "row");
    v->n = C.rows;
    v->effect = C.max_curved;
    v->decision = C.resolved <= 0         ? ANALYSIS_INCONCLUSIVE
                  : C.curved_rows == 0 ? ANALYSIS_SUPPORTED
                                       : ANALYSIS_NOT_SUPPORTED;
    return CS_OK;
  }
  analysis_flatness F = analysis_ungated_flatness(D, -1, -1);
  CS_CHECK(analysis_check_add(D, "1", NULL, 1, &v, "ungated affine skeleton"));
  snprintf(v->test, sizeof v->test, "mean |Kt| bound");
  snprintf(v->unit, sizeof v->unit, "row");
  v->n = F.rows;
  v->effect = F.max_abs;
  v->decision = F.rows == 0                              ? ANALYSIS_INCONCLUSIVE
                : F.abs_flat + F.rel_flat == F.rows ? ANALYSIS_SUPPORTED
                                                     : ANALYSIS_NOT_SUPPORTED;
  return CS_OK;
}

ANALYSIS_CLAIM_ABOUT(claim1, "1", "ungated attention is flat in the affine skeleton",
                     "Claim 1 ");

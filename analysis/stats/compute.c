/* compute.c — the numbers of the report: per-group means and t intervals
 * over seeds (summary.csv, prefix.csv), amplification slopes with paired
 * bootstrap intervals (amplification.csv), gated − ungated gaps paired by
 * seed with sign tests (gap.csv), for both normalisations of the curvature
 * (K̃, K̂), the anisotropy index, ∫|K| dA and the point classes. The CSV
 * writing is csv.c; column meanings: analysis/README.md. */
#include "checks.h"
#include "compute.h"
#include "sections.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Mean and t interval over the seeds of group (a,t,d,r) of measure
 * `which` at prefix l (0: the deepest), clipped to [0, 1] for a proportion. */
static void analysis_seed_ci(const analysis_data *D, int a, int t, int d, int r, int prefix,
                             analysis_measure_id which, double *scratch, analysis_ci *out) {
  for (int s = 0; s < D->n_seed; s++)
    scratch[s] = analysis_cell_value(D->cell[analysis_cidx(D, a, t, d, r, s)], prefix, which);
  analysis_mean_ci(scratch, D->n_seed, ANALYSIS_LEVEL, out);
  if (ANALYSIS_MEASURES[which].flags & ANALYSIS_MEASURE_CLIP01) analysis_ci_clip01(out);
}

/* Unresolved points as a share of the non-degenerate ones, pooled over the
 * classified seeds of group (a,t,d,r) at prefix l (0: the deepest):
 * Σ unresolved_frac·n_points / Σ (1 − degenerate_frac)·n_points; NaN when no
 * seed is classified or every point is degenerate. */
static double analysis_unresolved_share(const analysis_data *D, int a, int t, int d, int r, int prefix,
                                        int *n_classified) {
  double unres = 0, nondeg = 0;
  int k = 0;
  for (int s = 0; s < D->n_seed; s++) {
    const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
    if (!c || c->depth < 1 || !c->curv) continue;
    int l = prefix > 0 ? prefix : c->depth;
    if (l > c->depth || !analysis_stats_classified(&c->curv[l - 1])) continue;
    const geom_stats *g = &c->curv[l - 1];
    double n = g->n_points > 0 ? g->n_points : 1;
    unres += g->unresolved_frac * n;
    nondeg += (1.0 - g->degenerate_frac) * n;
    k++;
  }
  if (n_classified) *n_classified = k;
  return k && nondeg > 0 ? unres / nondeg : NAN;
}

/* Group (a,t,d,r) at the deepest prefix: every measure of summary.csv over seeds. */
static void analysis_compute_group(analysis_data *D, int a, int t, int d, int r, double *scratch) {
  analysis_group *g = &D->group[analysis_gidx(D, a, t, d, r)];
  analysis_measure_id ids[ANALYSIS_N_MEASURES];
  int n = analysis_measures_of(ANALYSIS_USE_SUMMARY, ids);
  for (int k = 0; k < n; k++) analysis_seed_ci(D, a, t, d, r, 0, ids[k], scratch, &g->m[ids[k]]);
  g->unresolved_share = analysis_unresolved_share(D, a, t, d, r, 0, NULL);
}

/* Prefix l of group (a,t,d,r): every measure of prefix.csv over seeds and
 * the seed maxima of those flagged ANALYSIS_MEASURE_SEED_MAX. */
static void analysis_compute_prefix(analysis_data *D, int a, int t, int d, int r, int l,
                                    double *scratch, analysis_prefix *p) {
  analysis_measure_id ids[ANALYSIS_N_MEASURES];
  int n = analysis_measures_of(ANALYSIS_USE_PREFIX, ids);
  for (int k = 0; k < n; k++) {
    analysis_measure_id m = ids[k];
    analysis_seed_ci(D, a, t, d, r, l, m, scratch, &p->m[m]);
    p->max[m] = NAN;
    if (!(ANALYSIS_MEASURES[m].flags & ANALYSIS_MEASURE_SEED_MAX)) continue;
    for (int s = 0; s < D->n_seed; s++) {
      double v = analysis_cell_value(D->cell[analysis_cidx(D, a, t, d, r, s)], l, m);
      if (isfinite(v) && !(v <= p->max[m])) p->max[m] = v;
    }
  }
  p->unresolved_share = analysis_unresolved_share(D, a, t, d, r, l, &p->n_classified);
}

/* D->group and, for groups with a done cell, D->prefix (depth entries). */
static int analysis_compute_groups(analysis_data *D, double *scratch) {
  for (int a = 0; a < D->n_arch; a++)
    for (int t = 0; t < D->n_task; t++)
      for (int d = 0; d < D->n_depth; d++)
        for (int r = 0; r < D->n_regime; r++) {
          size_t gi = analysis_gidx(D, a, t, d, r);
          if (D->group[gi].n_cells == 0) continue;
          analysis_compute_group(D, a, t, d, r, scratch);
          int L = D->depth[d];
          if (D->group[gi].n_done == 0 || L < 1) continue;
          CS_CHECK(CS_CALLOC(D->prefix[gi], L));
          for (int l = 1; l <= L; l++)
            analysis_compute_prefix(D, a, t, d, r, l, scratch, &D->prefix[gi][l - 1]);
        }
  return CS_OK;
}

/* Bootstrap of one quantity for one (arch, task, regime): the stream is keyed
 * by the row and quantity names, so every row is reproducible on its own. */
static int analysis_boot_one(const analysis_data *D, int a, int t, int r, const char *what, int G,
                             int S, const double *x, const double *y, int log_y, analysis_boot *out) {
  char key[3 * ANALYSIS_NAME_LEN];
  snprintf(key, sizeof key, "%s|%s|%s|%s", config_arch_name(D->arch[a]),
           config_task_name(D->task[t]), D->regime[r].name, what);
  rng_stream rng = rng_stream_make(D->opt.bootstrap_seed, "analysis:bootstrap", 0, key);
  return analysis_bootstrap_slope(G, S, x, y, log_y, D->opt.bootstrap, ANALYSIS_LEVEL, &rng, out);
}

/* Seed means of y at the first and the last group. */
static void analysis_end_means(int G, int S, const double *y, double *first, double *last) {
  double m[2];
  for (int e = 0; e < 2; e++) {
    int g = e ? G - 1 : 0, k = 0;
    double sum = 0;
    for (int s = 0; s < S; s++)
      if (isfinite(y[(size_t)g * S + s])) sum += y[(size_t)g * S + s], k++;
    m[e] = k ? sum / k : NAN;
  }
  *first = m[0], *last = m[1];
}

/* The measure behind each amplification quantity: the one of that order in
 * amplification.csv (measures.c). */
static analysis_measure_id analysis_amp_measure(int q) {
  analysis_measure_id ids[ANALYSIS_N_MEASURES];
  int n = analysis_measures_of(ANALYSIS_USE_AMP, ids);
  return q < n ? ids[q] : ANALYSIS_N_MEASURES;
}

const char *analysis_amp_q_name(int q) {
  analysis_measure_id m = analysis_amp_measure(q);
  return m < ANALYSIS_N_MEASURES ? ANALYSIS_MEASURES[m].use[ANALYSIS_USE_AMP].column : "?";
}

/* 1 when amplification quantity q is fitted on the log of its seed mean. */
static int analysis_amp_log(int q) {
  return (ANALYSIS_MEASURES[analysis_amp_measure(q)].flags & ANALYSIS_MEASURE_LOG_SLOPE) != 0;
}

/* Slopes, ratios and end values of every quantity over G groups (depths or
 * prefixes) of S seeds; y[q] holds G × S values. */
static int analysis_amp_fit(const analysis_data *D, int a, int t, int r, const char *dir, int G,
                            int S, const double *x, double *const *y, analysis_boot *boot,
                            double *ratio, double *first, double *last) {
  for (int q = 0; q < AQ_COUNT; q++) {
    char what[64];
    snprintf(what, sizeof what, "%s|%s", analysis_amp_q_name(q), dir);
    CS_CHECK(analysis_boot_one(D, a, t, r, what, G, S, x, y[q], analysis_amp_log(q), &boot[q]));
    analysis_end_means(G, S, y[q], &first[q], &last[q]);
    ratio[q] = G >= 2 ? last[q] / first[q] : NAN;
    if (G < 2) boot[q].lo = boot[q].hi = boot[q].estimate = NAN;
  }
  return CS_OK;
}

/* Scratch of analysis_compute_amp, freed by it in one place. */
typedef struct {
  double *x;             /* (maxL) the x of each group: depth, or prefix l */
  double *y[AQ_COUNT];   /* (maxL × n_seed) per quantity, group-major */
  int *dsel, *ssel;      /* (n_depth), (n_seed): the depths and seeds of one row */
} analysis_amp_work;

/* The depths with a done cell (dsel[0..G-1]) and the seeds with a done cell
 * at one of them (ssel[0..S-1]) of row (a, t, r); also A's counts and Kt_max. */
static void analysis_amp_select(const analysis_data *D, int a, int t, int r, analysis_amp_work *W,
                                analysis_amp *A) {
  int G = 0, S = 0;
  for (int d = 0; d < D->n_depth; d++)
    if (D->group[analysis_gidx(D, a, t, d, r)].n_done > 0) W->dsel[G++] = d;
  for (int s = 0; G && s < D->n_seed; s++) {
    int any = 0;
    for (int g = 0; g < G; g++) any |= D->cell[analysis_cidx(D, a, t, W->dsel[g], r, s)] != NULL;
    if (any) W->ssel[S++] = s;
  }
  A->present = G > 0;
  A->n_depths = G;
  A->n_seeds = S;
  if (!G) return;
  A->depth_min = D->depth[W->dsel[0]];
  A->depth_max = D->depth[W->dsel[G - 1]];
  /* the largest mean |K̃| of any done cell at any prefix */
  for (int g = 0; g < G; g++)
    for (int s = 0; s < D->n_seed; s++) {
      const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, W->dsel[g], r, s)];
      for (int l = 1; c && l <= c->depth; l++) {
        double v = analysis_cell_value(c, l, MEASURE_KT_ABS);
        if (isfinite(v) && !(v <= A->Kt_max)) A->Kt_max = v;
      }
    }
}

/* W->y[q][g·S + j] = quantity q of seed ssel[j] in group g: across depths,
 * the deepest prefix of each model (x = depth); else across prefixes
 * l = 1..L of the deepest models (x = l). Returns the group count. */
static int analysis_amp_fill(const analysis_data *D, int a, int t, int r, const analysis_amp *A,
                             int across_depths, analysis_amp_work *W) {
  int S = A->n_seeds, G = across_depths ? A->n_depths : A->prefix_depth;
  int deepest = W->dsel[A->n_depths - 1];
  analysis_measure_id m[AQ_COUNT];
  for (int q = 0; q < AQ_COUNT; q++) m[q] = analysis_amp_measure(q);
  for (int g = 0; g < G; g++) {
    int d = across_depths ? W->dsel[g] : deepest, l = across_depths ? 0 : g + 1;
    W->x[g] = across_depths ? D->depth[d] : l;
    for (int j = 0; j < S; j++) {
      const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, W->ssel[j])];
      for (int q = 0; q < AQ_COUNT; q++)
        W->y[q][(size_t)g * S + j] = analysis_cell_value(c, l, m[q]);
    }
  }
  return G;
}

/* One row (a, t, r) of amplification.csv. */
static int analysis_amp_row(const analysis_data *D, int a, int t, int r, analysis_amp_work *W,
                            analysis_amp *A) {
  A->Kt_max = NAN;
  analysis_amp_select(D, a, t, r, W, A);
  if (!A->present) return CS_OK;
  A->prefix_depth = A->depth_max;
  int G = analysis_amp_fill(D, a, t, r, A, 1, W);
  CS_CHECK(analysis_amp_fit(D, a, t, r, "depth", G, A->n_seeds, W->x, W->y, A->depth, A->ratio,
                            A->first, A->last));
  G = analysis_amp_fill(D, a, t, r, A, 0, W);
  return analysis_amp_fit(D, a, t, r, "prefix", G, A->n_seeds, W->x, W->y, A->prefix,
                          A->prefix_ratio, A->prefix_first, A->prefix_last);
}

static int analysis_amp_pipeline(analysis_data *D, analysis_amp_work *W) {
  CS_CHECK(CS_CALLOC(D->amp, (size_t)D->n_arch * D->n_task * D->n_regime));
  int maxL = D->depth[D->n_depth - 1] > D->n_depth ? D->depth[D->n_depth - 1] : D->n_depth;
  if (maxL < 1) maxL = 1;
  CS_CHECK(CS_CALLOC(W->x, maxL));
  for (int q = 0; q < AQ_COUNT; q++)
    CS_CHECK(CS_CALLOC(W->y[q], (size_t)maxL * (D->n_seed > 0 ? D->n_seed : 1)));
  CS_CHECK(CS_CALLOC(W->dsel, D->n_depth));
  CS_CHECK(CS_CALLOC(W->ssel, D->n_seed));
  for (int a = 0; a < D->n_arch; a++)
    for (int t = 0; t < D->n_task; t++)
      for (int r = 0; r < D->n_regime; r++)
        CS_CHECK(analysis_amp_row(D, a, t, r, W, &D->amp[analysis_aidx(D, a, t, r)]));
  return CS_OK;
}

static int analysis_compute_amp(analysis_data *D) {
  analysis_amp_work W = {0};
  int rc = analysis_amp_pipeline(D, &W);
  free(W.x), free(W.dsel), free(W.ssel);
  for (int q = 0; q < AQ_COUNT; q++) free(W.y[q]);
  return rc;
}

/* Every arch − ungated, paired by seed, for the measures of gap.csv. */
static int analysis_compute_gaps(analysis_data *D) {
  int u = analysis_find_arch(D, ARCH_UNGATED);
  if (u < 0 || D->n_arch < 2) return CS_OK;
  size_t cap = (size_t)(D->n_arch - 1) * D->n_task * D->n_depth * D->n_regime;
  CS_CHECK(CS_CALLOC(D->gap, cap));
  analysis_measure_id ids[ANALYSIS_N_MEASURES];
  int nm = analysis_measures_of(ANALYSIS_USE_GAP, ids);
  double *diff = NULL; /* (nm × n_seed) */
  int rc = CS_CALLOC(diff, (size_t)nm * (D->n_seed > 0 ? D->n_seed : 1));
  for (int a = 0; !rc && a < D->n_arch; a++) {
    if (a == u) continue;
    for (int t = 0; t < D->n_task; t++)
      for (int r = 0; r < D->n_regime; r++)
        for (int d = 0; d < D->n_depth; d++) {
          int n = 0;
          for (int s = 0; s < D->n_seed; s++) {
            const cs_cell_result *cu = D->cell[analysis_cidx(D, u, t, d, r, s)];
            const cs_cell_result *cg = D->cell[analysis_cidx(D, a, t, d, r, s)];
            if (!cu || !cg) continue;
            for (int k = 0; k < nm; k++)
              diff[(size_t)k * D->n_seed + n] = analysis_cell_value(cg, 0, ids[k]) - analysis_cell_value(cu, 0, ids[k]);
            n++;
          }
          if (n == 0) continue;
          analysis_gap *g = &D->gap[D->n_gap++];
          g->arch = a, g->task = t, g->depth = d, g->regime = r, g->n_pairs = n;
          for (int k = 0; k < nm; k++) analysis_diff_stats(diff + (size_t)k * D->n_seed, n, &g->d[ids[k]]);
        }
  }
  free(diff);
  return rc;
}

/* Every check and verdict: each section's checks (claims 1–4 first), Holm
 * over their families, then the verdicts built from them (checks.c). */
static int analysis_compute_verdicts(analysis_data *D) {
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    if (ANALYSIS_SECTIONS[s].checks) CS_CHECK(ANALYSIS_SECTIONS[s].checks(D));
  CS_CHECK(analysis_checks_adjust(D));
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    if (ANALYSIS_SECTIONS[s].verdicts) CS_CHECK(ANALYSIS_SECTIONS[s].verdicts(D));
  return CS_OK;
}

int analysis_compute(analysis_data *D) {
  double *scratch;
  CS_CHECK(CS_CALLOC(scratch, D->n_seed));
  int rc = analysis_compute_groups(D, scratch);
  free(scratch);
  CS_CHECK(rc);
  CS_CHECK(analysis_compute_amp(D));
  CS_CHECK(analysis_compute_gaps(D));
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    if (ANALYSIS_SECTIONS[s].compute) CS_CHECK(ANALYSIS_SECTIONS[s].compute(D));
  return analysis_compute_verdicts(D);
}

/* verdicts.c — the verdicts of index.md on the four claims, each
 * computed from the same numbers as the tables (printed with %.4g, the tables
 * with %.15g). The rules, and what the measures mean and when they disagree,
 * are in analysis/README.md ("Measures", "Verdicts in index.md"):
 *   1  every resolved point of ungated affine-skeleton cells is flat (point
 *      classes; the K̃ bound only for archives without classification)
 *   2  gated more curved than ungated, on K̃ and on K̂
 *   3  accuracy gain of gating on nonlinear- vs linear-boundary tasks
 *   4  depth amplification: Supported only when the area-normalised K̂ or
 *      ∫|K| dA grows; growth of K̃ alone is anisotropy. */
#include "compute.h"
#include "output.h"
#include "writers.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

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
 * task and regime when t < 0), prefix row by prefix row (depth, l): a row is
 * flat when its largest mean |K̃| over seeds is at most ANALYSIS_FLAT_KT, or
 * at most ANALYSIS_FLAT_REL × the mean |K̃| of the gated cells at the same
 * (task, depth, regime, l): K̃ is invariant to uniform rescaling only, so in a
 * model whose metric has collapsed anisotropically (log det g → −∞) the
 * rounding error of K̃ grows with the condition number of J. */
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
  int u = analysis_find_arch(D, ARCH_UNGATED), g = analysis_find_arch(D, ARCH_GATED);
  if (g < 0) g = analysis_find_arch(D, ARCH_GATED_HEADWISE);
  if (u < 0) return F;
  analysis_group_pos it = {0, 0, -1};
  while (analysis_skeleton_next(D, u, t_only, r_only, &it)) {
    int t = it.t, d = it.d, r = it.r;
    const analysis_prefix *p = D->prefix[analysis_gidx(D, u, t, d, r)];
    const analysis_prefix *q = g >= 0 ? D->prefix[analysis_gidx(D, g, t, d, r)] : NULL;
    F.cells += D->group[analysis_gidx(D, u, t, d, r)].n_done;
    for (int l = 0; l < D->depth[d]; l++) {
      double v = p[l].Kt_max;
      if (!isfinite(v)) continue;
      F.rows++;
      if (!(v <= F.max_abs)) F.max_abs = v, F.max_t = t, F.max_d = d, F.max_l = l + 1,
                             F.max_logdet = p[l].logdet.mean;
      if (v <= ANALYSIS_FLAT_KT) {
        F.abs_flat++;
        continue;
      }
      double rel = q && q[l].Kt.mean > 0 ? v / q[l].Kt.mean : NAN;
      if (!(rel <= F.worst_rel)) F.worst_rel = rel;
      if (rel <= ANALYSIS_FLAT_REL) F.rel_flat++;
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
} analysis_classflat;

/* Mean flat, curved and unresolved fractions of group (a,t,d,r) over its
 * classified seeds and prefixes, and the unresolved share of the
 * non-degenerate points Σ unresolved·n / Σ (1 − degenerate)·n. 0 when none. */
static int analysis_group_classes(const analysis_data *D, int a, int t, int d, int r, double *flat,
                                  double *curved, double *unres, double *share) {
  double sf = 0, sc = 0, su = 0, nu = 0, nn = 0;
  int k = 0;
  for (int s = 0; s < D->n_seed; s++) {
    const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
    for (int l = 0; c && c->curv && l < c->depth; l++) {
      const geom_stats *g = &c->curv[l];
      if (!analysis_stats_classified(g)) continue;
      double n = g->n_points > 0 ? g->n_points : 1;
      sf += g->flat_frac, sc += g->curved_frac, su += g->unresolved_frac, k++;
      nu += g->unresolved_frac * n, nn += (1.0 - g->degenerate_frac) * n;
    }
  }
  *flat = k ? sf / k : NAN, *curved = k ? sc / k : NAN, *unres = k ? su / k : NAN;
  *share = nn > 0 ? nu / nn : NAN;
  return k;
}

static analysis_classflat analysis_ungated_classes(const analysis_data *D, int t_only, int r_only) {
  analysis_classflat C = {0, 0, 0, 0, 0.0, NAN, -1, -1, -1, 0, 0};
  int u = analysis_find_arch(D, ARCH_UNGATED);
  if (u < 0) return C;
  analysis_group_pos it = {0, 0, -1};
  while (analysis_skeleton_next(D, u, t_only, r_only, &it)) {
    int t = it.t, d = it.d, r = it.r;
    const analysis_prefix *p = D->prefix[analysis_gidx(D, u, t, d, r)];
    double fl, cu, un, share;
    if (analysis_group_classes(D, u, t, d, r, &fl, &cu, &un, &share) > 0) {
      C.groups++;
      C.flagged += share > ANALYSIS_UNRESOLVED_WARN;
      C.cells += D->group[analysis_gidx(D, u, t, d, r)].n_done;
    }
    for (int l = 0; l < D->depth[d]; l++) {
      if (p[l].n_classified == 0) {
        C.unclassified_rows++;
        continue;
      }
      C.rows++;
      double res = p[l].flat.mean + p[l].curved.mean;
      if (res > C.resolved) C.resolved = res;
      double v = p[l].curved_max;
      C.curved_rows += v > 0;
      if (!(v <= C.max_curved)) C.max_curved = v, C.max_t = t, C.max_d = d, C.max_l = l + 1;
    }
  }
  return C;
}

/* 1 when the ungated skeleton cells of (t, r) are flat by claim 1's rule:
 * classified, every resolved point flat; otherwise the K̃ bound. */
static int analysis_ungated_flat(const analysis_data *D, int t, int r) {
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
    double fl, cu, un, share;
    if (analysis_group_classes(D, u, it.t, it.d, it.r, &fl, &cu, &un, &share) == 0) continue;
    fprintf(f, "- %s, depth %d, %s: flat %s, curved %s, unresolved %s (%s%% of the "
               "non-degenerate points)%s\n",
            config_task_name(D->task[it.t]), D->depth[it.d], D->regime[it.r].name, F4(fl), F4(cu),
            F4(un), F4(100.0 * share),
            share > ANALYSIS_UNRESOLVED_WARN ? " — **more than 1% unresolved**" : "");
  }
  /* both normalisations, for reference: flat points contribute their rounding-level values */
  double kt = NAN, kh = NAN;
  it = (analysis_group_pos){0, 0, -1};
  while (analysis_skeleton_next(D, u, -1, -1, &it)) {
    const analysis_prefix *p = D->prefix[analysis_gidx(D, u, it.t, it.d, it.r)];
    for (int l = 0; l < D->depth[it.d]; l++) {
      if (isfinite(p[l].Kt_max) && !(p[l].Kt_max <= kt)) kt = p[l].Kt_max;
      if (isfinite(p[l].Kh.mean) && !(p[l].Kh.mean <= kh)) kh = p[l].Kh.mean;
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
  if (C->flagged)
    fprintf(f, "**Caution**: in %d of %d groups more than 1%% of the non-degenerate points are "
               "unresolved; the verdict covers the resolved points only.\n\n",
            C->flagged, C->groups);
  if (C->unclassified_rows)
    fprintf(f, "%d (task, depth, prefix) rows carry no classification (older archive) and are not "
               "counted above.\n\n",
            C->unclassified_rows);
}

static int analysis_md_claim1(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 1 — ungated attention is flat in the structured (affine) regime\n\n");
  analysis_classflat C = analysis_ungated_classes(D, -1, -1);
  if (C.rows > 0) {
    analysis_md_claim1_classified(f, D, &C);
    return CS_OK;
  }
  int u = analysis_find_arch(D, ARCH_UNGATED);
  int n_g = 0, n_o = 0, cap = 1;
  for (int d = 0; d < D->n_depth; d++) cap += D->depth[d];
  cap *= D->n_arch * D->n_task * D->n_regime;
  double *gated_skel, *ungated_other;
  CS_CHECK(CS_CALLOC(gated_skel, cap));
  int rc = CS_CALLOC(ungated_other, cap);
  if (rc) {
    free(gated_skel);
    return rc;
  }
  for (int a = 0; a < D->n_arch; a++)
    for (int t = 0; t < D->n_task; t++)
      for (int d = 0; d < D->n_depth; d++)
        for (int r = 0; r < D->n_regime; r++) {
          const analysis_prefix *p = D->prefix[analysis_gidx(D, a, t, d, r)];
          int skel = D->regime[r].skeleton;
          for (int l = 0; p && l < D->depth[d]; l++) {
            if (a == u && !skel && isfinite(p[l].Kt.mean)) ungated_other[n_o++] = p[l].Kt.mean;
            if (analysis_is_gated(D->arch[a]) && skel && isfinite(p[l].Kt.mean))
              gated_skel[n_g++] = p[l].Kt.mean;
          }
        }
  analysis_flatness F = analysis_ungated_flatness(D, -1, -1);
  if (F.rows == 0) {
    fprintf(f, "**Not testable with this archive**: no done ungated cell has the affine-skeleton "
               "config (add `arch = ungated` with heads 1, slots = input_dim + 1, residual no, "
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
  free(gated_skel), free(ungated_other);
  return CS_OK;
}

/* Claim 2 for one gated arch against ungated on one normalisation (hat = 0:
 * mean |K̃|, 1: mean |K̂|): pairs (task, depth, regime). *supported: -1 no
 * pair, 0 not, 1 suggestive (most pairs, not significant), 2 significant. */
static int analysis_md_claim2_arch(FILE *f, const analysis_data *D, int g, int u, int hat,
                                   int *supported) {
  size_t cap = (size_t)D->n_task * D->n_depth * D->n_regime;
  double *ratio;
  CS_CHECK(CS_CALLOC(ratio, cap));
  int n = 0, k = 0, nr = 0, skel_pairs = 0;
  for (int t = 0; t < D->n_task; t++)
    for (int d = 0; d < D->n_depth; d++)
      for (int r = 0; r < D->n_regime; r++) {
        const analysis_group *G = &D->group[analysis_gidx(D, g, t, d, r)];
        const analysis_group *U = &D->group[analysis_gidx(D, u, t, d, r)];
        double vg = hat ? G->Kh.mean : G->Kt.mean, vu = hat ? U->Kh.mean : U->Kt.mean;
        if (!isfinite(vg) || !isfinite(vu)) continue;
        n++;
        k += vg > vu;
        skel_pairs += D->regime[r].skeleton;
        if (vu > 0) ratio[nr++] = vg / vu;
      }
  const char *name = config_arch_name(D->arch[g]), *sym = hat ? "K̂" : "K̃";
  if (n == 0) {
    if (!hat)
      fprintf(f, "- %s: no (task, depth, regime) with both %s and ungated done.\n", name, name);
    free(ratio);
    return CS_OK;
  }
  analysis_ci med;
  double cover;
  int rc = analysis_median_ci(ratio, nr, ANALYSIS_LEVEL, &med, &cover);
  free(ratio);
  CS_CHECK(rc);
  double p = analysis_sign_test(k, n - k);
  fprintf(f, "- %s: mean |%s| (last layer, summary.csv `%s_absmean_mean`) above ungated on **%d of "
             "%d** (task, depth, regime) pairs, sign test p = %s; median ratio %s/ungated **%s** "
             "[%s, %s] (order-statistic interval, coverage %s).",
          name, sym, hat ? "Kh" : "Kt", k, n, F4(p), name, F4(med.mean), F4(med.lo), F4(med.hi),
          F4(cover));
  if (skel_pairs) fprintf(f, " (%d pairs are affine-skeleton ones, where ungated is flat to rounding: "
                             "there the ratio only says \"curved vs flat\".)", skel_pairs);
  fprintf(f, "\n");
  int level = 2 * k > n && p < 0.05 ? 2 : 2 * k > n ? 1 : 0;
  if (level > *supported) *supported = level;
  return CS_OK;
}

static const char *analysis_claim2_word(int level) {
  return level == 2 ? "supported" : level == 1 ? "suggestive, not significant" : "not supported";
}

static int analysis_md_claim2(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 2 — gating makes the representation curved\n\n");
  int u = analysis_find_arch(D, ARCH_UNGATED), any = 0, sup_t = -1, sup_h = -1;
  for (int g = 0; g < D->n_arch; g++) {
    if (!analysis_is_gated(D->arch[g]) || u < 0) continue;
    any = 1;
    CS_CHECK(analysis_md_claim2_arch(f, D, g, u, 0, &sup_t));
    CS_CHECK(analysis_md_claim2_arch(f, D, g, u, 1, &sup_h));
  }
  if (sup_t < 0) sup_t = 0;
  if (!any) {
    fprintf(f, "**Not testable with this archive**: it needs both ungated and gated (or "
               "gated-headwise) cells.\n\n");
    return CS_OK;
  }
  const char *both = sup_h < 0 ? " (K̃ only: this archive has no K̂)" : " (on K̃ and on K̂)";
  if (sup_h >= 0 && sup_h != sup_t)
    fprintf(f, "\n**The normalisations disagree**: on the trace-normalised K̃ the claim is %s, on "
               "the area-normalised K̂ it is %s. K̃/K̂ is the AM/GM of g's eigenvalues, so the two "
               "differ by how anisotropic the metric is (analysis/README.md, \"When the measures "
               "disagree\"); the report does not pick one.\n\n",
            analysis_claim2_word(sup_t), analysis_claim2_word(sup_h));
  else if (sup_t == 2)
    fprintf(f, "\n**Supported**: gated representations are more curved than ungated ones, "
               "significantly by the sign test%s.\n\n", both);
  else if (sup_t == 1)
    fprintf(f, "\n**Suggestive, not significant**: gated is more curved on most pairs, but the sign "
               "test over so few pairs is not below 0.05 (add tasks, depths or regimes)%s.\n\n", both);
  else
    fprintf(f, "\n**Not supported by these data**: gated is not more curved than ungated on most "
               "pairs%s.\n\n", both);
  return CS_OK;
}

/* Pooled signs over the gap rows of one comparison and boundary. */
typedef struct {
  int rows, rows_pos, rows_sig, npos, nneg, kpos, kneg;
} analysis_pool;

static void analysis_md_claim3(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 3 — gating improves accuracy on nonlinear-boundary tasks, not on linear ones\n\n");
  int g = analysis_find_arch(D, ARCH_GATED);
  analysis_pool pool[2] = {{0}};
  const char *bname[2] = {"nonlinear", "linear"};
  if (g < 0 || analysis_find_arch(D, ARCH_UNGATED) < 0) {
    fprintf(f, "**Not testable with this archive**: it needs gated and ungated cells.\n\n");
    return;
  }
  fprintf(f, "Gated − ungated test accuracy, paired by seed (gap.csv, comparison `gated-ungated`):\n\n");
  for (int i = 0; i < D->n_gap; i++) {
    const analysis_gap *G = &D->gap[i];
    if (G->arch != g) continue;
    int b = strcmp(task_boundary(D->task[G->task]), "linear") == 0;
    analysis_pool *P = &pool[b];
    P->rows++;
    P->rows_pos += G->acc.ci.mean > 0;
    P->rows_sig += G->acc.ci.mean > 0 && G->acc.sign_p < 0.05;
    P->npos += G->acc.n_pos, P->nneg += G->acc.n_neg;
    P->kpos += G->Kt.n_pos, P->kneg += G->Kt.n_neg;
    fprintf(f, "- %s (%s), depth %d, %s: %d pair%s, Δacc %s [%s, %s], sign test p = %s; Δ mean |K̃| "
               "%s, Δ mean |K̂| %s\n",
            config_task_name(D->task[G->task]), bname[b], D->depth[G->depth],
            D->regime[G->regime].name, G->n_pairs, G->n_pairs == 1 ? "" : "s", F4(G->acc.ci.mean),
            F4(G->acc.ci.lo), F4(G->acc.ci.hi), F4(G->acc.sign_p), F4(G->Kt.ci.mean),
            F4(G->Kh.ci.mean));
  }
  fprintf(f, "\n");
  int sig[2] = {0, 0};
  for (int b = 0; b < 2; b++) {
    analysis_pool *P = &pool[b];
    if (!P->rows) {
      fprintf(f, "- %s tasks: none in this archive.\n", bname[b]);
      continue;
    }
    double p = analysis_sign_test(P->npos, P->nneg), pk = analysis_sign_test(P->kpos, P->kneg);
    sig[b] = P->npos > P->nneg && p < 0.05;
    fprintf(f, "- %s tasks, pooled over every seed pair: gated more accurate in **%d**, less in "
               "**%d** (sign test p = **%s**); %d of %d (task, depth, regime) rows have a positive "
               "mean gap, %d of them significant. Gated K̃ higher in %d pairs, lower in %d (p = %s).\n",
            bname[b], P->npos, P->nneg, F4(p), P->rows_pos, P->rows, P->rows_sig, P->kpos, P->kneg,
            F4(pk));
  }
  fprintf(f, "\n");
  if (!pool[0].rows)
    fprintf(f, "**Not testable with this archive**: no nonlinear-boundary task.\n\n");
  else if (!sig[0])
    fprintf(f, "**Not supported by these data**: no significant accuracy gain of gating on "
               "nonlinear-boundary tasks%s.\n\n",
            pool[0].npos > pool[0].nneg ? " (positive, but not significant)" : "");
  else if (!pool[1].rows)
    fprintf(f, "**Partly supported**: gating gains accuracy on nonlinear-boundary tasks; the "
               "linear-boundary half of the claim is not testable (no linear task in the grid).\n\n");
  else if (sig[1])
    fprintf(f, "**Partly supported**: gating gains accuracy on nonlinear-boundary tasks, but also "
               "significantly on linear ones (the claim says it should not).\n\n");
  else
    fprintf(f, "**Supported**: a significant accuracy gain on nonlinear-boundary tasks and none "
               "on linear ones.\n\n");
}

/* ---- claim 4 ---- */

/* The reading of one direction (across depths, or across prefixes within the
 * deepest models) from its slopes b[AQ_*]: "up"/"down" = the 95% bootstrap
 * interval of the slope lies above/below 0. */
typedef struct {
  int testable;  /* the K̃ slope, the K̂ slope or the ∫|K| dA slope has an interval */
  int kh_known;  /* the K̂ or the ∫|K| dA slope has an interval */
  int kt_up, kh_up, ia_up, k_up, kt_down, ld_down;
} analysis_dir;

static analysis_dir analysis_dir_read(const analysis_boot *b) {
  analysis_dir r;
  r.kh_known = isfinite(b[AQ_KH].lo) || isfinite(b[AQ_INTABSK].lo);
  r.testable = isfinite(b[AQ_KT].lo) || r.kh_known;
  r.kt_up = b[AQ_KT].lo > 0, r.kh_up = b[AQ_KH].lo > 0, r.ia_up = b[AQ_INTABSK].lo > 0;
  r.k_up = b[AQ_K].lo > 0, r.kt_down = b[AQ_KT].hi < 0, r.ld_down = b[AQ_LOGDET].hi < 0;
  return r;
}

static const char *analysis_dir_text(const analysis_dir *r, const analysis_boot *b, int flat) {
  if (flat) return "flat to rounding (slopes are rounding noise)";
  if (!isfinite(b[AQ_KT].estimate) && !isfinite(b[AQ_K].estimate) && !isfinite(b[AQ_KH].estimate))
    return "not testable (needs two or more depths)";
  if (!r->testable) return "no interval (needs two or more seeds)";
  if (r->kh_up && r->ia_up) return "K̂ and ∫|K| dA grow: geometric amplification";
  if (r->kh_up)
    return isfinite(b[AQ_INTABSK].lo) ? "K̂ grows but ∫|K| dA does not: the two area-normalised "
                                        "measures disagree"
                                      : "K̂ grows: geometric amplification";
  if (r->ia_up)
    return isfinite(b[AQ_KH].lo) ? "∫|K| dA grows but K̂ does not: the two area-normalised "
                                   "measures disagree"
                                 : "∫|K| dA grows: geometric amplification";
  if (r->kt_up)
    return r->kh_known ? "K̃ grows but K̂ does not: anisotropy, not curvature"
                       : "K̃ grows, but there is no K̂ or ∫|K| dA to tell geometry from anisotropy";
  if (r->k_up)
    return r->ld_down ? "raw K grows but K̃ does not: shrinkage, not geometry (log det g falls)"
                      : "raw K grows but K̃ does not: shrinkage, not geometry";
  if (r->kt_down) return "K̃ decreases";
  return "no significant trend";
}

/* The verdict of one (arch, task, regime) row (analysis/README.md). */
typedef enum {
  C4_NOT_TESTABLE = 0, /* no interval in either direction */
  C4_NOT_SUPPORTED,
  C4_NO_KH,            /* K̃ grows, no K̂ nor ∫|K| dA in the archive */
  C4_KT_ONLY,          /* K̃ grows, K̂ and ∫|K| dA measured and do not */
  C4_SUPPORTED,        /* K̂ or ∫|K| dA grows */
  C4_FLAT              /* ungated skeleton, flat by claim 1 */
} analysis_c4;

static analysis_c4 analysis_c4_verdict(const analysis_dir *dd, const analysis_dir *dp, int flat) {
  if (flat) return C4_FLAT;
  if (dd->kh_up || dd->ia_up || dp->kh_up || dp->ia_up) return C4_SUPPORTED;
  if ((dd->kt_up && dd->kh_known) || (dp->kt_up && dp->kh_known)) return C4_KT_ONLY;
  if (dd->kt_up || dp->kt_up) return C4_NO_KH;
  if (!dd->testable && !dp->testable) return C4_NOT_TESTABLE;
  return C4_NOT_SUPPORTED;
}

static void analysis_md_slope(FILE *f, const char *what, const analysis_boot *b) {
  fprintf(f, "%s %s [%s, %s]", what, F4(b->estimate), F4(b->lo), F4(b->hi));
}

static void analysis_md_slopes(FILE *f, const analysis_boot *b) {
  analysis_md_slope(f, "K̃ slope", &b[AQ_KT]);
  analysis_md_slope(f, ", raw |K| slope", &b[AQ_K]);
  analysis_md_slope(f, ", log det g slope", &b[AQ_LOGDET]);
  analysis_md_slope(f, ", K̂ slope", &b[AQ_KH]);
  analysis_md_slope(f, ", ∫|K| dA slope", &b[AQ_INTABSK]);
  analysis_md_slope(f, ", anisotropy index slope", &b[AQ_ANISO]);
}

/* "anisotropy index a at depth 1 → b at depth 6 (AM/GM x → y)". */
static void analysis_md_aniso(FILE *f, double first, double last, const char *where0,
                              const char *where1) {
  fprintf(f, "anisotropy index %s %s → %s %s (AM/GM %s → %s)", F4(first), where0, F4(last), where1,
          F4(exp(first)), F4(exp(last)));
}

/* One row of claim 4; returns its verdict. */
static analysis_c4 analysis_md_claim4_row(FILE *f, const analysis_data *D, int a, int t, int r) {
  const analysis_amp *A = &D->amp[analysis_aidx(D, a, t, r)];
  int skel = D->regime[r].skeleton;
  int flat = D->arch[a] == ARCH_UNGATED && skel && analysis_ungated_flat(D, t, r);
  analysis_dir dd = analysis_dir_read(A->depth), dp = analysis_dir_read(A->prefix);
  analysis_c4 v = analysis_c4_verdict(&dd, &dp, flat);
  char w0[64], w1[64];
  fprintf(f, "- **%s**, %s, %s%s: across depths %d–%d (%d seed%s%s): ", config_arch_name(D->arch[a]),
          config_task_name(D->task[t]), D->regime[r].name, skel ? " (skeleton)" : "", A->depth_min,
          A->depth_max, A->n_seeds, A->n_seeds == 1 ? "" : "s",
          A->n_seeds < 5 ? ", too few for a reliable bootstrap interval" : "");
  analysis_md_slopes(f, A->depth);
  fprintf(f, "; K̃ ratio deepest/shallowest %s, raw |K| ratio %s, K̂ ratio %s, ∫|K| dA ratio %s; ",
          F4(A->ratio[AQ_KT]), F4(A->ratio[AQ_K]), F4(A->ratio[AQ_KH]), F4(A->ratio[AQ_INTABSK]));
  snprintf(w0, sizeof w0, "at depth %d", A->depth_min);
  snprintf(w1, sizeof w1, "at depth %d", A->depth_max);
  analysis_md_aniso(f, A->first[AQ_ANISO], A->last[AQ_ANISO], w0, w1);
  fprintf(f, " → *%s*. Across prefixes of the depth-%d models: ", analysis_dir_text(&dd, A->depth, flat),
          A->prefix_depth);
  analysis_md_slopes(f, A->prefix);
  fprintf(f, "; ");
  snprintf(w1, sizeof w1, "after layer %d", A->prefix_depth);
  analysis_md_aniso(f, A->prefix_first[AQ_ANISO], A->prefix_last[AQ_ANISO], "after layer 1", w1);
  fprintf(f, " → *%s*.", analysis_dir_text(&dp, A->prefix, flat));
  switch (v) {
    case C4_FLAT: fprintf(f, " Verdict: **Not supported** (flat, claim 1)."); break;
    case C4_NOT_TESTABLE: fprintf(f, " Verdict: **Not testable** (no interval)."); break;
    case C4_NOT_SUPPORTED: fprintf(f, " Verdict: **Not supported**."); break;
    case C4_NO_KH:
      fprintf(f, " Verdict: **Not testable with this archive**: K̃ grows, but without K̂ or ∫|K| dA "
                 "growth of K̃ cannot be told from anisotropy.");
      break;
    case C4_SUPPORTED: fprintf(f, " Verdict: **Supported**."); break;
    case C4_KT_ONLY:
      /* name the anisotropy at the two ends of the direction(s) where K̃ grows */
      fprintf(f, " Verdict: **K̃ only: growth explained by anisotropy**: ");
      if (dd.kt_up && dd.kh_known) {
        snprintf(w1, sizeof w1, "at depth %d", A->depth_max);
        analysis_md_aniso(f, A->first[AQ_ANISO], A->last[AQ_ANISO], w0, w1);
      }
      if (dp.kt_up && dp.kh_known) {
        if (dd.kt_up && dd.kh_known) fprintf(f, "; ");
        snprintf(w1, sizeof w1, "after layer %d", A->prefix_depth);
        analysis_md_aniso(f, A->prefix_first[AQ_ANISO], A->prefix_last[AQ_ANISO], "after layer 1", w1);
      }
      fprintf(f, ", while K̂ and ∫|K| dA do not grow.");
      break;
  }
  /* the measures that disagree, said rather than resolved */
  int sd = dd.kh_up || dd.ia_up, sp = dp.kh_up || dp.ia_up;
  if (!flat && sd != sp && dd.kh_known && dp.kh_known)
    fprintf(f, " Across depths and along the layers disagree: the area-normalised curvature grows %s "
               "only.", sd ? "across depths" : "along the layers");
  if (!flat && ((dd.kh_up && isfinite(A->depth[AQ_KT].lo) && !dd.kt_up) ||
                (dp.kh_up && isfinite(A->prefix[AQ_KT].lo) && !dp.kt_up)))
    fprintf(f, " K̂ grows where K̃ does not: the metric becomes less anisotropic.");
  fprintf(f, "\n");
  return v;
}

static void analysis_md_claim4(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 4 — depth amplifies curvature (in a structured regime)\n\n"
             "Slopes against log depth and against log prefix (amplification.csv; 95%% paired "
             "bootstrap over seeds, B = %d) of log mean |K̃| (trace-normalised), log mean |K| (raw), "
             "mean log det g (contraction), log mean |K̂| (area-normalised), log ∫|K| dA and the "
             "median anisotropy index log(AM/GM of g's eigenvalues). Raw K has units 1/length², so "
             "a layer that only shrinks its output raises it; K̃ = K̂ · AM/GM, so K̃ also grows when "
             "the metric only becomes anisotropic (the representation folds into a thin ribbon). "
             "A row is **Supported** only when K̂ or ∫|K| dA grows (analysis/README.md).\n\n",
          D->opt.bootstrap);
  int n_rows = 0, n_sup = 0, n_sup_skel = 0, n_ktonly = 0, n_nokh = 0, n_testable = 0, n_shrink = 0;
  int order[ARCH_COUNT], no = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int a = 0; a < D->n_arch; a++)
      if ((pass == 0) == analysis_is_gated(D->arch[a])) order[no++] = a;
  for (int t = 0; t < D->n_task; t++)
    for (int r = 0; r < D->n_regime; r++)
      for (int oi = 0; oi < no; oi++) {
        int a = order[oi];
        const analysis_amp *A = &D->amp[analysis_aidx(D, a, t, r)];
        if (!A->present) continue;
        analysis_c4 v = analysis_md_claim4_row(f, D, a, t, r);
        if (!analysis_is_gated(D->arch[a])) continue;
        n_rows++;
        n_testable += v != C4_NOT_TESTABLE;
        n_sup += v == C4_SUPPORTED, n_sup_skel += v == C4_SUPPORTED && D->regime[r].skeleton;
        n_ktonly += v == C4_KT_ONLY, n_nokh += v == C4_NO_KH;
        n_shrink += v == C4_NOT_SUPPORTED && (A->depth[AQ_K].lo > 0 || A->prefix[AQ_K].lo > 0);
      }
  fprintf(f, "\n");
  if (n_testable == 0)
    fprintf(f, "**Not testable with this archive**: no gated row has two or more depths (or a model "
               "deeper than one layer) and two or more seeds.\n\n");
  else if (n_sup > 0)
    fprintf(f, "**Supported** in %d of %d gated (arch, task, regime) rows (%d in the affine "
               "skeleton): the area-normalised K̂ or ∫|K| dA grows with depth or along the "
               "layers.%s\n\n",
            n_sup, n_rows, n_sup_skel,
            n_ktonly ? " In other rows only K̃ grows (anisotropy, not curvature): see above." : "");
  else if (n_ktonly > 0)
    fprintf(f, "**K̃ only: growth explained by anisotropy** in %d of %d gated (arch, task, regime) "
               "rows: the trace-normalised K̃ grows, the area-normalised K̂ and ∫|K| dA do not. The "
               "representation folds into a thin ribbon (the anisotropy index grows); its curvature "
               "per unit area does not.\n\n",
            n_ktonly, n_rows);
  else if (n_nokh > 0)
    fprintf(f, "**Not testable with this archive**: K̃ grows in %d of %d gated rows, but the "
               "archive carries no K̂ or ∫|K| dA (no point classification), so that growth cannot be "
               "told from anisotropy.\n\n",
            n_nokh, n_rows);
  else if (n_shrink > 0)
    fprintf(f, "**Not supported by these data**: raw K grows with depth in %d gated rows but "
               "neither K̂, ∫|K| dA nor K̃ does — that is shrinkage of the representation, not "
               "geometry.\n\n",
            n_shrink);
  else
    fprintf(f, "**Not supported by these data**: neither K̂, ∫|K| dA, K̃ nor raw K grows "
               "significantly with depth in any gated row.\n\n");
}

int analysis_md_claims(FILE *f, const analysis_data *D) {
  CS_CHECK(analysis_md_claim1(f, D));
  CS_CHECK(analysis_md_claim2(f, D));
  analysis_md_claim3(f, D);
  analysis_md_claim4(f, D);
  return CS_OK;
}

/* ---- sample efficiency (learning curves, learning.c) ---- */

/* A sample count: "412.3", "≤ 64" (reached at the smallest size), "not reached (> 2048)". */
static const char *analysis_samples_text(char *buf, size_t len, const analysis_lcurve *c, double v,
                                         int where) {
  if (where == 2 && v == c->x[0])
    snprintf(buf, len, "≤ %d", c->x[0]);
  else if (isinf(v))
    snprintf(buf, len, "not reached (> %d)", c->x[c->n_x - 1]);
  else
    snprintf(buf, len, "%s", F4(v));
  return buf;
}

/* "[lo, hi]" of a sample count or ratio interval, inf as ∞. */
static const char *analysis_interval_text(char *buf, size_t len, const analysis_boot *b) {
  if (isnan(b->lo) || isnan(b->hi))
    snprintf(buf, len, "no interval");
  else
    snprintf(buf, len, "[%s, %s]", isinf(b->lo) ? "∞" : F4(b->lo), isinf(b->hi) ? "∞" : F4(b->hi));
  return buf;
}

/* One curve's line; counts its verdicts into n[0] yes, n[1] no, n[2] inconclusive. */
static void analysis_md_learning_curve(FILE *f, const analysis_data *D, const analysis_lcurve *c,
                                       int *n) {
  int u = analysis_find_arch(D, ARCH_UNGATED);
  fprintf(f, "- %s, depth %d, regime `%s` (train_points %d … %d, %d value%s, %d seed%s, target %s): ",
          config_task_name(D->task[c->t]), D->depth[c->d], c->base, c->x[0], c->x[c->n_x - 1],
          c->n_x, c->n_x == 1 ? "" : "s", c->n_seeds, c->n_seeds == 1 ? "" : "s", F4(c->target));
  if (c->n_x < 2) {
    fprintf(f, "only one train_points value: no learning curve, no verdict.\n");
    n[2]++;
    return;
  }
  char b1[64], b2[64];
  for (int a = 0; a < D->n_arch; a++) {
    if (c->reached[a] < 0) continue;
    fprintf(f, "%s %s %s", config_arch_name(D->arch[a]),
            analysis_samples_text(b1, sizeof b1, c, c->samples[a].estimate, c->reached[a]),
            analysis_interval_text(b2, sizeof b2, &c->samples[a]));
    fprintf(f, "; ");
  }
  if (u < 0 || c->reached[u] < 0) {
    fprintf(f, "no ungated cells on this curve: no ratio, no verdict.\n");
    n[2]++;
    return;
  }
  int any = 0;
  for (int a = 0; a < D->n_arch; a++) {
    if (!analysis_is_gated(D->arch[a]) || c->reached[a] < 0) continue;
    const char *v = analysis_lc_verdict(D, c, a);
    fprintf(f, "%sratio ungated/%s %s %s → **%s**", any++ ? "; " : "", config_arch_name(D->arch[a]),
            isinf(c->ratio[a].estimate) ? "∞" : F4(c->ratio[a].estimate),
            analysis_interval_text(b2, sizeof b2, &c->ratio[a]), v);
    n[v[0] == 'y' ? 0 : v[0] == 'n' ? 1 : 2]++;
  }
  if (!any) fprintf(f, "no gated arch on this curve: no verdict");
  if (c->n_seeds < 2) fprintf(f, " (one seed: no interval, so no verdict)");
  fprintf(f, ".\n");
}

int analysis_md_learning(FILE *f, const analysis_data *D) {
  if (D->ax_train < 0) return CS_OK;
  fprintf(f, "## Is gating more sample-efficient? (learning curves)\n\n");
  int len = spec_axis_length(D->spec, D->ax_train);
  fprintf(f, "Test accuracy against the number of training points (the `train_points` axis, %d "
             "value%s) per arch: [learning_curve.csv](learning_curve.csv). Per curve (task, depth, "
             "regime without train_points) the target accuracy is %s; the training points an arch "
             "needs to reach it come from monotone interpolation of its mean accuracy (running "
             "maximum, linear in log train_points between the sizes around the target), with a 95%% "
             "percentile bootstrap interval over seeds (B = %d, one draw of seeds for every arch and "
             "size: paired by seed). The ratio samples(ungated)/samples(gated) above 1 means gating "
             "needs fewer; its interval decides: above 1 **yes**, below 1 **no**, else "
             "**inconclusive** ([samples_to_target.csv](samples_to_target.csv)).\n\n",
          len, len == 1 ? "" : "s",
          isfinite(D->opt.target_acc) ? "given by `--target-acc`" : "95% of the best mean accuracy any arch reaches on it",
          D->opt.bootstrap);
  int n[3] = {0, 0, 0};
  for (int i = 0; i < D->n_lc; i++) analysis_md_learning_curve(f, D, &D->lc[i], n);
  const char *overall = n[0] > 0 && n[1] == 0 ? "yes" : n[1] > 0 && n[0] == 0 ? "no" : "inconclusive";
  fprintf(f, "\nVerdict: **gated reaches the target with fewer samples: %s** (%d yes, %d no, %d "
             "inconclusive of %d comparisons)%s\n\n",
          overall, n[0], n[1], n[2], n[0] + n[1] + n[2],
          len < 2 ? ". The train_points axis has fewer than two values: there is no learning curve."
                  : n[0] && n[1] ? ": the curves disagree." : ".");
  return CS_OK;
}

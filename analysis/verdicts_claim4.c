/* verdicts_claim4.c — claim 4's section of index.md, depth amplifies
 * curvature (analysis/README.md, "Verdicts in index.md"), printed from the
 * checks of claims.c: per (arch, task, regime) row and direction the
 * per-seed slope tests of K̂, ∫|K| dA and K̃ after Holm, the descriptive
 * raw-K and log det g slopes of amplification.csv, and the decomposition
 * Δ log K̃ = Δ log K̂ + Δ anisotropy; Supported only when K̂ or ∫|K| dA
 * grows, growth of K̃ alone is anisotropy. */
#include "checks.h"
#include "claims.h"
#include "compute.h"
#include "output.h"
#include "writers.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* The reading of one direction (across depths, or along the layers of the
 * deepest models) from claim 4's checks (claims.c): "up" = the per-seed
 * slope test is supported after Holm; raw K and log det g (shrinkage) from
 * amplification.csv's bootstrap intervals, descriptive only. */
typedef struct {
  int testable;  /* some K̃, K̂ or ∫|K| dA check */
  int kh_known;  /* a K̂ or ∫|K| dA check */
  int kt_up, kh_up, ia_up, k_up, kt_down, ld_down;
  int few;       /* every check too few seeds */
  int needs;     /* the seeds the K̂ / ∫|K| dA checks need */
  const analysis_check *c[C4M_COUNT];
} analysis_dir;

static analysis_dir analysis_dir_read(const analysis_data *D, int a, int t, int r, int prefix,
                                      const analysis_boot *b) {
  analysis_dir d;
  memset(&d, 0, sizeof d);
  for (int m = 0; m < C4M_COUNT; m++) {
    char scope[320];
    analysis_c4_scope(D, a, t, r, prefix, m, scope, sizeof scope);
    d.c[m] = analysis_check_find(D, "4", scope);
    if (d.c[m] && d.c[m]->n < 2) d.c[m] = NULL;
  }
  const analysis_check *kh = d.c[C4M_KH], *ia = d.c[C4M_INTABSK], *kt = d.c[C4M_KT];
  d.kh_known = kh || ia;
  d.testable = d.kh_known || kt;
  d.kh_up = kh && kh->decision == ANALYSIS_SUPPORTED;
  d.ia_up = ia && ia->decision == ANALYSIS_SUPPORTED;
  d.kt_up = kt && kt->decision == ANALYSIS_SUPPORTED;
  d.kt_down = kt && kt->effect_hi < 0;
  d.k_up = b[AQ_K].lo > 0, d.ld_down = b[AQ_LOGDET].hi < 0;
  d.few = d.testable;
  for (int m = 0; m < C4M_COUNT; m++) {
    if (d.c[m]) d.few &= d.c[m]->decision == ANALYSIS_TOO_FEW;
    if (d.c[m] && m != C4M_KT && d.c[m]->needs > d.needs) d.needs = d.c[m]->needs;
  }
  return d;
}

static const char *analysis_dir_text(const analysis_dir *r, const analysis_boot *b, int flat) {
  if (flat) return "flat to rounding (slopes are rounding noise)";
  if (!isfinite(b[AQ_KT].estimate) && !isfinite(b[AQ_K].estimate) && !isfinite(b[AQ_KH].estimate))
    return "not testable (needs two or more depths)";
  if (!r->testable) return "no test (needs two or more seeds)";
  if (r->few) return "too few seeds for any test to reach α after Holm";
  if (r->kh_up && r->ia_up) return "K̂ and ∫|K| dA grow: geometric amplification";
  if (r->kh_up)
    return r->c[C4M_INTABSK] ? "K̂ grows but ∫|K| dA does not: the two area-normalised "
                                        "measures disagree"
                                      : "K̂ grows: geometric amplification";
  if (r->ia_up)
    return r->c[C4M_KH] ? "∫|K| dA grows but K̂ does not: the two area-normalised "
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
  C4_FLAT,             /* ungated skeleton, flat by claim 1 */
  C4_TOO_FEW           /* every check of both directions too few seeds */
} analysis_c4;

static analysis_c4 analysis_c4_verdict(const analysis_dir *dd, const analysis_dir *dp, int flat) {
  if (flat) return C4_FLAT;
  if ((dd->few || !dd->testable) && (dp->few || !dp->testable) && (dd->testable || dp->testable))
    return C4_TOO_FEW;
  if (dd->kh_up || dd->ia_up || dp->kh_up || dp->ia_up) return C4_SUPPORTED;
  if ((dd->kt_up && dd->kh_known) || (dp->kt_up && dp->kh_known)) return C4_KT_ONLY;
  if (dd->kt_up || dp->kt_up) return C4_NO_KH;
  if (!dd->testable && !dp->testable) return C4_NOT_TESTABLE;
  return C4_NOT_SUPPORTED;
}

/* One check in a table cell: "K̂ 0.12 [0.05, 0.2], p_adj 0.03 → supported"
 * (analysis_md_check has the long form; verdicts.csv every number). */
static void analysis_md_check_cell(FILE *f, const analysis_check *c, const char *sym) {
  fprintf(f, "%s %s [%s, %s], p_adj %s → %s", sym, F4(c->effect), F4(c->effect_lo), F4(c->effect_hi),
          F4(c->p_adj), c->decision == ANALYSIS_SUPPORTED ? "**supported**"
                                                           : analysis_decision_name(c->decision));
}

/* The direction's per-seed slope tests, in one table cell ("—" without). */
static void analysis_md_dir(FILE *f, const analysis_dir *d) {
  static const char *const SYM[C4M_COUNT] = {"K̂", "∫\\|K\\| dA", "K̃"};
  int any = 0;
  for (int m = 0; m < C4M_COUNT; m++) {
    if (!d->c[m]) continue;
    fprintf(f, "%s", any++ ? "; " : "");
    analysis_md_check_cell(f, d->c[m], SYM[m]);
  }
  if (!any) fprintf(f, "—");
}

/* The verdict of a row as its table cell. */
static void analysis_md_c4_verdict(FILE *f, analysis_c4 v, const analysis_dir *dd,
                                   const analysis_dir *dp, int n_seeds) {
  switch (v) {
    case C4_FLAT: fprintf(f, "**Not supported** (flat, claim 1)"); break;
    case C4_NOT_TESTABLE: fprintf(f, "**Not testable** (no test)"); break;
    case C4_NOT_SUPPORTED: fprintf(f, "**Not supported**"); break;
    case C4_TOO_FEW:
      fprintf(f, "**too few seeds** (n = %d; needs ≥ %d)", n_seeds,
              dd->needs > dp->needs ? dd->needs : dp->needs);
      break;
    case C4_NO_KH:
      fprintf(f, "**Not testable with this archive**: K̃ grows, but without K̂ or ∫\\|K\\| dA "
                 "that cannot be told from anisotropy");
      break;
    case C4_SUPPORTED: fprintf(f, "**Supported**"); break;
    case C4_KT_ONLY: fprintf(f, "**K̃ only: growth explained by anisotropy** (see the decomposition)"); break;
  }
  /* the measures that disagree, said rather than resolved */
  int sd = dd->kh_up || dd->ia_up, sp = dp->kh_up || dp->ia_up;
  if (v != C4_FLAT && sd != sp && dd->kh_known && dp->kh_known)
    fprintf(f, "; across depths and along the layers disagree: the area-normalised curvature grows "
               "%s only", sd ? "across depths" : "along the layers");
  if (v != C4_FLAT && ((dd->kh_up && dd->c[C4M_KT] && !dd->kt_up) ||
                       (dp->kh_up && dp->c[C4M_KT] && !dp->kt_up)))
    fprintf(f, "; K̂ grows where K̃ does not: the metric becomes less anisotropic");
}

/* "Δ log K̃ a = Δ log K̂ b + Δ anisotropy c" (seed means over the same cells), or "—". */
static void analysis_md_decomp(FILE *f, const analysis_decomp *x, int flat) {
  if (flat || x->n == 0) {
    fprintf(f, "—");
    return;
  }
  fprintf(f, "%s → %s = (%s → %s) + (%s → %s): Δ %s = %s + %s", F4(x->kt[0]), F4(x->kt[1]),
          F4(x->kh[0]), F4(x->kh[1]), F4(x->an[0]), F4(x->an[1]), F4(x->kt[1] - x->kt[0]),
          F4(x->kh[1] - x->kh[0]), F4(x->an[1] - x->an[0]));
}

/* One row of claim 4 in the verdict table (part 0) or in the table of the
 * descriptive slopes and the decomposition (part 1, one line per
 * direction); returns its verdict. */
static analysis_c4 analysis_md_claim4_row(FILE *f, const analysis_data *D, int a, int t, int r,
                                          int part) {
  const analysis_amp *A = &D->amp[analysis_aidx(D, a, t, r)];
  int skel = D->regime[r].skeleton;
  int flat = D->arch[a] == ARCH_UNGATED && skel && analysis_ungated_flat(D, t, r);
  analysis_dir dd = analysis_dir_read(D, a, t, r, 0, A->depth), dp = analysis_dir_read(D, a, t, r, 1, A->prefix);
  analysis_c4 v = analysis_c4_verdict(&dd, &dp, flat);
  char regime[256];
  analysis_md_text(D->regime[r].name, regime, sizeof regime);
  const char *arch = config_arch_name(D->arch[a]), *task = config_task_name(D->task[t]);
  if (part == 0) {
    fprintf(f, "| %s | %s | %s%s | %d–%d | %d | ", arch, task, regime, skel ? " (skeleton)" : "",
            A->depth_min, A->depth_max, A->n_seeds);
    analysis_md_dir(f, &dd);
    fprintf(f, " | *%s* | %d | ", analysis_dir_text(&dd, A->depth, flat), A->prefix_depth);
    analysis_md_dir(f, &dp);
    fprintf(f, " | *%s* | ", analysis_dir_text(&dp, A->prefix, flat));
    analysis_md_c4_verdict(f, v, &dd, &dp, A->n_seeds);
    fprintf(f, " |\n");
    return v;
  }
  analysis_decomp xd, xp;
  analysis_c4_decomp(D, a, t, r, 0, &xd);
  analysis_c4_decomp(D, a, t, r, 1, &xp);
  fprintf(f, "| %s | %s | %s | depth %d → %d | %s | %s | %s | %s / %s / %s / %s | %s → %s (AM/GM %s → %s) | ",
          arch, task, regime, A->depth_min, A->depth_max, F4(A->depth[AQ_K].estimate),
          F4(A->depth[AQ_LOGDET].estimate), F4(A->depth[AQ_ANISO].estimate), F4(A->ratio[AQ_KT]),
          F4(A->ratio[AQ_K]), F4(A->ratio[AQ_KH]), F4(A->ratio[AQ_INTABSK]), F4(A->first[AQ_ANISO]),
          F4(A->last[AQ_ANISO]), F4(exp(A->first[AQ_ANISO])), F4(exp(A->last[AQ_ANISO])));
  analysis_md_decomp(f, &xd, flat);
  fprintf(f, " |\n| %s | %s | %s | layer 1 → %d | %s | %s | %s | — | %s → %s (AM/GM %s → %s) | ", arch,
          task, regime, A->prefix_depth, F4(A->prefix[AQ_K].estimate),
          F4(A->prefix[AQ_LOGDET].estimate), F4(A->prefix[AQ_ANISO].estimate),
          F4(A->prefix_first[AQ_ANISO]), F4(A->prefix_last[AQ_ANISO]),
          F4(exp(A->prefix_first[AQ_ANISO])), F4(exp(A->prefix_last[AQ_ANISO])));
  analysis_md_decomp(f, &xp, flat);
  fprintf(f, " |\n");
  return v;
}

/* The gated rows' verdicts, counted for the claim's closing line. */
typedef struct {
  int rows, sup, sup_skel, ktonly, nokh, testable, shrink;
} analysis_c4_counts;

static void analysis_c4_tally(const analysis_data *D, int a, int r, const analysis_amp *A,
                              analysis_c4 v, analysis_c4_counts *n) {
  if (!config_arch_gated(D->arch[a])) return;
  n->rows++;
  n->testable += v != C4_NOT_TESTABLE;
  n->sup += v == C4_SUPPORTED, n->sup_skel += v == C4_SUPPORTED && D->regime[r].skeleton;
  n->ktonly += v == C4_KT_ONLY, n->nokh += v == C4_NO_KH;
  n->shrink += v == C4_NOT_SUPPORTED && (A->depth[AQ_K].lo > 0 || A->prefix[AQ_K].lo > 0);
}

void analysis_md_claim4(FILE *f, const analysis_data *D) {
  const analysis_check *V = analysis_check_find(D, "4", "verdict");
  int fam = V && V->n ? V->family_size : 0;
  fprintf(f, "### Claim 4 — depth amplifies curvature (in a structured regime)\n\n"
             "Per seed, the least-squares slope of log mean |K̂| (area-normalised), log ∫|K| dA and "
             "log mean |K̃| (trace-normalised) against log depth (last layer of each depth's model) "
             "and against log layer (the seed's deepest model); per row and direction a one-sided "
             "sign-flip test that the slope is above 0, mean slope with 95%% t interval and d_z. "
             "The claim's family is every gated (arch, task, regime) row × direction × {K̂, ∫|K| dA}: "
             "**%d checks, Holm-adjusted** (α = %g); K̃ is a family of its own (it reads anisotropy, "
             "not the claim). Raw K has units 1/length², so a layer that only shrinks its output "
             "raises it; K̃ = K̂ · AM/GM, so K̃ also grows when the metric only becomes anisotropic "
             "(the representation folds into a thin ribbon): the decomposition Δ log K̃ = Δ log K̂ + "
             "Δ anisotropy says how much. A row is **Supported** only when K̂ or ∫|K| dA grows "
             "(analysis/README.md).\n\n",
          fam, D->opt.alpha);
  analysis_c4_counts tally = {0};
  int order[ARCH_COUNT], no = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int a = 0; a < D->n_arch; a++)
      if ((pass == 0) == config_arch_gated(D->arch[a])) order[no++] = a;
  // the verdict table (part 0), then the descriptive slopes and the
  // decomposition behind it (part 1)
  static const char *const HEAD[2] = {
      "| arch | task | regime | depths | seeds | across depths: per-seed slope, 95% t interval, "
      "Holm p_adj | reading | L | along the layers of the depth-L models | reading | verdict |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n",
      "Behind the table, descriptive (seed means, amplification.csv): the slopes of raw \\|K\\| "
      "(a layer that only shrinks its output raises it), of log det g (negative: shrinkage) and of "
      "the median anisotropy index; the ratios deepest/shallowest; the anisotropy index at both "
      "ends; and the decomposition, mean over seeds of log mean \\|K̃\\| = log mean \\|K̂\\| + "
      "effective anisotropy log(mean \\|K̃\\|/mean \\|K̂\\|), from one end to the other.\n\n"
      "| arch | task | regime | from → to | raw \\|K\\| slope | log det g slope | anisotropy slope "
      "| ratio K̃ / raw K / K̂ / ∫\\|K\\| dA | anisotropy index | log K̃ = log K̂ + anisotropy |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n"};
  for (int part = 0; part < 2; part++) {
    int any = 0;
    for (int t = 0; t < D->n_task; t++)
      for (int r = 0; r < D->n_regime; r++)
        for (int oi = 0; oi < no; oi++) {
          const analysis_amp *A = &D->amp[analysis_aidx(D, order[oi], t, r)];
          if (!A->present) continue;
          if (!any++) fprintf(f, "%s", HEAD[part]);
          analysis_c4 v = analysis_md_claim4_row(f, D, order[oi], t, r, part);
          if (part == 0) analysis_c4_tally(D, order[oi], r, A, v, &tally);
        }
    if (any) fprintf(f, "\n");
  }
  int n_rows = tally.rows, n_sup = tally.sup, n_sup_skel = tally.sup_skel, n_ktonly = tally.ktonly;
  int n_nokh = tally.nokh, n_testable = tally.testable, n_shrink = tally.shrink;
  char b1[96], b2[160];
  if (V && V->n == 0 && n_rows > 0)
    fprintf(f, "**Not testable with this archive**: it carries no K̂ or ∫|K| dA (no point "
               "classification), and growth of K̃ alone cannot be told from anisotropy.\n\n");
  else if (n_testable == 0 || !V)
    fprintf(f, "**Not testable with this archive**: no gated row has two or more depths (or a model "
               "deeper than one layer) and two or more seeds.\n\n");
  else if (V->decision == ANALYSIS_TOO_FEW)
    fprintf(f, "**%s** for the claim's family of %d checks: no check can reach α = %g after Holm "
               "(the sweep would need ≥ %d seeds).%s\n\n",
            analysis_check_decision_text(b1, sizeof b1, V), fam, D->opt.alpha, V->needs,
            n_ktonly ? " K̃ grows in some rows (anisotropy, not curvature): see the table." : "");
  else if (n_sup > 0)
    fprintf(f, "**Supported** in %d of %d gated (arch, task, regime) rows (%d in the affine "
               "skeleton): the area-normalised K̂ or ∫|K| dA grows with depth or along the "
               "layers (strongest check: %s; n = %d seeds).%s\n\n",
            n_sup, n_rows, n_sup_skel, analysis_check_p_text(b2, sizeof b2, V), V->n,
            n_ktonly ? " In other rows only K̃ grows (anisotropy, not curvature): see the table." : "");
  else if (n_ktonly > 0)
    fprintf(f, "**Not supported — K̃ only: growth explained by anisotropy** in %d of %d gated (arch, "
               "task, regime) rows: the trace-normalised K̃ grows, the area-normalised K̂ and ∫|K| dA "
               "do not (smallest %s; n = %d seeds). The representation folds into a thin ribbon (the anisotropy "
               "grows); its curvature per unit area does not.\n\n",
            n_ktonly, n_rows, analysis_check_p_text(b2, sizeof b2, V), V->n);
  else if (n_nokh > 0)
    fprintf(f, "**Not testable with this archive**: K̃ grows in %d of %d gated rows, but the "
               "archive carries no K̂ or ∫|K| dA (no point classification), so that growth cannot be "
               "told from anisotropy.\n\n",
            n_nokh, n_rows);
  else if (n_shrink > 0)
    fprintf(f, "**Not supported by these data**: raw K grows with depth in %d gated rows but "
               "neither K̂, ∫|K| dA nor K̃ does — that is shrinkage of the representation, not "
               "geometry (smallest %s; n = %d seeds).\n\n",
            n_shrink, analysis_check_p_text(b2, sizeof b2, V), V->n);
  else
    fprintf(f, "**Not supported by these data**: neither K̂, ∫|K| dA, K̃ nor raw K grows "
               "significantly with depth in any gated row (smallest %s; n = %d seeds).\n\n",
            analysis_check_p_text(b2, sizeof b2, V), V->n);
}

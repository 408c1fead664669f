/* test_analysis_verdicts.c — the verdict rules of `curvsweep analyze` on the
 * classified statistics (analysis/VERDICTS.md, "Verdicts in index.md",
 * "Statistics of the verdicts"), on synthetic results analysed in memory
 * (analysis_verdicts_results for the structs, analysis_run_results for the
 * CSVs) so the test does not depend on which geom_stats fields the archive
 * format carries. 7 seeds: the smallest number with which a one-sided
 * exact sign-flip test can pass Holm over claim 4's family of 4 (4/128 < 0.05):
 *   claim 4: K̃ grows (slope 2 in every seed) while K̂ stays constant → the
 *            K̃ checks supported (p = 1/128, Holm over 2: 2/128), the K̂ and
 *            ∫|K| dA checks not (all-zero slopes: p = 1), the claim not
 *            supported; the decomposition Δ log K̃ = Δ log K̂ + Δ anisotropy
 *            against hand values; K̂ grows → every check p = 1/128, Holm
 *            4/128, Supported; neither → not supported; 3 seeds → too few
 *            (n = 3; needs ≥ 7); the CSV columns against hand values;
 *   claim 1: every resolved point of ungated skeleton cells flat → holds;
 *            curved points → does not; unresolved points above 1% of the
 *            non-degenerate ones, and groups with under half of the points
 *            resolved (degenerate) → flagged in index.md's group lines;
 *   per-point histograms use only points classified flat or curved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/analysis.h"
#include "curvsweep/error.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>






/* The one section "### Claim k" of index.md (up to the next heading of its level or above). */
static char *claim_section(const char *md, int k) {
  char head[32];
  snprintf(head, sizeof head, "### Claim %d", k);
  const char *a = strstr(md, head);
  assert_non_null(a);
  const char *b = strstr(a + 1, "\n### ");
  const char *c = strstr(a + 1, "\n## ");
  if (!b || (c && c < b)) b = c;
  size_t n = b ? (size_t)(b - a) : strlen(a);
  char *s = malloc(n + 1);
  memcpy(s, a, n);
  s[n] = '\0';
  return s;
}


/* 2 archs × 3 depths × 7 seeds of task circles, the affine skeleton (the
 * default config); cell id = (a·3 + d)·7 + s. */
static const char *SPEC = "[sweep]\nname = verdicts\nsave_points = yes\n[grid]\narch = ungated, gated\n"
                          "depth = 1, 2, 4\nseed = 0..6\n[curvature]\npoints = 16\n";
enum { N_ARCH = 2, N_DEPTH = 3, N_SEED = 7, N_CELLS = N_ARCH * N_DEPTH * N_SEED, N_PTS = 16 };
static const int DEPTHS[N_DEPTH] = {1, 2, 4};

/* How the gated cells' statistics depend on the prefix l (1..L) and seed s,
 * with c_s = 1 + 0.1 s (classes: 0.1 degenerate, 0.05 unresolved, 0.05 flat, 0.8 curved):
 *   KT_ONLY  K̃ = c_s l², K̂ = c_s, ∫|K| dA = 0.5 c_s, anisotropy 0.5 + 2 log l
 *   KH_GROWS K̃ = K̂ = c_s l, ∫|K| dA = 0.5 c_s l, anisotropy 0.5
 *   NEITHER  K̃ = K̂ = c_s, ∫|K| dA = 0.5 c_s, anisotropy 0.5
 * Ungated cells: every point flat (S = 0), except as `ungated` says. */
typedef enum { KT_ONLY, KH_GROWS, NEITHER } gated_case;
typedef enum { U_FLAT, U_CURVED, U_UNRESOLVED } ungated_case;

static double cs_of(int s) { return 1.0 + 0.1 * s; }

static void fill_gated(geom_stats *g, gated_case gc, int l, int s) {
  double c = cs_of(s);
  g->degenerate_frac = 0.1, g->unresolved_frac = 0.05, g->flat_frac = 0.05, g->curved_frac = 0.8;
  double kt = gc == KT_ONLY ? c * l * l : gc == KH_GROWS ? c * l : c;
  double kh = gc == KH_GROWS ? c * l : c;
  g->K_absmean = g->K_mean = kh;
  g->Kt_absmean = g->Kt_mean = kt;
  g->Kh_absmean = g->Kh_mean = kh;
  g->intabsK = g->intK = 0.5 * kh;
  g->aniso_median = gc == KT_ONLY ? 0.5 + 2.0 * log(l) : 0.5;
  g->logdet_mean = -0.1 * l;
}

/* Ungated: flat everywhere; U_CURVED: seed 3 of depth 2 has curved points at
 * prefix 2; U_UNRESOLVED: at depth 4 half the points are degenerate and
 * 0.009 unresolved, 1.8% of the non-degenerate ones. */
static void fill_ungated(geom_stats *g, ungated_case uc, int d, int l, int s) {
  g->degenerate_frac = 0, g->unresolved_frac = 0, g->flat_frac = 1, g->curved_frac = 0;
  g->logdet_mean = -0.1 * l;
  if (uc == U_CURVED && DEPTHS[d] == 2 && l == 2 && s == 3) {
    g->flat_frac = 0.75, g->curved_frac = 0.25;
    g->K_absmean = g->Kt_absmean = g->Kh_absmean = 1e-3;
  }
  if (uc == U_UNRESOLVED && DEPTHS[d] == 4)
    g->degenerate_frac = 0.5, g->unresolved_frac = 0.009, g->flat_frac = 0.491;
}

/* Per-point arrays of the last layer: point i < 4 unresolved with S = −1e6,
 * the others curved with S = 2 (i + 1) and log det g = 0 (K̂ = K = i + 1). */
static void fill_points(cs_cell_result *r) {
  size_t np = (size_t)N_PTS * r->depth;
  r->n_points = N_PTS, r->m = 2;
  r->pt_x = calloc((size_t)N_PTS * 2, sizeof(double));
  r->pt_S = calloc(np, sizeof(double)), r->pt_S_tilde = calloc(np, sizeof(double));
  r->pt_S_err = calloc(np, sizeof(double)), r->pt_tr_g = calloc(np, sizeof(double));
  r->pt_logdet_g = calloc(np, sizeof(double)), r->pt_H_norm = calloc(np, sizeof(double));
  r->pt_class = calloc(np, sizeof(int8_t));
  for (int i = 0; i < N_PTS; i++) {
    r->pt_x[2 * i] = -1 + 2.0 * i / N_PTS, r->pt_x[2 * i + 1] = 0.5;
    for (int l = 0; l < r->depth; l++) {
      size_t k = (size_t)l * N_PTS + i;
      int unres = i < 4;
      r->pt_S[k] = r->pt_S_tilde[k] = unres ? -1e6 : 2.0 * (i + 1);
      r->pt_S_err[k] = unres ? 1e7 : 1e-12;
      r->pt_tr_g[k] = 2.0;
      r->pt_class[k] = unres ? GEOM_UNRESOLVED : GEOM_CURVED;
    }
  }
}

static void make_results(cs_cell_result *res, gated_case gc, ungated_case uc, int points) {
  for (int a = 0; a < N_ARCH; a++)
    for (int d = 0; d < N_DEPTH; d++)
      for (int s = 0; s < N_SEED; s++) {
        int64_t id = (a * N_DEPTH + d) * N_SEED + s;
        cs_cell_result *r = &res[id];
        *r = make_result(id, DEPTHS[d], 0.8 + 0.1 * a);
        for (int l = 1; l <= r->depth; l++) {
          geom_stats *g = &r->curv[l - 1];
          g->n_points = N_PTS;
          if (a == 1)
            fill_gated(g, gc, l, s);
          else
            fill_ungated(g, uc, d, l, s);
        }
        if (points && a == 1) fill_points(r);
      }
}

/* Analyse in memory into a fresh directory; returns index.md's text. */
static char *run(cs_cell_result *res, char *dir, size_t len) {
  return analyse_results(SPEC, res, N_CELLS, NULL, "analysis_verdicts", dir, len);
}

static const char *SCOPE_KT = "gated;circles;all;across-depths;Kt";
static const char *SCOPE_KH = "gated;circles;all;across-depths;Kh";
static const char *SCOPE_IA_P = "gated;circles;all;along-layers;intabsK";

/* (a) K̃ ∝ l² grows, K̂ constant, anisotropy 0.5 + 2 log l grows. */
static void test_claim4_kt_only(void **state) {
  (void)state;
  cs_cell_result res[N_CELLS];
  make_results(res, KT_ONLY, U_FLAT, 0);
  analysis_checks V = verdicts_of(SPEC, res, N_CELLS, NULL);
  /* K̃: every seed's slope of log(c_s L²) on log L is 2: the one all-positive pattern of
   * 2^7, p = 1/128; Holm over the K̃ family (two directions) doubles it */
  const analysis_check *c = find_check(&V, "4", SCOPE_KT, 0);
  assert_int_equal(c->n, 7);
  assert_close(c->effect, 2.0, 1e-12);
  assert_close(c->effect_lo, 2.0, 1e-12);
  assert_close(c->p_raw, 1.0 / 128, 0.0);
  assert_close(c->p_adj, 2.0 / 128, 0.0);
  assert_int_equal(c->family_size, 2);
  assert_string_equal(c->adjust, "holm(2)");
  assert_int_equal(c->decision, ANALYSIS_SUPPORTED);
  /* K̂ and ∫|K| dA: slope 0 in every seed; every sign pattern ties T = 0, p = 1 */
  c = find_check(&V, "4", SCOPE_KH, 0);
  assert_close(c->effect, 0.0, 1e-12);
  assert_close(c->p_raw, 1.0, 0.0);
  assert_int_equal(c->family_size, 4); /* one gated row × 2 directions × {K̂, ∫|K| dA} */
  assert_int_equal(c->decision, ANALYSIS_NOT_SUPPORTED);
  c = find_check(&V, "4", SCOPE_IA_P, 0);
  assert_int_equal(c->decision, ANALYSIS_NOT_SUPPORTED);
  c = find_check(&V, "4", "verdict", 1);
  assert_int_equal(c->decision, ANALYSIS_NOT_SUPPORTED);
  assert_string_equal(c->adjust, "holm(4)");
  analysis_checks_free(&V);

  char dir[64], path[300];
  char *md = run(res, dir, sizeof dir);
  char *c4 = claim_section(md, 4);
  assert_has(c4, "*K̃ grows but K̂ does not: anisotropy, not curvature*");
  assert_has(c4, "**4 checks, Holm-adjusted**");
  free(c4), free(md);
  /* amplification.csv: K̃ ∝ depth² (slope 2 in every replicate), K̂ and ∫|K| dA constant
   * per seed (slope 0, interval [0, 0]), anisotropy slope d(2 log L)/d log L = 2 */
  double i1 = 0.5, i4 = 0.5 + 2.0 * log(4.0);
  snprintf(path, sizeof path, "%s/report/amplification.csv", dir);
  const char *row = "gated,circles,";
  assert_close(csv_number(path, row, "Kt_depth_slope"), 2.0, 1e-12);
  assert_close(csv_number(path, row, "Kt_depth_slope_ci_low"), 2.0, 1e-12);
  assert_close(csv_number(path, row, "Kh_depth_slope"), 0.0, 1e-12);
  assert_close(csv_number(path, row, "Kh_depth_slope_ci_low"), 0.0, 1e-12);
  assert_close(csv_number(path, row, "Kh_depth_slope_ci_high"), 0.0, 1e-12);
  assert_close(csv_number(path, row, "intabsK_depth_slope"), 0.0, 1e-12);
  assert_close(csv_number(path, row, "intabsK_prefix_slope_ci_high"), 0.0, 1e-12);
  assert_close(csv_number(path, row, "aniso_depth_slope"), 2.0, 1e-12);
  assert_close(csv_number(path, row, "aniso_prefix_slope"), 2.0, 1e-12);
  assert_close(csv_number(path, row, "aniso_shallowest"), i1, 1e-12);
  assert_close(csv_number(path, row, "aniso_deepest"), i4, 1e-12);
  assert_close(csv_number(path, row, "aniso_prefix_first"), i1, 1e-12);
  assert_close(csv_number(path, row, "aniso_prefix_last"), i4, 1e-12);
  assert_close(csv_number(path, row, "Kt_ratio"), 16.0, 1e-12);
  assert_close(csv_number(path, row, "Kh_ratio"), 1.0, 1e-12);
  assert_close(csv_number(path, row, "Kh_prefix_ratio"), 1.0, 1e-12);
  /* the decomposition over the same cells: log K̃ = log c_s + 2 log L, log K̂ = log c_s, so
   * from depth 1 to 4 Δ log K̃ = log 16 = Δ log K̂ (0) + Δ anisotropy (log 16) */
  assert_close(csv_number(path, row, "dlogKt_depth"), log(16.0), 1e-12);
  assert_close(csv_number(path, row, "dlogKh_depth"), 0.0, 1e-12);
  assert_close(csv_number(path, row, "daniso_eff_depth"), log(16.0), 1e-12);
  assert_close(csv_number(path, row, "dlogKt_prefix"), log(16.0), 1e-12);
  assert_close(csv_number(path, row, "daniso_eff_prefix"), log(16.0), 1e-12);
  /* summary.csv, gated depth 4: K̂ = c_s = 1 + 0.1 s, s = 0..6: mean 1.3, s² = 0.01 · 28/6,
   * half-width t_{.975,6} √(s²/7) with t_{.975,6} = 2.446911851144969 (table value) */
  snprintf(path, sizeof path, "%s/report/summary.csv", dir);
  row = "gated,circles,nonlinear,4,";
  double half = 2.446911851144969 * sqrt(0.01 * 28.0 / 6.0 / 7.0);
  assert_close(csv_number(path, row, "Kh_absmean_mean"), 1.3, 1e-12);
  assert_close(csv_number(path, row, "Kh_absmean_ci_low"), 1.3 - half, 1e-9);
  assert_close(csv_number(path, row, "Kh_absmean_ci_high"), 1.3 + half, 1e-9);
  assert_close(csv_number(path, row, "intabsK_mean"), 0.65, 1e-12);
  assert_close(csv_number(path, row, "intabsK_ci_low"), 0.65 - half / 2, 1e-9);
  assert_close(csv_number(path, row, "aniso_mean"), i4, 1e-12);
  assert_close(csv_number(path, row, "Kt_absmean_mean"), 1.3 * 16, 1e-12);
  /* the point classes: unresolved 0.05 of all points, 0.05/0.9 of the non-degenerate ones */
  assert_close(csv_number(path, row, "unresolved_frac_mean"), 0.05, 1e-12);
  assert_close(csv_number(path, row, "curved_frac_mean"), 0.8, 1e-12);
  assert_close(csv_number(path, row, "unresolved_share"), 0.05 / 0.9, 1e-12);
  /* prefix.csv: after layer 2 of the depth-4 models, anisotropy 0.5 + 2 log 2 */
  snprintf(path, sizeof path, "%s/report/prefix.csv", dir);
  assert_close(csv_number(path, "gated,circles,nonlinear,4,all,1,2,", "aniso_mean"), 0.5 + 2 * log(2.0),
               1e-12);
  assert_close(csv_number(path, "ungated,circles,nonlinear,4,all,1,3,", "curved_frac_max"), 0.0, 0.0);
  /* gap.csv: mean |K̂| gated − ungated (0) at depth 4 */
  snprintf(path, sizeof path, "%s/report/gap.csv", dir);
  assert_close(csv_number(path, "gated-ungated,circles,nonlinear,4,", "dKh_mean"), 1.3, 1e-12);
  /* verdicts.csv carries the same numbers as the structs */
  snprintf(path, sizeof path, "%s/report/verdicts.csv", dir);
  assert_close(csv_number(path, "4,gated;circles;all;across-depths;Kt,", "p_adj"), 2.0 / 128, 0.0);
  assert_csv_text(path, "4,verdict,", "decision", "not supported");
  free_results(res, N_CELLS);
  remove_tree(dir);
}

/* (b) K̂ ∝ l grows (and ∫|K| dA with it): Supported. */
static void test_claim4_supported(void **state) {
  (void)state;
  cs_cell_result res[N_CELLS];
  make_results(res, KH_GROWS, U_FLAT, 0);
  analysis_checks V = verdicts_of(SPEC, res, N_CELLS, NULL);
  /* every seed's slope is 1 in all four checks: raw p 1/128 each; Holm: 4/128, 3/128,
   * 2/128, 1/128 made monotone → 4/128 for all */
  const char *dirs[2] = {"across-depths", "along-layers"}, *ms[2] = {"Kh", "intabsK"};
  for (int d = 0; d < 2; d++)
    for (int m = 0; m < 2; m++) {
      char scope[128];
      snprintf(scope, sizeof scope, "gated;circles;all;%s;%s", dirs[d], ms[m]);
      const analysis_check *c = find_check(&V, "4", scope, 0);
      assert_close(c->effect, 1.0, 1e-12);
      assert_close(c->p_raw, 1.0 / 128, 0.0);
      assert_close(c->p_adj, 4.0 / 128, 0.0);
      assert_int_equal(c->decision, ANALYSIS_SUPPORTED);
      assert_close(c->resolved, 0.85, 1e-12); /* flat 0.05 + curved 0.8 */
    }
  const analysis_check *v = find_check(&V, "4", "verdict", 1);
  assert_int_equal(v->decision, ANALYSIS_SUPPORTED);
  assert_close(v->p_adj, 4.0 / 128, 0.0);
  assert_int_equal(v->n, 7);
  /* ungated: flat by claim 1, so claim 4 does not test it */
  for (int i = 0; i < V.n; i++) assert_true(strncmp(V.c[i].scope, "ungated;", 8) != 0);
  analysis_checks_free(&V);
  char dir[64], path[300];
  free(run(res, dir, sizeof dir));
  snprintf(path, sizeof path, "%s/report/amplification.csv", dir);
  assert_close(csv_number(path, "gated,circles,", "Kh_depth_slope"), 1.0, 1e-12);
  assert_close(csv_number(path, "gated,circles,", "Kh_depth_slope_ci_low"), 1.0, 1e-12);
  assert_close(csv_number(path, "gated,circles,", "intabsK_prefix_slope"), 1.0, 1e-12);
  assert_close(csv_number(path, "gated,circles,", "Kh_ratio"), 4.0, 1e-12);
  /* K̃ = K̂ here: no anisotropy change */
  assert_close(csv_number(path, "gated,circles,", "dlogKt_depth"), log(4.0), 1e-12);
  assert_close(csv_number(path, "gated,circles,", "daniso_eff_depth"), 0.0, 1e-12);
  free_results(res, N_CELLS);
  remove_tree(dir);
}

/* (c) K̃ and K̂ constant: Not supported; with 3 seeds: too few (needs 7 for a family of 4). */
static void test_claim4_neither(void **state) {
  (void)state;
  cs_cell_result res[N_CELLS];
  make_results(res, NEITHER, U_FLAT, 0);
  analysis_checks V = verdicts_of(SPEC, res, N_CELLS, NULL);
  const analysis_check *v = find_check(&V, "4", "verdict", 1);
  assert_int_equal(v->decision, ANALYSIS_NOT_SUPPORTED);
  assert_close(v->p_adj, 1.0, 0.0);
  analysis_checks_free(&V);
  /* the first 3 seeds only: every check's n = 3 < 7 */
  cs_cell_result few[N_ARCH * N_DEPTH * 3];
  int k = 0;
  for (int i = 0; i < N_CELLS; i++)
    if (i % N_SEED < 3) few[k++] = res[i];
  const char *spec3 = "[sweep]\nname = verdicts\n[grid]\narch = ungated, gated\ndepth = 1, 2, 4\n"
                      "seed = 0..6\n[curvature]\npoints = 16\n";
  V = verdicts_of(spec3, few, k, NULL);
  v = find_check(&V, "4", "verdict", 1);
  assert_int_equal(v->decision, ANALYSIS_TOO_FEW);
  assert_int_equal(v->n, 3);
  assert_int_equal(v->needs, 7);
  analysis_checks_free(&V);
  free_results(res, N_CELLS);
}

/* Claim 1: all ungated skeleton points flat → holds, no caution. */
static void test_claim1_flat(void **state) {
  (void)state;
  cs_cell_result res[N_CELLS];
  make_results(res, NEITHER, U_FLAT, 0);
  analysis_checks V = verdicts_of(SPEC, res, N_CELLS, NULL);
  const analysis_check *v = find_check(&V, "1", "ungated affine skeleton", 1);
  assert_int_equal(v->decision, ANALYSIS_SUPPORTED);
  assert_int_equal(v->n, 7); /* (task, depth, prefix) rows: 1 + 2 + 4 */
  assert_close(v->effect, 0.0, 0.0);
  analysis_checks_free(&V);
  char dir[64];
  char *md = run(res, dir, sizeof dir);
  char *c1 = claim_section(md, 1);
  assert_has(c1, "- circles, depth 4, all: flat 1, curved 0, unresolved 0 (0% of the non-degenerate "
                 "points), degenerate 0\n");
  assert_null(strstr(c1, "**Caution**"));
  free(c1), free(md);
  free_results(res, N_CELLS);
  remove_tree(dir);
}

/* Claim 1: curved points in one ungated skeleton cell → not supported, where. */
static void test_claim1_curved(void **state) {
  (void)state;
  cs_cell_result res[N_CELLS];
  make_results(res, NEITHER, U_CURVED, 0);
  analysis_checks V = verdicts_of(SPEC, res, N_CELLS, NULL);
  const analysis_check *v = find_check(&V, "1", "ungated affine skeleton", 1);
  assert_int_equal(v->decision, ANALYSIS_NOT_SUPPORTED);
  assert_close(v->effect, 0.25, 0.0);
  analysis_checks_free(&V);
  char dir[64], path[300];
  char *md = run(res, dir, sizeof dir);
  /* claim 4 no longer reads the ungated row as flat */
  char *c4 = claim_section(md, 4);
  assert_null(strstr(c4, "(flat, claim 1)"));
  free(c4), free(md);
  snprintf(path, sizeof path, "%s/report/prefix.csv", dir);
  assert_close(csv_number(path, "ungated,circles,nonlinear,2,all,1,2,", "curved_frac_max"), 0.25, 0.0);
  assert_close(csv_number(path, "ungated,circles,nonlinear,2,all,1,2,", "curved_frac_mean"), 0.25 / 7,
               1e-15);
  free_results(res, N_CELLS);
  remove_tree(dir);
}

/* Claim 1: 0.009 of all points unresolved, but half are degenerate: 1.8% of
 * the non-degenerate points, above 1%: flagged; and under half of the points
 * resolved (0.491): flagged too; still every resolved point flat. */
static void test_claim1_unresolved(void **state) {
  (void)state;
  cs_cell_result res[N_CELLS];
  make_results(res, NEITHER, U_UNRESOLVED, 0);
  analysis_checks V = verdicts_of(SPEC, res, N_CELLS, NULL);
  assert_int_equal(find_check(&V, "1", "ungated affine skeleton", 1)->decision, ANALYSIS_SUPPORTED);
  analysis_checks_free(&V);
  char dir[64], path[300];
  char *md = run(res, dir, sizeof dir);
  char *c1 = claim_section(md, 1);
  assert_has(c1, "- circles, depth 4, all: flat 0.491, curved 0, unresolved 0.009 (1.8% of the "
                 "non-degenerate points), degenerate 0.5 — **more than 1% unresolved** — **drawn from "
                 "under half of the points**");
  assert_has(c1, "**Caution**: in 1 of 3 groups fewer than half of the points are resolved");
  assert_has(c1, "**Caution**: in 1 of 3 groups more than 1% of the non-degenerate points are "
                 "unresolved");
  snprintf(path, sizeof path, "%s/report/summary.csv", dir);
  assert_close(csv_number(path, "ungated,circles,nonlinear,4,", "unresolved_frac_mean"), 0.009, 1e-15);
  assert_close(csv_number(path, "ungated,circles,nonlinear,4,", "unresolved_share"), 0.018, 1e-15);
  free(c1), free(md);
  free_results(res, N_CELLS);
  remove_tree(dir);
}

/* Histograms: the 4 unresolved points per model (S = −1e6) are left out; the
 * 12 curved ones (K̂ = K̃ = 5..16) fill only positive bins and make every
 * resolved point: 7 seeds × 12 at depth 4, none flat. */
static void test_hist_classified(void **state) {
  (void)state;
  cs_cell_result res[N_CELLS];
  make_results(res, KT_ONLY, U_FLAT, 1);
  char dir[64], path[300];
  char *md = run(res, dir, sizeof dir);
  for (int h = 0; h < 2; h++) {
    snprintf(path, sizeof path, "%s/report/hist_%s_circles.dat", dir, h ? "Kh" : "Kt");
    char *dat = read_text(path);
    double sum = 0, neg = 0;
    int rows = 0, shares = 0;
    for (char *save = NULL, *line = strtok_r(dat, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      if (!strncmp(line, "# shares", 8)) shares = 1;
      if (line[0] == '#') continue;
      double c, k, g, n_resolved;
      if (shares) { /* the gated arch's line: bar flat_frac curved_frac resolved_points class */
        assert_int_equal(sscanf(line, "%lf %lf %lf %lf", &c, &k, &g, &n_resolved), 4);
        assert_close(k, 0.0, 0.0), assert_close(g, 1.0, 0.0), assert_close(n_resolved, 7.0 * 12, 0.0);
        shares++;
        continue;
      }
      assert_int_equal(sscanf(line, "%lf %lf %lf", &c, &k, &g), 3);
      sum += g, rows++;
      if (c < 0) neg += g;
    }
    assert_int_equal(rows, 41);
    assert_int_equal(shares, 2);
    assert_close(sum, 1.0, 1e-12);
    assert_close(neg, 0.0, 0.0);
    free(dat);
  }
  assert_has(md, "Flat, unresolved and degenerate points are never binned");
  assert_has(md, "### hist_Kh_circles");
  free(md);
  free_results(res, N_CELLS);
  remove_tree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_claim4_kt_only),   cmocka_unit_test(test_claim4_supported),
      cmocka_unit_test(test_claim4_neither),   cmocka_unit_test(test_claim1_flat),
      cmocka_unit_test(test_claim1_curved),    cmocka_unit_test(test_claim1_unresolved),
      cmocka_unit_test(test_hist_classified),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

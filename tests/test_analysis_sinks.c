/* test_analysis_sinks.c — the section "Do gates remove the attention
 * sink?" of `curvsweep analyze` (analysis/VERDICTS.md, "Attention sinks") on
 * fabricated results of an lm sweep (arch ungated, gated, gated-headwise ×
 * gate g1, g2 × depth 2 × 8 seeds) whose answer is known by construction:
 *   - ungated: first-token share 0.30 at block 1 and 0.60 + 0.01·seed at
 *     block 2; massive activation 10 and 50 (1 + 0.1·seed); value drain 2
 *     and 8; residual peak 3;
 *   - g1 (both gated archs): share 0.20 and 0.05 + 0.01·seed, massive 5,
 *     drain 1: every seed lower than ungated, so each g1 check has the
 *     smallest two-sided exact sign-flip p, 2/2^8, and passes Holm over its
 *     quantity's family of 4 (4 · 2/256 = 0.03125 < 0.05) → supported;
 *   - g2: ungated ± 0.01 (+ on even seeds, − on odd): differences summing
 *     to 0, p = 1 → not supported (inconclusive);
 *   - the primary G1 test (claim sink-g1): the g1 share differences,
 *     one-sided, Holm over the two gated archs: p 1/256, adjusted 2/256;
 *   - three seeds: too few (needs ≥ 8 in a family of 4; sink-g1 ≥ 6);
 *   - the ratios absent (a format_version 4 archive): said so, no check of
 *     them, the share's checks unchanged;
 *   - a sweep without lm cells: no section. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/analysis.h"
#include "curvsweep/archive.h"
#include "curvsweep/error.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SPEC8 = "[sweep]\nname = sinks\n[grid]\narch = ungated, gated, gated-headwise\n"
                           "gate = g1, g2\ndepth = 2\nseed = 0..7\ntask = bigram-backcopy\n"
                           "[model]\nfamily = lm\n";
static const char *SPEC3 = "[sweep]\nname = sinks\n[grid]\narch = ungated, gated, gated-headwise\n"
                           "gate = g1, g2\ndepth = 2\nseed = 0..2\ntask = bigram-backcopy\n"
                           "[model]\nfamily = lm\n";
static const char *SPEC_SELF = "[sweep]\nname = selfsinks\n[grid]\narch = ungated, gated\n"
                               "gate = g1, g2\ndepth = 2\nseed = 0..7\n[model]\nfamily = self\n";

/* Block l (0, 1) of a cell: share, massive activation, value drain. */
static void values(const cs_config *c, int l, double *share, double *massive, double *drain) {
  double s = (double)c->seed;
  double u_share = l ? 0.60 + 0.01 * s : 0.30, u_massive = l ? 50 * (1 + 0.1 * s) : 10, u_drain = l ? 8 : 2;
  if (c->arch == ARCH_UNGATED || c->gate == GATE_G2) {
    double jitter = c->arch == ARCH_UNGATED ? 0 : (c->seed % 2 ? -0.01 : 0.01);
    *share = u_share + jitter, *massive = u_massive * (1 + jitter), *drain = u_drain * (1 + jitter);
  } else {
    *share = l ? 0.05 + 0.01 * s : 0.20, *massive = 5, *drain = 1;
  }
}

/* A cell with its values at every block; *ctx: old, the ratios NaN (format_version 4). */
static void fill(const void *ctx, const cs_config *c, cs_cell_result *r) {
  int old = *(const int *)ctx;
  r->test_acc = r->train_acc = 0.4;
  r->train_loss = 1.0;
  r->n_params = 100;
  for (int l = 0; l < c->depth; l++) {
    geom_stats *g = &r->curv[l];
    g->n_points = 16;
    g->curved_frac = 1.0;
    g->K_absmean = g->Kt_absmean = g->Kh_absmean = 1.0;
    g->S_se = NAN;
    double share, massive, drain;
    values(c, l, &share, &massive, &drain);
    g->sink_mass = share;
    g->sink_headmax = share + 0.1;
    g->max_attn = share + 0.2; /* not the headmax column */
    g->massive_act = old ? NAN : massive;
    g->value_drain = old ? NAN : drain;
    g->resid_peak = old ? NAN : 3.0;
  }
}

/* Every cell of spec, done. */
static cs_cell_result *make(const char *text, int old, int64_t *n_out) {
  return make_spec_results(text, fill, &old, n_out);
}

static analysis_checks verdicts(const char *spec, int old) {
  int64_t n;
  cs_cell_result *res = make(spec, old, &n);
  analysis_checks V = verdicts_of(spec, res, n, NULL);
  free_result_array(res, n);
  return V;
}

static int count_claim(const analysis_checks *V, const char *claim) {
  int k = 0;
  for (int i = 0; i < V->n; i++) k += !strcmp(V->c[i].claim, claim);
  return k;
}

/* A real difference is found; none is not called "supported". */
static void test_verdicts_known_answer(void **state) {
  (void)state;
  analysis_checks V = verdicts(SPEC8, 0);
  const char *archs[2] = {"gated", "gated-headwise"};
  for (int a = 0; a < 2; a++) {
    char g1[64], g2[64];
    snprintf(g1, sizeof g1, "%s g1", archs[a]);
    snprintf(g2, sizeof g2, "%s g2", archs[a]);
    /* share at the strongest layer: ungated 0.60 + 0.01 s, g1 max(0.20, 0.05 + 0.01 s) = 0.20 */
    const analysis_check *c = find_check(&V, "sink-share", g1, 1);
    assert_check(c, ANALYSIS_SUPPORTED, 8, 0.435, 2.0 / 256, 4 * 2.0 / 256, 4);
    assert_true(c->effect_lo > 0 && c->effect_lo < 0.435 && c->effect_hi > 0.435);
    assert_true(isfinite(c->dz) && c->dz > 0);
    assert_string_equal(c->test, "sign-flip exact two-sided");
    /* massive: log(50 (1 + 0.1 s)) − log 5 = log(10 (1 + 0.1 s)) */
    double want = 0;
    for (int s = 0; s < 8; s++) want += log(10 * (1 + 0.1 * s)) / 8;
    c = find_check(&V, "sink-massive", g1, 1);
    assert_int_equal(c->decision, ANALYSIS_SUPPORTED);
    assert_close(c->effect, want, 1e-12);
    c = find_check(&V, "sink-drain", g1, 1);
    assert_int_equal(c->decision, ANALYSIS_SUPPORTED);
    assert_close(c->effect, log(8.0), 1e-12);
    /* g2: ±0.01 around ungated, no difference */
    c = find_check(&V, "sink-share", g2, 1);
    assert_int_not_equal(c->decision, ANALYSIS_SUPPORTED);
    assert_int_equal(c->decision, ANALYSIS_INCONCLUSIVE);
    assert_close(c->effect, 0.0, 1e-12);
    assert_close(c->p_raw, 1.0, 1e-12);
    c = find_check(&V, "sink-massive", g2, 1);
    assert_int_not_equal(c->decision, ANALYSIS_SUPPORTED);
    /* the primary G1 test: the same differences, one-sided, Holm over the
     * two gated archs: p = 1/2^8, adjusted 2/2^8 */
    c = find_check(&V, "sink-g1", g1, 1);
    assert_check(c, ANALYSIS_SUPPORTED, 8, 0.435, 1.0 / 256, 2 * 1.0 / 256, 2);
    assert_non_null(strstr(c->test, "one-sided"));
  }
  /* one check and one verdict per (quantity, arch, gate) */
  assert_int_equal(count_claim(&V, "sink-share"), 8);
  assert_int_equal(count_claim(&V, "sink-massive"), 8);
  assert_int_equal(count_claim(&V, "sink-drain"), 8);
  analysis_checks_free(&V);
}

static void test_too_few_seeds(void **state) {
  (void)state;
  analysis_checks V = verdicts(SPEC3, 0);
  const analysis_check *c = find_check(&V, "sink-share", "gated g1", 1);
  assert_int_equal(c->decision, ANALYSIS_TOO_FEW);
  assert_int_equal(c->n, 3);
  assert_int_equal(c->needs, 8);
  /* one-sided in a family of 2: 2/2^n < 0.05 from n = 6 */
  c = find_check(&V, "sink-g1", "gated g1", 1);
  assert_int_equal(c->decision, ANALYSIS_TOO_FEW);
  assert_int_equal(c->needs, 6);
  analysis_checks_free(&V);
}

/* Every CSV the report wrote is one analyze --help lists
 * (analysis_report_table), and every table it lists as always written is
 * there. */
static void assert_tables_listed(const char *report) {
  DIR *d = opendir(report);
  assert_non_null(d);
  int n_csv = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".csv") != 0) continue;
    n_csv++;
    const analysis_table_info *t;
    int i = 0;
    while ((t = analysis_report_table(i)) && strcmp(t->file, e->d_name) != 0) i++;
    if (!t) fail_msg("%s/%s is not listed by analysis_report_table", report, e->d_name);
  }
  closedir(d);
  int n_always = 0;
  const analysis_table_info *t;
  for (int i = 0; (t = analysis_report_table(i)); i++) {
    if (t->when[0]) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", report, t->file);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s (always written) is missing", path);
    fclose(f);
    n_always++;
  }
  assert_int_equal(n_always, 5); /* summary, prefix, amplification, gap, verdicts */
  assert_int_equal(n_csv, 7);    /* and gates.csv, sinks.csv: a gate axis, the lm family */
}

/* verdicts.csv: each claim's rows together (its verdicts, then its checks). */
static void assert_claims_contiguous(const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[1024], seen[32][32];
  int n_seen = 0;
  assert_non_null(fgets(line, sizeof line, f)); /* the header */
  while (fgets(line, sizeof line, f)) {
    char claim[32];
    snprintf(claim, sizeof claim, "%.*s", (int)strcspn(line, ","), line);
    if (n_seen > 0 && strcmp(seen[n_seen - 1], claim) == 0) continue;
    for (int i = 0; i < n_seen; i++)
      if (strcmp(seen[i], claim) == 0) fail_msg("%s: the rows of claim %s are split", path, claim);
    assert_true(n_seen < 32);
    snprintf(seen[n_seen++], sizeof seen[0], "%s", claim);
  }
  fclose(f);
  assert_true(n_seen >= 4);
}

/* sinks.csv and index.md against the construction. */
static void test_report(void **state) {
  (void)state;
  int64_t n;
  cs_cell_result *res = make(SPEC8, 0, &n);
  char dir[64], path[300];
  char *md = analyse_results(SPEC8, res, n, NULL, "analysis_sinks", dir, sizeof dir);
  snprintf(path, sizeof path, "%s/report/sinks.csv", dir);
  const char *u2 = "ungated,bigram-backcopy,2,all,-,2,", *g12 = "gated,bigram-backcopy,2,all,g1,2,";
  assert_close(csv_number(path, u2, "n_seeds"), 8, 0);
  assert_close(csv_number(path, u2, "share_mean"), 0.635, 1e-12);
  assert_close(csv_number(path, u2, "headmax_mean"), 0.735, 1e-12);
  assert_close(csv_number(path, u2, "massive_mean"), 50 * 1.35, 1e-10);
  assert_close(csv_number(path, u2, "peak_mean"), 3.0, 0);
  assert_close(csv_number(path, g12, "n_pairs"), 8, 0);
  assert_close(csv_number(path, g12, "share_mean"), 0.085, 1e-12);
  /* paired by seed: the seed terms cancel, an interval of zero width */
  assert_close(csv_number(path, g12, "dshare_mean"), -0.55, 1e-12);
  assert_close(csv_number(path, g12, "dshare_ci_low"), -0.55, 1e-12);
  assert_close(csv_number(path, g12, "dshare_npos"), 0, 0);
  assert_close(csv_number(path, g12, "dshare_nneg"), 8, 0);
  assert_close(csv_number(path, "gated,bigram-backcopy,2,all,g1,1,", "ddrain_mean"), -1.0, 1e-12);
  assert_has(md, "## Do gates remove the attention sink?");
  assert_has(md, "- **G1 against Qiu et al. (gated): first-token share 0.635 → 0.2 (68.5% of the ungated "
                 "share removed; Qiu et al.: 46.7% → 4.8%, 90% removed), lowered**");
  assert_has(md, "- Attention map (ungated): none — cell ");
  assert_has(md, "(run with save_params = yes)");
  assert_true(strstr(md, "carry no massive activation") == NULL);
  snprintf(path, sizeof path, "%s/report", dir);
  assert_tables_listed(path);
  snprintf(path, sizeof path, "%s/report/verdicts.csv", dir);
  assert_claims_contiguous(path);
  free(md);
  remove_tree(dir);
  free_result_array(res, n);
}

/* Ratios not stored (format_version 4): said so, the share still tested. */
static void test_old_archive_ratios_missing(void **state) {
  (void)state;
  analysis_checks V = verdicts(SPEC8, 1);
  assert_int_equal(count_claim(&V, "sink-massive"), 0);
  assert_int_equal(count_claim(&V, "sink-drain"), 0);
  assert_int_equal(find_check(&V, "sink-share", "gated g1", 1)->decision, ANALYSIS_SUPPORTED);
  analysis_checks_free(&V);
  int64_t n;
  cs_cell_result *res = make(SPEC8, 1, &n);
  char dir[64], path[300];
  char *md = analyse_results(SPEC8, res, n, NULL, "analysis_sinks_v4", dir, sizeof dir);
  assert_has(md, "40 of the 40 cells in the table below carry no massive activation");
  snprintf(path, sizeof path, "%s/report/sinks.csv", dir);
  assert_close(csv_number(path, "ungated,bigram-backcopy,2,all,-,2,", "n_measured"), 0, 0);
  char *f = csv_field(path, "ungated,bigram-backcopy,2,all,-,2,", "massive_mean");
  assert_string_equal(f, "nan");
  free(f);
  free(md);
  remove_tree(dir);
  free_result_array(res, n);
}

/* No lm cell: no section, no sink verdicts. */
static void test_no_lm_no_section(void **state) {
  (void)state;
  int64_t n;
  cs_cell_result *res = make(SPEC_SELF, 0, &n);
  for (int64_t i = 0; i < n; i++)
    for (int l = 0; l < res[i].depth; l++)
      res[i].curv[l].massive_act = res[i].curv[l].value_drain = res[i].curv[l].resid_peak = NAN;
  char dir[64], path[300];
  char *md = analyse_results(SPEC_SELF, res, n, NULL, "analysis_sinks_self", dir, sizeof dir);
  assert_true(strstr(md, "Do gates remove the attention sink?") == NULL);
  snprintf(path, sizeof path, "%s/report/sinks.csv", dir);
  assert_false(file_exists(path));
  analysis_checks V = verdicts_of(SPEC_SELF, res, n, NULL);
  assert_int_equal(count_claim(&V, "sink-share"), 0);
  analysis_checks_free(&V);
  free(md);
  remove_tree(dir);
  free_result_array(res, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_verdicts_known_answer),
      cmocka_unit_test(test_too_few_seeds),
      cmocka_unit_test(test_report),
      cmocka_unit_test(test_old_archive_ratios_missing),
      cmocka_unit_test(test_no_lm_no_section),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

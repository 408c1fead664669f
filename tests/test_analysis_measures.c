/* test_analysis_measures.c — the report's measure table (analysis/stats/measures.c,
 * docs/ARCHITECTURE.md "A new per-cell measure"):
 *   - every row is used (some report table shows it), names a
 *     GEOM_STATS_FIELDS field (or none: test accuracy), has a unit and a
 *     meaning, and the places of each use are 1..n without a gap;
 *   - analysis_cell_value reads, for every row, the geom_stats member its
 *     name says (checked against the members written out here, a second
 *     mapping), the deepest prefix for 0, NaN past the depth, NaN for a
 *     classified measure of an unclassified row;
 *   - the column order of each use: the headers main's report wrote before
 *     the table (literal lists here);
 *   - python/curvsweep_archive's MEASURES holds each row with a /curvature
 *     field, with the same unit and meaning, and nothing else (the
 *     /cellstats rows are its cellstats() columns). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "../analysis/stats/compute.h"
#include "../analysis/stats/measures.h"
#include "curvsweep/geom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a == b to the bit: the value read is the stored double itself */
#define assert_exact(a, b) assert_true((a) == (b))

static void test_every_row_used_and_named(void **state) {
  (void)state;
  for (int m = 0; m < ANALYSIS_N_MEASURES; m++) {
    const analysis_measure *M = &ANALYSIS_MEASURES[m];
    assert_non_null(M->unit);
    assert_non_null(M->meaning);
    int uses = 0;
    for (int u = 0; u < ANALYSIS_USE_COUNT; u++) uses += M->use[u].column != NULL;
    if (uses == 0) fail_msg("measure %d (%s) is in no report table", m, M->field ? M->field : "acc");
    if (!M->field) continue;
    int found = 0;
    if (M->flags & ANALYSIS_MEASURE_CELL) {
      for (int k = 0; k < ANALYSIS_N_CELL_FIELDS; k++) found += !strcmp(ANALYSIS_CELL_FIELDS[k].name, M->field);
      if (found != 1) fail_msg("measure %d: field %s is not one of ANALYSIS_CELL_FIELDS", m, M->field);
      continue;
    }
    for (int k = 0; k < GEOM_STATS_N_FIELDS; k++) found += !strcmp(GEOM_STATS_FIELDS[k].name, M->field);
    if (found != 1) fail_msg("measure %d: field %s is not one of GEOM_STATS_FIELDS", m, M->field);
  }
  for (int u = 0; u < ANALYSIS_USE_COUNT; u++) {
    analysis_measure_id ids[ANALYSIS_N_MEASURES];
    int n = analysis_measures_of((analysis_use)u, ids), listed = 0;
    for (int m = 0; m < ANALYSIS_N_MEASURES; m++) listed += ANALYSIS_MEASURES[m].use[u].column != NULL;
    if (n != listed) fail_msg("%s: places are not 1..%d without a gap or a repeat", ANALYSIS_USE_TABLE[u], listed);
    assert_true(n > 0);
    for (int k = 0; k < n; k++) assert_int_equal(ANALYSIS_MEASURES[ids[k]].use[u].order, k + 1);
  }
}

/* Every double of a geom_stats a distinct value; the classification
 * fractions add up to 1 when classified. */
static void fill_stats(geom_stats *g, double base, int classified) {
  memset(g, 0, sizeof *g);
  for (int k = 0; k < GEOM_STATS_N_FIELDS; k++)
    *(double *)((char *)g + GEOM_STATS_FIELDS[k].offset) = base + k;
  g->degenerate_frac = 0.1, g->unresolved_frac = 0.2, g->flat_frac = 0.3;
  g->curved_frac = classified ? 0.4 : 0.5;
}

static void test_cell_value_reads_its_member(void **state) {
  (void)state;
  geom_stats st[2];
  fill_stats(&st[0], 100, 1);
  fill_stats(&st[1], 200, 1);
  cs_cell_result r;
  memset(&r, 0, sizeof r);
  r.depth = 2, r.curv = st, r.test_acc = 0.875;
  /* the members by hand, a mapping independent of the table's names */
  const struct {
    analysis_measure_id m;
    const double *member;
  } want[] = {
      {MEASURE_K_ABS, &st[1].K_absmean},       {MEASURE_KT_ABS, &st[1].Kt_absmean},
      {MEASURE_KT_MEAN, &st[1].Kt_mean},       {MEASURE_INTK, &st[1].intK},
      {MEASURE_LOGDET, &st[1].logdet_mean},    {MEASURE_KH_ABS, &st[1].Kh_absmean},
      {MEASURE_KH_MEAN, &st[1].Kh_mean},       {MEASURE_ANISO, &st[1].aniso_median},
      {MEASURE_INTABSK, &st[1].intabsK},       {MEASURE_UNRESOLVED, &st[1].unresolved_frac},
      {MEASURE_FLAT, &st[1].flat_frac},        {MEASURE_CURVED, &st[1].curved_frac},
      {MEASURE_SINK_MASS, &st[1].sink_mass},   {MEASURE_MAX_ATTN, &st[1].max_attn},
      {MEASURE_MASSIVE_ACT, &st[1].massive_act}, {MEASURE_VALUE_DRAIN, &st[1].value_drain},
      {MEASURE_RESID_PEAK, &st[1].resid_peak}, {MEASURE_SINK_HEADMAX, &st[1].sink_headmax},
      {MEASURE_ATTN_ENTROPY, &st[1].attn_entropy}, {MEASURE_ABLATE_FIRST, &st[1].ablate_first},
      {MEASURE_ABLATE_ATTN, &st[1].ablate_attn},
  };
  /* the /cellstats members by hand: the same at every prefix, NaN when not measured */
  r.cstats = (cs_cell_stats){1, 2, 3.5, 0.25, 0.125, 0.0625};
  const struct {
    analysis_measure_id m;
    const double *member;
  } cell[] = {{MEASURE_TEST_NLL, &r.cstats.test_nll},
              {MEASURE_TEST_BRIER, &r.cstats.test_brier},
              {MEASURE_TEST_ECE, &r.cstats.test_ece}};
  int n = (int)(sizeof want / sizeof *want), nc = (int)(sizeof cell / sizeof *cell);
  assert_int_equal(n + nc + 1, ANALYSIS_N_MEASURES); /* and MEASURE_ACC */
  for (int i = 0; i < nc; i++) {
    assert_true(ANALYSIS_MEASURES[cell[i].m].flags & ANALYSIS_MEASURE_CELL);
    for (int l = 0; l <= 2; l++) assert_exact(analysis_cell_value(&r, l, cell[i].m), *cell[i].member);
    assert_true(isnan(analysis_cell_value(&r, 3, cell[i].m)));
  }
  r.cstats.present = 0;
  for (int i = 0; i < nc; i++) assert_true(isnan(analysis_cell_value(&r, 0, cell[i].m)));
  for (int i = 0; i < n; i++) {
    assert_exact(analysis_cell_value(&r, 0, want[i].m), *want[i].member);
    assert_exact(analysis_cell_value(&r, 2, want[i].m), *want[i].member);
    /* prefix 1: the same member of st[0], one struct before */
    const double *first = (const double *)((const char *)want[i].member - sizeof(geom_stats));
    assert_exact(analysis_cell_value(&r, 1, want[i].m), *first);
    assert_true(isnan(analysis_cell_value(&r, 3, want[i].m)));
  }
  assert_exact(analysis_cell_value(&r, 0, MEASURE_ACC), 0.875);
  assert_true(isnan(analysis_cell_value(NULL, 0, MEASURE_K_ABS)));
  /* an unclassified row: the classified measures NaN, the others read */
  fill_stats(&st[1], 200, 0);
  for (int i = 0; i < n; i++) {
    double v = analysis_cell_value(&r, 0, want[i].m);
    if (ANALYSIS_MEASURES[want[i].m].flags & ANALYSIS_MEASURE_CLASSIFIED) assert_true(isnan(v));
    else assert_exact(v, *want[i].member);
  }
  assert_false(ANALYSIS_MEASURES[MEASURE_K_ABS].flags & ANALYSIS_MEASURE_CLASSIFIED);
  assert_true(ANALYSIS_MEASURES[MEASURE_KH_ABS].flags & ANALYSIS_MEASURE_CLASSIFIED);
}

/* The columns of each use in order, as the report wrote them before the
 * table (main a2ef14b's summary.csv, prefix.csv, amplification.csv,
 * gap.csv, gates.csv and sinks.csv headers), then the calibration,
 * attention-entropy and ablation columns of format_version 6 after them. */
static void test_column_orders(void **state) {
  (void)state;
  static const char *const want[ANALYSIS_USE_COUNT] = {
      [ANALYSIS_USE_SUMMARY] = "acc K_absmean Kt_absmean Kt_mean intK logdet Kh_absmean Kh_mean aniso intabsK "
                               "unresolved_frac flat_frac curved_frac nll brier ece",
      [ANALYSIS_USE_PREFIX] = "K_absmean Kt_absmean Kt_mean logdet Kh_absmean Kh_mean aniso intabsK "
                              "unresolved_frac flat_frac curved_frac entropy",
      [ANALYSIS_USE_AMP] = "K Kt Kh intabsK logdet aniso",
      [ANALYSIS_USE_GAP] = "acc K Kt Kh nll brier ece",
      [ANALYSIS_USE_GATES] = "acc Kh Kt sink_mass max_attn entropy",
      [ANALYSIS_USE_SINKS] = "share headmax massive drain peak entropy ablfirst ablattn",
  };
  for (int u = 0; u < ANALYSIS_USE_COUNT; u++) {
    analysis_measure_id ids[ANALYSIS_N_MEASURES];
    int n = analysis_measures_of((analysis_use)u, ids);
    char got[1024] = "";
    for (int k = 0; k < n; k++) {
      strcat(got, k ? " " : "");
      strcat(got, ANALYSIS_MEASURES[ids[k]].use[u].column);
    }
    assert_string_equal(got, want[u]);
  }
  /* amplification.csv's quantities (AQ_*, claim 4 reads them by name) are
   * its measures in order */
  static const struct {
    int q;
    const char *name;
  } amp[] = {{AQ_K, "K"},           {AQ_KT, "Kt"},         {AQ_KH, "Kh"},
             {AQ_INTABSK, "intabsK"}, {AQ_LOGDET, "logdet"}, {AQ_ANISO, "aniso"}};
  analysis_measure_id ids[ANALYSIS_N_MEASURES];
  assert_int_equal(analysis_measures_of(ANALYSIS_USE_AMP, ids), AQ_COUNT);
  for (int i = 0; i < AQ_COUNT; i++) assert_string_equal(analysis_amp_q_name(amp[i].q), amp[i].name);
  /* the seed maxima of prefix.csv: Kt_absmean_max, curved_frac_max */
  int n_max = 0;
  for (int m = 0; m < ANALYSIS_N_MEASURES; m++) n_max += !!(ANALYSIS_MEASURES[m].flags & ANALYSIS_MEASURE_SEED_MAX);
  assert_int_equal(n_max, 2);
  assert_true(ANALYSIS_MEASURES[MEASURE_KT_ABS].flags & ANALYSIS_MEASURE_SEED_MAX);
  assert_true(ANALYSIS_MEASURES[MEASURE_CURVED].flags & ANALYSIS_MEASURE_SEED_MAX);
}

/* MEASURES of python/curvsweep_archive: one line per row with a field,
 * `    "field": ("unit", "meaning"),`, and no other entry. */
static void test_python_loader_agrees(void **state) {
  (void)state;
  const char *src = getenv("CS_SOURCE_DIR");
  if (!src) src = "..";
  char path[4096];
  snprintf(path, sizeof path, "%s/python/curvsweep_archive/__init__.py", src);
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot read %s", path);
  static char text[1 << 17];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  const char *start = strstr(text, "\nMEASURES = {\n");
  if (!start) fail_msg("%s: no MEASURES = {", path);
  const char *end = strstr(start, "\n}\n");
  assert_non_null(end);
  int entries = 0;
  for (const char *p = start + 1; p && p < end; p = strchr(p + 1, '\n'))
    entries += !strncmp(p, "\n    \"", 6);
  int rows = 0;
  for (int m = 0; m < ANALYSIS_N_MEASURES; m++) {
    const analysis_measure *M = &ANALYSIS_MEASURES[m];
    if (!M->field || (M->flags & ANALYSIS_MEASURE_CELL)) continue; /* MEASURES: /curvature's */
    rows++;
    char line[1024];
    snprintf(line, sizeof line, "\n    \"%s\": (\"%s\", \"%s\"),\n", M->field, M->unit, M->meaning);
    const char *hit = strstr(start, line);
    if (!hit || hit > end) fail_msg("%s: MEASURES lacks or differs from%s", path, line);
  }
  assert_int_equal(entries, rows);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_row_used_and_named),
      cmocka_unit_test(test_cell_value_reads_its_member),
      cmocka_unit_test(test_column_orders),
      cmocka_unit_test(test_python_loader_agrees),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

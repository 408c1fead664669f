/* test_analysis_sections.c — every row of the report's section table
 * (analysis/sections/sections.c, docs/ARCHITECTURE.md "Adding a report section") is
 * used:
 *   - each row adds to the report: a part of index.md, a verdict for each
 *     claim it lists, a writer and an index.md line for each table it
 *     lists; a state it computes is freed; its name and its claims are
 *     unique, and analysis_claim_rank follows the table;
 *   - every section file of analysis/ (an `analysis_<s>_about`) has its row
 *     in the table and every row's about is defined by one (read from the
 *     sources, $CS_SOURCE_DIR);
 *   - on a sweep of gated and ungated cells, claims 1–4 (the first rows)
 *     each have a verdict in index.md's summary, linked to the heading
 *     their row's write_md printed (the row's `heading`). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "../analysis/sections/sections.h"

#include "curvsweep/analysis.h"
#include "curvsweep/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int list_len_claims(const analysis_claim_info *c) {
  int n = 0;
  while (c[n].claim) n++;
  return n;
}

static int list_len_tables(const analysis_table_info *t) {
  int n = 0;
  while (t[n].file) n++;
  return n;
}

static void test_rows_add_to_the_report(void **state) {
  (void)state;
  assert_true(ANALYSIS_N_SECTIONS >= 4);
  int rank = 0;
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++) {
    const analysis_section *S = &ANALYSIS_SECTIONS[s];
    assert_non_null(S->name);
    assert_true(S->name[0] != '\0');
    for (int o = 0; o < s; o++) assert_string_not_equal(S->name, ANALYSIS_SECTIONS[o].name);
    assert_non_null(S->about);
    assert_non_null(S->about->claims);
    assert_non_null(S->about->tables);
    assert_non_null(S->about->columns);
    /* its part of index.md */
    assert_non_null(S->write_md);
    /* a claim has a verdict; a verdict belongs to a claim */
    int n_claims = list_len_claims(S->about->claims);
    assert_int_equal(n_claims > 0, S->verdicts != NULL);
    /* a table has its writer and its line in index.md's list, and back */
    int n_tables = list_len_tables(S->about->tables);
    assert_int_equal(n_tables > 0, S->write_tables != NULL);
    assert_int_equal(n_tables > 0, S->list_tables != NULL);
    /* a state computed is a state freed */
    assert_int_equal(S->compute != NULL, S->free != NULL);
    for (const analysis_claim_info *c = S->about->claims; c->claim; c++, rank++) {
      assert_true(c->claim[0] && c->says[0] && c->heading[0]);
      const analysis_claim_info *info = NULL;
      assert_int_equal(analysis_claim_rank(c->claim, &info), rank);
      assert_ptr_equal(info, c);
    }
  }
  assert_int_equal(analysis_claim_rank("no such claim", NULL), 99);
}

/* The names s of `analysis_<s>_about` in text: after each `start`, the
 * identifier up to `end`, appended to names (n of cap). */
static void collect_names(const char *text, const char *start, const char *end, char names[][64],
                          int *n, int cap) {
  for (const char *p = strstr(text, start); p; p = strstr(p + 1, start)) {
    const char *a = p + strlen(start);
    while (*a == ' ' || *a == '\n') a++;
    const char *e = strstr(a, end);
    assert_non_null(e);
    assert_true(e - a > 0 && e - a < 64);
    assert_true(*n < cap);
    snprintf(names[*n], 64, "%.*s", (int)(e - a), a);
    (*n)++;
  }
}

static int has_name(char names[][64], int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return 1;
  return 0;
}

static void test_every_section_file_has_its_row(void **state) {
  (void)state;
  const char *src = getenv("CS_SOURCE_DIR");
  assert_non_null(src);
  enum { CAP = 64 };
  char defined[CAP][64], listed[CAP][64];
  int n_def = 0, n_row = 0;
  /* the abouts the files of analysis/ define, in any of its folders */
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "find '%s'/analysis -name '*.c'", src);
  FILE *ls = popen(cmd, "r");
  assert_non_null(ls);
  char path[4096];
  int files = 0;
  while (fgets(path, sizeof path, ls)) {
    path[strcspn(path, "\n")] = '\0';
    char *text = read_text(path);
    assert_non_null(text);
    files++;
    collect_names(text, "const analysis_section_about analysis_", "_about =", defined, &n_def, CAP);
    collect_names(text, "ANALYSIS_CLAIM_ABOUT(", ",", defined, &n_def, CAP);
    free(text);
  }
  assert_int_equal(pclose(ls), 0);
  assert_true(files > 10);
  /* the rows of the table in sections.c */
  snprintf(path, sizeof path, "%s/analysis/sections/sections.c", src);
  char *text = read_text(path);
  assert_non_null(text);
  char *table = strstr(text, "ANALYSIS_SECTIONS[] = {");
  assert_non_null(table);
  char *table_end = strstr(table, "\n};");
  assert_non_null(table_end);
  *table_end = '\0';
  /* the rows in table order: each either names its about (.about = &analysis_<s>_about)
   * or is a macro row (…_ROW(name, s)) */
  for (const char *p = table; p;) {
    const char *named = strstr(p, ".about = &analysis_"), *macro = strstr(p, "_ROW(");
    if (!named && !macro) break;
    int by_macro = macro && (!named || macro < named);
    const char *a = by_macro ? macro + strlen("_ROW(") : named + strlen(".about = &analysis_");
    const char *e = strstr(a, by_macro ? ")" : "_about");
    assert_non_null(e);
    char item[128];
    snprintf(item, sizeof item, "%.*s", (int)(e - a), a);
    const char *name = item;
    if (by_macro) {
      const char *comma = strrchr(item, ',');
      assert_non_null(comma);
      for (name = comma + 1; *name == ' '; name++) {
      }
    }
    assert_true(n_row < CAP && strlen(name) < 64);
    snprintf(listed[n_row++], 64, "%.63s", name);
    p = e;
  }
  free(text);
  assert_int_equal(n_row, ANALYSIS_N_SECTIONS);
  assert_int_equal(n_def, n_row);
  for (int i = 0; i < n_def; i++) {
    if (!has_name(listed, n_row, defined[i])) fail_msg("section %s has no row in sections.c", defined[i]);
    if (!has_name(defined, n_def, listed[i])) fail_msg("row %s: no file defines its about", listed[i]);
  }
  /* the first four rows are claims 1–4, in order */
  const char *claims[] = {"claim1", "claim2", "claim3", "claim4"};
  for (int i = 0; i < 4; i++) assert_string_equal(listed[i], claims[i]);
}

/* Gated cells curved (K̃ and K̂ growing along the layers), ungated ones
 * flat; accuracy 0.8 ungated, 0.9 gated. */
static void fill_cell(const void *ctx, const cs_config *c, cs_cell_result *r) {
  (void)ctx;
  int gated = config_arch_gated(c->arch);
  r->train_acc = r->test_acc = gated ? 0.9 : 0.8;
  for (int l = 1; l <= r->depth; l++) {
    geom_stats *g = &r->curv[l - 1];
    g->n_points = 16;
    double k = gated ? (1.0 + 0.1 * c->seed) * l : 0.0;
    g->K_absmean = g->K_mean = g->Kt_absmean = g->Kt_mean = g->Kh_absmean = g->Kh_mean = k;
    g->intabsK = g->intK = 0.5 * k;
    g->flat_frac = gated ? 0.1 : 1.0, g->curved_frac = gated ? 0.9 : 0.0;
  }
}

static void test_claim_rows_reach_the_summary(void **state) {
  (void)state;
  const char *spec = "[sweep]\nname = sections\n[grid]\narch = ungated, gated\ndepth = 1, 2, 3\n"
                     "seed = 0..4\n[curvature]\npoints = 16\n";
  int64_t n;
  cs_cell_result *res = make_spec_results(spec, fill_cell, NULL, &n);
  char dir[64];
  char *md = analyse_results(spec, res, n, NULL, "sections", dir, sizeof dir);
  for (int s = 0; s < 4; s++) {
    const analysis_claim_info *c = ANALYSIS_SECTIONS[s].about->claims;
    /* the summary's row links to an anchor ... */
    char link[64];
    snprintf(link, sizeof link, "| [%s](#", c->claim);
    const char *at = strstr(md, link);
    if (!at) fail_msg("claim %s: no linked row in the summary", c->claim);
    at += strlen(link);
    char anchor[128];
    snprintf(anchor, sizeof anchor, "<a id=\"%.*s\"></a>\n\n### %s", (int)strcspn(at, ")"), at,
             c->heading);
    /* ... placed before the heading its row's write_md printed */
    if (!strstr(md, anchor)) fail_msg("claim %s: no heading \"%s\" at its anchor", c->claim, c->heading);
  }
  free(md);
  remove_tree(dir);
  free_result_array(res, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_add_to_the_report),
      cmocka_unit_test(test_every_section_file_has_its_row),
      cmocka_unit_test(test_claim_rows_reach_the_summary),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

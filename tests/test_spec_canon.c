/* test_spec_canon.c — the canonical resolved spec (docs/SPEC.md,
 * "Identity"): equivalent spellings hash equal, different values differ, the
 * exact canonical text, spec_compare's relation and keys, the map of cells
 * between a spec and one that grows it (checked against each cell's resolved
 * config), and the union of two grids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "curvsweep/config.h"
#include "curvsweep/error.h"
#include "curvsweep/spec.h"
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cs_spec *load(const char *text) {
  cs_spec *s = NULL;
  assert_ok(spec_load_string(text, "t.ini", &s));
  return s;
}

/* Canonical hashes of two texts equal (or not). */
static void expect_same(const char *a, const char *b, int same) {
  cs_spec *x = load(a), *y = load(b);
  if (same) assert_string_equal(spec_canonical_sha256(x), spec_canonical_sha256(y));
  else assert_string_not_equal(spec_canonical_sha256(x), spec_canonical_sha256(y));
  // the raw texts differ in every case below: their sha256 does too
  assert_string_not_equal(spec_sha256(x), spec_sha256(y));
  spec_free(x), spec_free(y);
}

static const char *BASE = "[sweep]\nname = t\n[grid]\nseed = 0..3\ndepth = 1, 2\n[train]\nlr = 3e-3\n";

static void test_equivalent_spellings(void **state) {
  (void)state;
  // comments, blank lines, spacing, key and section order, number spellings,
  // defaults written out, a range as a list, output and max_retries
  expect_same(BASE, "; a comment\n\n[train]\nlr=0.003\nepochs = 100\nbatch = 256\n"
                    "[grid]\nseed = 0, 1, 2..3\ndepth = 1..2\n# another\n[sweep]\n"
                    "output = elsewhere.h5\nmax_retries = 4\nname = t\n", 1);
  expect_same(BASE, "[sweep]\nname = t\n[grid]\nseed = 0..3\ndepth = 1, 2\n[train]\nlr = 0.0030\n"
                    "weight_decay = 0e0\n[curvature]\nsigma = 1.0\n", 1);
  // an axis of one value is that value fixed (same cells, same configs)
  expect_same(BASE, "[sweep]\nname = t\n[grid]\nseed = 0..3\nwidth = 16\ndepth = 1, 2\n"
                    "[train]\nlr = 3e-3\n", 1);
}

static void test_different_values(void **state) {
  (void)state;
  expect_same(BASE, "[sweep]\nname = t\n[grid]\nseed = 0..4\ndepth = 1, 2\n[train]\nlr = 3e-3\n", 0);
  expect_same(BASE, "[sweep]\nname = t\n[grid]\nseed = 0..3\ndepth = 1, 2\n[train]\nlr = 4e-3\n", 0);
  expect_same(BASE, "[sweep]\nname = u\n[grid]\nseed = 0..3\ndepth = 1, 2\n[train]\nlr = 3e-3\n", 0);
  expect_same(BASE, "[sweep]\nname = t\nsave_points = yes\n[grid]\nseed = 0..3\ndepth = 1, 2\n"
                    "[train]\nlr = 3e-3\n", 0);
  // the order of axes and of values numbers the cells: another identity
  expect_same(BASE, "[sweep]\nname = t\n[grid]\ndepth = 1, 2\nseed = 0..3\n[train]\nlr = 3e-3\n", 0);
  expect_same(BASE, "[sweep]\nname = t\n[grid]\nseed = 0..3\ndepth = 2, 1\n[train]\nlr = 3e-3\n", 0);
  // the smallest change of a real value
  expect_same("[train]\nlr = 0.1\n", "[train]\nlr = 0.10000000000000002\n", 0);
}

/* Every key, set away from its default, shows in the canonical text with
 * its canonical spelling (so none is left out of the identity). */
static void test_canonical_text(void **state) {
  (void)state;
  cs_spec *s = load("[sweep]\nname = all keys\nsave_params = yes\nsave_points = yes\n"
                    "output = x.h5\nmax_retries = 3\n"
                    "[grid]\nseed = 5, 0..2, 9\nlr = 1e-2, 0.5\narch = ungated\n"
                    "[task]\ninput_dim = 2\ntrain_points = 100\ntest_points = 50\n"
                    "label_noise = 0.25\nvocab = 40\nseq_len = 20\ntokens = 5\n"
                    "token_dist = gaussian\nteacher_heads = 2\nnoise = 0.05\n"
                    "[model]\nfamily = self\ngate = g3\nwidth = 12\nslots = 2\nheads = 3\n"
                    "residual = yes\nnorm = pre\nmlp_ratio = 2\n"
                    "[train]\nepochs = 7\nbatch = 0\nschedule = cosine\nweight_decay = 1e-4\n"
                    "eval_every = 3\nrestarts = 2\ngrad_tol = 1e-9\n[curvature]\npoints = 9\nsigma = 0.5\n"
                    "exact_dim_max = 4\n"
                    "field = 8\n[team]\ngrid = 2x1\nblock = 32\n");
  assert_string_equal(spec_canonical_text(s),
                      "# curvsweep canonical spec 1 (docs/SPEC.md, \"Identity\")\n"
                      "[sweep]\nname = all keys\nsave_params = yes\nsave_points = yes\n"
                      "[grid]\nseed = 5, 0..2, 9\nlr = 0.01, 0.5\narch = ungated\ndepth = 1\n"
                      "task = circles\n"
                      "[task]\ninput_dim = 2\ntrain_points = 100\ntest_points = 50\n"
                      "label_noise = 0.25\nvocab = 40\nseq_len = 20\ntokens = 5\n"
                      "token_dist = gaussian\nteacher_heads = 2\nnoise = 0.05\n"
                      "[model]\nfamily = self\ngate = g3\nwidth = 12\nslots = 2\nheads = 3\n"
                      "residual = yes\nnorm = pre\nmlp_ratio = 2\n"
                      "[train]\nepochs = 7\nbatch = 0\nschedule = cosine\nweight_decay = 0.0001\n"
                      "eval_every = 3\nrestarts = 2\ngrad_tol = 1e-09\n[curvature]\npoints = 9\n"
                      "sigma = 0.5\nexact_dim_max = 4\n"
                      "field = 8\n[team]\ngrid = 2x1\nblock = 32\n");
  // the canonical text is a spec of the same identity
  cs_spec *again = load(spec_canonical_text(s));
  assert_string_equal(spec_canonical_text(again), spec_canonical_text(s));
  assert_int_equal(spec_cell_count(again), spec_cell_count(s));
  spec_free(again), spec_free(s);
}

typedef struct {
  char text[1024];
} diff_log;

static void log_diff(const char *key, const char *os, const char *ov, const char *ns,
                     const char *nv, int grows, void *ctx) {
  diff_log *d = ctx;
  size_t n = strlen(d->text);
  snprintf(d->text + n, sizeof d->text - n, "%s%s [%s] %s -> [%s] %s", grows ? "+" : "!", key, os,
           ov, ns, nv);
  n = strlen(d->text);
  snprintf(d->text + n, sizeof d->text - n, "\n");
}

static cs_spec_relation relation(const char *a, const char *b, diff_log *d) {
  cs_spec *x = load(a), *y = load(b);
  cs_spec_relation rel;
  memset(d, 0, sizeof *d);
  assert_ok(spec_compare(x, y, log_diff, d, &rel));
  spec_free(x), spec_free(y);
  return rel;
}

static void test_compare(void **state) {
  (void)state;
  diff_log d;
  assert_int_equal(relation(BASE, BASE, &d), SPEC_SAME);
  assert_string_equal(d.text, "");
  // more seeds: grows, seed named as grown
  assert_int_equal(relation("[grid]\nseed = 0..1\n", "[grid]\nseed = 0..3\n", &d), SPEC_GROWS);
  assert_string_equal(d.text, "+seed [grid] 0..1 -> [grid] 0..3\n");
  // a fixed key turned into an axis that keeps its value: grows
  assert_int_equal(relation("[train]\nepochs = 5\n", "[grid]\nepochs = 5, 10\n", &d), SPEC_GROWS);
  assert_string_equal(d.text, "+epochs [train] 5 -> [grid] 5, 10\n");
  // fewer seeds, another width: differs, the refused keys first
  assert_int_equal(relation("[grid]\nseed = 0..3\n[model]\nwidth = 16\n",
                            "[grid]\nseed = 0..1, 7\ndepth = 1, 2\n[model]\nwidth = 32\n", &d),
                   SPEC_DIFFERS);
  assert_string_equal(d.text, "!seed [grid] 0..3 -> [grid] 0..1, 7\n"
                              "!width [model] 16 -> [model] 32\n"
                              "+depth [grid] 1 -> [grid] 1..2\n");
  // a comment and output: the same
  assert_int_equal(relation(BASE, "# c\n[sweep]\noutput = o.h5\nname = t\n[grid]\nseed = 0..3\n"
                                  "depth = 1, 2\n[train]\nlr = 0.003\n", &d), SPEC_SAME);
}

/* Every cell of the old spec maps to a distinct cell of the new one with
 * the same resolved config (compared field by field, an independent path:
 * spec_cell_config of both specs). */
static void test_map_cells(void **state) {
  (void)state;
  cs_spec *old = load("[grid]\ndepth = 1, 2\nseed = 0..1\n[train]\nepochs = 5\n");
  cs_spec *grown = load("[grid]\nseed = 3, 0..2\narch = ungated, gated\ndepth = 2, 1, 3\n"
                        "epochs = 7, 5\n");
  spec_cell_map *m = NULL;
  assert_ok(spec_map_begin(old, grown, &m));
  int64_t n = spec_cell_count(grown);
  unsigned char *hit = calloc((size_t)n, 1);
  for (int64_t c = 0; c < spec_cell_count(old); c++) {
    int64_t g = spec_map_cell(m, c);
    assert_true(g >= 0 && g < n);
    assert_false(hit[g]);
    hit[g] = 1;
    cs_config a, b;
    assert_ok(spec_cell_config(old, c, &a));
    assert_ok(spec_cell_config(grown, g, &b));
    assert_int_equal(a.depth, b.depth);
    assert_int_equal(a.seed, b.seed);
    assert_int_equal(a.arch, b.arch);
    assert_int_equal(a.epochs, b.epochs);
    assert_int_equal(a.width, b.width);
    assert_true(a.lr == b.lr);
  }
  assert_int_equal(spec_map_cell(m, spec_cell_count(old)), -1);
  spec_map_free(m);
  free(hit);
  // a spec that does not hold every cell of old: refused, naming the key
  cs_spec *fewer = load("[grid]\ndepth = 1\nseed = 0..1\n[train]\nepochs = 5\n");
  assert_int_equal(spec_map_begin(old, fewer, &m), CS_ERR_INPUT);
  assert_null(m);
  assert_non_null(strstr(cs_error_message(), "[grid] depth"));
  spec_free(fewer), spec_free(grown), spec_free(old);
}

static void test_union(void **state) {
  (void)state;
  cs_spec *a = load("[sweep]\nname = u\n[grid]\nseed = 0..1\ndepth = 1, 2\n");
  cs_spec *b = load("[sweep]\nname = u\n[grid]\nseed = 2, 3\ndepth = 2\n");
  char *text = NULL;
  assert_ok(spec_union_text(a, b, &text));
  cs_spec *u = load(text);
  assert_int_equal(spec_cell_count(u), 8);  // seed 0..3 x depth 1..2
  diff_log d;
  cs_spec_relation rel;
  assert_ok(spec_compare(a, u, log_diff, &d, &rel));
  assert_int_equal(rel, SPEC_GROWS);
  assert_ok(spec_compare(b, u, NULL, NULL, &rel));
  assert_int_equal(rel, SPEC_GROWS);
  free(text), spec_free(u), spec_free(b);
  // a key outside [grid] that differs: refused, naming it
  cs_spec *c = load("[sweep]\nname = u\n[grid]\nseed = 2, 3\n[model]\nwidth = 8\n");
  assert_int_equal(spec_union_text(a, c, &text), CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), "[model] width 16 and 8"));
  spec_free(c), spec_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equivalent_spellings),
      cmocka_unit_test(test_different_values),
      cmocka_unit_test(test_canonical_text),
      cmocka_unit_test(test_compare),
      cmocka_unit_test(test_map_cells),
      cmocka_unit_test(test_union),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

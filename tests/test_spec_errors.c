/* test_spec_errors.c — the exact message of every kind of bad spec:
 * sections, keys, numbers, names, axes, combinations, teams, grid sizes,
 * syntax and files (good specs and limits: test_spec.c). */
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
#include <sys/stat.h>
#include <unistd.h>

#define SECTIONS "allowed: sweep, grid, task, model, train, curvature, team"
#define AXES "allowed: arch, depth, task, seed, or any key of [task], [model], [train], [curvature]"
#define MODEL_KEYS "allowed: family, gate, width, slots, heads, residual, norm, mlp_ratio"
#define SYNTAX "allowed: [section], key = value, a ; or # comment, or a blank line"
#define DEPTH_LIST "allowed: a comma list of values or integer ranges a..b, each an integer in [1, 64]"


static void test_bad_sections(void **state) {
  spec_expect_bad("[sweep]\nname = x\n[modle]\nwidth = 8\n",
             "bad.ini:3: unknown section [modle]; did you mean [model]? " SECTIONS);
  spec_expect_bad("[results]\n", "bad.ini:1: unknown section [results]; " SECTIONS);
  // an empty unknown section is still an error (inih alone would not see it)
  spec_expect_bad("[model]\nwidth = 8\n[curvatur]\n",
             "bad.ini:3: unknown section [curvatur]; did you mean [curvature]? " SECTIONS);
  spec_expect_bad("[model]\nwidth = 8\n[train]\n[model]\nslots = 2\n",
             "bad.ini:4: section [model] appears twice (first at line 1); allowed: each section once");
  spec_expect_bad("width = 8\n",
             "bad.ini:1: width: key outside any section; allowed: keys inside [sweep], [grid], "
             "[task], [model], [train], [curvature] or [team]");
}

static void test_bad_keys(void **state) {
  spec_expect_bad("[model]\nwidht = 8\n",
             "bad.ini:2: [model] widht: unknown key; did you mean width? " MODEL_KEYS);
  spec_expect_bad("[model]\nWidth = 8\n",
             "bad.ini:2: [model] Width: unknown key; did you mean width? " MODEL_KEYS);
  spec_expect_bad("[model]\ncolour = red\n", "bad.ini:2: [model] colour: unknown key; " MODEL_KEYS);
  spec_expect_bad("[model]\nlr = 0.1\n",
             "bad.ini:2: [model] lr: not a [model] key (it belongs in [train]); " MODEL_KEYS);
  spec_expect_bad("[model]\ndepth = 2\n",
             "bad.ini:2: [model] depth: not a [model] key (it is an axis: set it in [grid]); "
             MODEL_KEYS);
  spec_expect_bad("[grid]\ndept = 1, 2\n", "bad.ini:2: [grid] dept: unknown axis; did you mean depth? " AXES);
  spec_expect_bad("[grid]\nmax_retries = 0, 1\n",
             "bad.ini:2: [grid] max_retries: a [sweep] key cannot be an axis; " AXES);
  spec_expect_bad("[grid]\ngrid = 1x1, 2x2\n", "bad.ini:2: [grid] grid: a [team] key cannot be an axis; " AXES);
  spec_expect_bad("[model]\nwidth = 8\nslots = 2\nwidth = 16\n",
             "bad.ini:4: [model] width: set twice (first at line 2); allowed: each key once per section");
  spec_expect_bad("[grid]\nseed = 1\nseed = 2\n",
             "bad.ini:3: [grid] seed: set twice (first at line 2); allowed: each key once per section");
}

static void test_bad_fixed_and_axis(void **state) {
  spec_expect_bad("[model]\nwidth = 8\n[grid]\nwidth = 8, 16\n",
             "bad.ini:4: [grid] width: also set in [model] at line 2; allowed: an axis here or a "
             "fixed value in [model], not both");
  // the file has comments and blank lines: line numbers count them
  char path[1024];
  fixture_source_path("tests/specs/bad-both.ini", path, sizeof path);
  cs_spec *s = (cs_spec *)0x1;
  assert_int_equal(spec_load_file(path, &s), CS_ERR_INPUT);
  assert_null(s);
  char want[1400];
  snprintf(want, sizeof want,
           "%s:7: [train] lr: also an axis in [grid] at line 3; allowed: a fixed value here or "
           "an axis in [grid], not both",
           path);
  assert_string_equal(cs_error_message(), want);
  fixture_source_path("tests/specs/bad-typo.ini", path, sizeof path);
  assert_int_equal(spec_load_file(path, &s), CS_ERR_INPUT);
  snprintf(want, sizeof want, "%s:9: [model] widht: unknown key; did you mean width? " MODEL_KEYS,
           path);
  assert_string_equal(cs_error_message(), want);
}

static void test_bad_numbers(void **state) {
  spec_expect_bad("[model]\nwidth = 12x\n",
             "bad.ini:2: [model] width: '12x' is not an integer; allowed: an integer >= 1");
  spec_expect_bad("[train]\nepochs = 1.5\n",
             "bad.ini:2: [train] epochs: '1.5' is not an integer; allowed: an integer >= 1");
  spec_expect_bad("[train]\nlr = fast\n",
             "bad.ini:2: [train] lr: 'fast' is not a number; allowed: a real number > 0");
  spec_expect_bad("[curvature]\nsigma = nan\n",
             "bad.ini:2: [curvature] sigma: 'nan' is not a number; allowed: a real number > 0");
  spec_expect_bad("[curvature]\nsigma = 1e999\n",
             "bad.ini:2: [curvature] sigma: 1e999 is out of range; allowed: a real number > 0");
  spec_expect_bad("[model]\nwidth = 0\n",
             "bad.ini:2: [model] width: 0 is out of range; allowed: an integer >= 1");
  spec_expect_bad("[train]\nlr = 0\n", "bad.ini:2: [train] lr: 0 is out of range; allowed: a real number > 0");
  spec_expect_bad("[task]\nlabel_noise = 0.7\n",
             "bad.ini:2: [task] label_noise: 0.7 is out of range; allowed: a real number in [0, 0.5]");
  spec_expect_bad("[grid]\nseed = 3, -1\n",
             "bad.ini:2: [grid] seed: -1 is out of range; allowed: an integer >= 0");
  spec_expect_bad("[grid]\ndepth = 65\n",
             "bad.ini:2: [grid] depth: 65 is out of range; allowed: an integer in [1, 64]");
  spec_expect_bad("[task]\ninput_dim = 99999999999999999999\n",
             "bad.ini:2: [task] input_dim: 99999999999999999999 is out of range; allowed: an "
             "integer in [1, 64]");
  spec_expect_bad("[model]\nslots = 3000000000\n",
             "bad.ini:2: [model] slots: 3000000000 is out of range; allowed: an integer >= 1");
  spec_expect_bad("[train]\nbatch = -1\n",
             "bad.ini:2: [train] batch: -1 is out of range; allowed: an integer >= 0 (0 = full batch)");
  spec_expect_bad("[curvature]\nexact_dim_max = 1\n",
             "bad.ini:2: [curvature] exact_dim_max: 1 is out of range; allowed: an integer >= 2");
  spec_expect_bad("[sweep]\nmax_retries = -2\n",
             "bad.ini:2: [sweep] max_retries: -2 is out of range; allowed: an integer >= 0");
  spec_expect_bad("[model]\nwidth =\n", "bad.ini:2: [model] width: empty value; allowed: an integer >= 1");
  spec_expect_bad("[model]\nwidth = 8, 16\n",
             "bad.ini:2: [model] width: '8, 16' is a list; allowed: one value, an integer >= 1 "
             "(lists belong in [grid])");
  spec_expect_bad("[model]\nwidth = 8..16\n",
             "bad.ini:2: [model] width: '8..16' is a range; allowed: one value, an integer >= 1 "
             "(ranges belong in [grid])");
}

static void test_bad_names(void **state) {
  spec_expect_bad("[model]\nresidual = maybe\n",
             "bad.ini:2: [model] residual: unknown value 'maybe'; allowed: no, yes");
  spec_expect_bad("[sweep]\nsave_points = ys\n",
             "bad.ini:2: [sweep] save_points: unknown value 'ys'; did you mean yes? allowed: no, yes");
  spec_expect_bad("[grid]\narch = ungated, gatd\n",
             "bad.ini:2: [grid] arch: unknown value 'gatd'; did you mean gated? allowed: ungated, "
             "gated, gated-headwise, mlp");
  spec_expect_bad("[grid]\ntask = circle\n",
             "bad.ini:2: [grid] task: unknown value 'circle'; did you mean circles? allowed: linear, "
             "blobs, xor, circles, spiral, checker, bigram-backcopy, associative-recall, teacher");
  spec_expect_bad("[train]\nschedule = linear\n",
             "bad.ini:2: [train] schedule: unknown value 'linear'; allowed: constant, cosine");
  spec_expect_bad("[model]\nnorm = post\n",
             "bad.ini:2: [model] norm: unknown value 'post'; allowed: none, pre");
  spec_expect_bad("[sweep]\nname =\n",
             "bad.ini:2: [sweep] name: empty value; allowed: a non-empty name of at most 127 "
             "characters, no control characters");
  // control characters would reach terminals and index.md raw (docs/SECURITY.md)
  spec_expect_bad("[sweep]\nname = a\x1b[2Jb\n",
             "bad.ini:2: [sweep] name: control character 0x1B at position 2 of the value; allowed: "
             "a non-empty name of at most 127 characters, no control characters");
  spec_expect_bad("[sweep]\nname = bell\a\n",
             "bad.ini:2: [sweep] name: control character 0x07 at position 5 of the value; allowed: "
             "a non-empty name of at most 127 characters, no control characters");
  spec_expect_bad("[sweep]\nname = x\ry\n",
             "bad.ini:2: [sweep] name: control character 0x0D at position 2 of the value; allowed: "
             "a non-empty name of at most 127 characters, no control characters");
  spec_expect_bad("[sweep]\noutput = a\tb.h5\n",
             "bad.ini:2: [sweep] output: control character 0x09 at position 2 of the value; allowed: "
             "a non-empty path of at most 191 characters (-o takes longer ones), no control "
             "characters");
  // UTF-8 and Markdown punctuation are names like any other
  cs_spec *s = spec_from("[sweep]\nname = Kr\xc3\xbcmmung *[x](y)* <b>\n");
  assert_string_equal(spec_sweep(s)->name, "Kr\xc3\xbcmmung *[x](y)* <b>");
  spec_free(s);
}

static void test_bad_axes(void **state) {
  spec_expect_bad("[grid]\ndepth =\n", "bad.ini:2: [grid] depth: empty axis; " DEPTH_LIST);
  spec_expect_bad("[grid]\ndepth = 1,,2\n", "bad.ini:2: [grid] depth: empty element 2 in '1,,2'; " DEPTH_LIST);
  spec_expect_bad("[grid]\ndepth = 1, 2,\n",
             "bad.ini:2: [grid] depth: empty element 3 in '1, 2,'; " DEPTH_LIST);
  spec_expect_bad("[grid]\nnorm =\n",
             "bad.ini:2: [grid] norm: empty axis; allowed: a comma list of values, each none, pre");
  spec_expect_bad("[grid]\ndepth = 4..2\n",
             "bad.ini:2: [grid] depth: range 4..2 is empty (4 > 2); allowed: a..b with a <= b");
  spec_expect_bad("[grid]\ndepth = 1..x\n", "bad.ini:2: [grid] depth: '1..x' is not an integer range a..b; " DEPTH_LIST);
  spec_expect_bad("[grid]\ndepth = 0..3\n",
             "bad.ini:2: [grid] depth: 0 is out of range; allowed: an integer in [1, 64]");
  spec_expect_bad("[grid]\nlr = 1e-3..1e-2\n",
             "bad.ini:2: [grid] lr: range '1e-3..1e-2' on a non-integer key; allowed: a comma list "
             "of values, each a real number > 0");
  spec_expect_bad("[grid]\narch = ungated..gated\n",
             "bad.ini:2: [grid] arch: range 'ungated..gated' on a non-integer key; allowed: a comma "
             "list of values, each ungated, gated, gated-headwise, mlp");
  spec_expect_bad("[grid]\ndepth = 1..3, 2\n",
             "bad.ini:2: [grid] depth: 2 appears twice; allowed: each value once per axis");
  // duplicates are equal values, not equal text; the first repeat is named
  spec_expect_bad("[grid]\nlr = 3e-3, 1e-3, 0.001, 0.003\n",
             "bad.ini:2: [grid] lr: 0.001 appears twice; allowed: each value once per axis");
  spec_expect_bad("[grid]\narch = gated, mlp, gated\n",
             "bad.ini:2: [grid] arch: gated appears twice; allowed: each value once per axis");
}

static void test_bad_combinations(void **state) {
  spec_expect_bad("[grid]\nwidth = 8, 12\n[model]\nheads = 8\n",
             "bad.ini:4: [model] heads: 8 does not divide width 12 ([grid] line 2); allowed: a "
             "divisor of the width: 1, 2, 3, 4, 6, 12");
  spec_expect_bad("[grid]\nheads = 1, 2, 3\n",
             "bad.ini:2: [grid] heads: 3 does not divide width 16 (the default); allowed: a divisor "
             "of the width: 1, 2, 4, 8, 16");
  spec_expect_bad("[grid]\ntask = linear, spiral\n[task]\ninput_dim = 3\n",
             "bad.ini:4: [task] input_dim: 3 is not supported by task spiral ([grid] line 2); "
             "allowed with spiral: 2");
  spec_expect_bad("[task]\ninput_dim = 1\n",
             "bad.ini:2: [task] input_dim: 1 is not supported by task circles (the default); "
             "allowed with circles: 2..64");
  spec_expect_bad("[grid]\ninput_dim = 2, 4\ntask = xor, checker\n",
             "bad.ini:2: [grid] input_dim: 4 is not supported by task checker ([grid] line 3); "
             "allowed with checker: 2");
  // the self family has no mlp block: the family key is named, with the arch's source
  spec_expect_bad("[grid]\narch = gated, mlp\n[model]\nfamily = self\n",
             "bad.ini:4: [model] family: self has no mlp block, but arch mlp is in the grid "
             "([grid] line 2); allowed with arch = mlp: memory; with family = self: arch ungated, "
             "gated, gated-headwise");
  spec_expect_bad("[grid]\nfamily = memory, self\narch = mlp\n",
             "bad.ini:2: [grid] family: self has no mlp block, but arch mlp is in the grid "
             "([grid] line 3); allowed with arch = mlp: memory; with family = self: arch ungated, "
             "gated, gated-headwise");
}

static void test_bad_team(void **state) {
  spec_expect_bad("[team]\nblock = 0\n",
             "bad.ini:2: [team] block: 0 is out of range; allowed: an integer in [1, 4096]");
  spec_expect_bad("[team]\ngrid = 2by2\n",
             "bad.ini:2: [team] grid: '2by2' is not PxQ; allowed: PxQ with P, Q >= 1 (e.g. 1x1, 2x2)");
  spec_expect_bad("[team]\ngrid = 0x1\n",
             "bad.ini:2: [team] grid: 0x1 is out of range; allowed: PxQ with P, Q >= 1 (e.g. 1x1, 2x2)");
  spec_expect_bad("[team]\ngrid = 2x\n",
             "bad.ini:2: [team] grid: '2x' is not PxQ; allowed: PxQ with P, Q >= 1 (e.g. 1x1, 2x2)");
}

static void test_bad_grid_size(void **state) {
  spec_expect_bad("[grid]\nseed = 0..9999\nwidth = 1..1001\n",
             "bad.ini:3: [grid] width: the grid would have 10010000 cells (10000 x 1001); allowed: "
             "at most 10000000 cells");
  spec_expect_bad("[grid]\nseed = 0..10000000\n",
             "bad.ini:2: [grid] seed: the grid would have 10000001 cells; allowed: at most 10000000 cells");
  spec_expect_bad("[grid]\narch = ungated, gated\nseed = 0..9223372036854775806\n",
             "bad.ini:3: [grid] seed: the grid would have more than 9223372036854775807 cells "
             "(2 x 9223372036854775807 overflows int64); allowed: at most 10000000 cells");
  spec_expect_bad("[grid]\nseed = 0..9223372036854775807\n",
             "bad.ini:2: [grid] seed: the grid would have more than 9223372036854775807 cells "
             "(9223372036854775808 overflows int64); allowed: at most 10000000 cells");
  // exactly the limit is accepted
  cs_spec *s = spec_from("[grid]\nseed = 1..10000\nwidth = 1..1000\n");
  assert_int_equal(spec_cell_count(s), 10000000);
  cs_config c;
  assert_ok(spec_cell_config(s, 9999999, &c));
  assert_int_equal(c.seed, 10000);
  assert_int_equal(c.width, 1000);
  spec_free(s);
}

static void test_bad_syntax(void **state) {
  spec_expect_bad("[model]\nwidth 8\n",
             "bad.ini:2: syntax error: 'width 8' is not key = value; " SYNTAX);
  spec_expect_bad("[model\nwidth = 8\n", "bad.ini:1: syntax error: '[model' has no closing ]; " SYNTAX);
  spec_expect_bad("[model] extra\n", "bad.ini:1: syntax error: text after ] in '[model] extra'; " SYNTAX);
  spec_expect_bad("[model]\n= 8\n", "bad.ini:2: syntax error: '= 8' has no key before '='; " SYNTAX);
  // the first error by line wins, whichever kind it is
  spec_expect_bad("[model]\nwidth 8\nwidht = 3\n",
             "bad.ini:2: syntax error: 'width 8' is not key = value; " SYNTAX);
  spec_expect_bad("[model]\nwidht = 3\nwidth 8\n",
             "bad.ini:2: [model] widht: unknown key; did you mean width? " MODEL_KEYS);
  // a line longer than libinih's buffer is refused, not split in two
  char text[400];
  snprintf(text, sizeof text, "[sweep]\nname = %0300d\n", 0);
  cs_spec *s = (cs_spec *)0x1;
  assert_int_equal(spec_load_string(text, "bad.ini", &s), CS_ERR_INPUT);
  assert_null(s);
  // 198 = Debian libinih's INI_MAX_LINE (200) less the newline and the NUL
  assert_string_equal(cs_error_message(),
                      "bad.ini:2: line is 307 characters long (without comments); allowed: at most 198");
  // a long comment is no problem: comments are removed before inih sees the line
  snprintf(text, sizeof text, "[sweep]\nname = n ; %0300d\n", 0);
  s = spec_from(text);
  assert_string_equal(spec_sweep(s)->name, "n");
  spec_free(s);
}

static void test_bad_files(void **state) {
  cs_spec *s = (cs_spec *)0x1;
  assert_int_equal(spec_load_file("/nonexistent/dir/spec.ini", &s), CS_ERR_INPUT);
  assert_null(s);
  assert_string_equal(cs_error_message(),
                      "/nonexistent/dir/spec.ini: cannot open spec: No such file or directory");
  char path[1024], want[1200];
  fixture_source_path("tests/specs", path, sizeof path);
  assert_int_equal(spec_load_file(path, &s), CS_ERR_INPUT);
  assert_null(s);
  snprintf(want, sizeof want, "%s: cannot read spec: Is a directory", path);
  assert_string_equal(cs_error_message(), want);
  // a FIFO is refused at once (opening one for reading must not wait for a writer)
  char fifo[] = "/tmp/test_spec_fifo_XXXXXX";
  int dfd = mkstemp(fifo);
  assert_true(dfd >= 0);
  close(dfd);
  unlink(fifo);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(spec_load_file(fifo, &s), CS_ERR_INPUT);
  assert_null(s);
  snprintf(want, sizeof want, "%s: cannot read spec: not a regular file (a FIFO)", fifo);
  assert_string_equal(cs_error_message(), want);
  unlink(fifo);
  // /dev/null: a character device
  assert_int_equal(spec_load_file("/dev/null", &s), CS_ERR_INPUT);
  assert_string_equal(cs_error_message(),
                      "/dev/null: cannot read spec: not a regular file (a device or other special file)");
  // a NUL byte (only a file can carry one) is refused with its line
  char tmp[] = "/tmp/test_spec_nul_XXXXXX";
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "wb");
  assert_non_null(f);
  const char bytes[] = "[model]\nwidth = 8\0junk\n";
  assert_int_equal(fwrite(bytes, 1, sizeof bytes - 1, f), sizeof bytes - 1);
  fclose(f);
  assert_int_equal(spec_load_file(tmp, &s), CS_ERR_INPUT);
  assert_null(s);
  snprintf(want, sizeof want, "%s:2: NUL byte in the line; allowed: text", tmp);
  assert_string_equal(cs_error_message(), want);
  remove(tmp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_sections),
      cmocka_unit_test(test_bad_keys),
      cmocka_unit_test(test_bad_fixed_and_axis),
      cmocka_unit_test(test_bad_numbers),
      cmocka_unit_test(test_bad_names),
      cmocka_unit_test(test_bad_axes),
      cmocka_unit_test(test_bad_combinations),
      cmocka_unit_test(test_bad_team),
      cmocka_unit_test(test_bad_grid_size),
      cmocka_unit_test(test_bad_syntax),
      cmocka_unit_test(test_bad_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

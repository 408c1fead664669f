/* test_spec.c — sweep specs: SHA-256 vectors, defaults, cell numbering,
 * axes, sizes; the exact messages of bad specs are test_spec_errors.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "curvsweep/config.h"
#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/spec.h"
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* helpers                                                                    */

static cs_spec *load_ok(const char *text) {
  cs_spec *s = NULL;
  assert_ok(spec_load_string(text, "good.ini", &s));
  assert_non_null(s);
  return s;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char *buf = calloc(1 << 16, 1);
  assert_non_null(buf);
  *len = fread(buf, 1, (1 << 16) - 1, f);
  fclose(f);
  return buf;
}

/* ------------------------------------------------------------------------ */
/* SHA-256                                                                    */

static void sha_of(const char *s, size_t n, char out[65]) { spec_sha256_hex(s, n, out); }

static void test_sha256_vectors(void **state) {
  char h[65];
  // FIPS 180-4 examples
  sha_of("", 0, h);
  assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  sha_of("abc", 3, h);
  assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  sha_of(two, strlen(two), h);
  assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const char *four = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                     "klmnopqrlmnopqrsmnopqrstnopqrstu";
  sha_of(four, strlen(four), h);
  assert_string_equal(h, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  // one million 'a' (many blocks)
  char *a = malloc(1000000);
  assert_non_null(a);
  memset(a, 'a', 1000000);
  sha_of(a, 1000000, h);
  assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // padding boundaries: 55 bytes fit one final block, 56..63 need two
  sha_of(a, 55, h);
  assert_string_equal(h, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  sha_of(a, 56, h);
  assert_string_equal(h, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  sha_of(a, 63, h);
  assert_string_equal(h, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
  sha_of(a, 64, h);
  assert_string_equal(h, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  sha_of(a, 119, h);
  assert_string_equal(h, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
  free(a);
}

static void test_sha256_of_spec_text(void **state) {
  const char *t1 = "[model]\nwidth = 8\n";
  const char *t2 = "[model]\nwidth = 9\n";  // one byte differs
  cs_spec *s1 = load_ok(t1), *s2 = load_ok(t2);
  char h[65];
  spec_sha256_hex(t1, strlen(t1), h);
  assert_string_equal(spec_sha256(s1), h);
  assert_int_equal(strlen(spec_sha256(s1)), 64);
  assert_string_not_equal(spec_sha256(s1), spec_sha256(s2));
  // a comment changes the text (and so the hash) but not the cells
  cs_spec *s3 = load_ok("[model]\nwidth = 8 ; eight\n");
  assert_string_not_equal(spec_sha256(s1), spec_sha256(s3));
  assert_string_equal(spec_text(s1), t1);
  assert_string_equal(spec_source(s1), "good.ini");
  spec_free(s1);
  spec_free(s2);
  spec_free(s3);
}

/* ------------------------------------------------------------------------ */
/* Good specs                                                                 */

static void assert_config_equal(const cs_config *a, const cs_config *b) {
  assert_int_equal(a->arch, b->arch);
  assert_int_equal(a->depth, b->depth);
  assert_int_equal(a->task, b->task);
  assert_int_equal(a->seed, b->seed);
  assert_int_equal(a->input_dim, b->input_dim);
  assert_int_equal(a->train_points, b->train_points);
  assert_int_equal(a->test_points, b->test_points);
  assert_true(a->label_noise == b->label_noise);
  assert_int_equal(a->width, b->width);
  assert_int_equal(a->slots, b->slots);
  assert_int_equal(a->heads, b->heads);
  assert_int_equal(a->residual, b->residual);
  assert_int_equal(a->norm, b->norm);
  assert_int_equal(a->epochs, b->epochs);
  assert_int_equal(a->batch, b->batch);
  assert_true(a->lr == b->lr);
  assert_int_equal(a->schedule, b->schedule);
  assert_true(a->weight_decay == b->weight_decay);
  assert_int_equal(a->eval_every, b->eval_every);
  assert_int_equal(a->points, b->points);
  assert_true(a->sigma == b->sigma);
  assert_int_equal(a->exact_dim_max, b->exact_dim_max);
  assert_int_equal(a->team_p, b->team_p);
  assert_int_equal(a->team_q, b->team_q);
  assert_int_equal(a->team_block, b->team_block);
}

/* Every section absent: one cell with the docs/SPEC.md defaults, written out
 * here by hand rather than taken from config_default(). */
static void test_defaults_when_sections_absent(void **state) {
  cs_spec *s = load_ok("");
  assert_int_equal(spec_cell_count(s), 1);
  assert_int_equal(spec_axis_count(s), 0);
  cs_config c;
  assert_ok(spec_cell_config(s, 0, &c));
  cs_config want = {.arch = ARCH_GATED, .depth = 1, .task = TASK_CIRCLES, .seed = 0,
                    .input_dim = 2, .train_points = 2048, .test_points = 2048,
                    .label_noise = 0.0, .width = 16, .slots = 3, .heads = 1, .residual = 0,
                    .norm = NORM_NONE, .epochs = 100, .batch = 256, .lr = 3e-3,
                    .schedule = SCHEDULE_CONSTANT, .weight_decay = 0.0, .eval_every = 10,
                    .points = 128, .sigma = 1.0, .exact_dim_max = 8, .team_p = 1, .team_q = 1, .team_block = 64};
  assert_config_equal(&c, &want);
  const cs_sweep_settings *sw = spec_sweep(s);
  assert_string_equal(sw->name, "depth-amplification");
  assert_string_equal(sw->output, "results/demo.h5");
  assert_int_equal(sw->save_params, 0);
  assert_int_equal(sw->save_points, 0);
  assert_int_equal(sw->max_retries, 1);
  spec_free(s);

  // only [model] given: everything else stays default
  s = load_ok("[model]\nwidth = 32\nresidual = yes\nnorm = pre\n");
  assert_ok(spec_cell_config(s, 0, &c));
  want.width = 32;
  want.residual = 1;
  want.norm = NORM_PRE;
  assert_config_equal(&c, &want);
  spec_free(s);
}

/* Row-major numbering, first axis slowest: compared against nested loops. */
static void test_row_major_numbering(void **state) {
  cs_spec *s = load_ok("[grid]\n"
                       "arch  = ungated, gated\n"
                       "depth = 1..3\n"
                       "seed  = 7, 5\n");
  assert_int_equal(spec_cell_count(s), 12);
  assert_int_equal(spec_axis_count(s), 3);
  assert_string_equal(spec_axis_name(s, 0), "arch");
  assert_string_equal(spec_axis_name(s, 1), "depth");
  assert_string_equal(spec_axis_name(s, 2), "seed");
  assert_int_equal(spec_axis_length(s, 0), 2);
  assert_int_equal(spec_axis_length(s, 1), 3);
  assert_int_equal(spec_axis_length(s, 2), 2);
  const cs_arch archs[2] = {ARCH_UNGATED, ARCH_GATED};
  const int depths[3] = {1, 2, 3};
  const int64_t seeds[2] = {7, 5};  // in written order, not sorted
  int64_t id = 0;
  for (int a = 0; a < 2; a++)
    for (int d = 0; d < 3; d++)
      for (int k = 0; k < 2; k++, id++) {
        cs_config c;
        assert_ok(spec_cell_config(s, id, &c));
        assert_int_equal(c.arch, archs[a]);
        assert_int_equal(c.depth, depths[d]);
        assert_int_equal(c.seed, seeds[k]);
        assert_int_equal(c.task, TASK_CIRCLES);  // not an axis: the default
        assert_int_equal(spec_axis_value_index(s, 0, id), a);
        assert_int_equal(spec_axis_value_index(s, 1, id), d);
        assert_int_equal(spec_axis_value_index(s, 2, id), k);
      }
  // two cells worked by hand: 7 = 1*6 + 0*2 + 1 -> gated, depth 1, seed 5;
  // 4 = 0*6 + 2*2 + 0 -> ungated, depth 3, seed 7
  cs_config c;
  assert_ok(spec_cell_config(s, 7, &c));
  assert_int_equal(c.arch, ARCH_GATED);
  assert_int_equal(c.depth, 1);
  assert_int_equal(c.seed, 5);
  assert_ok(spec_cell_config(s, 4, &c));
  assert_int_equal(c.arch, ARCH_UNGATED);
  assert_int_equal(c.depth, 3);
  assert_int_equal(c.seed, 7);
  spec_free(s);

  // axis order is the written order, not a fixed one
  s = load_ok("[grid]\nseed = 0..2\narch = mlp, gated\n");
  assert_string_equal(spec_axis_name(s, 0), "seed");
  assert_string_equal(spec_axis_name(s, 1), "arch");
  assert_int_equal(spec_find_axis(s, "arch"), 1);
  assert_int_equal(spec_find_axis(s, "depth"), -1);
  assert_ok(spec_cell_config(s, 3, &c));  // seed index 1, arch index 1
  assert_int_equal(c.seed, 1);
  assert_int_equal(c.arch, ARCH_GATED);
  assert_ok(spec_cell_config(s, 4, &c));  // seed 2, arch mlp
  assert_int_equal(c.seed, 2);
  assert_int_equal(c.arch, ARCH_MLP);
  spec_free(s);
}

static void test_ranges(void **state) {
  // a..b inclusive, mixed with single values, seeds beyond 2^53 kept exactly
  cs_spec *s = load_ok("[grid]\ndepth = 2..4, 8\nseed = 9007199254740993, 0..1\n");
  assert_int_equal(spec_axis_length(s, 0), 4);
  assert_int_equal(spec_axis_length(s, 1), 3);
  assert_int_equal(spec_cell_count(s), 12);
  const int depths[4] = {2, 3, 4, 8};
  char buf[64];
  for (int d = 0; d < 4; d++) {
    cs_config c;
    assert_ok(spec_cell_config(s, 3 * d, &c));
    assert_int_equal(c.depth, depths[d]);
    assert_int_equal(c.seed, INT64_C(9007199254740993));
  }
  assert_ok(spec_axis_value_text(s, 1, 0, buf, sizeof buf));
  assert_string_equal(buf, "9007199254740993");
  assert_ok(spec_axis_value_text(s, 1, 2, buf, sizeof buf));
  assert_string_equal(buf, "1");
  spec_free(s);
  // a one-value range, and whitespace around the dots
  s = load_ok("[grid]\nwidth = 4 .. 4\n");
  assert_int_equal(spec_cell_count(s), 1);
  cs_config c;
  assert_ok(spec_cell_config(s, 0, &c));
  assert_int_equal(c.width, 4);
  spec_free(s);
}

/* A [train] key as an axis, resolved into cs_config per cell, with the fixed
 * [train] and [model] keys applied to every cell. */
static void test_train_key_as_axis(void **state) {
  cs_spec *s = load_ok("[grid]\n"
                       "lr = 1e-3, 3e-3\n"
                       "residual = no, yes\n"
                       "[train]\n"
                       "epochs = 7\n"
                       "schedule = cosine\n"
                       "[model]\n"
                       "width = 12\n"
                       "heads = 3\n"
                       "[team]\n"
                       "grid = 2x3\n"
                       "block = 7\n");
  assert_int_equal(spec_cell_count(s), 4);
  const double lrs[2] = {1e-3, 3e-3};
  for (int i = 0; i < 2; i++)
    for (int r = 0; r < 2; r++) {
      cs_config c;
      assert_ok(spec_cell_config(s, 2 * i + r, &c));
      assert_true(c.lr == lrs[i]);
      assert_int_equal(c.residual, r);
      assert_int_equal(c.epochs, 7);
      assert_int_equal(c.schedule, SCHEDULE_COSINE);
      assert_int_equal(c.width, 12);
      assert_int_equal(c.heads, 3);
      assert_int_equal(c.team_p, 2);
      assert_int_equal(c.team_q, 3);
      assert_int_equal(c.team_block, 7);
      assert_int_equal(c.batch, 256);  // untouched default
    }
  spec_free(s);
}

static void test_axis_types_and_values(void **state) {
  cs_spec *s = load_ok("[grid]\n"
                       "arch = gated-headwise, mlp\n"
                       "depth = 3\n"
                       "lr = 0.001, 3e-3\n"
                       "norm = pre\n");
  assert_int_equal(spec_axis_type(s, 0), SPEC_AXIS_STRING);
  assert_int_equal(spec_axis_type(s, 1), SPEC_AXIS_INT);
  assert_int_equal(spec_axis_type(s, 2), SPEC_AXIS_REAL);
  assert_int_equal(spec_axis_type(s, 3), SPEC_AXIS_STRING);
  char buf[64];
  // cell 3 = arch index 1 (mlp), depth 3, lr index 1 (3e-3), norm pre
  assert_ok(spec_axis_value_text(s, 0, 3, buf, sizeof buf));
  assert_string_equal(buf, "mlp");
  assert_ok(spec_axis_value_text(s, 1, 3, buf, sizeof buf));
  assert_string_equal(buf, "3");
  assert_ok(spec_axis_value_text(s, 2, 2, buf, sizeof buf));
  assert_string_equal(buf, "0.001");
  assert_ok(spec_axis_value_text(s, 2, 3, buf, sizeof buf));
  assert_string_equal(buf, "0.003");  // shortest text that reads back as the same double
  assert_true(strtod(buf, NULL) == 3e-3);
  assert_ok(spec_axis_value_text(s, 3, 0, buf, sizeof buf));
  assert_string_equal(buf, "pre");
  assert_true(spec_axis_value_number(s, 1, 3) == 3.0);
  assert_true(spec_axis_value_number(s, 2, 3) == 3e-3);
  assert_true(spec_axis_value_number(s, 2, 0) == 1e-3);
  assert_true(isnan(spec_axis_value_number(s, 0, 0)));   // names have no number
  assert_true(isnan(spec_axis_value_number(s, 1, 4)));   // cell out of range
  assert_true(isnan(spec_axis_value_number(s, 7, 0)));   // axis out of range
  assert_null(spec_axis_name(s, 4));
  assert_int_equal(spec_axis_length(s, -1), -1);
  assert_int_equal(spec_axis_value_index(s, 0, 4), -1);
  // out-of-range lookups and a buffer too small are errors, not truncation
  assert_int_equal(spec_axis_value_text(s, 0, 4, buf, sizeof buf), CS_ERR_INPUT);
  assert_string_equal(cs_error_message(),
                      "good.ini: no value for axis 0 at cell 4; allowed: axis 0..3, cell 0..3");
  assert_int_equal(spec_axis_value_text(s, 0, 0, buf, 5), CS_ERR_INTERNAL);
  spec_free(s);
}

static void test_cell_config_out_of_range(void **state) {
  cs_spec *s = load_ok("[grid]\nseed = 0..9\n");
  cs_config c;
  assert_ok(spec_cell_config(s, 9, &c));
  assert_int_equal(c.seed, 9);
  assert_int_equal(spec_cell_config(s, 10, &c), CS_ERR_INPUT);
  assert_string_equal(cs_error_message(), "good.ini: cell 10 is out of range; allowed: 0..9");
  assert_int_equal(spec_cell_config(s, -1, &c), CS_ERR_INPUT);
  assert_string_equal(cs_error_message(), "good.ini: cell -1 is out of range; allowed: 0..9");
  spec_free(s);
}

/* The example spec tests/specs/design-example.ini, verbatim: 3 archs x 4 depths x 2 tasks x 5 seeds. */
static void test_design_example(void **state) {
  char path[1024];
  fixture_source_path("tests/specs/design-example.ini", path, sizeof path);
  cs_spec *s = NULL;
  assert_ok(spec_load_file(path, &s));
  assert_int_equal(spec_cell_count(s), 120);
  assert_int_equal(spec_axis_count(s), 4);
  assert_string_equal(spec_source(s), path);
  // sha256sum tests/specs/design-example.ini
  assert_string_equal(spec_sha256(s),
                      "11eaaaf7db44e43408c883270b5cc9da567c114aabce16ff56504372344dd983");
  cs_config c;
  // last cell: gated-headwise, depth 8, circles, seed 4
  assert_ok(spec_cell_config(s, 119, &c));
  assert_int_equal(c.arch, ARCH_GATED_HEADWISE);
  assert_int_equal(c.depth, 8);
  assert_int_equal(c.task, TASK_CIRCLES);
  assert_int_equal(c.seed, 4);
  // cell 57 = 1*40 + 1*10 + 1*5 + 2: gated, depth 2, circles, seed 2
  assert_ok(spec_cell_config(s, 57, &c));
  assert_int_equal(c.arch, ARCH_GATED);
  assert_int_equal(c.depth, 2);
  assert_int_equal(c.task, TASK_CIRCLES);
  assert_int_equal(c.seed, 2);
  assert_true(c.lr == 3e-3);
  assert_int_equal(c.batch, 256);
  spec_free(s);
}

static void test_demo_small_file(void **state) {
  char path[1024];
  fixture_source_path("tests/specs/demo-small.ini", path, sizeof path);
  cs_spec *s = NULL;
  assert_ok(spec_load_file(path, &s));
  assert_int_equal(spec_cell_count(s), 8);
  // the text is kept byte for byte, and hashed as such
  size_t len;
  char *bytes = read_all(path, &len);
  assert_int_equal(strlen(spec_text(s)), len);
  assert_memory_equal(spec_text(s), bytes, len);
  char h[65];
  spec_sha256_hex(bytes, len, h);
  assert_string_equal(spec_sha256(s), h);
  free(bytes);
  const cs_sweep_settings *sw = spec_sweep(s);
  assert_string_equal(sw->name, "demo-small");
  assert_string_equal(sw->output, "results/demo-small.h5");
  cs_config c;
  assert_ok(spec_cell_config(s, 5, &c));  // 5 = 1*4 + 0*2 + 1
  assert_int_equal(c.arch, ARCH_GATED);
  assert_int_equal(c.depth, 1);
  assert_int_equal(c.task, TASK_LINEAR);
  assert_int_equal(c.seed, 1);
  assert_int_equal(c.width, 8);
  assert_int_equal(c.epochs, 5);
  assert_int_equal(c.points, 16);
  spec_free(s);
}

/* Layout the parser must accept: CRLF, a BOM, indentation, comments of both
 * kinds, "key: value", a ';' inside a value, no final newline. */
static void test_lexical_forms(void **state) {
  cs_spec *s = load_ok("\xEF\xBB\xBF[sweep]\r\n"
                       "  name = a;b   ; the ';' without a space before it is part of the name\r\n"
                       "# comment\r\n"
                       "    output: out/x.h5\r\n"
                       "[model]\n"
                       "\twidth = 24\n"
                       "  heads = 4 ; indented keys are keys, not continuations\n"
                       "[grid]\n"
                       "   arch = ungated,gated ,  mlp");
  const cs_sweep_settings *sw = spec_sweep(s);
  assert_string_equal(sw->name, "a;b");
  assert_string_equal(sw->output, "out/x.h5");
  assert_int_equal(spec_cell_count(s), 3);
  cs_config c;
  assert_ok(spec_cell_config(s, 2, &c));
  assert_int_equal(c.width, 24);
  assert_int_equal(c.heads, 4);
  assert_int_equal(c.arch, ARCH_MLP);
  spec_free(s);
}

/* ------------------------------------------------------------------------ */
/* Limits: one spec line, the cells' sizes, families and gates              */

/* output: what one spec line holds (libinih's INI_MAX_LINE of 200 bytes
 * less the newline and the NUL: 198 characters, "output=" and 191). */
static void test_output_length(void **state) {
  char text[400], path[300];
  memset(path, 'p', 191);
  path[191] = '\0';
  snprintf(text, sizeof text, "[sweep]\noutput=%s\n", path);
  cs_spec *s = load_ok(text);
  assert_string_equal(spec_sweep(s)->output, path);
  spec_free(s);
  path[189] = '\0';
  snprintf(text, sizeof text, "[sweep]\noutput = %s\n", path);
  s = load_ok(text);
  assert_string_equal(spec_sweep(s)->output, path);
  spec_free(s);
  memset(path, 'p', 192);
  path[192] = '\0';
  snprintf(text, sizeof text, "[sweep]\noutput=%s\n", path);
  spec_expect_bad(text, "bad.ini:2: line is 199 characters long (without comments); allowed: at most 198");
}

/* Loads that size every cell with the model's estimate, as `run`, `check`
 * and `train` do (spec_load_options.cell_memory; docs/SPEC.md, "Sizes"). */
static int load_sized(const char *text, const char *source, cs_spec **out) {
  spec_load_options opt = {NULL, 0, NULL, NULL, model_cell_memory};
  return spec_load_string_opts(text, source, &opt, out);
}

static cs_spec *load_ok_sized(const char *text) {
  cs_spec *s = NULL;
  assert_ok(load_sized(text, "good.ini", &s));
  assert_non_null(s);
  assert_true(spec_max_cell_bytes(s) > 0);
  return s;
}

static void expect_bad_sized(const char *text, const char *message) {
  cs_spec *s = (cs_spec *)0x1;
  cs_error_clear();
  assert_int_equal(load_sized(text, "bad.ini", &s), CS_ERR_INPUT);
  assert_null(s);
  assert_string_equal(cs_error_message(), message);
}

/* Sizes derived from a spec are computed with overflow checks and bounded
 * (docs/SPEC.md, "Sizes"): a cell whose memory estimate passes 64 GiB is
 * refused at load, naming the key, before any work. */
static void test_cell_memory(void **state) {
  // 41 bytes: n_params wrapped int64 and model_init_tensor wrote past the
  // heap (issue 28); --dry-run accepted it
  expect_bad_sized("[model]\nwidth = 2147443568\nslots = 80159\n",
             "bad.ini:2: [model] width: 2147443568 makes a cell need over 16 EiB of memory, most of "
             "it for parameters (parameters over 16 EiB, training activations 8.6e+04 GiB, "
             "curvature jets 8.6e+04 GiB, datasets 0.188 MiB, results 0.0121 MiB); allowed: at "
             "most 64 GiB per cell (docs/SPEC.md, \"Sizes\")");
  // the largest value of an axis is named, on the axis's line
  expect_bad_sized("[grid]\nwidth = 16, 50000\n",
             "bad.ini:2: [grid] width: 50000 makes a cell need 339 GiB of memory, most of it for "
             "parameters (parameters 335 GiB, training activations 2 GiB, curvature jets 2 GiB, "
             "datasets 0.188 MiB, results 0.0121 MiB); allowed: at most 64 GiB per cell "
             "(docs/SPEC.md, \"Sizes\")");
  // slots alone: the per-layer key and score blocks
  cs_error_clear();
  cs_spec *s = (cs_spec *)0x1;
  assert_int_equal(load_sized("[model]\nslots = 2147483647\n", "bad.ini", &s), CS_ERR_INPUT);
  assert_null(s);
  assert_non_null(strstr(cs_error_message(), "bad.ini:2: [model] slots: 2147483647 makes a cell need"));
  // full-batch training on a large set: the batch key is named
  assert_int_equal(load_sized("[task]\ntrain_points = 2000000000\n[train]\nbatch = 0\n",
                                    "bad.ini", &s), CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), "bad.ini:4: [train] batch: 0 makes a cell need"));
  assert_non_null(strstr(cs_error_message(), "most of it for training activations"));
  // a learning curve of 2^31 rows
  assert_int_equal(load_sized("[train]\nepochs = 2147483647\neval_every = 1\n", "bad.ini", &s),
                   CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), "bad.ini:2: [train] epochs: 2147483647 makes a cell"));
  // every task dimension of the self family: jets of 65 tokens × 2145 rows
  assert_int_equal(load_sized("[grid]\nfamily = self\ntask = linear\n[task]\ninput_dim = 64\n"
                                    "[curvature]\npoints = 256\n[model]\nwidth = 64\n", "bad.ini", &s),
                   CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), "bad.ini:7: [curvature] points: 256 makes a cell need"));
  // honest large cells stay accepted
  s = load_ok_sized("[grid]\nwidth = 16, 1024\ndepth = 1..64\narch = ungated, gated, mlp\n"
              "[model]\nslots = 64\nnorm = pre\n");
  spec_free(s);
  s = load_ok_sized("[grid]\nfamily = self\ntask = linear\n[task]\ninput_dim = 16\n");
  spec_free(s);
  // loaded without the estimate (a spec read from an archive) nothing is
  // sized; model_create refuses such a cell instead (test_model)
  s = load_ok("[model]\nwidth = 2147443568\nslots = 80159\n");
  assert_int_equal(spec_max_cell_bytes(s), 0);
  spec_free(s);
}

/* family and gate: defaults, fixed values and axes; mlp is fine in the memory family. */
static void test_family_and_gate(void **state) {
  cs_spec *s = load_ok("[sweep]\nname = x\n");
  cs_config c;
  assert_ok(spec_cell_config(s, 0, &c));
  assert_int_equal(c.family, FAMILY_MEMORY);
  assert_int_equal(c.gate, GATE_G1);
  spec_free(s);
  s = load_ok("[grid]\narch = ungated, gated\ngate = g1, g2, g3, g4, g5\n[model]\nfamily = self\n");
  assert_int_equal(spec_cell_count(s), 10);
  assert_int_equal(spec_find_axis(s, "gate"), 1);
  assert_int_equal(spec_axis_type(s, 1), SPEC_AXIS_STRING);
  assert_ok(spec_cell_config(s, 8, &c));
  assert_int_equal(c.family, FAMILY_SELF);
  assert_int_equal(c.arch, ARCH_GATED);
  assert_int_equal(c.gate, GATE_G4);
  char text[16];
  spec_axis_value_text(s, 1, 8, text, sizeof text);
  assert_string_equal(text, "g4");
  spec_free(s);
  s = load_ok("[grid]\nfamily = memory, self\ngate = g2, g5\n");
  assert_int_equal(spec_cell_count(s), 4);
  assert_ok(spec_cell_config(s, 3, &c));
  assert_int_equal(c.family, FAMILY_SELF);
  assert_int_equal(c.gate, GATE_G5);
  spec_free(s);
  s = load_ok("[grid]\narch = mlp\n[model]\nfamily = memory\n");
  spec_free(s);
  spec_expect_bad("[model]\nfamily = selff\n",
             "bad.ini:2: [model] family: unknown value 'selff'; did you mean self? allowed: memory, self, lm, mha");
  spec_expect_bad("[grid]\ngate = g1, g6\n",
             "bad.ini:2: [grid] gate: unknown value 'g6'; did you mean g1? allowed: g1, g2, g3, g4, g5");
}

/* The affine skeleton (docs/MODELS.md): the memory family at one head,
 * input_dim + 1 slots, no residual, no norm; the other families' models
 * are not affine there (LayerNorm, GELU, self-attention), whatever the keys. */
static void test_affine_skeleton(void **state) {
  (void)state;
  cs_spec *s = load_ok("[grid]\nfamily = memory, self\n[task]\ninput_dim = 2\n[model]\nheads = 1\n"
                       "slots = 3\n");
  const int expect[2] = {1, 0};
  for (int i = 0; i < 2; i++) {
    cs_config c;
    assert_ok(spec_cell_config(s, i, &c));
    assert_int_equal(config_affine_skeleton(&c), expect[i]);
  }
  spec_free(s);
  cs_config c = config_default();
  c.heads = 1, c.input_dim = 2, c.slots = 3, c.residual = 0, c.norm = NORM_NONE;
  const cs_family fam[4] = {FAMILY_MEMORY, FAMILY_SELF, FAMILY_LM, FAMILY_MHA};
  for (int i = 0; i < 4; i++) {
    c.family = fam[i];
    assert_int_equal(config_affine_skeleton(&c), i == 0);
  }
  c.family = FAMILY_MEMORY;
  assert_int_equal(config_affine_skeleton(&c), 1);
  c.slots = 4;
  assert_int_equal(config_affine_skeleton(&c), 0);
  c.slots = 3, c.residual = 1;
  assert_int_equal(config_affine_skeleton(&c), 0);
  c.residual = 0, c.norm = NORM_PRE;
  assert_int_equal(config_affine_skeleton(&c), 0);
  c.norm = NORM_NONE, c.heads = 2;
  assert_int_equal(config_affine_skeleton(&c), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sha256_vectors),
      cmocka_unit_test(test_sha256_of_spec_text),
      cmocka_unit_test(test_defaults_when_sections_absent),
      cmocka_unit_test(test_row_major_numbering),
      cmocka_unit_test(test_ranges),
      cmocka_unit_test(test_train_key_as_axis),
      cmocka_unit_test(test_axis_types_and_values),
      cmocka_unit_test(test_cell_config_out_of_range),
      cmocka_unit_test(test_design_example),
      cmocka_unit_test(test_demo_small_file),
      cmocka_unit_test(test_lexical_forms),
      cmocka_unit_test(test_output_length),
      cmocka_unit_test(test_cell_memory),
      cmocka_unit_test(test_family_and_gate),
      cmocka_unit_test(test_affine_skeleton),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* fixtures.c — helpers shared by the cmocka tests (fixtures.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/archive.h"
#include "curvsweep/error.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void fixture_check_close(double a, double b, double tol, const char *expr, const char *file,
                         int line) {
  if (fabs(a - b) <= tol) return;
  print_error("ERROR: %s: %.17g vs %.17g differ by %.3g > %.3g\n", expr, a, b, fabs(a - b), tol);
  _fail(file, line);
}

void fixture_check_ok(int rc, const char *expr, const char *file, int line) {
  if (rc == CS_OK) return;
  print_error("ERROR: %s returned %d: %s\n", expr, rc, cs_error_message());
  _fail(file, line);
}

void fixture_check_check(const analysis_check *c, analysis_decision decision, int n, double effect,
                         double p_raw, double p_adj, int family_size, const char *file, int line) {
  if (c->decision == decision && c->n == n && fabs(c->effect - effect) <= 1e-12 &&
      fabs(c->p_raw - p_raw) <= 1e-15 && fabs(c->p_adj - p_adj) <= 1e-15 && c->family_size == family_size)
    return;
  print_error("ERROR: check %s (%s): decision %d n %d effect %.17g p %.17g adjusted %.17g family %d; "
              "wanted %d, %d, %.17g, %.17g, %.17g, %d\n",
              c->claim, c->scope, (int)c->decision, c->n, c->effect, c->p_raw, c->p_adj, c->family_size,
              (int)decision, n, effect, p_raw, p_adj, family_size);
  _fail(file, line);
}

cs_cell_result make_result(int64_t id, int depth, double acc) {
  cs_cell_result r;
  memset(&r, 0, sizeof r);
  r.cell_id = id;
  r.status = CELL_DONE;
  r.train_acc = r.test_acc = acc;
  r.depth = depth;
  r.curv = depth ? calloc((size_t)depth, sizeof *r.curv) : NULL;
  return r;
}

void free_results(cs_cell_result *res, int64_t n) {
  for (int64_t i = 0; i < n; i++) result_free(&res[i]);
}

cs_cell_result *make_spec_results(const char *text, fixture_fill fill, const void *ctx, int64_t *n_out) {
  cs_spec *spec = spec_from(text);
  int64_t n = spec_cell_count(spec);
  cs_cell_result *res = calloc((size_t)n, sizeof *res);
  assert_non_null(res);
  for (int64_t id = 0; id < n; id++) {
    cs_config c;
    assert_ok(spec_cell_config(spec, id, &c));
    res[id] = make_result(id, c.depth, 0.0);
    fill(ctx, &c, &res[id]);
  }
  spec_free(spec);
  *n_out = n;
  return res;
}

void fixture_grid_open(fixture_grid *G, const char *text) {
  cs_spec *spec = spec_from(text);
  G->text = text;
  G->n = spec_cell_count(spec);
  G->res = calloc((size_t)G->n, sizeof *G->res);
  G->cfg = calloc((size_t)G->n, sizeof *G->cfg);
  assert_non_null(G->res);
  assert_non_null(G->cfg);
  for (int64_t id = 0; id < G->n; id++) {
    assert_ok(spec_cell_config(spec, id, &G->cfg[id]));
    G->res[id] = make_result(id, G->cfg[id].depth, 0.0);
  }
  spec_free(spec);
}

void fixture_grid_close(fixture_grid *G) {
  free_results(G->res, G->n);
  free(G->res), free(G->cfg);
}

void free_result_array(cs_cell_result *res, int64_t n) {
  free_results(res, n);
  free(res);
}

void make_dir(char *buf, size_t len, const char *tag) {
  snprintf(buf, len, "test_%s_XXXXXX", tag);
  assert_non_null(mkdtemp(buf));
}

void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[4096];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
      remove_tree(p);
    else
      unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

cs_spec *scratch(char *dir, char *path, const char *tag, const char *name, const char *text) {
  make_dir(dir, 64, tag);
  snprintf(path, 128, "%s/%s", dir, name);
  return text ? spec_from(text) : load_spec("tests/specs/demo-small.ini");
}

int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  assert_non_null(s);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  fclose(f);
  return s;
}

cs_spec *spec_from(const char *text) {
  cs_spec *s = NULL;
  assert_ok(spec_load_string(text, "inline.ini", &s));
  return s;
}

void spec_expect_bad(const char *text, const char *message) {
  cs_spec *s = (cs_spec *)0x1;
  cs_error_clear();
  int rc = spec_load_string(text, "bad.ini", &s);
  assert_int_equal(rc, CS_ERR_INPUT);
  assert_null(s);
  assert_string_equal(cs_error_message(), message);
}

char *fixture_source_path(const char *rel, char *buf, size_t len) {
  const char *dir = getenv("CS_SOURCE_DIR");
  assert_non_null(dir);
  snprintf(buf, len, "%s/%s", dir, rel);
  return buf;
}

cs_spec *load_spec(const char *rel) {
  char path[4096];
  fixture_source_path(rel, path, sizeof path);
  cs_spec *s = NULL;
  int rc = spec_load_file(path, &s);
  if (rc) print_error("%s:\n", path);
  assert_ok(rc);
  return s;
}

void fixture_check_has(const char *text, const char *want, const char *file, int line) {
  if (strstr(text, want)) return;
  print_error("ERROR: '%s' not found in:\n%s\n", want, text);
  _fail(file, line);
}

char *csv_field(const char *path, const char *prefix, const char *col) {
  char *text = read_text(path);
  char *save = NULL, *header = strtok_r(text, "\n", &save);
  int idx = -1, k = 0;
  for (char *p = header; p; k++) {
    char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == strlen(col) && !strncmp(p, col, len)) idx = k;
    p = c ? c + 1 : NULL;
  }
  if (idx < 0) fail_msg("%s: no column %s", path, col);
  char *out = NULL;
  int found = 0;
  for (char *line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, prefix, strlen(prefix))) continue;
    found++;
    char *p = line;
    for (int i = 0; i < idx && p; i++) p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
    assert_non_null(p);
    size_t len = strchr(p, ',') ? (size_t)(strchr(p, ',') - p) : strlen(p);
    free(out);
    out = strndup(p, len);
  }
  free(text);
  if (found != 1) fail_msg("%s: %d rows start with %s", path, found, prefix);
  return out;
}

void assert_same_tables(const char *dir, char out[2][160], const char *const *tables, int n) {
  char p0[300], p1[400];
  for (int t = 0; t < n; t++) {
    snprintf(p0, sizeof p0, "%s/report/%s", dir, tables[t]);
    char *want = read_text(p0);
    for (int k = 0; k < 2; k++) {
      snprintf(p1, sizeof p1, "%s/%s", out[k], tables[t]);
      char *got = read_text(p1);
      assert_string_equal(got, want);
      free(got);
    }
    free(want);
  }
}

const analysis_check *find_check(const analysis_checks *v, const char *claim, const char *scope,
                                 int verdict) {
  const analysis_check *out = NULL;
  int found = 0;
  for (int i = 0; i < v->n; i++)
    if (v->c[i].verdict == verdict && !strcmp(v->c[i].claim, claim) && !strcmp(v->c[i].scope, scope))
      out = &v->c[i], found++;
  if (found != 1) fail_msg("%d %s of claim %s with scope '%s'", found, verdict ? "verdicts" : "checks", claim, scope);
  return out;
}

analysis_checks verdicts_of(const char *spec, const cs_cell_result *res, int64_t n,
                            const analysis_options *opt) {
  analysis_checks v;
  assert_ok(analysis_verdicts_results(spec, res, n, opt, &v));
  return v;
}

double csv_number(const char *path, const char *prefix, const char *col) {
  char *s = csv_field(path, prefix, col);
  double v = strtod(s, NULL);
  free(s);
  return v;
}

void fixture_check_csv_text(const char *path, const char *prefix, const char *col, const char *want,
                            const char *file, int line) {
  char *v = csv_field(path, prefix, col);
  _assert_string_equal(v, want, file, line);
  free(v);
}

void write_shards_and_merge(const cs_spec *spec, const cs_cell_result *res, int64_t n,
                            const char *dir, char shard[2][128], char merged[128]) {
  unsigned char *mask = calloc((size_t)(n ? n : 1), 1);
  assert_non_null(mask);
  for (int k = 0; k < 2; k++) {
    snprintf(shard[k], 128, "%s/shard%d.h5", dir, k);
    for (int64_t i = 0; i < n; i++) mask[i] = (i % 2) == k;
    cs_archive *a = NULL;
    assert_ok(archive_open_write(shard[k], spec, ARCHIVE_CREATE, mask, &a));
    for (int64_t i = 0; i < n; i++)
      if (mask[i]) assert_ok(archive_write_result(a, &res[i]));
    assert_ok(archive_close(a));
  }
  free(mask);
  snprintf(merged, 128, "%s/merged.h5", dir);
  const char *in[2] = {shard[0], shard[1]};
  assert_ok(archive_merge(merged, in, 2, 0, 0, NULL));
}

char *analyse_results(const char *spec, const cs_cell_result *res, int64_t n,
                      const analysis_options *opt, const char *tag, char *dir, size_t len) {
  make_dir(dir, len, tag);
  analysis_options plain = analysis_options_default();
  plain.render = 0;
  char out[256], path[300];
  snprintf(out, sizeof out, "%s/report", dir);
  assert_ok(analysis_run_results(spec, res, n, "synthetic", out, opt ? opt : &plain, NULL));
  snprintf(path, sizeof path, "%s/index.md", out);
  return read_text(path);
}

void analyse_shards_and_merge(const char *spec_text, const cs_cell_result *res, int64_t n,
                              const char *dir, char out[2][160]) {
  cs_spec *spec = spec_from(spec_text);
  char sh[2][128], merged[128];
  write_shards_and_merge(spec, res, n, dir, sh, merged);
  const char *in[2] = {sh[0], sh[1]}, *one[1] = {merged};
  analysis_options opt = analysis_options_default();
  opt.render = 0;
  snprintf(out[0], 160, "%s/shards", dir);
  snprintf(out[1], 160, "%s/merged", dir);
  assert_ok(analysis_run(in, 2, out[0], &opt, NULL));
  assert_ok(analysis_run(one, 1, out[1], &opt, NULL));
  spec_free(spec);
}

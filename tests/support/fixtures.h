/* fixtures.h — what the cmocka tests share (tests/support/fixtures.c):
 * assertions cmocka 1.1.5 lacks, scratch directories, whole-file reads and
 * spec loaders. Include after <cmocka.h>. */
#ifndef CURVSWEEP_TEST_FIXTURES_H
#define CURVSWEEP_TEST_FIXTURES_H

#include "curvsweep/analysis.h"
#include "curvsweep/result.h"
#include "curvsweep/spec.h"

#include <stddef.h>
#include <stdint.h>

/* |a - b| <= tol in double precision (cmocka has only a float version). */
void fixture_check_close(double a, double b, double tol, const char *expr, const char *file,
                         int line);
#define assert_close(a, b, tol) fixture_check_close((a), (b), (tol), #a, __FILE__, __LINE__)

/* rc == CS_OK, else the error message and the call that failed. */
void fixture_check_ok(int rc, const char *expr, const char *file, int line);
#define assert_ok(call) fixture_check_ok((call), #call, __FILE__, __LINE__)

/* strstr(text, want), else the text and where. */
void fixture_check_has(const char *text, const char *want, const char *file, int line);
#define assert_has(text, want) fixture_check_has((text), (want), __FILE__, __LINE__)

/* The field of column col in the one row of the CSV at path that starts with
 * prefix (e.g. "gated,circles,4,"): as text (free() it), or as a number.
 * Fails the test when the column is missing or not exactly one row matches
 * (the report's fields hold no commas, so no quoting). */
char *csv_field(const char *path, const char *prefix, const char *col);
double csv_number(const char *path, const char *prefix, const char *col);
/* That field (csv_field) equals want. */
void fixture_check_csv_text(const char *path, const char *prefix, const char *col, const char *want,
                            const char *file, int line);
#define assert_csv_text(path, prefix, col, want) \
  fixture_check_csv_text((path), (prefix), (col), (want), __FILE__, __LINE__)

/* The one check (verdict 0) or verdict (1) of claim with this scope among
 * v (analysis_verdicts_results); fails the test unless exactly one. */
const analysis_check *find_check(const analysis_checks *v, const char *claim, const char *scope,
                                 int verdict);
/* The verdicts of the results in memory (analysis_verdicts_results, no
 * files); opt NULL: the defaults. Fails the test on error. */
analysis_checks verdicts_of(const char *spec, const cs_cell_result *res, int64_t n,
                            const analysis_options *opt);
/* Check c has this decision, n, effect (to 1e-12), raw and adjusted p (to
 * 1e-15) and family size. */
void fixture_check_check(const analysis_check *c, analysis_decision decision, int n, double effect,
                         double p_raw, double p_adj, int family_size, const char *file, int line);
#define assert_check(c, decision, n, effect, p_raw, p_adj, family_size) \
  fixture_check_check((c), (decision), (n), (effect), (p_raw), (p_adj), (family_size), __FILE__, __LINE__)

/* A done result of cell id with depth prefixes (curv: depth zeroed
 * entries, NULL at depth 0) and train and test accuracy acc, every other
 * field zero; the tests fill in what they need. free_results: result_free
 * of res[0..n) (not res itself). */
cs_cell_result make_result(int64_t id, int depth, double acc);
void free_results(cs_cell_result *res, int64_t n);
/* Every cell of the spec text, done: make_result(id, its depth, 0), then
 * fill(ctx, its settings, the result) sets what the test needs. The n
 * results into *n_out; free_result_array releases them and the array. */
typedef void (*fixture_fill)(const void *ctx, const cs_config *c, cs_cell_result *r);
cs_cell_result *make_spec_results(const char *text, fixture_fill fill, const void *ctx, int64_t *n_out);
void free_result_array(cs_cell_result *res, int64_t n);

/* The cells of a spec text kept for many simulated datasets (the
 * calibration tests): res[id] = make_result(id, its depth, 0) and cfg[id]
 * its settings, refilled by the test per dataset; text is the spec's
 * text itself (not copied). fixture_grid_close frees res and cfg. */
typedef struct {
  const char *text;
  int64_t n;
  cs_cell_result *res;
  cs_config *cfg;
} fixture_grid;
void fixture_grid_open(fixture_grid *G, const char *text);
void fixture_grid_close(fixture_grid *G);

/* A fresh directory PREFIX_TAG_XXXXXX under the working (build) directory. */
void make_dir(char *buf, size_t len, const char *tag);
void remove_tree(const char *dir); /* rm -r, no error if it is gone */
/* make_dir(tag) into dir[64] and path[128] = dir/name; returns the spec of
 * text (NULL: tests/specs/demo-small.ini). */
cs_spec *scratch(char *dir, char *path, const char *tag, const char *name, const char *text);
int file_exists(const char *path);
char *read_text(const char *path); /* whole file, NUL-terminated; free() it */

/* A spec from text (source name "inline.ini"), or from a file relative to
 * the source tree ($CS_SOURCE_DIR, set by ctest); fails the test on error. */
cs_spec *spec_from(const char *text);
/* The spec text must be refused (loaded as "bad.ini") with CS_ERR_INPUT
 * and exactly this message. */
void spec_expect_bad(const char *text, const char *message);
/* buf ← $CS_SOURCE_DIR/rel (set by ctest, tests/tests.cmake); returns buf. */
char *fixture_source_path(const char *rel, char *buf, size_t len);
cs_spec *load_spec(const char *rel);

/* The n results of spec analysed in memory into DIR/report, DIR a fresh
 * make_dir(tag) returned in dir; opt NULL: the defaults without rendering.
 * Returns index.md's text (free() it); fails the test on any error. */
char *analyse_results(const char *spec, const cs_cell_result *res, int64_t n,
                      const analysis_options *opt, const char *tag, char *dir, size_t len);

/* The results res (n, cell ids of spec) written as two shard archives
 * dir/shard0.h5 and dir/shard1.h5 (result i into shard i mod 2, as `run
 * --shard` splits), then merged into dir/merged.h5: their paths into shard
 * and merged. Fails the test on any error. */
void write_shards_and_merge(const cs_spec *spec, const cs_cell_result *res, int64_t n,
                            const char *dir, char shard[2][128], char merged[128]);

/* The results of the spec written as shards and merged (above) and
 * analysed without rendering: the two shards together into dir/shards and
 * the merge into dir/merged, the paths in out. */
void analyse_shards_and_merge(const char *spec_text, const cs_cell_result *res, int64_t n,
                              const char *dir, char out[2][160]);

/* Each of the n tables in dir/report equals the same file in both out[k]
 * (analyse_shards_and_merge), byte for byte. */
void assert_same_tables(const char *dir, char out[2][160], const char *const *tables, int n);

#endif

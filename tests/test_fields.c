/* test_fields.c — the curvature field ([curvature] field = N, docs/ARCHIVE.md
 * "/fields"): the grid is the cell centres of the task's input box, every
 * field value is the per-point curvature of the existing path
 * (cell_curvature_points) at that grid point, the derived quantities follow
 * their definitions (docs/NUMERICS.md), the predicted class is the argmax
 * of the readout computed here from h_L and the readout tensors, and the
 * field survives result_pack/unpack (malformed counts refused) and an
 * archive write and read-back (an incomplete field refused), and a
 * journal replay after the writer was killed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "curvsweep/archive.h"
#include "curvsweep/cell.h"
#include "curvsweep/error.h"
#include "curvsweep/spec.h"
#include "curvsweep/tasks.h"
#include "../src/archive/archive_test.h"
#include "fixtures.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  cs_config cfg;
  cs_dataset train, test;
  cs_model *model;
  cs_cell_result res;
} field_cell;

/* A small trained cell of task with an N × N field. */
static void field_cell_make(field_cell *fc, cs_task_kind task, int N) {
  memset(fc, 0, sizeof *fc);
  cs_config *c = &fc->cfg;
  *c = config_default();
  c->task = task, c->depth = 2, c->width = 8, c->epochs = 20, c->train_points = 256;
  c->test_points = 128, c->points = 16, c->field = N, c->batch = 64, c->lr = 1e-2;
  assert_ok(task_generate(task, 2, c->train_points, c->seed, SPLIT_TRAIN, 0.0, &fc->train));
  assert_ok(task_generate(task, 2, c->test_points, c->seed, SPLIT_TEST, 0.0, &fc->test));
  assert_ok(model_create(c, NULL, &fc->model));
  assert_ok(train_model(fc->model, c, &fc->train, &fc->test, NULL, &fc->res));
  assert_ok(cell_measure_curvature(fc->model, c, 0, &fc->res));
}

static void field_cell_free(field_cell *fc) {
  result_free(&fc->res);
  model_free(fc->model);
  task_dataset_free(&fc->train);
  task_dataset_free(&fc->test);
}

/* The grid built here from the task's box: point g = i·N + j at
 * (lo + (j + ½)h, lo + (i + ½)h). */
static double *grid_points(cs_task_kind task, int N, double *lo, double *hi) {
  task_domain(task, 2, lo, hi);
  double h = (*hi - *lo) / N, *x = calloc((size_t)2 * N * N, sizeof *x);
  assert_non_null(x);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      x[2 * (i * N + j)] = *lo + (j + 0.5) * h;
      x[2 * (i * N + j) + 1] = *lo + (i + 0.5) * h;
    }
  return x;
}

static void same_bits(double a, double b, const char *what, int64_t i) {
  if (memcmp(&a, &b, sizeof a)) fail_msg("%s at %lld: %.17g vs %.17g", what, (long long)i, a, b);
}

static void assert_same_field(const cs_cell_result *a, const cs_cell_result *b) {
  assert_int_equal(a->field_n, b->field_n);
  assert_int_equal(a->depth, b->depth);
  same_bits(a->field_lo, b->field_lo, "lo", 0);
  same_bits(a->field_hi, b->field_hi, "hi", 0);
  size_t ng = (size_t)a->field_n * a->field_n, nl = (size_t)a->depth * ng;
  double **fa[RESULT_N_FIELD_ARRAYS], **fb[RESULT_N_FIELD_ARRAYS];
  result_field_arrays((cs_cell_result *)a, fa);
  result_field_arrays((cs_cell_result *)b, fb);
  for (int k = 0; k < RESULT_N_FIELD_ARRAYS; k++) assert_memory_equal(*fa[k], *fb[k], nl * sizeof(double));
  assert_memory_equal(a->fd_class, b->fd_class, nl);
  assert_memory_equal(a->fd_pred, b->fd_pred, ng);
}

/* Every field value against the existing per-point path at the same inputs,
 * and against the definitions K = S/2, K̃ = K·tr g/2, K̂ = K·√det g,
 * aniso = log(tr g/2) − log det g/2 (m = 2). */
static void check_field_values(cs_task_kind task, int N) {
  field_cell fc;
  field_cell_make(&fc, task, N);
  const cs_cell_result *r = &fc.res;
  int L = r->depth;
  int64_t ng = (int64_t)N * N;
  double lo, hi, *x = grid_points(task, N, &lo, &hi);
  assert_int_equal(r->field_n, N);
  same_bits(r->field_lo, lo, "box lo", 0);
  same_bits(r->field_hi, hi, "box hi", 0);
  for (int k = 0; k < N; k++) same_bits(result_field_coord(r, k), x[2 * k], "coordinate", k);
  geom_point *pts = calloc((size_t)(L * ng), sizeof *pts);
  assert_non_null(pts);
  assert_ok(cell_curvature_points(fc.model, NULL, &fc.cfg, (int)ng, x, "curv-field", pts));
  int curved = 0;
  for (int64_t i = 0; i < L * ng; i++) {
    const geom_point *p = &pts[i];
    assert_int_equal(r->fd_class[i], (int8_t)p->cls);
    if (p->degenerate) {
      assert_true(isnan(r->fd_K[i]) && isnan(r->fd_K_hat[i]) && isnan(r->fd_S_err[i]));
      continue;
    }
    curved += p->cls == GEOM_CURVED;
    same_bits(r->fd_K[i], p->K, "K", i);
    same_bits(r->fd_K_tilde[i], p->K_tilde, "K_tilde", i);
    same_bits(r->fd_K_hat[i], p->K_hat, "K_hat", i);
    same_bits(r->fd_logdet_g[i], p->logdet_g, "logdet_g", i);
    same_bits(r->fd_S_err[i], p->S_err, "S_err", i);
    /* the definitions, independently (relative 1e-12: one or two roundings) */
    double K = p->S / 2.0, tol = 1e-12 * fabs(K) + 1e-300;
    assert_true(fabs(r->fd_K[i] - K) <= tol);
    assert_true(fabs(r->fd_K_tilde[i] - K * p->tr_g / 2.0) <= 1e-12 * fabs(K * p->tr_g));
    assert_true(fabs(r->fd_K_hat[i] - K * exp(p->logdet_g / 2.0)) <=
                1e-12 * fabs(K) * exp(p->logdet_g / 2.0));
    double aniso = log(p->tr_g / 2.0) - p->logdet_g / 2.0;
    assert_true(fabs(r->fd_aniso[i] - aniso) <= 1e-12 * (1.0 + fabs(aniso)));
    assert_true(r->fd_aniso[i] >= -1e-12); /* AM ≥ GM */
  }
  assert_true(curved > 0);
  /* predicted class: argmax of W_r h_L + b_r, from a value forward's h_L */
  cs_tensor W, b;
  assert_ok(model_find_tensor(fc.model, "readout/W", &W));
  assert_ok(model_find_tensor(fc.model, "readout/b", &b));
  cs_acts *A;
  assert_ok(model_acts_create(fc.model, (int)ng, 0, &A));
  assert_ok(model_forward(fc.model, A, (int)ng, x));
  const double *h = model_layer_output(A, L);
  int d = model_width(fc.model), seen[2] = {0, 0};
  for (int64_t g = 0; g < ng; g++) {
    double z[2];
    for (int c = 0; c < 2; c++) {
      z[c] = b.v[c];
      for (int k = 0; k < d; k++) z[c] += W.v[c * d + k] * h[g * d + k];
    }
    if (fabs(z[1] - z[0]) < 1e-9) continue; /* a tie within rounding: either */
    int want = z[1] > z[0];
    if (r->fd_pred[g] != want) fail_msg("pred at %lld: %d, readout says %d", (long long)g, r->fd_pred[g], want);
    seen[want]++;
  }
  assert_true(seen[0] > 0 && seen[1] > 0); /* the boundary crosses the box */
  model_acts_free(A);
  free(pts), free(x);
  field_cell_free(&fc);
}

static void test_field_circles(void **state) {
  (void)state;
  check_field_values(TASK_CIRCLES, 9);
}

/* blobs: the box is [-3, 3]², not [-1, 1]² */
static void test_field_blobs_box(void **state) {
  (void)state;
  check_field_values(TASK_BLOBS, 6);
}

/* No field by default; a field survives pack/unpack bitwise; a damaged
 * count is refused. */
static void test_field_pack(void **state) {
  (void)state;
  field_cell fc;
  field_cell_make(&fc, TASK_XOR, 5);
  cs_cell_result *r = &fc.res;
  unsigned char *buf;
  size_t len;
  assert_ok(result_pack(r, &buf, &len));
  cs_cell_result back;
  assert_ok(result_unpack(buf, len, &back));
  assert_int_equal(back.field_n, 5);
  assert_same_field(r, &back);
  result_free(&back);
  /* the header's N out of range, or a field announced without its count */
  int bad_n[2] = {RESULT_FIELD_MAX + 1, 0};
  for (int t = 0; t < 2; t++) {
    unsigned char *copy = malloc(len);
    assert_non_null(copy);
    memcpy(copy, buf, len);
    memcpy(copy + offsetof(cs_cell_result, field_n), &bad_n[t], sizeof(int));
    assert_int_not_equal(result_unpack(copy, len, &back), CS_OK);
    assert_non_null(strstr(cs_error_message(), "field"));
    cs_error_clear();
    free(copy);
  }
  /* truncated inside the field arrays */
  assert_int_not_equal(result_unpack(buf, len - 10, &back), CS_OK);
  cs_error_clear();
  free(buf);
  field_cell_free(&fc);
  /* field = 0: nothing */
  cs_config c = config_default();
  c.epochs = 1, c.train_points = 32, c.test_points = 32, c.points = 8, c.width = 4;
  cell_options opt = {0, 0};
  assert_ok(cell_run(&c, 0, &opt, NULL, NULL, &back));
  assert_int_equal(back.field_n, 0);
  assert_null(back.fd_pred);
  assert_null(back.fd_K);
  result_free(&back);
}

/* An archive case: a field cell (cell 0, done) and a spec in a fresh
 * temporary directory. */
typedef struct {
  field_cell fc;
  char dir[32], path[64];
  cs_spec *spec;
} field_archive_case;

static cs_cell_result *case_open(field_archive_case *k, cs_task_kind task, int n,
                                 const char *spec_text) {
  field_cell_make(&k->fc, task, n);
  k->fc.res.cell_id = 0, k->fc.res.status = CELL_DONE;
  snprintf(k->dir, sizeof k->dir, "/tmp/test_fields.XXXXXX");
  assert_non_null(mkdtemp(k->dir));
  snprintf(k->path, sizeof k->path, "%s/f.h5", k->dir);
  assert_ok(spec_load_string(spec_text, "f.ini", &k->spec));
  return &k->fc.res;
}

static void case_close(field_archive_case *k) {
  spec_free(k->spec);
  remove_tree(k->dir); /* the archive, and any damaged copy a rebuild set aside */
  field_cell_free(&k->fc);
}

/* The archive at path holds one done result whose field is r's, bitwise. */
static void assert_archive_field(const char *path, const cs_cell_result *r) {
  cs_cell_result *back = NULL;
  int64_t n = 0;
  assert_ok(archive_read_results(path, &back, &n));
  assert_int_equal(n, 1);
  assert_int_equal(back[0].status, CELL_DONE);
  assert_non_null(back[0].fd_pred);
  assert_same_field(r, &back[0]);
  result_free(&back[0]);
  free(back);
}

/* Written to an archive and read back bitwise; a result whose field lacks
 * an array is refused before anything is written. */
static void test_field_archive_round_trip(void **state) {
  (void)state;
  field_archive_case k;
  cs_cell_result *r = case_open(&k, TASK_CIRCLES, 6, "[grid]\ndepth = 2\n[curvature]\nfield = 6\n");
  cs_archive *a;
  assert_ok(archive_open_write(k.path, k.spec, ARCHIVE_CREATE, NULL, &a));
  double *kh = r->fd_K_hat;
  r->fd_K_hat = NULL;
  assert_int_equal(archive_write_result(a, r), CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), "curvature field"));
  cs_error_clear();
  r->fd_K_hat = kh;
  assert_ok(archive_write_result(a, r));
  assert_ok(archive_close(a));
  assert_archive_field(k.path, r);
  case_close(&k);
}

/* Journaled but not in the HDF5 file when the writer is killed: the resume
 * replays the record, field included, bitwise. */
static void test_field_journal_replay(void **state) {
  (void)state;
  field_archive_case k;
  cs_cell_result *r =
      case_open(&k, TASK_XOR, 4, "[grid]\ndepth = 2\ntask = xor\n[curvature]\nfield = 4\n");
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    cs_archive *a = NULL;
    if (archive_open_write(k.path, k.spec, ARCHIVE_RESUME, NULL, &a)) _exit(3);
    if (archive_test_journal_only(a, r)) _exit(4);
    raise(SIGKILL);
    _exit(5);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  cs_archive *a;
  assert_ok(archive_open_write(k.path, k.spec, ARCHIVE_RESUME, NULL, &a));
  assert_int_equal(archive_cell_status(a, 0), CELL_DONE);
  assert_ok(archive_close(a));
  assert_archive_field(k.path, r);
  case_close(&k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_field_circles),
      cmocka_unit_test(test_field_blobs_box),
      cmocka_unit_test(test_field_pack),
      cmocka_unit_test(test_field_archive_round_trip),
      cmocka_unit_test(test_field_journal_replay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

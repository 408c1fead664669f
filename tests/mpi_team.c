/* mpi_team.c — teams of P × Q ranks (PBLAS products) against the 1×1 path,
 * both families (the self family's sink statistic too):
 * loss of 10 optimisation steps to 1e-9, final test accuracy equal and
 * curvature statistics to 1e-7, with block sizes that do not divide the
 * matrices, a width smaller than the grid, a batch divisible by nothing.
 * Runs at any world size: every team shape that fits is tested. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/model.h"
#include "curvsweep/rng.h"
#include "curvsweep/tasks.h"
#include "curvsweep/cell.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int SHAPES[][2] = {{1, 2}, {2, 1}, {2, 2}, {1, 3}};

/* Losses of 10 plain gradient steps on batches of 37 points. */
static void ten_steps(const cs_config *cfg, const la_team *team, double losses[10]) {
  cs_dataset d;
  assert_ok(task_generate(cfg->task, cfg->input_dim, 370, cfg->seed, SPLIT_TRAIN, 0, &d));
  cs_model *M;
  cs_acts *A;
  assert_ok(model_create(cfg, team, &M));
  assert_ok(model_acts_create(M, 37, 0, &A));
  int64_t np = model_param_count(M);
  double *p = model_params(M), *g = model_grads(M);
  for (int s = 0; s < 10; s++) {
    const double *x = d.x + (int64_t)s * 37 * d.m;
    assert_ok(model_forward(M, A, 37, x));
    losses[s] = model_loss(A, 37, d.y + s * 37, NULL);
    memset(g, 0, sizeof(double) * np);
    assert_ok(model_backward(M, A, 37, x));
    for (int64_t i = 0; i < np; i++) p[i] -= 0.05 * g[i];
  }
  model_acts_free(A);
  model_free(M);
  task_dataset_free(&d);
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-300); }

static void check_shape_path(int p, int q, int nb, cs_config cfg, int use_pblas);

/* Both product paths: local blocks (default) and pdgemm. */
static void check_shape(int p, int q, int nb, cs_config cfg) {
  check_shape_path(p, q, nb, cfg, 0);
  check_shape_path(p, q, nb, cfg, 1);
}

static void check_shape_path(int p, int q, int nb, cs_config cfg, int use_pblas) {
  int wr, ws;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  int T = p * q;
  if (T > ws) return;
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, wr < T ? 0 : MPI_UNDEFINED, wr, &comm);
  if (comm == MPI_COMM_NULL) return;
  la_team *team;
  assert_ok(la_team_create(comm, p, q, nb, &team));
  /* every product split over the team */
  la_team_set_policy(team, (la_team_policy){.flop_threshold = 0, .use_pblas = use_pblas});
  double ref[10], got[10];
  ten_steps(&cfg, NULL, ref);
  ten_steps(&cfg, team, got);
  for (int s = 0; s < 10; s++)
    if (!(rel(got[s], ref[s]) <= 1e-9))
      fail_msg("team %dx%d nb %d %s width %d: step %d loss %.17g vs 1x1 %.17g", p, q, nb,
               config_arch_name(cfg.arch), cfg.width, s, got[s], ref[s]);
  /* a whole cell: accuracy equal, curvature statistics to 1e-7 */
  cs_config c = cfg;
  c.epochs = 3, c.train_points = 200, c.test_points = 200, c.batch = 37, c.points = 16;
  cs_cell_result r1, rt;
  assert_ok(cell_run(&c, 0, NULL, NULL, NULL, &r1));
  assert_ok(cell_run(&c, 0, NULL, team, NULL, &rt));
  assert_true(r1.test_acc == rt.test_acc);
  for (int l = 0; l < c.depth; l++) {
    assert_true(rel(rt.curv[l].Kt_absmean, r1.curv[l].Kt_absmean) <= 1e-7);
    assert_true(rel(rt.curv[l].K_absmean, r1.curv[l].K_absmean) <= 1e-7);
    assert_true(rel(rt.curv[l].logdet_mean, r1.curv[l].logdet_mean) <= 1e-7);
    if (c.family == FAMILY_SELF) {
      assert_true(rel(rt.curv[l].sink_mass, r1.curv[l].sink_mass) <= 1e-7);
      assert_true(rel(rt.curv[l].max_attn, r1.curv[l].max_attn) <= 1e-7);
    }
  }
  result_free(&r1), result_free(&rt);
  la_team_free(team);
  MPI_Comm_free(&comm);
}

static void test_teams_agree_with_one_rank(void **state) {
  (void)state;
  cs_config c = config_default();
  c.task = TASK_CIRCLES, c.depth = 2, c.width = 12, c.heads = 2, c.slots = 5, c.seed = 3;
  for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
    for (int arch = 0; arch < ARCH_COUNT; arch++) {
      c.arch = (cs_arch)arch;
      c.norm = arch % 2 ? NORM_PRE : NORM_NONE;
      c.residual = arch >= 2;
      check_shape(SHAPES[s][0], SHAPES[s][1], 5, c); /* 5 divides nothing here */
    }
    cs_config tiny = c; /* width 3 < a 2×2 grid of 2-blocks */
    tiny.arch = ARCH_GATED, tiny.width = 3, tiny.heads = 1;
    check_shape(SHAPES[s][0], SHAPES[s][1], 2, tiny);
    /* the self family: token products through the team, gates at g1, g3, g5 */
    for (int arch = 0; arch < ARCH_MLP; arch++) {
      cs_config sc = c;
      sc.family = FAMILY_SELF, sc.arch = (cs_arch)arch, sc.gate = (cs_gate_pos)(2 * arch);
      sc.norm = arch % 2 ? NORM_PRE : NORM_NONE;
      sc.residual = arch >= 1;
      check_shape(SHAPES[s][0], SHAPES[s][1], 5, sc);
    }
  }
}

static void test_team_shape_errors(void **state) {
  (void)state;
  la_team *t;
  int ws;
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  assert_int_equal(la_team_create(MPI_COMM_WORLD, ws + 1, 1, 4, &t), CS_ERR_INPUT);
  assert_int_equal(la_team_create(MPI_COMM_WORLD, ws, 1, 0, &t), CS_ERR_INPUT);
  assert_ok(la_team_create(MPI_COMM_WORLD, ws, 1, 8, &t));
  int p, q, nb;
  la_team_shape(t, &p, &q, &nb);
  assert_int_equal(p * q, ws);
  assert_int_equal(nb, 8);
  la_team_free(t);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_teams_agree_with_one_rank),
      cmocka_unit_test(test_team_shape_errors),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  int any;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}

/* test_sweep_eta.c — the run's ETA and run --dry-run's wall time are one
 * model (src/sweep/sweep_plan.c; docs/SWEEP.md, "Progress"): the
 * longest-first list schedule of the cells left, checked against schedules
 * worked by hand, against sweep_plan's makespan of a spec's grid, and
 * against the naive extrapolation it replaces (which, after the longest
 * cell, overestimates by the ratio of the longest cell to the others). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "curvsweep/error.h"
#include "curvsweep/spec.h"
#include "curvsweep/sweep.h"
#include "fixtures.h"

#include <math.h>
#include <stdlib.h>

/* 5, 4, 3, 3, 3 on two teams, longest first to the team that frees up
 * first: A 5, B 4, B 7, A 8, B 10: the makespan is 10 (not the mean 9). */
static void test_schedule_by_hand(void **state) {
  (void)state;
  const double cost[5] = {3, 5, 3, 4, 3};
  const int64_t queue[5] = {1, 3, 0, 2, 4};
  assert_true(sweep_eta_flops(cost, NULL, 0, queue, 5, 2) == 10.0);
  assert_true(sweep_eta_flops(cost, NULL, 0, queue, 5, 1) == 18.0);
  assert_true(sweep_eta_flops(cost, NULL, 0, queue, 5, 8) == 5.0);
  // a cell in flight holds its team at half its cost: A 2 (cell of 4),
  // B 0; then 2 to B, 2 to A or B: 4
  const double c2[3] = {4, 2, 2};
  const int64_t fly[1] = {0}, q2[2] = {1, 2};
  assert_true(sweep_eta_flops(c2, fly, 1, q2, 2, 2) == 4.0);
  // nothing left: 0
  assert_true(sweep_eta_flops(c2, NULL, 0, NULL, 0, 3) == 0.0);
}

/* Seconds at the rate measured so far; after the longest cell the naive
 * extrapolation (elapsed / cells done × cells left) is 10 times too long. */
static void test_seconds_and_naive(void **state) {
  (void)state;
  const double cost[4] = {10, 1, 1, 1};
  const int64_t left[3] = {1, 2, 3};
  // cell 0 took 20 s for 10 FLOPs: 2 s per FLOP, 3 FLOPs left on one team
  double eta = sweep_eta_seconds(cost, NULL, 0, left, 3, 1, 10.0, 20.0);
  assert_true(fabs(eta - 6.0) < 1e-12);
  double naive = 20.0 / 1 * 3;
  assert_true(naive / eta > 9.99);
  assert_true(isnan(sweep_eta_seconds(cost, NULL, 0, left, 3, 1, 0.0, 0.0)));
}

/* The ETA of a fresh run of a spec equals the dry run's wall time: the
 * makespan of sweep_plan over the same cells and teams. */
static void test_same_model_as_dry_run(void **state) {
  (void)state;
  cs_spec *spec;
  assert_ok(spec_load_string("[grid]\narch = gated, ungated\ndepth = 1..4\nseed = 0..2\n"
                             "[model]\nwidth = 8\n[train]\nepochs = 5\n",
                             "eta.ini", &spec));
  int64_t n = spec_cell_count(spec);
  double *cost = calloc((size_t)n, sizeof *cost);
  int64_t *queue = calloc((size_t)n, sizeof *queue);
  assert_non_null(cost);
  assert_non_null(queue);
  for (int64_t i = 0; i < n; i++) {
    cs_config c;
    assert_ok(spec_cell_config(spec, i, &c));
    cost[i] = sweep_cell_cost(&c);
    queue[i] = i;
  }
  // longest first, ties by id (the scheduler's order)
  for (int64_t i = 1; i < n; i++)
    for (int64_t j = i; j > 0 && (cost[queue[j]] > cost[queue[j - 1]] ||
                                  (cost[queue[j]] == cost[queue[j - 1]] && queue[j] < queue[j - 1]));
         j--) {
      int64_t t = queue[j];
      queue[j] = queue[j - 1], queue[j - 1] = t;
    }
  for (int teams = 1; teams <= 5; teams++) {
    sweep_plan_summary p;
    assert_ok(sweep_plan(spec, NULL, NULL, teams, &p));
    double eta = sweep_eta_flops(cost, NULL, 0, queue, n, teams);
    assert_true(fabs(eta - p.makespan) <= 1e-12 * p.makespan);
  }
  free(cost), free(queue);
  spec_free(spec);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schedule_by_hand),
      cmocka_unit_test(test_seconds_and_naive),
      cmocka_unit_test(test_same_model_as_dry_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

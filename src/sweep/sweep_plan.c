/* sweep_plan.c — what a sweep will cost before it runs (docs/SWEEP.md,
 * "Scheduling"): the cost model of a cell, the longest-first order the
 * scheduler hands cells out in, the deterministic shards, and the plan that
 * `run --dry-run` prints (remaining cells of an archive and the wall time
 * of longest-first list scheduling on a number of teams); the run's ETA is
 * the same schedule of the cells it has left (docs/SWEEP.md, "Progress"). */
#include "sweep_internal.h"

#include "curvsweep/error.h"
#include "curvsweep/model.h"

#include <math.h>
#include <stdlib.h>

double sweep_cell_cost(const cs_config *c) {
  double F = model_forward_flops_per_point(c);
  if (c->task == TASK_TEACHER) /* the estimator: every restart to the step cap, full batch, at
                                  most (docs/MODELS.md, "Estimation"); no curvature */
    return 3.0 * c->restarts * (c->epochs + 1.0) * c->train_points * F +
           2.0 * (c->train_points + c->test_points) * F;
  double train = 3.0 * c->epochs * (double)c->train_points * F;
  double evals = (double)(c->epochs / (c->eval_every > 0 ? c->eval_every : 1) + 1) *
                 (c->train_points + c->test_points) * F;
  int m = c->input_dim, C = 1 + m + m * (m + 1) / 2;
  double curv = (m == 2 ? 2.0 : 1.0) * c->points * C * F * 3.0;
  return train + evals + curv + sweep_cell_field_cost(c);
}

double sweep_cell_field_cost(const cs_config *c) {
  if (c->field <= 0 || c->input_dim != 2) return 0.0;
  /* N² grid points: second-order jets (C = 6 rows) with the same factor 3
   * for geom and the directed-rounding checks as the evaluation points,
   * plus one value forward for the predicted class */
  double F = model_forward_flops_per_point(c), n = (double)c->field * c->field;
  return n * 6 * F * 3.0 + n * F;
}

static int cmp_cost_desc(const void *a, const void *b) {
  const cell_cost *x = a, *y = b;
  if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

int sweep_sorted_cells(const cs_spec *spec, cell_cost **out) {
  int64_t n = spec_cell_count(spec);
  cell_cost *cc;
  CS_CHECK(CS_CALLOC(cc, n));
  int rc = CS_OK;
  for (int64_t i = 0; i < n && !rc; i++) {
    cs_config cfg;
    rc = spec_cell_config(spec, i, &cfg);
    if (!rc) cc[i] = (cell_cost){i, sweep_cell_cost(&cfg)};
  }
  if (!rc) qsort(cc, (size_t)n, sizeof *cc, cmp_cost_desc);
  if (rc) free(cc), cc = NULL;
  *out = cc;
  return rc;
}

int sweep_shard_mask(const cs_spec *spec, int index, int count, unsigned char *mask) {
  if (count < 1 || index < 0 || index >= count)
    return cs_error(CS_ERR_INPUT, "shard %d/%d: need 0 <= I < N", index, count);
  cell_cost *cc;
  CS_CHECK(sweep_sorted_cells(spec, &cc));
  int64_t n = spec_cell_count(spec);
  for (int64_t k = 0; k < n; k++) mask[cc[k].id] = (k % count) == index;
  free(cc);
  return CS_OK;
}

/* Sift the heap of team loads (a min-heap of n doubles) down from i. */
static void heap_down(double *h, int n, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && h[l] < h[m]) m = l;
    if (r < n && h[r] < h[m]) m = r;
    if (m == i) return;
    double t = h[i];
    h[i] = h[m], h[m] = t;
    i = m;
  }
}

/* The longest-first list schedule (sweep_plan and the run's ETA): a cell
 * to the least loaded of the teams (the root of the min-heap of loads). */
static void plan_assign(double *load, int teams, double cost) {
  load[0] += cost;
  heap_down(load, teams, 0);
}

static double plan_makespan(const double *load, int teams) {
  double m = 0;
  for (int t = 0; t < teams; t++)
    if (load[t] > m) m = load[t];
  return m;
}

int sweep_plan(const cs_spec *spec, const unsigned char *mask, const unsigned char *finished,
               int teams, sweep_plan_summary *out) {
  if (teams < 1) return cs_error(CS_ERR_INPUT, "a sweep plan needs at least one team, got %d", teams);
  *out = (sweep_plan_summary){0};
  cell_cost *cc;
  CS_CHECK(sweep_sorted_cells(spec, &cc));
  double *load = NULL;
  int rc = CS_CALLOC(load, teams);
  // the cells to run; those that copy a gate-independent twin's result
  // cost nothing (sweep_reuse.c)
  int64_t n = spec_cell_count(spec);
  unsigned char *todo = NULL;
  sweep_reuse *R = NULL;
  if (!rc) rc = CS_CALLOC(todo, n);
  for (int64_t id = 0; !rc && id < n; id++)
    todo[id] = (!mask || mask[id]) && !(finished && finished[id]);
  if (!rc) rc = sweep_reuse_create(spec, todo, &R);
  free(todo);
  // longest first, each cell to the team that frees up first: the team
  // loads are a min-heap, its root the next free team
  for (int64_t k = 0; !rc && k < n; k++) {
    int64_t id = cc[k].id;
    if (mask && !mask[id]) continue;
    out->cells++;
    out->cost += cc[k].cost;
    if (finished && finished[id]) continue;
    out->remaining++;
    if (sweep_reuse_rep(R, id) >= 0) {
      out->reused++;
      continue;
    }
    out->remaining_cost += cc[k].cost;
    if (cc[k].cost > out->longest) out->longest = cc[k].cost;
    plan_assign(load, teams, cc[k].cost);
  }
  if (!rc) out->makespan = plan_makespan(load, teams);
  sweep_reuse_free(R);
  free(load);
  free(cc);
  return rc;
}

double sweep_eta_flops(const double *cost, const int64_t *inflight, int n_inflight,
                       const int64_t *queued, int64_t n_queued, int teams) {
  if (teams < 1) teams = 1;
  double *load = calloc((size_t)teams, sizeof *load);
  if (!load) return NAN;
  // the cells in flight hold their teams, each half done on average (its
  // start is not recorded); then the queue, longest first, each cell to the
  // team that frees up first
  for (int i = 0; i < n_inflight; i++) plan_assign(load, teams, 0.5 * cost[inflight[i]]);
  for (int64_t k = 0; k < n_queued; k++) plan_assign(load, teams, cost[queued[k]]);
  double makespan = plan_makespan(load, teams);
  free(load);
  return makespan;
}

double sweep_eta_seconds(const double *cost, const int64_t *inflight, int n_inflight,
                         const int64_t *queued, int64_t n_queued, int teams, double done_cost,
                         double done_s) {
  // seconds per FLOP of one team, measured on the cells finished so far
  if (!(done_cost > 0) || !(done_s >= 0)) return NAN;
  return sweep_eta_flops(cost, inflight, n_inflight, queued, n_queued, teams) * (done_s / done_cost);
}

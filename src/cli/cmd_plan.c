/* cmd_plan.c — `curvsweep run SPEC --dry-run`: what a run would do and cost
 * (docs/SPEC.md, "run --dry-run"). With an existing archive of the same
 * spec it counts only the cells still to run; the wall time is the
 * longest-first schedule of those cells on the given number of ranks
 * (sweep_plan), at a nominal rate. */
#include "cli.h"

#include "curvsweep/archive.h"
#include "curvsweep/error.h"
#include "curvsweep/sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* a nominal 10 GFLOP/s per core for small models (bench/train_cell measures it) */
#define PLAN_FLOPS_PER_S 1e10

/* The keys a spec changes, for the plan: "[model] width: 16 → 32". */
typedef struct {
  char text[400];
  size_t used;
  int want_grows;
} plan_diff;

static void plan_diff_add(const char *key, const char *os, const char *ov, const char *ns,
                          const char *nv, int grows, void *ctx) {
  plan_diff *d = ctx;
  if (grows != d->want_grows || d->used >= sizeof d->text) return;
  int n = strcmp(os, ns) ? snprintf(d->text + d->used, sizeof d->text - d->used,
                                    "%s%s: [%s] %.60s → [%s] %.60s", d->used ? "; " : "", key, os,
                                    ov, ns, nv)
                         : snprintf(d->text + d->used, sizeof d->text - d->used,
                                    "%s[%s] %s: %.60s → %.60s", d->used ? "; " : "", os, key, ov,
                                    nv);
  if (n > 0) d->used += (size_t)n < sizeof d->text - d->used ? (size_t)n : sizeof d->text - d->used;
}

/* finished[c] = 1 for the cells archive holds as done or diverged (the
 * cells of an archive this spec grows mapped to this spec's ids by config,
 * docs/ARCHIVE.md "Growing a sweep"); finished stays all zero when there
 * is no archive at the path, and *other = 1 when it holds a spec run
 * refuses. *why says which. An archive that cannot be read is an error
 * (run would refuse it too). */
static int plan_finished(const cs_spec *spec, const char *archive, unsigned char *finished,
                         int *other, char *why, size_t why_len) {
  *other = 0;
  struct stat st;
  if (stat(archive, &st) != 0) {
    snprintf(why, why_len, "does not exist yet: every cell runs");
    return CS_OK;
  }
  cs_archive_summary s;
  CS_CHECK(archive_summary(archive, &s));
  char *text = NULL;
  cs_spec *old = NULL;
  cs_spec_relation rel = SPEC_SAME;
  plan_diff d = {.used = 0, .want_grows = 0};
  d.text[0] = '\0';
  int rc = archive_read_spec(archive, &text);
  if (!rc) rc = spec_load_string(text, archive, &old);
  free(text);
  if (!rc) rc = spec_compare(old, spec, plan_diff_add, &d, &rel);
  if (!rc && rel == SPEC_DIFFERS) {
    snprintf(why, why_len, "holds another spec (%.60s; %.300s): run refuses it; use another -o, or "
             "--overwrite to discard its results", s.name, d.text);
    *other = 1;
  }
  spec_cell_map *map = NULL;
  if (!rc && rel == SPEC_GROWS) {
    d.want_grows = 1;
    rc = spec_compare(old, spec, plan_diff_add, &d, &rel);
    if (!rc) rc = spec_map_begin(old, spec, &map);
  }
  cs_cell_result *r = NULL;
  int64_t n = 0;
  if (!rc && rel != SPEC_DIFFERS) rc = archive_read_results_tables(archive, &r, &n);
  int64_t cells = spec_cell_count(spec);
  for (int64_t i = 0; i < n; i++) {
    int64_t c = map ? spec_map_cell(map, r[i].cell_id) : r[i].cell_id;
    if (c >= 0 && c < cells && (r[i].status == CELL_DONE || r[i].status == CELL_DIVERGED))
      finished[c] = 1;
    result_free(&r[i]);
  }
  free(r);
  spec_map_free(map);
  spec_free(old);
  CS_CHECK(rc);
  if (rel == SPEC_DIFFERS) return CS_OK;  // why says so
  if (rel == SPEC_GROWS)
    snprintf(why, why_len, "exists, of a spec this one grows (%.200s): run keeps its %lld cells done "
             "or diverged (the old file kept as ARCHIVE.before-grow-<time>) and runs the rest",
             d.text, (long long)s.done + s.diverged);
  else
    snprintf(why, why_len, "exists: %lld cells done or diverged are skipped",
             (long long)s.done + s.diverged);
  return CS_OK;
}

static void plan_print_cost(long long ranks, const sweep_plan_summary *p, int teams, int T) {
  printf("cost     %.3g GFLOP in all, longest cell %.3g GFLOP; about %.3g core-seconds at 10 GFLOP/s\n",
         p->cost / 1e9, p->longest / 1e9, p->cost / PLAN_FLOPS_PER_S);
  printf("to run   %lld of %lld cells, %.3g GFLOP (%.3g core-seconds)\n", (long long)p->remaining,
         (long long)p->cells, p->remaining_cost / 1e9, p->remaining_cost / PLAN_FLOPS_PER_S);
  if (p->reused > 0)
    printf("reused   %lld of them copy the result of the same cell at another gate value "
           "(arch without a gate): trained once, free here\n", (long long)p->reused);
  printf("wall     about %.3g s on %lld rank%s (%d team%s of %d), cells handed out longest first; "
         "at 10 GFLOP/s per team (bench/train_cell measures the real rate)\n",
         p->makespan / PLAN_FLOPS_PER_S, ranks, ranks > 1 ? "s" : "", teams, teams > 1 ? "s" : "", T);
}

/* The plan of cli_dry_run, its shard mask and finished cells in the caller's
 * mask and finished (n cells each). */
static int plan_dry_run(const cs_spec *spec, const char *archive, int si, int sn, long long ranks,
                        unsigned char *mask, unsigned char *finished) {
  int64_t n = spec_cell_count(spec);
  char why[512] = "";
  int other = 0;
  CS_CHECK(sweep_shard_mask(spec, si, sn, mask));
  CS_CHECK(plan_finished(spec, archive, finished, &other, why, sizeof why));
  cs_config c0;
  CS_CHECK(spec_cell_config(spec, 0, &c0));
  int T = c0.team_p * c0.team_q;
  int teams = (int)(ranks / T > 0 ? ranks / T : 1);
  sweep_plan_summary p;
  CS_CHECK(sweep_plan(spec, mask, other ? NULL : finished, teams, &p));
  int max_width = 0, max_field = 0;
  double field_cost = 0;
  for (int64_t c = 0; c < n; c++) {
    cs_config cfg;
    if (!mask[c] || spec_cell_config(spec, c, &cfg)) continue;
    if (cfg.width > max_width) max_width = cfg.width;
    field_cost += sweep_cell_field_cost(&cfg);
    if (cfg.field > max_field) max_field = cfg.field;
  }
  cli_print(stdout, "spec     %s (%s)\n", spec_sweep(spec)->name, spec_source(spec));
  cli_print(stdout, "archive  %s %s\n", archive, why);
  printf("grid     %lld cells", (long long)n);
  for (int a = 0; a < spec_axis_count(spec); a++)
    printf("%s %s[%d]", a ? " x" : " =", spec_axis_name(spec, a), spec_axis_length(spec, a));
  printf("\n");
  if (sn > 1) printf("shard    %d/%d: %lld cells\n", si, sn, (long long)p.cells);
  plan_print_cost(ranks, &p, teams, T);
  if (max_field > 0)
    printf("field    curvature fields (up to %dx%d grid points per cell): %.3g GFLOP of that "
           "(%.1f%%)\n", max_field, max_field, field_cost / 1e9,
           100.0 * field_cost / (p.cost > 0 ? p.cost : 1));
  printf("team     %dx%d (%d rank%s per cell), block size %d\n", c0.team_p, c0.team_q, T,
         T > 1 ? "s" : "", c0.team_block);
  if (max_width < SWEEP_TEAM_MIN_WIDTH)
    printf("         suggestion: 1x1 — every width here is below %d, where a team's products "
           "are slower than one rank's (measured by bench/team)%s\n",
           SWEEP_TEAM_MIN_WIDTH, T > 1 ? "; this spec uses a larger team" : "");
  else
    printf("         suggestion: teams of 2 (e.g. grid = 1x2) for widths >= %d (widest here: "
           "%d; measured by bench/team)\n", SWEEP_TEAM_MIN_WIDTH, max_width);
  printf("first cells%s:\n", other ? "" : " to run");
  int64_t shown = 0;
  for (int64_t c = 0; c < n && shown < 10; c++) {
    if (!mask[c] || (!other && finished[c])) continue;
    printf("  %6lld", (long long)c);
    for (int a = 0; a < spec_axis_count(spec); a++) {
      char buf[128];
      spec_axis_value_text(spec, a, c, buf, sizeof buf);
      cli_print(stdout, " %s=%s", spec_axis_name(spec, a), buf);
    }
    printf("\n");
    shown++;
  }
  return CS_OK;
}

int cli_dry_run(const cs_spec *spec, const char *archive, int si, int sn, long long ranks) {
  int64_t n = spec_cell_count(spec);
  unsigned char *mask = calloc((size_t)n, 1), *finished = calloc((size_t)n, 1);
  int rc = mask && finished ? plan_dry_run(spec, archive, si, sn, ranks, mask, finished)
                            : cs_error(CS_ERR_NOMEM, "out of memory for %lld cells", (long long)n);
  free(mask), free(finished);
  return rc ? cli_fail(rc) : EXIT_OK;
}

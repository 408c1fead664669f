/* bench/merge.c — `curvsweep merge` speed on synthetic shard archives.
 *
 *   build-dev/bench_merge [CELLS [SHARDS [POINTS [DIR]]]]
 * Builds SHARDS shard archives of a synthetic CELLS-cell sweep (bench/synth.h;
 * shard s holds the cells c with c mod SHARDS = s, as `run --shard`; POINTS
 * evaluation points per cell saved under /points, 0 for none) in DIR
 * (default /tmp), merges them with archive_merge and prints cells/s and the
 * process's peak resident memory. Target (issue 14): ≥ 20,000 cells/s with
 * points on local disk, memory bounded by one shard. BENCH_KEEP=1 keeps
 * the shards (and prints their names). Defaults: 20,000 cells,
 * 20 shards, 32 points.
 *
 * Before against after (issue 29): BENCH_MERGE_BEFORE=OLD (a curvsweep
 * binary, e.g. another worktree's build/curvsweep) times `OLD merge` and
 * `NEW merge` (NEW: BENCH_MERGE_AFTER, default the curvsweep beside this
 * binary) on the same shards, interleaved OLD NEW OLD NEW … with a dgemm
 * measurement in every pair (bench/interleave.h), BENCH_PAIRS pairs
 * (default 5), and prints each side's median cells/s (of wall time, and
 * per CPU second of the merge process) and the median of the per-pair
 * ratios after/before with its min–max (each merge a whole
 * process from start to exit; no peak memory here: a spawned child's
 * ru_maxrss starts from this process's). */
#include "curvsweep/archive.h"
#include "curvsweep/clock.h"
#include "interleave.h"
#include "synth.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_PAIRS 64

static int build_shard(const cs_spec *spec, const char *path, int shard, int shards, int points) {
  int64_t nc = spec_cell_count(spec);
  unsigned char *mask = NULL;
  CS_CHECK(CS_CALLOC(mask, nc));
  for (int64_t c = shard; c < nc; c += shards) mask[c] = 1;
  cs_archive_builder *b;
  int rc = archive_build_begin(path, spec, mask, 1, &b);
  free(mask);
  CS_CHECK(rc);
  for (int64_t c = shard; c < nc && !rc; c += shards) {
    cs_cell_result r;
    rc = synth_result(spec, c, points, &r);
    if (!rc) rc = archive_build_result(b, &r);
    result_free(&r);
  }
  cs_run_info run = {.ranks = 64, .cells_run = nc / shards};
  snprintf(run.start, sizeof run.start, "2026-01-01T00:00:00Z");
  snprintf(run.end, sizeof run.end, "2026-01-01T01:00:00Z");
  snprintf(run.shard, sizeof run.shard, "%d/%d", shard, shards);
  if (!rc) rc = archive_build_run(b, &run);
  if (rc) {
    archive_build_abort(b);
    return rc;
  }
  return archive_build_finish(b);
}

/* One side of the before/after comparison: `exe merge OUT IN... --overwrite`
 * in a child (output to /dev/null), timed from spawn to exit. */
typedef struct {
  const char *exe, *out;
  char **paths;
  int shards;
  double sec[MAX_PAIRS], cpu[MAX_PAIRS]; /* wall, and user + system CPU of the child */
} merge_side;

static double rusage_cpu(const struct rusage *ru) {
  return (double)ru->ru_utime.tv_sec + 1e-6 * (double)ru->ru_utime.tv_usec +
         (double)ru->ru_stime.tv_sec + 1e-6 * (double)ru->ru_stime.tv_usec;
}

static int merge_cli(void *ctx, int p) {
  merge_side *m = ctx;
  char **argv = calloc((size_t)m->shards + 5, sizeof *argv);
  if (!argv) return cs_error(CS_ERR_NOMEM, "bench_merge: out of memory");
  int k = 0;
  argv[k++] = (char *)m->exe, argv[k++] = "merge", argv[k++] = (char *)m->out;
  for (int s = 0; s < m->shards; s++) argv[k++] = m->paths[s];
  argv[k++] = "--overwrite", argv[k] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  double t0 = cs_monotonic_seconds();
  int rc = posix_spawn(&pid, m->exe, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  free(argv);
  if (rc) return cs_error(CS_ERR_IO, "bench_merge: spawning %s: %s", m->exe, strerror(rc));
  int status = 1;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) return cs_error(CS_ERR_IO, "bench_merge: wait4 failed");
  m->sec[p] = cs_monotonic_seconds() - t0;
  m->cpu[p] = rusage_cpu(&ru);
  if (!WIFEXITED(status) || WEXITSTATUS(status))
    return cs_error(CS_ERR_IO, "bench_merge: %s merge failed (status %d)", m->exe, status);
  return CS_OK;
}

/* The curvsweep beside this binary (build/curvsweep for build/bench_merge). */
static void sibling_curvsweep(char *buf, size_t len) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash) *slash = '\0';
  snprintf(buf, len, "%.3900s/curvsweep", n > 0 && slash ? exe : ".");
}

/* Interleaved before/after merges of the shards; prints the comparison. */
static int before_after(const char *before, char **paths, int shards, const char *out,
                        int64_t cells) {
  char after[4096];
  const char *env = getenv("BENCH_MERGE_AFTER");
  if (env && *env) snprintf(after, sizeof after, "%s", env);
  else sibling_curvsweep(after, sizeof after);
  const char *pe = getenv("BENCH_PAIRS");
  int pairs = pe && *pe ? atoi(pe) : BENCH_MIN_PAIRS;
  if (pairs < 1 || pairs > MAX_PAIRS)
    return cs_error(CS_ERR_INPUT, "bench_merge: BENCH_PAIRS must be 1..%d", MAX_PAIRS);
  static merge_side a, b;
  a = (merge_side){.exe = before, .out = out, .paths = paths, .shards = shards};
  b = (merge_side){.exe = after, .out = out, .paths = paths, .shards = shards};
  bench_dgemm dgemm[MAX_PAIRS];
  bench_pair_opts o = {.pairs = pairs, .dgemm_n = 1024, .dgemm_reps = 3};
  CS_CHECK(bench_interleave(&o, merge_cli, &a, merge_cli, &b, dgemm));
  double ratio[MAX_PAIRS], ra[MAX_PAIRS], rb[MAX_PAIRS], ca[MAX_PAIRS], cb[MAX_PAIRS],
      cratio[MAX_PAIRS];
  char machine[320], text[160];
  bench_machine_tag(machine, sizeof machine);
  for (int p = 0; p < pairs; p++) {
    ra[p] = cells / a.sec[p], rb[p] = cells / b.sec[p], ratio[p] = a.sec[p] / b.sec[p];
    ca[p] = cells / a.cpu[p], cb[p] = cells / b.cpu[p], cratio[p] = a.cpu[p] / b.cpu[p];
    printf("pair %d           before %.3f s (%.0f cells/s; CPU %.3f s), after %.3f s (%.0f "
           "cells/s; CPU %.3f s), after/before %.2fx, dgemm %.2f GFLOP/s\n", p + 1, a.sec[p],
           ra[p], a.cpu[p], b.sec[p], rb[p], b.cpu[p], ratio[p], dgemm[p].gflops);
  }
  bench_spread_text(text, sizeof text, "%.0f", bench_spread_of(ra, pairs));
  printf("before           %s: cells/s %s [%s]\n", before, text, machine);
  bench_spread_text(text, sizeof text, "%.0f", bench_spread_of(rb, pairs));
  printf("after            %s: cells/s %s [%s]\n", after, text, machine);
  bench_spread_text(text, sizeof text, "%.2fx", bench_spread_of(ratio, pairs));
  printf("speedup          after/before (the per-pair ratio of merge times) %s\n", text);
  // CPU time (user + system of the merge process): what a loaded machine
  // does not inflate with other processes' turns on the core
  bench_spread_text(text, sizeof text, "%.0f", bench_spread_of(ca, pairs));
  printf("before CPU       cells per CPU second %s\n", text);
  bench_spread_text(text, sizeof text, "%.0f", bench_spread_of(cb, pairs));
  printf("after CPU        cells per CPU second %s\n", text);
  bench_spread_text(text, sizeof text, "%.2fx", bench_spread_of(cratio, pairs));
  printf("speedup CPU      after/before (the per-pair ratio of merge CPU times) %s\n", text);
  bench_spread_text(text, sizeof text, "%.2f", bench_dgemm_spread(dgemm, pairs, 0));
  printf("dgemm            (1024^3, best of 3 per pair) GFLOP/s %s\n", text);
  return CS_OK;
}

int main(int argc, char **argv) {
  int64_t cells = argc > 1 ? atoll(argv[1]) : 20000;
  int shards = argc > 2 ? atoi(argv[2]) : 20, points = argc > 3 ? atoi(argv[3]) : 32;
  const char *dir = argc > 4 ? argv[4] : "/tmp";
  if (cells < 8 || cells % 8 || shards < 1 || points < 0) {
    fprintf(stderr, "usage: bench_merge [CELLS (multiple of 8) [SHARDS [POINTS [DIR]]]]\n");
    return 2;
  }
  char text[1024];
  synth_spec_text(text, sizeof text, cells, points ? points : 32, points > 0);
  cs_spec *spec;
  if (spec_load_string(text, "synth", &spec)) {
    fprintf(stderr, "bench_merge: %s\n", cs_error_message());
    return 1;
  }
  char **paths = calloc((size_t)shards, sizeof *paths);
  char out[4096];
  snprintf(out, sizeof out, "%s/bench_merge_%ld_out.h5", dir, (long)getpid());
  double t0 = cs_monotonic_seconds();
  for (int s = 0; s < shards; s++) {
    paths[s] = malloc(4096);
    snprintf(paths[s], 4096, "%s/bench_merge_%ld_%d.h5", dir, (long)getpid(), s);
    if (build_shard(spec, paths[s], s, shards, points)) {
      fprintf(stderr, "bench_merge: %s\n", cs_error_message());
      return 1;
    }
  }
  double t1 = cs_monotonic_seconds();
  const char *before = getenv("BENCH_MERGE_BEFORE");
  if (before && *before) {
    bench_print_machine();
    printf("shards built     %d x %lld cells, %d points: %.2f s\n", shards,
           (long long)(cells / shards), points, t1 - t0);
    int rc = before_after(before, paths, shards, out, cells);
    if (rc) fprintf(stderr, "bench_merge: %s\n", cs_error_message());
    for (int s = 0; s < shards; s++) unlink(paths[s]), free(paths[s]);
    free(paths);
    unlink(out);
    spec_free(spec);
    return rc ? 1 : 0;
  }
  // the merge in a child, so that its peak memory is its own
  pid_t pid = fork();
  if (pid == 0) {
    int rc = archive_merge(out, (const char *const *)paths, shards, 0, 0, NULL);
    if (rc) fprintf(stderr, "bench_merge: merge: %s\n", cs_error_message());
    _exit(rc ? 1 : 0);
  }
  int status = 1;
  waitpid(pid, &status, 0);
  double t2 = cs_monotonic_seconds();
  if (!WIFEXITED(status) || WEXITSTATUS(status)) return 1;
  cs_archive_summary sum;
  if (archive_summary(out, &sum) || sum.cells != cells) {
    fprintf(stderr, "bench_merge: the merged archive lists %lld cells, expected %lld\n",
            (long long)sum.cells, (long long)cells);
    return 1;
  }
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  bench_print_machine();
  printf("shards built     %d x %lld cells, %d points: %.2f s (%.0f cells/s)\n", shards,
         (long long)(cells / shards), points, t1 - t0, cells / (t1 - t0));
  printf("merge            %lld cells in %.3f s: %.0f cells/s (%lld done, %lld failed, %lld "
         "diverged)\n", (long long)cells, t2 - t1, cells / (t2 - t1), (long long)sum.done,
         (long long)sum.failed, (long long)sum.diverged);
  printf("merge CPU        %.3f s user + system: %.0f cells per CPU second\n", rusage_cpu(&ru),
         cells / rusage_cpu(&ru));
  printf("merge peak RSS   %.1f MB\n",
         ru.ru_maxrss / 1024.0);
  int keep = getenv("BENCH_KEEP") != NULL;  // keep the shards (to time another build's merge)
  for (int s = 0; s < shards; s++) {
    if (keep) printf("shard            %s\n", paths[s]);
    else unlink(paths[s]);
    free(paths[s]);
  }
  free(paths);
  unlink(out);
  spec_free(spec);
  return 0;
}

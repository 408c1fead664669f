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
 * 20 shards, 32 points. */
#include "curvsweep/archive.h"
#include "curvsweep/clock.h"
#include "synth.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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
  // the merge in a child, so that its peak memory is its own
  pid_t pid = fork();
  if (pid == 0) {
    int rc = archive_merge(out, (const char *const *)paths, shards, 0);
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
  printf("shards built     %d x %lld cells, %d points: %.2f s (%.0f cells/s)\n", shards,
         (long long)(cells / shards), points, t1 - t0, cells / (t1 - t0));
  printf("merge            %lld cells in %.3f s: %.0f cells/s (%lld done, %lld failed, %lld "
         "diverged)\n", (long long)cells, t2 - t1, cells / (t2 - t1), (long long)sum.done,
         (long long)sum.failed, (long long)sum.diverged);
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

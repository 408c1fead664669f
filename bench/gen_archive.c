/* bench/gen_archive.c — a synthetic archive of a million-cell sweep, no
 * training (issue 14, goal 3).
 *
 *   build-dev/bench_gen_archive OUT.h5 [CELLS [POINTS]]
 * Writes OUT.h5 (and OUT.h5.ini, its spec) for a synthetic CELLS-cell sweep
 * (bench/synth.h; default 1,000,000): every cell finished (every 50th
 * failed, every 37th diverged), valid per docs/ARCHIVE.md, with /points of
 * POINTS evaluation points per cell when POINTS > 0 (default 0), through
 * the bulk builder (archive_build_*). Prints cells/s and the file size;
 * then time `curvsweep info OUT.h5` and `curvsweep analyze OUT.h5 DIR` under
 * /usr/bin/time -v (targets: ≤ 2 minutes, ≤ 2 GB each). */
#include "curvsweep/archive.h"
#include "curvsweep/clock.h"
#include "synth.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* *create_s: the creation of the complete pending archive (what `run`
 * does before the first cell: every /cells row written and synced). */
static int generate(const cs_spec *spec, const char *out, int points, double *create_s) {
  int64_t nc = spec_cell_count(spec);
  cs_archive_builder *b;
  double t0 = cs_monotonic_seconds();
  CS_CHECK(archive_build_begin(out, spec, NULL, 1, &b));
  *create_s = cs_monotonic_seconds() - t0;
  int rc = CS_OK;
  for (int64_t c = 0; c < nc && !rc; c++) {
    cs_cell_result r;
    rc = synth_result(spec, c, points, &r);
    if (!rc) rc = archive_build_result(b, &r);
    result_free(&r);
  }
  cs_run_info run = {.ranks = 1024, .cells_run = nc};
  snprintf(run.start, sizeof run.start, "2026-01-01T00:00:00Z");
  snprintf(run.end, sizeof run.end, "2026-01-02T00:00:00Z");
  snprintf(run.hosts, sizeof run.hosts, "synthetic");
  snprintf(run.team, sizeof run.team, "1x1");
  if (!rc) rc = archive_build_run(b, &run);
  if (rc) {
    archive_build_abort(b);
    return rc;
  }
  return archive_build_finish(b);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_gen_archive OUT.h5 [CELLS (multiple of 8) [POINTS]]\n");
    return 2;
  }
  const char *out = argv[1];
  int64_t cells = argc > 2 ? atoll(argv[2]) : 1000000;
  int points = argc > 3 ? atoi(argv[3]) : 0;
  if (cells < 8 || cells % 8 || points < 0) {
    fprintf(stderr, "bench_gen_archive: CELLS must be a positive multiple of 8, POINTS >= 0\n");
    return 2;
  }
  char text[1024], ini[4096];
  synth_spec_text(text, sizeof text, cells, points ? points : 32, points > 0);
  snprintf(ini, sizeof ini, "%s.ini", out);
  FILE *f = fopen(ini, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "bench_gen_archive: cannot write %s\n", ini);
    return 1;
  }
  cs_spec *spec;
  if (spec_load_string(text, ini, &spec)) {
    fprintf(stderr, "bench_gen_archive: %s\n", cs_error_message());
    return 1;
  }
  double t0 = cs_monotonic_seconds();
  double create_s = 0;
  int rc = generate(spec, out, points, &create_s);
  double t1 = cs_monotonic_seconds();
  spec_free(spec);
  if (rc) {
    fprintf(stderr, "bench_gen_archive: %s\n", cs_error_message());
    return 1;
  }
  struct stat st;
  stat(out, &st);
  printf("generated        %s: %lld cells, %d points per cell, spec %s\n", out, (long long)cells,
         points, ini);
  printf("creation         %.2f s (the pending archive of %lld cells, synced)\n", create_s,
         (long long)cells);
  printf("time             %.2f s (%.0f cells/s), %.1f MB on disk\n", t1 - t0, cells / (t1 - t0),
         st.st_size / 1e6);
  return 0;
}

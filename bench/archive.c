/* bench/archive.c — the root's archive write rate (issue 14, goal 1).
 *
 *   OPENBLAS_NUM_THREADS=1 mpiexec --bind-to none -np 2 build/bench_archive [DIR]
 *
 * 1. Synthetic results (no training) written by rank 0 through the public
 *    archive API, open to verified close included:
 *      small:  depth 4, 3 curve points, no points    (target >= 10,000 /s)
 *      points: depth 6, 128 points (m = 2) saved      (target >=  2,000 /s)
 *    Three cadences: "synced 1" syncs the journal after every result (what
 *    archive_write_result does; the durability cadence before batching),
 *    "synced 16" after every 16 (results arriving together at many ranks),
 *    "group" adds every result and calls archive_commit unforced, as the
 *    sweep's rank 0 does (the journal synced at most every 50 ms). HDF5
 *    writes are batched in all three (docs/ARCHIVE.md, "Write protocol").
 * 2. The tiny-cell sweep: 2,000 cells (width 4, 1 epoch, 4 points, depth 1)
 *    on every rank of the job; prints the archive's share of rank 0's wall
 *    time (target <= 10% at 2 ranks).
 * Besides results/s (wall clock) the CPU-time rate is printed: on a shared
 * machine it shows what the writer costs without the waits for a core
 * (fdatasync waits are not CPU time, so it overstates the synced cadences).
 * DIR (default: a new directory under /tmp) receives the archives; it is
 * removed at the end. */
#include "curvsweep/archive.h"
#include "curvsweep/clock.h"
#include "curvsweep/error.h"
#include "curvsweep/sweep.h"
#include "interleave.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A synthetic result of cell id: every value a function of the cell. */
static cs_cell_result synth_result(int64_t id, int depth, int n_points) {
  cs_cell_result r;
  memset(&r, 0, sizeof r);
  double c = (double)id;
  r.cell_id = id;
  r.status = CELL_DONE;
  r.attempts = 1;
  r.wall_s = 0.01 + c * 1e-6;
  r.train_loss = 0.5 / (1 + c), r.train_acc = 0.75, r.test_acc = 0.625;
  r.n_params = 100 + id;
  r.n_curve = 3;
  r.curve = calloc(3, sizeof *r.curve);
  for (int e = 0; e < 3; e++) r.curve[e] = (cs_curve_point){e + 1, 1.0 / (e + 1) + c, 0.5, 0.25};
  r.depth = depth;
  r.curv = calloc((size_t)depth, sizeof *r.curv);
  for (int l = 0; l < depth; l++) {
    double *v = (double *)&r.curv[l].degenerate_frac;
    r.curv[l].n_points = n_points > 0 ? n_points : 4;
    for (size_t k = 0; k < (sizeof r.curv[l] - offsetof(geom_stats, degenerate_frac)) / sizeof(double); k++)
      v[k] = c + l + k / 64.0;
  }
  if (n_points > 0) {
    int m = 2, n = n_points;
    r.n_points = n, r.m = m;
    r.pt_x = malloc(sizeof(double) * (size_t)n * m);
    for (int i = 0; i < n * m; i++) r.pt_x[i] = sin(c + i);
    double **f[RESULT_N_POINT_ARRAYS];
    result_point_arrays(&r, f);
    for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++) {
      *f[k] = malloc(sizeof(double) * (size_t)depth * n);
      for (int i = 0; i < depth * n; i++) (*f[k])[i] = cos(c + 7 * k + i);
    }
    r.pt_class = malloc((size_t)depth * n);
    for (int i = 0; i < depth * n; i++) r.pt_class[i] = (int8_t)((i + id) % 4);
  }
  return r;
}

/* N results of one shape, the journal synced after every G (G = 0: the
 * group-commit policy of archive_commit); results/s from open until
 * every result is in the HDF5 file (archive_flush); *close_s: the verified
 * close after that (every result read back). */
static int bench_case(const char *dir, const char *tag, int64_t N, int depth, int n_points, int G,
                      double *rate, double *cpu_rate, double *close_s) {
  char text[256], path[512];
  snprintf(text, sizeof text,
           "[sweep]\nname = bench-archive\n[grid]\narch = ungated\ndepth = %d\nseed = 0..%lld\n",
           depth, (long long)N - 1);
  snprintf(path, sizeof path, "%s/%s-g%d.h5", dir, tag, G);
  cs_spec *spec;
  CS_CHECK(spec_load_string(text, "bench-archive.ini", &spec));
  // results built before the clock starts: the bench times the archive only
  cs_cell_result *res = calloc((size_t)N, sizeof *res);
  if (!res) return cs_error(CS_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; i < N; i++) res[i] = synth_result(i, depth, n_points);
  cs_archive *a;
  double t0 = cs_monotonic_seconds(), c0 = bench_process_cpu_seconds();
  int rc = archive_open_write(path, spec, ARCHIVE_OVERWRITE, NULL, &a);
  int step = G > 0 ? G : 1;
  for (int64_t i = 0; !rc && i < N; i += step) {
    for (int64_t k = i; !rc && k < i + step && k < N; k++) rc = archive_add_result(a, &res[k]);
    if (!rc) rc = archive_commit(a, G > 0, NULL);
  }
  if (!rc) rc = archive_flush(a);  // the last batch into the file
  double t1 = cs_monotonic_seconds(), c1 = bench_process_cpu_seconds();
  int rc2 = rc ? CS_OK : archive_close(a);
  double t2 = cs_monotonic_seconds();
  if (rc) archive_close(a);
  if (!rc) rc = rc2;
  *rate = N / (t1 - t0);
  *cpu_rate = N / (c1 - c0);
  *close_s = t2 - t1;
  for (int64_t i = 0; i < N; i++) result_free(&res[i]);
  free(res);
  spec_free(spec);
  unlink(path);
  return rc;
}

typedef struct {
  double elapsed, archive_s;
  int64_t run_now;
} sweep_figures;

static void on_progress(void *ctx, const sweep_progress *p) {
  sweep_figures *f = ctx;
  f->elapsed = p->elapsed_s, f->archive_s = p->archive_s, f->run_now = p->run_now;
}

static const char *TINY_SPEC = "[sweep]\nname = bench-archive-tiny\n[grid]\narch = ungated\n"
                               "depth = 1\nseed = 0..1999\n[model]\nwidth = 4\n[train]\nepochs = 1\n"
                               "[curvature]\npoints = 4\n";

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char dir[256] = "/tmp/bench_archive.XXXXXX";
  if (rank == 0) {
    if (argc > 1) snprintf(dir, sizeof dir, "%s", argv[1]);
    else if (!mkdtemp(dir)) dir[0] = '\0';
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  int rc = dir[0] ? CS_OK : cs_error(CS_ERR_IO, "cannot create a directory under /tmp");

  // 1. synthetic results (CS_BENCH_ONLY=small|points|sweep: one part only)
  const char *only = getenv("CS_BENCH_ONLY");
  if (rank == 0 && !rc) {
    static const struct { const char *tag; int64_t n; int depth, points; double target; } C[2] = {
        {"small", 20000, 4, 0, 10000}, {"points", 4000, 6, 128, 2000}};
    static const int groups[3] = {1, 16, 0};
    for (int c = 0; c < 2 && !rc; c++)
      for (int g = 0; g < 3 && !rc && !(only && strcmp(only, C[c].tag)); g++) {
        double rate = 0, cpu_rate = 0, close_s = 0;
        rc = bench_case(dir, C[c].tag, C[c].n, C[c].depth, C[c].points, groups[g], &rate, &cpu_rate,
                        &close_s);
        char cadence[16];
        if (groups[g]) snprintf(cadence, sizeof cadence, "synced %d", groups[g]);
        else snprintf(cadence, sizeof cadence, "group");
        if (!rc)
          printf("%-7s %6lld results, depth %d, %3d points, %-9s: %8.0f results/s, %8.0f per "
                 "CPU second (then verified close %.2f s; target >= %.0f/s)\n",
                 C[c].tag, (long long)C[c].n, C[c].depth, C[c].points, cadence, rate, cpu_rate,
                 close_s, C[c].target);
        fflush(stdout);
      }
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);

  // 2. the tiny-cell sweep on every rank
  cs_spec *spec = NULL;
  if (only && strcmp(only, "sweep")) {
    MPI_Finalize();
    return rc ? 1 : 0;
  }
  if (!rc) rc = spec_load_string(TINY_SPEC, "bench-archive-tiny.ini", &spec);
  sweep_figures fig = {0, 0, 0};
  char path[512];
  snprintf(path, sizeof path, "%s/tiny.h5", dir);
  if (!rc) {
    sweep_options opt;
    memset(&opt, 0, sizeof opt);
    opt.archive_path = path;
    opt.shard_index = 0, opt.shard_count = 1, opt.overwrite = 1;
    opt.progress = on_progress, opt.progress_ctx = &fig;
    double t0 = cs_monotonic_seconds();
    rc = sweep_run(MPI_COMM_WORLD, spec, &opt);
    double wall = cs_monotonic_seconds() - t0;
    if (rank == 0 && !rc)
      printf("tiny sweep: %lld cells on %d ranks in %.2f s (sweep_run %.2f s): %.3f s writing the "
             "archive = %.1f%% of wall time (target <= 10%%)\n",
             (long long)fig.run_now, size, fig.elapsed, wall, fig.archive_s,
             100.0 * fig.archive_s / fig.elapsed);
  }
  if (rank == 0) {
    unlink(path);
    if (argc <= 1) rmdir(dir);
  }
  spec_free(spec);
  if (rc && rank == 0) fprintf(stderr, "bench_archive: %s\n", cs_error_message());
  MPI_Finalize();
  return rc ? 1 : 0;
}

/* cmd_run.c — `curvsweep run SPEC.ini [--set S.K=V]... [-o ARCHIVE] [--shard I/N] [--dry-run] [--overwrite]`,
 * usually under mpirun/srun. Only rank 0 prints. */
#include "cli.h"

#include "curvsweep/clock.h"
#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/sweep.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *RUN_HELP =
    "usage: curvsweep run SPEC.ini [--set SECTION.KEY=VALUE]... [-o ARCHIVE] [--shard I/N]\n"
    "                     [--dry-run [--ranks N]] [--overwrite]\n\n"
    "Run (or resume) the sweep described by SPEC.ini on every MPI rank, e.g.\n"
    "  mpirun -np 8 curvsweep run jobs/demo.ini\n"
    "  srun --mpi=pmix curvsweep run jobs/paper.ini\n"
    "Results go to ARCHIVE (default: [sweep] output of the spec), written by rank 0 as\n"
    "they arrive. Running the same command again resumes: only cells not done run.\n"
    "A spec that only adds [grid] values grows ARCHIVE (its results kept, the old file\n"
    "kept as ARCHIVE.before-grow-<time>); other changes are refused, naming the keys.\n\n"
    "  --set SECTION.KEY=VALUE\n"
    "                 override one key of the spec (repeatable), e.g. --set train.epochs=5,\n"
    "                 --set grid.seed=0..9 (an axis: a list or range); checked like the file,\n"
    "                 errors name '--set SECTION.KEY'. The archive stores the spec with the\n"
    "                 overrides written in (and listed in a closing comment): resume with\n"
    "                 the same --set options. 'curvsweep check' lists every error.\n"
    "  -o ARCHIVE     archive path (HDF5)\n"
    "  --shard I/N    run the I-th of N deterministic parts of the grid (0 <= I < N),\n"
    "                 e.g. one per Slurm array task; combine with 'curvsweep merge'\n"
    "  --dry-run      print the grid size, the cells left to run in ARCHIVE (when it\n"
    "                 exists), their cost and wall-time estimate, and the first cells;\n"
    "                 run nothing\n"
    "  --ranks N      with --dry-run: estimate the wall time for N ranks (default:\n"
    "                 the ranks it was started with)\n"
    "  --overwrite    replace an existing archive instead of resuming it\n\n"
    "SIGINT, SIGTERM or SIGUSR1 stop the hand-out of work; results so far are kept\n"
    "and the command exits with status 1: resume with the same command.\n";

/* The spec keys, from the parser's own table (spec_key_info). */
static void print_spec_keys(void) {
  printf("\nSpec keys (docs/SPEC.md has their defaults; * = may also be a [grid] axis, a comma\n"
         "list or an integer range a..b):\n");
  for (int i = 0; i < spec_key_count(); i++) {
    const char *section, *name;
    int axis_ok;
    char allowed[512];
    spec_key_info(i, &section, &name, &axis_ok, allowed, sizeof allowed);
    char head[64];
    snprintf(head, sizeof head, "[%s] %s%s", section, name, axis_ok ? " *" : "");
    printf("  %-28s %s\n", head, allowed);
  }
}

static volatile sig_atomic_t run_stop;

static void on_signal(int sig) {
  (void)sig;
  run_stop = 1;
}

typedef struct {
  int tty;
  double last_print;
  int ranks;       /* MPI world size */
  int synthetic;   /* CS_SYNTHETIC_CELLS: report the engine's figures */
} progress_state;

static void format_duration(double s, char *buf, size_t len) {
  if (!isfinite(s)) {
    snprintf(buf, len, "--:--:--");
    return;
  }
  long t = (long)(s + 0.5);
  snprintf(buf, len, "%02ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
}

/* Progress: a live line on a terminal, a line every 10 s otherwise (Slurm logs). */
static void print_progress(void *ctx, const sweep_progress *p) {
  progress_state *ps = ctx;
  double t = cs_monotonic_seconds();
  int last = p->done >= p->total;
  if (!ps->tty && !last && t - ps->last_print < 10.0 && ps->last_print > 0) return;
  ps->last_print = t;
  char eta[32], el[32];
  format_duration(p->eta_s, eta, sizeof eta);
  format_duration(p->elapsed_s, el, sizeof el);
  double rate = p->elapsed_s > 0 ? 60.0 * p->run_now / p->elapsed_s : 0;
  fprintf(stderr, "%s[%lld/%lld cells] %.1f cells/min, %lld failed, elapsed %s, ETA %s%s",
          ps->tty ? "\r" : "", (long long)p->done, (long long)p->total, rate,
          (long long)p->failed, el, eta, ps->tty ? "   " : "\n");
  if (ps->tty && last) fputc('\n', stderr);
  if (last && p->run_now > 0)
    fprintf(stderr, "curvsweep: %lld cells in %.2f s: %.2f s of training, %.3f s writing the archive "
                    "(%.1f%% of wall time)\n",
            (long long)p->run_now, p->elapsed_s, p->work_s, p->archive_s,
            100.0 * p->archive_s / (p->elapsed_s > 0 ? p->elapsed_s : 1));
  if (last && p->run_now > 0 && ps->synthetic) {
    // docs/SCALING.md: makespan against the bound max(work / ranks, longest cell)
    double bound = fmax(p->work_s / ps->ranks, p->longest_s);
    fprintf(stderr, "curvsweep: synthetic: ranks %d cells %lld makespan %.3f s bound %.3f s "
                    "makespan/bound %.3f root busy %.3f s (%.1f%%) archive %.3f s "
                    "(%.3f ms/result) work %.3f s\n",
            ps->ranks, (long long)p->run_now, p->elapsed_s, bound,
            p->elapsed_s / (bound > 0 ? bound : 1), p->serve_s,
            100.0 * p->serve_s / (p->elapsed_s > 0 ? p->elapsed_s : 1), p->archive_s,
            1e3 * p->archive_s / p->run_now, p->work_s);
  }
  fflush(stderr);
}

static int parse_shard(const char *s, int *i, int *n) {
  char *end;
  long a = strtol(s, &end, 10);
  if (end == s || *end != '/') return -1;
  const char *t = end + 1;
  long b = strtol(t, &end, 10);
  if (end == t || *end || b < 1 || a < 0 || a >= b || b > 1000000) return -1;
  *i = (int)a, *n = (int)b;
  return 0;
}

static void fill_slurm(cs_run_info *run) {
  const char *job = getenv("SLURM_JOB_ID"), *arr = getenv("SLURM_ARRAY_JOB_ID"),
             *idx = getenv("SLURM_ARRAY_TASK_ID"), *nodes = getenv("SLURM_JOB_NODELIST"),
             *restarts = getenv("SLURM_RESTART_COUNT");
  if (arr && idx)
    snprintf(run->slurm_job, sizeof run->slurm_job, "%s_%s", arr, idx);
  else if (job)
    snprintf(run->slurm_job, sizeof run->slurm_job, "%s", job);
  if (nodes) snprintf(run->nodelist, sizeof run->nodelist, "%s", nodes);
  run->requeue_count = restarts ? atoi(restarts) : 0;
}

/* Rank 0's last words on a finished sweep_run, and every rank's exit status. */
static int run_report(int rank, int rc, const char *archive) {
  if (rank != 0) return rc == CS_OK ? EXIT_OK : rc == CS_ERR_INPUT ? EXIT_USAGE : EXIT_RUNTIME;
  if (rc == CS_ERR_INTERRUPTED) {
    cli_print(stderr, "curvsweep: interrupted — results so far are in %s; resume with the same command\n",
            archive);
    return EXIT_RUNTIME;
  }
  if (rc) return cli_fail(rc);
  cs_archive_summary s;
  if (archive_summary(archive, &s) == CS_OK)
    cli_print(stderr, "curvsweep: %lld cells: %lld done, %lld failed, %lld diverged, %lld pending -> %s\n",
            (long long)s.cells, (long long)s.done, (long long)s.failed, (long long)s.diverged,
            (long long)s.pending, archive);
  return EXIT_OK;
}

/* The arguments of run (EXIT_OK, or the usage error's status). */
static int run_args(int argc, char **argv, int rank, const char **sets, int *nsets,
                    const char **spec_path_out, const char **out_out, int *dry_out,
                    int *overwrite_out, int *si_out, int *sn_out, long long *ranks_out) {
  const char *spec_path = NULL, *out = NULL;
  int dry = 0, overwrite = 0, si = 0, sn = 1, took;
  long long ranks = 0;
  for (int i = 1; i < argc; i++) {
    if ((took = cli_take_set("run", argc, argv, &i, sets, nsets, rank == 0)) != 0) {
      if (took < 0) return EXIT_USAGE;
    } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
      if (i + 1 >= argc) return rank ? EXIT_USAGE : cli_usage_error("run", "-o needs an archive path");
      out = argv[++i];
    } else if (!strcmp(argv[i], "--shard")) {
      if (i + 1 >= argc || parse_shard(argv[i + 1], &si, &sn))
        return rank ? EXIT_USAGE
                    : cli_usage_error("run", "--shard needs I/N with 0 <= I < N, e.g. --shard 0/4");
      i++;
    } else if (!strcmp(argv[i], "--dry-run")) {
      dry = 1;
    } else if (!strcmp(argv[i], "--ranks")) {
      if (i + 1 >= argc || (ranks = cli_parse_count(argv[i + 1])) < 1 || ranks > (1 << 24))
        return rank ? EXIT_USAGE
                    : cli_usage_error("run", "--ranks needs a number of ranks >= 1 (with --dry-run)");
      i++;
    } else if (!strcmp(argv[i], "--overwrite")) {
      overwrite = 1;
    } else if (argv[i][0] == '-') {
      return rank ? EXIT_USAGE : cli_usage_error("run", "unknown option '%s'", argv[i]);
    } else if (!spec_path) {
      spec_path = argv[i];
    } else {
      return rank ? EXIT_USAGE : cli_usage_error("run", "unexpected argument '%s'", argv[i]);
    }
  }
  if (!spec_path) return rank ? EXIT_USAGE : cli_usage_error("run", "missing SPEC.ini");
  *spec_path_out = spec_path, *out_out = out, *dry_out = dry, *overwrite_out = overwrite;
  *si_out = si, *sn_out = sn, *ranks_out = ranks;
  return EXIT_OK;
}

/* The parsed command line of run. */
typedef struct {
  const char **sets; /* --set values (room for argc entries) */
  int nsets;
  const char *spec_path, *out;
  int dry, overwrite, si, sn;
  long long ranks;
  double synthetic_mean_s; /* CS_SYNTHETIC_CELLS, 0 when unset */
} run_args_t;

/* CS_SYNTHETIC_CELLS=SECONDS: synthetic cells of that mean duration, no
 * training (engine benchmark, docs/SCALING.md); EXIT_USAGE when it is not
 * a positive finite number. */
static int run_synthetic(int rank, double *mean_s) {
  const char *synth = getenv("CS_SYNTHETIC_CELLS");
  *mean_s = 0;
  if (!synth || !*synth) return EXIT_OK;
  char *end;
  double v = strtod(synth, &end);
  if (*end || !(v > 0) || !isfinite(v)) {
    if (rank == 0)
      cli_print(stderr, "curvsweep: CS_SYNTHETIC_CELLS='%s' must be a positive number of seconds "
                      "(the mean synthetic cell)\n", synth);
    return EXIT_USAGE;
  }
  *mean_s = v;
  return EXIT_OK;
}

/* The arguments and the environment of run (EXIT_OK, or the usage error's
 * status; only rank 0 prints). */
static int run_parse(int argc, char **argv, int rank, run_args_t *a) {
  int status = run_args(argc, argv, rank, a->sets, &a->nsets, &a->spec_path, &a->out, &a->dry,
                        &a->overwrite, &a->si, &a->sn, &a->ranks);
  if (status == EXIT_OK && !a->dry) status = run_synthetic(rank, &a->synthetic_mean_s);
  return status;
}

/* The dry run or the sweep of a loaded spec; an exit status. */
static int run_spec(int rank, const cs_spec *spec, const run_args_t *a) {
  const char *archive = a->out ? a->out : spec_sweep(spec)->output;
  if (a->dry) {
    int world = 1, rc = la_mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &world), "MPI_Comm_size");
    if (rc) return rank ? EXIT_RUNTIME : cli_fail(rc);
    return rank == 0 ? cli_dry_run(spec, archive, a->si, a->sn, a->ranks > 0 ? a->ranks : world)
                     : EXIT_OK;
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);

  progress_state ps = {isatty(STDERR_FILENO), 0, 1, a->synthetic_mean_s > 0};
  int mrc = la_mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &ps.ranks), "MPI_Comm_size");
  if (mrc) return rank ? EXIT_RUNTIME : cli_fail(mrc);
  sweep_options opt;
  memset(&opt, 0, sizeof opt);
  opt.archive_path = archive;
  /* CS_TEAM_FLOP_THRESHOLD, CS_TEAM_PBLAS: team product policy for
   * benchmarks and tests (docs/SWEEP.md, "Teams") */
  opt.team_policy = la_team_policy_default();
  const char *threshold = getenv("CS_TEAM_FLOP_THRESHOLD"), *pblas = getenv("CS_TEAM_PBLAS");
  if (threshold && *threshold) opt.team_policy.flop_threshold = atof(threshold);
  if (pblas && *pblas) opt.team_policy.use_pblas = atoi(pblas) != 0;
  opt.shard_index = a->si, opt.shard_count = a->sn;
  opt.overwrite = a->overwrite;
  opt.stop = &run_stop;
  opt.progress = rank == 0 ? print_progress : NULL;
  opt.progress_ctx = &ps;
  opt.synthetic_mean_s = a->synthetic_mean_s;
  fill_slurm(&opt.run);
  int rc = sweep_run(MPI_COMM_WORLD, spec, &opt);
  return run_report(rank, rc, archive);
}

/* MPI_Init and the world's error policy (docs/ARCHITECTURE.md, "Errors":
 * failures return to the caller, which checks every call, instead of
 * aborting the job); EXIT_OK with *rank set, or the failure's status
 * (*started says whether MPI_Finalize is owed). */
static int run_mpi_init(int *argc, char ***argv, int *rank, int *started) {
  if (MPI_Init(argc, argv) != MPI_SUCCESS) {
    fprintf(stderr, "curvsweep: MPI_Init failed\n");
    return EXIT_RUNTIME;
  }
  *started = 1;
  int rc = la_comm_errors_return(MPI_COMM_WORLD);
  if (!rc) rc = la_mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, rank), "MPI_Comm_rank");
  return rc ? cli_fail(rc) : EXIT_OK;
}

/* run on its own: arguments, spec, then the dry run (without MPI) or MPI
 * and the sweep. */
static int run_singleton(int *argc, char ***argv, run_args_t *a, int *mpi_started) {
  cs_spec *spec = NULL;
  int rank = 0, status = run_parse(*argc, *argv, 0, a);
  if (status == EXIT_OK) {
    spec_load_options lo = {a->sets, a->nsets, NULL, NULL, model_cell_memory};
    int rc = spec_load_file_opts(a->spec_path, &lo, &spec);
    if (rc) status = cli_fail(rc);
  }
  if (status == EXIT_OK && a->dry)
    status = cli_dry_run(spec, a->out ? a->out : spec_sweep(spec)->output, a->si, a->sn,
                         a->ranks > 0 ? a->ranks : 1);
  else if (status == EXIT_OK) {
    // Open MPI starts a singleton without its runtime daemon (no
    // MPI_Comm_spawn, which curvsweep never calls) and with its ob1
    // point-to-point layer named instead of probing the network layers
    // (cm, ucx, psm) a world of one never uses: 0.5 s less per start
    // (docs/SWEEP.md, "Starting"); a value the user set wins
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    setenv("OMPI_MCA_pml", "ob1", 0);
    if ((status = run_mpi_init(argc, argv, &rank, mpi_started)) == EXIT_OK)
      status = run_spec(rank, spec, a);
  }
  spec_free(spec);
  return status;
}

/* run under a launcher: MPI first, then the arguments, then the spec read by
 * rank 0 and handed to the others (docs/SWEEP.md), then the sweep. */
static int run_launched(int *argc, char ***argv, run_args_t *a, int *mpi_started) {
  cs_spec *spec = NULL;
  int rank = 0, status = run_mpi_init(argc, argv, &rank, mpi_started);
  if (status == EXIT_OK) status = run_parse(*argc, *argv, rank, a);
  if (status == EXIT_OK) {
    spec_load_options lo = {a->sets, a->nsets, NULL, NULL, model_cell_memory};
    int rc = sweep_load_spec(MPI_COMM_WORLD, a->spec_path, &lo, &spec);
    if (rc) status = rank ? (rc == CS_ERR_INPUT ? EXIT_USAGE : EXIT_RUNTIME) : cli_fail(rc);
  }
  if (status == EXIT_OK) status = run_spec(rank, spec, a);
  spec_free(spec); // archive may point into the spec ([sweep] output): freed last
  return status;
}

/* 1 when no MPI launcher started this process (mpirun/mpiexec and srun set
 * one of these in every rank's environment): it will be rank 0 of a world
 * of one. */
static int run_is_singleton(void) {
  static const char *const launcher_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                              "PMI_SIZE", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof launcher_vars / sizeof *launcher_vars; i++)
    if (getenv(launcher_vars[i])) return 0;
  return 1;
}

/* A process started on its own reads its arguments and spec before MPI
 * starts, so a bad command line or spec is refused at once and a dry run
 * needs no MPI at all (docs/SWEEP.md, "Starting"). */
int cmd_run(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(RUN_HELP, stdout);
    print_spec_keys();
    return EXIT_OK;
  }
  run_args_t a;
  memset(&a, 0, sizeof a);
  if (!(a.sets = calloc((size_t)argc + 1, sizeof *a.sets)))
    return cli_fail(cs_error(CS_ERR_NOMEM, "out of memory for the arguments"));
  int mpi_started = 0;
  int status = run_is_singleton() ? run_singleton(&argc, &argv, &a, &mpi_started)
                                  : run_launched(&argc, &argv, &a, &mpi_started);
  if (mpi_started) MPI_Finalize();
  free(a.sets);
  return status;
}

/* sweep.h — the MPI sweep engine (docs/SWEEP.md).
 *
 * Rank 0 of the communicator expands the spec, orders the cells to run
 * longest first by a cost model, hands them out one at a time, trains
 * cells itself between serving requests (it polls for messages between
 * its own optimisation steps), and writes every result into the archive as
 * it arrives. Waiting ranks poll with short sleeps: no core spins.
 * Results depend only on the cell, never on ranks or scheduling. */
#ifndef CURVSWEEP_SWEEP_H
#define CURVSWEEP_SWEEP_H

#include "curvsweep/archive.h"
#include "curvsweep/la.h"
#include "curvsweep/spec.h"

#include <mpi.h>
#include <signal.h>
#include <stdint.h>

/* Progress seen by rank 0 after each result. */
typedef struct {
  int64_t total;      /* cells this invocation is responsible for (shard) */
  int64_t done;       /* finished in the archive (any final status), incl. earlier runs */
  int64_t run_now;    /* finished by this invocation */
  int64_t failed;     /* failed or diverged so far */
  double elapsed_s;   /* since this invocation started */
  double eta_s;       /* estimated seconds left (NaN until known) */
  double archive_s;   /* rank 0 time spent writing results so far */
  double work_s;      /* sum of wall_s of the cells run so far */
  double serve_s;     /* rank 0 time serving messages and recording results
                         (archive writes included): the root's busy time */
  double longest_s;   /* longest wall_s of a cell run so far */
} sweep_progress;

typedef struct {
  const char *archive_path;     /* where results go */
  int shard_index, shard_count; /* --shard I/N (0/1 = all) */
  int overwrite;                /* replace an existing archive */
  volatile sig_atomic_t *stop;  /* set asynchronously (signals): stop handing out work */
  /* rank 0 only: called after every result and once at the start */
  void (*progress)(void *ctx, const sweep_progress *p);
  void *progress_ctx;
  /* /runs details supplied by the caller (hosts, Slurm ids); ranks and
   * team are filled in by the sweep. */
  cs_run_info run;
  /* how teams compute their products (la_team_policy_default() unless the
   * caller overrides it; the CLI reads CS_TEAM_FLOP_THRESHOLD, CS_TEAM_PBLAS) */
  la_team_policy team_policy;

  /* > 0: synthetic cells for benchmarking the engine (docs/SCALING.md): no
   * training; a cell sleeps cost/mean cost × this many seconds (cost:
   * sweep_cell_cost) and reports finite values depending only on its id. */
  double synthetic_mean_s;
} sweep_options;

/* Widths from which a team of 2 trains faster than one rank (bench/team on
 * the 2-core reference machine: faster from 256 in every run, from 128 in
 * some; bench/RESULTS.md, "Teams"); narrower models should use 1×1. */
#define SWEEP_TEAM_MIN_WIDTH 256

/* Estimated cost of a cell in floating-point operations (train + curvature). */
double sweep_cell_cost(const cs_config *cfg);
/* The part of it for the curvature field ([curvature] field = N: N² grid
 * points through jets and geom, and their predicted class); 0 without one. */
double sweep_cell_field_cost(const cs_config *cfg);

/* Deterministic shard membership: cells sorted by cost (descending, then
 * id) dealt round-robin, so shards carry similar work. mask[cell] = 1 for
 * cells of shard index of count. mask has spec_cell_count entries. */
int sweep_shard_mask(const cs_spec *spec, int index, int count, unsigned char *mask);

/* What a run of the spec would do (`run --dry-run`). Cells are those of
 * mask (NULL: all); finished (NULL: none) marks the cells an archive
 * already holds as done or diverged (a run skips them; failed cells run
 * again). makespan is the load of the busiest of `teams` teams when the
 * remaining cells are handed out longest first, each to the team that
 * frees up first (the scheduler's order), in the cost model's FLOPs. */
/* reused: remaining cells whose arch has no gate and whose result is a
 * copy of the same cell at another gate value (docs/SWEEP.md, "Cells that
 * do not depend on gate"); they count in remaining but not in
 * remaining_cost, longest or makespan. */
typedef struct {
  int64_t cells, remaining, reused;
  double cost, remaining_cost, longest, makespan;
} sweep_plan_summary;
int sweep_plan(const cs_spec *spec, const unsigned char *mask, const unsigned char *finished,
               int teams, sweep_plan_summary *out);

/* The ETA of a running sweep (docs/SWEEP.md, "Progress"), by the model of
 * sweep_plan: the cells left, in flight (ids inflight[0..n_inflight), each
 * counted at half its cost) and queued (ids queued[0..n_queued), longest
 * first), handed out longest first to `teams` teams, each to the team that
 * frees up first; cost[id] is sweep_cell_cost of cell id. sweep_eta_flops
 * is that schedule's makespan in FLOPs; sweep_eta_seconds converts it at the
 * rate measured so far, done_s seconds of one team for done_cost FLOPs of
 * finished cells (NaN before a cell has finished). */
double sweep_eta_flops(const double *cost, const int64_t *inflight, int n_inflight,
                       const int64_t *queued, int64_t n_queued, int teams);
double sweep_eta_seconds(const double *cost, const int64_t *inflight, int n_inflight,
                         const int64_t *queued, int64_t n_queued, int teams, double done_cost,
                         double done_s);

/* The spec at path on every rank of comm: rank 0 reads it (with the
 * overrides of opt, NULL for none: spec_load_file_opts), the others parse
 * the same text. Collective; an invalid spec returns the same code on every
 * rank (the message naming file, line and key on rank 0). */
int sweep_load_spec(MPI_Comm comm, const char *path, const spec_load_options *opt,
                    cs_spec **spec);

/* Run (or resume) the sweep on comm. Every rank calls it with the same
 * spec. Returns CS_OK when every cell of the shard has a final status,
 * CS_ERR_INTERRUPTED when stopped by *stop (results so far are durable),
 * or an error (the same code on every rank; the message on rank 0). */
int sweep_run(MPI_Comm comm, const cs_spec *spec, const sweep_options *opt);

#endif

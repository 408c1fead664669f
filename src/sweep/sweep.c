/* sweep.c — dynamic scheduling of cells over MPI ranks, results to rank 0.
 *
 * Protocol (rank 0 ↔ worker w, all point-to-point on the sweep's comm):
 *   w → 0  TAG_READY    (no payload)        w is idle
 *   0 → w  TAG_CELL     int64 cell id       train this cell
 *   w → 0  TAG_RESULT   packed result       done/failed/diverged; w is idle again
 *   w → 0  TAG_ABORTED  int64 cell id       interrupted mid-cell (not recorded)
 *   0 → w  TAG_STOP     (no payload)        no more work: leave the loop
 * Rank 0 trains cells too; between its own optimisation steps it serves
 * whatever messages have arrived, so dispatch latency is one training step.
 * Results are added to the archive as they arrive and count as done once
 * its journal is synced (group commit, archive_commit; docs/SWEEP.md).
 * Idle ranks poll with 1 ms sleeps instead of blocking in MPI (Open MPI's
 * blocking receives and collectives spin a core): waiting for work, and
 * waiting for rank 0 at the start and the end of the sweep. */
#include "curvsweep/clock.h"
#include "sweep_internal.h"

#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/cell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_READY = 101, TAG_CELL, TAG_RESULT, TAG_ABORTED, TAG_STOP };

/* Worker states as seen by rank 0 (a cell id ≥ 0 means running it). */
enum { W_WAITING = -1, W_STOPPED = -2, W_STARTING = -3 };

#define POLL_SLEEP_NS 1000000L /* 1 ms */
#define POLL_SLEEP_MAX_NS 16000000L /* waits for rank 0 at start and end back off to 16 ms */

static void sleep_ns(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

static void sleep_poll(void) { sleep_ns(POLL_SLEEP_NS); }

/* Wait for the next message from source on comm without spinning a core. */
static int wait_message(MPI_Comm comm, int source, MPI_Status *st) {
  int flag = 0;
  for (;;) {
    CS_MPI(MPI_Iprobe(source, MPI_ANY_TAG, comm, &flag, st));
    if (flag) return CS_OK;
    sleep_poll();
  }
}

/* Broadcast *v from rank 0 of comm; the others wait by polling with
 * sleeps that grow from 1 to 16 ms (a blocking MPI_Bcast spins while rank
 * 0 opens or closes the archive; these waits last seconds, so a few ms of
 * latency cost nothing). */
static int bcast_int_polled(int *v, MPI_Comm comm) {
  MPI_Request req;
  int done = 0;
  long ns = POLL_SLEEP_NS;
  CS_MPI(MPI_Ibcast(v, 1, MPI_INT, 0, comm, &req));
  for (;;) {
    CS_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return CS_OK;
    sleep_ns(ns);
    if (ns < POLL_SLEEP_MAX_NS) ns *= 2;
  }
}

/* ------------------------------------------------------------ teams */

/* A rank's team (docs/SWEEP.md): T = P·Q consecutive ranks train one cell
 * together through la. The team's first rank (its leader) takes part in
 * the scheduling; the others follow: they run the same cell on the same
 * team, and at every optimisation step the leader broadcasts whether to
 * stop, so the team stays in lock-step. */
typedef struct {
  la_team *team;       /* NULL for 1×1 */
  MPI_Comm comm;       /* the team's communicator (MPI_COMM_NULL for 1×1) */
  int T;               /* ranks per team */
  train_hooks inner;   /* the leader's own between-steps work */
  double synth_s_per_flop; /* > 0: synthetic cells (synthetic.c) of cost × this seconds */
} team_ctx;

/* One cell on this rank's part of the team: trained, or synthetic. */
static int team_cell(const team_ctx *tc, const cs_config *cfg, int64_t id, const cell_options *copt,
                     const train_hooks *h, cs_cell_result *r) {
  if (tc->synth_s_per_flop > 0)
    return sweep_synthetic_cell(cfg, id, sweep_cell_cost(cfg) * tc->synth_s_per_flop, h, r);
  return cell_run(cfg, id, copt, tc->team, h, r);
}

static int team_leader_hook(void *ctx) {
  team_ctx *tc = ctx;
  int rc = tc->inner.between_steps ? tc->inner.between_steps(tc->inner.ctx) : CS_OK;
  if (tc->T > 1) {
    int stop = rc != CS_OK;
    CS_MPI(MPI_Bcast(&stop, 1, MPI_INT, 0, tc->comm));
  }
  return rc;
}

static int team_follower_hook(void *ctx) {
  team_ctx *tc = ctx;
  int stop;
  CS_MPI(MPI_Bcast(&stop, 1, MPI_INT, 0, tc->comm));
  return stop ? cs_error(CS_ERR_INTERRUPTED, "stopped by the team leader") : CS_OK;
}

/* Leader: run cell id on the whole team (followers are told first). */
static int team_run_cell(team_ctx *tc, const cs_spec *spec, int64_t id, const cell_options *copt,
                         train_hooks inner, cs_cell_result *r) {
  for (int f = 1; f < tc->T; f++) CS_MPI(MPI_Send(&id, 1, MPI_INT64_T, f, TAG_CELL, tc->comm));
  cs_config cfg;
  memset(r, 0, sizeof *r);
  CS_CHECK(spec_cell_config(spec, id, &cfg));
  tc->inner = inner;
  train_hooks h = {team_leader_hook, tc};
  return team_cell(tc, &cfg, id, copt, &h, r);
}

/* Leader: no more cells; followers leave their loop. */
static int team_release(team_ctx *tc) {
  for (int f = 1; f < tc->T; f++) CS_MPI(MPI_Send(NULL, 0, MPI_BYTE, f, TAG_STOP, tc->comm));
  return CS_OK;
}

/* Follower: run whatever cell the leader announces, until STOP. The result
 * is the leader's to report. */
static int team_follower_loop(team_ctx *tc, const cs_spec *spec) {
  cell_options copt = {spec_sweep(spec)->save_points, spec_sweep(spec)->save_params};
  train_hooks h = {team_follower_hook, tc};
  for (;;) {
    MPI_Status st;
    CS_CHECK(wait_message(tc->comm, 0, &st));
    if (st.MPI_TAG == TAG_STOP) {
      CS_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_STOP, tc->comm, MPI_STATUS_IGNORE));
      return CS_OK;
    }
    int64_t id;
    CS_MPI(MPI_Recv(&id, 1, MPI_INT64_T, 0, TAG_CELL, tc->comm, MPI_STATUS_IGNORE));
    cs_config cfg;
    cs_cell_result r;
    memset(&r, 0, sizeof r);
    if (spec_cell_config(spec, id, &cfg) == CS_OK) team_cell(tc, &cfg, id, &copt, &h, &r);
    result_free(&r);
  }
}

/* ------------------------------------------------------------ rank 0 */

typedef struct {
  MPI_Comm comm;
  int size;
  const cs_spec *spec;
  const sweep_options *opt;
  cs_archive *archive;
  int64_t *queue; /* cell ids to run, longest first */
  int64_t q_head, q_len;
  int *attempts;        /* per cell id */
  int64_t *busy;        /* per rank: cell id being run, or a W_* state */
  unsigned char *stop_sent; /* per rank: a STOP is on its way */
  int outstanding;      /* workers with a cell */
  int stopping;         /* no more dispatch */
  int64_t total, run_now;
  double t0, work_s;    /* start; sum of wall_s this invocation */
  double archive_s;     /* time in archive_add_result and archive_commit */
  double serve_s;       /* time serving messages and recording results (archive writes) */
  double longest_s;     /* longest wall_s of a cell run this invocation */
  double *cost;         /* per cell id: sweep_cell_cost, for the ETA (sweep_plan.c) */
  double done_cost;     /* cost of the cells whose wall_s is in work_s */
  int64_t own;          /* the cell rank 0 runs itself, or -1 */
  double eta_t, eta_s;  /* when the ETA was last computed, and its value */
  int max_retries;
  team_ctx *tc;         /* rank 0's team */
  sweep_reuse *reuse;   /* gate-independent cells trained once (sweep_reuse.c) */
  int error;            /* an error raised while serving inside rank 0's own cell */
  char error_text[1024];
} master;

static void report_progress(master *M) {
  if (!M->opt->progress) return;
  int64_t sel, done, failed, diverged;
  archive_counts(M->archive, &sel, &done, &failed, &diverged);
  sweep_progress p = {.total = M->total, .done = done + failed + diverged, .run_now = M->run_now,
                      .failed = failed + diverged, .elapsed_s = cs_monotonic_seconds() - M->t0, .eta_s = NAN,
                      .archive_s = M->archive_s, .work_s = M->work_s, .serve_s = M->serve_s,
                      .longest_s = M->longest_s};
  // the ETA: the longest-first schedule of the cells left (queued and in
  // flight) at the rate measured so far, the model of run --dry-run
  // (sweep_eta_seconds); recomputed at most once a second
  double now = cs_monotonic_seconds();
  if (M->run_now > 0 && (now - M->eta_t >= 1.0 || p.done >= p.total || isnan(M->eta_s))) {
    int64_t *inflight = malloc((size_t)M->size * sizeof *inflight);
    int ni = 0;
    for (int w = 1; inflight && w < M->size; w++)
      if (M->busy[w] >= 0) inflight[ni++] = M->busy[w];
    if (inflight && M->own >= 0) inflight[ni++] = M->own;
    M->eta_s = inflight ? sweep_eta_seconds(M->cost, inflight, ni, M->queue + M->q_head,
                                            M->q_len - M->q_head, M->size, M->done_cost, M->work_s)
                        : NAN;
    M->eta_t = now;
    free(inflight);
  }
  if (isfinite(M->eta_s)) p.eta_s = fmax(0.0, M->eta_s - (now - M->eta_t));
  M->opt->progress(M->opt->progress_ctx, &p);
}

/* Group commit: results added so far become durable (done) when the
 * archive syncs its journal; forced at the end. */
static int master_commit(master *M, int force) {
  double t = cs_monotonic_seconds();
  int64_t durable = 0;
  int rc = archive_commit(M->archive, force, &durable);
  M->archive_s += cs_monotonic_seconds() - t;
  CS_CHECK(rc);
  if (durable > 0) {
    M->run_now += durable;
    report_progress(M);
  }
  return CS_OK;
}

static int master_reuse(master *M, const cs_cell_result *r);

/* A finished result: retry failures (errors) up to max_retries, else added
 * to the archive (done at the next master_commit). */
static int master_accept(master *M, cs_cell_result *r) {
  int64_t id = r->cell_id;
  r->attempts = ++M->attempts[id];
  if (r->status == CELL_FAILED && M->attempts[id] <= M->max_retries && !M->stopping) {
    M->queue[--M->q_head] = id; /* run it again next (q_head > 0: it was taken) */
    return CS_OK;
  }
  double t = cs_monotonic_seconds();
  CS_CHECK(archive_add_result(M->archive, r));
  M->archive_s += cs_monotonic_seconds() - t;
  M->work_s += r->wall_s;
  M->done_cost += M->cost[id];
  if (r->wall_s > M->longest_s) M->longest_s = r->wall_s;
  return master_reuse(M, r);
}

/* The followers of r's cell (docs/SWEEP.md, "Cells that do not depend on
 * gate"): a finished result is theirs too, recorded under their ids with
 * wall_s 0 (no training of their own); after a failure they are queued to
 * train themselves. */
static int master_reuse(master *M, const cs_cell_result *r) {
  int G = sweep_reuse_gate_values(M->reuse);
  if (G == 0 || sweep_reuse_rep(M->reuse, r->cell_id) >= 0) return CS_OK;
  int64_t *ids = NULL;
  unsigned char *buf = NULL;
  size_t len;
  int k = 0, copy = 0, rc = CS_CALLOC(ids, G);
  if (!rc) {
    k = sweep_reuse_followers(M->reuse, r->cell_id, ids);
    copy = k > 0 && r->status != CELL_FAILED;
    for (int i = 0; !copy && i < k && !M->stopping; i++) M->queue[M->q_len++] = ids[i];
  }
  if (!rc && copy) rc = result_pack(r, &buf, &len);
  double t = cs_monotonic_seconds();
  for (int i = 0; copy && i < k && !rc; i++) {
    cs_cell_result c;
    rc = result_unpack(buf, len, &c);
    if (rc) break;
    c.cell_id = ids[i], c.wall_s = 0.0;
    rc = archive_add_result(M->archive, &c);
    result_free(&c);
  }
  if (copy) M->archive_s += cs_monotonic_seconds() - t;
  free(buf);
  free(ids);
  return rc;
}

static int master_dispatch(master *M, int w) {
  if (M->stopping || M->q_head >= M->q_len) {
    if (!M->stop_sent[w]) CS_MPI(MPI_Send(NULL, 0, MPI_BYTE, w, TAG_STOP, M->comm));
    M->stop_sent[w] = 1;
    M->busy[w] = W_STOPPED;
    return CS_OK;
  }
  int64_t id = M->queue[M->q_head++];
  M->busy[w] = id;
  M->outstanding++;
  CS_MPI(MPI_Send(&id, 1, MPI_INT64_T, w, TAG_CELL, M->comm));
  return CS_OK;
}

static int master_serve_messages(master *M);

/* Serve every message already arrived (non-blocking), then commit; timed. */
static int master_serve(master *M) {
  double t = cs_monotonic_seconds();
  int rc = master_serve_messages(M);
  M->serve_s += cs_monotonic_seconds() - t;
  return rc;
}

static int master_serve_messages(master *M) {
  for (;;) {
    int flag;
    MPI_Status st;
    CS_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, M->comm, &flag, &st));
    if (!flag) return master_commit(M, 0);
    int w = st.MPI_SOURCE;
    if (st.MPI_TAG == TAG_READY) {
      CS_MPI(MPI_Recv(NULL, 0, MPI_BYTE, w, TAG_READY, M->comm, MPI_STATUS_IGNORE));
      M->busy[w] = W_WAITING;
      CS_CHECK(master_dispatch(M, w));
    } else if (st.MPI_TAG == TAG_RESULT) {
      int len;
      CS_MPI(MPI_Get_count(&st, MPI_BYTE, &len));
      unsigned char *buf = NULL;
      cs_cell_result r;
      int rc = cs_calloc_bytes((void **)&buf, len > 0 ? (size_t)len : 1, 1);
      if (!rc)
        rc = la_mpi_check(MPI_Recv(buf, len, MPI_BYTE, w, TAG_RESULT, M->comm, MPI_STATUS_IGNORE),
                          "MPI_Recv of a result");
      if (!rc) rc = result_unpack(buf, (size_t)len, &r);
      free(buf);
      CS_CHECK(rc);
      M->outstanding--;
      M->busy[w] = W_WAITING;
      rc = master_accept(M, &r);
      result_free(&r);
      CS_CHECK(rc);
      CS_CHECK(master_dispatch(M, w));
    } else if (st.MPI_TAG == TAG_ABORTED) {
      int64_t id;
      CS_MPI(MPI_Recv(&id, 1, MPI_INT64_T, w, TAG_ABORTED, M->comm, MPI_STATUS_IGNORE));
      M->outstanding--;
      M->busy[w] = W_WAITING;
      M->stopping = 1; /* a worker was interrupted: the job is being stopped */
      CS_CHECK(master_dispatch(M, w)); /* sends STOP */
    } else {
      return cs_error(CS_ERR_INTERNAL, "unexpected message tag %d from rank %d", st.MPI_TAG, w);
    }
  }
}

/* Enter stopping mode: tell busy workers to abandon their cells. */
static int master_begin_stop(master *M) {
  if (M->stopping == 2) return CS_OK;
  M->stopping = 2;
  for (int w = 1; w < M->size; w++)
    if (M->busy[w] >= 0 && !M->stop_sent[w]) {
      CS_MPI(MPI_Send(NULL, 0, MPI_BYTE, w, TAG_STOP, M->comm));
      M->stop_sent[w] = 1;
    }
  return CS_OK;
}

/* Hook between rank 0's own optimisation steps. */
static int master_between_steps(void *ctx) {
  master *M = ctx;
  if (M->opt->stop && *M->opt->stop) return cs_error(CS_ERR_INTERRUPTED, "interrupted");
  int rc = master_serve(M);
  if (rc) { /* not the cell's fault: remember it so the sweep stops with it */
    M->error = rc;
    snprintf(M->error_text, sizeof M->error_text, "%s", cs_error_message());
  }
  return rc;
}

/* An error inside cell id (not a failure of the sweep): r becomes the
 * record of a failed cell with the error's message, and the sweep goes on. */
static void result_failed(cs_cell_result *r, int64_t id) {
  result_free(r);
  memset(r, 0, sizeof *r);
  r->cell_id = id;
  r->status = CELL_FAILED;
  snprintf(r->message, sizeof r->message, "%s", cs_error_message());
}

/* Rank 0's own cell, trained between serving the workers (master_between_steps),
 * then accepted like a worker's result. An interrupt stops the sweep; an error
 * inside the cell is recorded as failed and the sweep goes on; an error of the
 * serving (M->error) ends the sweep with its message. */
static int master_own_cell(master *M, const cell_options *copt, train_hooks hooks) {
  int64_t id = M->queue[M->q_head++];
  cs_cell_result r;
  M->own = id;
  int rc = team_run_cell(M->tc, M->spec, id, copt, hooks, &r);
  M->own = -1;
  if (M->error) {
    rc = cs_error(M->error, "%s", M->error_text);
  } else if (rc == CS_ERR_INTERRUPTED) {
    M->stopping = 1;
    rc = CS_OK;
  } else {
    if (rc) result_failed(&r, id);
    r.rank = 0;
    double t = cs_monotonic_seconds();
    rc = master_accept(M, &r);
    M->serve_s += cs_monotonic_seconds() - t;
  }
  result_free(&r);
  return rc;
}

static int master_loop(master *M) {
  cell_options copt = {spec_sweep(M->spec)->save_points, spec_sweep(M->spec)->save_params};
  train_hooks hooks = {master_between_steps, M};
  for (;;) {
    if (M->opt->stop && *M->opt->stop) M->stopping = M->stopping ? M->stopping : 1;
    if (M->stopping) CS_CHECK(master_begin_stop(M));
    CS_CHECK(master_serve(M));
    if (!M->stopping && M->q_head < M->q_len) {
      CS_CHECK(master_own_cell(M, &copt, hooks));
      continue;
    }
    if (M->outstanding == 0) break;
    sleep_poll();
  }
  /* release workers still waiting for work */
  for (int w = 1; w < M->size; w++)
    if (M->busy[w] == W_STARTING) {
      /* a worker whose READY has not been served yet: answer STOP */
      MPI_Status st;
      CS_MPI(MPI_Probe(w, TAG_READY, M->comm, &st));
      CS_MPI(MPI_Recv(NULL, 0, MPI_BYTE, w, TAG_READY, M->comm, MPI_STATUS_IGNORE));
      CS_CHECK(master_dispatch(M, w)); /* the queue is empty or stopping: STOP */
    }
  return M->stopping ? cs_error(CS_ERR_INTERRUPTED, "interrupted") : CS_OK;
}

/* After an error on rank 0: stop every worker and drain what they still
 * send (a result that cannot be written is dropped; the cell stays pending
 * and runs again on resume), so every rank reaches the final broadcast. */
static int master_shutdown(master *M) {
  int rc = CS_OK;
  M->stopping = 2;
  for (int w = 1; w < M->size; w++) {
    if (M->busy[w] == W_STOPPED) continue;
    if (!M->stop_sent[w]) {
      CS_MPI(MPI_Send(NULL, 0, MPI_BYTE, w, TAG_STOP, M->comm));
      M->stop_sent[w] = 1;
    }
    if (M->busy[w] == W_WAITING) M->busy[w] = W_STOPPED; /* sends nothing more */
  }
  for (;;) {
    /* starting workers still send READY, running ones RESULT or ABORTED */
    int waiting = 0;
    for (int w = 1; w < M->size; w++) waiting += M->busy[w] != W_STOPPED;
    if (!waiting) return rc;
    int flag;
    MPI_Status st;
    CS_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, M->comm, &flag, &st));
    if (!flag) {
      sleep_poll();
      continue;
    }
    int len;
    CS_MPI(MPI_Get_count(&st, MPI_BYTE, &len));
    unsigned char *buf = NULL;
    int arc = cs_calloc_bytes((void **)&buf, len > 0 ? (size_t)len : 1, 1);
    if (arc) return arc; /* cannot drain: the caller reports it with its own error */
    arc = la_mpi_check(MPI_Recv(buf, len, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, M->comm,
                                MPI_STATUS_IGNORE),
                       "MPI_Recv while stopping the workers");
    free(buf);
    CS_CHECK(arc);
    M->busy[st.MPI_SOURCE] = W_STOPPED; /* it has our STOP next */
  }
}

/* ------------------------------------------------------------ workers */

typedef struct {
  MPI_Comm comm;
  volatile sig_atomic_t *stop;
} worker;

/* Between steps: stop on a local signal or a STOP from rank 0. */
static int worker_between_steps(void *ctx) {
  worker *W = ctx;
  if (W->stop && *W->stop) return cs_error(CS_ERR_INTERRUPTED, "interrupted");
  int flag;
  CS_MPI(MPI_Iprobe(0, TAG_STOP, W->comm, &flag, MPI_STATUS_IGNORE));
  if (flag) return cs_error(CS_ERR_INTERRUPTED, "stopped by rank 0");
  return CS_OK;
}

static int worker_loop(MPI_Comm comm, const cs_spec *spec, volatile sig_atomic_t *stop, int rank,
                       team_ctx *tc) {
  worker W = {comm, stop};
  train_hooks hooks = {worker_between_steps, &W};
  cell_options copt = {spec_sweep(spec)->save_points, spec_sweep(spec)->save_params};
  CS_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, comm));
  for (;;) {
    MPI_Status st;
    CS_CHECK(wait_message(comm, 0, &st));
    if (st.MPI_TAG == TAG_STOP) {
      CS_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_STOP, comm, MPI_STATUS_IGNORE));
      return CS_OK;
    }
    int64_t id;
    CS_MPI(MPI_Recv(&id, 1, MPI_INT64_T, 0, TAG_CELL, comm, MPI_STATUS_IGNORE));
    cs_cell_result r;
    int rc = team_run_cell(tc, spec, id, &copt, hooks, &r);
    if (rc == CS_ERR_INTERRUPTED) {
      result_free(&r);
      CS_MPI(MPI_Send(&id, 1, MPI_INT64_T, 0, TAG_ABORTED, comm));
      continue; /* rank 0 answers with STOP */
    }
    if (rc) result_failed(&r, id);
    r.rank = rank;
    unsigned char *buf;
    size_t len;
    rc = result_pack(&r, &buf, &len);
    result_free(&r);
    CS_CHECK(rc);
    rc = la_mpi_check(MPI_Send(buf, (int)len, MPI_BYTE, 0, TAG_RESULT, comm), "MPI_Send of a result");
    free(buf);
    CS_CHECK(rc);
  }
}

/* ------------------------------------------------------------ setup */

/* Unique host names of all ranks, comma-separated, into out (rank 0). */
static int gather_hosts(MPI_Comm comm, int rank, int size, char *out, size_t len) {
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int nl;
  CS_MPI(MPI_Get_processor_name(name, &nl));
  char *all = NULL;
  /* rank 0's buffer for every name: every rank learns whether it exists
   * before the gather (a NULL receive buffer would be written through) */
  int rc = rank == 0 ? cs_calloc_bytes((void **)&all, (size_t)size, MPI_MAX_PROCESSOR_NAME) : CS_OK;
  int brc = la_mpi_check(MPI_Bcast(&rc, 1, MPI_INT, 0, comm),
                         "MPI_Bcast(&rc, 1, MPI_INT, 0, comm)"); /* CS_MPI's message */
  if (brc)
    rc = brc;
  else if (rc && rank != 0)
    rc = cs_error(rc, "rank 0 is out of memory gathering host names");
  if (!rc)
    rc = la_mpi_check(MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
                                 MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm),
                      "MPI_Gather of the host names");
  if (!rc && rank == 0) {
    out[0] = '\0';
    for (int r = 0; r < size; r++) {
      const char *h = all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
      int seen = 0;
      for (int q = 0; q < r && !seen; q++) seen = !strcmp(h, all + (size_t)q * MPI_MAX_PROCESSOR_NAME);
      if (seen) continue;
      if (out[0] && strlen(out) + 1 < len) strcat(out, ",");
      strncat(out, h, len - strlen(out) - 1);
    }
  }
  free(all);
  return rc;
}

static int master_setup(master *M, MPI_Comm comm, int size, const cs_spec *spec,
                        const sweep_options *opt) {
  memset(M, 0, sizeof *M);
  M->comm = comm, M->size = size, M->spec = spec, M->opt = opt, M->t0 = cs_monotonic_seconds();
  M->max_retries = spec_sweep(spec)->max_retries;
  int64_t n = spec_cell_count(spec);
  unsigned char *mask;
  CS_CHECK(CS_CALLOC(mask, n));
  int rc = sweep_shard_mask(spec, opt->shard_index, opt->shard_count, mask);
  if (!rc)
    rc = archive_open_write(opt->archive_path, spec,
                            opt->overwrite ? ARCHIVE_OVERWRITE : ARCHIVE_RESUME, mask,
                            &M->archive);
  cell_cost *cc = NULL;
  if (!rc) rc = sweep_sorted_cells(spec, &cc);
  if (!rc) rc = CS_CALLOC(M->queue, n);
  if (!rc) rc = CS_CALLOC(M->attempts, n);
  if (!rc) rc = CS_CALLOC(M->busy, size);
  if (!rc) rc = CS_CALLOC(M->stop_sent, size);
  if (!rc) rc = CS_CALLOC(M->cost, n);
  M->own = -1, M->eta_s = NAN;
  if (!rc) { /* mask becomes the cells to run: of the shard, not done or diverged */
    for (int64_t k = 0; k < n; k++) M->cost[cc[k].id] = cc[k].cost;
    for (int64_t id = 0; id < n; id++) {
      if (!mask[id]) continue;
      M->total++;
      cs_cell_status s = archive_cell_status(M->archive, id);
      mask[id] = s != CELL_DONE && s != CELL_DIVERGED;
    }
    rc = sweep_reuse_create(spec, mask, &M->reuse);
  }
  if (!rc) {
    for (int64_t k = 0; k < n; k++) { /* followers wait for their representative */
      int64_t id = cc[k].id;
      if (mask[id] && sweep_reuse_rep(M->reuse, id) < 0) M->queue[M->q_len++] = id;
    }
    for (int w = 0; w < size; w++) M->busy[w] = W_STARTING;
  }
  free(cc);
  free(mask);
  return rc;
}

static void master_teardown(master *M) {
  free(M->queue), free(M->attempts), free(M->busy), free(M->stop_sent), free(M->cost);
  sweep_reuse_free(M->reuse);
}

/* Split comm into teams of the spec's [team] grid; leaders get a
 * communicator of their own for the scheduling protocol. */
static int sweep_make_teams(MPI_Comm comm, const cs_spec *spec, la_team_policy policy,
                            team_ctx *tc, MPI_Comm *leaders,
                            int *p, int *q) {
  tc->team = NULL;
  tc->synth_s_per_flop = 0;
  tc->comm = MPI_COMM_NULL;
  *leaders = MPI_COMM_NULL;
  int rank, size;
  CS_MPI(MPI_Comm_rank(comm, &rank));
  CS_MPI(MPI_Comm_size(comm, &size));
  cs_config c0;
  CS_CHECK(spec_cell_config(spec, 0, &c0));
  *p = c0.team_p, *q = c0.team_q;
  tc->T = *p * *q;
  if (size % tc->T != 0)
    return cs_error(CS_ERR_INPUT,
                    "%s: [team] grid = %dx%d needs a multiple of %d ranks, this job has %d; "
                    "start it with mpirun -np %d (or a multiple), or change the grid",
                    spec_source(spec), *p, *q, tc->T, size, tc->T * (size / tc->T > 0 ? size / tc->T : 1));
  if (tc->T > 1) {
    CS_MPI(MPI_Comm_split(comm, rank / tc->T, rank, &tc->comm));
    CS_CHECK(la_comm_errors_return(tc->comm));
    CS_CHECK(la_team_create(tc->comm, *p, *q, c0.team_block, &tc->team));
    la_team_set_policy(tc->team, policy);
  }
  CS_MPI(MPI_Comm_split(comm, rank % tc->T == 0 ? 0 : MPI_UNDEFINED, rank, leaders));
  if (*leaders != MPI_COMM_NULL) CS_CHECK(la_comm_errors_return(*leaders));
  return CS_OK;
}

static void sweep_free_teams(team_ctx *tc, MPI_Comm *leaders) {
  if (tc->team) la_team_free(tc->team);
  /* cleanup: a failure to free a communicator leaves nothing to do */
  if (tc->comm != MPI_COMM_NULL) (void)MPI_Comm_free(&tc->comm);
  if (*leaders != MPI_COMM_NULL) (void)MPI_Comm_free(leaders);
}

/* Synthetic cells: seconds per flop so that the mean cell of the spec takes
 * opt->synthetic_mean_s (rank 0 computes it, every rank gets it). */
static int sweep_synthetic_scale(MPI_Comm comm, int rank, const cs_spec *spec,
                                 const sweep_options *opt, team_ctx *tc) {
  double scale = 0;
  if (rank == 0) {
    double sum = 0;
    int64_t n = spec_cell_count(spec);
    for (int64_t i = 0; i < n; i++) {
      cs_config cfg;
      if (spec_cell_config(spec, i, &cfg) == CS_OK) sum += sweep_cell_cost(&cfg);
    }
    scale = sum > 0 ? opt->synthetic_mean_s * n / sum : 0;
  }
  CS_MPI(MPI_Bcast(&scale, 1, MPI_DOUBLE, 0, comm));
  tc->synth_s_per_flop = scale;
  return CS_OK;
}

int sweep_run(MPI_Comm comm, const cs_spec *spec, const sweep_options *opt) {
  int rank, size;
  CS_MPI(MPI_Comm_rank(comm, &rank));
  CS_MPI(MPI_Comm_size(comm, &size));
  cs_run_info run = opt->run;
  CS_CHECK(gather_hosts(comm, rank, size, run.hosts, sizeof run.hosts)); /* the same on every rank */

  team_ctx tc;
  MPI_Comm leaders;
  int p = 1, q = 1;
  int rc = sweep_make_teams(comm, spec, opt->team_policy, &tc, &leaders, &p, &q);
  if (!rc && opt->synthetic_mean_s > 0) rc = sweep_synthetic_scale(comm, rank, spec, opt, &tc);
  if (rc) { /* the same on every rank: every rank returns it */
    sweep_free_teams(&tc, &leaders);
    return rc;
  }
  int nteams = size / tc.T;

  /* rank 0 opens the archive; everyone learns whether that worked */
  master M;
  memset(&M, 0, sizeof M);
  if (rank == 0) {
    rc = master_setup(&M, leaders, nteams, spec, opt);
    M.tc = &tc;
    if (!rc) {
      run.ranks = size;
      snprintf(run.team, sizeof run.team, "%dx%d", p, q);
      if (opt->shard_count > 1)
        snprintf(run.shard, sizeof run.shard, "%d/%d", opt->shard_index, opt->shard_count);
      cs_utc_now(run.start, sizeof run.start, 0);
      run.end[0] = '\0';
      rc = archive_begin_run(M.archive, &run);
    }
  }
  int setup_rc = rc;
  CS_CHECK(bcast_int_polled(&setup_rc, comm));
  if (setup_rc) {
    if (rank == 0) {
      if (M.archive) archive_close(M.archive);
      master_teardown(&M);
    }
    sweep_free_teams(&tc, &leaders);
    return rank == 0 ? rc : cs_error(setup_rc, "rank 0 could not start the sweep");
  }

  if (rank != 0) {
    if (leaders == MPI_COMM_NULL) {
      rc = team_follower_loop(&tc, spec);
    } else {
      cs_first_error first = {0};
      cs_first_error_note(&first, worker_loop(leaders, spec, opt->stop, rank, &tc));
      cs_first_error_note(&first, team_release(&tc));
      rc = cs_first_error_end(&first);
    }
    int final;
    int brc = bcast_int_polled(&final, comm);
    if (!rc) rc = brc;
    sweep_free_teams(&tc, &leaders);
    if (rc) return rc;
    return final == CS_OK ? CS_OK : cs_error(final, "sweep ended with an error on rank 0");
  }

  // the end of the run: every step runs, the first failure is the one reported
  report_progress(&M);
  cs_first_error first = {0};
  cs_first_error_note(&first, master_loop(&M));
  cs_first_error_note(&first, master_commit(&M, 1));  /* what was added is done */
  if (first.rc && first.rc != CS_ERR_INTERRUPTED && master_shutdown(&M) != CS_OK) {
    size_t used = strlen(first.message);
    snprintf(first.message + used, sizeof first.message - used,
             " (and stopping the other ranks failed: %s)", cs_error_message());
  }
  cs_first_error_note(&first, team_release(&tc));
  cs_utc_now(run.end, sizeof run.end, 0);
  run.cells_run = M.run_now;
  cs_first_error_note(&first, archive_end_run(M.archive, &run));
  cs_first_error_note(&first, archive_close(M.archive));
  master_teardown(&M);
  rc = cs_first_error_end(&first);
  int final = rc;
  int brc = bcast_int_polled(&final, comm);
  sweep_free_teams(&tc, &leaders);
  return rc ? rc : brc;
}

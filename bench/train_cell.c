/* bench/train_cell.c — seconds and GFLOP/s of training the reference cell
 * (gated, depth 4, width 16, 3 slots, circles, 2048 points, batch 256,
 * 100 epochs) against its PyTorch peer (bench/peer_train_cell.py), the
 * same at width 128 against the single-core dgemm rate, and where the time
 * goes. Not a test: prints numbers and ratios.
 *
 *   OPENBLAS_NUM_THREADS=1 build/bench_train_cell [pairs w16] [pairs w128] [pairs self] [pairs lm]
 *
 * Every comparison is interleaved (bench/interleave.h, issue 29): pair p
 * trains the cell once, then (reference cell) the PyTorch peer once, then
 * measures the dgemm rate (1024³ through la, best of 3), so both sides of
 * a pair see the same machine; a shared machine changes speed 2× within
 * minutes, which single timings one after the other turn into ratios
 * anywhere from 8.5× to 19×. Reported: per pair, then the median of the
 * per-pair ratios with their min–max, on the wall clock and on cpu time
 * (the thread's for curvsweep and dgemm, the peer process's for PyTorch:
 * what other processes' turns on a shared core do not inflate). Absolute
 * times carry the CPU model and the BLAS kernel beside them. Defaults: 5
 * pairs each (BENCH_MIN_PAIRS); a count of 0 skips that cell.
 *
 * The PyTorch peer runs as one child process (posix_spawn of
 * /usr/bin/python3 bench/peer_train_cell.py --serve, asked over a pipe for
 * one training per pair), only when that python imports torch (Debian:
 * apt-get install --no-install-recommends python3-torch); otherwise the
 * bench says it is skipped and why. Environment: BENCH_PEER the script
 * (default: ../bench/ beside this binary's directory, then ./bench/),
 * BENCH_PEER=none to skip it, BENCH_PYTHON the interpreter,
 * BENCH_PEER_W128=1 to interleave the peer with the width-128 cell too.
 * Beside it (issue 40) the batched peer bench/peer_batched.py trains
 * BENCH_SEEDS seeds (default 8; 0 leaves it out) of the same cell as one
 * model with stacked parameters, once per pair after the one-model peer;
 * its time per cell (total / seeds) gives the second ratio of every cell
 * with a peer (BENCH_PEER_BATCHED: another script, or none). The self
 * cell's one-model peer is bench/peer_train_cell.py --family self.
 *
 * Cell runs have the timers off (this binary links curvsweep_core_prof,
 * whose timers cost one predictable branch per region when off). The
 * breakdown comes from up to 3 more runs with the timers on (the fastest;
 * two clock reads per region): GEMM (every la_gemm), element-wise (biases,
 * gate, activations, LayerNorm, residuals, loss; the lm family's embedding
 * gathers and sums too), softmax (attention softmax forward and backward),
 * optimizer (gradient zeroing and Adam), token products (the self family's
 * per-point Q Kᵀ and P V, forward and backward; the lm family's causal
 * attention per sequence and head, its softmax included), other (the rest:
 * batch gathering, shuffles, evaluation bookkeeping, calls).
 * Third cell (issue 12): the self-attention reference cell (family self,
 * gated at g1, depth 4, width 16, 2 heads, same data and schedule); its
 * GFLOP/s counts the la products, as for the memory cells (the per-point
 * token products are loops outside la, docs/DECISIONS.md).
 * Fourth cell (issue 25): the reference LM cell (family lm, bigram-backcopy
 * V = T = 32, width 32, 2 heads, depth 2, mlp_ratio 4, gated g1, batch 32
 * sequences, lr 1e-3, 1,000 steps) against its PyTorch peer
 * bench/peer_lm_cell.py (BENCH_PEER_LM: another script, or none).
 *
 *   OPENBLAS_NUM_THREADS=1 build/bench_train_cell 0 0 0 [pairs lm]
 *
 * Targets: width 16 ≤ 0.12 s (issue 15); the reference cell's median
 * ratio against PyTorch ≥ 12×, width 128 ≥ 80% of dgemm executed (issue 29);
 * the LM cell's ≥ 3× (issue 25); the reference cell's against the batched
 * peer per cell ≥ 3× (issue 40). */
#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/model.h"
#include "curvsweep/tasks.h"
#include "curvsweep/train.h"
#include "interleave.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_PAIRS 64
#define PROF_RUNS 3

/* ------------------------------------------------------- the PyTorch peer */

typedef struct {
  pid_t pid;
  FILE *to, *from;
  char ready[1024]; /* its "ready" line: torch version, threads, dtype */
} peer_proc;

/* Spawn python with args (NULL-terminated, argv[0] included); its stdin
 * and stdout on pipes when to/from are not NULL, else /dev/null (and its
 * stderr too when both are). The pipes are close-on-exec: the child keeps
 * only its dup2'd ends. */
static int spawn_python(char *const argv[], FILE **to, FILE **from, pid_t *pid) {
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if ((to && pipe2(in, O_CLOEXEC)) || (from && pipe2(out, O_CLOEXEC)))
    return cs_error(CS_ERR_IO, "bench: pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (to) {
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  } else {
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  }
  if (from) {
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  }
  if (!to && !from) posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  int rc = posix_spawn(pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (to) close(in[0]);
  if (from) close(out[1]);
  if (rc) {
    if (to) close(in[1]);
    if (from) close(out[0]);
    return cs_error(CS_ERR_IO, "bench: spawning %s: %s", argv[0], strerror(rc));
  }
  if (to) *to = fdopen(in[1], "w");
  if (from) *from = fdopen(out[0], "r");
  return CS_OK;
}

/* The peer script `name` (peer_train_cell, peer_lm_cell or peer_batched):
 * $env (BENCH_PEER, BENCH_PEER_LM or BENCH_PEER_BATCHED), else ../bench/NAME.py from this binary's directory,
 * else ./bench/NAME.py. */
static void peer_script(const char *name, const char *env_name, char *buf, size_t len) {
  const char *env = getenv(env_name);
  if (env && *env) {
    snprintf(buf, len, "%s", env);
    return;
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    snprintf(buf, len, "%s/../bench/%s.py", dirname(exe), name);
    if (access(buf, R_OK) == 0) return;
  }
  snprintf(buf, len, "bench/%s.py", name);
}

/* Record why the peer is skipped: *skipped = 1, why = the message. */
__attribute__((format(printf, 4, 5))) static int peer_skip(int *skipped, char *why, size_t len,
                                                           const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, len, fmt, ap);
  va_end(ap);
  *skipped = 1;
  return CS_OK;
}

/* Start the peer of `family` (memory, self or lm) at width w, the batched
 * peer of `seeds` seeds when seeds > 0 (bench/peer_batched.py), and wait
 * for its ready line; *skipped = 1 (and why) when it cannot run here. An
 * error code only for the bench's own failures. */
static int peer_start(const char *family, int width, int seeds, peer_proc *p, int *skipped,
                      char *why, size_t len) {
  memset(p, 0, sizeof *p);
  *skipped = 0;
  const char *python = getenv("BENCH_PYTHON") ? getenv("BENCH_PYTHON") : "/usr/bin/python3";
  int lm = strcmp(family, "lm") == 0;
  const char *name = seeds > 0 ? "peer_batched" : lm ? "peer_lm_cell" : "peer_train_cell";
  const char *env = seeds > 0 ? "BENCH_PEER_BATCHED" : lm ? "BENCH_PEER_LM" : "BENCH_PEER";
  char script[4096], wtext[16], stext[16], ready[64];
  peer_script(name, env, script, sizeof script);
  if (strcmp(script, "none") == 0) return peer_skip(skipped, why, len, "%s=none", env);
  if (access(python, X_OK))
    return peer_skip(skipped, why, len, "%s is not an executable (%s)", python, strerror(errno));
  if (access(script, R_OK))
    return peer_skip(skipped, why, len, "no peer script %s (set BENCH_PEER)", script);
  char *probe[] = {(char *)python, "-c", "import torch", NULL};
  pid_t pid;
  int status = 1;
  CS_CHECK(spawn_python(probe, NULL, NULL, &pid));
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status))
    return peer_skip(skipped, why, len,
                     "%s cannot import torch (Debian: apt-get install --no-install-recommends "
                     "python3-torch)", python);
  snprintf(wtext, sizeof wtext, "%d", width);
  snprintf(stext, sizeof stext, "%d", seeds);
  snprintf(ready, sizeof ready, "%s ready ", name);
  /* one-model: [--family self]; batched: --family F --seeds E */
  char *argv[10] = {(char *)python, script, "--serve", "--width", wtext}, **arg = argv + 5;
  if (seeds > 0 || strcmp(family, "self") == 0) *arg++ = "--family", *arg++ = (char *)family;
  if (seeds > 0) *arg++ = "--seeds", *arg++ = stext;
  *arg = NULL;
  CS_CHECK(spawn_python(argv, &p->to, &p->from, &p->pid));
  if (p->to && p->from && fgets(p->ready, sizeof p->ready, p->from) &&
      strncmp(p->ready, ready, strlen(ready)) == 0) {
    p->ready[strcspn(p->ready, "\n")] = '\0';
    memmove(p->ready, p->ready + strlen(ready), strlen(p->ready + strlen(ready)) + 1);
    return CS_OK;
  }
  if (p->to) fclose(p->to);
  if (p->from) fclose(p->from);
  waitpid(p->pid, &status, 0);
  p->pid = 0;
  return peer_skip(skipped, why, len, "the peer (%s %s) did not start: see its stderr above",
                   python, script);
}

static double field(const char *line, const char *key) {
  const char *s = strstr(line, key);
  return s ? strtod(s + strlen(key), NULL) : -1.0;
}

/* One training of the peer: its own wall and cpu seconds and test accuracy. */
static int peer_train(peer_proc *p, double *wall, double *cpu, double *acc) {
  char line[2048];
  if (fputs("train\n", p->to) == EOF || fflush(p->to) || !fgets(line, sizeof line, p->from))
    return cs_error(CS_ERR_IO, "bench: the PyTorch peer stopped answering");
  *wall = field(line, " wall_s="), *cpu = field(line, " cpu_s="), *acc = field(line, " test_acc=");
  if (!strstr(line, " status=done") || *wall <= 0 || *cpu <= 0)
    return cs_error(CS_ERR_IO, "bench: the PyTorch peer answered: %s", line);
  return CS_OK;
}

static void peer_stop(peer_proc *p) {
  if (!p->pid) return;
  fclose(p->to); /* end of its input: it exits */
  fclose(p->from);
  int status;
  waitpid(p->pid, &status, 0);
  p->pid = 0;
}

/* ------------------------------------------------------------- the cells */

typedef struct {
  cs_config cfg;
  cs_dataset tr, te;
  double model_gflop;
  int pairs;
  double wall[MAX_PAIRS], cpu[MAX_PAIRS], flops[MAX_PAIRS], acc[MAX_PAIRS];
  peer_proc *peer; /* NULL: no peer side */
  double peer_wall[MAX_PAIRS], peer_cpu[MAX_PAIRS], peer_acc[MAX_PAIRS];
  peer_proc *batched; /* NULL: no batched peer; else per cell of its `seeds` (issue 40) */
  int seeds;
  double bat_wall[MAX_PAIRS], bat_cpu[MAX_PAIRS], bat_acc[MAX_PAIRS];
  bench_dgemm dgemm[MAX_PAIRS];
  double prof_total, prof[LA_PROF_KINDS];
} cell_bench;

static int train_once(const cell_bench *b, double *wall, double *cpu, uint64_t *flops,
                      double *acc) {
  cs_model *M;
  CS_CHECK(model_create(&b->cfg, NULL, &M));
  cs_cell_result res = {0};
  la_flop_reset();
  double t0 = cs_monotonic_seconds(), c0 = bench_thread_cpu_seconds();
  int rc = train_model(M, &b->cfg, &b->tr, &b->te, NULL, &res);
  *wall = cs_monotonic_seconds() - t0, *cpu = bench_thread_cpu_seconds() - c0;
  *flops = la_flop_count();
  *acc = res.test_acc;
  result_free(&res);
  model_free(M);
  return rc;
}

static int cell_side(void *ctx, int p) {
  cell_bench *b = ctx;
  uint64_t flops;
  CS_CHECK(train_once(b, &b->wall[p], &b->cpu[p], &flops, &b->acc[p]));
  b->flops[p] = (double)flops;
  return CS_OK;
}

/* The PyTorch side of a pair: the one-model peer, then the batched peer. */
static int peer_side(void *ctx, int p) {
  cell_bench *b = ctx;
  if (b->peer) CS_CHECK(peer_train(b->peer, &b->peer_wall[p], &b->peer_cpu[p], &b->peer_acc[p]));
  if (b->batched) CS_CHECK(peer_train(b->batched, &b->bat_wall[p], &b->bat_cpu[p], &b->bat_acc[p]));
  return CS_OK;
}

/* family self: the self-attention reference cell (gated at g1, 2 heads);
 * family lm: the reference LM cell of issue 25 (bigram-backcopy, V = T =
 * 32, width 32, 2 heads, depth 2, mlp_ratio 4, gated g1, batch 32
 * sequences, Adam lr 1e-3, 10 epochs of 3,200 sequences = 1,000 steps,
 * evaluated on the 3,200 and 512 test sequences at the end). */
static int cell_setup(int width, cs_family family, cell_bench *b) {
  cs_config c = config_default();
  c.arch = ARCH_GATED, c.depth = 4, c.width = width, c.slots = 3, c.task = TASK_CIRCLES;
  c.train_points = 2048, c.batch = 256, c.epochs = 100;
  if (family == FAMILY_SELF) c.family = FAMILY_SELF, c.gate = GATE_G1, c.heads = 2;
  if (family == FAMILY_LM) {
    c.family = FAMILY_LM, c.gate = GATE_G1, c.task = TASK_BIGRAM_BACKCOPY;
    c.vocab = 32, c.seq_len = 32, c.width = width, c.heads = 2, c.depth = 2, c.mlp_ratio = 4;
    c.train_points = 3200, c.test_points = 512, c.batch = 32, c.epochs = 10, c.eval_every = 10;
    c.lr = 1e-3, c.norm = NORM_NONE, c.residual = 0;
  }
  b->cfg = c;
  if (family == FAMILY_LM) {
    CS_CHECK(task_generate_sequences(c.task, c.vocab, c.seq_len, c.train_points, 0, SPLIT_TRAIN,
                                     &b->tr));
    CS_CHECK(task_generate_sequences(c.task, c.vocab, c.seq_len, c.test_points, 0, SPLIT_TEST,
                                     &b->te));
  } else {
    CS_CHECK(task_generate(c.task, 2, c.train_points, 0, SPLIT_TRAIN, 0, &b->tr));
    CS_CHECK(task_generate(c.task, 2, c.test_points, 0, SPLIT_TEST, 0, &b->te));
  }
  /* model FLOPs: the textbook forward pass (docs/MODELS.md; the count the
   * cost estimate of run --dry-run uses) 3× per trained point (forward,
   * and backward to activations and to weights), 1× per evaluated point;
   * a point of the lm family is a sequence */
  int evals = c.epochs / c.eval_every + (c.epochs % c.eval_every != 0);
  double points = 3.0 * c.epochs * c.train_points + (double)evals * (c.train_points + c.test_points);
  b->model_gflop = model_forward_flops_per_point(&c) * points / 1e9;
  return CS_OK;
}

/* The interleaved pairs, then the timed runs of the breakdown. */
static int cell_run(cell_bench *b, const char *label) {
  bench_pair_opts o = {.pairs = b->pairs, .dgemm_n = 1024, .dgemm_reps = 3, .label = label};
  CS_CHECK(bench_interleave(&o, cell_side, b, b->peer || b->batched ? peer_side : NULL, b,
                            b->dgemm));
  b->prof_total = 1e30;
  for (int k = 0; k < (b->pairs < PROF_RUNS ? b->pairs : PROF_RUNS); k++) {
    double wall, cpu, acc, prof[LA_PROF_KINDS];
    uint64_t flops;
    la_prof_reset();
    la_prof_enable(1);
    int rc = train_once(b, &wall, &cpu, &flops, &acc);
    la_prof_enable(0);
    CS_CHECK(rc);
    la_prof_seconds(prof);
    if (wall < b->prof_total) b->prof_total = wall, memcpy(b->prof, prof, sizeof prof);
  }
  return CS_OK;
}

static void spread_line(const char *what, const char *fmt, const double *v, int n) {
  char text[160];
  bench_spread_text(text, sizeof text, fmt, bench_spread_of(v, n));
  printf("  %s %s\n", what, text);
}

static void cell_report(const cell_bench *b, const char *title, const char *machine) {
  int P = b->pairs;
  double rate[MAX_PAIRS], cpu_rate[MAX_PAIRS], frac[MAX_PAIRS], cpu_frac[MAX_PAIRS];
  double model_frac[MAX_PAIRS], ratio[MAX_PAIRS], cpu_ratio[MAX_PAIRS], dg[MAX_PAIRS];
  double bat_ratio[MAX_PAIRS], bat_cpu_ratio[MAX_PAIRS];
  printf("%s: %d interleaved pair%s (cell%s%s, dgemm)", title, P, P == 1 ? "" : "s",
         b->peer ? ", PyTorch peer" : "", b->batched ? ", batched PyTorch peer" : "");
  if (P < BENCH_MIN_PAIRS)
    printf(" (fewer than %d: the spread is indicative only)", BENCH_MIN_PAIRS);
  printf("\n");
  for (int p = 0; p < P; p++) {
    rate[p] = b->flops[p] / b->wall[p] / 1e9, cpu_rate[p] = b->flops[p] / b->cpu[p] / 1e9;
    frac[p] = 100 * rate[p] / b->dgemm[p].gflops;
    cpu_frac[p] = 100 * cpu_rate[p] / b->dgemm[p].cpu_gflops;
    model_frac[p] = 100 * b->model_gflop / b->wall[p] / b->dgemm[p].gflops;
    dg[p] = b->dgemm[p].gflops;
    printf("  pair %d: curvsweep %.3f s (cpu %.3f s, %.2f GFLOP/s)", p + 1, b->wall[p], b->cpu[p],
           rate[p]);
    if (b->peer) {
      ratio[p] = b->peer_wall[p] / b->wall[p], cpu_ratio[p] = b->peer_cpu[p] / b->cpu[p];
      printf(", PyTorch %.3f s (cpu %.3f s), ratio %.1fx (cpu %.1fx)", b->peer_wall[p],
             b->peer_cpu[p], ratio[p], cpu_ratio[p]);
    }
    if (b->batched) {
      bat_ratio[p] = b->bat_wall[p] / b->wall[p], bat_cpu_ratio[p] = b->bat_cpu[p] / b->cpu[p];
      printf(", batched PyTorch %.3f s per cell (cpu %.3f s), ratio %.1fx (cpu %.1fx)",
             b->bat_wall[p], b->bat_cpu[p], bat_ratio[p], bat_cpu_ratio[p]);
    }
    printf(", dgemm %.2f GFLOP/s (cpu %.2f)\n", b->dgemm[p].gflops, b->dgemm[p].cpu_gflops);
  }
  char text[160];
  bench_spread_text(text, sizeof text, "%.3f s", bench_spread_of(b->wall, P));
  printf("  curvsweep wall %s [%s], test acc %.3f\n", text, machine, b->acc[0]);
  spread_line("curvsweep thread cpu", "%.3f s", b->cpu, P);
  if (b->peer) {
    bench_spread_text(text, sizeof text, "%.3f s", bench_spread_of(b->peer_wall, P));
    printf("  PyTorch wall %s [%s], test acc %.3f\n", text, machine, b->peer_acc[0]);
    spread_line("PyTorch process cpu", "%.3f s", b->peer_cpu, P);
    spread_line("ratio PyTorch / curvsweep, wall:", "%.1fx", ratio, P);
    spread_line("ratio PyTorch / curvsweep, cpu: ", "%.1fx", cpu_ratio, P);
  }
  if (b->batched) {
    bench_spread_text(text, sizeof text, "%.3f s", bench_spread_of(b->bat_wall, P));
    printf("  batched PyTorch (%d seeds as one model) wall per cell %s [%s], mean test acc %.3f\n",
           b->seeds, text, machine, b->bat_acc[0]);
    spread_line("batched PyTorch process cpu per cell", "%.3f s", b->bat_cpu, P);
    spread_line("ratio batched PyTorch per cell / curvsweep, wall:", "%.1fx", bat_ratio, P);
    spread_line("ratio batched PyTorch per cell / curvsweep, cpu: ", "%.1fx", bat_cpu_ratio, P);
  }
  spread_line("dgemm (1024^3, best of 3 per pair) GFLOP/s:", "%.2f", dg, P);
  spread_line("executed GFLOP/s:", "%.2f", rate, P);
  spread_line("executed, % of the pair's dgemm, wall:", "%.1f%%", frac, P);
  spread_line("executed, % of the pair's dgemm, cpu: ", "%.1f%%", cpu_frac, P);
  printf("  in model FLOPs (%.2f GFLOP: the textbook forward 3x per trained point, 1x per "
         "evaluated point):\n", b->model_gflop);
  spread_line("  % of the pair's dgemm, wall:", "%.1f%%", model_frac, P);
  static const char *names[LA_PROF_KINDS] = {"GEMM", "element-wise", "softmax", "optimizer",
                                             "token products"};
  double other = b->prof_total;
  printf("  breakdown (timed run, %.3f s):", b->prof_total);
  for (int k = 0; k < LA_PROF_KINDS; k++) {
    printf(" %s %.1f%%,", names[k], 100 * b->prof[k] / b->prof_total);
    other -= b->prof[k];
  }
  printf(" other %.1f%%\n", 100 * other / b->prof_total);
}

int main(int argc, char **argv) {
  enum { NCELLS = 4 };
  int pairs[NCELLS] = {BENCH_MIN_PAIRS, BENCH_MIN_PAIRS, BENCH_MIN_PAIRS, BENCH_MIN_PAIRS};
  for (int i = 0; i < NCELLS && i + 1 < argc; i++) pairs[i] = atoi(argv[i + 1]);
  for (int i = 0; i < NCELLS; i++)
    if (pairs[i] < 0 || pairs[i] > MAX_PAIRS) {
      fprintf(stderr, "usage: bench_train_cell [pairs w16] [pairs w128] [pairs self] [pairs lm] "
                      "(0 to %d each)\n", MAX_PAIRS);
      return 2;
    }
  signal(SIGPIPE, SIG_IGN); /* a dead peer is an error, not a signal */
  int widths[NCELLS] = {16, 128, 16, 32};
  cs_family family[NCELLS] = {FAMILY_MEMORY, FAMILY_MEMORY, FAMILY_SELF, FAMILY_LM};
  const char *kernel = la_blas_kernel();
  char machine[320];
  bench_machine_tag(machine, sizeof machine);
  bench_print_machine();
  if (strcmp(kernel, "Prescott") == 0)
    printf("BLAS kernel %s: OpenBLAS's generic fallback: on an AVX-512 or AVX2 CPU set "
           "OPENBLAS_CORETYPE=SkylakeX or Haswell, docs/DECISIONS.md\n", kernel);
  if (!la_prof_compiled()) printf("timers not compiled in: no breakdown\n");
  const char *w128_peer = getenv("BENCH_PEER_W128");
  /* BENCH_SEEDS: the batched peer's seeds (issue 40); 0 leaves it out */
  const char *seeds_env = getenv("BENCH_SEEDS");
  char *end = NULL;
  long bench_seeds = seeds_env && *seeds_env ? strtol(seeds_env, &end, 10) : 8;
  if ((end && *end) || bench_seeds < 0 || bench_seeds > 4096) {
    fprintf(stderr, "bench_train_cell: BENCH_SEEDS=%s: not a count of seeds (0 to 4096)\n",
            seeds_env);
    return 2;
  }
  for (int i = 0; i < NCELLS; i++) {
    if (pairs[i] < 1) continue;
    cell_bench *b = calloc(1, sizeof *b);
    if (!b || cell_setup(widths[i], family[i], b)) {
      fprintf(stderr, "bench: %s\n", b ? cs_error_message() : "out of memory");
      return 1;
    }
    b->pairs = pairs[i];
    peer_proc peer = {0}, batched = {0};
    int lm = family[i] == FAMILY_LM;
    const char *fam = lm ? "lm" : family[i] == FAMILY_SELF ? "self" : "memory";
    if (family[i] != FAMILY_MEMORY || widths[i] == 16 || (w128_peer && *w128_peer == '1')) {
      /* the one-model peer, then (seeds > 0) the batched peer of issue 40 */
      for (int k = 0; k < 2; k++) {
        char why[512];
        int skipped, seeds = k ? (int)bench_seeds : 0;
        peer_proc *pp = k ? &batched : &peer;
        if (k && seeds < 1) break;
        if (peer_start(fam, widths[i], seeds, pp, &skipped, why, sizeof why)) {
          fprintf(stderr, "bench: %s\n", cs_error_message());
          return 1;
        }
        if (skipped) {
          printf("PyTorch %speer (%s width %d) skipped: %s\n", k ? "batched " : "", fam,
                 widths[i], why);
          continue;
        }
        printf("PyTorch %speer (%s width %d): %s\n", k ? "batched " : "", fam, widths[i],
               pp->ready);
        if (k) b->batched = pp, b->seeds = seeds;
        else b->peer = pp;
      }
    }
    char title[256], label[64];
    if (lm)
      snprintf(title, sizeof title,
               "lm gated g1 depth 2 width 32 2 heads mlp_ratio 4, bigram-backcopy V 32 T 32, "
               "3200 seqs, batch 32, lr 1e-3, 1000 steps");
    else
      snprintf(title, sizeof title,
               "%s gated%s depth 4 width %d%s, circles, 2048 pts, batch 256, 100 epochs",
               family[i] == FAMILY_SELF ? "self-attention" : "memory",
               family[i] == FAMILY_SELF ? " g1" : "", widths[i],
               family[i] == FAMILY_SELF ? " 2 heads" : "");
    snprintf(label, sizeof label, "bench_train_cell %s width %d",
             lm ? "lm" : family[i] == FAMILY_SELF ? "self" : "memory", widths[i]);
    int rc = cell_run(b, label);
    peer_stop(&peer);
    peer_stop(&batched);
    if (rc) {
      fprintf(stderr, "bench: %s\n", cs_error_message());
      return 1;
    }
    cell_report(b, title, machine);
    fflush(stdout);
    task_dataset_free(&b->tr), task_dataset_free(&b->te);
    free(b);
  }
  printf("before (issue 15): width 16 0.255 s, 18 GFLOP/s (35%% of dgemm); "
         "width 128 7.24 s (70%% of dgemm)\n");
  printf("targets: width 16 <= 0.12 s (issue 15); reference cell median ratio against PyTorch "
         ">= 12x, width 128 >= 80%% of dgemm executed (issue 29); lm cell median ratio against "
         "PyTorch >= 3x (issue 25); reference cell median ratio against the batched PyTorch peer "
         ">= 3x per cell (issue 40)\n");
  return 0;
}

/* main.c — the curvsweep command line: dispatch to subcommands. */
#include "cli.h"

#include "curvsweep/archive.h"
#include "curvsweep/error.h"
#include "curvsweep/geom.h"
#include "curvsweep/la.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} command;

static const command COMMANDS[] = {
    {"run", cmd_run, "run or resume a sweep over MPI ranks into an HDF5 archive"},
    {"train", cmd_train, "train one cell of a spec and print its metrics and curvature"},
    {"check", cmd_check, "list every error of a spec (with --set overrides), or its size"},
    {"info", cmd_info, "spec, grid size and done/pending/failed counts of an archive"},
    {"merge", cmd_merge, "combine shard archives of one sweep"},
    {"analyze", cmd_analyze, "depth-amplification report (CSV tables, plots, index.md) of archives"},
    {"export", cmd_export, "an archive's tables as CSV files (cells, curvature, curves)"},
    {"verify", cmd_verify, "run the theory checks of the geometry engine as a table"},
};
#define N_COMMANDS (int)(sizeof COMMANDS / sizeof COMMANDS[0])

static void print_usage(FILE *f) {
  fprintf(f,
          "curvsweep %s — sweeps of gated vs ungated attention and the curvature of their\n"
          "representations\n\n"
          "usage: curvsweep COMMAND [ARGS]\n"
          "       curvsweep --help | --version\n\ncommands:\n",
          CS_VERSION);
  for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
  fprintf(f, "\n'curvsweep COMMAND --help' describes one command.\n"
             "Exit status: 0 success, 1 run-time failure, 2 usage or spec error.\n");
}

/* Length of the well-formed UTF-8 character at s[0..n) (1-4), 0 when s does
 * not start one (a stray continuation byte, an overlong form, a surrogate,
 * past U+10FFFF, or cut short); *cp its code point. */
static size_t utf8_char(const unsigned char *s, size_t n, unsigned *cp) {
  static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
  size_t len = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2
             : s[0] >= 0xE0 && s[0] <= 0xEF ? 3 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
  if (len == 0 || len > n) return 0;
  unsigned c = len == 1 ? s[0] : s[0] & (0x7Fu >> len);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    c = c << 6 | (s[i] & 0x3Fu);
  }
  if (c < min[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
  *cp = c;
  return len;
}

/* text (n bytes) as a terminal may show it (docs/SECURITY.md, "Terminal
 * output"): every byte of a C0 control (but a final newline), DEL, a C1
 * control (U+0080..U+009F, which terminals obey like ESC sequences) or of
 * anything that is not well-formed UTF-8 is written as \xHH; well-formed
 * characters from U+00A0 on pass as they are. */
static void cli_put_escaped(FILE *f, const char *text, size_t n) {
  const unsigned char *s = (const unsigned char *)text;
  int newline = n > 0 && s[n - 1] == '\n';
  size_t end = n - (size_t)newline;
  for (size_t i = 0; i < end;) {
    unsigned cp = 0;
    size_t len = utf8_char(s + i, end - i, &cp);
    int control = len == 0 || cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
    if (len == 0) len = 1;
    for (size_t k = 0; k < len; k++) {
      if (control) fprintf(f, "\\x%02X", s[i + k]);
      else fputc(s[i + k], f);
    }
    i += len;
  }
  if (newline) fputc('\n', f);
}

static void cli_vprint(FILE *f, const char *fmt, va_list ap) {
  char fixed[4096], *text = fixed;
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(fixed, sizeof fixed, fmt, ap);
  if (n >= (int)sizeof fixed && vasprintf(&text, fmt, copy) < 0) text = fixed, n = sizeof fixed - 1;
  va_end(copy);
  if (n > 0) cli_put_escaped(f, text, (size_t)n);
  if (text != fixed) free(text);
}

void cli_print(FILE *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cli_vprint(f, fmt, ap);
  va_end(ap);
}

int cli_fail(int rc) {
  cli_print(stderr, "curvsweep: %s\n", cs_error_message());
  return rc == CS_ERR_INPUT ? EXIT_USAGE : EXIT_RUNTIME;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cli_print(stderr, "curvsweep %s: ", cmd);
  cli_vprint(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(see 'curvsweep %s --help')\n", cmd);
  return EXIT_USAGE;
}

int cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  return 0;
}

int cli_take_set(const char *cmd, int argc, char **argv, int *i, const char **sets, int *n,
                 int print) {
  const char *a = argv[*i];
  if (strncmp(a, "--set=", 6) == 0) {
    sets[(*n)++] = a + 6;
    return 1;
  }
  if (strcmp(a, "--set") != 0) return 0;
  if (*i + 1 >= argc) {
    if (print) cli_usage_error(cmd, "--set needs section.key=value, e.g. --set train.epochs=5");
    return -1;
  }
  sets[(*n)++] = argv[++*i];
  return 1;
}

long long cli_parse_count(const char *s) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < 0) return -1;
  return v;
}

void cli_print_curvature_table(int depth, const geom_stats *c) {
  printf("%-6s %12s %12s %12s %8s %12s %12s %12s %8s %12s %12s %12s %6s %6s\n", "prefix",
         "K_mean", "K_median", "|K|_mean", "K>0", "|Kt|_mean", "|Kh|_mean", "Kh_mean", "aniso",
         "logdet_g", "int_K_dA", "int_|K|dA", "unres", "degen");
  for (int l = 0; l < depth; l++)
    printf("%-6d %12.4e %12.4e %12.4e %8.3f %12.4e %12.4e %12.4e %8.3f %12.4e %12.4e %12.4e "
           "%6.3f %6.3f\n",
           l + 1, c[l].K_mean, c[l].K_median, c[l].K_absmean, c[l].K_fracpos, c[l].Kt_absmean,
           c[l].Kh_absmean, c[l].Kh_mean, c[l].aniso_median, c[l].logdet_mean, c[l].intK,
           c[l].intabsK, c[l].unresolved_frac, c[l].degenerate_frac);
  /* the attention-sink statistic (self, lm; NaN, not shown, for the memory
   * family) and the lm family's other extreme-token statistics */
  if (depth > 0 && isfinite(c[0].sink_mass)) {
    int lm = isfinite(c[0].massive_act);
    printf("%-6s %12s %12s %12s", "prefix", "sink_mass", "max_attn", "sink_headmax");
    if (lm) printf(" %12s %12s %12s", "massive_act", "value_drain", "resid_peak");
    printf("\n");
    for (int l = 0; l < depth; l++) {
      printf("%-6d %12.4f %12.4f %12.4f", l + 1, c[l].sink_mass, c[l].max_attn, c[l].sink_headmax);
      if (lm) printf(" %12.4g %12.4g %12.4g", c[l].massive_act, c[l].value_drain, c[l].resid_peak);
      printf("\n");
    }
  }
}

/* One BLAS thread per process unless the user chose a number: parallelism
 * comes from MPI ranks and teams, and OpenBLAS's own threads would compete
 * with them for the cores (docs/SWEEP.md, "Threads"). The variables are
 * OpenBLAS's own (OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS, OMP_NUM_THREADS). */
static void cli_blas_threads_default(void) {
  static const char *const CHOSEN[] = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                       "OMP_NUM_THREADS"};
  for (size_t i = 0; i < sizeof CHOSEN / sizeof CHOSEN[0]; i++) {
    const char *v = getenv(CHOSEN[i]);
    if (v && *v) return;
  }
  la_blas_set_threads(1);
}

int main(int argc, char **argv) {
  cli_blas_threads_default();
  if (argc < 2) {
    print_usage(stderr);
    return EXIT_USAGE;
  }
  if (strcmp(argv[1], "--version") == 0) {
    int threads = la_blas_threads();
    printf("curvsweep %s\nBLAS: OpenBLAS, kernel %s, %d thread%s per process\n"
           "small products: libxsmm, kernels for %s\n",
           CS_VERSION, la_blas_kernel(), threads, threads == 1 ? "" : "s", la_small_target());
    return EXIT_OK;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    print_usage(stdout);
    return EXIT_OK;
  }
  for (int i = 0; i < N_COMMANDS; i++)
    if (strcmp(argv[1], COMMANDS[i].name) == 0) {
      archive_library_begin();
      int status = COMMANDS[i].run(argc - 1, argv + 1);
      geom_workspace_release(); /* the curvature scratch of this thread */
      la_workspace_release();   /* and la_gemm's transposed-operand scratch */
      archive_library_end();    /* HDF5, unless a damaged file keeps it (archive.h) */
      return status;
    }
  cli_print(stderr, "curvsweep: unknown command '%s'\n", argv[1]);
  fputc('\n', stderr);
  print_usage(stderr);
  return EXIT_USAGE;
}

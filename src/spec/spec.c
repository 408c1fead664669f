/* spec.c — sweep specs (docs/SPEC.md): read the INI text with libinih, validate
 * every key before any work starts, and expand the [grid] axes into cells.
 *
 * Reading. libinih's handler gets no line numbers, so the text goes through
 * our own reader (spec_reader): it is called once per line, counts lines,
 * strips comments and indentation (so inih never sees a "continuation line"
 * or a line longer than its buffer because of a comment), and tracks section
 * headers itself (inih does not report empty sections). The handler then
 * knows the line of every key it is given.
 *
 * Errors. The first error wins and is the only one reported, as
 *   FILE:LINE: [section] key: what is wrong; allowed: what is allowed
 * with "did you mean X?" before "allowed" when a name is close to a valid
 * one. Every spec error is CS_ERR_INPUT.
 *
 * Cells. Axes are kept in [grid] order with their values as written; cell
 * ids are row-major over the axes (first axis slowest). A cell's settings
 * are the base config (defaults + fixed keys) with each axis value applied. */
#include "curvsweep/spec.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <ini.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Sections and keys                                                          */

enum { SEC_SWEEP, SEC_GRID, SEC_TASK, SEC_MODEL, SEC_TRAIN, SEC_CURVATURE, SEC_TEAM, SEC_COUNT };
static const char *const SECTION_NAMES[SEC_COUNT] = {"sweep", "grid",      "task", "model",
                                                     "train", "curvature", "team"};
#define SECTIONS_ALLOWED "sweep, grid, task, model, train, curvature, team"
#define AXES_ALLOWED "arch, depth, task, seed, or any key of [task], [model], [train], [curvature]"
#define SYNTAX_ALLOWED "[section], key = value, a ; or # comment, or a blank line"

typedef enum { KIND_INT, KIND_REAL, KIND_ENUM, KIND_STRING, KIND_TEAM } key_kind;
typedef enum { ENUM_NONE, ENUM_YESNO, ENUM_ARCH, ENUM_TASK, ENUM_NORM, ENUM_SCHEDULE } enum_table;

enum {
  K_NAME, K_OUTPUT, K_SAVE_PARAMS, K_SAVE_POINTS, K_MAX_RETRIES,         /* [sweep] */
  K_ARCH, K_DEPTH, K_TASK, K_SEED,                                       /* [grid] only */
  K_INPUT_DIM, K_TRAIN_POINTS, K_TEST_POINTS, K_LABEL_NOISE,             /* [task] */
  K_WIDTH, K_SLOTS, K_HEADS, K_RESIDUAL, K_NORM,                         /* [model] */
  K_EPOCHS, K_BATCH, K_LR, K_SCHEDULE, K_WEIGHT_DECAY, K_EVAL_EVERY,     /* [train] */
  K_POINTS, K_SIGMA, K_EXACT_DIM_MAX,                                    /* [curvature] */
  K_TEAM_GRID, K_TEAM_BLOCK,                                             /* [team] */
  K_COUNT
};

typedef struct {
  const char *name;
  int section;         /* SEC_GRID for the four keys that exist only as axes */
  key_kind kind;
  enum_table table;    /* KIND_ENUM */
  int64_t imin, imax;  /* KIND_INT: imin <= v <= imax */
  double rmin, rmax;   /* KIND_REAL: rmin <= v <= rmax, or rmin < v when rmin_open */
  int rmin_open;
  size_t maxlen;       /* KIND_STRING: capacity including the NUL */
  int axis_ok;         /* may appear in [grid] */
  const char *allowed; /* what one value may be (enums: generated from the table) */
} key_desc;

static const key_desc KEYS[K_COUNT] = {
    [K_NAME] = {"name", SEC_SWEEP, KIND_STRING, .maxlen = 128,
                .allowed = "a non-empty name of at most 127 characters"},
    [K_OUTPUT] = {"output", SEC_SWEEP, KIND_STRING, .maxlen = 1024,
                  .allowed = "a non-empty path of at most 1023 characters"},
    [K_SAVE_PARAMS] = {"save_params", SEC_SWEEP, KIND_ENUM, ENUM_YESNO},
    [K_SAVE_POINTS] = {"save_points", SEC_SWEEP, KIND_ENUM, ENUM_YESNO},
    [K_MAX_RETRIES] = {"max_retries", SEC_SWEEP, KIND_INT, .imin = 0, .imax = INT_MAX,
                       .allowed = "an integer >= 0"},
    [K_ARCH] = {"arch", SEC_GRID, KIND_ENUM, ENUM_ARCH, .axis_ok = 1},
    [K_DEPTH] = {"depth", SEC_GRID, KIND_INT, .imin = 1, .imax = 64, .axis_ok = 1,
                 .allowed = "an integer in [1, 64]"},
    [K_TASK] = {"task", SEC_GRID, KIND_ENUM, ENUM_TASK, .axis_ok = 1},
    [K_SEED] = {"seed", SEC_GRID, KIND_INT, .imin = 0, .imax = INT64_MAX, .axis_ok = 1,
                .allowed = "an integer >= 0"},
    [K_INPUT_DIM] = {"input_dim", SEC_TASK, KIND_INT, .imin = 1, .imax = 64, .axis_ok = 1,
                     .allowed = "an integer in [1, 64]"},
    [K_TRAIN_POINTS] = {"train_points", SEC_TASK, KIND_INT, .imin = 1, .imax = INT_MAX,
                        .axis_ok = 1, .allowed = "an integer >= 1"},
    [K_TEST_POINTS] = {"test_points", SEC_TASK, KIND_INT, .imin = 1, .imax = INT_MAX,
                       .axis_ok = 1, .allowed = "an integer >= 1"},
    [K_LABEL_NOISE] = {"label_noise", SEC_TASK, KIND_REAL, .rmin = 0.0, .rmax = 0.5,
                       .axis_ok = 1, .allowed = "a real number in [0, 0.5]"},
    [K_WIDTH] = {"width", SEC_MODEL, KIND_INT, .imin = 1, .imax = INT_MAX, .axis_ok = 1,
                 .allowed = "an integer >= 1"},
    [K_SLOTS] = {"slots", SEC_MODEL, KIND_INT, .imin = 1, .imax = INT_MAX, .axis_ok = 1,
                 .allowed = "an integer >= 1"},
    [K_HEADS] = {"heads", SEC_MODEL, KIND_INT, .imin = 1, .imax = INT_MAX, .axis_ok = 1,
                 .allowed = "an integer >= 1 dividing width"},
    [K_RESIDUAL] = {"residual", SEC_MODEL, KIND_ENUM, ENUM_YESNO, .axis_ok = 1},
    [K_NORM] = {"norm", SEC_MODEL, KIND_ENUM, ENUM_NORM, .axis_ok = 1},
    [K_EPOCHS] = {"epochs", SEC_TRAIN, KIND_INT, .imin = 1, .imax = INT_MAX, .axis_ok = 1,
                  .allowed = "an integer >= 1"},
    [K_BATCH] = {"batch", SEC_TRAIN, KIND_INT, .imin = 0, .imax = INT_MAX, .axis_ok = 1,
                 .allowed = "an integer >= 0 (0 = full batch)"},
    [K_LR] = {"lr", SEC_TRAIN, KIND_REAL, .rmin = 0.0, .rmax = HUGE_VAL, .rmin_open = 1,
              .axis_ok = 1, .allowed = "a real number > 0"},
    [K_SCHEDULE] = {"schedule", SEC_TRAIN, KIND_ENUM, ENUM_SCHEDULE, .axis_ok = 1},
    [K_WEIGHT_DECAY] = {"weight_decay", SEC_TRAIN, KIND_REAL, .rmin = 0.0, .rmax = HUGE_VAL,
                        .axis_ok = 1, .allowed = "a real number >= 0"},
    [K_EVAL_EVERY] = {"eval_every", SEC_TRAIN, KIND_INT, .imin = 1, .imax = INT_MAX,
                      .axis_ok = 1, .allowed = "an integer >= 1"},
    [K_POINTS] = {"points", SEC_CURVATURE, KIND_INT, .imin = 1, .imax = INT_MAX, .axis_ok = 1,
                  .allowed = "an integer >= 1"},
    [K_SIGMA] = {"sigma", SEC_CURVATURE, KIND_REAL, .rmin = 0.0, .rmax = HUGE_VAL,
                 .rmin_open = 1, .axis_ok = 1, .allowed = "a real number > 0"},
    [K_EXACT_DIM_MAX] = {"exact_dim_max", SEC_CURVATURE, KIND_INT, .imin = 2, .imax = INT_MAX,
                         .axis_ok = 1, .allowed = "an integer >= 2"},
    [K_TEAM_GRID] = {"grid", SEC_TEAM, KIND_TEAM,
                     .allowed = "PxQ with P, Q >= 1 (e.g. 1x1, 2x2)"},
    [K_TEAM_BLOCK] = {"block", SEC_TEAM, KIND_INT, .imin = 1, .imax = 4096,
                      .allowed = "an integer in [1, 4096]"},
};

/* ------------------------------------------------------------------------ */
/* Enum value tables                                                          */

static const char *const YESNO_NAMES[2] = {"no", "yes"};

static int enum_count(enum_table t) {
  switch (t) {
    case ENUM_YESNO: return 2;
    case ENUM_ARCH: return ARCH_COUNT;
    case ENUM_TASK: return TASK_COUNT;
    case ENUM_NORM: return 2;
    case ENUM_SCHEDULE: return 2;
    default: return 0;
  }
}

static const char *enum_name(enum_table t, int i) {
  switch (t) {
    case ENUM_YESNO: return (i == 0 || i == 1) ? YESNO_NAMES[i] : "?";
    case ENUM_ARCH: return config_arch_name((cs_arch)i);
    case ENUM_TASK: return config_task_name((cs_task_kind)i);
    case ENUM_NORM: return config_norm_name((cs_norm)i);
    case ENUM_SCHEDULE: return config_schedule_name((cs_schedule)i);
    default: return "?";
  }
}

/* "what one value of key may be", into buf */
static const char *key_allowed(int key, char *buf, size_t len) {
  const key_desc *k = &KEYS[key];
  if (k->kind != KIND_ENUM) {
    snprintf(buf, len, "%s", k->allowed);
    return buf;
  }
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < enum_count(k->table); i++)
    used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s", i ? ", " : "",
                             enum_name(k->table, i));
  return buf;
}

/* ------------------------------------------------------------------------ */
/* The parsed spec                                                            */

typedef struct {
  int64_t i;  /* integer keys, enum index, yes/no as 1/0 */
  double r;   /* real keys */
} key_value;

typedef struct {
  int key;         /* K_* */
  int line;        /* line of the axis in [grid] */
  int64_t length;  /* number of values */
  int64_t *ivals;  /* int and enum axes: length values */
  double *rvals;   /* real axes: length values */
} spec_axis;

struct cs_spec {
  char *source;
  char *text;   /* exactly as read, NUL-terminated */
  size_t text_len;
  char sha256[65];
  cs_sweep_settings sweep;
  cs_config base;  /* defaults with every fixed key applied */
  int naxes;
  spec_axis axes[K_COUNT];
  int64_t stride[K_COUNT];  /* cells between consecutive values of an axis */
  int64_t ncells;
};

/* Write one value of key into a cell config or the sweep settings. */
static void apply_value(cs_config *c, cs_sweep_settings *sw, int key, key_value v) {
  switch (key) {
    case K_SAVE_PARAMS: sw->save_params = (int)v.i; break;
    case K_SAVE_POINTS: sw->save_points = (int)v.i; break;
    case K_MAX_RETRIES: sw->max_retries = (int)v.i; break;
    case K_ARCH: c->arch = (cs_arch)v.i; break;
    case K_DEPTH: c->depth = (int)v.i; break;
    case K_TASK: c->task = (cs_task_kind)v.i; break;
    case K_SEED: c->seed = v.i; break;
    case K_INPUT_DIM: c->input_dim = (int)v.i; break;
    case K_TRAIN_POINTS: c->train_points = (int)v.i; break;
    case K_TEST_POINTS: c->test_points = (int)v.i; break;
    case K_LABEL_NOISE: c->label_noise = v.r; break;
    case K_WIDTH: c->width = (int)v.i; break;
    case K_SLOTS: c->slots = (int)v.i; break;
    case K_HEADS: c->heads = (int)v.i; break;
    case K_RESIDUAL: c->residual = (int)v.i; break;
    case K_NORM: c->norm = (cs_norm)v.i; break;
    case K_EPOCHS: c->epochs = (int)v.i; break;
    case K_BATCH: c->batch = (int)v.i; break;
    case K_LR: c->lr = v.r; break;
    case K_SCHEDULE: c->schedule = (cs_schedule)v.i; break;
    case K_WEIGHT_DECAY: c->weight_decay = v.r; break;
    case K_EVAL_EVERY: c->eval_every = (int)v.i; break;
    case K_POINTS: c->points = (int)v.i; break;
    case K_SIGMA: c->sigma = v.r; break;
    case K_EXACT_DIM_MAX: c->exact_dim_max = (int)v.i; break;
    case K_TEAM_BLOCK: c->team_block = (int)v.i; break;
    default: break;  /* name, output, team grid are applied where parsed */
  }
}

/* ------------------------------------------------------------------------ */
/* Parser state and error recording                                         */

typedef struct {
  cs_spec *spec;
  const char *source;
  const char *text;
  size_t len, pos;            /* the text and the reader's position in it */
  int lineno;                 /* line last handed to inih (1-based) */
  int section;                /* current section, -1 before the first header */
  int section_line[SEC_COUNT];
  int fixed_line[K_COUNT];    /* line where a key got a fixed value, 0 if none */
  int axis_line[K_COUNT];     /* line where a key became an axis, 0 if none */
  int err_code, err_line;     /* the first error; err_line 0 = none yet */
} parse_state;

/* Record the first error: "SOURCE:LINE: " + message. Returns 0 (handler failure). */
__attribute__((format(printf, 4, 5)))
static int fail_line(parse_state *st, int code, int line, const char *fmt, ...) {
  char msg[1800];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cs_error(code, "%s:%d: %s", st->source, line, msg);
  st->err_code = code;
  st->err_line = line;
  return 0;
}

/* Same, for a key: "SOURCE:LINE: [section] key: " + message. */
__attribute__((format(printf, 5, 6)))
static int fail_key(parse_state *st, int line, int section, const char *name, const char *fmt, ...) {
  char msg[1700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fail_line(st, CS_ERR_INPUT, line, "[%s] %s: %s", SECTION_NAMES[section], name, msg);
}

/* Text for quoting in a message: at most 60 characters, "..." when cut. */
static const char *clip(const char *s, char buf[72]) {
  size_t n = strlen(s);
  if (n <= 60) return s;
  memcpy(buf, s, 57);
  memcpy(buf + 57, "...", 4);
  return buf;
}

/* ------------------------------------------------------------------------ */
/* "Did you mean": optimal-string-alignment edit distance, case-insensitive   */

static int edit_distance(const char *a, const char *b) {
  // a: n chars, b: m chars; d: (n+1) × (m+1) DP table, row-major
  size_t n = strlen(a), m = strlen(b);
  if (n > 64 || m > 64) return INT_MAX;
  int d[65][65];
  for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
  // d[i][j] = edits turning a[0..i) into b[0..j): delete, insert, substitute,
  // or swap two adjacent characters
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int ai = tolower((unsigned char)a[i - 1]), bj = tolower((unsigned char)b[j - 1]);
      int best = d[i - 1][j - 1] + (ai != bj);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == bj && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[n][m];
}

/* The closest candidate when it is close enough to be a likely typo, else NULL. */
static const char *suggest(const char *word, const char *const *cands, int n) {
  const char *best = NULL;
  int best_d = INT_MAX;
  for (int i = 0; i < n; i++) {
    int d = edit_distance(word, cands[i]);
    int limit = strlen(cands[i]) <= 4 ? 1 : 2;
    if (d <= limit && d < best_d) best = cands[i], best_d = d;
  }
  return best;
}

/* "; did you mean X?" or "" */
static const char *did_you_mean(const char *s, char *buf, size_t len) {
  if (!s) return "";
  snprintf(buf, len, "; did you mean %s?", s);
  return buf;
}

/* Keys of one section (or, for SEC_GRID, every key that may be an axis). */
static int section_keys(int section, const char **names) {
  int n = 0;
  for (int k = 0; k < K_COUNT; k++) {
    int ok = section == SEC_GRID ? KEYS[k].axis_ok : KEYS[k].section == section;
    if (ok) names[n++] = KEYS[k].name;
  }
  return n;
}

static int find_key(int section, const char *name) {
  for (int k = 0; k < K_COUNT; k++) {
    int ok = section == SEC_GRID ? KEYS[k].axis_ok : KEYS[k].section == section;
    if (ok && strcmp(KEYS[k].name, name) == 0) return k;
  }
  return -1;
}

static int find_key_anywhere(const char *name) {
  for (int k = 0; k < K_COUNT; k++)
    if (strcmp(KEYS[k].name, name) == 0) return k;
  return -1;
}

/* ------------------------------------------------------------------------ */
/* Scalars                                                                    */

/* Strict decimal integer: optional sign, digits only. 0 ok, 1 not an
 * integer, 2 does not fit int64. */
static int parse_int64(const char *s, int64_t *out) {
  const char *p = s;
  if (*p == '+' || *p == '-') p++;
  if (!*p) return 1;
  for (const char *q = p; *q; q++)
    if (!isdigit((unsigned char)*q)) return 1;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno == ERANGE) return 2;
  *out = (int64_t)v;
  return 0;
}

/* Strict decimal real: digits, sign, '.', exponent only (no inf, nan, hex);
 * 0 ok, 1 not a number, 2 not finite (overflow). */
static int parse_real(const char *s, double *out) {
  if (!*s) return 1;
  for (const char *q = s; *q; q++)
    if (!isdigit((unsigned char)*q) && !strchr("+-.eE", *q)) return 1;
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end) return 1;
  if (!isfinite(v)) return 2;
  *out = v;
  return 0;
}

/* Parse one value of key (a single element, trimmed) into v; records an
 * error and returns 0 when it is not valid. */
static int parse_scalar(parse_state *st, int line, int section, int key, const char *text,
                        key_value *v) {
  const key_desc *k = &KEYS[key];
  char allowed[256], q[72], dym[96];
  key_allowed(key, allowed, sizeof allowed);
  v->i = 0;
  v->r = 0.0;
  if (k->kind == KIND_INT) {
    int rc = parse_int64(text, &v->i);
    if (rc == 1)
      return fail_key(st, line, section, k->name, "'%s' is not an integer; allowed: %s",
                      clip(text, q), allowed);
    if (rc == 2 || v->i < k->imin || v->i > k->imax)
      return fail_key(st, line, section, k->name, "%s is out of range; allowed: %s",
                      clip(text, q), allowed);
    return 1;
  }
  if (k->kind == KIND_REAL) {
    int rc = parse_real(text, &v->r);
    if (rc == 1)
      return fail_key(st, line, section, k->name, "'%s' is not a number; allowed: %s",
                      clip(text, q), allowed);
    int below = k->rmin_open ? !(v->r > k->rmin) : !(v->r >= k->rmin);
    if (rc == 2 || below || v->r > k->rmax)
      return fail_key(st, line, section, k->name, "%s is out of range; allowed: %s",
                      clip(text, q), allowed);
    return 1;
  }
  if (k->kind == KIND_ENUM) {
    const char *names[16];
    int n = enum_count(k->table);
    for (int i = 0; i < n; i++) {
      names[i] = enum_name(k->table, i);
      if (strcmp(names[i], text) == 0) {
        v->i = i;
        return 1;
      }
    }
    return fail_key(st, line, section, k->name, "unknown value '%s'%s allowed: %s", clip(text, q),
                    *did_you_mean(suggest(text, names, n), dym, sizeof dym) ? dym : ";",
                    allowed);
  }
  return fail_key(st, line, section, k->name, "internal: not a scalar key");
}

/* ------------------------------------------------------------------------ */
/* Reading lines                                                              */

/* The meaningful part [*b, *e) of a raw line (n bytes, no '\n'), as inih
 * would see it: without a UTF-8 BOM on line 1, surrounding whitespace, a
 * whole-line comment (';' or '#') or an inline comment (';' after a space). */
static void line_content(const char *s, size_t n, int first_line, const char **b,
                         const char **e) {
  const char *p = s, *end = s + n;
  if (first_line && n >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
      (unsigned char)p[2] == 0xBF)
    p += 3;
  while (p < end && isspace((unsigned char)*p)) p++;
  if (p < end && (*p == ';' || *p == '#')) end = p;
  // inline comment: ';' preceded by whitespace
  for (const char *q = p + 1; q < end; q++)
    if (*q == ';' && isspace((unsigned char)q[-1])) {
      end = q;
      break;
    }
  while (end > p && isspace((unsigned char)end[-1])) end--;
  *b = p;
  *e = end;
}

/* Line `line` (1-based) of the text, as content, into buf (for messages). */
static const char *line_text(const parse_state *st, int line, char *buf, size_t len) {
  const char *s = st->text, *end = st->text + st->len;
  for (int i = 1; i < line && s < end; i++) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    s = nl ? nl + 1 : end;
  }
  const char *nl = memchr(s, '\n', (size_t)(end - s));
  const char *b, *e;
  line_content(s, nl ? (size_t)(nl - s) : (size_t)(end - s), line == 1, &b, &e);
  size_t n = (size_t)(e - b);
  if (n > 60) {
    snprintf(buf, len, "%.57s...", b);
  } else {
    snprintf(buf, len, "%.*s", (int)n, b);
  }
  return buf;
}

/* A "[name]" line: switch the current section. Returns 0 on error. A line
 * without ']' is left to inih, which reports it as a syntax error. */
static int section_header(parse_state *st, const char *b, const char *e) {
  const char *close = memchr(b, ']', (size_t)(e - b));
  if (!close) return 1;
  char name[72], q[72], dym[96];
  size_t n = (size_t)(close - b - 1);
  snprintf(name, sizeof name, "%.*s", (int)(n < 64 ? n : 64), b + 1);
  if (close + 1 != e) {
    char whole[80];
    return fail_line(st, CS_ERR_INPUT, st->lineno,
                     "syntax error: text after ] in '%s'; allowed: " SYNTAX_ALLOWED,
                     line_text(st, st->lineno, whole, sizeof whole));
  }
  int sec = -1;
  for (int s = 0; s < SEC_COUNT; s++)
    if (n == strlen(SECTION_NAMES[s]) && memcmp(b + 1, SECTION_NAMES[s], n) == 0) sec = s;
  if (sec < 0) {
    const char *best = suggest(name, SECTION_NAMES, SEC_COUNT);
    if (best) snprintf(dym, sizeof dym, "; did you mean [%s]?", best);
    return fail_line(st, CS_ERR_INPUT, st->lineno, "unknown section [%s]%s allowed: " SECTIONS_ALLOWED,
                     clip(name, q), best ? dym : ";");
  }
  if (st->section_line[sec])
    return fail_line(st, CS_ERR_INPUT, st->lineno,
                     "section [%s] appears twice (first at line %d); allowed: each section once",
                     SECTION_NAMES[sec], st->section_line[sec]);
  st->section = sec;
  st->section_line[sec] = st->lineno;
  return 1;
}

/* The ini_reader given to ini_parse_stream: hands inih the next line,
 * cleaned by line_content, and counts lines. NULL ends the parse (at the end
 * of the text, or once an error has been recorded). */
static char *spec_reader(char *str, int num, void *stream) {
  parse_state *st = stream;
  if (st->err_line || st->pos >= st->len) return NULL;
  const char *line = st->text + st->pos;
  const char *nl = memchr(line, '\n', st->len - st->pos);
  size_t n = nl ? (size_t)(nl - line) : st->len - st->pos;
  st->pos += n + (nl ? 1 : 0);
  st->lineno++;
  if (memchr(line, '\0', n)) {
    fail_line(st, CS_ERR_INPUT, st->lineno, "NUL byte in the line; allowed: text");
    return NULL;
  }
  const char *b, *e;
  line_content(line, n, st->lineno == 1, &b, &e);
  size_t m = (size_t)(e - b);
  if (m + 2 > (size_t)num) {
    fail_line(st, CS_ERR_INPUT, st->lineno,
              "line is %zu characters long (without comments); allowed: at most %d", m, num - 2);
    return NULL;
  }
  if (m > 0 && *b == '[' && !section_header(st, b, e)) return NULL;
  memcpy(str, b, m);
  str[m] = '\n';
  str[m + 1] = '\0';
  return str;
}

/* ------------------------------------------------------------------------ */
/* Keys in [sweep], [task], [model], [train], [curvature], [team]             */

static int parse_fixed(parse_state *st, const char *name, const char *value) {
  int sec = st->section, line = st->lineno;
  char allowed[256], keys_allowed[256], q[72], dym[96];
  int key = find_key(sec, name);
  if (key < 0) {
    // the allowed keys of this section, then why this one is not among them
    const char *names[K_COUNT];
    int n = section_keys(sec, names);
    size_t used = 0;
    keys_allowed[0] = '\0';
    for (int i = 0; i < n; i++)
      used += (size_t)snprintf(keys_allowed + used, sizeof keys_allowed - used, "%s%s",
                               i ? ", " : "", names[i]);
    int other = find_key_anywhere(name);
    if (other >= 0 && KEYS[other].section == SEC_GRID)
      return fail_key(st, line, sec, name,
                      "not a [%s] key (it is an axis: set it in [grid]); allowed: %s",
                      SECTION_NAMES[sec], keys_allowed);
    if (other >= 0)
      return fail_key(st, line, sec, name, "not a [%s] key (it belongs in [%s]); allowed: %s",
                      SECTION_NAMES[sec], SECTION_NAMES[KEYS[other].section], keys_allowed);
    const char *best = suggest(name, names, n);
    return fail_key(st, line, sec, clip(name, q), "unknown key%s allowed: %s",
                    best ? did_you_mean(best, dym, sizeof dym) : ";", keys_allowed);
  }
  const key_desc *k = &KEYS[key];
  if (st->fixed_line[key])
    return fail_key(st, line, sec, name,
                    "set twice (first at line %d); allowed: each key once per section",
                    st->fixed_line[key]);
  if (st->axis_line[key])
    return fail_key(st, line, sec, name,
                    "also an axis in [grid] at line %d; allowed: a fixed value here or an axis "
                    "in [grid], not both",
                    st->axis_line[key]);
  key_allowed(key, allowed, sizeof allowed);
  cs_spec *spec = st->spec;
  size_t n = strlen(value);

  // free text: the sweep's name and output path
  if (k->kind == KIND_STRING) {
    if (n == 0) return fail_key(st, line, sec, name, "empty value; allowed: %s", allowed);
    if (n >= k->maxlen)
      return fail_key(st, line, sec, name, "value is %zu characters long; allowed: %s", n,
                      allowed);
    memcpy(key == K_NAME ? spec->sweep.name : spec->sweep.output, value, n + 1);
    st->fixed_line[key] = line;
    return 1;
  }

  // team grid "PxQ"
  if (k->kind == KIND_TEAM) {
    if (n == 0) return fail_key(st, line, sec, name, "empty value; allowed: %s", allowed);
    // P and Q: digits only, on either side of one 'x'
    const char *x = strchr(value, 'x');
    size_t np = x ? (size_t)(x - value) : 0, nq = x ? strlen(x + 1) : 0;
    int ok = np > 0 && nq > 0 && strspn(value, "0123456789") == np &&
             strspn(x + 1, "0123456789") == nq;
    if (!ok)
      return fail_key(st, line, sec, name, "'%s' is not PxQ; allowed: %s", clip(value, q),
                      allowed);
    char p_text[32], q_text[32];
    snprintf(p_text, sizeof p_text, "%.*s", (int)(np < 31 ? np : 31), value);
    snprintf(q_text, sizeof q_text, "%s", x + 1);
    int64_t p = 0, qv = 0;
    if (np > 30 || nq > 30 || parse_int64(p_text, &p) || parse_int64(q_text, &qv) || p < 1 ||
        qv < 1 || p > INT_MAX / qv)
      return fail_key(st, line, sec, name, "%s is out of range; allowed: %s", clip(value, q),
                      allowed);
    spec->base.team_p = (int)p;
    spec->base.team_q = (int)qv;
    st->fixed_line[key] = line;
    return 1;
  }

  // one number or name: lists and ranges belong in [grid]
  if (n == 0) return fail_key(st, line, sec, name, "empty value; allowed: %s", allowed);
  if (strchr(value, ','))
    return fail_key(st, line, sec, name,
                    "'%s' is a list; allowed: one value, %s (lists belong in [grid])",
                    clip(value, q), allowed);
  if (strstr(value, "..") && k->kind == KIND_INT)
    return fail_key(st, line, sec, name,
                    "'%s' is a range; allowed: one value, %s (ranges belong in [grid])",
                    clip(value, q), allowed);
  key_value v;
  if (!parse_scalar(st, line, sec, key, value, &v)) return 0;
  apply_value(&spec->base, &spec->sweep, key, v);
  st->fixed_line[key] = line;
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Axes in [grid]                                                             */

/* Trim an element in place. */
static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

/* Walk the comma list of an axis (list: a writable copy of the value, text:
 * the value as written). Count mode (ivals = rvals = NULL): validate every
 * element and count values into *count. Fill mode: write the values. */
static int axis_elements(parse_state *st, int key, int line, char *list, const char *text,
                         int64_t *ivals, double *rvals, uint64_t *count) {
  const key_desc *k = &KEYS[key];
  int fill = ivals || rvals;
  char allowed[256], list_allowed[400], q[72], q2[72];
  key_allowed(key, allowed, sizeof allowed);
  snprintf(list_allowed, sizeof list_allowed, "a comma list of values%s, each %s",
           k->kind == KIND_INT ? " or integer ranges a..b" : "", allowed);
  uint64_t n = 0;
  int position = 0;
  char *save = NULL;
  // strtok_r would merge ",," so split by hand
  for (char *elem = list; elem; elem = save) {
    char *comma = strchr(elem, ',');
    save = comma ? comma + 1 : NULL;
    if (comma) *comma = '\0';
    position++;
    char *e = trim(elem);
    if (!*e)
      return fail_key(st, line, SEC_GRID, k->name, "empty element %d in '%s'; allowed: %s",
                      position, clip(text, q), list_allowed);
    char *dots = strstr(e, "..");
    if (dots) {
      // integer range a..b, inclusive
      if (k->kind != KIND_INT)
        return fail_key(st, line, SEC_GRID, k->name,
                        "range '%s' on a non-integer key; allowed: a comma list of values, "
                        "each %s",
                        clip(e, q), allowed);
      *dots = '\0';
      char *a_text = trim(e), *b_text = trim(dots + 2);
      int64_t a = 0, b = 0;
      if (!fill) {
        int ra = parse_int64(a_text, &a), rb = parse_int64(b_text, &b);
        if (ra == 1 || rb == 1)
          return fail_key(st, line, SEC_GRID, k->name,
                          "'%s..%s' is not an integer range a..b; allowed: %s", clip(a_text, q),
                          clip(b_text, q2), list_allowed);
        if (ra == 2 || a < k->imin || a > k->imax)
          return fail_key(st, line, SEC_GRID, k->name, "%s is out of range; allowed: %s",
                          clip(a_text, q), allowed);
        if (rb == 2 || b < k->imin || b > k->imax)
          return fail_key(st, line, SEC_GRID, k->name, "%s is out of range; allowed: %s",
                          clip(b_text, q), allowed);
        if (a > b)
          return fail_key(st, line, SEC_GRID, k->name,
                          "range %s..%s is empty (%" PRId64 " > %" PRId64
                          "); allowed: a..b with a <= b",
                          clip(a_text, q), clip(b_text, q2), a, b);
      } else {
        parse_int64(a_text, &a);
        parse_int64(b_text, &b);
      }
      // length b - a + 1 in unsigned arithmetic (seed ranges may span 2^63)
      uint64_t len = (uint64_t)b - (uint64_t)a + 1u;
      if (fill) {
        for (uint64_t i = 0; i < len; i++) ivals[n + i] = a + (int64_t)i;
      }
      n = (len == 0 || n + len < n) ? UINT64_MAX : n + len;  // saturate; the size check refuses it
      continue;
    }
    // a single value
    key_value v;
    if (!fill) {
      if (!parse_scalar(st, line, SEC_GRID, key, e, &v)) return 0;
    } else {
      parse_scalar(st, line, SEC_GRID, key, e, &v);
      if (k->kind == KIND_REAL) rvals[n] = v.r;
      else ivals[n] = v.i;
    }
    if (n != UINT64_MAX) n++;
  }
  *count = n;
  return 1;
}

typedef struct {
  int64_t i;
  double r;
  int64_t pos;  /* position in the axis as written */
} axis_entry;

static int compare_entries_int(const void *a, const void *b) {
  const axis_entry *x = a, *y = b;
  if (x->i != y->i) return x->i < y->i ? -1 : 1;
  return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

static int compare_entries_real(const void *a, const void *b) {
  const axis_entry *x = a, *y = b;
  if (x->r != y->r) return x->r < y->r ? -1 : 1;
  return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

/* Shortest text that reads back as the same double (for messages). */
static void format_real(double x, char *buf, size_t len) {
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, len, "%.*g", prec, x);
    if (strtod(buf, NULL) == x) return;
  }
}

/* Refuse an axis that holds a value twice; names the first repeat in
 * written order. */
static int axis_check_duplicates(parse_state *st, const spec_axis *ax) {
  const key_desc *k = &KEYS[ax->key];
  axis_entry *e;
  if (CS_CALLOC(e, ax->length) != CS_OK)
    return fail_line(st, CS_ERR_NOMEM, ax->line, "out of memory checking an axis");
  // sort (value, position); equal neighbours are repeats, and the repeat
  // with the smallest later position is the first one a reader meets
  for (int64_t i = 0; i < ax->length; i++) {
    e[i].pos = i;
    if (k->kind == KIND_REAL) e[i].r = ax->rvals[i];
    else e[i].i = ax->ivals[i];
  }
  qsort(e, (size_t)ax->length, sizeof *e,
        k->kind == KIND_REAL ? compare_entries_real : compare_entries_int);
  int64_t first_repeat = -1;
  for (int64_t i = 1; i < ax->length; i++) {
    int same = k->kind == KIND_REAL ? e[i].r == e[i - 1].r : e[i].i == e[i - 1].i;
    if (same && (first_repeat < 0 || e[i].pos < first_repeat)) first_repeat = e[i].pos;
  }
  free(e);
  if (first_repeat < 0) return 1;
  char value[64];
  if (k->kind == KIND_REAL) format_real(ax->rvals[first_repeat], value, sizeof value);
  else if (k->kind == KIND_ENUM) snprintf(value, sizeof value, "%s", enum_name(k->table, (int)ax->ivals[first_repeat]));
  else snprintf(value, sizeof value, "%" PRId64, ax->ivals[first_repeat]);
  return fail_key(st, ax->line, SEC_GRID, k->name,
                  "%s appears twice; allowed: each value once per axis", value);
}

static int parse_axis(parse_state *st, const char *name, const char *value) {
  int line = st->lineno;
  char q[72], dym[96];
  int key = find_key(SEC_GRID, name);
  if (key < 0) {
    int other = find_key_anywhere(name);
    if (other >= 0)
      return fail_key(st, line, SEC_GRID, name,
                      "a [%s] key cannot be an axis; allowed: " AXES_ALLOWED,
                      SECTION_NAMES[KEYS[other].section]);
    const char *names[K_COUNT];
    int n = section_keys(SEC_GRID, names);
    const char *best = suggest(name, names, n);
    return fail_key(st, line, SEC_GRID, clip(name, q), "unknown axis%s allowed: " AXES_ALLOWED,
                    best ? did_you_mean(best, dym, sizeof dym) : ";");
  }
  const key_desc *k = &KEYS[key];
  if (st->axis_line[key])
    return fail_key(st, line, SEC_GRID, name,
                    "set twice (first at line %d); allowed: each key once per section",
                    st->axis_line[key]);
  if (st->fixed_line[key])
    return fail_key(st, line, SEC_GRID, name,
                    "also set in [%s] at line %d; allowed: an axis here or a fixed value in "
                    "[%s], not both",
                    SECTION_NAMES[k->section], st->fixed_line[key], SECTION_NAMES[k->section]);
  if (!*value) {
    char allowed[256];
    return fail_key(st, line, SEC_GRID, name,
                    "empty axis; allowed: a comma list of values%s, each %s",
                    k->kind == KIND_INT ? " or integer ranges a..b" : "",
                    key_allowed(key, allowed, sizeof allowed));
  }

  // pass 1: validate the elements and count the values
  size_t vlen = strlen(value);
  char *list;
  if (CS_CALLOC(list, vlen + 1) != CS_OK)
    return fail_line(st, CS_ERR_NOMEM, line, "out of memory reading an axis");
  memcpy(list, value, vlen + 1);
  uint64_t count = 0;
  int ok = axis_elements(st, key, line, list, value, NULL, NULL, &count);
  free(list);
  if (!ok) return 0;

  // the grid size with this axis: refuse more than SPEC_MAX_CELLS cells
  // (and products that do not even fit int64) before allocating anything
  cs_spec *spec = st->spec;
  uint64_t cells = (uint64_t)spec->ncells;
  int overflow = count > (uint64_t)INT64_MAX || __builtin_mul_overflow(cells, count, &cells) ||
                 cells > (uint64_t)INT64_MAX;
  if (overflow || cells > SPEC_MAX_CELLS) {
    // the axis lengths so far, "a x b x count"
    char factors[512];
    size_t used = 0;
    for (int a = 0; a < spec->naxes && used < sizeof factors; a++)
      used += (size_t)snprintf(factors + used, sizeof factors - used, "%" PRId64 " x ",
                               spec->axes[a].length);
    if (used < sizeof factors) snprintf(factors + used, sizeof factors - used, "%" PRIu64, count);
    if (overflow)
      return fail_key(st, line, SEC_GRID, name,
                      "the grid would have more than %" PRId64 " cells (%s overflows int64); "
                      "allowed: at most %d cells",
                      INT64_MAX, factors, SPEC_MAX_CELLS);
    if (spec->naxes == 0)
      return fail_key(st, line, SEC_GRID, name,
                      "the grid would have %" PRIu64 " cells; allowed: at most %d cells", cells,
                      SPEC_MAX_CELLS);
    return fail_key(st, line, SEC_GRID, name,
                    "the grid would have %" PRIu64 " cells (%s); allowed: at most %d cells", cells,
                    factors, SPEC_MAX_CELLS);
  }

  // pass 2: store the values
  spec_axis *ax = &spec->axes[spec->naxes];
  ax->key = key;
  ax->line = line;
  ax->length = (int64_t)count;
  int rc = k->kind == KIND_REAL ? CS_CALLOC(ax->rvals, count) : CS_CALLOC(ax->ivals, count);
  if (rc != CS_OK || CS_CALLOC(list, vlen + 1) != CS_OK)
    return fail_line(st, CS_ERR_NOMEM, line, "out of memory storing an axis");
  spec->naxes++;  // owned by spec from here (freed by spec_free)
  memcpy(list, value, vlen + 1);
  axis_elements(st, key, line, list, value, ax->ivals, ax->rvals, &count);
  free(list);
  if (!axis_check_duplicates(st, ax)) return 0;
  spec->ncells = (int64_t)cells;
  st->axis_line[key] = line;
  return 1;
}

/* The libinih handler: one call per key = value line. */
static int spec_handler(void *user, const char *section, const char *name, const char *value) {
  parse_state *st = user;
  (void)section;  // the reader tracks sections (with their lines) itself
  if (st->err_line) return 1;
  if (!*name) {
    char whole[80];
    return fail_line(st, CS_ERR_INPUT, st->lineno,
                     "syntax error: '%s' has no key before '='; allowed: " SYNTAX_ALLOWED,
                     line_text(st, st->lineno, whole, sizeof whole));
  }
  if (st->section < 0) {
    char q[72];
    return fail_line(st, CS_ERR_INPUT, st->lineno,
                     "%s: key outside any section; allowed: keys inside [sweep], [grid], "
                     "[task], [model], [train], [curvature] or [team]",
                     clip(name, q));
  }
  if (st->section == SEC_GRID) return parse_axis(st, name, value);
  return parse_fixed(st, name, value);
}

/* ------------------------------------------------------------------------ */
/* Whole-grid checks (after every key is known)                               */

/* Values a key takes over the grid: the axis values, or the one base value. */
static int64_t key_int_values(const cs_spec *spec, int key, int64_t one, const int64_t **vals,
                              int64_t *single) {
  for (int a = 0; a < spec->naxes; a++)
    if (spec->axes[a].key == key) {
      *vals = spec->axes[a].ivals;
      return spec->axes[a].length;
    }
  *single = one;
  *vals = single;
  return 1;
}

/* Where a key's value comes from, for messages: "[grid] line 4". */
static const char *key_source(const parse_state *st, int key, char *buf, size_t len) {
  if (st->axis_line[key]) snprintf(buf, len, "[grid] line %d", st->axis_line[key]);
  else if (st->fixed_line[key]) snprintf(buf, len, "[%s] line %d", SECTION_NAMES[KEYS[key].section], st->fixed_line[key]);
  else snprintf(buf, len, "the default");
  return buf;
}

/* heads must divide width for every combination of the two. */
static int check_heads_divide_width(parse_state *st) {
  const cs_spec *spec = st->spec;
  const int64_t *widths, *heads;
  int64_t w_one, h_one;
  int64_t nw = key_int_values(spec, K_WIDTH, spec->base.width, &widths, &w_one);
  int64_t nh = key_int_values(spec, K_HEADS, spec->base.heads, &heads, &h_one);
  for (int64_t i = 0; i < nw; i++)
    for (int64_t j = 0; j < nh; j++) {
      if (widths[i] % heads[j] == 0) continue;
      // list the divisors of this width (at most 12) as the allowed heads
      char divisors[256], src[64];
      size_t used = 0;
      int shown = 0;
      for (int64_t d = 1; d <= widths[i] && used < sizeof divisors; d++) {
        if (widths[i] % d) continue;
        if (shown == 12) {
          snprintf(divisors + used, sizeof divisors - used, ", ...");
          break;
        }
        used += (size_t)snprintf(divisors + used, sizeof divisors - used, "%s%" PRId64,
                                 shown ? ", " : "", d);
        shown++;
      }
      int line = st->axis_line[K_HEADS] ? st->axis_line[K_HEADS] : st->fixed_line[K_HEADS];
      return fail_key(st, line, st->axis_line[K_HEADS] ? SEC_GRID : SEC_MODEL, "heads",
                      "%" PRId64 " does not divide width %" PRId64 " (%s); allowed: a divisor "
                      "of the width: %s",
                      heads[j], widths[i], key_source(st, K_WIDTH, src, sizeof src), divisors);
    }
  return 1;
}

/* Every task of the grid must support every input_dim of the grid. */
static int check_task_dims(parse_state *st) {
  const cs_spec *spec = st->spec;
  const int64_t *tasks, *dims;
  int64_t t_one, m_one;
  int64_t nt = key_int_values(spec, K_TASK, spec->base.task, &tasks, &t_one);
  int64_t nm = key_int_values(spec, K_INPUT_DIM, spec->base.input_dim, &dims, &m_one);
  for (int64_t i = 0; i < nt; i++)
    for (int64_t j = 0; j < nm; j++) {
      cs_task_kind task = (cs_task_kind)tasks[i];
      if (task_supports_dim(task, (int)dims[j])) continue;
      // the dimensions 1..64 the task supports, as runs "a..b"
      char ok_dims[256], src[64];
      size_t used = 0;
      ok_dims[0] = '\0';
      for (int d = 1; d <= 64; d++) {
        if (!task_supports_dim(task, d) || (d > 1 && task_supports_dim(task, d - 1))) continue;
        int e = d;
        while (e < 64 && task_supports_dim(task, e + 1)) e++;
        if (e > d)
          used += (size_t)snprintf(ok_dims + used, sizeof ok_dims - used, "%s%d..%d",
                                   used ? ", " : "", d, e);
        else
          used += (size_t)snprintf(ok_dims + used, sizeof ok_dims - used, "%s%d",
                                   used ? ", " : "", d);
      }
      if (!used) snprintf(ok_dims, sizeof ok_dims, "none");
      const char *tname = config_task_name(task);
      int dim_line = st->axis_line[K_INPUT_DIM] ? st->axis_line[K_INPUT_DIM]
                                                : st->fixed_line[K_INPUT_DIM];
      if (dim_line)
        return fail_key(st, dim_line, st->axis_line[K_INPUT_DIM] ? SEC_GRID : SEC_TASK,
                        "input_dim",
                        "%" PRId64 " is not supported by task %s (%s); allowed with %s: %s",
                        dims[j], tname, key_source(st, K_TASK, src, sizeof src), tname, ok_dims);
      if (st->axis_line[K_TASK])
        return fail_key(st, st->axis_line[K_TASK], SEC_GRID, "task",
                        "%s does not support input_dim %" PRId64
                        " (the default); allowed with %s: input_dim %s",
                        tname, dims[j], tname, ok_dims);
      cs_error(CS_ERR_INTERNAL, "%s: the default task %s does not support the default "
               "input_dim %" PRId64, st->source, tname, dims[j]);
      st->err_code = CS_ERR_INTERNAL;
      return 0;
    }
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                    */

void spec_free(cs_spec *spec) {
  if (!spec) return;
  for (int a = 0; a < spec->naxes; a++) {
    free(spec->axes[a].ivals);
    free(spec->axes[a].rvals);
  }
  free(spec->text);
  free(spec->source);
  free(spec);
}

/* Parse text (len bytes) named source into a new spec. */
static int spec_load_bytes(const char *text, size_t len, const char *source, cs_spec **out) {
  *out = NULL;
  cs_spec *spec;
  CS_CHECK(CS_CALLOC(spec, 1));
  int rc = CS_CALLOC(spec->text, len + 1);
  if (rc == CS_OK) rc = CS_CALLOC(spec->source, strlen(source) + 1);
  if (rc != CS_OK) {
    spec_free(spec);
    return rc;
  }
  // keep the text exactly as read, and its fingerprint
  memcpy(spec->text, text, len);
  spec->text_len = len;
  memcpy(spec->source, source, strlen(source) + 1);
  spec_sha256_hex(spec->text, len, spec->sha256);
  // defaults of docs/SPEC.md
  spec->base = config_default();
  snprintf(spec->sweep.name, sizeof spec->sweep.name, "depth-amplification");
  snprintf(spec->sweep.output, sizeof spec->sweep.output, "results/demo.h5");
  spec->sweep.save_params = 0;
  spec->sweep.save_points = 0;
  spec->sweep.max_retries = 1;
  spec->ncells = 1;

  // parse: inih drives our reader and handler; the first error wins
  parse_state st = {.spec = spec, .source = spec->source, .text = spec->text, .len = len,
                    .section = -1};
  int r = ini_parse_stream(spec_reader, &st, spec_handler, &st);
  if (r < 0) {
    spec_free(spec);
    return cs_error(r == -2 ? CS_ERR_NOMEM : CS_ERR_INTERNAL, "%s: libinih failed (%d)",
                    source, r);
  }
  if (r > 0 && (st.err_line == 0 || r < st.err_line)) {
    // a line inih could not read: a header without ']' or a line without '='
    char whole[80];
    line_text(&st, r, whole, sizeof whole);
    if (whole[0] == '[')
      fail_line(&st, CS_ERR_INPUT, r,
                "syntax error: '%s' has no closing ]; allowed: " SYNTAX_ALLOWED, whole);
    else
      fail_line(&st, CS_ERR_INPUT, r,
                "syntax error: '%s' is not key = value; allowed: " SYNTAX_ALLOWED, whole);
  }
  // constraints between keys, over every combination of axis values
  if (!st.err_line && check_heads_divide_width(&st)) check_task_dims(&st);
  if (st.err_code) {
    spec_free(spec);
    return st.err_code;
  }

  // strides of the row-major numbering: the last axis varies fastest
  int64_t stride = 1;
  for (int a = spec->naxes - 1; a >= 0; a--) {
    spec->stride[a] = stride;
    stride *= spec->axes[a].length;
  }
  *out = spec;
  return CS_OK;
}

int spec_load_string(const char *text, const char *source, cs_spec **out) {
  if (!out) return cs_error(CS_ERR_INTERNAL, "spec_load_string: out is NULL");
  *out = NULL;
  if (!text) return cs_error(CS_ERR_INTERNAL, "spec_load_string: text is NULL");
  return spec_load_bytes(text, strlen(text), source ? source : "<string>", out);
}

#define SPEC_MAX_BYTES (16u << 20)

int spec_load_file(const char *path, cs_spec **out) {
  if (!out) return cs_error(CS_ERR_INTERNAL, "spec_load_file: out is NULL");
  *out = NULL;
  if (!path) return cs_error(CS_ERR_INTERNAL, "spec_load_file: path is NULL");
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused
  // below); a directory, FIFO, socket or device is never a spec
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return cs_error(CS_ERR_INPUT, "%s: cannot open spec: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return cs_error(CS_ERR_INPUT, "%s: cannot open spec: %s", path, strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    if (S_ISDIR(st.st_mode)) return cs_error(CS_ERR_INPUT, "%s: cannot read spec: %s", path, strerror(EISDIR));
    return cs_error(CS_ERR_INPUT, "%s: cannot read spec: not a regular file (a %s)", path,
                    S_ISFIFO(st.st_mode) ? "FIFO" : S_ISSOCK(st.st_mode) ? "socket"
                    : "device or other special file");
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int err = errno;
    close(fd);
    return cs_error(CS_ERR_NOMEM, "%s: cannot open spec: %s", path, strerror(err));
  }
  // read the whole file, growing the buffer
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf) {
    fclose(f);
    return cs_error(CS_ERR_NOMEM, "%s: out of memory reading spec", path);
  }
  for (;;) {
    if (len == cap) {
      if (cap >= SPEC_MAX_BYTES) {
        free(buf);
        fclose(f);
        return cs_error(CS_ERR_INPUT, "%s: spec is larger than %u bytes; allowed: at most %u bytes",
                        path, SPEC_MAX_BYTES, SPEC_MAX_BYTES);
      }
      char *bigger = realloc(buf, cap * 2);
      if (!bigger) {
        free(buf);
        fclose(f);
        return cs_error(CS_ERR_NOMEM, "%s: out of memory reading spec", path);
      }
      buf = bigger;
      cap *= 2;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  int read_error = ferror(f) ? errno : 0;
  fclose(f);
  if (read_error) {
    free(buf);
    return cs_error(CS_ERR_INPUT, "%s: cannot read spec: %s", path, strerror(read_error));
  }
  int rc = spec_load_bytes(buf, len, path, out);
  free(buf);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Accessors                                                                  */

const cs_sweep_settings *spec_sweep(const cs_spec *spec) { return &spec->sweep; }
const char *spec_text(const cs_spec *spec) { return spec->text; }
const char *spec_sha256(const cs_spec *spec) { return spec->sha256; }
const char *spec_source(const cs_spec *spec) { return spec->source; }
int64_t spec_cell_count(const cs_spec *spec) { return spec->ncells; }
int spec_axis_count(const cs_spec *spec) { return spec->naxes; }

static int axis_ok(const cs_spec *spec, int axis) { return axis >= 0 && axis < spec->naxes; }

const char *spec_axis_name(const cs_spec *spec, int axis) {
  return axis_ok(spec, axis) ? KEYS[spec->axes[axis].key].name : NULL;
}

cs_axis_type spec_axis_type(const cs_spec *spec, int axis) {
  if (!axis_ok(spec, axis)) return (cs_axis_type)-1;
  switch (KEYS[spec->axes[axis].key].kind) {
    case KIND_INT: return SPEC_AXIS_INT;
    case KIND_REAL: return SPEC_AXIS_REAL;
    default: return SPEC_AXIS_STRING;
  }
}

int spec_axis_length(const cs_spec *spec, int axis) {
  return axis_ok(spec, axis) ? (int)spec->axes[axis].length : -1;
}

int spec_find_axis(const cs_spec *spec, const char *name) {
  for (int a = 0; a < spec->naxes; a++)
    if (strcmp(KEYS[spec->axes[a].key].name, name) == 0) return a;
  return -1;
}

int64_t spec_axis_value_index(const cs_spec *spec, int axis, int64_t cell_id) {
  if (!axis_ok(spec, axis) || cell_id < 0 || cell_id >= spec->ncells) return -1;
  // row-major: the cell's digit for this axis
  return (cell_id / spec->stride[axis]) % spec->axes[axis].length;
}

int spec_cell_config(const cs_spec *spec, int64_t cell_id, cs_config *out) {
  if (cell_id < 0 || cell_id >= spec->ncells)
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 " is out of range; allowed: 0..%" PRId64,
                    spec->source, cell_id, spec->ncells - 1);
  // base settings, then each axis's value at this cell
  cs_config c = spec->base;
  cs_sweep_settings unused = spec->sweep;
  for (int a = 0; a < spec->naxes; a++) {
    const spec_axis *ax = &spec->axes[a];
    int64_t idx = (cell_id / spec->stride[a]) % ax->length;
    key_value v = {0, 0.0};
    if (ax->rvals) v.r = ax->rvals[idx];
    else v.i = ax->ivals[idx];
    apply_value(&c, &unused, ax->key, v);
  }
  *out = c;
  return CS_OK;
}

/* The shortest %.Ng (N = 1..17) that reads back as exactly the same double:
 * 3e-3 prints as "0.003", not "0.0030000000000000001". */
static int format_shortest_real(char *buf, size_t len, double v) {
  int n = 0;
  for (int prec = 1; prec <= 17; prec++) {
    n = snprintf(buf, len, "%.*g", prec, v);
    if (n < 0 || (size_t)n >= len || strtod(buf, NULL) == v) break;
  }
  return n;
}

int spec_axis_value_text(const cs_spec *spec, int axis, int64_t cell_id, char *buf, size_t len) {
  int64_t idx = spec_axis_value_index(spec, axis, cell_id);
  if (idx < 0)
    return cs_error(CS_ERR_INPUT, "%s: no value for axis %d at cell %" PRId64 "; allowed: axis "
                    "0..%d, cell 0..%" PRId64, spec->source, axis, cell_id, spec->naxes - 1,
                    spec->ncells - 1);
  const spec_axis *ax = &spec->axes[axis];
  const key_desc *k = &KEYS[ax->key];
  int n;
  if (k->kind == KIND_REAL) n = format_shortest_real(buf, len, ax->rvals[idx]);
  else if (k->kind == KIND_ENUM) n = snprintf(buf, len, "%s", enum_name(k->table, (int)ax->ivals[idx]));
  else n = snprintf(buf, len, "%" PRId64, ax->ivals[idx]);
  if (n < 0 || (size_t)n >= len)
    return cs_error(CS_ERR_INTERNAL, "spec_axis_value_text: buffer of %zu bytes too small", len);
  return CS_OK;
}

double spec_axis_value_number(const cs_spec *spec, int axis, int64_t cell_id) {
  int64_t idx = spec_axis_value_index(spec, axis, cell_id);
  if (idx < 0) return NAN;
  const spec_axis *ax = &spec->axes[axis];
  switch (KEYS[ax->key].kind) {
    case KIND_REAL: return ax->rvals[idx];
    case KIND_INT: return (double)ax->ivals[idx];
    default: return NAN;  // string axes have no number
  }
}

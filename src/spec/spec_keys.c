/* spec_keys.c — the keys of a sweep spec (docs/SPEC.md): the key table, the
 * enum value tables, "did you mean", applying one value, formatting a value. */
#include "spec_internal.h"

#include <ini.h>

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest output value a line can hold (docs/SPEC.md). */
#define SPEC_OUTPUT_MAX (INI_MAX_LINE - 2 - (int)sizeof "output=" + 1)
_Static_assert(SPEC_OUTPUT_MAX == 191, "docs/SPEC.md and the allowed text say 191");

const char *const SPEC_SECTION_NAMES[SEC_COUNT] = {"sweep", "grid",      "task", "model",
                                                   "train", "curvature", "team"};

const key_desc SPEC_KEYS[K_COUNT] = {
    [K_NAME] = {"name", SEC_SWEEP, KIND_STRING, .maxlen = 128,
                .allowed = "a non-empty name of at most 127 characters, no control characters"},
    /* a spec line holds at most INI_MAX_LINE - 2 = 198 characters (libinih's
     * line buffer less the newline and the NUL): "output=" and 191 */
    [K_OUTPUT] = {"output", SEC_SWEEP, KIND_STRING, .maxlen = SPEC_OUTPUT_MAX + 1,
                  .allowed = "a non-empty path of at most 191 characters (-o takes longer ones), "
                             "no control characters"},
    [K_SAVE_PARAMS] = {"save_params", SEC_SWEEP, KIND_ENUM, .table = ENUM_YESNO},
    [K_SAVE_POINTS] = {"save_points", SEC_SWEEP, KIND_ENUM, .table = ENUM_YESNO},
    [K_MAX_RETRIES] = {"max_retries", SEC_SWEEP, KIND_INT, .imin = 0, .imax = INT_MAX,
                       .allowed = "an integer >= 0"},
    [K_ARCH] = {"arch", SEC_GRID, KIND_ENUM, .table = ENUM_ARCH, .axis_ok = 1},
    [K_DEPTH] = {"depth", SEC_GRID, KIND_INT, .imin = 1, .imax = 64, .axis_ok = 1,
                 .allowed = "an integer in [1, 64]"},
    [K_TASK] = {"task", SEC_GRID, KIND_ENUM, .table = ENUM_TASK, .axis_ok = 1},
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
    [K_VOCAB] = {"vocab", SEC_TASK, KIND_INT, .imin = 4, .imax = 1 << 20, .axis_ok = 1,
                 .allowed = "an integer in [4, 1048576] (sequence tasks: tokens 0..vocab-1)"},
    [K_SEQ_LEN] = {"seq_len", SEC_TASK, KIND_INT, .imin = 2, .imax = 256, .axis_ok = 1,
                   .allowed = "an integer in [2, 256] (tokens per sequence including BOS)"},
    [K_TOKENS] = {"tokens", SEC_TASK, KIND_INT, .imin = 1, .imax = 4096, .axis_ok = 1,
                  .allowed = "an integer in [1, 4096] (task teacher: tokens per set, token 0 "
                             "the query)"},
    [K_TOKEN_DIST] = {"token_dist", SEC_TASK, KIND_ENUM, .table = ENUM_TOKEN_DIST, .axis_ok = 1},
    [K_TEACHER_HEADS] = {"teacher_heads", SEC_TASK, KIND_INT, .imin = 1, .imax = 4096,
                         .axis_ok = 1,
                         .allowed = "an integer in [1, 4096] (task teacher: the teacher's heads)"},
    [K_NOISE] = {"noise", SEC_TASK, KIND_REAL, .rmin = 0.0, .rmax = HUGE_VAL, .axis_ok = 1,
                 .allowed = "a real number >= 0 (task teacher: the target noise sigma)"},
    [K_FAMILY] = {"family", SEC_MODEL, KIND_ENUM, .table = ENUM_FAMILY, .axis_ok = 1},
    [K_GATE] = {"gate", SEC_MODEL, KIND_ENUM, .table = ENUM_GATE, .axis_ok = 1},
    [K_WIDTH] = {"width", SEC_MODEL, KIND_INT, .imin = 1, .imax = INT_MAX, .axis_ok = 1,
                 .allowed = "an integer >= 1"},
    [K_SLOTS] = {"slots", SEC_MODEL, KIND_INT, .imin = 1, .imax = INT_MAX, .axis_ok = 1,
                 .allowed = "an integer >= 1"},
    [K_HEADS] = {"heads", SEC_MODEL, KIND_INT, .imin = 1, .imax = INT_MAX, .axis_ok = 1,
                 .allowed = "an integer >= 1 dividing width"},
    [K_RESIDUAL] = {"residual", SEC_MODEL, KIND_ENUM, .table = ENUM_YESNO, .axis_ok = 1},
    [K_NORM] = {"norm", SEC_MODEL, KIND_ENUM, .table = ENUM_NORM, .axis_ok = 1},
    [K_MLP_RATIO] = {"mlp_ratio", SEC_MODEL, KIND_INT, .imin = 0, .imax = 64, .axis_ok = 1,
                     .allowed = "an integer in [0, 64] (lm family: MLP hidden width "
                                "mlp_ratio * width; 0 = attention only)"},
    [K_EPOCHS] = {"epochs", SEC_TRAIN, KIND_INT, .imin = 1, .imax = INT_MAX, .axis_ok = 1,
                  .allowed = "an integer >= 1"},
    [K_BATCH] = {"batch", SEC_TRAIN, KIND_INT, .imin = 0, .imax = INT_MAX, .axis_ok = 1,
                 .allowed = "an integer >= 0 (0 = full batch)"},
    [K_LR] = {"lr", SEC_TRAIN, KIND_REAL, .rmin = 0.0, .rmax = HUGE_VAL, .rmin_open = 1,
              .axis_ok = 1, .allowed = "a real number > 0"},
    [K_SCHEDULE] = {"schedule", SEC_TRAIN, KIND_ENUM, .table = ENUM_SCHEDULE, .axis_ok = 1},
    [K_WEIGHT_DECAY] = {"weight_decay", SEC_TRAIN, KIND_REAL, .rmin = 0.0, .rmax = HUGE_VAL,
                        .axis_ok = 1, .allowed = "a real number >= 0"},
    [K_EVAL_EVERY] = {"eval_every", SEC_TRAIN, KIND_INT, .imin = 1, .imax = INT_MAX,
                      .axis_ok = 1, .allowed = "an integer >= 1"},
    [K_RESTARTS] = {"restarts", SEC_TRAIN, KIND_INT, .imin = 1, .imax = 1000, .axis_ok = 1,
                    .allowed = "an integer in [1, 1000] (family mha: estimator restarts per cell)"},
    [K_GRAD_TOL] = {"grad_tol", SEC_TRAIN, KIND_REAL, .rmin = 0.0, .rmax = HUGE_VAL,
                    .rmin_open = 1, .axis_ok = 1,
                    .allowed = "a real number > 0 (family mha: stop when the gradient norm is "
                               "at most this)"},
    [K_POINTS] = {"points", SEC_CURVATURE, KIND_INT, .imin = 1, .imax = INT_MAX, .axis_ok = 1,
                  .allowed = "an integer >= 1"},
    [K_SIGMA] = {"sigma", SEC_CURVATURE, KIND_REAL, .rmin = 0.0, .rmax = HUGE_VAL,
                 .rmin_open = 1, .axis_ok = 1, .allowed = "a real number > 0"},
    [K_EXACT_DIM_MAX] = {"exact_dim_max", SEC_CURVATURE, KIND_INT, .imin = 2, .imax = INT_MAX,
                         .axis_ok = 1, .allowed = "an integer >= 2"},
    [K_FIELD] = {"field", SEC_CURVATURE, KIND_INT, .imin = 0, .imax = CONFIG_FIELD_MAX,
                 .axis_ok = 1,
                 .allowed = "an integer in [0, 512] (0 = off; > 0 only with input_dim 2)"},
    [K_TEAM_GRID] = {"grid", SEC_TEAM, KIND_TEAM,
                     .allowed = "PxQ with P, Q >= 1 (e.g. 1x1, 2x2)"},
    [K_TEAM_BLOCK] = {"block", SEC_TEAM, KIND_INT, .imin = 1, .imax = 4096,
                      .allowed = "an integer in [1, 4096]"},
};
/* ------------------------------------------------------------------------ */
/* Enum value tables                                                          */

/* no = 0, yes = 1 */
static const char *const YESNO_NAMES[] = {"no", "yes"};
#define YESNO_COUNT ((int)(sizeof YESNO_NAMES / sizeof YESNO_NAMES[0]))

int spec_enum_count(enum_table t) {
  switch (t) {
    case ENUM_YESNO: return YESNO_COUNT;
    case ENUM_ARCH: return ARCH_COUNT;
    case ENUM_TASK: return TASK_COUNT;
    case ENUM_NORM: return NORM_COUNT;
    case ENUM_SCHEDULE: return SCHEDULE_COUNT;
    case ENUM_FAMILY: return FAMILY_COUNT;
    case ENUM_GATE: return GATE_COUNT;
    case ENUM_TOKEN_DIST: return TOKEN_DIST_COUNT;
    default: return 0;
  }
}

const char *spec_enum_name(enum_table t, int i) {
  switch (t) {
    case ENUM_YESNO: return (i >= 0 && i < YESNO_COUNT) ? YESNO_NAMES[i] : "?";
    case ENUM_ARCH: return config_arch_name((cs_arch)i);
    case ENUM_TASK: return task_name((cs_task_kind)i);
    case ENUM_NORM: return config_norm_name((cs_norm)i);
    case ENUM_SCHEDULE: return config_schedule_name((cs_schedule)i);
    case ENUM_FAMILY: return config_family_name((cs_family)i);
    case ENUM_GATE: return config_gate_name((cs_gate_pos)i);
    case ENUM_TOKEN_DIST: return config_token_dist_name((cs_token_dist)i);
    default: return "?";
  }
}

const char *spec_key_allowed(int key, char *buf, size_t len) {
  const key_desc *k = &SPEC_KEYS[key];
  if (k->kind != KIND_ENUM) {
    snprintf(buf, len, "%s", k->allowed);
    return buf;
  }
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < spec_enum_count(k->table); i++)
    used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s", i ? ", " : "",
                             spec_enum_name(k->table, i));
  return buf;
}
int spec_key_count(void) { return K_COUNT; }

const char *spec_key_info(int i, const char **section, const char **name, int *axis_ok,
                          char *buf, size_t len) {
  const key_desc *k = &SPEC_KEYS[i];
  *section = SPEC_SECTION_NAMES[k->section];
  *name = k->name;
  *axis_ok = k->axis_ok;
  return spec_key_allowed(i, buf, len);
}

/* Where the value of key lives in a config c or the sweep settings sw, and
 * its C type: kind 'i' an int or an enum (the same size: checked below),
 * 'l' the int64_t seed, 'r' a double; kind 0 for the keys that are not one
 * field (name, output: strings; team grid: two ints, set where parsed). */
typedef struct {
  void *at;
  char kind;
} key_field;

_Static_assert(sizeof(cs_arch) == sizeof(int) && sizeof(cs_task_kind) == sizeof(int) &&
                   sizeof(cs_family) == sizeof(int) && sizeof(cs_gate_pos) == sizeof(int) &&
                   sizeof(cs_norm) == sizeof(int) && sizeof(cs_schedule) == sizeof(int) &&
                   sizeof(cs_token_dist) == sizeof(int),
               "an enum key is read and written as an int");

static key_field spec_key_field(cs_config *c, cs_sweep_settings *sw, int key) {
#define INT(f) ((key_field){(void *)&(f), 'i'})
#define I64(f) ((key_field){&(f), 'l'})
#define REAL(f) ((key_field){&(f), 'r'})
  switch (key) {
    case K_SAVE_PARAMS: return INT(sw->save_params);
    case K_SAVE_POINTS: return INT(sw->save_points);
    case K_MAX_RETRIES: return INT(sw->max_retries);
    case K_ARCH: return INT(c->arch);
    case K_DEPTH: return INT(c->depth);
    case K_TASK: return INT(c->task);
    case K_SEED: return I64(c->seed);
    case K_INPUT_DIM: return INT(c->input_dim);
    case K_TRAIN_POINTS: return INT(c->train_points);
    case K_TEST_POINTS: return INT(c->test_points);
    case K_LABEL_NOISE: return REAL(c->label_noise);
    case K_VOCAB: return INT(c->vocab);
    case K_SEQ_LEN: return INT(c->seq_len);
    case K_MLP_RATIO: return INT(c->mlp_ratio);
    case K_TOKENS: return INT(c->tokens);
    case K_TOKEN_DIST: return INT(c->token_dist);
    case K_TEACHER_HEADS: return INT(c->teacher_heads);
    case K_NOISE: return REAL(c->noise);
    case K_RESTARTS: return INT(c->restarts);
    case K_GRAD_TOL: return REAL(c->grad_tol);
    case K_FAMILY: return INT(c->family);
    case K_GATE: return INT(c->gate);
    case K_WIDTH: return INT(c->width);
    case K_SLOTS: return INT(c->slots);
    case K_HEADS: return INT(c->heads);
    case K_RESIDUAL: return INT(c->residual);
    case K_NORM: return INT(c->norm);
    case K_EPOCHS: return INT(c->epochs);
    case K_BATCH: return INT(c->batch);
    case K_LR: return REAL(c->lr);
    case K_SCHEDULE: return INT(c->schedule);
    case K_WEIGHT_DECAY: return REAL(c->weight_decay);
    case K_EVAL_EVERY: return INT(c->eval_every);
    case K_POINTS: return INT(c->points);
    case K_SIGMA: return REAL(c->sigma);
    case K_EXACT_DIM_MAX: return INT(c->exact_dim_max);
    case K_FIELD: return INT(c->field);
    case K_TEAM_BLOCK: return INT(c->team_block);
    default: return (key_field){NULL, 0};
  }
#undef INT
#undef I64
#undef REAL
}

void spec_apply_value(cs_config *c, cs_sweep_settings *sw, int key, key_value v) {
  key_field f = spec_key_field(c, sw, key);
  if (f.kind == 'i') *(int *)f.at = (int)v.i;
  else if (f.kind == 'l') *(int64_t *)f.at = v.i;
  else if (f.kind == 'r') *(double *)f.at = v.r;
}

key_value spec_value_of(const cs_config *c, const cs_sweep_settings *sw, int key) {
  key_value v = {0, 0.0};
  key_field f = spec_key_field((cs_config *)c, (cs_sweep_settings *)sw, key);
  if (f.kind == 'i') v.i = *(const int *)f.at;
  else if (f.kind == 'l') v.i = *(const int64_t *)f.at;
  else if (f.kind == 'r') v.r = *(const double *)f.at;
  else if (key == K_TEAM_GRID) v.i = c->team_p, v.r = c->team_q;
  return v;
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
const char *spec_suggest(const char *word, const char *const *cands, int n) {
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
const char *spec_did_you_mean(const char *s, char *buf, size_t len) {
  if (!s) return "";
  snprintf(buf, len, "; did you mean %s?", s);
  return buf;
}

/* Keys of one section (or, for SEC_GRID, every key that may be an axis). */
int spec_section_keys(int section, const char **names) {
  int n = 0;
  for (int k = 0; k < K_COUNT; k++) {
    int ok = section == SEC_GRID ? SPEC_KEYS[k].axis_ok : SPEC_KEYS[k].section == section;
    if (ok) names[n++] = SPEC_KEYS[k].name;
  }
  return n;
}

int spec_find_key(int section, const char *name) {
  for (int k = 0; k < K_COUNT; k++) {
    int ok = section == SEC_GRID ? SPEC_KEYS[k].axis_ok : SPEC_KEYS[k].section == section;
    if (ok && strcmp(SPEC_KEYS[k].name, name) == 0) return k;
  }
  return -1;
}

int spec_find_key_anywhere(const char *name) {
  for (int k = 0; k < K_COUNT; k++)
    if (strcmp(SPEC_KEYS[k].name, name) == 0) return k;
  return -1;
}
/* The shortest %.Ng (N = 1..17) that reads back as exactly the same double:
 * 3e-3 prints as "0.003", not "0.0030000000000000001". */
static int format_shortest_real(char *buf, size_t len, double v) {
  char shortest[32];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(shortest, sizeof shortest, "%.*g", prec, v);
    if (strtod(shortest, NULL) == v) break;
  }
  return snprintf(buf, len, "%s", shortest);
}

int spec_axis_value_format(const spec_axis *ax, int64_t idx, char *buf, size_t len) {
  const key_desc *k = &SPEC_KEYS[ax->key];
  if (k->kind == KIND_REAL) return format_shortest_real(buf, len, ax->rvals[idx]);
  if (k->kind == KIND_ENUM) return snprintf(buf, len, "%s", spec_enum_name(k->table, (int)ax->ivals[idx]));
  return snprintf(buf, len, "%" PRId64, ax->ivals[idx]);
}

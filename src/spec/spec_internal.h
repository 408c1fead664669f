/* spec_internal.h — what the files of src/spec share (not a public header).
 *
 *   spec_keys.c   the key table (docs/SPEC.md), enum value tables, "did you
 *                 mean", applying a value to a cell, the value formatting
 *   spec_parse.c  the libinih reader and handler: lines, sections, fixed keys
 *                 and [grid] axes, with file:line errors
 *   spec_grid.c   whole-grid checks (after every key is known), cell numbering
 *                 and a cell's settings
 *   spec_canon.c  the canonical resolved spec and its hash, comparing two
 *                 specs, mapping cells between them, the union of two grids
 *   spec_override.c  `--set section.key=value`: the text with overrides written in
 *   spec.c        load, free and the accessors of spec.h */
#ifndef CURVSWEEP_SPEC_INTERNAL_H
#define CURVSWEEP_SPEC_INTERNAL_H

#include "curvsweep/config.h"
#include "curvsweep/spec.h"

#include <stddef.h>
#include <stdint.h>

enum { SEC_SWEEP, SEC_GRID, SEC_TASK, SEC_MODEL, SEC_TRAIN, SEC_CURVATURE, SEC_TEAM, SEC_COUNT };
extern const char *const SPEC_SECTION_NAMES[SEC_COUNT];
#define SECTIONS_ALLOWED "sweep, grid, task, model, train, curvature, team"
#define AXES_ALLOWED "arch, depth, task, seed, or any key of [task], [model], [train], [curvature]"
#define SYNTAX_ALLOWED "[section], key = value, a ; or # comment, or a blank line"

typedef enum { KIND_INT, KIND_REAL, KIND_ENUM, KIND_STRING, KIND_TEAM } key_kind;
typedef enum { ENUM_NONE, ENUM_YESNO, ENUM_ARCH, ENUM_TASK, ENUM_NORM, ENUM_SCHEDULE,
              ENUM_FAMILY, ENUM_GATE, ENUM_TOKEN_DIST } enum_table;

enum {
  K_NAME, K_OUTPUT, K_SAVE_PARAMS, K_SAVE_POINTS, K_MAX_RETRIES,         /* [sweep] */
  K_ARCH, K_DEPTH, K_TASK, K_SEED,                                       /* [grid] only */
  K_INPUT_DIM, K_TRAIN_POINTS, K_TEST_POINTS, K_LABEL_NOISE,             /* [task] */
  K_VOCAB, K_SEQ_LEN,                                                    /* [task] sequences */
  K_TOKENS, K_TOKEN_DIST, K_TEACHER_HEADS, K_NOISE,                      /* [task] teacher */
  K_FAMILY, K_GATE, K_WIDTH, K_SLOTS, K_HEADS, K_RESIDUAL, K_NORM,       /* [model] */
  K_MLP_RATIO,                                                           /* [model] lm */
  K_EPOCHS, K_BATCH, K_LR, K_SCHEDULE, K_WEIGHT_DECAY, K_EVAL_EVERY,     /* [train] */
  K_RESTARTS, K_GRAD_TOL,                                                /* [train] estimator */
  K_POINTS, K_SIGMA, K_EXACT_DIM_MAX, K_FIELD,                           /* [curvature] */
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

/* The key table (spec_keys.c): one entry per key of docs/SPEC.md. */
extern const key_desc SPEC_KEYS[K_COUNT];

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
  char *canon_text;       /* the canonical resolved spec (spec_canon.c) */
  char canon_sha256[65];  /* its SHA-256: the archive identity */
  cs_sweep_settings sweep;
  cs_config base;  /* defaults with every fixed key applied */
  int naxes;
  spec_axis axes[K_COUNT];
  int64_t stride[K_COUNT];  /* cells between consecutive values of an axis */
  int64_t ncells;
  uint64_t max_cell_bytes;  /* the largest cell's memory estimate (spec_grid.c) */
};

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
  int err_code, err_line;     /* the first error; err_line != 0: stop reading */
  /* every error instead of the first (`curvsweep check`): each message to
   * on_error, reading goes on; keys with an error in bad_key[] (the checks
   * between keys skip them rather than report a consequence) */
  void (*on_error)(void *ctx, const char *message);
  void *on_error_ctx;
  int nerrors;
  unsigned char bad_key[K_COUNT];
  /* --set overrides (spec_override.c): origin[line - 1] of each line of the
   * text is its line in the file (> 0), -(j + 1) for override j, 0 for the
   * overrides' closing comment; NULL without overrides */
  const int *origin;
  int norigin;
  const struct spec_override *overrides;
  spec_cell_memory_fn cell_memory; /* NULL: cells are not sized (spec_load_options) */
} parse_state;

/* ---- spec.c ---- */
/* What a load adds to the plain parse: error collection (on_error, see
 * parse_state) and the line map of overrides. */
typedef struct {
  void (*on_error)(void *ctx, const char *message);
  void *ctx;
  const int *origin;
  int norigin;
  const struct spec_override *overrides;
  spec_cell_memory_fn cell_memory;
} spec_parse_extras;
/* The bytes of the spec file at path (*text: free() it). */
int spec_read_file(const char *path, char **text, size_t *text_len);
/* Parse text (len bytes) named source into a new spec (x may be NULL). */
int spec_load_bytes(const char *text, size_t len, const char *source, const spec_parse_extras *x,
                    cs_spec **out);

/* ---- spec_override.c ---- */
typedef struct spec_override {
  char section[64], key[64];
  const char *value;  /* points into the argument */
} spec_override;
/* Split "section.key=value" into *ov; CS_ERR_INPUT naming the argument when
 * it is not of that form or the value holds a control character. */
int spec_override_split(const char *arg, spec_override *ov);
/* The text (len bytes) with the n overrides written in, as a new
 * NUL-terminated text (*out, *out_len) and its line map (*origin, *lines
 * entries; see parse_state). */
int spec_override_apply(const char *text, size_t len, const spec_override *ov, int n,
                        char **out, size_t *out_len, int **origin, int *lines);


/* ---- spec_keys.c ---- */
int spec_enum_count(enum_table t);
const char *spec_enum_name(enum_table t, int i);
/* "what one value of key may be", into buf */
const char *spec_key_allowed(int key, char *buf, size_t len);
/* Write one value of key into a cell config or the sweep settings (name,
 * output and the team grid are applied where they are parsed). */
void spec_apply_value(cs_config *c, cs_sweep_settings *sw, int key, key_value v);
/* Its inverse: the value of key in c or sw (team grid: i = P, r = Q; name
 * and output, strings: 0). */
key_value spec_value_of(const cs_config *c, const cs_sweep_settings *sw, int key);
/* The closest candidate when it is close enough to be a likely typo, else NULL. */
const char *spec_suggest(const char *word, const char *const *cands, int n);
/* "; did you mean X?" or "" */
const char *spec_did_you_mean(const char *s, char *buf, size_t len);
/* Keys of one section (or, for SEC_GRID, every key that may be an axis). */
int spec_section_keys(int section, const char **names);
int spec_find_key(int section, const char *name);
int spec_find_key_anywhere(const char *name);
/* Value idx of an axis as text: the shortest %.Ng (N = 1..17) that reads
 * back as exactly the same double for reals, the name for enums, the integer
 * otherwise. Returns snprintf's count. */
int spec_axis_value_format(const spec_axis *ax, int64_t idx, char *buf, size_t len);

/* ---- spec_parse.c ---- */
/* Record the first error: "SOURCE:LINE: " + message. Returns code. */
__attribute__((format(printf, 4, 5)))
int spec_fail_line(parse_state *st, int code, int line, const char *fmt, ...);
/* Same, for a key: "SOURCE:LINE: [section] key: " + message. Returns
 * CS_ERR_INPUT. */
__attribute__((format(printf, 5, 6)))
int spec_fail_key(parse_state *st, int line, int section, const char *name, const char *fmt, ...);
/* Text for quoting in a message: at most 60 characters, "..." when cut. */
const char *spec_clip(const char *s, char buf[72]);
/* The meaningful part [*b, *e) of a raw line (n bytes, no '\n'), as inih
 * would see it: without a BOM on line 1, whitespace and comments. */
void spec_line_content(const char *s, size_t n, int first_line, const char **b, const char **e);
/* Where line `line` of the text came from, for messages: "line 12" (its
 * line in the file) or "--set train.epochs". */
const char *spec_line_place(const parse_state *st, int line, char *buf, size_t len);
/* Line `line` (1-based) of the text, as content, into buf (for messages). */
const char *spec_line_text(const parse_state *st, int line, char *buf, size_t len);
/* The ini_reader and the ini_handler given to ini_parse_stream. */
char *spec_reader(char *str, int num, void *stream);
int spec_handler(void *user, const char *section, const char *name, const char *value);

/* ---- spec_grid.c ---- */
/* Constraints between keys over every combination of axis values (heads
 * divide width; every task supports every input_dim; family = self never
 * meets arch = mlp; family = lm meets only sequence tasks and they only
 * it, with seq_len long enough for the task, field 0 and a 1x1 team):
 * CS_OK or the error recorded in st. */
int spec_check_grid(parse_state *st);
/* The strides of the row-major cell numbering, once every axis is known. */
void spec_number_cells(cs_spec *spec);

/* ---- spec_canon.c ---- */
/* spec->canon_text and canon_sha256, once the cells are numbered. */
int spec_canon_compute(cs_spec *spec);

#endif

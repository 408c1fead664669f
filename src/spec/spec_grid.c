/* spec_grid.c — the grid as a whole (docs/SPEC.md): constraints between keys,
 * checked over every combination of axis values once every key is known, and
 * the cells. Cell ids are row-major over the axes in [grid] order (first axis
 * slowest); a cell's settings are the base config (defaults + fixed keys)
 * with each axis value applied. */
#include "spec_internal.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <inttypes.h>
#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* Whole-grid checks (after every key is known)                               */

/* The values a key takes over the grid: the axis values, or the one base
 * value (v points into the struct itself then). */
typedef struct {
  const int64_t *v;
  int64_t n;
  int64_t one;
} key_values;

static void key_values_of(const cs_spec *spec, int key, int64_t base, key_values *out) {
  for (int a = 0; a < spec->naxes; a++)
    if (spec->axes[a].key == key) {
      out->v = spec->axes[a].ivals;
      out->n = spec->axes[a].length;
      return;
    }
  out->one = base;
  out->v = &out->one;
  out->n = 1;
}

/* Where a key's value comes from, for messages: "[grid] line 4" (or
 * "[grid] --set grid.depth"). */
static const char *key_source(const parse_state *st, int key, char *buf, size_t len) {
  char place[160];
  if (st->axis_line[key])
    snprintf(buf, len, "[grid] %s", spec_line_place(st, st->axis_line[key], place, sizeof place));
  else if (st->fixed_line[key])
    snprintf(buf, len, "[%s] %s", SPEC_SECTION_NAMES[SPEC_KEYS[key].section],
             spec_line_place(st, st->fixed_line[key], place, sizeof place));
  else snprintf(buf, len, "the default");
  return buf;
}

/* The line key was written on (0: not written) and its section there:
 * [grid] for an axis, else the key's own section. */
static int key_line(const parse_state *st, int key, int *section) {
  *section = st->axis_line[key] ? SEC_GRID : SPEC_KEYS[key].section;
  return st->axis_line[key] ? st->axis_line[key] : st->fixed_line[key];
}

/* The divisors of width (at most 12, then ", ..."): the heads allowed with it. */
static void width_divisors(int64_t width, char *buf, size_t len) {
  size_t used = 0;
  int shown = 0;
  for (int64_t d = 1; d <= width && used < len; d++) {
    if (width % d) continue;
    if (shown == 12) {
      snprintf(buf + used, len - used, ", ...");
      break;
    }
    used += (size_t)snprintf(buf + used, len - used, "%s%" PRId64, shown ? ", " : "", d);
    shown++;
  }
}

/* The dimensions 1..64 a task supports, as runs "a..b" ("none" if none). */
static void task_dims_text(cs_task_kind task, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int d = 1; d <= 64; d++) {
    if (!task_supports_dim(task, d) || (d > 1 && task_supports_dim(task, d - 1))) continue;
    int e = d;
    while (e < 64 && task_supports_dim(task, e + 1)) e++;
    if (e > d)
      used += (size_t)snprintf(buf + used, len - used, "%s%d..%d", used ? ", " : "", d, e);
    else
      used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? ", " : "", d);
  }
  if (!used) snprintf(buf, len, "none");
}

/* heads must divide width (a width, b heads). */
static int check_heads_divide_width(parse_state *st, int64_t width, int64_t heads) {
  if (width % heads == 0) return CS_OK;
  char divisors[256], src[192];
  width_divisors(width, divisors, sizeof divisors);
  int section, line = key_line(st, K_HEADS, &section);
  return spec_fail_key(st, line, section, "heads",
                       "%" PRId64 " does not divide width %" PRId64 " (%s); allowed: a "
                       "divisor of the width: %s",
                       heads, width, key_source(st, K_WIDTH, src, sizeof src), divisors);
}

/* A task that does not support an input_dim: the message names the key that
 * was written (input_dim, else the task axis). */
static int task_dim_error(parse_state *st, cs_task_kind task, int64_t dim) {
  char ok_dims[256], src[192];
  task_dims_text(task, ok_dims, sizeof ok_dims);
  const char *tname = task_name(task);
  int dim_section, dim_line = key_line(st, K_INPUT_DIM, &dim_section);
  if (dim_line)
    return spec_fail_key(st, dim_line, dim_section, "input_dim",
                         "%" PRId64 " is not supported by task %s (%s); allowed with %s: %s",
                         dim, tname, key_source(st, K_TASK, src, sizeof src), tname, ok_dims);
  if (st->axis_line[K_TASK])
    return spec_fail_key(st, st->axis_line[K_TASK], SEC_GRID, "task",
                         "%s does not support input_dim %" PRId64
                         " (the default); allowed with %s: input_dim %s",
                         tname, dim, tname, ok_dims);
  cs_error(CS_ERR_INTERNAL, "%s: the default task %s does not support the default "
           "input_dim %" PRId64, st->source, tname, dim);
  st->err_code = CS_ERR_INTERNAL;
  return CS_ERR_INTERNAL;
}

/* A task must support the input_dim it meets. */
static int check_task_dims(parse_state *st, int64_t task, int64_t dim) {
  if (task_supports_dim((cs_task_kind)task, (int)dim)) return CS_OK;
  return task_dim_error(st, (cs_task_kind)task, dim);
}

/* The names of the families of config's table for which keep(f, arg)
 * holds, ", "-separated into buf (cap bytes): what a message allows, so a
 * new family's row is named without a change here. */
static void family_names(char *buf, size_t cap, int (*keep)(cs_family f, int arg), int arg) {
  size_t n = 0;
  buf[0] = '\0';
  for (int g = 0; g < FAMILY_COUNT; g++)
    if (keep((cs_family)g, arg))
      n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", n ? ", " : "",
                            config_family_name((cs_family)g));
}

static int family_builds_arch(cs_family f, int arch) {
  return config_family_allows_arch(f, (cs_arch)arch);
}

static int family_reads_tokens(cs_family f, int tokens) {
  return config_family_tokens(f) == tokens;
}

/* The self and lm families have no mlp block (docs/MODELS.md; the family
 * table of config.c): they never meet arch = mlp. Only a written family key
 * can be one of them, so the message names it, with where the arch came
 * from. */
static int check_family_arch(parse_state *st, int64_t family, int64_t arch) {
  cs_family f = (cs_family)family;
  cs_arch a = (cs_arch)arch;
  if (config_family_allows_arch(f, a)) return CS_OK;
  // what is allowed, from the config's tables: the families that build
  // this arch, the archs this family builds
  char fams[128], arcs[128] = "", src[192];
  size_t na = 0;
  family_names(fams, sizeof fams, family_builds_arch, (int)a);
  for (int b = 0; b < ARCH_COUNT; b++)
    if (config_family_allows_arch(f, (cs_arch)b))
      na += (size_t)snprintf(arcs + na, na < sizeof arcs ? sizeof arcs - na : 0, "%s%s",
                             na ? ", " : "", config_arch_name((cs_arch)b));
  int section, line = key_line(st, K_FAMILY, &section);
  return spec_fail_key(st, line, section, "family",
                       "%s has no %s block, but arch %s is in the grid (%s); allowed "
                       "with arch = %s: %s; with family = %s: arch %s",
                       config_family_name(f), config_arch_name(a), config_arch_name(a),
                       key_source(st, K_ARCH, src, sizeof src), config_arch_name(a), fams,
                       config_family_name(f), arcs);
}

/* A curvature field is a grid over the input plane (docs/SPEC.md): field > 0
 * needs input_dim 2 on every cell it meets. Only a written field key can be
 * > 0, so the message names it, with where the input_dim came from. */
static int check_field_dim(parse_state *st, int64_t field, int64_t dim) {
  if (field == 0 || dim == 2) return CS_OK;
  char src[192];
  int section, line = key_line(st, K_FIELD, &section);
  return spec_fail_key(st, line, section, "field",
                       "%" PRId64 " needs input_dim 2 (a grid over the input plane), but "
                       "input_dim %" PRId64 " is in the grid (%s); allowed with input_dim "
                       "%" PRId64 ": 0",
                       field, dim, key_source(st, K_INPUT_DIM, src, sizeof src), dim);
}

/* ------------------------------------------------------------------------ */
/* A cell's memory (docs/SPEC.md, "Sizes")                                    */

/* The parts of a cell's memory estimate (size.h's CELL_MEM_*, computed by
 * the model's families: spec_load_options.cell_memory). */
static const char *const PART_NAMES[CELL_MEM_PARTS] = {"parameters", "training activations",
                                                       "curvature jets", "datasets", "results"};

/* The largest value a key takes over the grid (the base value when it is
 * not an axis). */
static int64_t key_max(const cs_spec *spec, int key, int64_t base) {
  key_values v;
  key_values_of(spec, key, base, &v);
  int64_t best = v.v[0];
  for (int64_t i = 1; i < v.n; i++)
    if (v.v[i] > best) best = v.v[i];
  return best;
}

/* The keys a part grows with, most telling first: the message names the
 * first one the spec wrote. */
static const int PART_KEYS[CELL_MEM_PARTS][10] = {
    [CELL_MEM_PARAMS] = {K_WIDTH, K_SLOTS, K_HEADS, K_DEPTH, K_INPUT_DIM, K_VOCAB, K_MLP_RATIO, -1},
    [CELL_MEM_TRAIN] = {K_BATCH, K_TRAIN_POINTS, K_WIDTH, K_DEPTH, K_SLOTS, K_HEADS, K_INPUT_DIM,
                    K_SEQ_LEN, K_VOCAB, -1},
    [CELL_MEM_JETS] = {K_POINTS, K_INPUT_DIM, K_WIDTH, K_DEPTH, K_SLOTS, K_HEADS, K_FIELD, K_SEQ_LEN,
                   -1},
    [CELL_MEM_DATA] = {K_TRAIN_POINTS, K_TEST_POINTS, K_INPUT_DIM, K_SEQ_LEN, K_TOKENS, -1},
    [CELL_MEM_RESULTS] = {K_POINTS, K_FIELD, K_EPOCHS, K_EVAL_EVERY, K_DEPTH, K_INPUT_DIM, -1},
};

static void bytes_text(uint64_t b, int over, char *buf, size_t len) {
  if (over || b == UINT64_MAX) snprintf(buf, len, "over 16 EiB");
  else if (b >= ((uint64_t)1 << 30)) snprintf(buf, len, "%.3g GiB", (double)b / (double)(1u << 30));
  else snprintf(buf, len, "%.3g MiB", (double)b / (double)(1u << 20));
}

static int memory_error(parse_state *st, const uint64_t part[CELL_MEM_PARTS], int over) {
  int worst = 0;
  uint64_t total = 0;
  for (int p = 0; p < CELL_MEM_PARTS; p++) {
    if (part[p] > part[worst]) worst = p;
    if (__builtin_add_overflow(total, part[p], &total)) over = 1, total = UINT64_MAX;
  }
  int key = PART_KEYS[worst][0], section = 0, line = 0;
  for (int i = 0; PART_KEYS[worst][i] >= 0; i++)
    if (key_line(st, PART_KEYS[worst][i], &section)) {
      key = PART_KEYS[worst][i];
      break;
    }
  line = key_line(st, key, &section);
  if (!line) section = SPEC_KEYS[key].section;
  char text[5][48], all[48], value[32];
  for (int p = 0; p < CELL_MEM_PARTS; p++) bytes_text(part[p], part[p] == UINT64_MAX, text[p], 48);
  bytes_text(total, over, all, sizeof all);
  const cs_config *b = &st->spec->base;
  const int64_t base[K_COUNT] = {[K_WIDTH] = b->width, [K_SLOTS] = b->slots, [K_HEADS] = b->heads,
                                 [K_DEPTH] = b->depth, [K_INPUT_DIM] = b->input_dim,
                                 [K_BATCH] = b->batch, [K_TRAIN_POINTS] = b->train_points,
                                 [K_TEST_POINTS] = b->test_points, [K_POINTS] = b->points,
                                 [K_FIELD] = b->field, [K_EPOCHS] = b->epochs,
                                 [K_EVAL_EVERY] = b->eval_every, [K_VOCAB] = b->vocab,
                                 [K_SEQ_LEN] = b->seq_len, [K_MLP_RATIO] = b->mlp_ratio,
                                 [K_TOKENS] = b->tokens};
  snprintf(value, sizeof value, "%" PRId64, key_max(st->spec, key, base[key]));
  return spec_fail_key(st, line, section, SPEC_KEYS[key].name,
                       "%s makes a cell need %s of memory, most of it for %s (parameters %s, "
                       "training activations %s, curvature jets %s, datasets %s, results %s); "
                       "allowed: at most %d GiB per cell (docs/SPEC.md, \"Sizes\")",
                       value, all, PART_NAMES[worst], text[0], text[1], text[2], text[3], text[4],
                       (int)(SPEC_MAX_CELL_BYTES >> 30));
}

/* Every cell's memory estimate (st->cell_memory, the model's) within
 * SPEC_MAX_CELL_BYTES. The estimate grows with every integer key, so the
 * cell of the grid with each integer axis at its largest value is the
 * largest for given family, arch and norm (the grid is a Cartesian product:
 * that cell is in it); those three are tried in every combination the grid
 * has. Without an estimate nothing is sized. */
static int check_cell_memory(parse_state *st) {
  if (!st->cell_memory) return CS_OK;
  const cs_spec *spec = st->spec;
  cs_config c = spec->base;
  c.width = (int)key_max(spec, K_WIDTH, c.width), c.slots = (int)key_max(spec, K_SLOTS, c.slots);
  c.heads = (int)key_max(spec, K_HEADS, c.heads), c.depth = (int)key_max(spec, K_DEPTH, c.depth);
  c.input_dim = (int)key_max(spec, K_INPUT_DIM, c.input_dim);
  c.train_points = (int)key_max(spec, K_TRAIN_POINTS, c.train_points);
  c.test_points = (int)key_max(spec, K_TEST_POINTS, c.test_points);
  c.points = (int)key_max(spec, K_POINTS, c.points), c.field = (int)key_max(spec, K_FIELD, c.field);
  c.epochs = (int)key_max(spec, K_EPOCHS, c.epochs);
  c.vocab = (int)key_max(spec, K_VOCAB, c.vocab), c.seq_len = (int)key_max(spec, K_SEQ_LEN, c.seq_len);
  c.mlp_ratio = (int)key_max(spec, K_MLP_RATIO, c.mlp_ratio);
  c.tokens = (int)key_max(spec, K_TOKENS, c.tokens);
  key_values tv;  // the task: a teacher cell trains on the full batch
  key_values_of(spec, K_TASK, spec->base.task, &tv);
  for (int64_t i = 0; i < tv.n; i++)
    if (tv.v[i] == TASK_TEACHER) c.task = TASK_TEACHER;
  key_values ev, bv;
  key_values_of(spec, K_EVAL_EVERY, spec->base.eval_every, &ev);
  key_values_of(spec, K_BATCH, spec->base.batch, &bv);
  c.eval_every = (int)ev.v[0];  // the smallest: the most curve rows
  for (int64_t i = 1; i < ev.n; i++)
    if (ev.v[i] < c.eval_every) c.eval_every = (int)ev.v[i];
  c.batch = (int)key_max(spec, K_BATCH, c.batch);  // 0 (full batch) is the largest
  for (int64_t i = 0; i < bv.n; i++)
    if (bv.v[i] == 0) c.batch = 0;
  key_values fam, arch, norm;
  key_values_of(spec, K_FAMILY, spec->base.family, &fam);
  key_values_of(spec, K_ARCH, spec->base.arch, &arch);
  key_values_of(spec, K_NORM, spec->base.norm, &norm);
  for (int64_t f = 0; f < fam.n; f++)
    for (int64_t a = 0; a < arch.n; a++)
      for (int64_t k = 0; k < norm.n; k++) {
        c.family = (cs_family)fam.v[f], c.arch = (cs_arch)arch.v[a], c.norm = (cs_norm)norm.v[k];
        if (!config_family_allows_arch(c.family, c.arch)) continue;  // refused above
        uint64_t part[CELL_MEM_PARTS], total = 0;
        int over = 0;
        st->cell_memory(&c, part, &over);
        for (int p = 0; p < CELL_MEM_PARTS; p++)
          if (__builtin_add_overflow(total, part[p], &total)) over = 1;
        if (over || total > SPEC_MAX_CELL_BYTES) return memory_error(st, part, over);
        if (total > st->spec->max_cell_bytes) st->spec->max_cell_bytes = total;
      }
  return CS_OK;
}

uint64_t spec_max_cell_bytes(const cs_spec *spec) { return spec->max_cell_bytes; }

/* The sequence tasks and the families that read token sequences (lm; the
 * family table of config.c) go together (docs/MODELS.md): such a family
 * meets only sequence tasks, and a sequence task only such a family. The
 * message names the written key: the family when it reads tokens, else the
 * task, and allows the token families of the table. */
static int check_family_tasks(parse_state *st, int64_t family, int64_t task) {
  cs_family f = (cs_family)family;
  cs_task_kind t = (cs_task_kind)task;
  if (config_family_tokens(f) == task_is_sequence(t)) return CS_OK;
  char src[192];
  int section, line;
  if (config_family_tokens(f)) {
    line = key_line(st, K_FAMILY, &section);
    return spec_fail_key(st, line, section, "family",
                         "%s trains on token sequences, but the point task %s is in the "
                         "grid (%s); allowed with family = %s: task bigram-backcopy, "
                         "associative-recall",
                         config_family_name(f), task_name(t),
                         key_source(st, K_TASK, src, sizeof src), config_family_name(f));
  }
  char fams[128];
  family_names(fams, sizeof fams, family_reads_tokens, 1);
  line = key_line(st, K_TASK, &section);
  return spec_fail_key(st, line, section, "task",
                       "%s is a token-sequence task, but family %s is in the grid (%s); "
                       "allowed with %s: family = %s",
                       task_name(t), config_family_name(f),
                       key_source(st, K_FAMILY, src, sizeof src), task_name(t), fams);
}

/* Every sequence task of the grid meets only seq_len values it defines
 * (task_min_seq_len: 3 for bigram-backcopy, 5 for associative-recall). */
static int check_seq_len(parse_state *st, int64_t task, int64_t len) {
  cs_task_kind t = (cs_task_kind)task;
  if (!task_is_sequence(t) || len >= task_min_seq_len(t)) return CS_OK;
  char src[192];
  int section, line = key_line(st, K_SEQ_LEN, &section);
  return spec_fail_key(st, line, section, "seq_len",
                       "%" PRId64 " is too short for task %s (%s); allowed with %s: an "
                       "integer in [%d, 256]",
                       len, task_name(t), key_source(st, K_TASK, src, sizeof src), task_name(t),
                       task_min_seq_len(t));
}

/* The lm family has no curvature field (its inputs are token sequences)
 * and runs on 1x1 teams only (docs/MODELS.md): field > 0 or a [team] grid
 * other than 1x1 never meets family = lm. */
static int check_lm_field_team(parse_state *st) {
  key_values families, fields;
  key_values_of(st->spec, K_FAMILY, st->spec->base.family, &families);
  key_values_of(st->spec, K_FIELD, st->spec->base.field, &fields);
  for (int64_t i = 0; i < families.n; i++) {
    if (!config_family_tokens((cs_family)families.v[i])) continue;
    char src[192];
    int section, line;
    for (int64_t j = 0; j < fields.n; j++) {
      if (fields.v[j] == 0) continue;
      line = key_line(st, K_FIELD, &section);
      return spec_fail_key(st, line, section, "field",
                           "%" PRId64 " is a grid over an input plane, but family %s is in "
                           "the grid (%s) and has token inputs; allowed with family = %s: 0",
                           fields.v[j], config_family_name((cs_family)families.v[i]),
                           key_source(st, K_FAMILY, src, sizeof src),
                           config_family_name((cs_family)families.v[i]));
    }
    const cs_config *b = &st->spec->base;
    if (b->team_p != 1 || b->team_q != 1) {
      line = key_line(st, K_TEAM_GRID, &section);
      return spec_fail_key(st, line, section, "grid",
                           "%dx%d, but family %s is in the grid (%s) and runs on one rank per "
                           "cell; allowed with family = %s: 1x1",
                           b->team_p, b->team_q, config_family_name((cs_family)families.v[i]),
                           key_source(st, K_FAMILY, src, sizeof src),
                           config_family_name((cs_family)families.v[i]));
    }
  }
  return CS_OK;
}

static int64_t base_value(const cs_config *b, int key);

/* The teacher task and family mha go together (docs/MODELS.md,
 * "Estimation"): the teacher is one mha layer and the student its own
 * family, so family = mha meets only task teacher and task teacher only
 * family = mha. The message names the family when it is mha, else the task. */
static int check_family_teacher(parse_state *st, int64_t family, int64_t task) {
  int mha = config_family_estimation((cs_family)family), teacher = task == TASK_TEACHER;
  if (mha == teacher) return CS_OK;
  char src[192];
  int section, line;
  if (mha) {
    line = key_line(st, K_FAMILY, &section);
    return spec_fail_key(st, line, section, "family",
                         "mha is the student of the teacher task, but task %s is in the grid "
                         "(%s); allowed with family = mha: task teacher",
                         task_name((cs_task_kind)task), key_source(st, K_TASK, src, sizeof src));
  }
  line = key_line(st, K_TASK, &section);
  return spec_fail_key(st, line, section, "task",
                       "teacher plants a family mha teacher, but family %s is in the grid (%s) "
                       "and cannot be one; allowed with task teacher: family = mha",
                       config_family_name((cs_family)family),
                       key_source(st, K_FAMILY, src, sizeof src));
}

/* What family mha is (docs/MODELS.md, "Estimation"): one layer (depth 1),
 * no curvature and so no field, one rank per cell, and an elementwise gate
 * at g1..g4 only at head dimension 1 (width = heads), where it is one gate
 * per head. */
static int check_mha_shape(parse_state *st) {
  const cs_spec *spec = st->spec;
  const cs_config *b = &spec->base;
  key_values fam, arch, gate, width, heads;
  key_values_of(spec, K_FAMILY, b->family, &fam);
  int any = 0;
  for (int64_t i = 0; i < fam.n; i++) any |= config_family_estimation((cs_family)fam.v[i]);
  if (!any) return CS_OK;
  char src[192];
  int section, line;
  key_source(st, K_FAMILY, src, sizeof src);
  static const struct {
    int key;
    int64_t allowed;
    const char *why;
  } FIXED[] = {{K_DEPTH, 1, "has one layer"}, {K_FIELD, 0, "has no curvature"}};
  for (size_t k = 0; k < sizeof FIXED / sizeof FIXED[0]; k++) {
    key_values kv;
    key_values_of(spec, FIXED[k].key, base_value(b, FIXED[k].key), &kv);
    for (int64_t i = 0; i < kv.n; i++)
      if (kv.v[i] != FIXED[k].allowed) {
        line = key_line(st, FIXED[k].key, &section);
        return spec_fail_key(st, line, section, SPEC_KEYS[FIXED[k].key].name,
                             "%" PRId64 ", but family mha is in the grid (%s) and %s; allowed "
                             "with family = mha: %" PRId64, kv.v[i], src, FIXED[k].why,
                             FIXED[k].allowed);
      }
  }
  if (b->team_p != 1 || b->team_q != 1) {
    line = key_line(st, K_TEAM_GRID, &section);
    return spec_fail_key(st, line, section, "grid",
                         "%dx%d, but family mha is in the grid (%s) and runs on one rank per "
                         "cell; allowed with family = mha: 1x1", b->team_p, b->team_q, src);
  }
  key_values_of(spec, K_ARCH, b->arch, &arch);
  key_values_of(spec, K_GATE, b->gate, &gate);
  key_values_of(spec, K_WIDTH, b->width, &width);
  key_values_of(spec, K_HEADS, b->heads, &heads);
  for (int64_t a = 0; a < arch.n; a++) {
    if (config_arch_info((cs_arch)arch.v[a])->gate != ARCH_GATE_ELEMENTWISE) continue;
    for (int64_t g = 0; g < gate.n; g++) {
      if (gate.v[g] == GATE_G5) continue;
      for (int64_t w = 0; w < width.n; w++)
        for (int64_t h = 0; h < heads.n; h++) {
          if (width.v[w] == heads.v[h]) continue;
          line = key_line(st, K_WIDTH, &section);
          return spec_fail_key(st, line, section, "width",
                               "%" PRId64 " with heads %" PRId64 " is a head dimension of %"
                               PRId64 ", but family mha (%s) with arch gated at %s has one gate "
                               "per channel, which is a head's quantity only at head dimension "
                               "1; allowed with family = mha, arch = gated and gate %s: width = "
                               "heads (or arch gated-headwise)", width.v[w], heads.v[h],
                               width.v[w] / heads.v[h], src, config_gate_name((cs_gate_pos)gate.v[g]),
                               config_gate_name((cs_gate_pos)gate.v[g]));
        }
    }
  }
  return CS_OK;
}

/* The base value (no axis) of a key a pair check reads. */
static int64_t base_value(const cs_config *b, int key) {
  switch (key) {
  case K_WIDTH: return b->width;
  case K_HEADS: return b->heads;
  case K_FAMILY: return b->family;
  case K_TASK: return b->task;
  case K_SEQ_LEN: return b->seq_len;
  case K_FIELD: return b->field;
  case K_INPUT_DIM: return b->input_dim;
  case K_ARCH: return b->arch;
  case K_TOKENS: return b->tokens;
  case K_DEPTH: return b->depth;
  default: return 0;
  }
}

typedef int (*pair_check)(parse_state *st, int64_t a, int64_t b);

/* Every value of key ka in the grid (or its base value) against every value
 * of key kb: the first failing pair's error. */
static int check_pairs(parse_state *st, int ka, int kb, pair_check check) {
  key_values va, vb;
  key_values_of(st->spec, ka, base_value(&st->spec->base, ka), &va);
  key_values_of(st->spec, kb, base_value(&st->spec->base, kb), &vb);
  for (int64_t i = 0; i < va.n; i++)
    for (int64_t j = 0; j < vb.n; j++) CS_CHECK(check(st, va.v[i], vb.v[j]));
  return CS_OK;
}

/* The checks between keys, each with the keys it reads (-1 ends a list):
 * a pair check (pair) is run on every pair of values of its first two keys
 * (check_pairs), any other check (check) on the whole grid. When errors are
 * collected, a check is skipped when one of its keys had an error of its
 * own (its value is then the default, and the check would report a
 * consequence of that error, not one of its own). */
static const struct {
  pair_check pair;
  int (*check)(parse_state *st);
  int keys[24];
} GRID_CHECKS[] = {
    {check_heads_divide_width, NULL, {K_WIDTH, K_HEADS, -1}},
    {check_family_tasks, NULL, {K_FAMILY, K_TASK, -1}},
    {check_family_teacher, NULL, {K_FAMILY, K_TASK, -1}},
    {NULL, check_mha_shape, {K_FAMILY, K_DEPTH, K_FIELD, K_TEAM_GRID, K_ARCH, K_GATE, K_WIDTH,
                             K_HEADS, -1}},
    {check_seq_len, NULL, {K_TASK, K_SEQ_LEN, -1}},
    {NULL, check_lm_field_team, {K_FAMILY, K_FIELD, K_TEAM_GRID, -1}},
    {check_field_dim, NULL, {K_FIELD, K_INPUT_DIM, -1}},
    {check_family_arch, NULL, {K_FAMILY, K_ARCH, -1}},
    {check_task_dims, NULL, {K_TASK, K_INPUT_DIM, -1}},
    {NULL, check_cell_memory, {K_FAMILY, K_ARCH, K_NORM, K_WIDTH, K_SLOTS, K_HEADS, K_DEPTH,
                               K_INPUT_DIM, K_TRAIN_POINTS, K_TEST_POINTS, K_POINTS, K_FIELD,
                               K_EPOCHS, K_EVAL_EVERY, K_BATCH, K_VOCAB, K_SEQ_LEN, K_MLP_RATIO,
                               K_TOKENS, K_TASK, -1}},
};

int spec_check_grid(parse_state *st) {
  for (size_t i = 0; i < sizeof GRID_CHECKS / sizeof GRID_CHECKS[0]; i++) {
    int skip = 0;
    const int *keys = GRID_CHECKS[i].keys;
    for (int k = 0; keys[k] >= 0; k++) skip |= st->bad_key[keys[k]];
    if (skip) continue;
    int rc = GRID_CHECKS[i].pair ? check_pairs(st, keys[0], keys[1], GRID_CHECKS[i].pair)
                                 : GRID_CHECKS[i].check(st);
    // the first error, unless errors are collected (then only a failure
    // that is not the spec's, such as out of memory, stops)
    if (rc != CS_OK && (!st->on_error || rc != CS_ERR_INPUT)) return rc;
  }
  return st->err_code;
}

/* ------------------------------------------------------------------------ */
/* Cells                                                                      */

void spec_number_cells(cs_spec *spec) {
  // strides of the row-major numbering: the last axis varies fastest
  int64_t stride = 1;
  for (int a = spec->naxes - 1; a >= 0; a--) {
    spec->stride[a] = stride;
    stride *= spec->axes[a].length;
  }
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
    spec_apply_value(&c, &unused, ax->key, v);
  }
  *out = c;
  return CS_OK;
}

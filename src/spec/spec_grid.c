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

/* Where a key's value comes from, for messages: "[grid] line 4". */
static const char *key_source(const parse_state *st, int key, char *buf, size_t len) {
  if (st->axis_line[key]) snprintf(buf, len, "[grid] line %d", st->axis_line[key]);
  else if (st->fixed_line[key]) snprintf(buf, len, "[%s] line %d", SPEC_SECTION_NAMES[SPEC_KEYS[key].section], st->fixed_line[key]);
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

/* heads must divide width for every combination of the two. */
static int check_heads_divide_width(parse_state *st) {
  key_values widths, heads;
  key_values_of(st->spec, K_WIDTH, st->spec->base.width, &widths);
  key_values_of(st->spec, K_HEADS, st->spec->base.heads, &heads);
  for (int64_t i = 0; i < widths.n; i++)
    for (int64_t j = 0; j < heads.n; j++) {
      if (widths.v[i] % heads.v[j] == 0) continue;
      char divisors[256], src[64];
      width_divisors(widths.v[i], divisors, sizeof divisors);
      int section, line = key_line(st, K_HEADS, &section);
      return spec_fail_key(st, line, section, "heads",
                           "%" PRId64 " does not divide width %" PRId64 " (%s); allowed: a "
                           "divisor of the width: %s",
                           heads.v[j], widths.v[i], key_source(st, K_WIDTH, src, sizeof src),
                           divisors);
    }
  return CS_OK;
}

/* A task that does not support an input_dim: the message names the key that
 * was written (input_dim, else the task axis). */
static int task_dim_error(parse_state *st, cs_task_kind task, int64_t dim) {
  char ok_dims[256], src[64];
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

/* Every task of the grid must support every input_dim of the grid. */
static int check_task_dims(parse_state *st) {
  key_values tasks, dims;
  key_values_of(st->spec, K_TASK, st->spec->base.task, &tasks);
  key_values_of(st->spec, K_INPUT_DIM, st->spec->base.input_dim, &dims);
  for (int64_t i = 0; i < tasks.n; i++)
    for (int64_t j = 0; j < dims.n; j++)
      if (!task_supports_dim((cs_task_kind)tasks.v[i], (int)dims.v[j]))
        return task_dim_error(st, (cs_task_kind)tasks.v[i], dims.v[j]);
  return CS_OK;
}

/* The self family has no mlp block (docs/MODELS.md): family = self never
 * meets arch = mlp. Only a written family key can be self, so the message
 * names it, with where the arch came from. */
static int check_family_arch(parse_state *st) {
  key_values families, archs;
  key_values_of(st->spec, K_FAMILY, st->spec->base.family, &families);
  key_values_of(st->spec, K_ARCH, st->spec->base.arch, &archs);
  for (int64_t i = 0; i < families.n; i++)
    for (int64_t j = 0; j < archs.n; j++) {
      if (families.v[i] != FAMILY_SELF || archs.v[j] != ARCH_MLP) continue;
      char src[64];
      int section, line = key_line(st, K_FAMILY, &section);
      return spec_fail_key(st, line, section, "family",
                           "self has no mlp block, but arch mlp is in the grid (%s); allowed "
                           "with arch = mlp: memory; with family = self: arch ungated, gated, "
                           "gated-headwise",
                           key_source(st, K_ARCH, src, sizeof src));
    }
  return CS_OK;
}

/* A curvature field is a grid over the input plane (docs/SPEC.md): field > 0
 * needs input_dim 2 on every cell it meets. Only a written field key can be
 * > 0, so the message names it, with where the input_dim came from. */
static int check_field_dim(parse_state *st) {
  key_values fields, dims;
  key_values_of(st->spec, K_FIELD, st->spec->base.field, &fields);
  key_values_of(st->spec, K_INPUT_DIM, st->spec->base.input_dim, &dims);
  for (int64_t i = 0; i < fields.n; i++)
    for (int64_t j = 0; j < dims.n; j++) {
      if (fields.v[i] == 0 || dims.v[j] == 2) continue;
      char src[64];
      int section, line = key_line(st, K_FIELD, &section);
      return spec_fail_key(st, line, section, "field",
                           "%" PRId64 " needs input_dim 2 (a grid over the input plane), but "
                           "input_dim %" PRId64 " is in the grid (%s); allowed with input_dim "
                           "%" PRId64 ": 0",
                           fields.v[i], dims.v[j], key_source(st, K_INPUT_DIM, src, sizeof src),
                           dims.v[j]);
    }
  return CS_OK;
}

int spec_check_grid(parse_state *st) {
  CS_CHECK(check_heads_divide_width(st));
  CS_CHECK(check_field_dim(st));
  CS_CHECK(check_family_arch(st));
  return check_task_dims(st);
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

/* spec_grid.c — constraints between keys, checked over every combination of
 * axis values once every key is known (docs/SPEC.md). */
#include "spec_internal.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <inttypes.h>
#include <stdio.h>

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
  else if (st->fixed_line[key]) snprintf(buf, len, "[%s] line %d", SPEC_SECTION_NAMES[SPEC_KEYS[key].section], st->fixed_line[key]);
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
      return spec_fail_key(st, line, st->axis_line[K_HEADS] ? SEC_GRID : SEC_MODEL, "heads",
                      "%" PRId64 " does not divide width %" PRId64 " (%s); allowed: a divisor "
                      "of the width: %s",
                      heads[j], widths[i], key_source(st, K_WIDTH, src, sizeof src), divisors);
    }
  return CS_OK;
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
      const char *tname = task_name(task);
      int dim_line = st->axis_line[K_INPUT_DIM] ? st->axis_line[K_INPUT_DIM]
                                                : st->fixed_line[K_INPUT_DIM];
      if (dim_line)
        return spec_fail_key(st, dim_line, st->axis_line[K_INPUT_DIM] ? SEC_GRID : SEC_TASK,
                        "input_dim",
                        "%" PRId64 " is not supported by task %s (%s); allowed with %s: %s",
                        dims[j], tname, key_source(st, K_TASK, src, sizeof src), tname, ok_dims);
      if (st->axis_line[K_TASK])
        return spec_fail_key(st, st->axis_line[K_TASK], SEC_GRID, "task",
                        "%s does not support input_dim %" PRId64
                        " (the default); allowed with %s: input_dim %s",
                        tname, dims[j], tname, ok_dims);
      cs_error(CS_ERR_INTERNAL, "%s: the default task %s does not support the default "
               "input_dim %" PRId64, st->source, tname, dims[j]);
      st->err_code = CS_ERR_INTERNAL;
      return CS_ERR_INTERNAL;
    }
  return CS_OK;
}

int spec_check_grid(parse_state *st) {
  CS_CHECK(check_heads_divide_width(st));
  return check_task_dims(st);
}

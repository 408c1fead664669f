/* spec.c — sweep specs (docs/SPEC.md): load a spec (read the text, parse it
 * with spec_parse.c, check the whole grid and number the cells with
 * spec_grid.c), free it, and the accessors of spec.h. Axes are kept in [grid]
 * order with their values as written. */
#include "spec_internal.h"

#include "curvsweep/error.h"
#include "curvsweep/path.h"

#include <ini.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Loading                                                                    */

void spec_free(cs_spec *spec) {
  if (!spec) return;
  for (int a = 0; a < spec->naxes; a++) {
    free(spec->axes[a].ivals);
    free(spec->axes[a].rvals);
  }
  free(spec->text);
  free(spec->canon_text);
  free(spec->source);
  free(spec);
}

/* Parse text (len bytes) named source into spec (zeroed; the caller
 * releases it on failure); x as in spec_load_bytes. */
static int spec_parse(cs_spec *spec, const char *text, size_t len, const char *source,
                      const spec_parse_extras *x) {
  CS_CHECK(CS_CALLOC(spec->text, len + 1));
  CS_CHECK(CS_CALLOC(spec->source, strlen(source) + 1));
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
  // unless errors are collected (x->on_error)
  parse_state st = {.spec = spec, .source = spec->source, .text = spec->text, .len = len,
                    .section = -1};
  if (x) {
    st.on_error = x->on_error, st.on_error_ctx = x->ctx;
    st.origin = x->origin, st.norigin = x->norigin, st.overrides = x->overrides;
    st.cell_memory = x->cell_memory;
  }
  int r = ini_parse_stream(spec_reader, &st, spec_handler, &st);
  if (r < 0)
    return cs_error(r == -2 ? CS_ERR_NOMEM : CS_ERR_INTERNAL, "%s: libinih failed (%d)", source,
                    r);
  if (r > 0 && (st.err_line == 0 || r < st.err_line)) {
    // a line inih could not read: a header without ']' or a line without '='
    char whole[80];
    spec_line_text(&st, r, whole, sizeof whole);
    if (whole[0] == '[')
      spec_fail_line(&st, CS_ERR_INPUT, r,
                "syntax error: '%s' has no closing ]; allowed: " SYNTAX_ALLOWED, whole);
    else
      spec_fail_line(&st, CS_ERR_INPUT, r,
                "syntax error: '%s' is not key = value; allowed: " SYNTAX_ALLOWED, whole);
  }
  // constraints between keys, over every combination of axis values
  if (!st.err_line) spec_check_grid(&st);
  CS_CHECK(st.err_code);
  spec_number_cells(spec);
  return spec_canon_compute(spec);
}

/* Parse text (len bytes) named source into a new spec; x (NULL: none) adds
 * error collection and the line map of overrides (spec_override.c). */
int spec_load_bytes(const char *text, size_t len, const char *source, const spec_parse_extras *x,
                    cs_spec **out) {
  *out = NULL;
  cs_spec *spec;
  CS_CHECK(CS_CALLOC(spec, 1));
  int rc = spec_parse(spec, text, len, source, x);
  if (rc) spec_free(spec);
  else *out = spec;
  return rc;
}

#define SPEC_MAX_BYTES (16u << 20)

/* The whole of f (the spec file path), at most SPEC_MAX_BYTES, into *text
 * (and its length in *text_len); NULL and 0 on failure. */
static int spec_read_stream(FILE *f, const char *path, char **text, size_t *text_len) {
  // read the whole file, growing the buffer
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  int rc = buf ? CS_OK : cs_error(CS_ERR_NOMEM, "%s: out of memory reading spec", path);
  while (!rc) {
    if (len == cap && cap >= SPEC_MAX_BYTES) {
      rc = cs_error(CS_ERR_INPUT, "%s: spec is larger than %u bytes; allowed: at most %u bytes",
                    path, SPEC_MAX_BYTES, SPEC_MAX_BYTES);
      break;
    }
    if (len == cap) {
      char *bigger = realloc(buf, cap * 2);
      if (!bigger) {
        rc = cs_error(CS_ERR_NOMEM, "%s: out of memory reading spec", path);
        break;
      }
      buf = bigger;
      cap *= 2;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  int read_error = !rc && ferror(f) ? errno : 0;
  if (read_error)
    rc = cs_error(CS_ERR_INPUT, "%s: cannot read spec: %s", path, strerror(read_error));
  if (rc) free(buf), buf = NULL, len = 0;
  *text = buf, *text_len = len;
  return rc;
}

int spec_read_file(const char *path, char **text, size_t *text_len) {
  *text = NULL;
  if (!path) return cs_error(CS_ERR_INTERNAL, "spec_load_file: path is NULL");
  // a directory, FIFO, socket or device is never a spec (and a FIFO must
  // not block the open)
  const char *why;
  int fd = cs_open_regular(path, O_RDONLY, 0, NULL, &why);
  if (fd < 0)
    return cs_error(CS_ERR_INPUT, "%s: cannot %s spec: %s", path, fd == -1 ? "open" : "read", why);
  FILE *f = fdopen(fd, "rb");
  int rc = f ? spec_read_stream(f, path, text, text_len)
             : cs_error(CS_ERR_NOMEM, "%s: cannot open spec: %s", path, strerror(errno));
  if (f) fclose(f);
  else close(fd);
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
  return axis_ok(spec, axis) ? SPEC_KEYS[spec->axes[axis].key].name : NULL;
}

cs_axis_type spec_axis_type(const cs_spec *spec, int axis) {
  if (!axis_ok(spec, axis)) return (cs_axis_type)-1;
  switch (SPEC_KEYS[spec->axes[axis].key].kind) {
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
    if (strcmp(SPEC_KEYS[spec->axes[a].key].name, name) == 0) return a;
  return -1;
}

int64_t spec_axis_value_index(const cs_spec *spec, int axis, int64_t cell_id) {
  if (!axis_ok(spec, axis) || cell_id < 0 || cell_id >= spec->ncells) return -1;
  // row-major: the cell's digit for this axis
  return (cell_id / spec->stride[axis]) % spec->axes[axis].length;
}

int spec_axis_value_text(const cs_spec *spec, int axis, int64_t cell_id, char *buf, size_t len) {
  int64_t idx = spec_axis_value_index(spec, axis, cell_id);
  if (idx < 0)
    return cs_error(CS_ERR_INPUT, "%s: no value for axis %d at cell %" PRId64 "; allowed: axis "
                    "0..%d, cell 0..%" PRId64, spec->source, axis, cell_id, spec->naxes - 1,
                    spec->ncells - 1);
  const spec_axis *ax = &spec->axes[axis];
  int n = spec_axis_value_format(ax, idx, buf, len);
  if (n < 0 || (size_t)n >= len)
    return cs_error(CS_ERR_INTERNAL, "spec_axis_value_text: buffer of %zu bytes too small", len);
  return CS_OK;
}

double spec_axis_value_number(const cs_spec *spec, int axis, int64_t cell_id) {
  int64_t idx = spec_axis_value_index(spec, axis, cell_id);
  if (idx < 0) return NAN;
  const spec_axis *ax = &spec->axes[axis];
  switch (SPEC_KEYS[ax->key].kind) {
    case KIND_REAL: return ax->rvals[idx];
    case KIND_INT: return (double)ax->ivals[idx];
    default: return NAN;  // string axes have no number
  }
}

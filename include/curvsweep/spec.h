/* spec.h — sweep specs (INI, docs/SPEC.md): parse, validate, expand into cells.
 *
 * Cell numbering: the axes in the order they appear in [grid]; cell ids run
 * 0 .. count-1 in row-major (nested-loop) order, the first axis slowest and
 * the last fastest; values within an axis in the order written (a range a..b
 * ascending). The numbering is a pure function of the spec text. */
#ifndef CURVSWEEP_SPEC_H
#define CURVSWEEP_SPEC_H

#include "curvsweep/config.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cs_spec cs_spec;

typedef enum { SPEC_AXIS_INT = 0, SPEC_AXIS_REAL, SPEC_AXIS_STRING } cs_axis_type;

/* [sweep] section. */
typedef struct {
  char name[128];
  char output[1024];  /* archive path, relative to the working directory */
  int save_params;
  int save_points;
  int max_retries;
} cs_sweep_settings;

/* Parse and fully validate. On bad input returns CS_ERR_INPUT with a message
 * "FILE:LINE: [section] key: what is wrong; allowed: …". */
int spec_load_file(const char *path, cs_spec **out);
/* Same, from text in memory; source names the text in messages. */
int spec_load_string(const char *text, const char *source, cs_spec **out);
void spec_free(cs_spec *spec);

const cs_sweep_settings *spec_sweep(const cs_spec *spec);
const char *spec_text(const cs_spec *spec);    /* the text exactly as read */
const char *spec_sha256(const cs_spec *spec);  /* hex SHA-256 of that text */
const char *spec_source(const cs_spec *spec);  /* file name given at load */

int64_t spec_cell_count(const cs_spec *spec);
/* Resolved settings of one cell; CS_ERR_INPUT if cell_id is out of range. */
int spec_cell_config(const cs_spec *spec, int64_t cell_id, cs_config *out);

/* Axes, in [grid] order. */
int spec_axis_count(const cs_spec *spec);
const char *spec_axis_name(const cs_spec *spec, int axis);
cs_axis_type spec_axis_type(const cs_spec *spec, int axis);
int spec_axis_length(const cs_spec *spec, int axis);
/* Value of an axis at a cell: as text (names for strings, %.17g for
 * numbers) and, for numeric axes, as a number. */
int spec_axis_value_text(const cs_spec *spec, int axis, int64_t cell_id, char *buf, size_t len);
double spec_axis_value_number(const cs_spec *spec, int axis, int64_t cell_id);

/* Additions to the contract above. */
/* Largest grid accepted (cells); larger grids are refused at load. */
#define SPEC_MAX_CELLS 10000000
/* Largest memory estimate of one cell accepted (bytes: 64 GiB); a spec with
 * a larger cell is refused at load, naming the key (docs/SPEC.md, "Sizes"). */
#define SPEC_MAX_CELL_BYTES ((uint64_t)64 << 30)
/* Index of the axis named name (e.g. "arch"), or -1 when no axis has it. */
int spec_find_axis(const cs_spec *spec, const char *name);
/* Position (0 .. length-1) of a cell's value within an axis; -1 when axis or
 * cell_id is out of range. */
int64_t spec_axis_value_index(const cs_spec *spec, int axis, int64_t cell_id);

/* The keys a spec may hold (docs/SPEC.md), for help text generated from the
 * same table the parser uses: key i in [0, spec_key_count()) lives in
 * [*section] (the section it has outside [grid]) as *name; what one value
 * may be goes into buf; *axis_ok says whether it may be a [grid] axis. */
int spec_key_count(void);
const char *spec_key_info(int i, const char **section, const char **name, int *axis_ok,
                          char *buf, size_t len);

/* Loading with command-line overrides, and collecting every error
 * (docs/SPEC.md, "Overrides" and "curvsweep check"). sets[0..nsets) are
 * "section.key=value": each is written into the text (a key the file sets in
 * that section is replaced, any other added to its section) and validated
 * with it, its errors naming "--set section.key" instead of FILE:LINE; the
 * spec's text (spec_text, what an archive stores) is the text with the
 * overrides applied, ending in a comment that lists them. Without overrides
 * the text is the file's, unchanged. With on_error, every error of the spec
 * is passed to it (one message each) and the first error's code returned;
 * without it the first error ends the load, as spec_load_file. */
typedef struct {
  const char *const *sets;
  int nsets;
  void (*on_error)(void *ctx, const char *message);
  void *ctx;
} spec_load_options;
int spec_load_file_opts(const char *path, const spec_load_options *opt, cs_spec **out);
/* The largest memory estimate of a cell of the grid, in bytes (docs/SPEC.md,
 * "Sizes"). */
uint64_t spec_max_cell_bytes(const cs_spec *spec);

/* SHA-256 of bytes as 64 hex characters + NUL. */
void spec_sha256_hex(const void *data, size_t len, char out[65]);

#endif

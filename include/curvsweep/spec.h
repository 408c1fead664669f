/* spec.h — sweep specs (INI, docs/SPEC.md): parse, validate, expand into cells.
 *
 * Cell numbering: the axes in the order they appear in [grid]; cell ids run
 * 0 .. count-1 in row-major (nested-loop) order, the first axis slowest and
 * the last fastest; values within an axis in the order written (a range a..b
 * ascending). The numbering is a pure function of the spec text. */
#ifndef CURVSWEEP_SPEC_H
#define CURVSWEEP_SPEC_H

#include "curvsweep/config.h"
#include "curvsweep/size.h"

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
/* Largest memory estimate of one cell accepted (bytes: 64 GiB, size.h); a
 * spec loaded with a cell_memory estimate (spec_load_options) and a larger
 * cell is refused at load, naming the key (docs/SPEC.md, "Sizes"). */
#define SPEC_MAX_CELL_BYTES CELL_MAX_BYTES
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
/* With cell_memory (the model's model_cell_memory: the spec module sits below
 * the model families that know their sizes), every cell's memory estimate
 * is checked (docs/SPEC.md, "Sizes") and spec_max_cell_bytes set; a spec
 * loaded without it (from an archive, to read results) is not sized, and
 * model_create refuses a cell past the same bound. */
typedef void (*spec_cell_memory_fn)(const cs_config *c, uint64_t part[CELL_MEM_PARTS], int *over);
typedef struct {
  const char *const *sets;
  int nsets;
  void (*on_error)(void *ctx, const char *message);
  void *ctx;
  spec_cell_memory_fn cell_memory;
} spec_load_options;
int spec_load_file_opts(const char *path, const spec_load_options *opt, cs_spec **out);
/* The same for a spec held as text (source names it in messages). */
int spec_load_string_opts(const char *text, const char *source, const spec_load_options *opt,
                          cs_spec **out);
/* The largest memory estimate of a cell of the grid, in bytes (docs/SPEC.md,
 * "Sizes"); 0 when the spec was loaded without a cell_memory estimate. */
uint64_t spec_max_cell_bytes(const cs_spec *spec);

/* SHA-256 of bytes as 64 hex characters + NUL. */
void spec_sha256_hex(const void *data, size_t len, char out[65]);

/* The canonical resolved spec (docs/SPEC.md, "Identity"): every key with its
 * resolved value, in a fixed order and spelling (comments, blank lines, key
 * order, defaults written out or not, equivalent spellings of numbers,
 * lists and ranges do not change it); [sweep] output and max_retries are
 * left out. Its hex SHA-256 is an archive's identity. */
const char *spec_canonical_text(const cs_spec *spec);
const char *spec_canonical_sha256(const cs_spec *spec);

/* How a new spec relates to the spec an archive was written with:
 *   SPEC_SAME     the same canonical text;
 *   SPEC_GROWS    every value of every key of old is a value of new (more
 *                 values on grid axes, a fixed key turned into an axis that
 *                 keeps its value, axes or values reordered): every cell of
 *                 old is a cell of new, with the same resolved config;
 *   SPEC_DIFFERS  anything else.
 * fn (may be NULL) is called for each key whose values differ: first the
 * keys old has a value of that new lacks (grows 0), then the keys that only
 * gained values (grows 1): the key, and in each spec the section it is in
 * ("grid" for an axis) with its values ("16", "0..3, 7"). */
typedef enum { SPEC_SAME = 0, SPEC_GROWS, SPEC_DIFFERS } cs_spec_relation;
typedef void (*spec_diff_fn)(const char *key, const char *old_section, const char *old_values,
                             const char *new_section, const char *new_values, int grows,
                             void *ctx);
int spec_compare(const cs_spec *old_spec, const cs_spec *new_spec, spec_diff_fn fn, void *ctx,
                 cs_spec_relation *rel);

/* The cells of spec `from` as cells of spec `to` (every key's values of from
 * among to's: SPEC_SAME or SPEC_GROWS), by their resolved config:
 * spec_map_cell gives to's id of from's cell id (-1 out of range). Both
 * specs must outlive the map. CS_ERR_INPUT when a cell of from is not one
 * of to. */
typedef struct spec_cell_map spec_cell_map;
int spec_map_begin(const cs_spec *from, const cs_spec *to, spec_cell_map **out);
int64_t spec_map_cell(const spec_cell_map *m, int64_t id);
void spec_map_free(spec_cell_map *m);

/* The spec of a and b together (merge of archives of specs that differ only
 * in [grid] values, docs/ARCHIVE.md "Merge"): as canonical text (malloc'ed),
 * every key with a's values followed by b's values a lacks, the axes in a's
 * order then b's. CS_ERR_INPUT naming the key when a key outside [grid]
 * differs (a key written as a [grid] axis in either spec, and arch, depth,
 * task, seed, may differ). */
int spec_union_text(const cs_spec *a, const cs_spec *b, char **text);

#endif

/* fuzz_spec.c — libFuzzer harness of the spec parser (src/spec,
 * docs/SPEC.md): the input is a spec text. A spec that loads must answer
 * every query the sweep makes of it (cell count, the config of the first and
 * last cells, every axis value of them) without a sanitizer report; one that
 * does not load must leave an error message. Loaded as `run` loads it, every
 * cell sized by the model's estimate (spec_load_options.cell_memory).
 * tests/fuzz/README.md. */
#include "curvsweep/config.h"
#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/spec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void fuzz_spec_cell(const cs_spec *spec, int64_t cell) {
  cs_config cfg;
  if (spec_cell_config(spec, cell, &cfg) != CS_OK) cs_error_clear();
  char buf[256];
  for (int a = 0; a < spec_axis_count(spec); a++) {
    (void)spec_axis_name(spec, a);
    (void)spec_axis_length(spec, a);
    if (spec_axis_value_text(spec, a, cell, buf, sizeof buf) != CS_OK) cs_error_clear();
    (void)spec_axis_value_number(spec, a, cell);
    (void)spec_axis_value_index(spec, a, cell);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  cs_spec *spec = NULL;
  spec_load_options opt = {NULL, 0, NULL, NULL, model_cell_memory};
  int rc = spec_load_string_opts(text, "fuzz.ini", &opt, &spec);
  if (rc != CS_OK) {
    free(text);
    if (!cs_error_message()[0]) abort();  // a refusal always says why
    cs_error_clear();
    return 0;
  }
  (void)spec_sweep(spec);
  (void)spec_sha256(spec);
  if (strcmp(spec_text(spec), text) != 0) abort();  // the text exactly as read
  free(text);
  int64_t n = spec_cell_count(spec);
  if (n < 1) abort();  // a loaded spec has cells
  for (int64_t c = 0; c < n && c < 4; c++) fuzz_spec_cell(spec, c);
  if (n > 4) fuzz_spec_cell(spec, n - 1);
  spec_free(spec);
  return 0;
}

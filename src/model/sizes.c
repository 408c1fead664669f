/* sizes.c — the terms of a cell's memory estimate (docs/SPEC.md, "Sizes")
 * that the families on points share, and the curvature chunk every family
 * sizes its jets by; each family's own terms are its memory op, and
 * model_cell_memory (model.c) adds the parts every family adds alike.
 * Checked arithmetic throughout (curvsweep/size.h). */
#include "model_internal.h"

uint64_t sizes_point_base(const cs_config *c, int *over) {
  uint64_t m = (uint64_t)c->input_dim, d = (uint64_t)c->width, H = (uint64_t)c->heads;
  uint64_t L = (uint64_t)c->depth;
  // h_0 .. h_L, the input, the readout's input and the scratch
  return SIZE_ADD(SIZE_ADD(SIZE_MUL(L + 1, d), m), SIZE_ADD(d, SIZE_MUL(2, H)));
}

void sizes_chunk(const cs_config *c, uint64_t *chunk, uint64_t *C) {
  uint64_t m = (uint64_t)c->input_dim, pts = (uint64_t)c->points;
  *chunk = pts < 256 ? pts : 256;
  *C = 1 + m + m * (m + 1) / 2;
}

void sizes_points(const cs_config *c, uint64_t row, model_memory_terms *t, int *over) {
  uint64_t m = (uint64_t)c->input_dim, N = (uint64_t)c->field, chunk, C;
  uint64_t train = (uint64_t)c->train_points, test = (uint64_t)c->test_points;
  sizes_chunk(c, &chunk, &C);
  // second-order jets of a chunk of points, and of the field grid
  uint64_t jet_rows = SIZE_MUL(chunk, C);
  if (N) jet_rows = SIZE_ADD(jet_rows, SIZE_MUL(SIZE_MUL(N, N) < 256 ? SIZE_MUL(N, N) : 256, 6));
  t->jets = SIZE_MUL(8, SIZE_MUL(row, jet_rows));
  // points and labels, train and test
  t->data = SIZE_MUL(16, SIZE_MUL(SIZE_ADD(train, test), m + 1));
}


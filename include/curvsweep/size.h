/* size.h — checked size arithmetic for estimates (one home for it).
 *
 * A product or sum past 2^64 - 1 saturates at UINT64_MAX and sets *over;
 * everything computed from a saturated value stays saturated, so a chain
 * of them needs one check at its end (docs/SPEC.md, "Sizes"). */
#ifndef CURVSWEEP_SIZE_H
#define CURVSWEEP_SIZE_H

#include <stdint.h>

static inline uint64_t cs_size_mul(uint64_t a, uint64_t b, int *over) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    *over = 1;
    return UINT64_MAX;
  }
  return r;
}

static inline uint64_t cs_size_add(uint64_t a, uint64_t b, int *over) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    *over = 1;
    return UINT64_MAX;
  }
  return r;
}

/* Shorthands inside an estimate whose overflow flag is `int *over`. */
#define SIZE_MUL(a, b) cs_size_mul((a), (b), over)
#define SIZE_ADD(a, b) cs_size_add((a), (b), over)

/* A cell's memory estimate (docs/SPEC.md, "Sizes"), in bytes by part: the
 * model gives it (model_cell_memory, from the family's own terms), the spec
 * checks it against CELL_MAX_BYTES with the key to blame, and model_create
 * refuses a config past it. */
enum { CELL_MEM_PARAMS, CELL_MEM_TRAIN, CELL_MEM_JETS, CELL_MEM_DATA, CELL_MEM_RESULTS, CELL_MEM_PARTS };
#define CELL_MAX_BYTES ((uint64_t)64 << 30)

#endif

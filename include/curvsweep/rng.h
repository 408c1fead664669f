/* rng.h — counter-based random streams.
 *
 * A stream is a key (hashed from a seed and names) plus a counter; the k-th
 * draw is a pure function of (key, k). So a tensor's initial values depend
 * only on (seed, layer, tensor name), a dataset only on (task, seed, split):
 * never on which rank drew them, in what order, or how many ranks there are. */
#ifndef CURVSWEEP_RNG_H
#define CURVSWEEP_RNG_H

#include <stdint.h>

typedef struct {
  uint64_t key;
  uint64_t counter;
} rng_stream;

/* Stream keyed by (seed, domain, index, name); e.g. ("init", layer, "Wq"),
 * ("task:circles", split, "x"). Strings may be NULL. */
rng_stream rng_stream_make(uint64_t seed, const char *domain, int64_t index, const char *name);

uint64_t rng_next_u64(rng_stream *s);
/* Uniform in the open interval (0, 1), 53 random bits. */
double rng_uniform(rng_stream *s);
/* Standard normal (Box–Muller; consumes two uniforms per draw). */
double rng_normal(rng_stream *s);
/* Uniform integer in [0, n). */
uint64_t rng_below(rng_stream *s, uint64_t n);
/* k draws of rng_below(s, n) into out (n ≥ 1): the same values, faster. */
void rng_below_fill(rng_stream *s, int n, int k, int *out);
/* Fisher–Yates permutation of 0..n-1 into perm. */
void rng_permutation(rng_stream *s, int64_t n, int64_t *perm);

/* 64-bit string hash (FNV-1a) used to build keys. */
uint64_t rng_hash_string(const char *s);

#endif

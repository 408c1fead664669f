/* rng.c — counter-based streams: draw k = mix64(key + k * golden).
 *
 * mix64 is the SplitMix64 finaliser (a bijection with full avalanche), so a
 * stream is a keyed, seekable sequence with no state but the counter. */
#include "curvsweep/rng.h"

#include <math.h>

static const uint64_t GOLDEN = 0x9E3779B97F4A7C15ULL;

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t rng_hash_string(const char *s) {
  uint64_t h = 0xCBF29CE484222325ULL;
  if (!s) return h;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 0x100000001B3ULL;
  }
  return h;
}

rng_stream rng_stream_make(uint64_t seed, const char *domain, int64_t index, const char *name) {
  uint64_t k = mix64(seed + GOLDEN);
  k = mix64(k ^ rng_hash_string(domain));
  k = mix64(k ^ ((uint64_t)index * GOLDEN));
  k = mix64(k ^ rng_hash_string(name));
  return (rng_stream){.key = k, .counter = 0};
}

uint64_t rng_next_u64(rng_stream *s) {
  s->counter++;
  return mix64(s->key + s->counter * GOLDEN);
}

double rng_uniform(rng_stream *s) {
  /* (top 53 bits + 0.5) / 2^53 is never 0 or 1 */
  return ((double)(rng_next_u64(s) >> 11) + 0.5) * 0x1.0p-53;
}

double rng_normal(rng_stream *s) {
  double u1 = rng_uniform(s), u2 = rng_uniform(s);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t rng_below(rng_stream *s, uint64_t n) {
  /* rejection sampling removes modulo bias */
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do r = rng_next_u64(s); while (r >= limit);
  return r % n;
}

void rng_below_fill(rng_stream *s, int n, int k, int *out) {
  /* rng_below k times: the rejection limit computed once, and r mod n
   * without a division: with m = ⌊(2⁶⁴−1)/n⌋, q = ⌊r·m / 2⁶⁴⌋ is ⌊r/n⌋ or
   * one less (r/n − 1 < r·m/2⁶⁴ ≤ r/n), so r − q·n is r mod n or that + n. */
  uint64_t N = (uint64_t)n, limit = UINT64_MAX - UINT64_MAX % N, m = UINT64_MAX / N;
  for (int i = 0; i < k; i++) {
    uint64_t r;
    do r = rng_next_u64(s); while (r >= limit);
    uint64_t q = (uint64_t)(((unsigned __int128)r * m) >> 64), rem = r - q * N;
    out[i] = (int)(rem >= N ? rem - N : rem);
  }
}

void rng_permutation(rng_stream *s, int64_t n, int64_t *perm) {
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)rng_below(s, (uint64_t)(i + 1));
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

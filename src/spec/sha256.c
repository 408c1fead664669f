/* sha256.c — SHA-256 (FIPS 180-4) of a byte string, as lowercase hex.
 *
 * Used to fingerprint the spec text so an archive can refuse a different
 * spec. None of the allowed Debian dependencies exports a hash, so it is
 * written out here; tests check it against the FIPS 180-4 example vectors. */
#include "curvsweep/spec.h"

#include <stdint.h>
#include <string.h>

/* first 32 bits of the fractional parts of the cube roots of the first 64 primes */
static const uint32_t SHA256_K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/* Compress one 64-byte block into the state h[8]. */
static void sha256_block(uint32_t h[8], const unsigned char block[64]) {
  // block: 64 bytes, big-endian 32-bit words; h: 8 state words
  uint32_t w[64];
  // message schedule: 16 words from the block, 48 more by the σ0/σ1 recurrence
  for (int t = 0; t < 16; t++)
    w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
           (uint32_t)block[4 * t + 2] << 8 | (uint32_t)block[4 * t + 3];
  for (int t = 16; t < 64; t++) {
    uint32_t s0 = rotr32(w[t - 15], 7) ^ rotr32(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr32(w[t - 2], 17) ^ rotr32(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  // 64 rounds over the working variables a..h
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int t = 0; t < 64; t++) {
    uint32_t S1 = rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = k + S1 + ch + SHA256_K[t] + w[t];
    uint32_t S0 = rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = S0 + maj;
    k = g; g = f; f = e; e = d + t1;
    d = c; c = b; b = a; a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d;
  h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

void spec_sha256_hex(const void *data, size_t len, char out[65]) {
  // data: len bytes; out: 64 hex characters + NUL
  const unsigned char *p = data;
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  // whole blocks straight from the input
  size_t full = len / 64;
  for (size_t i = 0; i < full; i++) sha256_block(h, p + 64 * i);
  // padding: the tail, one 0x80 byte, zeros, and the bit length as a
  // big-endian 64-bit integer, filling one or two final blocks
  unsigned char tail[128];
  size_t rest = len - 64 * full;
  memset(tail, 0, sizeof tail);
  if (rest) memcpy(tail, p + 64 * full, rest);
  tail[rest] = 0x80;
  size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = (uint64_t)len * 8u;
  for (int i = 0; i < 8; i++) tail[tail_len - 1 - i] = (unsigned char)(bits >> (8 * i));
  sha256_block(h, tail);
  if (tail_len == 128) sha256_block(h, tail + 64);
  // digest: the state words big-endian, as hex
  static const char HEX[] = "0123456789abcdef";
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 4; j++) {
      unsigned byte = (h[i] >> (24 - 8 * j)) & 0xffu;
      out[8 * i + 2 * j] = HEX[byte >> 4];
      out[8 * i + 2 * j + 1] = HEX[byte & 15];
    }
  out[64] = '\0';
}

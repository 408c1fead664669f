/* sha256.c — SHA-256 of a byte string, as lowercase hex, from OpenSSL's
 * libcrypto (EVP).
 *
 * Used to fingerprint the spec text so an archive can refuse a different
 * spec (docs/ARCHIVE.md); tests check it against the FIPS 180-4 example
 * vectors. */
#include "curvsweep/spec.h"

#include <openssl/evp.h>
#include <string.h>

void spec_sha256_hex(const void *data, size_t len, char out[65]) {
  // data: len bytes; out: 64 hex characters + NUL
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  static const char hex[] = "0123456789abcdef";
  // EVP_Digest fails only on allocation failure inside libcrypto; the
  // all-zero digest it leaves then can never equal a real spec's hash, so an
  // archive check fails closed.
  if (EVP_Digest(data, len, digest, &n, EVP_sha256(), NULL) != 1 || n != 32) {
    memset(out, '0', 64);
    out[64] = '\0';
    return;
  }
  for (unsigned int i = 0; i < 32; i++) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 15];
  }
  out[64] = '\0';
}

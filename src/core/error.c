/* error.c — per-thread error message behind the CS_CHECK convention. */
#include "curvsweep/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char cs_error_text[CS_ERROR_MESSAGE_BYTES];

int cs_error(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cs_error_text, sizeof cs_error_text, fmt, ap);
  va_end(ap);
  return code;
}

int cs_error_context(int code, const char *fmt, ...) {
  char old[sizeof cs_error_text];
  memcpy(old, cs_error_text, sizeof old);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(cs_error_text, sizeof cs_error_text, fmt, ap);
  va_end(ap);
  /* append the old message after the prefix, truncating at the buffer end */
  size_t used = n < 0 ? 0 : (size_t)n < sizeof cs_error_text ? (size_t)n : sizeof cs_error_text - 1;
  size_t room = sizeof cs_error_text - 1 - used, len = strlen(old);
  if (len > room) len = room;
  memcpy(cs_error_text + used, old, len);
  cs_error_text[used + len] = '\0';
  return code;
}

const char *cs_error_message(void) { return cs_error_text; }

void cs_error_clear(void) { cs_error_text[0] = '\0'; }

int cs_first_error_note(cs_first_error *first, int rc) {
  if (first->rc == CS_OK && rc != CS_OK) {
    first->rc = rc;
    memcpy(first->message, cs_error_text, sizeof first->message);
  }
  return first->rc;
}

int cs_first_error_end(const cs_first_error *first) {
  if (first->rc == CS_OK) return CS_OK;
  return cs_error(first->rc, "%s", first->message);
}

int cs_calloc_bytes(void **ptr, size_t n, size_t size) {
  *ptr = NULL;
  if (n == 0) n = 1;
  if (size == 0 || n > (SIZE_MAX - 63) / size)
    return cs_error(CS_ERR_NOMEM, "out of memory allocating %zu x %zu bytes", n, size);
  /* zeroed and aligned to 64 bytes (a cache line and one AVX-512 vector):
   * the vectorised loops of training then never split a load or store
   * across two lines (docs/DECISIONS.md, "Training speed") */
  size_t bytes = (n * size + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, bytes);
  if (!p) return cs_error(CS_ERR_NOMEM, "out of memory allocating %zu x %zu bytes", n, size);
  memset(p, 0, bytes);
  *ptr = p;
  return CS_OK;
}

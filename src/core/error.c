/* error.c — per-thread error message behind the CS_CHECK convention. */
#include "curvsweep/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char cs_error_text[2048];

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

int cs_calloc_bytes(void **ptr, size_t n, size_t size) {
  *ptr = NULL;
  if (n == 0) n = 1;
  void *p = calloc(n, size);
  if (!p) return cs_error(CS_ERR_NOMEM, "out of memory allocating %zu x %zu bytes", n, size);
  *ptr = p;
  return CS_OK;
}

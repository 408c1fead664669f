/* clock.h — time helpers shared by every module (one home for each). */
#ifndef CURVSWEEP_CLOCK_H
#define CURVSWEEP_CLOCK_H

#include <stddef.h>

/* Seconds on the monotonic clock (for durations, never for dates). */
double cs_monotonic_seconds(void);

/* UTC now as ISO 8601 "2026-05-01T12:34:56Z", or with compact != 0 as
 * "20260501T123456Z" (for file names). buf: at least 21 bytes. */
void cs_utc_now(char *buf, size_t len, int compact);

#endif

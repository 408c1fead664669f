/* error.h — error codes and the one checking macro (PETSc style).
 *
 * Every fallible library function returns an int: CS_OK (0) or one of the
 * codes below, after recording a human-readable message with cs_error().
 * Callers propagate with CS_CHECK(call). Library code never prints and never
 * exits; only src/cli turns a code into a message and an exit status
 * (CS_ERR_INPUT -> 2, anything else -> 1). */
#ifndef CURVSWEEP_ERROR_H
#define CURVSWEEP_ERROR_H

#include <stddef.h>

enum {
  CS_OK = 0,
  CS_ERR_INPUT,    /* bad spec, archive or command line: the user's to fix (exit 2) */
  CS_ERR_IO,       /* file system or HDF5 failure at run time */
  CS_ERR_NOMEM,    /* allocation failed */
  CS_ERR_NUMERIC,  /* non-finite value where a finite one is required */
  CS_ERR_MPI,      /* communication failure */
  CS_ERR_INTERRUPTED, /* stopped by a signal; resumable */
  CS_ERR_INTERNAL  /* a bug: an invariant did not hold */
};

/* Record a message for code and return code (so: return cs_error(...);).
 * The message is kept per thread until the next cs_error(). */
int cs_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepend context ("while reading X: ") to the current message; returns code. */
int cs_error_context(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cs_error_message(void);
void cs_error_clear(void);

/* The cleanup idiom (one for the whole code base). A function that owns
 * nothing yet checks each call with CS_CHECK(call) and returns at the first
 * error. A function that owns resources (memory, files, HDF5 ids,
 * communicators) runs its steps as one chain and releases everything at
 * one exit:
 *
 *   int rc = CS_OK;
 *   double *buf = NULL;
 *   if (!rc) rc = CS_CALLOC(buf, n);
 *   if (!rc) rc = step(buf);
 *   free(buf);
 *   return rc;
 *
 * The failing step has recorded the message (cs_error); the exit does not
 * overwrite it. No goto, and no hand-written "free and return" on a
 * failure branch. */

/* First error wins: cleanups that can fail (closing a file, releasing a
 * team, ending a run) run after a failure too, and what the caller reports
 * is the first failure, its code and its message, whatever a later step
 * records. Note each step's code right after the step (its message is the
 * current one):
 *
 *   cs_first_error first = {0};
 *   cs_first_error_note(&first, work());
 *   cs_first_error_note(&first, close_it());   // runs, its failure kept only if first
 *   return cs_first_error_end(&first);
 *
 * first.message holds the first failure's message meanwhile (to name it
 * beside a later one). */
#define CS_ERROR_MESSAGE_BYTES 2048
typedef struct {
  int rc;                                /* the first error (CS_OK: none yet) */
  char message[CS_ERROR_MESSAGE_BYTES];  /* its message */
} cs_first_error;
/* The first non-zero rc noted is kept with the current message; returns
 * first->rc. */
int cs_first_error_note(cs_first_error *first, int rc);
/* CS_OK, or the first error with its message made the current one again. */
int cs_first_error_end(const cs_first_error *first);

/* Propagate a non-zero return code to the caller. */
#define CS_CHECK(call)                 \
  do {                                 \
    int cs_rc_ = (call);               \
    if (cs_rc_ != CS_OK) return cs_rc_; \
  } while (0)

/* Allocate n zeroed elements of *ptr's type, 64-byte aligned (free() releases
 * them); CS_ERR_NOMEM on failure. */
int cs_calloc_bytes(void **ptr, size_t n, size_t size);
#define CS_CALLOC(ptr, n) cs_calloc_bytes((void **)&(ptr), (size_t)(n), sizeof *(ptr))

#endif

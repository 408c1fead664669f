/* archive_test.h — fault injection for tests (tests/test_archive_*.c,
 * tests/test_fields.c), kept out of the public header
 * include/curvsweep/archive.h. */
#ifndef CURVSWEEP_ARCHIVE_TEST_H
#define CURVSWEEP_ARCHIVE_TEST_H

#include "curvsweep/archive.h"

/* The journal part of archive_write_result (record appended and synced,
 * archive marked as being written) without the HDF5 write, as a process
 * killed inside archive_write_result leaves it; the next resume rebuilds
 * the file from the journal, this result included. Same checks and errors
 * as archive_write_result. */
int archive_test_journal_only(cs_archive *a, const cs_cell_result *r);

/* How long readers and writers wait for the archive's lock (docs/ARCHIVE.md,
 * "Live readers"), instead of ARCHIVE_READ_WAIT_SECONDS and
 * ARCHIVE_WRITE_WAIT_SECONDS; a negative value restores the default. */
void archive_test_lock_wait(double seconds);

#endif

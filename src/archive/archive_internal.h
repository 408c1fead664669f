/* archive_internal.h — what archive.c shares with the other files of
 * src/archive (not part of the public API in include/curvsweep). */
#ifndef CURVSWEEP_ARCHIVE_INTERNAL_H
#define CURVSWEEP_ARCHIVE_INTERNAL_H

#include <hdf5.h>

/* archive.c: cs_error with the innermost HDF5 reason appended ("<message>: <reason>"). */
int archive_h5_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* archive.c: dataset creation property list: chunked, shuffle + deflate + Fletcher32. */
hid_t archive_dcpl(int rank, const hsize_t *chunk);

/* archive.c: fsync the directory holding path (a created, renamed or removed entry). */
void archive_fsync_dir(const char *path);

/* archive_lock.c: open (creating if absent) and lock the journal of an
 * archive, lock-then-verify (see there). *fd: the locked descriptor;
 * *created: the locked journal is empty. CS_ERR_INPUT when another process
 * holds it or it is not a regular file. */
int archive_lock_journal(const char *journal_path, const char *archive_path, int *fd, int *created);

/* archive_spec.c: /spec, the spec text exactly as read, as a 1-D dataset of
 * one fixed-length string (chunked, so Fletcher32-checksummed like every
 * other dataset). Archives written before this layout carry a scalar /spec;
 * it is read too. */
int archive_spec_write(hid_t file, const char *text, const char *path);
/* The text of /spec (malloc'ed, NUL-terminated); every failure is a
 * CS_ERR_INPUT refusal naming the archive and /spec. */
int archive_spec_read(hid_t file, const char *path, char **text);
/* /spec's text must hash to sha (the root attribute spec_sha256). */
int archive_spec_verify(hid_t file, const char *path, const char *sha);

#endif

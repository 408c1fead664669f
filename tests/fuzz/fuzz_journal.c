/* fuzz_journal.c — libFuzzer harness of the journal scanner
 * (src/archive/journal/archive_journal.c, docs/ARCHIVE.md "Journal") and of the
 * record payloads it hands to replay (result_unpack). tests/fuzz/README.md.
 *
 * The first input byte picks the mode:
 *   even: the rest is a journal file as found on disk (header, records,
 *         CRCs as they are): what a resume reads after a crash or a bad
 *         disk;
 *   odd:  the rest is a list of records (kind byte, 16-bit little-endian
 *         length, payload) written with the journal's own header and
 *         append, so every CRC is right and the fuzzer reaches the payload
 *         decoding behind it (a record that is well-framed but whose
 *         contents make no sense).
 * Either way the scan runs, and every record it accepts is decoded as
 * replay decodes it. The scan must never claim bytes beyond the file. */
#include "archive_internal.h"
#include "curvsweep/result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Write the framed records of data into the journal a->journal_fd. */
static void fuzz_journal_frame(cs_archive *a, const uint8_t *data, size_t size) {
  if (archive_journal_reset(a, 0) != CS_OK) abort();
  size_t pos = 0;
  while (pos + 3 <= size) {
    uint32_t kind = data[pos] % 6;  // 0 and 5: kinds no writer produces
    size_t n = data[pos + 1] | (size_t)data[pos + 2] << 8;
    pos += 3;
    if (n > size - pos) n = size - pos;
    if (archive_journal_append(a, kind, data + pos, n, 0) != CS_OK) abort();
    pos += n;
  }
  if (size > 0 && (data[0] & 1)) archive_journal_set_dirty(a, 1, 0);
}

/* Decode every accepted record as replay and the verified close do. */
static void fuzz_journal_decode(int fd, const archive_journal_scan *s) {
  for (int64_t i = 0; i < s->n; i++) {
    const archive_record_ref *ref = &s->recs[i];
    if (ref->offset < 0 || ref->offset + (off_t)ref->length > s->size) abort();
    unsigned char *buf = malloc(ref->length ? ref->length : 1);
    if (!buf) abort();
    if (pread(fd, buf, ref->length, ref->offset) != (ssize_t)ref->length) abort();
    if (ref->kind == ARCHIVE_REC_RESULT) {
      cs_cell_result r;
      memset(&r, 0, sizeof r);
      if (result_unpack(buf, ref->length, &r) == CS_OK) result_free(&r);
      else cs_error_clear();
    } else {
      archive_run_payload p;
      if (ref->length != sizeof p) abort();  // the scan checks run record sizes
      memcpy(&p, buf, sizeof p);
    }
    free(buf);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int fd = memfd_create("fuzz.journal", MFD_CLOEXEC);
  if (fd < 0) abort();
  cs_archive a;
  memset(&a, 0, sizeof a);
  a.journal_fd = fd;
  a.path = "fuzz.h5";
  a.journal_path = "fuzz.h5.journal";
  if (data[0] & 1) {
    fuzz_journal_frame(&a, data + 1, size - 1);
  } else if (size > 1 && write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) {
    abort();
  }
  archive_journal_scan s;
  if (archive_journal_scan_fd(fd, a.journal_path, &s) == CS_OK) {
    if (s.good_end > s.size || s.n < 0) abort();
    fuzz_journal_decode(fd, &s);
    archive_scan_free(&s);
  } else {
    cs_error_clear();
  }
  close(fd);
  return 0;
}

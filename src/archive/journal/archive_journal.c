/* archive_journal.c — the journal beside an archive (docs/ARCHIVE.md,
 * "Journal"): header and records with CRC-32, append, scan up to the first
 * bad record, the dirty flag, seeding from an archive, and replay. */
#include "archive_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

/* Journal file header and record header (docs/ARCHIVE.md, "Journal"). */
#define ARCHIVE_JOURNAL_MAGIC "CSJRNL01"
#define ARCHIVE_RECORD_MAGIC 0x31525343u /* "CSR1" little-endian */

typedef struct {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint32_t result_bytes, stats_bytes, tensor_bytes, run_bytes;
  char spec_sha256[72];
  uint32_t crc;      /* CRC-32 of every byte before it */
  uint32_t dirty;    /* 1 while an HDF5 write may be in progress (not in the CRC) */
} archive_journal_header;

typedef struct {
  uint32_t magic;
  uint32_t kind;
  uint64_t length;   /* payload bytes */
  uint32_t crc;      /* CRC-32 of the 16 bytes above and the payload */
  uint32_t reserved;
} archive_record_header;

/* CRC-32 (IEEE 802.3, reflected 0xEDB88320, as docs/ARCHIVE.md says):
 * zlib's crc32, continued from crc over n bytes of data. */
static uint32_t archive_crc32(uint32_t crc, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n > 0) {  // zlib takes uInt lengths
    uInt k = n > (size_t)1 << 30 ? (uInt)1 << 30 : (uInt)n;
    crc = (uint32_t)crc32(crc, p, k);
    p += k, n -= k;
  }
  return crc;
}

static void archive_journal_header_make(archive_journal_header *h, const char *sha) {
  memset(h, 0, sizeof *h);
  memcpy(h->magic, ARCHIVE_JOURNAL_MAGIC, 8);
  h->version = 1;
  h->header_bytes = sizeof *h;
  h->result_bytes = sizeof(cs_cell_result);
  h->stats_bytes = sizeof(geom_stats);
  h->tensor_bytes = sizeof(cs_tensor);
  h->run_bytes = sizeof(cs_run_info);
  cs_copy_str(h->spec_sha256, sizeof h->spec_sha256, sha);
  h->crc = archive_crc32(0, h, offsetof(archive_journal_header, crc));
}

/* Header and payload of a record in one system call (short writes resumed). */
static int archive_writev_all(int fd, struct iovec iov[2]) {
  int k = 0;
  while (k < 2) {
    ssize_t w = writev(fd, iov + k, 2 - k);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0 && iov[k].iov_len > 0) return -1;
    size_t left = w > 0 ? (size_t)w : 0;
    while (k < 2 && left >= iov[k].iov_len) left -= iov[k].iov_len, k++;
    if (k < 2) iov[k].iov_base = (char *)iov[k].iov_base + left, iov[k].iov_len -= left;
  }
  return 0;
}


/* Append one record (synced when asked); on failure the file is cut back
 * so no torn record can hide later ones. *payload_at (may be NULL): where
 * the payload landed. */
int archive_journal_append_at(cs_archive *a, uint32_t kind, const void *payload, size_t n, int sync,
                              off_t *payload_at) {
  archive_record_header rh = {ARCHIVE_RECORD_MAGIC, kind, n, 0, 0};
  rh.crc = archive_crc32(archive_crc32(0, &rh, offsetof(archive_record_header, crc)), payload, n);
  off_t end = lseek(a->journal_fd, 0, SEEK_END);
  struct iovec iov[2] = {{&rh, sizeof rh}, {(void *)payload, n}};
  if (end < 0 || archive_writev_all(a->journal_fd, iov) != 0 ||
      (sync && fdatasync(a->journal_fd) != 0)) {
    int err = errno;
    if (end >= 0 && ftruncate(a->journal_fd, end) == 0) fdatasync(a->journal_fd);
    return cs_error(CS_ERR_IO, "cannot append to the journal %s: %s", a->journal_path, strerror(err));
  }
  if (kind != ARCHIVE_REC_COVER) a->journal_records++;
  if (payload_at) *payload_at = end + (off_t)sizeof rh;
  return CS_OK;
}

int archive_journal_append(cs_archive *a, uint32_t kind, const void *payload, size_t n, int sync) {
  return archive_journal_append_at(a, kind, payload, n, sync, NULL);
}

/* Start the journal afresh: the header, and a COVER record when the archive
 * holds no result the journal lacks (a new archive). Synced. */
int archive_journal_reset(cs_archive *a, int covers) {
  archive_journal_header h;
  archive_journal_header_make(&h, a->spec_sha256);
  if (ftruncate(a->journal_fd, 0) != 0 || lseek(a->journal_fd, 0, SEEK_SET) != 0 ||
      cs_write_all(a->journal_fd, &h, sizeof h) != 0)
    return cs_error(CS_ERR_IO, "cannot write the journal %s: %s", a->journal_path, strerror(errno));
  a->journal_records = 0;
  a->journal_covers = 0;
  a->dirty = 0;
  if (covers) CS_CHECK(archive_journal_append(a, ARCHIVE_REC_COVER, "", 0, 0));
  if (fdatasync(a->journal_fd) != 0)
    return cs_error(CS_ERR_IO, "cannot sync the journal %s: %s", a->journal_path, strerror(errno));
  a->journal_covers = covers;
  return CS_OK;
}

/* The dirty flag in the journal header: set while an HDF5 write on the
 * archive may be in progress. Found set on resume, the file is suspect and
 * is rebuilt from the journal. */
int archive_journal_set_dirty(cs_archive *a, uint32_t dirty, int sync) {
  if (pwrite(a->journal_fd, &dirty, sizeof dirty, offsetof(archive_journal_header, dirty)) !=
          (ssize_t)sizeof dirty ||
      (sync && fdatasync(a->journal_fd) != 0))
    return cs_error(CS_ERR_IO, "cannot write the journal %s: %s", a->journal_path, strerror(errno));
  a->dirty = dirty;
  return CS_OK;
}

/* Open (creating if absent) and lock the journal (archive_lock.c).
 * *created: the locked journal is empty (it may be removed on failure). */
int archive_journal_lock(cs_archive *a, int *created) {
  return archive_lock_journal(a->journal_path, a->path, &a->journal_fd, created);
}

/* Release the journal after an error in open: close, and remove it only
 * if this call created it. */
void archive_journal_abandon(cs_archive *a, int created) {
  if (a->journal_fd < 0) return;
  close(a->journal_fd);
  a->journal_fd = -1;
  if (created) unlink(a->journal_path);
}

void archive_scan_free(archive_journal_scan *s) {
  free(s->recs);
  memset(s, 0, sizeof *s);
}

/* Read the journal: header, then records up to the first torn / short /
 * bad-checksum one. Never modifies the file. A header of another build
 * (struct sizes) is CS_ERR_INPUT; a torn header means no records. */
int archive_journal_scan_fd(int fd, const char *jpath, archive_journal_scan *s) {
  memset(s, 0, sizeof *s);
  struct stat st;
  if (fstat(fd, &st) != 0) return cs_error(CS_ERR_IO, "cannot stat %s: %s", jpath, strerror(errno));
  s->size = st.st_size;
  archive_journal_header h, want;
  archive_journal_header_make(&want, "");
  if (s->size < (off_t)sizeof h || lseek(fd, 0, SEEK_SET) != 0 || cs_read_all(fd, &h, sizeof h) != 0)
    return CS_OK;  // empty or torn header: a journal that never got a record
  if (memcmp(h.magic, ARCHIVE_JOURNAL_MAGIC, 8) != 0 ||
      h.crc != archive_crc32(0, &h, offsetof(archive_journal_header, crc)))
    return cs_error(CS_ERR_INPUT, "%s is not a curvsweep journal (bad header): move it away if it "
                    "is not yours", jpath);
  if (h.version != want.version || h.header_bytes != want.header_bytes ||
      h.result_bytes != want.result_bytes || h.stats_bytes != want.stats_bytes ||
      h.tensor_bytes != want.tensor_bytes || h.run_bytes != want.run_bytes)
    return cs_error(CS_ERR_INPUT, "%s was written by a different curvsweep build (record layout "
                    "differs): resume with the build that wrote it", jpath);
  s->header_ok = 1;
  s->dirty = h.dirty != 0;
  cs_copy_str(s->sha, sizeof s->sha, h.spec_sha256);
  s->good_end = (off_t)sizeof h;
  // records
  int64_t cap = 0;
  unsigned char *buf = NULL;
  size_t buf_cap = 0;
  int rc = CS_OK;
  for (;;) {
    archive_record_header rh;
    off_t at = s->good_end;
    if (s->size - at < (off_t)sizeof rh || cs_read_all(fd, &rh, sizeof rh) != 0) break;
    if (rh.magic != ARCHIVE_RECORD_MAGIC || rh.length > (uint64_t)(s->size - at - (off_t)sizeof rh))
      break;
    if (rh.length > buf_cap) {
      unsigned char *nb = realloc(buf, rh.length);
      if (!nb) {
        rc = cs_error(CS_ERR_NOMEM, "out of memory reading the journal %s", jpath);
        break;
      }
      buf = nb, buf_cap = rh.length;
    }
    if (cs_read_all(fd, buf, rh.length) != 0) break;
    uint32_t crc = archive_crc32(archive_crc32(0, &rh, offsetof(archive_record_header, crc)), buf, rh.length);
    if (crc != rh.crc) break;
    archive_record_ref ref = {rh.kind, at + (off_t)sizeof rh, rh.length, -1, 0, 0};
    if (rh.kind == ARCHIVE_REC_RESULT) {
      if (rh.length < sizeof(cs_cell_result)) break;
      cs_cell_result head;
      memcpy(&head, buf, sizeof head);
      ref.cell_id = head.cell_id, ref.status = head.status, ref.attempts = head.attempts;
    } else if (rh.kind == ARCHIVE_REC_RUN_BEGIN || rh.kind == ARCHIVE_REC_RUN_END) {
      if (rh.length != sizeof(archive_run_payload)) break;
    } else if (rh.kind != ARCHIVE_REC_COVER || rh.length != 0) {
      break;
    }
    s->good_end = ref.offset + (off_t)rh.length;
    if (rh.kind == ARCHIVE_REC_COVER) {
      s->covers = 1;
      continue;
    }
    if (s->n == cap) {
      cap = cap ? 2 * cap : 64;
      archive_record_ref *nr = realloc(s->recs, (size_t)cap * sizeof *nr);
      if (!nr) {
        rc = cs_error(CS_ERR_NOMEM, "out of memory reading the journal %s", jpath);
        break;
      }
      s->recs = nr;
    }
    s->recs[s->n++] = ref;
  }
  free(buf);
  if (rc) archive_scan_free(s);
  return rc;
}

int archive_journal_read_payload(int fd, const archive_record_ref *ref, const char *jpath,
                                        unsigned char **buf) {
  *buf = NULL;
  int rc = cs_calloc_bytes((void **)buf, ref->length ? ref->length : 1, 1);
  if (!rc && pread(fd, *buf, ref->length, ref->offset) != (ssize_t)ref->length)
    rc = cs_error(CS_ERR_IO, "cannot read the journal %s: %s", jpath, strerror(errno));
  if (rc) free(*buf), *buf = NULL;
  return rc;
}

int archive_journal_read_result(const cs_archive *a, const archive_record_ref *ref, cs_cell_result *r) {
  unsigned char *buf = NULL;
  memset(r, 0, sizeof *r);
  int rc = archive_journal_read_payload(a->journal_fd, ref, a->journal_path, &buf);
  if (!rc) rc = result_unpack(buf, ref->length, r);
  free(buf);
  return rc;
}

int archive_journal_result(cs_archive *a, const cs_cell_result *r, int sync) {
  unsigned char *buf = NULL;
  size_t n = 0;
  CS_CHECK(result_pack(r, &buf, &n));
  int rc = archive_journal_append(a, ARCHIVE_REC_RESULT, buf, n, sync);
  free(buf);
  return rc;
}

/* Apply journaled results (refs into this journal, in order) to the open
 * file as one batch (archive_write.c): one write per table, one commit point. */
int archive_journal_apply_refs(cs_archive *a, hid_t file, const archive_record_ref *refs, int64_t n) {
  archive_batch b;
  memset(&b, 0, sizeof b);
  int rc = CS_OK;
  for (int64_t i = 0; i < n && !rc; i++) {
    cs_cell_result res;
    if ((rc = archive_journal_read_result(a, &refs[i], &res))) {
      result_free(&res);
      rc = cs_error_context(rc, "%s: journal record of cell %" PRId64 ": ", a->journal_path,
                            refs[i].cell_id);
      break;
    }
    rc = archive_check_result(a, &res);
    if (!rc) rc = archive_batch_add(a, file, &b, &res);
    result_free(&res);
  }
  if (!rc) rc = archive_batch_commit(a, file, &b);
  archive_batch_free(&b);
  return rc;
}

/* Make the journal cover the archive before the first write of a session
 * whose journal is new beside an archive that may hold results (a merged
 * archive, or one whose journal was removed when it was complete): every
 * finished result and every /runs row of the file, then COVER; one sync. */
int archive_journal_seed(cs_archive *a) {
  if (a->journal_fd < 0 || a->journal_covers) return CS_OK;
  archive_reader rd;
  CS_CHECK(archive_reader_open(a->path, &rd));
  cs_cell_result *res = NULL;
  cs_run_info *runs = NULL;
  int64_t n = 0;
  hsize_t nr = 0;
  int rc = archive_read_results_rd(&rd, &res, &n);
  if (!rc) {
    hid_t mt = archive_run_row_type();
    rc = archive_read_table(&rd, "runs", mt, (void **)&runs, &nr);
    H5Tclose(mt);
  }
  archive_reader_close(&rd);
  for (int64_t i = 0; i < n && !rc; i++)
    if (res[i].status != CELL_PENDING) rc = archive_journal_result(a, &res[i], 0);
  for (hsize_t k = 0; k < nr && !rc; k++) {
    archive_run_payload p;
    memset(&p, 0, sizeof p);
    p.row = (int64_t)k;
    p.info = runs[k];
    rc = archive_journal_append(a, ARCHIVE_REC_RUN_BEGIN, &p, sizeof p, 0);
  }
  if (!rc) rc = archive_journal_append(a, ARCHIVE_REC_COVER, "", 0, 1);
  if (!rc) a->journal_covers = 1;
  archive_results_free(res, n);
  free(runs);
  return rc;
}

/* Around every HDF5 write on the archive: the journal covers it and the
 * dirty flag is set (synced here, or by the record append that follows);
 * cleared once the file is closed again. */
int archive_window_begin(cs_archive *a, int sync) {
  if (a->journal_fd < 0) return CS_OK;
  CS_CHECK(archive_journal_seed(a));
  return archive_journal_set_dirty(a, 1, sync);
}

int archive_window_end(cs_archive *a) {
  // a result whose HDF5 write failed keeps the flag set until it is applied
  // (docs/ARCHIVE.md, "Write protocol", step 4), whatever writes follow
  if (a->journal_fd < 0 || a->unapplied > 0) return CS_OK;
  return archive_journal_set_dirty(a, 0, 0);
}

/* last[row] = the index of the last result record of each row of the
 * archive (-1: none); a record of a cell the archive does not list is a
 * refusal. */
static int journal_last_results(const cs_archive *a, const archive_journal_scan *s,
                                int64_t *last) {
  for (int64_t r = 0; r < a->n_rows; r++) last[r] = -1;
  for (int64_t i = 0; i < s->n; i++) {
    if (s->recs[i].kind != ARCHIVE_REC_RESULT) continue;
    int64_t row = archive_find_row(a, s->recs[i].cell_id);
    if (row < 0)
      return cs_error(CS_ERR_INPUT, "%s: the journal %s holds cell %" PRId64 ", which the archive "
                      "does not list: is this journal from another shard's archive?", a->path,
                      a->journal_path, s->recs[i].cell_id);
    last[row] = i;
  }
  return CS_OK;
}

/* Apply the scanned journal to the open file. rebuilt: the file was just
 * created from the spec (every /runs record is appended in order). Results:
 * the last record of each cell wins and is applied unless the file already
 * holds that state (status and attempts). Runs: a begin is appended when
 * its row is the next one (or always when rebuilt), an end rewrites the row
 * of its begin. dry: change nothing, set *needed when some record would be
 * applied. */
int archive_journal_replay(cs_archive *a, hid_t file, const archive_journal_scan *s,
                                  int rebuilt, int dry, int *needed) {
  int64_t *last = NULL, *run_map = NULL, n_map = 0, n_todo = 0;
  archive_record_ref *todo = NULL;
  int rc = CS_OK;
  if (needed) *needed = 0;
  if (s->n == 0) return CS_OK;
  if (!rc) rc = CS_CALLOC(last, a->n_rows);
  if (!rc) rc = CS_CALLOC(todo, s->n);
  if (!rc) rc = CS_CALLOC(run_map, 2 * s->n);  // pairs (journal row, file row)
  if (!rc) rc = journal_last_results(a, s, last);
  for (int64_t i = 0; i < s->n && !rc; i++) {
    const archive_record_ref *ref = &s->recs[i];
    unsigned char *buf = NULL;
    if (ref->kind == ARCHIVE_REC_RESULT) {
      int64_t row = archive_find_row(a, ref->cell_id);
      if (last[row] != i) continue;
      if (a->row_status[row] == ref->status && a->row_attempts[row] == ref->attempts) continue;
      if (dry) {
        *needed = 1;
        break;
      }
      todo[n_todo++] = *ref;  // applied below, as one batch
    } else {
      archive_run_payload p;
      if ((rc = archive_journal_read_payload(a->journal_fd, ref, a->journal_path, &buf))) break;
      memcpy(&p, buf, sizeof p);
      free(buf);
      if (ref->kind == ARCHIVE_REC_RUN_BEGIN) {
        if (!rebuilt && p.row != a->n_runs) continue;  // already in the file
        if (dry) {
          *needed = 1;
          break;
        }
        if ((rc = archive_apply_run(a, file, a->n_runs, &p.info))) break;
        // map the journal's row to the file's (latest begin wins)
        int64_t k = 0;
        while (k < n_map && run_map[2 * k] != p.row) k++;
        run_map[2 * k] = p.row, run_map[2 * k + 1] = a->n_runs - 1;
        if (k == n_map) n_map++;
      } else {
        int64_t target = -1;
        for (int64_t k = 0; k < n_map; k++)
          if (run_map[2 * k] == p.row) target = run_map[2 * k + 1];
        if (target < 0 && !rebuilt && p.row < a->n_runs) {
          // the begin was applied in an earlier session: same run if same start and hosts
          cs_run_info cur;
          if (archive_read_run(file, p.row, &cur) == 0 && !strcmp(cur.start, p.info.start) &&
              !strcmp(cur.hosts, p.info.hosts))
            target = p.row;
        }
        cs_run_info cur;
        if (target < 0 || (archive_read_run(file, target, &cur) == 0 && archive_same_run(&cur, &p.info)))
          continue;
        if (dry) {
          *needed = 1;
          break;
        }
        rc = archive_apply_run(a, file, target, &p.info);
      }
    }
  }
  if (!rc && n_todo > 0) rc = archive_journal_apply_refs(a, file, todo, n_todo);
  free(todo);
  free(last);
  free(run_map);
  return rc;
}

/* A journal holding records of another spec is never applied nor reset. */
int archive_journal_check_spec(const cs_archive *a, const archive_journal_scan *s) {
  if (s->header_ok && s->n > 0 && strcmp(s->sha, a->spec_sha256) != 0)
    return cs_error(CS_ERR_INPUT, "the journal %s was written by a different spec (sha256 %.12s…, "
                    "this spec %.12s…): finish that sweep, or move the journal away",
                    a->journal_path, s->sha, a->spec_sha256);
  return CS_OK;
}

/* An input whose writer was killed inside a write may lack journaled
 * results: it must be resumed (repaired) before it is merged. */
int archive_check_not_interrupted(const char *path) {
  char *jpath = cs_strdup_printf("%s.journal", path);
  if (!jpath) return cs_error(CS_ERR_NOMEM, "out of memory");
  // a regular file, never through a link, never blocking on a FIFO
  // (docs/SECURITY.md, "Hostile archives: second audit")
  const char *why = NULL;
  int fd = cs_open_regular(jpath, O_RDONLY | O_NOFOLLOW, 0, NULL, &why), rc = CS_OK;
  if (fd == -2 || (fd == -1 && errno == ELOOP)) {
    rc = cs_error(CS_ERR_INPUT, "the journal %s of the archive %s is %s: a journal must be a "
                  "regular file (docs/SECURITY.md); move it away", jpath, path,
                  fd == -2 ? why : "a symbolic link");
    free(jpath);
    return rc;
  }
  archive_journal_header h;
  if (fd >= 0 && cs_read_all(fd, &h, sizeof h) == 0 &&
      !memcmp(h.magic, ARCHIVE_JOURNAL_MAGIC, 8) && h.dirty)
    rc = cs_error(CS_ERR_INPUT, "%s was interrupted during a write (its journal %s says so): resume "
                  "it first (curvsweep run with its spec and -o %s), then merge", path, jpath, path);
  if (fd >= 0) close(fd);
  free(jpath);
  return rc;
}

/* Read back what the journal records before it is removed (docs/ARCHIVE.md,
 * "Resume protocol"): one read of the whole archive, then per cell the last
 * result record compared with the archive's result. */
int archive_journal_verify(cs_archive *a, const archive_journal_scan *s, int *intact) {
  *intact = 0;
  archive_reader rd;
  if (archive_reader_open(a->path, &rd) != CS_OK) {
    cs_error_clear();
    return CS_OK;
  }
  cs_cell_result *res = NULL;
  cs_run_info *runs = NULL;
  int64_t n = 0, *last = NULL;
  hsize_t nr = 0;
  int ok = archive_read_results_rd(&rd, &res, &n) == CS_OK;
  if (ok) {
    hid_t mt = archive_run_row_type();
    ok = archive_read_table(&rd, "runs", mt, (void **)&runs, &nr) == CS_OK;
    H5Tclose(mt);
  }
  if (!ok) cs_error_clear();
  int rc = ok ? CS_CALLOC(last, n ? n : 1) : CS_OK;
  for (int64_t r = 0; ok && !rc && r < n; r++) last[r] = -1;
  for (int64_t i = 0; ok && !rc && i < s->n; i++) {
    if (s->recs[i].kind != ARCHIVE_REC_RESULT) continue;
    int64_t row = archive_find_row(rd.a, s->recs[i].cell_id);
    if (row < 0) ok = 0;  // a journaled cell the archive does not list
    else last[row] = i;
  }
  for (int64_t r = 0; ok && !rc && r < n; r++) {
    if (last[r] < 0) continue;
    const archive_record_ref *ref = &s->recs[last[r]];
    cs_cell_result jr;
    rc = archive_journal_read_result(a, ref, &jr);
    if (!rc) ok = archive_same_values(&jr, &res[r]);
    result_free(&jr);
  }
  archive_reader_close(&rd);
  archive_results_free(res, n);
  free(runs);
  free(last);
  *intact = ok && !rc;
  return rc;
}

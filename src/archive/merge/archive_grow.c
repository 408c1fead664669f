/* archive_grow.c — a resume with a spec that is not the archive's
 * (docs/ARCHIVE.md, "Identity" and "Growing a sweep"): refused, naming the
 * keys that differ, unless the new spec grows the archive's (every value of
 * every key of the old spec is one of the new; spec_compare), in which case
 * the archive is rebuilt for the new spec with every result kept, each under
 * the cell id its config has in the new grid, so that the run computes only
 * the new cells. */
#include "archive_internal.h"

#include "curvsweep/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The old file stays, as ARCHIVE.before-grow-<UTC time>[-k] (a hard link,
 * made before the new file replaces it: at every moment the path holds the
 * old or the new archive). */
static int archive_keep_old(const char *path, char **kept) {
  char stamp[32];
  cs_utc_now(stamp, sizeof stamp, 1);
  int rc = CS_OK;
  *kept = NULL;
  for (int k = 0; k < 1000 && !rc && !*kept; k++) {
    char *name = k ? cs_strdup_printf("%s.before-grow-%s-%d", path, stamp, k)
                   : cs_strdup_printf("%s.before-grow-%s", path, stamp);
    if (!name) rc = cs_error(CS_ERR_NOMEM, "out of memory");
    else if (link(path, name) == 0) *kept = name, name = NULL, cs_fsync_dir(path);
    else if (errno != EEXIST)
      rc = cs_error(CS_ERR_IO, "cannot keep the archive %s as %s before growing it: %s", path,
                    name, strerror(errno));
    free(name);
  }
  if (!rc && !*kept)
    rc = cs_error(CS_ERR_IO, "cannot keep the archive %s before growing it: too many names taken",
                  path);
  return rc;
}

/* The journal, read back against the file: every result it records is
 * there (a grow drops it). */
static int archive_grow_settled(cs_archive *a) {
  if (a->journal_fd < 0 || a->journal_records == 0) return CS_OK;
  archive_journal_scan s;
  CS_CHECK(archive_journal_scan_fd(a->journal_fd, a->journal_path, &s));
  int intact = 0;
  int rc = archive_journal_verify(a, &s, &intact);
  archive_scan_free(&s);
  CS_CHECK(rc);
  if (!intact)
    return cs_error(CS_ERR_IO, "%s does not hold every result its journal %s records: resume it "
                    "with the spec it holds (curvsweep info shows it) before growing it", a->path,
                    a->journal_path);
  return CS_OK;
}

/* Grow path (of old_spec, listing the cells of old_mask) into spec: the
 * file brought up to date under its own spec and the writer's lock, the
 * new archive built beside it (every result mapped to spec's cells, the
 * cells of mask added pending), the old file kept, the journal restarted
 * under the new identity (empty: everything is in the new file), the new
 * file renamed into place. A crash leaves the old archive, or the new one,
 * at path, and a journal that refuses neither. */
static int archive_grow(const char *path, const cs_spec *old_spec, const unsigned char *old_mask,
                        const cs_spec *spec, const unsigned char *mask) {
  cs_archive *a = NULL;
  CS_CHECK(archive_writer_open(path, old_spec, ARCHIVE_RESUME, old_mask, &a));
  char *tmp = NULL, *kept = NULL;
  int rc = archive_flush(a);
  if (!rc) rc = archive_grow_settled(a);
  const char *inputs[1] = {path};
  if (!rc) rc = archive_merge_to_temp(path, inputs, 1, spec, mask, &tmp);
  if (!rc) rc = archive_keep_old(path, &kept);
  if (!rc && a->journal_fd >= 0) {
    cs_copy_str(a->spec_sha256, sizeof a->spec_sha256, spec_canonical_sha256(spec));
    rc = archive_journal_reset(a, 1);
  }
  if (!rc) rc = archive_rename_into_place(tmp, path);  // removes tmp on failure
  else if (tmp) unlink(tmp);
  free(tmp);
  free(kept);
  // the journal holds no record now: the close removes it
  int crc = archive_close(a);
  return rc ? rc : crc;
}

int archive_grow_if_needed(const char *path, const cs_spec *spec, const unsigned char *mask) {
  if (!cs_file_exists(path)) return CS_OK;
  // the identity first (root attributes and /spec): the same, nothing to do
  hid_t file;
  archive_meta meta;
  archive_probe_class cls;
  if (archive_probe(path, H5F_ACC_RDONLY, &file, &meta, &cls) != CS_OK) {
    cs_error_clear();  // the resume says what is wrong with it (or rebuilds it)
    return CS_OK;
  }
  archive_h5_fclose(file);
  if (!strcmp(meta.identity, spec_canonical_sha256(spec))) return CS_OK;
  archive_reader rd;
  if (archive_reader_open(path, &rd) != CS_OK) {
    // unreadable, foreign, damaged: the resume says so (or rebuilds it)
    cs_error_clear();
    return CS_OK;
  }
  cs_spec_relation rel = SPEC_SAME;
  int rc = spec_compare(rd.spec, spec, NULL, NULL, &rel);
  if (!rc && rel == SPEC_DIFFERS) rc = archive_identity_refusal(path, rd.spec, spec);
  // grows: the cells the archive lists are the ones its own resume selects
  int grows = !rc && rel != SPEC_SAME;
  cs_spec *old_spec = NULL;
  unsigned char *old_mask = NULL, *all = NULL;
  if (grows) {
    old_spec = rd.spec;
    rd.spec = NULL;
    rd.a->spec = NULL;
    rc = CS_CALLOC(old_mask, spec_cell_count(old_spec) ? spec_cell_count(old_spec) : 1);
  }
  for (int64_t r = 0; grows && !rc && r < rd.a->n_rows; r++) old_mask[rd.a->row_cell[r]] = 1;
  archive_reader_close(&rd);
  if (grows && !rc && !mask) {  // every cell of the new spec
    rc = CS_CALLOC(all, spec_cell_count(spec));
    if (!rc) memset(all, 1, (size_t)spec_cell_count(spec));
    mask = all;
  }
  if (grows && !rc) rc = archive_grow(path, old_spec, old_mask, spec, mask);
  free(old_mask), free(all);
  spec_free(old_spec);
  return rc;
}

/* archive_open.c — an archive opened for writing, without the grow that
 * archive_open_write does first (docs/ARCHIVE.md, "Write protocol",
 * "Resume protocol"): a new archive created under a temporary name and
 * renamed into place (create, overwrite), or an existing one resumed under
 * the journal's lock: identity and selection checked read-only, interrupted
 * writes cut back to committed_rows, unapplied journal records applied, and
 * an unreadable or suspect file rebuilt from spec + journal (the old file
 * set aside, never deleted). */
#include "archive_internal.h"
#include "curvsweep/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Does a table need the repair below? (read-only) */
static int archive_table_needs_repair(const cs_archive *a, hid_t file, const char *name, int *need) {
  hid_t ds;
  CS_CHECK(archive_dataset_open(file, name, a->path, &ds));
  hsize_t valid = 0, n = 0;
  int64_t committed = -1;
  int rc = archive_table_valid_rows(a, ds, a->path, name, &valid, &n);
  // the repair cuts the rows past `valid`, visiting every chunk slot they
  // declare: a tail no interrupted write leaves is refused before that
  if (!rc && valid < n) rc = archive_table_check_tail(ds, n, a->path, name);
  archive_attr_read_i64(ds, "committed_rows", &committed, NULL);
  *need = !rc && (valid != n || committed != (int64_t)n);
  H5Dclose(ds);
  return rc;
}

/* Writer's repair at open: make committed_rows and the extent agree. */
static int archive_table_repair(const cs_archive *a, hid_t file, const char *name) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  if (ds < 0) return archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: no /%s", a->path, name);
  hsize_t valid = 0, n = 0;
  int rc = archive_table_valid_rows(a, ds, a->path, name, &valid, &n);
  if (!rc && valid < n && H5Dset_extent(ds, &valid) < 0)
    rc = archive_h5_error(CS_ERR_IO, "%s: cannot cut the unfinished rows of /%s", a->path, name);
  if (!rc) rc = archive_attr_write_i64(ds, "committed_rows", H5T_STD_I64LE, (int64_t)valid, a->path);
  H5Dclose(ds);
  return rc;
}

/* Set a damaged archive aside as ARCHIVE.damaged-<UTC time>[-k]. */
static int archive_set_aside(const char *path, char **aside_out) {
  char stamp[32];
  cs_utc_now(stamp, sizeof stamp, 1);
  char *aside = NULL;
  int rc = CS_OK;
  for (int k = 0; k < 1000 && !rc; k++) {
    free(aside);
    aside = k ? cs_strdup_printf("%s.damaged-%s-%d", path, stamp, k)
              : cs_strdup_printf("%s.damaged-%s", path, stamp);
    if (!aside) rc = cs_error(CS_ERR_NOMEM, "out of memory");
    else if (!cs_file_exists(aside)) break;
  }
  if (!rc && rename(path, aside) != 0)
    rc = cs_error(CS_ERR_IO, "cannot set the damaged archive %s aside as %s: %s", path, aside,
                  strerror(errno));
  if (!rc) cs_fsync_dir(path);
  if (!rc && aside_out) *aside_out = aside;
  else free(aside);
  return rc;
}

/* Rebuild from spec + journal: a complete new file listing the mask's
 * cells and every journaled cell is built under a temp name with every
 * record applied; then the old file (if any) is set aside, never deleted,
 * and the new one renamed into place. A crash at any point leaves the old
 * file or no file, and the journal, so the next resume starts over. */
int archive_rebuild(cs_archive *a, const cs_spec *spec, const unsigned char *mask,
                           const archive_journal_scan *s, int keep_rows) {
  int64_t nc = spec_cell_count(spec);
  unsigned char *sel = NULL;
  CS_CHECK(CS_CALLOC(sel, nc));
  for (int64_t c = 0; c < nc; c++) sel[c] = !mask || mask[c];
  // the rows the old file listed (when it could be read) stay listed
  for (int64_t r = 0; keep_rows && r < a->n_rows; r++)
    if (a->row_cell[r] >= 0 && a->row_cell[r] < nc) sel[a->row_cell[r]] = 1;
  int rc = CS_OK;
  for (int64_t i = 0; i < s->n && !rc; i++) {
    if (s->recs[i].kind != ARCHIVE_REC_RESULT) continue;
    if (s->recs[i].cell_id < 0 || s->recs[i].cell_id >= nc)
      rc = cs_error(CS_ERR_INPUT, "%s: journal record of cell %" PRId64 " outside the spec's 0..%"
                    PRId64, a->journal_path, s->recs[i].cell_id, nc - 1);
    else
      sel[s->recs[i].cell_id] = 1;
  }
  if (!rc) rc = archive_rows_from_mask(a, spec, sel);
  free(sel);
  CS_CHECK(rc);
  // the new file, complete, under a temp name
  char *tmp = NULL, *final_path = a->path;
  CS_CHECK(archive_create_temp(a, spec, &tmp));
  a->path = tmp;
  a->n_runs = 0;
  hid_t file;
  rc = archive_h5_session_open(a, &file);
  if (!rc) {
    rc = archive_journal_replay(a, file, s, 1, 0, NULL);
    rc = archive_h5_session_close(a, file, rc);
  }
  a->path = final_path;
  if (!rc) rc = cs_fsync_file(tmp);
  // the old file aside, the new one in place, the journal clean
  if (!rc && cs_file_exists(a->path)) rc = archive_set_aside(a->path, NULL);
  if (!rc) rc = archive_rename_into_place(tmp, a->path);
  else unlink(tmp);
  free(tmp);
  if (!rc && s->header_ok) rc = archive_journal_set_dirty(a, 0, 1);
  CS_CHECK(rc);
  // rows outside the mask were added for journaled cells: keep them unselected
  for (int64_t r = 0; r < a->n_rows; r++) a->row_selected[r] = !mask || mask[a->row_cell[r]];
  return CS_OK;
}

/* The selection of this open inside the listed rows: every selected cell
 * must be listed (another shard's archive is refused). */
static int archive_apply_mask(cs_archive *a, const cs_spec *spec, const unsigned char *mask) {
  int64_t nc = spec_cell_count(spec), missing = 0, first_missing = -1;
  for (int64_t c = 0; c < nc; c++) {
    if (mask && !mask[c]) continue;
    int64_t r = archive_find_row(a, c);
    if (r < 0) {
      if (first_missing < 0) first_missing = c;
      missing++;
    } else {
      a->row_selected[r] = 1;
    }
  }
  if (missing)
    return cs_error(CS_ERR_INPUT, "%s does not list %" PRId64 " of the selected cells (e.g. cell "
                    "%" PRId64 "): it was written for another --shard; use a separate -o per shard "
                    "and `curvsweep merge`", a->path, missing, first_missing);
  return CS_OK;
}

/* Create a new archive (rows from mask) under a temp name and rename it
 * into place; the journal is reset just before (it belonged to whatever
 * the path held, which the user asked to replace). */
static int archive_create_fresh(cs_archive *a, const cs_spec *spec, const unsigned char *mask) {
  CS_CHECK(archive_rows_from_mask(a, spec, mask));
  char *tmp = NULL;
  CS_CHECK(archive_create_temp(a, spec, &tmp));
  int rc = archive_journal_reset(a, 1);
  if (!rc) rc = archive_rename_into_place(tmp, a->path);
  else unlink(tmp);
  free(tmp);
  a->n_runs = 0;
  return rc;
}

/* Another spec's archive: the refusal names the keys that differ
 * (archive_identity_refusal), from the archive's own /spec. */
static int archive_sha_mismatch(const char *path, const cs_spec *spec) {
  char *text = NULL;
  cs_spec *old_spec = NULL;
  int rc = archive_read_spec(path, &text);
  if (!rc) rc = spec_load_string(text, path, &old_spec);
  free(text);
  if (!rc) rc = archive_identity_refusal(path, old_spec, spec);
  spec_free(old_spec);
  return rc;
}

/* A file found damaged while it is repaired or replayed into (a bad chunk
 * or object header the identity checks did not read) is rebuilt from the
 * journal that covers it, like an unreadable one (docs/ARCHIVE.md, "Resume
 * protocol"): its rows stay listed, the old file is set aside. */
static int archive_rebuild_damaged(cs_archive *a, const cs_spec *spec, const unsigned char *mask,
                                   const archive_journal_scan *s) {
  cs_error_clear();
  return archive_rebuild(a, spec, mask, s, 1);
}

/* A cell of this open's selection is pending: the run will write. */
static int archive_any_selected_pending(const cs_archive *a) {
  for (int64_t r = 0; r < a->n_rows; r++)
    if (a->row_status[r] == CELL_PENDING && (!a->row_selected || a->row_selected[r])) return 1;
  return 0;
}

/* Resume an existing file (the journal is locked and scanned):
 *   identity and spec checked read-only (refusals touch nothing);
 *   unreadable, or left dirty by a killed write -> rebuilt from a journal
 *   that covers it (else refused: damaged, nothing to rebuild from);
 *   otherwise interrupted rows are cut and unapplied records applied. */
static int archive_resume_existing(cs_archive *a, const cs_spec *spec, const unsigned char *mask,
                                   archive_journal_scan *s, int journal_created) {
  hid_t file;
  archive_meta meta;
  archive_probe_class cls;
  int rc = archive_probe(a->path, H5F_ACC_RDONLY, &file, &meta, &cls), mismatch = 0;
  if (!rc) {
    mismatch = strcmp(meta.identity, a->spec_sha256) != 0;
    // the structure: /cells rows, /runs
    if (!mismatch) rc = archive_load_rows(a, file, a->path);
    if (!mismatch && !rc) rc = archive_read_n_runs(a, file);
    if (rc) cls = ARCHIVE_PROBE_UNREADABLE;
    archive_h5_fclose(file);
  }
  if (mismatch) return archive_sha_mismatch(a->path, spec);
  int covers = !journal_created && s->header_ok && s->covers && !strcmp(s->sha, a->spec_sha256);
  if (rc) {
    if (cls == ARCHIVE_PROBE_UNREADABLE && covers) {
      cs_error_clear();
      return archive_rebuild(a, spec, mask, s, 0);
    }
    if (cls == ARCHIVE_PROBE_UNREADABLE) {
      char msg[1024];
      cs_copy_str(msg, sizeof msg, cs_error_message());
      return cs_error(rc, "%s; there is no journal %s holding its results to rebuild it from: "
                      "move it away or use another -o path", msg, a->journal_path);
    }
    return rc;
  }
  CS_CHECK(archive_journal_check_spec(a, s));
  CS_CHECK(archive_apply_mask(a, spec, mask));
  if (s->dirty && covers) return archive_rebuild(a, spec, mask, s, 1);
  // anything to repair or apply? (decided read-only: a resume with nothing
  // to do leaves the file untouched)
  int need_repair = 0, need_replay = 0;
  file = archive_h5_open(a->path, H5F_ACC_RDONLY);
  if (file < 0) return archive_h5_error(CS_ERR_IO, "cannot open the archive %s", a->path);
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES && !rc && !need_repair; t++)
    if (archive_cell_table_in(&ARCHIVE_CELL_TABLES[t], meta.version))
      rc = archive_table_needs_repair(a, file, ARCHIVE_CELL_TABLES[t].name, &need_repair);
  if (!rc) rc = archive_journal_replay(a, file, s, 0, 1, &need_replay);
  archive_h5_fclose(file);
  if (rc && covers) return archive_rebuild_damaged(a, spec, mask, s);
  CS_CHECK(rc);
  if (meta.version < ARCHIVE_FORMAT_VERSION &&
      (need_repair || need_replay || archive_any_selected_pending(a)))
    return cs_error(CS_ERR_INPUT, "%s has format_version %d; this curvsweep (%s) writes "
                    "format_version %d, whose layout differs (docs/ARCHIVE.md, \"Versions\"): "
                    "finish the sweep with the curvsweep that wrote it, or `curvsweep merge "
                    "NEW.h5 %s` (which writes format_version %d) and resume NEW.h5", a->path,
                    meta.version, CS_VERSION, ARCHIVE_FORMAT_VERSION, a->path,
                    ARCHIVE_FORMAT_VERSION);
  if (!need_repair && !need_replay) return CS_OK;
  // repair interrupted writes, then apply the journal (which already
  // covers the file when covers: no seeding, so no read of a damaged file)
  a->journal_covers = covers;
  CS_CHECK(archive_window_begin(a, 1));
  rc = archive_h5_session_open(a, &file);
  if (!rc) {
    for (int t = 0; t < ARCHIVE_N_CELL_TABLES && !rc; t++)  // this version has every table
      rc = archive_table_repair(a, file, ARCHIVE_CELL_TABLES[t].name);
    if (!rc) rc = archive_journal_replay(a, file, s, 0, 0, NULL);
    rc = archive_h5_session_close(a, file, rc);
  }
  if (rc && covers) return archive_rebuild_damaged(a, spec, mask, s);
  if (!rc) rc = archive_window_end(a);
  return rc;
}

/* Is the archive's own name a symbolic link (lstat)? The writer opens
 * only the file at the path itself (docs/SECURITY.md, "Hostile archives:
 * second audit"). */
static int archive_path_is_link(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

static int archive_link_refusal(const char *path) {
  return cs_error(CS_ERR_INPUT, "%s is a symbolic link: curvsweep writes only the archive at the "
                  "path itself, never through a link (docs/SECURITY.md, \"Hostile archives: "
                  "second audit\"); give the archive's own path as -o", path);
}

static int archive_any_finished(const cs_archive *a) {
  for (int64_t r = 0; r < a->n_rows; r++)
    if (a->row_status[r] != CELL_PENDING) return 1;
  return 0;
}

int archive_writer_open(const char *path, const cs_spec *spec, cs_archive_mode mode,
                        const unsigned char *mask, cs_archive **out) {
  *out = NULL;
  if (!path || !path[0] || !spec) return cs_error(CS_ERR_INPUT, "archive_open_write: no path or spec");
  if (mode != ARCHIVE_CREATE && mode != ARCHIVE_OVERWRITE && mode != ARCHIVE_RESUME)
    return cs_error(CS_ERR_INPUT, "archive_open_write: unknown mode %d", (int)mode);
  cs_archive *a;
  CS_CHECK(archive_new(path, &a));
  cs_copy_str(a->spec_sha256, sizeof a->spec_sha256, spec_canonical_sha256(spec));
  a->spec = spec;
  int exists = cs_file_exists(path), jexists = cs_file_exists(a->journal_path);
  int created = 0, rc = CS_OK;
  archive_journal_scan scan;
  memset(&scan, 0, sizeof scan);

  // refusals that need no lock and touch nothing; first, a symbolic link
  // at the path, which a resume would follow into another archive (of the
  // same sweep: it would pass every identity check) and write there
  if (archive_path_is_link(path))
    rc = archive_link_refusal(path);
  else if (mode == ARCHIVE_CREATE && exists)
    rc = cs_error(CS_ERR_INPUT, "%s already exists: use --overwrite to replace it, run the same "
                  "spec again to resume it, or use another -o path", path);
  else if (mode == ARCHIVE_CREATE && jexists)
    rc = cs_error(CS_ERR_INPUT, "%s does not exist but its journal %s does (an earlier run): resume "
                  "to recover it, or move the journal away", path, a->journal_path);
  if (!rc && mode == ARCHIVE_OVERWRITE) rc = archive_check_replaceable(path);
  struct stat st;
  if (!rc && exists && stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    rc = cs_error(CS_ERR_INPUT, "%s is not a regular file%s, so not a curvsweep archive: use another "
                  "-o path", path, S_ISFIFO(st.st_mode) ? " (a FIFO)" : "");
  if (!rc) rc = archive_make_parent_dirs(path);
  if (!rc) rc = archive_journal_lock(a, &created);
  // look again now that this process is the only writer: another one may
  // have created, finished or removed things since the looks above
  if (!rc) exists = cs_file_exists(path), jexists = !created;
  if (!rc && archive_path_is_link(path)) rc = archive_link_refusal(path);  // planted meanwhile
  if (!rc && mode == ARCHIVE_CREATE && (exists || jexists))
    rc = cs_error(CS_ERR_INPUT, "%s was created by another curvsweep process while this one "
                  "started: run the same spec again to resume it, or use another -o path", path);

  int resume = mode == ARCHIVE_RESUME && (exists || jexists), changing = 0;
  if (!rc && resume) {
    // read the journal (untouched until everything checks out)
    rc = archive_journal_scan_fd(a->journal_fd, a->journal_path, &scan);
    // every result it holds checked against the spec before anything is
    // touched (a journal of another spec is refused below, unread)
    if (!rc && scan.header_ok && !strcmp(scan.sha, a->spec_sha256))
      rc = archive_journal_check_records(a, spec, &scan);
    if (!rc && exists) rc = archive_resume_existing(a, spec, mask, &scan, created);
    else if (!rc) rc = archive_journal_check_spec(a, &scan);
    if (!rc && !exists) rc = archive_rebuild(a, spec, mask, &scan, 0);  // journal without archive
  }
  if (!rc && resume) {
    changing = 1;
    if (!scan.header_ok || strcmp(scan.sha, a->spec_sha256) != 0) {
      // no usable header (or an empty journal of another spec): start afresh
      rc = archive_journal_reset(a, !archive_any_finished(a));
    } else {
      // cut a torn tail away
      if (scan.good_end < scan.size && (ftruncate(a->journal_fd, scan.good_end) != 0 ||
                                        fdatasync(a->journal_fd) != 0))
        rc = cs_error(CS_ERR_IO, "cannot cut the torn tail of the journal %s: %s", a->journal_path,
                      strerror(errno));
      a->journal_records = scan.n;
      a->journal_covers = scan.covers;
    }
  } else if (!rc) {
    // create or overwrite: a complete new file replaces the path atomically
    changing = 1;
    rc = archive_create_fresh(a, spec, mask);
  }
  archive_scan_free(&scan);
  if (rc) {
    // a journal this process created goes, unless past the point of
    // changes it may hold results
    archive_journal_abandon(a, created && (!changing || a->journal_records == 0));
    archive_free(a);
  } else {
    *out = a;
  }
  return rc;
}

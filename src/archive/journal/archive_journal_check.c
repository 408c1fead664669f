/* archive_journal_check.c — a journal's results checked against the spec
 * before any of them is applied (docs/SECURITY.md, "Hostile archives:
 * second audit"): a record's CRC says only that its bytes are the ones
 * written, not that a curvsweep run wrote them, so each result must pass
 * the checks a reader applies to the same result read from an archive's
 * rows and groups: the row validators themselves (archive_check_metrics,
 * archive_check_token_stats, the per-cell tables' limits and done rows
 * (ARCHIVE_CELL_TABLES), the points' shape (archive_points_fit), the
 * field's and the tensors' values (archive_fields_check_values,
 * archive_params_check_values)), plus the writer's consistency check
 * of the result's arrays against its counts (archive_check_result_shape;
 * the rows are not loaded yet, so whether the archive lists the cell is
 * left to the replay). A refusal names the journal, the record and its
 * cell, and comes before the archive is touched. */
#include "archive_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int archive_result_check_spec(const char *path, const cs_spec *spec, const cs_cell_result *r) {
  int64_t nc = spec_cell_count(spec);
  if (r->cell_id < 0 || r->cell_id >= nc)
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 " is outside the spec's grid of %" PRId64
                    " cells", path, r->cell_id, nc);
  if (r->status != CELL_DONE && r->status != CELL_FAILED && r->status != CELL_DIVERGED)
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": a result must be done, failed or diverged "
                    "(status %d)", path, r->cell_id, (int)r->status);
  cs_config cfg;
  CS_CHECK(spec_cell_config(spec, r->cell_id, &cfg));
  CS_CHECK(archive_check_metrics(path, cfg.family, r));
  // the rows it makes in each per-cell table: within the table's limit, and
  // for a done cell as many as its config gives it (salvage's rule)
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    int n = T->rows_of(r);
    int want = archive_cell_table_want_rows(T, r->status, &cfg);
    if (n < 0 || (T->max_per_cell && n > T->max_per_cell) || (want >= 0 && n != want))
      return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 " (%s) makes %d /%s rows; its spec gives "
                      "it %d (depth %d)", path, r->cell_id, r->status == CELL_DONE ? "done"
                      : "not done", n, T->name, want >= 0 ? want : T->max_per_cell, cfg.depth);
  }
  if (r->status == CELL_DONE) CS_CHECK(archive_check_token_stats(path, cfg.family, r));
  if (r->pt_x && !archive_points_fit(&cfg, r->n_points, r->m, r->depth))
    return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 ": %d points, m %d, depth %d (its spec: at "
                    "most %d points, m %d)", path, r->cell_id, r->n_points, r->m, r->depth,
                    cfg.points, cfg.input_dim);
  char group[64];
  if (r->fd_pred || r->field_n) {
    snprintf(group, sizeof group, "fields/%" PRId64, r->cell_id);
    CS_CHECK(archive_check_fields(path, r));
    CS_CHECK(archive_fields_check_values(path, group, cfg.field, r));
  }
  snprintf(group, sizeof group, "params/%" PRId64, r->cell_id);
  return archive_params_check_values(path, group, r);
}

int archive_journal_check_records(cs_archive *a, const cs_spec *spec, const archive_journal_scan *s) {
  int rc = CS_OK;
  for (int64_t i = 0; i < s->n && !rc; i++) {
    const archive_record_ref *ref = &s->recs[i];
    if (ref->kind != ARCHIVE_REC_RESULT) continue;
    cs_cell_result r;
    rc = archive_journal_read_result(a, ref, &r);
    if (!rc) rc = archive_result_check_spec(a->journal_path, spec, &r);
    if (!rc) rc = archive_check_result_shape(a->journal_path, &r);
    result_free(&r);
    if (rc) {
      char msg[1024];
      cs_copy_str(msg, sizeof msg, cs_error_message());
      rc = cs_error(CS_ERR_INPUT, "the journal %s holds a result the archive %s cannot hold: record "
                    "%" PRId64 " (cell %" PRId64 ") is refused (%s); nothing was written: move the "
                    "journal away to resume without it (docs/SECURITY.md, \"Hostile archives: "
                    "second audit\")", a->journal_path, a->path, i, ref->cell_id, msg);
    }
  }
  return rc;
}

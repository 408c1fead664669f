/* archive_rows.c — an archive's /cells rows in memory (struct cs_archive,
 * archive_internal.h): a cell's row found by binary search over ascending
 * cell ids, each row's status, attempts and selection, the rows of a new
 * archive from a mask, and what archive_cell_status and archive_counts
 * report of them, and the doubling growth of the module's in-memory
 * buffers (archive_grow_buffer). No HDF5 here: the rows are read by
 * archive_load.c and written by archive_write.c. */
#include "archive_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int archive_grow_buffer(void **p, size_t *cap, size_t need, size_t size, size_t first,
                        const char *what) {
  if (need <= *cap) return CS_OK;
  size_t c = *cap ? *cap : first;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * size);
  if (!q) return cs_error(CS_ERR_NOMEM, "out of memory %s", what);
  *p = q, *cap = c;
  return CS_OK;
}

int64_t archive_find_row(const cs_archive *a, int64_t cell_id) {
  int64_t lo = 0, hi = a->n_rows - 1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (a->row_cell[mid] == cell_id) return mid;
    if (a->row_cell[mid] < cell_id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

int archive_alloc_rows(cs_archive *a, int64_t n) {
  free(a->row_cell), free(a->row_status), free(a->row_attempts), free(a->row_selected);
  free(a->row_journal);
  a->row_cell = NULL, a->row_status = NULL, a->row_attempts = NULL, a->row_selected = NULL;
  a->row_journal = NULL;
  a->n_rows = n;
  CS_CHECK(CS_CALLOC(a->row_journal, n));
  CS_CHECK(CS_CALLOC(a->row_cell, n));
  CS_CHECK(CS_CALLOC(a->row_status, n));
  CS_CHECK(CS_CALLOC(a->row_attempts, n));
  CS_CHECK(CS_CALLOC(a->row_selected, n));
  return CS_OK;
}

int archive_status_parse(const char *s) {
  for (int k = CELL_PENDING; k <= CELL_DIVERGED; k++)
    if (!strcmp(s, result_status_name((cs_cell_status)k))) return k;
  return -1;
}

void archive_free(cs_archive *a) {
  if (!a) return;
  if (a->journal_fd >= 0) close(a->journal_fd);
  free(a->path), free(a->journal_path);
  free(a->row_cell), free(a->row_status), free(a->row_attempts), free(a->row_selected);
  free(a->row_journal), free(a->staged);
  free(a);
}

int archive_new(const char *path, cs_archive **out) {
  cs_archive *a;
  *out = NULL;
  CS_CHECK(CS_CALLOC(a, 1));
  a->journal_fd = -1;
  a->run_row = -1;
  a->path = cs_strdup_printf("%s", path);
  a->journal_path = cs_strdup_printf("%s.journal", path);
  int rc = !a->path || !a->journal_path ? cs_error(CS_ERR_NOMEM, "out of memory") : CS_OK;
  if (rc) archive_free(a);
  else *out = a;
  return rc;
}

/* Rows of a new archive: the cells selected by mask, ascending. */
int archive_rows_from_mask(cs_archive *a, const cs_spec *spec, const unsigned char *mask) {
  int64_t nc = spec_cell_count(spec), n = 0;
  for (int64_t c = 0; c < nc; c++) n += !mask || mask[c];
  CS_CHECK(archive_alloc_rows(a, n));
  n = 0;
  for (int64_t c = 0; c < nc; c++)
    if (!mask || mask[c]) a->row_cell[n] = c, a->row_selected[n] = 1, n++;
  return CS_OK;
}

cs_cell_status archive_cell_status(const cs_archive *a, int64_t cell_id) {
  int64_t r = archive_find_row(a, cell_id);
  if (r < 0) return CELL_PENDING;
  return (cs_cell_status)(a->row_journal[r] ? a->row_journal[r] : a->row_status[r]);
}

void archive_counts(const cs_archive *a, int64_t *selected, int64_t *done, int64_t *failed,
                    int64_t *diverged) {
  int64_t n[4] = {0, 0, 0, 0}, sel = 0;
  for (int64_t r = 0; r < a->n_rows; r++) {
    if (!a->row_selected[r]) continue;
    sel++;
    n[(a->row_journal[r] ? a->row_journal[r] : a->row_status[r]) & 3]++;
  }
  if (selected) *selected = sel;
  if (done) *done = n[CELL_DONE];
  if (failed) *failed = n[CELL_FAILED];
  if (diverged) *diverged = n[CELL_DIVERGED];
}

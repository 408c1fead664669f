/* journal_forge.c — a journal record with a valid CRC and wild values
 * (tests/sh_hostile.sh; docs/SECURITY.md, "Hostile archives: second
 * audit"). usage: journal_forge SPEC ARCHIVE KIND
 *
 * Reads the finished ARCHIVE of SPEC, takes its first done cell of depth 1,
 * changes it as KIND says, and journals it beside ARCHIVE the way a writer
 * killed inside the HDF5 write leaves it (archive_test_journal_only: the
 * record appended with its CRC, the dirty flag set, the archive unchanged),
 * with one more attempt so that a resume would apply it. KIND:
 *   test-acc-7    test accuracy 7 (accuracies lie in [0, 1])
 *   nan-loss      training loss NaN (a done cell's is finite)
 *   prefixes-64   64 prefixes for a cell of depth 1 (every per-prefix array
 *                 repeated from prefix 1)
 *   field-512     a 512 x 512 curvature field where the spec says 4
 * Prints the cell id. Exit 0, or 1 naming what failed. */
#include "../../src/archive/archive_test.h"
#include "curvsweep/error.h"
#include "curvsweep/result.h"
#include "curvsweep/spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *repeat_layers(void *old, size_t layer_bytes, int to) {
  unsigned char *p = calloc((size_t)to, layer_bytes ? layer_bytes : 1);
  if (!p) return NULL;
  for (int l = 0; l < to; l++) memcpy(p + (size_t)l * layer_bytes, old, layer_bytes);
  free(old);
  return p;
}

/* Depth 1 -> 64: every per-prefix array of r repeated from its prefix 1. */
static int to_64_prefixes(cs_cell_result *r) {
  const int L = 64;
  if (r->depth != 1) return -1;
  r->curv = repeat_layers(r->curv, sizeof *r->curv, L);
  double **pt[RESULT_N_POINT_ARRAYS], **fd[RESULT_N_FIELD_ARRAYS];
  result_point_arrays(r, pt);
  result_field_arrays(r, fd);
  size_t np = (size_t)r->n_points, ng = (size_t)r->field_n * (size_t)r->field_n;
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
    if (*pt[k]) *pt[k] = repeat_layers(*pt[k], np * sizeof(double), L);
  if (r->pt_class) r->pt_class = repeat_layers(r->pt_class, np, L);
  for (int k = 0; k < RESULT_N_FIELD_ARRAYS; k++)
    if (*fd[k]) *fd[k] = repeat_layers(*fd[k], ng * sizeof(double), L);
  if (r->fd_class) r->fd_class = repeat_layers(r->fd_class, ng, L);
  r->depth = L;
  return r->curv ? 0 : -1;
}

/* A field of N = 512 (zeros: a flat, degenerate field) over the same box. */
static int to_field_512(cs_cell_result *r) {
  const size_t N = 512, L = (size_t)r->depth;
  double **fd[RESULT_N_FIELD_ARRAYS];
  result_field_arrays(r, fd);
  for (int k = 0; k < RESULT_N_FIELD_ARRAYS; k++) {
    free(*fd[k]);
    if (!(*fd[k] = calloc(L * N * N, sizeof(double)))) return -1;
  }
  free(r->fd_class);
  free(r->fd_pred);
  r->fd_class = calloc(L * N * N, 1);
  r->fd_pred = calloc(N * N, 1);
  r->field_n = (int)N;
  return r->fd_class && r->fd_pred ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: journal_forge SPEC ARCHIVE test-acc-7|nan-loss|prefixes-64|field-512\n");
    return 1;
  }
  const char *kind = argv[3];
  archive_library_begin();
  cs_spec *spec = NULL;
  cs_cell_result *res = NULL;
  int64_t n = 0, pick = -1;
  int rc = spec_load_file(argv[1], &spec);
  if (!rc) rc = archive_read_results(argv[2], &res, &n);
  for (int64_t i = 0; !rc && i < n && pick < 0; i++)
    if (res[i].status == CELL_DONE && res[i].depth == 1) pick = i;
  if (!rc && pick < 0) rc = cs_error(CS_ERR_INPUT, "%s: no done cell of depth 1", argv[2]);
  cs_cell_result *r = rc ? NULL : &res[pick];
  int bad = 0;
  if (r && !strcmp(kind, "test-acc-7")) r->test_acc = 7;
  else if (r && !strcmp(kind, "nan-loss")) r->train_loss = NAN;
  else if (r && !strcmp(kind, "prefixes-64")) bad = to_64_prefixes(r);
  else if (r && !strcmp(kind, "field-512")) bad = r->field_n == 0 || to_field_512(r);
  else if (r) rc = cs_error(CS_ERR_INPUT, "unknown kind %s", kind);
  if (bad) rc = cs_error(CS_ERR_INPUT, "cannot make %s of cell %lld", kind, (long long)r->cell_id);
  cs_archive *a = NULL;
  if (!rc) {
    r->attempts++;
    rc = archive_open_write(argv[2], spec, ARCHIVE_RESUME, NULL, &a);
  }
  if (!rc) rc = archive_test_journal_only(a, r);
  if (a) {
    int crc = archive_close(a);
    if (!rc) rc = crc;
  }
  if (!rc) printf("%lld\n", (long long)r->cell_id);
  else fprintf(stderr, "journal_forge: %s\n", cs_error_message());
  for (int64_t i = 0; i < n; i++) result_free(&res[i]);
  free(res);
  spec_free(spec);
  archive_library_end();
  return rc ? 1 : 0;
}

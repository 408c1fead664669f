/* archive_merge.c — merging shard archives of one spec into a new archive
 * (docs/ARCHIVE.md, "Merge"). */
#include "archive_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int archive_same_doubles(const double *x, const double *y, size_t n) {
  if (n == 0) return 1;
  if (!x || !y) return x == y;
  return memcmp(x, y, n * sizeof *x) == 0;
}

/* The science values of two results agree bitwise (NaN equal to NaN of
 * the same bits). wall_s, rank and attempts describe the run and may
 * differ between two runs of one deterministic cell. */
static int archive_same_values(const cs_cell_result *x, const cs_cell_result *y) {
  if (x->status != y->status || x->n_params != y->n_params || x->n_curve != y->n_curve ||
      x->depth != y->depth || x->n_points != y->n_points || x->m != y->m ||
      x->n_tensors != y->n_tensors || !x->pt_x != !y->pt_x)
    return 0;
  double mx[3] = {x->train_loss, x->train_acc, x->test_acc}, my[3] = {y->train_loss, y->train_acc, y->test_acc};
  if (!archive_same_doubles(mx, my, 3)) return 0;
  for (int e = 0; e < x->n_curve; e++) {
    const cs_curve_point *p = &x->curve[e], *q = &y->curve[e];
    double a3[3] = {p->train_loss, p->train_acc, p->test_acc}, b3[3] = {q->train_loss, q->train_acc, q->test_acc};
    if (p->epoch != q->epoch || !archive_same_doubles(a3, b3, 3)) return 0;
  }
  for (int l = 0; l < x->depth; l++) {
    if (x->curv[l].n_points != y->curv[l].n_points) return 0;
    for (size_t k = 0; k < ARCHIVE_N_STATS_FIELDS; k++)
      if (memcmp((const char *)&x->curv[l] + ARCHIVE_STATS_FIELDS[k].offset,
                 (const char *)&y->curv[l] + ARCHIVE_STATS_FIELDS[k].offset, sizeof(double)))
        return 0;
  }
  if (x->pt_x) {
    size_t np = (size_t)x->depth * x->n_points;
    double **fx[RESULT_N_POINT_ARRAYS], **fy[RESULT_N_POINT_ARRAYS];
    result_point_arrays((cs_cell_result *)x, fx);
    result_point_arrays((cs_cell_result *)y, fy);
    if (!archive_same_doubles(x->pt_x, y->pt_x, (size_t)x->n_points * x->m) ||
        memcmp(x->pt_class, y->pt_class, np))
      return 0;
    for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
      if (!archive_same_doubles(*fx[k], *fy[k], np)) return 0;
  }
  for (int i = 0; i < x->n_tensors; i++) {
    const cs_tensor *s = &x->tensors[i], *t = &y->tensors[i];
    if (strcmp(s->name, t->name) || s->rows != t->rows || s->cols != t->cols ||
        !archive_same_doubles(s->v, t->v, (size_t)s->rows * s->cols))
      return 0;
  }
  return 1;
}

typedef struct {
  cs_cell_result *res;
  int64_t n;
  cs_run_info *runs;
  hsize_t n_runs;
} archive_merge_input;

static int archive_merge_impl(const char *out, const char *const *inputs, int n_inputs, int overwrite) {
  if (!out || !inputs || n_inputs < 1)
    return cs_error(CS_ERR_INPUT, "merge: need an output and at least one input archive");
  // the output: refuse to clobber or to be one of the inputs
  char out_real[PATH_MAX], in_real[PATH_MAX];
  int out_exists = archive_file_exists(out);
  if (out_exists && !overwrite)
    return cs_error(CS_ERR_INPUT, "%s already exists: use --overwrite to replace it, or another "
                    "output path", out);
  char *out_journal = archive_strdup_printf("%s.journal", out);
  int stale_journal = out_journal && archive_file_exists(out_journal);
  if (stale_journal && !overwrite) {
    int rc = cs_error(CS_ERR_INPUT, "%s does not exist but a journal %s does (an earlier run): "
                      "resume that run, move the journal away, or use --overwrite", out, out_journal);
    free(out_journal);
    return rc;
  }
  free(out_journal);
  for (int i = 0; i < n_inputs && out_exists; i++)
    if (realpath(out, out_real) && realpath(inputs[i], in_real) && !strcmp(out_real, in_real))
      return cs_error(CS_ERR_INPUT, "merge: the output %s is also an input: write the merge to a new "
                      "path", out);

  // every input once: the same file under two names (a path, ./path, a
  // hard or symbolic link) would count its runs twice
  for (int i = 0; i < n_inputs; i++) {
    struct stat si, sj;
    if (stat(inputs[i], &si) != 0) continue;  // refused with its reason when read
    for (int j = 0; j < i; j++)
      if (stat(inputs[j], &sj) == 0 && si.st_dev == sj.st_dev && si.st_ino == sj.st_ino)
        return cs_error(CS_ERR_INPUT, "merge: %s and %s are the same file: give each input archive "
                        "once", inputs[j], inputs[i]);
  }

  archive_merge_input *in = NULL;
  cs_spec *spec = NULL;
  cs_archive *a = NULL;
  unsigned char *mask = NULL;
  char *tmp = NULL, *text = NULL, first_sha[65] = "";
  int rc = CS_CALLOC(in, n_inputs);
  if (rc) return rc;

  // read every input: identity, same spec, results, runs
  for (int i = 0; i < n_inputs && !rc; i++) {
    archive_reader rd;
    if ((rc = archive_check_not_interrupted(inputs[i]))) break;
    if ((rc = archive_reader_open(inputs[i], &rd))) break;
    if (i == 0) {
      archive_copy_str(first_sha, sizeof first_sha, rd.meta.spec_sha256);
      rc = archive_spec_read(rd.file, inputs[i], &text);
      if (!rc) {
        rc = spec_load_string(text, inputs[i], &spec);
        if (rc) rc = cs_error_context(rc, "%s: the archive's /spec does not load: ", inputs[i]);
      }
      if (!rc && strcmp(spec_sha256(spec), first_sha) != 0)
        rc = cs_error(CS_ERR_INPUT, "archive %s: /spec text does not match its spec_sha256 "
                      "attribute: the archive is damaged", inputs[i]);
    } else if (strcmp(rd.meta.spec_sha256, first_sha) != 0) {
      rc = cs_error(CS_ERR_INPUT, "%s and %s were written by different specs (sha256 %.12s… and "
                    "%.12s…): merge only shards of one sweep", inputs[0], inputs[i], first_sha,
                    rd.meta.spec_sha256);
    }
    if (!rc) rc = archive_read_results_rd(&rd, &in[i].res, &in[i].n);
    if (!rc) {
      hid_t mt = archive_run_row_type();
      rc = archive_read_table(&rd, "runs", mt, (void **)&in[i].runs, &in[i].n_runs);
      H5Tclose(mt);
    }
    archive_reader_close(&rd);
  }
  if (rc) goto done;

  // the union of listed cells; per cell the chosen result: done beats
  // diverged beats failed; two done results must agree
  int64_t nc = spec_cell_count(spec);
  int64_t *pick_in = NULL, *pick_k = NULL;
  if ((rc = CS_CALLOC(mask, nc)) || (rc = CS_CALLOC(pick_in, nc)) || (rc = CS_CALLOC(pick_k, nc))) {
    free(pick_in);
    goto done;
  }
  for (int64_t c = 0; c < nc; c++) pick_in[c] = -1;
  static const int rank_of[4] = {0, 3, 1, 2};  // pending, done, failed, diverged
  for (int i = 0; i < n_inputs && !rc; i++) {
    for (int64_t k = 0; k < in[i].n && !rc; k++) {
      const cs_cell_result *r = &in[i].res[k];
      if (r->cell_id < 0 || r->cell_id >= nc) {
        rc = cs_error(CS_ERR_INPUT, "%s lists cell %" PRId64 ", outside its spec's 0..%" PRId64,
                      inputs[i], r->cell_id, nc - 1);
        break;
      }
      mask[r->cell_id] = 1;
      if (r->status == CELL_PENDING) continue;
      int64_t j = pick_in[r->cell_id];
      const cs_cell_result *old = j >= 0 ? &in[j].res[pick_k[r->cell_id]] : NULL;
      if (old && old->status == CELL_DONE && r->status == CELL_DONE && !archive_same_values(old, r)) {
        rc = cs_error(CS_ERR_INPUT, "cell %" PRId64 " is done in both %s and %s with different "
                      "values: these are not shards of one deterministic sweep; merge one of them",
                      r->cell_id, inputs[j], inputs[i]);
        break;
      }
      if (!old || rank_of[r->status & 3] > rank_of[old->status & 3])
        pick_in[r->cell_id] = i, pick_k[r->cell_id] = k;
    }
  }
  // build the output under a temp name, without a journal
  if (!rc) rc = archive_new(out, &a);
  if (!rc) {
    archive_copy_str(a->spec_sha256, sizeof a->spec_sha256, spec_sha256(spec));
    rc = archive_rows_from_mask(a, spec, mask);
  }
  if (!rc) rc = archive_create_temp(a, spec, &tmp);
  if (!rc) {
    // write into the temp file (a->path names it for the messages)
    char *final_path = a->path;
    a->path = tmp;
    hid_t file;
    rc = archive_h5_session_open(a, &file);
    if (!rc) {
      for (int64_t c = 0; c < nc && !rc; c++)
        if (pick_in[c] >= 0) rc = archive_apply_result(a, file, &in[pick_in[c]].res[pick_k[c]]);
      for (int i = 0; i < n_inputs && !rc; i++)
        for (hsize_t k = 0; k < in[i].n_runs && !rc; k++)
          rc = archive_apply_run(a, file, a->n_runs, &in[i].runs[k]);
      rc = archive_h5_session_close(a, file, rc);
    }
    a->path = final_path;
    if (!rc) rc = archive_fsync_file(tmp);
    // a stale journal of the replaced output must not be replayed into it
    if (!rc && overwrite && archive_file_exists(a->journal_path) && unlink(a->journal_path) != 0)
      rc = cs_error(CS_ERR_IO, "cannot remove the old journal %s: %s", a->journal_path, strerror(errno));
    if (!rc) rc = archive_rename_into_place(tmp, out);
    else unlink(tmp);
  }
  free(pick_in);
  free(pick_k);

done:
  for (int i = 0; i < n_inputs; i++) {
    archive_results_free(in[i].res, in[i].n);
    free(in[i].runs);
  }
  free(in);
  free(mask);
  free(tmp);
  free(text);
  archive_free(a);
  if (spec) spec_free(spec);
  return rc;
}

int archive_merge(const char *out, const char *const *inputs, int n_inputs, int overwrite) {
  ARCHIVE_QUIETLY(archive_merge_impl(out, inputs, n_inputs, overwrite));
}

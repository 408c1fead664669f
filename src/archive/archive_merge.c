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
 * differ between two runs of one deterministic cell. Also the read-back
 * comparison of a verified close (archive_journal_verify). */
int archive_same_values(const cs_cell_result *x, const cs_cell_result *y) {
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

/* One input, read whole. */
typedef struct {
  cs_cell_result *res;
  int64_t n;
  cs_run_info *runs;
  hsize_t n_runs;
} archive_merge_input;

/* Everything a merge holds; freed in one place (archive_merge_impl). */
typedef struct {
  const char *out;
  const char *const *inputs;
  int n_inputs, overwrite;
  archive_merge_input *in;
  char *text;               /* /spec of the first input */
  cs_spec *spec;
  char first_sha[65];
  unsigned char *listed;    /* cell listed by some input */
  int64_t *pick_in, *pick_k;/* chosen result of a cell: input and index, -1: none */
  cs_archive *a;            /* the output (no journal) */
  char *tmp;                /* its temporary name */
} archive_merge_state;

/* The output: refuse to clobber it, a stale journal beside it, or an output
 * that is also an input. */
static int archive_merge_check_output(const archive_merge_state *s) {
  int out_exists = archive_file_exists(s->out);
  if (out_exists && !s->overwrite)
    return cs_error(CS_ERR_INPUT, "%s already exists: use --overwrite to replace it, or another "
                    "output path", s->out);
  char *out_journal = archive_strdup_printf("%s.journal", s->out);
  int stale_journal = out_journal && archive_file_exists(out_journal);
  if (stale_journal && !s->overwrite) {
    int rc = cs_error(CS_ERR_INPUT, "%s does not exist but a journal %s does (an earlier run): "
                      "resume that run, move the journal away, or use --overwrite", s->out,
                      out_journal);
    free(out_journal);
    return rc;
  }
  free(out_journal);
  char out_real[PATH_MAX], in_real[PATH_MAX];
  for (int i = 0; i < s->n_inputs && out_exists; i++)
    if (realpath(s->out, out_real) && realpath(s->inputs[i], in_real) && !strcmp(out_real, in_real))
      return cs_error(CS_ERR_INPUT, "merge: the output %s is also an input: write the merge to a new "
                      "path", s->out);
  return CS_OK;
}

/* Every input once: the same file under two names (a path, ./path, a hard
 * or symbolic link) would count its runs twice. */
static int archive_merge_check_distinct(const archive_merge_state *s) {
  for (int i = 0; i < s->n_inputs; i++) {
    struct stat si, sj;
    if (stat(s->inputs[i], &si) != 0) continue;  // refused with its reason when read
    for (int j = 0; j < i; j++)
      if (stat(s->inputs[j], &sj) == 0 && si.st_dev == sj.st_dev && si.st_ino == sj.st_ino)
        return cs_error(CS_ERR_INPUT, "merge: %s and %s are the same file: give each input archive "
                        "once", s->inputs[j], s->inputs[i]);
  }
  return CS_OK;
}

/* The spec of the merge, from the first input's /spec. */
static int archive_merge_load_spec(archive_merge_state *s, const archive_reader *rd) {
  const char *path = s->inputs[0];
  archive_copy_str(s->first_sha, sizeof s->first_sha, rd->meta.spec_sha256);
  CS_CHECK(archive_spec_read(rd->file, path, &s->text));
  int rc = spec_load_string(s->text, path, &s->spec);
  if (rc) return cs_error_context(rc, "%s: the archive's /spec does not load: ", path);
  if (strcmp(spec_sha256(s->spec), s->first_sha) != 0)
    return cs_error(CS_ERR_INPUT, "archive %s: /spec text does not match its spec_sha256 "
                    "attribute: the archive is damaged", path);
  return CS_OK;
}

/* Input i (open as rd): same spec as the first, its results and runs. */
static int archive_merge_read_input(archive_merge_state *s, int i, archive_reader *rd) {
  if (i == 0) CS_CHECK(archive_merge_load_spec(s, rd));
  else if (strcmp(rd->meta.spec_sha256, s->first_sha) != 0)
    return cs_error(CS_ERR_INPUT, "%s and %s were written by different specs (sha256 %.12s… and "
                    "%.12s…): merge only shards of one sweep", s->inputs[0], s->inputs[i],
                    s->first_sha, rd->meta.spec_sha256);
  CS_CHECK(archive_read_results_rd(rd, &s->in[i].res, &s->in[i].n));
  hid_t mt = archive_run_row_type();
  int rc = archive_read_table(rd, "runs", mt, (void **)&s->in[i].runs, &s->in[i].n_runs);
  H5Tclose(mt);
  return rc;
}

static int archive_merge_read_inputs(archive_merge_state *s) {
  CS_CHECK(CS_CALLOC(s->in, s->n_inputs));
  for (int i = 0; i < s->n_inputs; i++) {
    archive_reader rd;
    CS_CHECK(archive_check_not_interrupted(s->inputs[i]));
    CS_CHECK(archive_reader_open(s->inputs[i], &rd));
    int rc = archive_merge_read_input(s, i, &rd);
    archive_reader_close(&rd);
    CS_CHECK(rc);
  }
  return CS_OK;
}

/* Result k of input i against the one chosen so far for its cell: done
 * beats diverged beats failed; two done results must agree. */
static int archive_merge_consider(archive_merge_state *s, int i, int64_t k) {
  static const int rank_of[4] = {0, 3, 1, 2};  // pending, done, failed, diverged
  const cs_cell_result *r = &s->in[i].res[k];
  int64_t nc = spec_cell_count(s->spec);
  if (r->cell_id < 0 || r->cell_id >= nc)
    return cs_error(CS_ERR_INPUT, "%s lists cell %" PRId64 ", outside its spec's 0..%" PRId64,
                    s->inputs[i], r->cell_id, nc - 1);
  s->listed[r->cell_id] = 1;
  if (r->status == CELL_PENDING) return CS_OK;
  int64_t j = s->pick_in[r->cell_id];
  const cs_cell_result *old = j >= 0 ? &s->in[j].res[s->pick_k[r->cell_id]] : NULL;
  if (old && old->status == CELL_DONE && r->status == CELL_DONE && !archive_same_values(old, r))
    return cs_error(CS_ERR_INPUT, "cell %" PRId64 " is done in both %s and %s with different "
                    "values: these are not shards of one deterministic sweep; merge one of them",
                    r->cell_id, s->inputs[j], s->inputs[i]);
  if (!old || rank_of[r->status & 3] > rank_of[old->status & 3])
    s->pick_in[r->cell_id] = i, s->pick_k[r->cell_id] = k;
  return CS_OK;
}

/* The union of listed cells and the chosen result of each. */
static int archive_merge_pick(archive_merge_state *s) {
  int64_t nc = spec_cell_count(s->spec);
  CS_CHECK(CS_CALLOC(s->listed, nc));
  CS_CHECK(CS_CALLOC(s->pick_in, nc));
  CS_CHECK(CS_CALLOC(s->pick_k, nc));
  for (int64_t c = 0; c < nc; c++) s->pick_in[c] = -1;
  for (int i = 0; i < s->n_inputs; i++)
    for (int64_t k = 0; k < s->in[i].n; k++) CS_CHECK(archive_merge_consider(s, i, k));
  return CS_OK;
}

/* The chosen results, then every /runs row of every input in order. */
static int archive_merge_apply(archive_merge_state *s, hid_t file) {
  int64_t nc = spec_cell_count(s->spec);
  for (int64_t c = 0; c < nc; c++)
    if (s->pick_in[c] >= 0)
      CS_CHECK(archive_apply_result(s->a, file, &s->in[s->pick_in[c]].res[s->pick_k[c]]));
  for (int i = 0; i < s->n_inputs; i++)
    for (hsize_t k = 0; k < s->in[i].n_runs; k++)
      CS_CHECK(archive_apply_run(s->a, file, s->a->n_runs, &s->in[i].runs[k]));
  return CS_OK;
}

/* Fill the output under its temporary name, then put it in place. */
static int archive_merge_write(archive_merge_state *s) {
  CS_CHECK(archive_new(s->out, &s->a));
  archive_copy_str(s->a->spec_sha256, sizeof s->a->spec_sha256, spec_sha256(s->spec));
  CS_CHECK(archive_rows_from_mask(s->a, s->spec, s->listed));
  CS_CHECK(archive_create_temp(s->a, s->spec, &s->tmp));
  hid_t file;
  // a->path names the temporary file while it is written (for the messages)
  char *final_path = s->a->path;
  s->a->path = s->tmp;
  int rc = archive_h5_session_open(s->a, &file);
  if (!rc) rc = archive_h5_session_close(s->a, file, archive_merge_apply(s, file));
  s->a->path = final_path;
  if (!rc) rc = archive_fsync_file(s->tmp);
  // a stale journal of the replaced output must not be replayed into it
  if (!rc && s->overwrite && archive_file_exists(s->a->journal_path) &&
      unlink(s->a->journal_path) != 0)
    rc = cs_error(CS_ERR_IO, "cannot remove the old journal %s: %s", s->a->journal_path,
                  strerror(errno));
  if (rc) {
    unlink(s->tmp);
    return rc;
  }
  return archive_rename_into_place(s->tmp, s->out);
}

static int archive_merge_pipeline(archive_merge_state *s) {
  CS_CHECK(archive_merge_check_output(s));
  CS_CHECK(archive_merge_check_distinct(s));
  CS_CHECK(archive_merge_read_inputs(s));
  CS_CHECK(archive_merge_pick(s));
  return archive_merge_write(s);
}

static int archive_merge_impl(const char *out, const char *const *inputs, int n_inputs, int overwrite) {
  if (!out || !inputs || n_inputs < 1)
    return cs_error(CS_ERR_INPUT, "merge: need an output and at least one input archive");
  archive_merge_state s;
  memset(&s, 0, sizeof s);
  s.out = out, s.inputs = inputs, s.n_inputs = n_inputs, s.overwrite = overwrite;
  int rc = archive_merge_pipeline(&s);
  for (int i = 0; s.in && i < n_inputs; i++) {
    archive_results_free(s.in[i].res, s.in[i].n);
    free(s.in[i].runs);
  }
  free(s.in);
  free(s.text);
  if (s.spec) spec_free(s.spec);
  free(s.listed), free(s.pick_in), free(s.pick_k);
  archive_free(s.a);
  free(s.tmp);
  return rc;
}

int archive_merge(const char *out, const char *const *inputs, int n_inputs, int overwrite) {
  ARCHIVE_QUIETLY(archive_merge_impl(out, inputs, n_inputs, overwrite));
}

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

int archive_status_rank(cs_cell_status s) {
  switch (s) {
    case CELL_DONE: return 3;
    case CELL_DIVERGED: return 2;
    case CELL_FAILED: return 1;
    default: return 0;
  }
}

/* The science values of two results agree bitwise (NaN equal to NaN of
 * the same bits). wall_s, rank and attempts describe the run and may
 * differ between two runs of one deterministic cell. Also the read-back
 * comparison of a verified close (archive_journal_verify). */
int archive_same_values(const cs_cell_result *x, const cs_cell_result *y) {
  if (x->status != y->status || x->n_params != y->n_params || x->n_curve != y->n_curve ||
      x->depth != y->depth || x->n_points != y->n_points || x->m != y->m ||
      x->n_tensors != y->n_tensors || !x->pt_x != !y->pt_x || !archive_same_fields(x, y))
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

/* Everything a merge holds; freed in one place (archive_merge_impl). Memory
 * is bounded by one input's results (read, applied and freed one input at
 * a time), a few bytes per cell of the spec, and copies of the results of
 * cells done in more than one input (kept for the bitwise comparison). */
typedef struct {
  const char *out;
  const char *const *inputs;
  int n_inputs, overwrite;
  char *text;               /* /spec of the first input */
  cs_spec *spec;
  char first_sha[65];
  unsigned char *listed;    /* cell listed by some input */
  unsigned char *n_done;    /* inputs in which a cell is done (saturating at 255) */
  int32_t *pick_in;         /* input of the chosen result of a cell, -1: none */
  unsigned char *pick_rank; /* its status: 3 done, 2 diverged, 1 failed */
  cs_cell_result *cur;      /* results of the input being applied */
  int64_t n_cur;
  cs_cell_result *kept;     /* chosen results of cells done in several inputs */
  int64_t n_kept, cap_kept;
  int64_t *kept_of;         /* cell -> index into kept, -1: none */
  cs_archive_builder *b;    /* the output */
  cs_archive **rows;        /* (n_inputs) each input's /cells rows, from pass 1 to pass 2 */
} archive_merge_state;

/* The output: refuse to clobber it, a stale journal beside it, or an output
 * that is also an input. */
static int archive_merge_check_output(const archive_merge_state *s) {
  int out_exists = archive_file_exists(s->out);
  if (out_exists && !s->overwrite)
    return cs_error(CS_ERR_INPUT, "%s already exists: use --overwrite to replace it, or another "
                    "output path", s->out);
  if (out_exists) CS_CHECK(archive_check_replaceable(s->out));
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
  int64_t nc = spec_cell_count(s->spec);
  CS_CHECK(CS_CALLOC(s->listed, nc));
  CS_CHECK(CS_CALLOC(s->n_done, nc));
  CS_CHECK(CS_CALLOC(s->pick_in, nc));
  CS_CHECK(CS_CALLOC(s->pick_rank, nc));
  CS_CHECK(CS_CALLOC(s->kept_of, nc));
  for (int64_t c = 0; c < nc; c++) s->pick_in[c] = -1, s->kept_of[c] = -1;
  return CS_OK;
}

/* Pass 1, input i (open as rd): same spec as the first; its listed cells
 * and statuses decide the chosen input of each cell (archive_status_rank,
 * the first input on a tie). */
static int archive_merge_scan_input(archive_merge_state *s, int i, const archive_reader *rd) {
  if (i == 0) CS_CHECK(archive_merge_load_spec(s, rd));
  else if (strcmp(rd->meta.spec_sha256, s->first_sha) != 0)
    return cs_error(CS_ERR_INPUT, "%s and %s were written by different specs (sha256 %.12s… and "
                    "%.12s…): merge only shards of one sweep", s->inputs[0], s->inputs[i],
                    s->first_sha, rd->meta.spec_sha256);
  int64_t nc = spec_cell_count(s->spec);
  for (int64_t k = 0; k < rd->a->n_rows; k++) {
    int64_t c = rd->a->row_cell[k];
    int st = rd->a->row_status[k];
    if (c < 0 || c >= nc)
      return cs_error(CS_ERR_INPUT, "%s lists cell %" PRId64 ", outside its spec's 0..%" PRId64,
                      s->inputs[i], c, nc - 1);
    s->listed[c] = 1;
    if (st == CELL_PENDING) continue;
    if (st == CELL_DONE && s->n_done[c] < 255) s->n_done[c]++;
    int rank = archive_status_rank((cs_cell_status)st);
    if (s->pick_in[c] < 0 || rank > s->pick_rank[c])
      s->pick_in[c] = i, s->pick_rank[c] = (unsigned char)rank;
  }
  return CS_OK;
}

static int archive_merge_scan_inputs(archive_merge_state *s) {
  CS_CHECK(CS_CALLOC(s->rows, s->n_inputs));
  for (int i = 0; i < s->n_inputs; i++) {
    archive_reader rd;
    CS_CHECK(archive_check_not_interrupted(s->inputs[i]));
    CS_CHECK(archive_reader_open(s->inputs[i], &rd));
    int rc = archive_merge_scan_input(s, i, &rd);
    s->rows[i] = rd.a;  // kept for pass 2 (a few bytes per cell): /cells is not read again
    rd.a = NULL;
    archive_reader_close(&rd);
    CS_CHECK(rc);
  }
  return CS_OK;
}

/* Keep the chosen result of a cell done in several inputs (moved out of
 * the current input's array). */
static int archive_merge_keep(archive_merge_state *s, cs_cell_result *r) {
  if (s->n_kept == s->cap_kept) {
    int64_t cap = s->cap_kept ? 2 * s->cap_kept : 64;
    cs_cell_result *p = realloc(s->kept, (size_t)cap * sizeof *p);
    if (!p) return cs_error(CS_ERR_NOMEM, "out of memory");
    s->kept = p, s->cap_kept = cap;
  }
  s->kept_of[r->cell_id] = s->n_kept;
  s->kept[s->n_kept++] = *r;
  memset(r, 0, sizeof *r);
  return CS_OK;
}

/* Free what archive_read_cell_groups read into r (its /params and /fields),
 * once written: memory stays one cell's groups. */
static void archive_merge_drop_groups(cs_cell_result *r) {
  double **fd[RESULT_N_FIELD_ARRAYS];
  result_field_arrays(r, fd);
  for (int k = 0; k < RESULT_N_FIELD_ARRAYS; k++) free(*fd[k]), *fd[k] = NULL;
  free(r->fd_class), free(r->fd_pred);
  r->fd_class = NULL, r->fd_pred = NULL, r->field_n = 0;
  for (int t = 0; t < r->n_tensors; t++) free(r->tensors[t].v);
  free(r->tensors);
  r->tensors = NULL, r->n_tensors = 0;
}

/* One finished result r of input i (open as rd): into the output when it
 * is the chosen one; a done result of a cell done in several inputs must
 * agree bitwise with the chosen one (kept). Its /params and /fields groups
 * are read by the reader analyze uses (archive_read_cell_groups: shapes,
 * classes, finite values, nothing but their datasets; docs/SECURITY.md,
 * "Archives") and written again by the builder, never copied as stored.
 * r's per-point arrays are in r already (format_version 4:
 * archive_points_each) or read here (2, 3); the caller frees (or unlends)
 * them, unless kept. */
static int archive_merge_apply_one(archive_merge_state *s, int i, archive_reader *rd,
                                   cs_cell_result *r) {
  int64_t c = r->cell_id;
  int multi = r->status == CELL_DONE && s->n_done[c] > 1, chosen = s->pick_in[c] == i;
  if (r->status == CELL_PENDING || (!chosen && !multi)) return CS_OK;
  CS_CHECK(archive_read_cell_groups(rd, r));
  if (chosen) {
    CS_CHECK(archive_build_result(s->b, r));
    if (multi) return archive_merge_keep(s, r);
    archive_merge_drop_groups(r);
    return CS_OK;
  }
  int same = s->kept_of[c] < 0 || archive_same_values(&s->kept[s->kept_of[c]], r);
  archive_merge_drop_groups(r);
  if (!same)
    return cs_error(CS_ERR_INPUT, "cell %" PRId64 " is done in both %s and %s with different "
                    "values: these are not shards of one deterministic sweep; merge one of them",
                    c, s->inputs[s->pick_in[c]], s->inputs[i]);
  return CS_OK;
}

/* The walk over an input's /points (format_version 4): which rows it saw. */
typedef struct {
  archive_merge_state *s;
  int i;
  archive_reader *rd;
  unsigned char *seen;  /* (rd->a->n_rows) */
} archive_merge_walk;

static int archive_merge_points(void *ctx, int64_t row, cs_cell_result *pts) {
  archive_merge_walk *W = ctx;
  cs_cell_result *r = &W->s->cur[row];
  W->seen[row] = 1;
  int64_t c = r->cell_id;
  int multi = r->status == CELL_DONE && W->s->n_done[c] > 1;
  if (W->s->pick_in[c] != W->i && !multi) return CS_OK;
  // lent for a single write; a result kept for comparison owns a copy
  if (multi) CS_CHECK(archive_points_take(r, pts, ARCHIVE_POINTS_ALL, W->s->inputs[W->i]));
  else CS_CHECK(archive_points_lend(r, pts, W->s->inputs[W->i]));
  int rc = archive_merge_apply_one(W->s, W->i, W->rd, r);
  if (multi) archive_points_free(r);
  else archive_points_unlend(r);
  return rc;
}

/* Pass 2, input i: its chosen results into the output. The tables are read
 * whole (one input's rows); /points a block of each array at a time in
 * storage order, each cell written as its arrays arrive, then the cells
 * without points. */
static int archive_merge_apply_input(archive_merge_state *s, int i, archive_reader *rd) {
  CS_CHECK(archive_read_results_flags(rd, ARCHIVE_READ_NO_GROUPS, &s->cur, &s->n_cur));
  archive_merge_walk W = {s, i, rd, NULL};
  int rc = CS_CALLOC(W.seen, s->n_cur ? s->n_cur : 1);
  if (!rc && rd->meta.version >= 4)
    rc = archive_points_each(rd->file, rd->a, s->inputs[i], archive_merge_points, &W);
  for (int64_t k = 0; !rc && k < s->n_cur; k++)
    if (!W.seen[k]) {
      rc = archive_merge_apply_one(s, i, rd, &s->cur[k]);
      archive_points_free(&s->cur[k]);  // nothing when kept (moved out)
    }
  free(W.seen);
  CS_CHECK(rc);
  archive_results_free(s->cur, s->n_cur);
  s->cur = NULL, s->n_cur = 0;
  cs_run_info *runs = NULL;
  hsize_t n_runs = 0;
  hid_t mt = archive_run_row_type();
  rc = archive_read_table(rd, "runs", mt, (void **)&runs, &n_runs);
  H5Tclose(mt);
  for (hsize_t k = 0; !rc && k < n_runs; k++) rc = archive_build_run(s->b, &runs[k]);
  free(runs);
  return rc;
}

/* Fill the output one input at a time (listed cells: the union), then put
 * it in place. */
static int archive_merge_write(archive_merge_state *s) {
  CS_CHECK(archive_build_begin(s->out, s->spec, s->listed, s->overwrite, &s->b));
  for (int i = 0; i < s->n_inputs; i++) {
    archive_reader rd;
    cs_archive *rows = s->rows[i];
    s->rows[i] = NULL;
    CS_CHECK(archive_reader_open_rows(s->inputs[i], rows, &rd));
    int rc = archive_merge_apply_input(s, i, &rd);
    archive_reader_close(&rd);
    CS_CHECK(rc);
  }
  cs_archive_builder *b = s->b;
  s->b = NULL;
  return archive_build_finish(b);
}

static int archive_merge_pipeline(archive_merge_state *s) {
  CS_CHECK(archive_merge_check_output(s));
  CS_CHECK(archive_merge_check_distinct(s));
  CS_CHECK(archive_merge_scan_inputs(s));
  return archive_merge_write(s);
}

static int archive_merge_impl(const char *out, const char *const *inputs, int n_inputs, int overwrite) {
  if (!out || !inputs || n_inputs < 1)
    return cs_error(CS_ERR_INPUT, "merge: need an output and at least one input archive");
  archive_merge_state s;
  memset(&s, 0, sizeof s);
  s.out = out, s.inputs = inputs, s.n_inputs = n_inputs, s.overwrite = overwrite;
  int rc = archive_merge_pipeline(&s);
  archive_results_free(s.cur, s.n_cur);
  archive_results_free(s.kept, s.n_kept);
  archive_build_abort(s.b);
  free(s.text);
  if (s.spec) spec_free(s.spec);
  free(s.listed), free(s.n_done), free(s.pick_in), free(s.pick_rank), free(s.kept_of);
  for (int i = 0; s.rows && i < n_inputs; i++) archive_free(s.rows[i]);
  free(s.rows);
  return rc;
}

int archive_merge(const char *out, const char *const *inputs, int n_inputs, int overwrite) {
  ARCHIVE_QUIETLY(archive_merge_impl(out, inputs, n_inputs, overwrite));
}

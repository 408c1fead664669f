/* archive_merge.c — merging archives of one sweep into a new archive
 * (docs/ARCHIVE.md, "Merge"): shards of one spec, or archives of specs that
 * differ only in [grid] values (the output's spec is the union of their
 * grids, each input's cells mapped to it by config), and the build of a
 * grown archive (archive_grow.c). An incomplete set is refused unless
 * partial, which the output then records. */
#include "archive_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Everything a merge holds; freed in one place (archive_merge). Memory
 * is bounded by one input's results (read, applied and freed one input at
 * a time), a few bytes per cell of the spec, and copies of the results of
 * cells done in more than one input (kept for the bitwise comparison). */
typedef struct {
  const char *out;
  const char *const *inputs;
  int n_inputs, overwrite;
  int partial;              /* an incomplete set is accepted (and recorded) */
  int check_complete;       /* refuse an incomplete set unless partial (merge, not grow) */
  const unsigned char *more; /* cells of spec listed besides the inputs' (grow), or NULL */
  char *text;               /* the union spec's text (inputs of different specs) */
  cs_spec *spec;            /* the output's spec */
  int own_spec;             /* spec is freed here */
  cs_spec **in_spec;        /* (n_inputs) each input's spec, from its /spec */
  spec_cell_map **map;      /* (n_inputs) its cells as the output's, NULL: the same numbering */
  char **shards;            /* (n_inputs) the shards its /runs name ("0/2 1/2"), "" when none */
  int64_t listed_n;         /* cells of the output's spec some input (or more) lists */
  cs_archive_merge_report *rep;
  char *tmp;                /* built, not renamed (archive_merge_to_temp) */
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
  uint64_t *absent;         /* (n_inputs) the statistics columns it lacks (archive_stats_absent) */
  int *order;               /* (n_inputs) the order inputs are scanned and applied in */
} archive_merge_state;

/* The output: refuse to clobber it, a stale journal beside it, or an output
 * that is also an input. */
static int archive_merge_check_output(const archive_merge_state *s) {
  int out_exists = cs_file_exists(s->out);
  if (out_exists && !s->overwrite)
    return cs_error(CS_ERR_INPUT, "%s already exists: use --overwrite to replace it, or another "
                    "output path", s->out);
  if (out_exists) CS_CHECK(archive_check_replaceable(s->out));
  char *out_journal = cs_strdup_printf("%s.journal", s->out);
  int stale_journal = out_journal && cs_file_exists(out_journal), rc = CS_OK;
  if (stale_journal && !s->overwrite)
    rc = cs_error(CS_ERR_INPUT, "%s does not exist but a journal %s does (an earlier run): "
                  "resume that run, move the journal away, or use --overwrite", s->out,
                  out_journal);
  free(out_journal);
  CS_CHECK(rc);
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

/* The cell of the output's spec that cell c of input i is. */
static int64_t archive_merge_out_id(const archive_merge_state *s, int i, int64_t c) {
  return s->map[i] ? spec_map_cell(s->map[i], c) : c;
}

/* The shards input i's /runs rows name, each once, in order ("" when none). */
static int archive_merge_read_shards(archive_merge_state *s, int i, archive_reader *rd) {
  cs_run_info *runs = NULL;
  hsize_t n = 0;
  hid_t mt = archive_run_row_type();
  int rc = archive_read_table(rd, "runs", mt, (void **)&runs, &n);
  H5Tclose(mt);
  size_t cap = 1;
  for (hsize_t k = 0; !rc && k < n; k++) cap += strlen(runs[k].shard) + 1;
  if (!rc) rc = CS_CALLOC(s->shards[i], cap);
  for (hsize_t k = 0; !rc && k < n; k++) {
    int seen = !runs[k].shard[0];
    for (hsize_t j = 0; j < k && !seen; j++) seen = !strcmp(runs[j].shard, runs[k].shard);
    if (seen) continue;
    if (s->shards[i][0]) strcat(s->shards[i], " ");
    strcat(s->shards[i], runs[k].shard);
  }
  free(runs);
  return rc;
}

/* Pass 0: every input's spec (from its /spec), /cells rows and shards; an
 * interrupted input is refused. */
static int archive_merge_open_inputs(archive_merge_state *s) {
  CS_CHECK(CS_CALLOC(s->rows, s->n_inputs));
  CS_CHECK(CS_CALLOC(s->in_spec, s->n_inputs));
  CS_CHECK(CS_CALLOC(s->map, s->n_inputs));
  CS_CHECK(CS_CALLOC(s->shards, s->n_inputs));
  CS_CHECK(CS_CALLOC(s->absent, s->n_inputs));
  for (int i = 0; i < s->n_inputs; i++) {
    archive_reader rd;
    CS_CHECK(archive_check_not_interrupted(s->inputs[i]));
    CS_CHECK(archive_reader_open(s->inputs[i], &rd));
    s->absent[i] = archive_stats_absent(rd.file);
    int rc = archive_merge_read_shards(s, i, &rd);
    s->in_spec[i] = rd.spec;  // kept: the input's cells as the output's
    rd.spec = NULL;
    s->rows[i] = rd.a;  // kept for pass 2 (a few bytes per cell): /cells is not read again
    rd.a->spec = s->in_spec[i];
    rd.a = NULL;
    archive_reader_close(&rd);
    CS_CHECK(rc);
  }
  return CS_OK;
}

/* The output's spec: given (grow); the inputs' when they all have one
 * identity (the first input's text kept); else the union of their grids
 * (spec_union_text: refused when they differ outside [grid]). */
static int archive_merge_choose_spec(archive_merge_state *s, const cs_spec *given) {
  if (given) {
    s->spec = (cs_spec *)given;
    return CS_OK;
  }
  s->spec = s->in_spec[0];
  int rc = CS_OK;
  for (int i = 1; i < s->n_inputs && !rc; i++) {
    if (!strcmp(spec_canonical_sha256(s->in_spec[i]), spec_canonical_sha256(s->spec))) continue;
    char *text = NULL, *source = cs_strdup_printf("the union of the specs of %s..%s",
                                                        s->inputs[0], s->inputs[i]);
    cs_spec *u = NULL;
    rc = source ? spec_union_text(s->spec, s->in_spec[i], &text)
                : cs_error(CS_ERR_NOMEM, "out of memory");
    if (!rc) rc = spec_load_string(text, source, &u);
    free(source);
    if (rc) {
      free(text);
      rc = cs_error_context(rc, "merge: ");
    } else {
      if (s->own_spec) spec_free(s->spec);
      free(s->text);
      s->spec = u, s->text = text, s->own_spec = 1;
    }
  }
  return rc;
}

/* Pass 1, input i: its listed cells (as the output's) and statuses decide
 * the chosen input of each cell (archive_status_rank, the first input in
 * archive_merge_order on a tie). */
static int archive_merge_scan_input(archive_merge_state *s, int i) {
  const cs_archive *a = s->rows[i];
  int64_t nc = spec_cell_count(s->spec), nin = spec_cell_count(s->in_spec[i]);
  if (strcmp(spec_canonical_sha256(s->in_spec[i]), spec_canonical_sha256(s->spec)) != 0)
    CS_CHECK(spec_map_begin(s->in_spec[i], s->spec, &s->map[i]));
  for (int64_t k = 0; k < a->n_rows; k++) {
    int64_t c = a->row_cell[k];
    int st = a->row_status[k];
    if (c < 0 || c >= nin)
      return cs_error(CS_ERR_INPUT, "%s lists cell %" PRId64 ", outside its spec's 0..%" PRId64,
                      s->inputs[i], c, nin - 1);
    c = archive_merge_out_id(s, i, c);
    if (c < 0 || c >= nc)
      return cs_error(CS_ERR_INPUT, "%s: cell %" PRId64 " is not a cell of the merge's spec",
                      s->inputs[i], a->row_cell[k]);
    s->listed[c] = 1;
    if (st == CELL_PENDING) continue;
    if (st == CELL_DONE && s->n_done[c] < 255) s->n_done[c]++;
    int rank = archive_status_rank((cs_cell_status)st);
    if (s->pick_in[c] < 0 || rank > s->pick_rank[c])
      s->pick_in[c] = i, s->pick_rank[c] = (unsigned char)rank;
  }
  return CS_OK;
}

/* What the merge got: the sweep, its identity, the inputs' shards; the
 * shards of the largest count N named that no input is (*missing_text). */
static void archive_merge_describe(archive_merge_state *s, char *missing_text, size_t len) {
  cs_archive_merge_report *r = s->rep;
  cs_copy_str(r->sweep, sizeof r->sweep, spec_sweep(s->spec)->name);
  cs_copy_str(r->identity, sizeof r->identity, spec_canonical_sha256(s->spec));
  r->cells = spec_cell_count(s->spec), r->listed = s->listed_n, r->inputs = s->n_inputs;
  r->grids = s->own_spec;
  size_t used = 0;
  int count = 0;
  for (int i = 0; i < s->n_inputs; i++) {
    const char *sh = s->shards[i][0] ? s->shards[i] : "unsharded";
    used += (size_t)snprintf(r->got + used, used < sizeof r->got ? sizeof r->got - used : 0,
                             "%s%s (%s)", i ? ", " : "", sh, s->inputs[i]);
    const char *slash = strchr(s->shards[i], '/');
    if (slash && atoi(slash + 1) > count) count = atoi(slash + 1);
  }
  missing_text[0] = '\0';
  used = 0;
  for (int k = 0; k < count && count <= 4096; k++) {
    char want[32];
    snprintf(want, sizeof want, "%d/%d", k, count);
    int seen = 0;
    for (int i = 0; i < s->n_inputs && !seen; i++) {
      // the shard list is space-separated: match whole entries
      for (const char *p = strstr(s->shards[i], want); p && !seen; p = strstr(p + 1, want))
        seen = (p == s->shards[i] || p[-1] == ' ') && (p[strlen(want)] == ' ' || !p[strlen(want)]);
    }
    if (!seen)
      used += (size_t)snprintf(missing_text + used, used < len ? len - used : 0, "%s%s",
                               used ? ", " : "", want);
  }
  cs_copy_str(r->missing_shards, sizeof r->missing_shards, missing_text);
}

/* The order of the inputs: those that store more statistics columns first
 * (the given order among equals), so that of a cell done in an older and a
 * newer archive the newer's result, with the columns the older lacks, is
 * the one chosen (the first of highest status) and written. */
static int archive_merge_order(archive_merge_state *s) {
  CS_CHECK(CS_CALLOC(s->order, s->n_inputs));
  int n = 0;
  for (int lacking = 0; lacking <= 64; lacking++)
    for (int i = 0; i < s->n_inputs; i++)
      if (__builtin_popcountll(s->absent[i]) == lacking) s->order[n++] = i;
  return CS_OK;
}

static int archive_merge_scan_inputs(archive_merge_state *s, const cs_spec *given) {
  CS_CHECK(archive_merge_open_inputs(s));
  CS_CHECK(archive_merge_order(s));
  CS_CHECK(archive_merge_choose_spec(s, given));
  int64_t nc = spec_cell_count(s->spec);
  CS_CHECK(CS_CALLOC(s->listed, nc));
  CS_CHECK(CS_CALLOC(s->n_done, nc));
  CS_CHECK(CS_CALLOC(s->pick_in, nc));
  CS_CHECK(CS_CALLOC(s->pick_rank, nc));
  CS_CHECK(CS_CALLOC(s->kept_of, nc));
  for (int64_t c = 0; c < nc; c++) s->pick_in[c] = -1, s->kept_of[c] = -1;
  for (int j = 0; j < s->n_inputs; j++) CS_CHECK(archive_merge_scan_input(s, s->order[j]));
  for (int64_t c = 0; c < nc; c++) {
    if (s->more && s->more[c]) s->listed[c] = 1;
    s->listed_n += s->listed[c];
  }
  if (!s->rep) return CS_OK;
  char missing[1024];
  archive_merge_describe(s, missing, sizeof missing);
  if (!s->check_complete || s->listed_n == nc || s->partial) return CS_OK;
  return cs_error(CS_ERR_INPUT, "merge: the inputs hold %" PRId64 " of the %" PRId64 " cells of "
                  "the sweep %s (%s)%s%s: give every shard, or --partial to write an archive that "
                  "records it is partial", s->listed_n, nc, spec_sweep(s->spec)->name,
                  s->rep->got, missing[0] ? "; missing shards " : "", missing);
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
 * them, unless kept. r->cell_id is the input's cell id; the output gets the
 * result under its own (archive_merge_out_id). */
static int archive_merge_apply_one(archive_merge_state *s, int i, archive_reader *rd,
                                   cs_cell_result *r) {
  int64_t c = archive_merge_out_id(s, i, r->cell_id);
  int multi = r->status == CELL_DONE && s->n_done[c] > 1, chosen = s->pick_in[c] == i;
  if (r->status == CELL_PENDING || (!chosen && !multi)) return CS_OK;
  CS_CHECK(archive_read_cell_groups(rd, r));
  if (chosen) {
    r->cell_id = c;
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
  int64_t c = archive_merge_out_id(W->s, W->i, r->cell_id);
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

/* Fill the output one input at a time (listed cells: the union) under a
 * temporary name (s->tmp). */
static int archive_merge_write(archive_merge_state *s) {
  CS_CHECK(archive_build_begin(s->out, s->spec, s->listed, s->overwrite, &s->b));
  for (int j = 0; j < s->n_inputs; j++) {
    int i = s->order[j];
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
  return archive_build_close(b, &s->tmp);
}

/* A partial merge records it: root attribute partial = 1 (docs/ARCHIVE.md,
 * "Merge"). */
static int archive_merge_mark_partial(const archive_merge_state *s) {
  hid_t f = archive_h5_open(s->tmp, H5F_ACC_RDWR);
  if (f < 0) return archive_h5_error(CS_ERR_IO, "cannot open %s to mark it partial", s->tmp);
  int rc = archive_attr_write_i64(f, "partial", H5T_STD_I32LE, 1, s->tmp);
  if (H5Fclose(f) < 0 && !rc) rc = archive_h5_error(CS_ERR_IO, "%s: cannot close", s->tmp);
  if (!rc) rc = cs_fsync_file(s->tmp);
  return rc;
}

static int archive_merge_pipeline(archive_merge_state *s) {
  CS_CHECK(archive_merge_check_output(s));
  CS_CHECK(archive_merge_check_distinct(s));
  CS_CHECK(archive_merge_scan_inputs(s, NULL));
  CS_CHECK(archive_merge_write(s));
  if (s->listed_n < spec_cell_count(s->spec)) CS_CHECK(archive_merge_mark_partial(s));
  // a stale journal of a replaced archive must not be replayed into it
  char *journal = cs_strdup_printf("%s.journal", s->out);
  if (!journal) return cs_error(CS_ERR_NOMEM, "out of memory");
  int rc = CS_OK;
  if (s->overwrite && cs_file_exists(journal) && unlink(journal) != 0)
    rc = cs_error(CS_ERR_IO, "cannot remove the old journal %s: %s", journal, strerror(errno));
  free(journal);
  if (!rc) rc = archive_rename_into_place(s->tmp, s->out);
  free(s->tmp);
  s->tmp = NULL;
  return rc;
}

static void archive_merge_free(archive_merge_state *s) {
  archive_results_free(s->cur, s->n_cur);
  archive_results_free(s->kept, s->n_kept);
  archive_build_abort(s->b);
  if (s->tmp) unlink(s->tmp);
  free(s->tmp);
  free(s->text);
  if (s->own_spec) spec_free(s->spec);
  free(s->listed), free(s->n_done), free(s->pick_in), free(s->pick_rank), free(s->kept_of);
  for (int i = 0; i < s->n_inputs; i++) {
    if (s->rows) archive_free(s->rows[i]);
    if (s->in_spec && s->in_spec[i]) spec_free(s->in_spec[i]);
    if (s->map) spec_map_free(s->map[i]);
    if (s->shards) free(s->shards[i]);
  }
  free(s->rows), free(s->in_spec), free(s->map), free(s->shards), free(s->absent), free(s->order);
}

int archive_merge(const char *out, const char *const *inputs, int n_inputs,
                  int overwrite, int partial, cs_archive_merge_report *rep){
  ARCHIVE_QUIET;
  cs_archive_merge_report unused;
  memset(rep ? rep : &unused, 0, sizeof *rep);
  if (!out || !inputs || n_inputs < 1)
    return cs_error(CS_ERR_INPUT, "merge: need an output and at least one input archive");
  archive_merge_state s;
  memset(&s, 0, sizeof s);
  s.out = out, s.inputs = inputs, s.n_inputs = n_inputs, s.overwrite = overwrite;
  s.partial = partial, s.check_complete = 1, s.rep = rep ? rep : &unused;
  int rc = archive_merge_pipeline(&s);
  archive_merge_free(&s);
  return rc;
}


int archive_merge_to_temp(const char *out, const char *const *inputs, int n_inputs,
                          const cs_spec *out_spec, const unsigned char *mask, char **tmp) {
  *tmp = NULL;
  archive_merge_state s;
  memset(&s, 0, sizeof s);
  s.out = out, s.inputs = inputs, s.n_inputs = n_inputs, s.more = mask;
  int rc = archive_merge_scan_inputs(&s, out_spec);
  if (!rc) rc = archive_merge_write(&s);
  if (!rc) *tmp = s.tmp, s.tmp = NULL;
  archive_merge_free(&s);
  return rc;
}

/* archive_tables.c — the per-cell tables of an archive as one table of data,
 * ARCHIVE_CELL_TABLES (docs/ARCHIVE.md, "On-disk layout"; adding one:
 * docs/ARCHITECTURE.md, "A new per-cell archive table"): per table its
 * name, the format_version that added it, its row type, its limits, result
 * -> rows, rows -> result and the comparison of two results' values in it
 * (what each member does: archive_internal.h). Create, open, write, build,
 * read, load, check, salvage and merge walk it. Here too: the rows of
 * /curvature and /curves, and the buffers of rows on their way into the
 * file (archive_table_rows), which the writer's batches and the bulk
 * builder share, so both write the same rows of the same result. */
#include "archive_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- /curvature: one row per prefix 1..depth ---- */

static hid_t archive_curv_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_curv_row));
  H5Tinsert(t, "cell_id", HOFFSET(archive_curv_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "prefix", HOFFSET(archive_curv_row, prefix), H5T_NATIVE_INT32);
  H5Tinsert(t, "n_points", HOFFSET(archive_curv_row, st.n_points), H5T_NATIVE_INT32);
  for (size_t i = 0; i < ARCHIVE_N_STATS_FIELDS; i++)
    H5Tinsert(t, ARCHIVE_STATS_FIELDS[i].name,
              offsetof(archive_curv_row, st) + ARCHIVE_STATS_FIELDS[i].offset, H5T_NATIVE_DOUBLE);
  return t;
}

static int archive_curv_done_rows(const cs_config *cfg) {
  return config_family_estimation(cfg->family) ? 0 : cfg->depth; /* no curvature */
}

static int archive_curv_rows_of(const cs_cell_result *r) {
  return r->depth;
}

static int archive_curv_to_rows(const cs_cell_result *r, void *rows, archive_points_stage *pts) {
  (void)pts;
  archive_curv_row *cv = rows;
  for (int l = 0; l < r->depth; l++) {
    cv[l].cell_id = r->cell_id;
    cv[l].prefix = l + 1;
    cv[l].st = r->curv[l];
  }
  return CS_OK;
}

static int archive_curv_alloc(cs_cell_result *r, int64_t n, const char *path) {
  if (n) CS_CHECK(archive_budget_take((uint64_t)n, sizeof(geom_stats), path, "/curvature"));
  if (n) CS_CHECK(CS_CALLOC(r->curv, n));
  r->depth = (int)n;
  return CS_OK;
}

/* Rows are placed by prefix: each of 1..depth exactly once. */
static const char *archive_curv_place(cs_cell_result *r, const void *row, int64_t k,
                                      unsigned char *seen) {
  (void)k;
  const archive_curv_row *cv = row;
  int p = cv->prefix;
  if (p < 1 || p > r->depth || seen[p - 1]) return "a prefix repeated or outside 1..depth";
  seen[p - 1] = 1;
  r->curv[p - 1] = cv->st;
  return NULL;
}

/* The statistics columns one side's archive does not store (stats_absent:
 * an older format_version) are left out. */
static int archive_curv_same(const cs_cell_result *x, const cs_cell_result *y) {
  if (x->depth != y->depth) return 0;
  uint64_t absent = x->stats_absent | y->stats_absent;
  for (int l = 0; l < x->depth; l++) {
    if (x->curv[l].n_points != y->curv[l].n_points) return 0;
    for (size_t k = 0; k < ARCHIVE_N_STATS_FIELDS; k++)
      if (!(absent >> k & 1) && memcmp((const char *)&x->curv[l] + ARCHIVE_STATS_FIELDS[k].offset,
                                       (const char *)&y->curv[l] + ARCHIVE_STATS_FIELDS[k].offset,
                                       sizeof(double)))
        return 0;
  }
  return 1;
}

_Static_assert(ARCHIVE_N_STATS_FIELDS <= 64, "stats_absent holds a bit per statistics field");

uint64_t archive_stats_absent(hid_t file) {
  hid_t ds = H5Dopen2(file, "curvature", H5P_DEFAULT), ftype = ds >= 0 ? H5Dget_type(ds) : -1;
  uint64_t absent = 0;
  for (size_t k = 0; ftype >= 0 && k < ARCHIVE_N_STATS_FIELDS; k++)
    if (H5Tget_member_index(ftype, ARCHIVE_STATS_FIELDS[k].name) < 0) absent |= (uint64_t)1 << k;
  if (ftype >= 0) H5Tclose(ftype);
  if (ds >= 0) H5Dclose(ds);
  else archive_h5_note();
  return absent;
}

void archive_curv_as_read(cs_cell_result *r, cs_family family, uint64_t file_absent) {
  uint64_t headmax_bit = archive_stats_bit(offsetof(geom_stats, sink_headmax));
  uint64_t max_attn_bit = archive_stats_bit(offsetof(geom_stats, max_attn));
  r->stats_absent = file_absent;
  if (family != FAMILY_LM || !(file_absent & headmax_bit) || (file_absent & max_attn_bit)) return;
  for (int l = 0; l < r->depth; l++) {
    r->curv[l].sink_headmax = r->curv[l].max_attn;
    r->curv[l].max_attn = NAN;
  }
  r->stats_absent = (file_absent & ~headmax_bit) | max_attn_bit;
}

/* ---- /curves: one row per evaluation, in training order ---- */

static hid_t archive_curve_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_curve_row));
  H5Tinsert(t, "cell_id", HOFFSET(archive_curve_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "epoch", HOFFSET(archive_curve_row, epoch), H5T_NATIVE_INT32);
  H5Tinsert(t, "train_loss", HOFFSET(archive_curve_row, train_loss), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "train_acc", HOFFSET(archive_curve_row, train_acc), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "test_acc", HOFFSET(archive_curve_row, test_acc), H5T_NATIVE_DOUBLE);
  return t;
}

static int archive_curve_rows_of(const cs_cell_result *r) {
  return r->n_curve;
}

static int archive_curve_to_rows(const cs_cell_result *r, void *rows, archive_points_stage *pts) {
  (void)pts;
  archive_curve_row *cu = rows;
  for (int e = 0; e < r->n_curve; e++) {
    cu[e].cell_id = r->cell_id;
    cu[e].epoch = r->curve[e].epoch;
    cu[e].train_loss = r->curve[e].train_loss;
    cu[e].train_acc = r->curve[e].train_acc;
    cu[e].test_acc = r->curve[e].test_acc;
  }
  return CS_OK;
}

static int archive_curve_alloc(cs_cell_result *r, int64_t n, const char *path) {
  if (n) CS_CHECK(archive_budget_take((uint64_t)n, sizeof(cs_curve_point), path, "/curves"));
  if (n) CS_CHECK(CS_CALLOC(r->curve, n));
  r->n_curve = (int)n;
  return CS_OK;
}

static const char *archive_curve_place(cs_cell_result *r, const void *row, int64_t k,
                                       unsigned char *seen) {
  (void)seen;
  const archive_curve_row *cu = row;
  r->curve[k] = (cs_curve_point){cu->epoch, cu->train_loss, cu->train_acc, cu->test_acc};
  return NULL;
}

static int archive_curve_same(const cs_cell_result *x, const cs_cell_result *y) {
  if (x->n_curve != y->n_curve) return 0;
  for (int e = 0; e < x->n_curve; e++) {
    const cs_curve_point *p = &x->curve[e], *q = &y->curve[e];
    double a[3] = {p->train_loss, p->train_acc, p->test_acc};
    double b[3] = {q->train_loss, q->train_acc, q->test_acc};
    if (p->epoch != q->epoch || memcmp(a, b, sizeof a)) return 0;
  }
  return 1;
}

/* ---- /estimation: one row per cell of family mha (the estimator's record) ---- */

static hid_t archive_est_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_est_row));
  H5Tinsert(t, "cell_id", HOFFSET(archive_est_row, cell_id), H5T_NATIVE_INT64);
#define EST_INT(f) H5Tinsert(t, #f, HOFFSET(archive_est_row, f), H5T_NATIVE_INT32)
#define EST_I64(f) H5Tinsert(t, #f, HOFFSET(archive_est_row, f), H5T_NATIVE_INT64)
#define EST_DBL(f) H5Tinsert(t, #f, HOFFSET(archive_est_row, f), H5T_NATIVE_DOUBLE)
  EST_INT(restarts), EST_INT(kept), EST_INT(converged), EST_INT(misspecified);
  EST_I64(steps), EST_I64(steps_total);
  EST_DBL(grad_norm), EST_DBL(train_mse), EST_DBL(teacher_mse), EST_DBL(fn_error);
  EST_DBL(param_error);
#undef EST_INT
#undef EST_I64
#undef EST_DBL
  return t;
}

/* A done cell of family mha has its row; of another family, any number
 * (the fixtures of test_archive_tables give every table rows). */
static int archive_est_done_rows(const cs_config *cfg) {
  return config_family_estimation(cfg->family) ? 1 : -1;
}

static int archive_est_rows_of(const cs_cell_result *r) {
  return r->est.present;
}

static int archive_est_to_rows(const cs_cell_result *r, void *rows, archive_points_stage *pts) {
  (void)pts;
  const cs_estimation *e = &r->est;
  *(archive_est_row *)rows = (archive_est_row){
      r->cell_id,     e->restarts,  e->kept,      e->converged,   e->misspecified, e->steps,
      e->steps_total, e->grad_norm, e->train_mse, e->teacher_mse, e->fn_error,     e->param_error};
  return CS_OK;
}

static int archive_est_alloc(cs_cell_result *r, int64_t n, const char *path) {
  (void)r, (void)n, (void)path; /* the row goes into r->est: nothing to allocate */
  return CS_OK;
}

/* The row into r->est; a finished estimate is finite (never NaN stored as
 * a result: docs/ARCHIVE.md). */
static const char *archive_est_place(cs_cell_result *r, const void *row, int64_t k,
                                     unsigned char *seen) {
  (void)k, (void)seen;
  const archive_est_row *w = row;
  double v[5] = {w->grad_norm, w->train_mse, w->teacher_mse, w->fn_error, w->param_error};
  for (int i = 0; i < 5; i++)
    if (!isfinite(v[i]) || v[i] < 0) return "an error, loss or gradient norm not finite and >= 0";
  if (w->restarts < 1 || w->kept < 0 || w->kept >= w->restarts || w->steps < 0 ||
      w->steps > w->steps_total || (w->converged | w->misspecified) & ~1)
    return "restarts, kept restart, steps or flags out of their domain";
  r->est = (cs_estimation){1, w->restarts, w->kept, w->converged, w->misspecified, w->steps,
                           w->steps_total, w->grad_norm, w->train_mse, w->teacher_mse,
                           w->fn_error, w->param_error};
  return NULL;
}

static int archive_est_same(const cs_cell_result *x, const cs_cell_result *y) {
  archive_est_row a, b;
  memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
  if (x->est.present != y->est.present) return 0;
  if (!x->est.present) return 1;
  archive_est_to_rows(x, &a, NULL), archive_est_to_rows(y, &b, NULL);
  a.cell_id = b.cell_id = 0;
  return memcmp(&a, &b, sizeof a) == 0;
}

/* 1 when x or y was read from an archive before format_version 6's
 * measures (its /curvature has no attn_entropy column, stats_absent): that
 * archive has no /gates and /cellstats either, so a comparison leaves them
 * out, as it leaves out the columns (docs/ARCHIVE.md, "Versions"). */
static int archive_v6_measures_absent(const cs_cell_result *x, const cs_cell_result *y) {
  return ((x->stats_absent | y->stats_absent) & archive_stats_bit(offsetof(geom_stats, attn_entropy))) != 0;
}

/* ---- /gates: one row per gated block of a done cell (its gate scores) ---- */

/* The histogram's column names, "hist_00" .. "hist_19". */
static const char *const GATE_HIST_NAMES[RESULT_GATE_BINS] = {
    "hist_00", "hist_01", "hist_02", "hist_03", "hist_04", "hist_05", "hist_06",
    "hist_07", "hist_08", "hist_09", "hist_10", "hist_11", "hist_12", "hist_13",
    "hist_14", "hist_15", "hist_16", "hist_17", "hist_18", "hist_19"};

static hid_t archive_gate_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_gate_row));
  H5Tinsert(t, "cell_id", HOFFSET(archive_gate_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "prefix", HOFFSET(archive_gate_row, prefix), H5T_NATIVE_INT32);
  H5Tinsert(t, "n_scores", HOFFSET(archive_gate_row, n_scores), H5T_NATIVE_INT64);
#define GATE_DBL(f) H5Tinsert(t, #f, HOFFSET(archive_gate_row, f), H5T_NATIVE_DOUBLE)
  GATE_DBL(mean), GATE_DBL(median), GATE_DBL(q10), GATE_DBL(q90), GATE_DBL(frac_low);
  GATE_DBL(var_query), GATE_DBL(var_channel);
#undef GATE_DBL
  for (int b = 0; b < RESULT_GATE_BINS; b++)
    H5Tinsert(t, GATE_HIST_NAMES[b], HOFFSET(archive_gate_row, hist) + sizeof(double) * (size_t)b,
              H5T_NATIVE_DOUBLE);
  return t;
}

/* Any number: a done cell of a gated arch with attention blocks measured
 * by this format has a row per block, but one merged from a version 5 or
 * older archive has none (not measured, docs/ARCHIVE.md "Versions"), and
 * a cell of another arch or family none (the fixtures of
 * test_archive_tables give every table rows). */
static int archive_gate_done_rows(const cs_config *cfg) {
  (void)cfg;
  return -1;
}

static int archive_gate_rows_of(const cs_cell_result *r) {
  return r->n_gates;
}

static void archive_gate_row_of(const cs_cell_result *r, const cs_gate_scores *g,
                                archive_gate_row *w) {
  w->cell_id = r->cell_id;
  w->prefix = g->prefix;
  w->n_scores = g->n_scores;
  w->mean = g->mean, w->median = g->median, w->q10 = g->q10, w->q90 = g->q90;
  w->frac_low = g->frac_low, w->var_query = g->var_query, w->var_channel = g->var_channel;
  memcpy(w->hist, g->hist, sizeof w->hist);
}

static int archive_gate_to_rows(const cs_cell_result *r, void *rows, archive_points_stage *pts) {
  (void)pts;
  archive_gate_row *w = rows;
  for (int k = 0; k < r->n_gates; k++) archive_gate_row_of(r, &r->gates[k], &w[k]);
  return CS_OK;
}

static int archive_gate_alloc(cs_cell_result *r, int64_t n, const char *path) {
  if (n) CS_CHECK(archive_budget_take((uint64_t)n, sizeof(cs_gate_scores), path, "/gates"));
  if (n) CS_CHECK(CS_CALLOC(r->gates, n));
  r->n_gates = (int)n;
  return CS_OK;
}

/* Rows in ascending prefix, each a block of the cell (its /curvature depth,
 * read before), every value a share or quantile of gate values in [0, 1]. */
static const char *archive_gate_place(cs_cell_result *r, const void *row, int64_t k,
                                      unsigned char *seen) {
  (void)seen;
  const archive_gate_row *w = row;
  if (w->prefix < 1 || w->prefix > r->depth || (k > 0 && r->gates[k - 1].prefix >= w->prefix))
    return "a prefix repeated, out of order or outside 1..depth";
  double v[7 + RESULT_GATE_BINS] = {w->mean,     w->median,    w->q10,        w->q90,
                                    w->frac_low, w->var_query, w->var_channel};
  memcpy(v + 7, w->hist, sizeof w->hist);
  for (int i = 0; i < 7 + RESULT_GATE_BINS; i++)
    if (!(v[i] >= 0.0 && v[i] <= 1.0)) return "a gate statistic outside [0, 1]";
  if (w->n_scores < 1) return "no gate values";
  cs_gate_scores *g = &r->gates[k];
  g->prefix = w->prefix;
  g->n_scores = w->n_scores;
  g->mean = w->mean, g->median = w->median, g->q10 = w->q10, g->q90 = w->q90;
  g->frac_low = w->frac_low, g->var_query = w->var_query, g->var_channel = w->var_channel;
  memcpy(g->hist, w->hist, sizeof g->hist);
  return NULL;
}

static int archive_gate_same(const cs_cell_result *x, const cs_cell_result *y) {
  if (archive_v6_measures_absent(x, y)) return 1;
  if (x->n_gates != y->n_gates) return 0;
  for (int k = 0; k < x->n_gates; k++) {
    archive_gate_row a, b;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
    archive_gate_row_of(x, &x->gates[k], &a), archive_gate_row_of(y, &y->gates[k], &b);
    a.cell_id = b.cell_id = 0;
    if (memcmp(&a, &b, sizeof a)) return 0;
  }
  return 1;
}

/* ---- /cellstats: one row per done or diverged cell (calibration, stability) ---- */

static hid_t archive_cstat_row_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(archive_cstat_row));
  H5Tinsert(t, "cell_id", HOFFSET(archive_cstat_row, cell_id), H5T_NATIVE_INT64);
  H5Tinsert(t, "spikes", HOFFSET(archive_cstat_row, spikes), H5T_NATIVE_INT32);
#define CSTAT_DBL(f) H5Tinsert(t, #f, HOFFSET(archive_cstat_row, f), H5T_NATIVE_DOUBLE)
  CSTAT_DBL(loss_ratio_max), CSTAT_DBL(test_nll), CSTAT_DBL(test_brier), CSTAT_DBL(test_ece);
#undef CSTAT_DBL
  return t;
}

/* Any number (at most one): a done cell of a classification family
 * measured by this format has its row, one merged from a version 5 or
 * older archive none (not measured), a cell of family mha none (the
 * estimator has no classes or curve). */
static int archive_cstat_done_rows(const cs_config *cfg) {
  (void)cfg;
  return -1;
}

static int archive_cstat_rows_of(const cs_cell_result *r) {
  return r->cstats.present;
}

static int archive_cstat_to_rows(const cs_cell_result *r, void *rows, archive_points_stage *pts) {
  (void)pts;
  const cs_cell_stats *c = &r->cstats;
  *(archive_cstat_row *)rows = (archive_cstat_row){r->cell_id, c->spikes, c->loss_ratio_max,
                                                   c->test_nll, c->test_brier, c->test_ece};
  return CS_OK;
}

static int archive_cstat_alloc(cs_cell_result *r, int64_t n, const char *path) {
  (void)r, (void)n, (void)path; /* the row goes into r->cstats: nothing to allocate */
  return CS_OK;
}

/* The row into r->cstats: spikes ≥ 0, the ratio ≥ 0 or NaN (fewer than two
 * evaluations), and the calibration of a done cell finite (NLL ≥ 0, Brier
 * in [0, 2], ECE in [0, 1]); a diverged cell's is NaN (not measured). */
static const char *archive_cstat_place(cs_cell_result *r, const void *row, int64_t k,
                                       unsigned char *seen) {
  (void)k, (void)seen;
  const archive_cstat_row *w = row;
  if (w->spikes < 0 || w->loss_ratio_max < 0) return "a negative spike count or loss ratio";
  int done = r->status == CELL_DONE;
  if (done ? !(w->test_nll >= 0 && isfinite(w->test_nll) && w->test_brier >= 0 &&
               w->test_brier <= 2 && w->test_ece >= 0 && w->test_ece <= 1)
           : !(isnan(w->test_nll) && isnan(w->test_brier) && isnan(w->test_ece)))
    return "a calibration value outside its domain (NLL >= 0, Brier in [0, 2], ECE in [0, 1]; "
           "NaN for a cell that is not done)";
  r->cstats = (cs_cell_stats){1, w->spikes, w->loss_ratio_max, w->test_nll, w->test_brier,
                              w->test_ece};
  return NULL;
}

static int archive_cstat_same(const cs_cell_result *x, const cs_cell_result *y) {
  archive_cstat_row a, b;
  memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
  if (archive_v6_measures_absent(x, y)) return 1;
  if (x->cstats.present != y->cstats.present) return 0;
  if (!x->cstats.present) return 1;
  archive_cstat_to_rows(x, &a, NULL), archive_cstat_to_rows(y, &b, NULL);
  a.cell_id = b.cell_id = 0;
  return memcmp(&a, &b, sizeof a) == 0;
}

/* ---- the table ---- */

const archive_cell_table ARCHIVE_CELL_TABLES[ARCHIVE_N_CELL_TABLES] = {
    {.name = "curvature", .since = 2, .row_bytes = sizeof(archive_curv_row),
     .row_type = archive_curv_row_type, .max_per_cell = ARCHIVE_MAX_DEPTH,
     .done_rows = archive_curv_done_rows, .rows_of = archive_curv_rows_of,
     .to_rows = archive_curv_to_rows, .alloc = archive_curv_alloc, .place = archive_curv_place,
     .same = archive_curv_same},
    {.name = "curves", .since = 2, .row_bytes = sizeof(archive_curve_row),
     .row_type = archive_curve_row_type, .rows_of = archive_curve_rows_of,
     .to_rows = archive_curve_to_rows, .alloc = archive_curve_alloc,
     .place = archive_curve_place, .same = archive_curve_same},
    {.name = ARCHIVE_POINTS_INDEX, .since = 4, .row_bytes = sizeof(archive_point_row),
     .row_type = archive_point_row_type, .max_per_cell = 1, .rows_of = archive_points_rows_of,
     .to_rows = archive_points_to_rows, .rebase = archive_points_rebase,
     .same = archive_points_same, .create = archive_points_create, .group = "points"},
    {.name = "estimation", .since = 6, .row_bytes = sizeof(archive_est_row),
     .row_type = archive_est_row_type, .max_per_cell = 1, .done_rows = archive_est_done_rows,
     .rows_of = archive_est_rows_of, .to_rows = archive_est_to_rows, .alloc = archive_est_alloc,
     .place = archive_est_place, .same = archive_est_same, .export_csv = 1},
    {.name = "gates", .since = 6, .row_bytes = sizeof(archive_gate_row),
     .row_type = archive_gate_row_type, .max_per_cell = ARCHIVE_MAX_DEPTH,
     .done_rows = archive_gate_done_rows, .rows_of = archive_gate_rows_of,
     .to_rows = archive_gate_to_rows, .alloc = archive_gate_alloc, .place = archive_gate_place,
     .same = archive_gate_same, .export_csv = 1},
    {.name = "cellstats", .since = 6, .row_bytes = sizeof(archive_cstat_row),
     .row_type = archive_cstat_row_type, .max_per_cell = 1,
     .done_rows = archive_cstat_done_rows, .rows_of = archive_cstat_rows_of,
     .to_rows = archive_cstat_to_rows, .alloc = archive_cstat_alloc,
     .place = archive_cstat_place, .same = archive_cstat_same, .export_csv = 1},
};

const archive_cell_table *archive_cell_table_named(const char *name) {
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++)
    if (!strcmp(ARCHIVE_CELL_TABLES[t].name, name)) return &ARCHIVE_CELL_TABLES[t];
  return NULL;
}

int archive_cell_table_in(const archive_cell_table *t, int version) {
  return version >= t->since;
}

int archive_cell_table_want_rows(const archive_cell_table *t, cs_cell_status status,
                                 const cs_config *cfg) {
  return status == CELL_DONE && t->done_rows ? t->done_rows(cfg) : -1;
}

/* ---- rows on their way into the file ---- */

int archive_table_rows_add(archive_table_rows *o, const cs_cell_result *r) {
  int k[ARCHIVE_N_CELL_TABLES];
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    k[t] = T->rows_of(r);
    CS_CHECK(archive_grow_buffer((void **)&o->rows[t], &o->cap[t], o->n[t] + (size_t)k[t],
                                 T->row_bytes, 64, "batching archive rows"));
  }
  // the rows are counted in only when every table's were made (the stage
  // of /points is last, and takes nothing when it fails)
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    if (k[t] == 0) continue;  // a table this cell has no rows in may have no buffer yet
    unsigned char *at = o->rows[t] + o->n[t] * T->row_bytes;
    memset(at, 0, (size_t)k[t] * T->row_bytes);
    CS_CHECK(T->to_rows(r, at, &o->pts));
  }
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) o->n[t] += (size_t)k[t];
  return CS_OK;
}

size_t archive_table_rows_most(const archive_table_rows *o) {
  size_t most = 0;
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++)
    if (o->n[t] > most) most = o->n[t];
  return most;
}

int archive_table_rows_flush(hid_t file, archive_table_rows *o, const char *path) {
  CS_CHECK(archive_points_stage_flush(file, &o->pts, path));
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const archive_cell_table *T = &ARCHIVE_CELL_TABLES[t];
    if (o->n[t] == 0) continue;
    if (T->rebase) T->rebase(o->rows[t], o->n[t], &o->pts);
    hid_t ds = H5Dopen2(file, T->name, H5P_DEFAULT);
    if (ds < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot open /%s", path, T->name);
    hid_t mt = T->row_type();
    int rc = archive_table_append(ds, mt, o->rows[t], o->n[t], path, T->name);
    H5Tclose(mt);
    H5Dclose(ds);
    CS_CHECK(rc);
    o->n[t] = 0;
  }
  return CS_OK;
}

void archive_table_rows_free(archive_table_rows *o) {
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) free(o->rows[t]);
  archive_points_stage_free(&o->pts);
  memset(o, 0, sizeof *o);
}

int archive_tables_commit(hid_t file, const char *path) {
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++) {
    const char *name = ARCHIVE_CELL_TABLES[t].name;
    hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
    if (ds < 0) return archive_h5_error(CS_ERR_IO, "%s: cannot open /%s", path, name);
    int rc = archive_attr_write_i64(ds, "committed_rows", H5T_STD_I64LE,
                                    (int64_t)archive_table_length(ds), path);
    H5Dclose(ds);
    CS_CHECK(rc);
  }
  return CS_OK;
}

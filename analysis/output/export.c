/* export.c — `curvsweep export ARCHIVE --csv DIR`: an archive's tables as
 * plain CSV files, one row per cell, per (cell, prefix) and per (cell,
 * epoch), each with the cell's axis values decoded (analysis/README.md,
 * "Export"). The rows are those the report reads: the archive's committed
 * rows, curvature of done cells, curves of finished cells. */
#include "output.h"

#include "curvsweep/archive.h"
#include "curvsweep/csv.h"
#include "curvsweep/error.h"
#include "curvsweep/path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A text field, quoted (RFC 4180: inner quotes doubled). Text that a
 * spreadsheet would evaluate as a formula (starting with =, +, -, @, tab or
 * carriage return) gets a leading ' (docs/SECURITY.md, "Exported CSV"). */
static void put_text(FILE *f, const char *s) {
  fputs(",\"", f);
  if (*s && strchr("=+-@\t\r", *s)) fputc('\'', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* "cell_id,<axis>,..." and a cell's "id,<value>,..." (axis names and values
 * are the spec's own words: no commas or quotes, docs/SPEC.md). */
static void put_config_header(FILE *f, const cs_spec *spec) {
  fputs("cell_id", f);
  for (int a = 0; a < spec_axis_count(spec); a++) fprintf(f, ",%s", spec_axis_name(spec, a));
}

static void put_config(FILE *f, const cs_spec *spec, int64_t id) {
  fprintf(f, "%lld", (long long)id);
  for (int a = 0; a < spec_axis_count(spec); a++) {
    char buf[128];
    spec_axis_value_text(spec, a, id, buf, sizeof buf);
    fprintf(f, ",%s", buf);
  }
}

/* One exported table: its file, its columns after the cell's, how many
 * rows a cell has (0: none) and the values of its row k. */
typedef struct {
  const char *file;
  void (*header)(FILE *f);
  int (*rows)(const cs_cell_result *c);
  void (*row)(FILE *f, const cs_cell_result *c, int k);
} export_table;

/* cells.csv: one row per cell of the archive's committed rows. */
static void cells_header(FILE *f) {
  fputs(",status,rank,attempts,wall_s,train_loss,train_acc,test_acc,n_params,message", f);
}
static int cells_rows(const cs_cell_result *c) {
  (void)c;
  return 1;
}
static void cells_row(FILE *f, const cs_cell_result *c, int k) {
  (void)k;
  fprintf(f, ",%s,%d,%d", result_status_name(c->status), c->rank, c->attempts);
  cs_csv_double(f, c->wall_s);
  cs_csv_double(f, c->train_loss);
  cs_csv_double(f, c->train_acc);
  cs_csv_double(f, c->test_acc);
  fprintf(f, ",%lld", (long long)c->n_params);
  put_text(f, c->message);
}

/* curvature.csv: one row per prefix of a done cell. */
static void curvature_header(FILE *f) {
  fputs(",prefix,n_points", f);
  for (int k = 0; k < GEOM_STATS_N_FIELDS; k++) fprintf(f, ",%s", GEOM_STATS_FIELDS[k].name);
}
static int curvature_rows(const cs_cell_result *c) { return c->status == CELL_DONE ? c->depth : 0; }
static void curvature_row(FILE *f, const cs_cell_result *c, int l) {
  const geom_stats *st = &c->curv[l];
  fprintf(f, ",%d,%d", l + 1, st->n_points);
  for (int k = 0; k < GEOM_STATS_N_FIELDS; k++)
    cs_csv_double(f, *(const double *)((const char *)st + GEOM_STATS_FIELDS[k].offset));
}

/* curves.csv: one row per evaluated epoch of a finished cell. */
static void curves_header(FILE *f) { fputs(",epoch,train_loss,train_acc,test_acc", f); }
static int curves_rows(const cs_cell_result *c) { return c->status == CELL_PENDING ? 0 : c->n_curve; }
static void curves_row(FILE *f, const cs_cell_result *c, int e) {
  const cs_curve_point *p = &c->curve[e];
  fprintf(f, ",%d", p->epoch);
  cs_csv_double(f, p->train_loss);
  cs_csv_double(f, p->train_acc);
  cs_csv_double(f, p->test_acc);
}

static const export_table EXPORT_TABLES[] = {
    {"cells.csv", cells_header, cells_rows, cells_row},
    {"curvature.csv", curvature_header, curvature_rows, curvature_row},
    {"curves.csv", curves_header, curves_rows, curves_row},
};

/* Table T of the n results, or (T NULL) the archive's per-cell table
 * `table` column by column (archive_csv_*: estimation, gates, cellstats):
 * each row the cell's id and axis values, then its own. */
static int write_table(const analysis_outdir *dir, const cs_spec *spec, const cs_cell_result *r, int64_t n,
                       const export_table *T, const char *table) {
  char file[96];
  snprintf(file, sizeof file, "%s.csv", table ? table : "");
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, T ? T->file : file));
  put_config_header(o.f, spec);
  int rc = T ? (T->header(o.f), CS_OK) : archive_csv_header(o.f, table);
  fputc('\n', o.f);
  for (int64_t i = 0; !rc && i < n; i++) {
    int rows = T ? T->rows(&r[i]) : archive_csv_rows(table, &r[i]);
    for (int k = 0; !rc && k < rows; k++) {
      put_config(o.f, spec, r[i].cell_id);
      if (T)
        T->row(o.f, &r[i], k);
      else
        rc = archive_csv_row(o.f, table, &r[i], k);
      fputc('\n', o.f);
    }
  }
  if (rc) {
    analysis_file_abort(&o);
    return rc;
  }
  return analysis_file_commit(&o);
}

int analysis_export_csv(const char *archive, const char *out_dir, int64_t *n_cells) {
  *n_cells = 0;
  // refused before the archive is read (docs/SECURITY.md, "The report directory")
  CS_CHECK(analysis_report_dir_check(out_dir));
  char *text = NULL;
  CS_CHECK(archive_read_spec(archive, &text));
  cs_spec *spec = NULL;
  int rc = spec_load_string(text, archive, &spec);
  free(text);
  if (rc) return cs_error(rc, "%s: its /spec does not load: %s", archive, cs_error_message());
  cs_cell_result *r = NULL;
  int64_t n = 0;
  rc = archive_read_results_tables(archive, &r, &n);
  // a cell the spec does not have cannot be decoded: refuse before writing
  for (int64_t i = 0; !rc && i < n; i++)
    if (r[i].cell_id < 0 || r[i].cell_id >= spec_cell_count(spec))
      rc = cs_error(CS_ERR_INPUT, "%s: /cells row %lld has cell_id %lld outside its spec's %lld cells",
                    archive, (long long)i, (long long)r[i].cell_id, (long long)spec_cell_count(spec));
  analysis_outdir dir = {.fd = -1};
  if (!rc) rc = analysis_outdir_open(&dir, out_dir);
  for (size_t t = 0; !rc && t < sizeof EXPORT_TABLES / sizeof *EXPORT_TABLES; t++)
    rc = write_table(&dir, spec, r, n, &EXPORT_TABLES[t], NULL);
  for (int t = 0; !rc && archive_csv_table(t); t++)
    rc = write_table(&dir, spec, r, n, NULL, archive_csv_table(t));
  analysis_outdir_close(&dir);
  if (!rc) *n_cells = n;
  for (int64_t i = 0; i < n; i++) result_free(&r[i]);
  free(r);
  spec_free(spec);
  return rc;
}

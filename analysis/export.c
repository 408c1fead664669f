/* export.c — `curvsweep export ARCHIVE --csv DIR`: an archive's tables as
 * plain CSV files, one row per cell, per (cell, prefix) and per (cell,
 * epoch), each with the cell's axis values decoded (analysis/README.md,
 * "Export"). The rows are those the report reads: the archive's committed
 * rows, curvature of done cells, curves of finished cells. */
#include "output.h"

#include "curvsweep/archive.h"
#include "curvsweep/error.h"
#include "curvsweep/path.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A double that reads back as exactly the same value: %.17g; nan and
 * ±inf spelled as pandas and R read them. */
static void put_double(FILE *f, double v) {
  if (isnan(v))
    fputs(",nan", f);
  else if (isinf(v))
    fputs(v > 0 ? ",inf" : ",-inf", f);
  else
    fprintf(f, ",%.17g", v);
}

/* A text field, quoted (RFC 4180: inner quotes doubled). */
static void put_text(FILE *f, const char *s) {
  fputs(",\"", f);
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

static int write_cells(const char *dir, const cs_spec *spec, const cs_cell_result *r, int64_t n) {
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "cells.csv"));
  put_config_header(o.f, spec);
  fputs(",status,rank,attempts,wall_s,train_loss,train_acc,test_acc,n_params,message\n", o.f);
  for (int64_t i = 0; i < n; i++) {
    put_config(o.f, spec, r[i].cell_id);
    fprintf(o.f, ",%s,%d,%d", result_status_name(r[i].status), r[i].rank, r[i].attempts);
    put_double(o.f, r[i].wall_s);
    put_double(o.f, r[i].train_loss);
    put_double(o.f, r[i].train_acc);
    put_double(o.f, r[i].test_acc);
    fprintf(o.f, ",%lld", (long long)r[i].n_params);
    put_text(o.f, r[i].message);
    fputc('\n', o.f);
  }
  return analysis_file_commit(&o);
}

static int write_curvature(const char *dir, const cs_spec *spec, const cs_cell_result *r, int64_t n) {
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "curvature.csv"));
  put_config_header(o.f, spec);
  fputs(",prefix,n_points", o.f);
  for (int k = 0; k < GEOM_STATS_N_FIELDS; k++) fprintf(o.f, ",%s", GEOM_STATS_FIELDS[k].name);
  fputc('\n', o.f);
  for (int64_t i = 0; i < n; i++) {
    if (r[i].status != CELL_DONE) continue;
    for (int l = 0; l < r[i].depth; l++) {
      const geom_stats *st = &r[i].curv[l];
      put_config(o.f, spec, r[i].cell_id);
      fprintf(o.f, ",%d,%d", l + 1, st->n_points);
      for (int k = 0; k < GEOM_STATS_N_FIELDS; k++)
        put_double(o.f, *(const double *)((const char *)st + GEOM_STATS_FIELDS[k].offset));
      fputc('\n', o.f);
    }
  }
  return analysis_file_commit(&o);
}

static int write_curves(const char *dir, const cs_spec *spec, const cs_cell_result *r, int64_t n) {
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "curves.csv"));
  put_config_header(o.f, spec);
  fputs(",epoch,train_loss,train_acc,test_acc\n", o.f);
  for (int64_t i = 0; i < n; i++) {
    if (r[i].status == CELL_PENDING) continue;
    for (int e = 0; e < r[i].n_curve; e++) {
      const cs_curve_point *c = &r[i].curve[e];
      put_config(o.f, spec, r[i].cell_id);
      fprintf(o.f, ",%d", c->epoch);
      put_double(o.f, c->train_loss);
      put_double(o.f, c->train_acc);
      put_double(o.f, c->test_acc);
      fputc('\n', o.f);
    }
  }
  return analysis_file_commit(&o);
}

int analysis_export_csv(const char *archive, const char *dir, int64_t *n_cells) {
  *n_cells = 0;
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
  if (!rc) rc = cs_mkdir_p(dir);
  if (!rc) rc = write_cells(dir, spec, r, n);
  if (!rc) rc = write_curvature(dir, spec, r, n);
  if (!rc) rc = write_curves(dir, spec, r, n);
  if (!rc) *n_cells = n;
  for (int64_t i = 0; i < n; i++) result_free(&r[i]);
  free(r);
  spec_free(spec);
  return rc;
}

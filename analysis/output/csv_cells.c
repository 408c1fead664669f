/* csv_cells.c — the cells of a row of the report's CSV tables (writers.h):
 * numbers with %.15g ("nan", "inf"), an interval, a bootstrap estimate, a
 * paired difference, and the header of an interval. Below every writer of
 * a table (csv.c and the sections' own tables). */
#include "writers.h"

#include <math.h>
#include <stdio.h>

/* "%.15g", "nan"/"inf" for non-finite values, into buf. */
static const char *analysis_fmt(char *buf, size_t len, double v) {
  if (isnan(v))
    snprintf(buf, len, "nan");
  else if (isinf(v))
    snprintf(buf, len, v > 0 ? "inf" : "-inf");
  else
    snprintf(buf, len, "%.15g", v);
  return buf;
}

void analysis_csv_num(FILE *f, double v) {
  char buf[64];
  fprintf(f, ",%s", analysis_fmt(buf, sizeof buf, v));
}

void analysis_csv_ci(FILE *f, const analysis_ci *c) {
  analysis_csv_num(f, c->mean);
  analysis_csv_num(f, c->lo);
  analysis_csv_num(f, c->hi);
}

void analysis_csv_boot(FILE *f, const analysis_boot *b) {
  analysis_csv_num(f, b->estimate);
  analysis_csv_num(f, b->lo);
  analysis_csv_num(f, b->hi);
}

void analysis_csv_diff(FILE *f, const analysis_diff *d) {
  analysis_csv_ci(f, &d->ci);
  fprintf(f, ",%d,%d", d->n_pos, d->n_neg);
  analysis_csv_num(f, d->sign_p);
  analysis_csv_num(f, d->dz.mean);
  analysis_csv_num(f, d->dz.lo);
  analysis_csv_num(f, d->dz.hi);
}

void analysis_csv_ci_header(FILE *f, const char *name) {
  fprintf(f, ",%s_mean,%s_ci_low,%s_ci_high", name, name, name);
}

/* report.c — `curvsweep analyze` end to end, the driver only: load and check
 * the archives (load.c), compute the numbers (compute.c), then write the CSV
 * tables (csv.c), the plots (plots.c) and index.md (index.c) into the report
 * directory. */
#include "checks.h"
#include "compute.h"
#include "output.h"
#include "writers.h"

#include "curvsweep/path.h"
#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

analysis_options analysis_options_default(void) {
  analysis_options o = {ANALYSIS_BOOTSTRAP_B, 0, NULL, 1, NAN, ANALYSIS_ALPHA, ANALYSIS_MARGIN};
  return o;
}

void analysis_options_check(analysis_options *o) {
  if (o->bootstrap < 1) o->bootstrap = ANALYSIS_BOOTSTRAP_B;
  if (!(o->alpha > 0 && o->alpha < 0.5)) o->alpha = ANALYSIS_ALPHA;
  if (!(o->margin > 0 && o->margin < 1)) o->margin = ANALYSIS_MARGIN;
}

/* "<path without .h5>-report". */
int analysis_default_dir(const char *archive_path, char *buf, size_t len) {
  size_t n = strlen(archive_path);
  const char *exts[] = {".h5", ".hdf5", ".hdf"};
  for (int i = 0; i < 3; i++) {
    size_t e = strlen(exts[i]);
    if (n > e && strcmp(archive_path + n - e, exts[i]) == 0 && archive_path[n - e - 1] != '/') {
      n -= e;
      break;
    }
  }
  int w = snprintf(buf, len, "%.*s-report", (int)n, archive_path);
  if (w < 0 || (size_t)w >= len) return cs_error(CS_ERR_INPUT, "%s: report directory name too long", archive_path);
  return CS_OK;
}

/* Compute and write the report of the data D loaded with code rc, then free D. */
static int analysis_finish(analysis_data *D, int rc, const char *out_dir, analysis_outcome *out) {
  if (!rc) rc = analysis_compute(D);
  if (!rc) {
    out->cells_total = D->cells_total;
    out->cells_selected = D->cells_selected;
    out->done = D->done, out->pending = D->pending, out->failed = D->failed, out->diverged = D->diverged;
    if (D->done < D->cells_total)
      analysis_warn(out, "partial archive: %lld of %lld cells done (%.1f%%); the report covers the "
                         "done cells only",
                    (long long)D->done, (long long)D->cells_total, 100.0 * D->done / D->cells_total);
  }
  // the report directory, opened once: every file of the report is made
  // through its descriptor (output.h, docs/SECURITY.md "The report directory")
  analysis_outdir dir = {.fd = -1, .render_fd = -1};
  if (!rc) rc = analysis_outdir_open(&dir, out_dir);
  analysis_plot *plots = NULL;
  int n_plots = 0;
  if (!rc) rc = analysis_write_tables(D, &dir);
  if (!rc) rc = analysis_write_plots(D, &dir, &plots, &n_plots, out);
  if (!rc) rc = analysis_write_index(D, &dir, plots, n_plots, out);
  analysis_outdir_close(&dir);
  free(plots);
  analysis_data_free(D);
  return rc;
}

/* The common start of analysis_run and analysis_run_results. */
static int analysis_begin(analysis_data *D, const char *out_dir, const analysis_options *opt,
                          analysis_outcome *out) {
  memset(out, 0, sizeof *out);
  memset(D, 0, sizeof *D);
  D->opt = opt ? *opt : analysis_options_default();
  analysis_options_check(&D->opt);
  if (!out_dir || !*out_dir) return cs_error(CS_ERR_INPUT, "analyze: no output directory given");
  // a link or a file where the report goes is refused before any work
  return analysis_report_dir_check(out_dir);
}

int analysis_run(const char *const *paths, int n_paths, const char *out_dir,
                 const analysis_options *opt, analysis_outcome *out) {
  analysis_outcome local;
  analysis_data D;
  if (!out) out = &local;
  CS_CHECK(analysis_begin(&D, out_dir, opt, out));
  return analysis_finish(&D, analysis_load(paths, n_paths, &D), out_dir, out);
}

int analysis_run_results(const char *spec_text, const cs_cell_result *results, int64_t n,
                         const char *label, const char *out_dir, const analysis_options *opt,
                         analysis_outcome *out) {
  analysis_outcome local;
  analysis_data D;
  const char *labels[1] = {label};
  if (!out) out = &local;
  CS_CHECK(analysis_begin(&D, out_dir, opt, out));
  return analysis_finish(&D, analysis_load_results(spec_text, results, n, labels, &D), out_dir, out);
}

int analysis_verdicts_results(const char *spec_text, const cs_cell_result *results, int64_t n,
                              const analysis_options *opt, analysis_checks *out) {
  analysis_data D;
  memset(&D, 0, sizeof D);
  memset(out, 0, sizeof *out);
  D.opt = opt ? *opt : analysis_options_default();
  analysis_options_check(&D.opt);
  const char *labels[1] = {"memory"};
  int rc = analysis_load_results(spec_text, results, n, labels, &D);
  if (!rc) rc = analysis_compute(&D);
  if (!rc) *out = D.checks, D.checks = (analysis_checks){0, 0, NULL};
  analysis_data_free(&D);
  return rc;
}

/* report.c — `curvsweep analyze` end to end: load and check the archives,
 * compute the tables, write CSVs, plots and index.md, whose verdicts on the
 * claims of DESIGN §1 are computed here from the same numbers as the tables
 * (printed with %.4g, the tables with %.15g). */
#include "analysis_internal.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

analysis_options analysis_options_default(void) {
  analysis_options o = {ANALYSIS_BOOTSTRAP_B, 0, NULL, 1};
  return o;
}

void analysis_warn(analysis_outcome *out, const char *fmt, ...) {
  if (!out || out->n_warnings >= ANALYSIS_MAX_WARNINGS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->warnings[out->n_warnings++], sizeof out->warnings[0], fmt, ap);
  va_end(ap);
}

int analysis_file_open(analysis_file *o, const char *dir, const char *name) {
  int n1 = snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
  int n2 = snprintf(o->tmp, sizeof o->tmp, "%s/.%s.tmp", dir, name);
  if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof o->tmp)
    return cs_error(CS_ERR_INPUT, "report path too long: %s/%s", dir, name);
  o->f = fopen(o->tmp, "w");
  if (!o->f) return cs_error(CS_ERR_IO, "%s: cannot write: %s", o->tmp, strerror(errno));
  return CS_OK;
}

int analysis_file_commit(analysis_file *o) {
  int bad = ferror(o->f);
  if (fclose(o->f) != 0) bad = 1;
  o->f = NULL;
  if (bad) {
    unlink(o->tmp);
    return cs_error(CS_ERR_IO, "%s: write failed (disk full?)", o->path);
  }
  if (rename(o->tmp, o->path) != 0) {
    int e = errno;
    unlink(o->tmp);
    return cs_error(CS_ERR_IO, "%s: cannot rename into place: %s", o->path, strerror(e));
  }
  return CS_OK;
}

void analysis_file_abort(analysis_file *o) {
  if (o->f) fclose(o->f);
  o->f = NULL;
  unlink(o->tmp);
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

/* mkdir -p. */
static int analysis_mkdir_p(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
    return cs_error(CS_ERR_INPUT, "report directory name too long: %s", dir);
  for (char *p = path + 1; ; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return cs_error(CS_ERR_IO, "%s: cannot create directory: %s", path, strerror(errno));
      *p = c;
      if (!c) break;
    }
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return cs_error(CS_ERR_INPUT, "%s exists and is not a directory", dir);
  return CS_OK;
}

/* ---- index.md ---- */

static void analysis_md_grid(FILE *f, const analysis_data *D) {
  const cs_spec *spec = D->spec;
  fprintf(f, "## Grid\n\n| axis | values | size |\n|---|---|---|\n");
  int n_axes = spec_axis_count(spec);
  for (int ax = 0; ax < n_axes; ax++) {
    int64_t stride = 1;
    for (int b = ax + 1; b < n_axes; b++) stride *= spec_axis_length(spec, b);
    fprintf(f, "| %s | ", spec_axis_name(spec, ax));
    int len = spec_axis_length(spec, ax);
    for (int i = 0; i < len; i++) {
      char val[128];
      if (i == 12 && len > 14) {
        fprintf(f, ", … (%d more)", len - i - 1);
        i = len - 2;
        continue;
      }
      spec_axis_value_text(spec, ax, (int64_t)i * stride, val, sizeof val);
      fprintf(f, "%s%s", i ? ", " : "", val);
    }
    fprintf(f, " | %d |\n", len);
  }
  double pct = 100.0 * D->done / (double)D->cells_total;
  fprintf(f, "\nCells: **%lld of %lld done (%.1f%%)**, %lld failed, %lld diverged, %lld pending",
          (long long)D->done, (long long)D->cells_total, pct, (long long)D->failed,
          (long long)D->diverged, (long long)D->pending);
  if (D->cells_selected < D->cells_total)
    fprintf(f, ", %lld not in these archives (shards)", (long long)(D->cells_total - D->cells_selected));
  fprintf(f, ".\n\n");
  if (D->done < D->cells_total)
    fprintf(f, "> **Partial archive**: %.1f%% of the grid is done (a running, interrupted or "
               "sharded sweep). Every number below covers the done cells only; re-run analyze "
               "when the sweep has finished.\n\n",
            pct);
  fprintf(f, "Regimes (values of the axes other than arch, task, depth and seed):");
  for (int r = 0; r < D->n_regime; r++)
    fprintf(f, "%s `%s`%s", r ? "," : "", D->regime[r].name,
            D->regime[r].skeleton ? " (affine skeleton)" : "");
  const cs_config *c = &D->regime[0].cfg;
  fprintf(f, ".\nThe affine skeleton of DESIGN §1 is heads = 1, slots = input_dim + 1, residual = no, "
             "norm = none (here: heads %d, slots %d, input_dim %d, residual %s, norm %s in regime `%s`).\n\n",
          c->heads, c->slots, c->input_dim, c->residual ? "yes" : "no", config_norm_name(c->norm),
          D->regime[0].name);
}

static int analysis_write_index(const analysis_data *D, const char *dir, const analysis_plot *plots,
                                int n_plots, const analysis_outcome *out) {
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "index.md"));
  FILE *f = o.f;
  fprintf(f, "# Depth-amplification report: %s\n\n", spec_sweep(D->spec)->name);
  fprintf(f, "Generated by curvsweep %s `analyze` from ", CS_VERSION);
  for (int p = 0; p < D->n_paths; p++) fprintf(f, "%s`%s`", p ? ", " : "", D->paths[p]);
  fprintf(f, " (spec sha256 `%s`). Every verdict below is computed from the tables; intervals are "
             "95%%.\n\n",
          spec_sha256(D->spec));
  analysis_md_grid(f, D);
  fprintf(f, "## Verdicts on the claims of DESIGN §1\n\n");
  int rc = analysis_md_claims(f, D);
  if (rc) {
    analysis_file_abort(&o);
    return rc;
  }
  fprintf(f, "## Tables\n\n"
             "- [summary.csv](summary.csv): per (arch, task, depth, regime): seeds, test accuracy and "
             "last-layer curvature (mean |K|, mean |K̃|, mean K̃, ∫K dA, mean log det g), each mean "
             "with 95%% t interval over seeds\n"
             "- [prefix.csv](prefix.csv): the same curvature statistics after every layer l of every "
             "model\n"
             "- [amplification.csv](amplification.csv): per (arch, task, regime): slopes of log mean "
             "|K|, log mean |K̃| and mean log det g against log depth and against log prefix, with "
             "paired bootstrap intervals; deepest/shallowest ratios\n"
             "- [gap.csv](gap.csv): gated − ungated and gated-headwise − ungated (and mlp − ungated), "
             "paired by seed: accuracy, mean |K|, mean |K̃| differences with t intervals and sign "
             "tests\n\n"
             "Column meanings: analysis/README.md in the curvsweep sources.\n\n");
  fprintf(f, "## Plots\n\n");
  if (n_plots == 0) fprintf(f, "No plots (no done cells to draw).\n\n");
  int unrendered = 0;
  for (int i = 0; i < n_plots; i++) {
    const analysis_plot *P = &plots[i];
    if (P->rendered)
      fprintf(f, "### %s\n\n%s.\n\n![%s](%s.png)\n\nScript [%s.gp](%s.gp), data [%s.dat](%s.dat).\n\n",
              P->name, P->caption, P->name, P->name, P->name, P->name, P->name, P->name);
    else
      fprintf(f, "### %s\n\n%s.\n\nNot rendered; script [%s.gp](%s.gp), data [%s.dat](%s.dat) "
                 "(`gnuplot %s.gp` in this directory writes %s.png).\n\n",
              P->name, P->caption, P->name, P->name, P->name, P->name, P->name, P->name);
    unrendered += !P->rendered;
  }
  if (!D->has_points)
    fprintf(f, "Histograms of per-point K̃ and K̂ and curvature maps need per-point values: set "
               "`save_points = yes` in [sweep] of the spec.\n\n");
  if (out && out->n_warnings) {
    fprintf(f, "## Warnings\n\n");
    for (int i = 0; i < out->n_warnings; i++) fprintf(f, "- %s\n", out->warnings[i]);
    fprintf(f, "\n");
  }
  (void)unrendered;
  return analysis_file_commit(&o);
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
    rc = analysis_mkdir_p(out_dir);
  }
  analysis_plot *plots = NULL;
  int n_plots = 0;
  if (!rc) rc = analysis_write_tables(D, out_dir);
  if (!rc) rc = analysis_write_plots(D, out_dir, &plots, &n_plots, out);
  if (!rc) rc = analysis_write_index(D, out_dir, plots, n_plots, out);
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
  if (D->opt.bootstrap < 1) D->opt.bootstrap = ANALYSIS_BOOTSTRAP_B;
  if (!out_dir || !*out_dir) return cs_error(CS_ERR_INPUT, "analyze: no output directory given");
  return CS_OK;
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

/* index.c — index.md, the report's front page: a summary table of every
 * verdict (printed from the verdicts of checks.c, never recomputed) and a
 * table of contents, then the grid and cell counts, the verdicts (each
 * row of the section table, sections.c), links to the tables (their columns in COLUMNS.md,
 * columns.c) and plots, the warnings. */
#include "checks.h"
#include "output.h"
#include "sections.h"
#include "writers.h"

#include "curvsweep/error.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  fprintf(f, ".\nThe affine skeleton (docs/MODELS.md) is heads = 1, slots = input_dim + 1, residual = no, "
             "norm = none (here: heads %d, slots %d, input_dim %d, residual %s, norm %s in regime `%s`).\n\n",
          c->heads, c->slots, c->input_dim, c->residual ? "yes" : "no", config_norm_name(c->norm),
          D->regime[0].name);
}

/* A heading's anchor: its ASCII letters and digits lowercased, every other
 * run of characters one '-' (the same text always gives the same anchor;
 * repeats get "-2", "-3", … in index_body_headings). */
static void index_anchor(const char *text, char *buf, size_t len) {
  size_t n = 0;
  int dash = 0;
  for (const unsigned char *p = (const unsigned char *)text; *p && n + 2 < len; p++) {
    if (isalnum(*p) && *p < 0x80) {
      if (dash && n > 0) buf[n++] = '-';
      buf[n++] = (char)tolower(*p);
      dash = 0;
    } else {
      dash = 1;
    }
  }
  buf[n] = '\0';
  if (n == 0) snprintf(buf, len, "section");
}

/* The headings (## and ###) of the body, with unique anchors. */
typedef struct {
  int level;
  const char *text;  /* into the body, up to its newline */
  int text_len;
  char base[80];  /* the anchor of the text alone */
  char anchor[96];
} index_heading;

static int index_body_headings(const char *body, index_heading **out, int *n_out) {
  int cap = 0, n = 0, rc = CS_OK;
  index_heading *h = NULL;
  for (const char *line = body; *line && !rc;) {
    const char *nl = strchr(line, '\n');
    int len = nl ? (int)(nl - line) : (int)strlen(line);
    int level = !strncmp(line, "## ", 3) ? 2 : !strncmp(line, "### ", 4) ? 3 : 0;
    if (level && n == cap) {
      index_heading *g = realloc(h, (size_t)(cap = cap ? 2 * cap : 32) * sizeof *g);
      if (g) h = g;
      else rc = cs_error(CS_ERR_NOMEM, "out of memory listing the report's headings");
    }
    if (level && !rc) {
      index_heading *x = &h[n++];
      x->level = level, x->text = line + level + 1, x->text_len = len - level - 1;
      char text[512], base[80];
      snprintf(text, sizeof text, "%.*s", x->text_len, x->text);
      index_anchor(text, base, sizeof base);
      int seen = 0;
      for (int i = 0; i < n - 1; i++) seen += !strcmp(h[i].base, base);
      snprintf(x->base, sizeof x->base, "%s", base);
      if (seen) snprintf(x->anchor, sizeof x->anchor, "%s-%d", base, seen + 1);
      else snprintf(x->anchor, sizeof x->anchor, "%s", base);
    }
    line = nl ? nl + 1 : line + len;
  }
  if (rc) free(h), h = NULL, n = 0;
  *out = h, *n_out = n;
  return rc;
}

/* The anchor of the first heading that starts with prefix, or NULL. */
static const char *index_find_anchor(const index_heading *h, int n, const char *prefix) {
  for (int i = 0; i < n; i++)
    if (h[i].text_len >= (int)strlen(prefix) && !strncmp(h[i].text, prefix, strlen(prefix)))
      return h[i].anchor;
  return NULL;
}

/* The summary table: every verdict row of verdicts.csv, in its order,
 * printed from the verdicts computed for it (checks.c), never recomputed. */
static void index_summary(FILE *f, const analysis_data *D, const index_heading *h, int nh) {
  fprintf(f, "<a id=\"summary\"></a>\n\n## Summary\n\n"
             "Every verdict of the report, one row each, as in [verdicts.csv](verdicts.csv) (its rows "
             "with `verdict` in the scope or a claim's own verdict): the decision at α = %g after "
             "Holm within each claim's family, n the seeds behind it (claim 1: table rows), the "
             "effect (the mean of the per-seed values, see the claim's section for its unit) with "
             "its interval, the p-value after adjustment. The sections below give every check "
             "behind each row.\n\n"
             "| claim | what it says | scope | decision | n | effect [interval] | p (adjusted) | test |\n"
             "|---|---|---|---|---|---|---|---|\n",
          D->opt.alpha);
  int rows = 0;
  for (int rank = 0; rank <= 99; rank++)
    for (int i = 0; i < D->checks.n; i++) {
      const analysis_check *c = &D->checks.c[i];
      const analysis_claim_info *info;
      if (!c->verdict || analysis_claim_rank(c->claim, &info) != rank) continue;
      const char *anchor = info ? index_find_anchor(h, nh, info->heading) : NULL;
      char claim[96], scope[400], test[160];
      analysis_md_text(c->claim, claim, sizeof claim);
      analysis_md_text(c->scope, scope, sizeof scope);
      analysis_md_text(c->test, test, sizeof test);
      if (anchor) fprintf(f, "| [%s](#%s) | ", claim, anchor);
      else fprintf(f, "| %s | ", claim);
      fprintf(f, "%s | %s | **%s** | %d | ", info ? info->says : "—", scope,
              analysis_decision_name(c->decision), c->n);
      if (isfinite(c->effect))
        fprintf(f, "%s [%s, %s]", F4(c->effect), F4(c->effect_lo), F4(c->effect_hi));
      else
        fprintf(f, "—");
      fprintf(f, " | %s | %s |\n", isfinite(c->p_adj) ? F4(c->p_adj) : "—", test);
      rows++;
    }
  if (!rows) fprintf(f, "| — | no verdict: no claim is testable with these archives | | | | | | |\n");
  fprintf(f, "\n");
}

/* The table of contents: every ## heading and the ### headings outside the
 * plots (one per figure, listed in their own section). */
static void index_toc(FILE *f, const index_heading *h, int nh) {
  fprintf(f, "## Contents\n\n- [Summary](#summary)\n");
  int in_plots = 0;
  for (int i = 0; i < nh; i++) {
    if (h[i].level == 2) in_plots = h[i].text_len == 5 && !strncmp(h[i].text, "Plots", 5);
    else if (in_plots) continue;
    fprintf(f, "%s- [%.*s](#%s)\n", h[i].level == 3 ? "  " : "", h[i].text_len, h[i].text, h[i].anchor);
  }
  fprintf(f, "- [Column meanings](COLUMNS.md) (a file of this directory)\n\n");
}

/* The body of index.md (everything after the summary and the contents)
 * into f. */
static int index_body(FILE *f, const analysis_data *D, const analysis_plot *plots, int n_plots,
                      const analysis_outcome *out) {
  analysis_md_grid(f, D);
  /* the heading of claims 1–4, the table's first rows; each section after
   * them opens its own */
  fprintf(f, "## Verdicts on the four claims (docs/MODELS.md)\n\n");
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    if (ANALYSIS_SECTIONS[s].write_md) CS_CHECK(ANALYSIS_SECTIONS[s].write_md(f, D));
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
             "tests\n"
             "- [verdicts.csv](verdicts.csv): every verdict above and every check behind it: test, "
             "unit, n (seeds), effect with interval, raw and Holm-adjusted p, decision\n");
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    if (ANALYSIS_SECTIONS[s].list_tables) ANALYSIS_SECTIONS[s].list_tables(f, D);
  fprintf(f, "\nWhat every column of these tables means: [COLUMNS.md](COLUMNS.md), in this "
             "directory.\n\n");
  fprintf(f, "## Plots\n\n");
  if (n_plots == 0) fprintf(f, "No plots (no done cells to draw).\n\n");
  for (int i = 0; i < n_plots; i++) {
    const analysis_plot *P = &plots[i];
    if (P->rendered)
      fprintf(f, "### %s\n\n%s.\n\n![%s](%s.png)\n\nScript [%s.gp](%s.gp), data [%s.dat](%s.dat).\n\n",
              P->name, P->caption, P->name, P->name, P->name, P->name, P->name, P->name);
    else
      fprintf(f, "### %s\n\n%s.\n\nNot rendered; script [%s.gp](%s.gp), data [%s.dat](%s.dat) "
                 "(`gnuplot %s.gp` in this directory writes %s.png).\n\n",
              P->name, P->caption, P->name, P->name, P->name, P->name, P->name, P->name);
  }
  if (!D->has_points)
    fprintf(f, "Histograms of per-point K̃ and K̂ and curvature maps need per-point values: set "
               "`save_points = yes` in [sweep] of the spec.\n\n");
  if (out && (out->n_warnings || out->plots_failed)) {
    fprintf(f, "## Warnings\n\n");
    for (int i = 0; i < out->n_warnings; i++) fprintf(f, "- %s\n", out->warnings[i]);
    if (out->plots_failed) {
      char text[1200];
      fprintf(f, "- %s\n", analysis_md_text(out->plot_error, text, sizeof text));
    }
    fprintf(f, "\n");
  }
  return CS_OK;
}

/* COLUMNS.md for the tables the body links to ("](NAME.csv)"), each once. */
static int index_columns(const analysis_data *D, const analysis_outdir *dir, const char *body) {
  enum { MAX_TABLES = 32 };
  char names[MAX_TABLES][64];
  const char *list[MAX_TABLES];
  int n = 0;
  for (const char *p = strstr(body, "]("); p && n < MAX_TABLES; p = strstr(p + 2, "](")) {
    const char *e = strchr(p + 2, ')');
    size_t len = e ? (size_t)(e - p - 2) : 0;
    if (len < 5 || len >= sizeof names[0] || strncmp(e - 4, ".csv", 4) != 0 ||
        memchr(p + 2, '/', len))
      continue;
    snprintf(names[n], sizeof names[n], "%.*s", (int)len, p + 2);
    int seen = 0;
    for (int i = 0; i < n; i++) seen |= !strcmp(names[i], names[n]);
    if (!seen) list[n] = names[n], n++;
  }
  return analysis_write_columns(D, dir, list, n);
}

static void index_write(FILE *f, const analysis_data *D, const char *body, const index_heading *h,
                        int nh);

int analysis_write_index(const analysis_data *D, const analysis_outdir *dir, const analysis_plot *plots,
                         int n_plots, const analysis_outcome *out) {
  // the body first (in memory): the summary and the contents come before
  // it and point into it
  char *body = NULL;
  size_t body_len = 0;
  FILE *b = open_memstream(&body, &body_len);
  if (!b) return cs_error(CS_ERR_NOMEM, "out of memory writing index.md");
  int rc = index_body(b, D, plots, n_plots, out);
  if (fclose(b) != 0 && !rc) rc = cs_error(CS_ERR_NOMEM, "out of memory writing index.md");
  index_heading *h = NULL;
  int nh = 0;
  if (!rc) rc = index_body_headings(body, &h, &nh);
  if (!rc) rc = index_columns(D, dir, body);
  analysis_file o;
  if (!rc) rc = analysis_file_open(&o, dir, "index.md");
  if (!rc) {
    index_write(o.f, D, body, h, nh);
    rc = analysis_file_commit(&o);
  }
  free(body), free(h);
  return rc;
}

/* index.md: the title, where it came from, the summary, the contents, then
 * the body with an anchor before each heading. */
static void index_write(FILE *f, const analysis_data *D, const char *body, const index_heading *h,
                        int nh) {
  fprintf(f, "# Depth-amplification report: %s\n\n",
          analysis_md_text(spec_sweep(D->spec)->name, (char[1024]){0}, 1024));
  fprintf(f, "Generated by curvsweep %s `analyze` from ", CS_VERSION);
  for (int p = 0; p < D->n_paths; p++) fprintf(f, "%s`%s`", p ? ", " : "", D->paths[p]);
  fprintf(f, " (spec sha256 `%s`). Every verdict below is computed from the tables with one value "
             "per seed, Holm-adjusted within its family at α = %g ([verdicts.csv](verdicts.csv)); "
             "intervals are 95%% unless stated. This directory holds everything the report refers "
             "to: the tables, what their columns mean ([COLUMNS.md](COLUMNS.md)), and the plots "
             "with their scripts and data.\n\n",
          spec_sha256(D->spec), D->opt.alpha);
  index_summary(f, D, h, nh);
  index_toc(f, h, nh);
  // the body, with an anchor before each heading
  int k = 0;
  for (const char *line = body; *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
    if (k < nh && line + 3 + (h[k].level == 3) == h[k].text) fprintf(f, "<a id=\"%s\"></a>\n\n", h[k++].anchor);
    fwrite(line, 1, len, f);
    line += len;
  }
}

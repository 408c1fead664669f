/* columns.c — COLUMNS.md, what every column of the report's tables means,
 * written into the report directory so that the report reads alone. The
 * meanings are those of analysis/README.md ("Report tables", "verdicts.csv");
 * the columns are read from the header line of each table the report wrote
 * (so the file lists exactly the columns there are), and each is described
 * by the first rule of COLUMN_RULES whose table and name pattern (fnmatch)
 * match it, or, for a regime column, as that spec axis. A column no rule
 * describes is listed as such (tests/sh_analyze_status.sh requires none). */
#include "measures.h"
#include "output.h"
#include "sections.h"
#include "writers.h"

#include "curvsweep/error.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CI ANALYSIS_COLUMN_CI
#define SIGNS ANALYSIS_COLUMN_SIGNS

/* {table ("*": any), column pattern, meaning}: first match wins; then the
 * rules of each section's row (sections.c) for its own tables. */
static const analysis_column_rule COLUMN_RULES[] = {
    /* the group and regime columns every table shares */
    {"*", "arch", "the architecture: ungated, gated, gated-headwise or mlp (docs/MODELS.md)"},
    {"*", "task", "the task (docs/MODELS.md)"},
    {"*", "boundary", "the task's decision boundary type: linear or nonlinear"},
    {"*", "depth", "the model's depth L (layers)"},
    {"*", "regime", "the values of every axis other than arch, task, depth and seed, as "
                    "`name=value;name=value` (`all` when there is none)"},
    {"*", "skeleton", "1 when the regime is the affine skeleton of docs/MODELS.md (heads 1, slots = "
                      "input_dim + 1, residual no, norm none), where ungated attention must be flat"},
    {"*", "n_seeds", "seeds (done cells) behind the row's statistics"},
    {"*", "n_cells", "cells of the group in the archives"},
    {"*", "n_failed", "cells of the group that failed"},
    {"*", "n_diverged", "cells of the group that diverged"},
    {"*", "prefix", "the layer l = 1..depth after which the representation is measured"},
    {"*", "train_points", "the training-set size (the train_points axis)"},
    /* the measure columns of summary.csv, prefix.csv, gap.csv, gates.csv and
     * sinks.csv: from the measure table (measure_meaning below); these two
     * the measure table flags ANALYSIS_MEASURE_SEED_MAX */
    {"*", "Kt_absmean_max", "the largest mean |K̃| over the seeds (amplification.csv: of any done "
                            "cell and prefix of the row; claim 1: ≤ 1e-8 is flat to rounding)"},
    {"*", "curved_frac_max", "the largest curved fraction over the seeds (claim 1)"},
    {"*", "acc_*", "test accuracy" CI " (clipped to [0, 1])"},
    {"*", "unresolved_share", "unresolved points / non-degenerate points, pooled over seeds"},
    /* amplification.csv: slopes of y = a + b log x (analysis/README.md) */
    {"amplification.csv", "n_depths", "depths with done cells"},
    {"amplification.csv", "depth_min", "the shallowest depth with done cells"},
    {"amplification.csv", "depth_max", "the deepest depth with done cells"},
    {"amplification.csv", "prefix_depth", "L of the deepest models, used along the layers"},
    {"amplification.csv", "*_depth_slope*", "slope of the log seed-mean of the measure (K: raw |K|, "
                                            "Kt: |K̃|, Kh: |K̂|, intabsK: ∫|K| dA; logdet and aniso: "
                                            "the seed mean itself) against log depth, last layer; "
                                            "`_ci_low`, `_ci_high`: percentile bootstrap over seeds "
                                            "(B = 2000, descriptive)"},
    {"amplification.csv", "*_prefix_slope*", "the same against log layer l = 1..L within the "
                                             "deepest models"},
    {"amplification.csv", "*_prefix_ratio", "seed mean after layer L / after layer 1 in the "
                                            "deepest models"},
    {"amplification.csv", "*_ratio", "seed mean at the deepest depth / at the shallowest"},
    {"amplification.csv", "aniso_shallowest", "seed-mean anisotropy index at the shallowest depth"},
    {"amplification.csv", "aniso_deepest", "seed-mean anisotropy index at the deepest depth"},
    {"amplification.csv", "aniso_prefix_first", "seed-mean anisotropy index after layer 1 (deepest models)"},
    {"amplification.csv", "aniso_prefix_last", "seed-mean anisotropy index after layer L (deepest models)"},
    {"amplification.csv", "dlogKt_*", "claim 4's decomposition: the change of the seed mean of log "
                                      "mean |K̃| from the shallowest to the deepest depth (`_depth`) "
                                      "or from layer 1 to L (`_prefix`); = dlogKh + daniso_eff"},
    {"amplification.csv", "dlogKh_*", "the same for log mean |K̂|"},
    {"amplification.csv", "daniso_eff_*", "the same for the effective anisotropy log(mean |K̃| / "
                                          "mean |K̂|)"},
    /* gap.csv: arch − ungated, paired by seed */
    {"gap.csv", "comparison", "which arch against ungated, e.g. `gated-ungated`"},
    {"gap.csv", "n_pairs", "seeds with both cells done"},
    /* verdicts.csv */
    {"verdicts.csv", "scope", "what the row covers, fields joined by `;`: `verdict` is the claim's "
                              "verdict, every other row a check behind it"},
    {"verdicts.csv", "test", "the test (e.g. `sign-flip exact one-sided greater`, `TOST t`)"},
    {"verdicts.csv", "unit", "the unit of the test: `seed`, or `row` for claim 1"},
    {"verdicts.csv", "n", "units behind the test"},
    {"verdicts.csv", "effect", "the mean of the per-seed values (the claim's section says of what)"},
    {"verdicts.csv", "effect_lo", "the effect's 95% t interval, lower end (TOST: the 1 − 2α interval)"},
    {"verdicts.csv", "effect_hi", "the effect's interval, upper end"},
    {"verdicts.csv", "p_raw", "the test's p (`nan` without a test)"},
    {"verdicts.csv", "p_adj", "p after Holm within the claim's family"},
    {"verdicts.csv", "adjust", "`holm(m)` (m the family's size), `none`, `intersection-union`, …"},
    {"verdicts.csv", "decision", "`supported`, `not supported`, `equivalent`, `not equivalent`, "
                                 "`inconclusive` or `too few` (seeds)"},
};
#define N_COLUMN_RULES (int)(sizeof COLUMN_RULES / sizeof *COLUMN_RULES)

static int column_rule_matches(const analysis_column_rule *r, const char *table, const char *name) {
  return (!strcmp(r->table, "*") || !strcmp(r->table, table)) && fnmatch(r->pattern, name, 0) == 0;
}

/* Append "`first`, " or "`first` … `last`, " (a run of numbered claims)
 * to buf at *used, then forget the run; nothing without one. */
static void column_claims_run(char *buf, size_t len, size_t *used, const char **first,
                              const char *last) {
  if (*first && *used < len)
    *used += (size_t)snprintf(buf + *used, len - *used, *first == last ? "`%s`, " : "`%s` … `%s`, ",
                              *first, last);
  *first = NULL;
}

/* What a measure's columns are in each use, after the measure's own line
 * (measures.c): where its value is taken (gap, gates, sinks: with its
 * /curvature field), then the statistic over seeds. */
static const struct {
  const char *where, *stat;
} USE_NOTE[ANALYSIS_USE_COUNT] = {
    [ANALYSIS_USE_SUMMARY] = {NULL, CI},
    [ANALYSIS_USE_PREFIX] = {NULL, CI},
    [ANALYSIS_USE_GAP] = {"last layer", ", arch − ungated paired by seed" CI SIGNS},
    [ANALYSIS_USE_GATES] = {"last layer", CI},
    [ANALYSIS_USE_SINKS] = {"the row's layer", CI},
};

/* The meaning of column name of table when it is a measure's (measures.c):
 * <column>_mean, _ci_low, _ci_high of summary.csv, prefix.csv, gates.csv and
 * sinks.csv, d<column>_* of gap.csv; NULL otherwise. The text is kept per
 * (use, measure), so that a measure's columns share one row of COLUMNS.md. */
static const char *measure_meaning(const char *table, const char *name) {
  static char text[ANALYSIS_USE_COUNT][ANALYSIS_N_MEASURES][1024];
  for (int u = 0; u < ANALYSIS_USE_COUNT; u++) {
    if (u == ANALYSIS_USE_AMP || strcmp(ANALYSIS_USE_TABLE[u], table)) continue;
    for (int m = 0; m < ANALYSIS_N_MEASURES; m++) {
      const analysis_measure *M = &ANALYSIS_MEASURES[m];
      const char *col = M->use[u].column;
      if (!col) continue;
      char pat[3][128];
      int n_pat = 3;
      if (u == ANALYSIS_USE_GAP) {
        snprintf(pat[0], sizeof pat[0], "d%s_*", col);
        n_pat = 1;
      } else {
        snprintf(pat[0], sizeof pat[0], "%s_mean", col);
        snprintf(pat[1], sizeof pat[1], "%s_ci_low", col);
        snprintf(pat[2], sizeof pat[2], "%s_ci_high", col);
      }
      int hit = 0;
      for (int k = 0; k < n_pat; k++) hit |= fnmatch(pat[k], name, 0) == 0;
      if (!hit) continue;
      char where[128] = "";
      if (M->field && USE_NOTE[u].where)
        snprintf(where, sizeof where, " (`%s`, %s)", M->field, USE_NOTE[u].where);
      snprintf(text[u][m], sizeof text[u][m], "%s%s%s%s", M->meaning, where, USE_NOTE[u].stat,
               (M->flags & ANALYSIS_MEASURE_CLIP01) && u != ANALYSIS_USE_GAP ? " (clipped to [0, 1])" : "");
      return text[u][m];
    }
  }
  return NULL;
}

/* verdicts.csv's claim column: every claim of analysis_claim_rank's order
 * (sections.h), into buf; a run of numbered claims as its first and last
 * ("`1` … `4`"). */
static const char *column_claims(char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "the claim: ");
  const char *first = NULL, *last = NULL;
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    for (const analysis_claim_info *c = ANALYSIS_SECTIONS[s].about->claims; c->claim; c++) {
      if (c->claim[strspn(c->claim, "0123456789")] == '\0') {
        if (!first) first = c->claim;
        last = c->claim;
        continue;
      }
      column_claims_run(buf, len, &used, &first, last);
      if (used < len) used += (size_t)snprintf(buf + used, len - used, "`%s`, ", c->claim);
    }
  column_claims_run(buf, len, &used, &first, last);
  if (used < len) snprintf(buf + used, len - used, "…");
  return buf;
}

/* The meaning of column name of table, or NULL; buf holds the meanings
 * made here (a spec axis, the claims), which share no row. */
static const char *column_meaning(const analysis_data *D, const char *table, const char *name,
                                  char *buf, size_t len) {
  if (!strcmp(table, "verdicts.csv") && !strcmp(name, "claim")) return column_claims(buf, len);
  const char *measure = measure_meaning(table, name);
  if (measure) return measure;
  for (int i = 0; i < N_COLUMN_RULES; i++)
    if (column_rule_matches(&COLUMN_RULES[i], table, name)) return COLUMN_RULES[i].meaning;
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    for (const analysis_column_rule *r = ANALYSIS_SECTIONS[s].about->columns; r->table; r++)
      if (column_rule_matches(r, table, name)) return r->meaning;
  if (spec_find_axis(D->spec, name) >= 0) {
    snprintf(buf, len, "the value of the spec's `%s` axis in the row's regime (docs/SPEC.md)", name);
    return buf;
  }
  return NULL;
}

/* " | meaning |" and the end of a row: '|' in the meaning escaped (the
 * meanings are the program's own text, not the archive's). */
static void column_cell_end(FILE *f, const char *meaning) {
  fputs(" | ", f);
  for (const char *p = meaning; *p; p++) {
    if (*p == '|') fputc('\\', f);
    fputc(*p, f);
  }
  fputs(" |\n", f);
}

/* The columns of the header line (comma-separated, cut in place) of table
 * as a Markdown table. */
static void columns_table(FILE *f, const analysis_data *D, const char *table, char *line,
                          int *undescribed) {
  line[strcspn(line, "\r\n")] = '\0';
  fprintf(f, "## %s\n\n| column | meaning |\n|---|---|\n", table);
  // consecutive columns with one meaning (x_mean, x_ci_low, x_ci_high)
  // share a row
  const char *prev = NULL;
  char *save = NULL;
  for (char *c = strtok_r(line, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
    char buf[1024], name[256];
    const char *m = column_meaning(D, table, c, buf, sizeof buf);
    if (!m) {
      (*undescribed)++;
      m = "**not described** (a column this curvsweep does not document: please report it)";
    }
    if (prev && m == prev && m != buf) {
      fprintf(f, ", %s", analysis_md_text(c, name, sizeof name));
      continue;
    }
    if (prev) column_cell_end(f, prev);
    fprintf(f, "| %s", analysis_md_text(c, name, sizeof name));
    prev = m == buf ? NULL : m;
    if (!prev) column_cell_end(f, m);
  }
  if (prev) column_cell_end(f, prev);
  fprintf(f, "\n");
}

/* The columns of table (its header line in dir) as a Markdown table. */
static int columns_of(FILE *f, const analysis_data *D, const analysis_outdir *dir, const char *table,
                      int *undescribed) {
  // read back through the directory's descriptor, never through a link or
  // from a FIFO a co-tenant put in the table's place (analysis_file_read)
  int rc = CS_OK;
  FILE *t = analysis_file_read(dir, table, &rc);
  if (!t) return rc;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, t);
  fclose(t);
  rc = n > 0 ? CS_OK : cs_error(CS_ERR_IO, "%s/%s: no header line for COLUMNS.md", dir->path, table);
  if (!rc) columns_table(f, D, table, line, undescribed);
  free(line);
  return rc;
}

int analysis_write_columns(const analysis_data *D, const analysis_outdir *dir, const char *const *tables,
                           int n_tables) {
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "COLUMNS.md"));
  FILE *f = o.f;
  fprintf(f, "# Columns of the report's tables\n\n"
             "What every column of the CSV tables in this directory means, table by table "
             "(written by curvsweep %s `analyze` with the tables; the same as analysis/README.md "
             "of the curvsweep sources, \"Report tables\"). A *regime* is one combination of the "
             "values of every axis other than arch, task, depth and seed. Every interval is 95%%: "
             "`<x>_mean, <x>_ci_low, <x>_ci_high` are the mean over seeds of a per-cell value and "
             "its Student-t interval (`nan` with one seed). Curvature values of a cell are those "
             "of its last layer unless the table is per layer (prefix.csv). Back to the report: "
             "[index.md](index.md).\n\n",
          CS_VERSION);
  int undescribed = 0, rc = CS_OK;
  for (int i = 0; i < n_tables && !rc; i++) rc = columns_of(f, D, dir, tables[i], &undescribed);
  if (rc) {
    analysis_file_abort(&o);
    return rc;
  }
  return analysis_file_commit(&o);
}

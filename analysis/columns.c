/* columns.c — COLUMNS.md, what every column of the report's tables means,
 * written into the report directory so that the report reads alone. The
 * meanings are those of analysis/README.md ("Report tables", "verdicts.csv");
 * the columns are read from the header line of each table the report wrote
 * (so the file lists exactly the columns there are), and each is described
 * by the first rule of COLUMN_RULES whose table and name pattern (fnmatch)
 * match it, or, for a regime column, as that spec axis. A column no rule
 * describes is listed as such (tests/sh_analyze_status.sh requires none). */
#include "output.h"
#include "writers.h"

#include "curvsweep/error.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CI "; `_mean` over seeds, `_ci_low`, `_ci_high` its 95% Student-t interval"
#define SIGNS "; `_npos`, `_nneg` pairs with a positive / negative difference, `_sign_p` the " \
              "two-sided sign test, `_dz` (`_dz_low`, `_dz_high`) the paired standardised effect " \
              "mean/sd with its interval"

/* {table ("*": any), column pattern, meaning}: first match wins. */
static const struct {
  const char *table, *pattern, *meaning;
} COLUMN_RULES[] = {
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
    /* summary.csv, prefix.csv: a cell's value of its last layer (prefix.csv:
     * of layer l), mean over seeds with a t interval */
    {"*", "acc_*", "test accuracy" CI " (clipped to [0, 1])"},
    {"*", "K_absmean_*", "mean |K|, the raw Gaussian curvature (units 1/length²)" CI},
    {"*", "Kt_absmean_max", "the largest mean |K̃| over the seeds (amplification.csv: of any done "
                            "cell and prefix of the row; claim 1: ≤ 1e-8 is flat to rounding)"},
    {"*", "Kt_absmean_*", "mean |K̃|, the trace-normalised (scale-free) curvature" CI},
    {"*", "Kt_mean_*", "mean signed K̃ (positive: on average positively curved)" CI},
    {"*", "intK_*", "∫K dA over the input plane (input_dim 2)" CI},
    {"*", "logdet_*", "mean log det g of the pulled-back metric" CI},
    {"*", "Kh_absmean_*", "mean |K̂|, the area-normalised curvature" CI},
    {"*", "Kh_mean_*", "mean signed K̂" CI},
    {"*", "aniso_*", "median anisotropy index log(AM/GM) of g's eigenvalues" CI},
    {"*", "intabsK_*", "∫|K| dA (input_dim 2)" CI},
    {"*", "unresolved_frac_*", "fraction of the points whose curvature is unresolved (rounding)" CI},
    {"*", "flat_frac_*", "fraction of the points classified flat" CI},
    {"*", "curved_frac_max", "the largest curved fraction over the seeds (claim 1)"},
    {"*", "curved_frac_*", "fraction of the points classified curved" CI},
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
    {"gap.csv", "dacc_*", "test accuracy, arch − ungated paired by seed" CI SIGNS},
    {"gap.csv", "dK_*", "mean |K| of the last layer, arch − ungated" CI SIGNS},
    {"gap.csv", "dKt_*", "mean |K̃| of the last layer, arch − ungated" CI SIGNS},
    {"gap.csv", "dKh_*", "mean |K̂| of the last layer, arch − ungated" CI SIGNS},
    /* verdicts.csv */
    {"verdicts.csv", "claim", "the claim: `1` … `4`, `sample-efficiency`, `gate-g1-best`, "
                              "`gate-sink`, `gate-ov-qk`, `sink-g1`, `sink-share`, `sink-massive`, `sink-drain`, …"},
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
    /* samples_to_target.csv */
    {"samples_to_target.csv", "n_sizes", "training-set sizes on the curve"},
    {"samples_to_target.csv", "train_points_min", "the smallest size"},
    {"samples_to_target.csv", "train_points_max", "the largest size"},
    {"samples_to_target.csv", "best_acc", "the best mean accuracy of any arch at any size"},
    {"samples_to_target.csv", "target_acc", "the target accuracy"},
    {"samples_to_target.csv", "target_source", "`best` (95% of best_acc) or `given` (--target-acc)"},
    {"samples_to_target.csv", "reached", "`yes` (interpolated), `at_smallest` (an upper bound), `no` "
                                         "(not within the grid)"},
    {"samples_to_target.csv", "samples*", "training points to reach the target (monotone "
                                          "interpolation in log size) and its interval over seeds"},
    {"samples_to_target.csv", "ratio_seed_gmean", "the geometric mean of the seeds' own ratios "
                                                  "samples(ungated)/samples(arch)"},
    {"samples_to_target.csv", "ratio*", "samples(ungated) / samples(arch) (> 1: the arch needs "
                                        "fewer) and its interval"},
    {"samples_to_target.csv", "verdict", "the row's check in verdicts.csv: `yes`, `no`, `too few`, "
                                         "`inconclusive`, `n/a` for ungated"},
    /* gates.csv */
    {"gates.csv", "gate", "the gate position g1 … g5, `-` for an arch that ignores it"},
    {"gates.csv", "Kh_*", "mean |K̂| of the last layer" CI},
    {"gates.csv", "Kt_*", "mean |K̃| of the last layer" CI},
    {"gates.csv", "sink_mass_*", "mean attention weight of the non-CLS queries on token 0" CI},
    {"gates.csv", "max_attn_*", "mean largest attention weight of the non-CLS queries" CI},
    {"gates.csv", "rank_*", "rank of the row's mean among the gate positions of its arch in the unit "
                            "(1: most accurate / most curved)"},
    {"gates.csv", "ungated_*", "the ungated row's mean in the same unit"},
    {"gates.csv", "n_pairs_*", "seeds with this cell and the baseline's (ungated, or g1)"},
    {"gates.csv", "d*_vs_*", "this row − the baseline (ungated, or the same arch at g1), paired by "
                             "seed, for acc, Kh, Kt, sink_mass, max_attn" CI SIGNS},
    /* sinks.csv (lm family, analysis/sinks.c) */
    {"sinks.csv", "gate", "the gate position g1 … g5, `-` for the ungated row"},
    {"sinks.csv", "layer", "the block l = 1..depth whose output the values describe"},
    {"sinks.csv", "n_measured", "done cells with massive_act, value_drain, resid_peak stored "
                                "(format_version 5)"},
    {"sinks.csv", "n_pairs", "seeds with this cell and the ungated cell (0 on the ungated row)"},
    {"sinks.csv", "share_*", "first-token share: mean attention weight on BOS over heads, query "
                             "positions t ≥ 1 and held-out sequences (sink_mass)" CI},
    {"sinks.csv", "headmax_*", "the largest per-head first-token share (max_attn)" CI},
    {"sinks.csv", "massive_*", "massive activation max |h| / median |h| of the residual stream "
                               "(massive_act)" CI},
    {"sinks.csv", "drain_*", "value drain ‖v_BOS‖ / median ‖v_t‖ (value_drain)" CI},
    {"sinks.csv", "peak_*", "residual peak ‖h_BOS‖ / median ‖h_t‖ (resid_peak)" CI},
    {"sinks.csv", "d*", "this row − ungated, paired by seed, for share, headmax, massive, drain, "
                        "peak (`nan` on the ungated row)" CI SIGNS},
};
#define N_COLUMN_RULES (int)(sizeof COLUMN_RULES / sizeof *COLUMN_RULES)

/* The meaning of column name of table, or NULL. */
static const char *column_meaning(const analysis_data *D, const char *table, const char *name,
                                  char *buf, size_t len) {
  for (int i = 0; i < N_COLUMN_RULES; i++)
    if ((!strcmp(COLUMN_RULES[i].table, "*") || !strcmp(COLUMN_RULES[i].table, table)) &&
        fnmatch(COLUMN_RULES[i].pattern, name, 0) == 0)
      return COLUMN_RULES[i].meaning;
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

/* The columns of table (its header line in dir) as a Markdown table. */
static int columns_of(FILE *f, const analysis_data *D, const char *dir, const char *table,
                      int *undescribed) {
  char path[4096 + 64];
  snprintf(path, sizeof path, "%s/%s", dir, table);
  FILE *t = fopen(path, "r");
  if (!t) return cs_error(CS_ERR_IO, "%s: cannot read it back for COLUMNS.md", path);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, t);
  fclose(t);
  if (n <= 0) {
    free(line);
    return cs_error(CS_ERR_IO, "%s: no header line for COLUMNS.md", path);
  }
  line[strcspn(line, "\r\n")] = '\0';
  fprintf(f, "## %s\n\n| column | meaning |\n|---|---|\n", table);
  // consecutive columns with one meaning (x_mean, x_ci_low, x_ci_high)
  // share a row
  const char *prev = NULL;
  char *save = NULL;
  for (char *c = strtok_r(line, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
    char buf[256], name[256];
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
  free(line);
  return CS_OK;
}

int analysis_write_columns(const analysis_data *D, const char *dir, const char *const *tables,
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

/* gatescores.c — are the gate scores sparse and query-dependent?
 * (analysis/VERDICTS.md, "Gate scores"). When the archives hold done cells of
 * a gated arch with attention blocks: per row (gated arch, gate position,
 * family; gatescores.h) the /gates summaries of its cells (each the mean
 * over the cell's blocks; per seed the mean over the row's cells; over
 * seeds their means with t intervals) and the mean histogram;
 * gatescores.csv; the section of index.md with a sentence per row on
 * sparsity and query dependence, and one verdict per row at G1's place
 * ("G1's gate scores are sparse": per seed the share below 0.1 minus
 * ANALYSIS_SPARSE_SHARE, one-sided sign-flip test, Holm over those rows;
 * checks.c). The histograms are plots_gatescores.c. */
#include "gatescores.h"

#include "checks.h"
#include "compute.h"
#include "output.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const GS_NAME[GS_COUNT] = {"mean", "median", "q10", "q90", "frac_low", "var_query",
                                              "var_channel"};

static analysis_gatescores *analysis_gs_of(const analysis_data *D) {
  return (analysis_gatescores *)analysis_section_get(D, ANALYSIS_GATESCORES_NAME);
}

/* Summary q of one /gates row. */
static double analysis_gs_value(const cs_gate_scores *g, analysis_gs_q q) {
  const double v[GS_COUNT] = {g->mean, g->median, g->q10, g->q90, g->frac_low, g->var_query, g->var_channel};
  return v[q];
}

/* Regime r's gate position for the rows (-1: its family places no gate). */
static int analysis_gs_gate_of(const analysis_data *D, int r) {
  const cs_config *c = &D->regime[r].cfg;
  return config_family_info(c->family)->gate_positions ? (int)c->gate : -1;
}

/* Arch a has gate scores: gated, with attention blocks. */
static int analysis_gs_arch(const analysis_data *D, int a) {
  return config_arch_gated(D->arch[a]) && config_arch_info(D->arch[a])->attention;
}

/* Fill row R (a, gate, family set): per seed the mean over its cells of
 * each summary (a cell: the mean over its blocks) and of each bin. x:
 * (GS_COUNT + RESULT_GATE_BINS) · n_seed scratch. */
static int analysis_gs_row_fill(const analysis_data *D, analysis_gs_row *R, double *x) {
  int n = D->n_seed, W = GS_COUNT + RESULT_GATE_BINS;
  CS_CHECK(CS_CALLOC(R->low_seed, n ? n : 1));
  for (int s = 0; s < n; s++) {
    double sum[GS_COUNT + RESULT_GATE_BINS] = {0};
    int k = 0;
    for (int t = 0; t < D->n_task; t++)
      for (int d = 0; d < D->n_depth; d++)
        for (int r = 0; r < D->n_regime; r++) {
          if (D->regime[r].cfg.family != R->family || analysis_gs_gate_of(D, r) != R->gate) continue;
          const cs_cell_result *c = D->cell[analysis_cidx(D, R->a, t, d, r, s)];
          if (!c) continue;
          if (c->n_gates == 0) {
            R->n_unmeasured++;
            continue;
          }
          R->n_cells++, k++;
          for (int b = 0; b < c->n_gates; b++) {
            for (int q = 0; q < GS_COUNT; q++) sum[q] += analysis_gs_value(&c->gates[b], (analysis_gs_q)q) / c->n_gates;
            for (int h = 0; h < RESULT_GATE_BINS; h++) sum[GS_COUNT + h] += c->gates[b].hist[h] / c->n_gates;
          }
        }
    for (int q = 0; q < W; q++) x[(size_t)q * n + s] = k ? sum[q] / k : NAN;
    R->low_seed[s] = x[(size_t)GS_LOW * n + s];
  }
  for (int q = 0; q < GS_COUNT; q++) {
    analysis_mean_ci(x + (size_t)q * n, n, ANALYSIS_LEVEL, &R->q[q]);
    analysis_ci_clip01(&R->q[q]);
  }
  for (int h = 0; h < RESULT_GATE_BINS; h++) {
    analysis_ci c;
    analysis_mean_ci(x + (size_t)(GS_COUNT + h) * n, n, ANALYSIS_LEVEL, &c);
    R->hist[h] = c.mean;
  }
  return CS_OK;
}

int analysis_gatescores_compute(analysis_data *D) {
  int any = 0;
  for (int a = 0; a < D->n_arch; a++) any |= analysis_gs_arch(D, a);
  if (!any) return CS_OK;
  void **slot = analysis_section_state(D, ANALYSIS_GATESCORES_NAME);
  analysis_gatescores *G;
  CS_CHECK(CS_CALLOC(G, 1));
  *slot = G;
  CS_CHECK(CS_CALLOC(G->row, (size_t)D->n_arch * D->n_regime + 1));
  double *x;
  CS_CHECK(CS_CALLOC(x, (GS_COUNT + RESULT_GATE_BINS) * (size_t)(D->n_seed ? D->n_seed : 1)));
  int rc = CS_OK;
  for (int a = 0; a < D->n_arch && !rc; a++) {
    if (!analysis_gs_arch(D, a)) continue;
    for (int r = 0; r < D->n_regime && !rc; r++) {
      if (config_family_estimation(D->regime[r].cfg.family)) continue;
      int gate = analysis_gs_gate_of(D, r), seen = 0;
      cs_family fam = D->regime[r].cfg.family;
      for (int i = 0; i < G->n_row && !seen; i++)
        seen = G->row[i].a == a && G->row[i].gate == gate && G->row[i].family == fam;
      if (seen) continue;
      analysis_gs_row *R = &G->row[G->n_row];
      *R = (analysis_gs_row){.a = a, .gate = gate, .family = fam};
      snprintf(R->scope, sizeof R->scope, "%s %s%s%s", config_family_name(fam), config_arch_name(D->arch[a]),
               gate >= 0 ? " " : "", gate >= 0 ? config_gate_name((cs_gate_pos)gate) : "");
      rc = analysis_gs_row_fill(D, R, x);
      G->n_gated += R->n_cells + R->n_unmeasured, G->n_measured += R->n_cells;
      if (!rc && R->n_cells + R->n_unmeasured > 0) G->n_row++;
      else free(R->low_seed), R->low_seed = NULL;
    }
  }
  free(x);
  if (!rc && G->n_gated == 0) analysis_gatescores_free(D); /* no done gated cell: no section */
  return rc;
}

void analysis_gatescores_free(analysis_data *D) {
  void **slot = analysis_section_state(D, ANALYSIS_GATESCORES_NAME);
  analysis_gatescores *G = slot ? *slot : NULL;
  if (!G) return;
  for (int i = 0; i < G->n_row; i++) free(G->row[i].low_seed);
  free(G->row), free(G);
  *slot = NULL;
}

/* ---- the checks and verdicts (verdicts.csv) ---- */

/* G1's gate scores are sparse: per G1 row, per seed the share below 0.1
 * minus ANALYSIS_SPARSE_SHARE (> 0: sparse), one-sided sign-flip test (the
 * hypothesis stated before the data, Qiu et al.), Holm over the G1 rows. */
int analysis_gatescores_checks(analysis_data *D) {
  const analysis_gatescores *G = analysis_gs_of(D);
  if (!G) return CS_OK;
  double *v;
  CS_CHECK(CS_CALLOC(v, D->n_seed ? D->n_seed : 1));
  int rc = CS_OK;
  for (int i = 0; i < G->n_row && !rc; i++) {
    const analysis_gs_row *R = &G->row[i];
    if (!analysis_gs_is_g1(R) || R->n_cells == 0) continue;
    for (int s = 0; s < D->n_seed; s++) v[s] = R->low_seed[s] - ANALYSIS_SPARSE_SHARE;
    char key[160];
    snprintf(key, sizeof key, "%s|%s", ANALYSIS_SPARSE_CLAIM, R->scope);
    analysis_check *c;
    rc = analysis_check_add(D, ANALYSIS_SPARSE_CLAIM, ANALYSIS_SPARSE_CLAIM, 0, &c, "%s", R->scope);
    if (!rc) rc = analysis_check_seed(D, c, v, D->n_seed, ANALYSIS_GREATER, key);
    if (!rc) c->key = i;
  }
  free(v);
  return rc;
}

int analysis_gatescores_verdicts(analysis_data *D) {
  if (!analysis_gs_of(D)) return CS_OK;
  int n = D->checks.n;
  for (int i = 0; i < n; i++) {
    analysis_check c = D->checks.c[i];
    if (c.verdict || strcmp(c.claim, ANALYSIS_SPARSE_CLAIM)) continue;
    CS_CHECK(analysis_verdict_of_check(D, &c));
    /* the row reads as the section does (analysis_gs_word): a one-sided
     * test cannot say "not sparse", the per-seed interval below 0 can */
    analysis_check *v = &D->checks.c[D->checks.n - 1];
    if (v->decision == ANALYSIS_INCONCLUSIVE && v->effect_hi < 0) v->decision = ANALYSIS_NOT_SUPPORTED;
  }
  return CS_OK;
}

/* ---- gatescores.csv ---- */

int analysis_gatescores_write_tables(const analysis_data *D, const analysis_outdir *dir) {
  const analysis_gatescores *G = analysis_gs_of(D);
  if (!G || G->n_measured == 0) return CS_OK;
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "gatescores.csv"));
  FILE *f = o.f;
  fprintf(f, "arch,gate,family,n_cells");
  for (int q = 0; q < GS_COUNT; q++) analysis_csv_ci_header(f, GS_NAME[q]);
  for (int h = 0; h < RESULT_GATE_BINS; h++) fprintf(f, ",hist_%02d", h);
  fprintf(f, "\n");
  for (int i = 0; i < G->n_row; i++) {
    const analysis_gs_row *R = &G->row[i];
    if (R->n_cells == 0) continue;
    fprintf(f, "%s,%s,%s,%d", config_arch_name(D->arch[R->a]),
            R->gate >= 0 ? config_gate_name((cs_gate_pos)R->gate) : "-", config_family_name(R->family), R->n_cells);
    for (int q = 0; q < GS_COUNT; q++) analysis_csv_ci(f, &R->q[q]);
    for (int h = 0; h < RESULT_GATE_BINS; h++) analysis_csv_num(f, R->hist[h]);
    fprintf(f, "\n");
  }
  return analysis_file_commit(&o);
}

void analysis_gatescores_list_tables(FILE *f, const analysis_data *D) {
  const analysis_gatescores *G = analysis_gs_of(D);
  if (G && G->n_measured > 0)
    fprintf(f, "- [gatescores.csv](gatescores.csv): per (gated arch, gate, family): the gate scores' mean, "
               "median, 10%% and 90%% quantiles, share below 0.1, variance shares between positions and "
               "channels over seeds, and the mean histogram\n");
}

/* ---- index.md ---- */

/* The reading of a one-sided sparsity check c: its own decision, and "not
 * sparse" only when the interval of the per-seed excess lies below 0 (the
 * one-sided test cannot say it; its interval can). */
static const char *analysis_gs_word(const analysis_check *c) {
  return c->decision == ANALYSIS_SUPPORTED ? "sparse"
         : c->decision == ANALYSIS_TOO_FEW ? "too few seeds"
         : c->effect_hi < 0                ? "not sparse (most scores at or above 0.1)"
                                           : "not shown sparse";
}

/* The sentence of row R: sparsity and query dependence. */
static void analysis_gs_sentence(FILE *f, const analysis_gs_row *R) {
  double low = R->q[GS_LOW].mean, vq = R->q[GS_VQUERY].mean, vc = R->q[GS_VCHANNEL].mean;
  fprintf(f, "- %s (%d cells): median score %s (10%%–90%%: %s–%s), %s%% of the scores below 0.1: %s. Of "
             "their variance %s%% lies between positions and %s%% between channels: %s.\n",
          R->scope, R->n_cells, F4(R->q[GS_MEDIAN].mean), F4(R->q[GS_Q10].mean), F4(R->q[GS_Q90].mean),
          F4(100 * low), low > ANALYSIS_SPARSE_SHARE ? "sparse by the rule above (the median below 0.1)"
                         : low > 0.1 ? "partly sparse (a minority of the scores near 0)" : "not sparse",
          F4(100 * vq), F4(100 * vc),
          vq > vc && vq > 0.25 ? (R->gate == GATE_G2 || R->gate == GATE_G3
                                      ? "the score follows the key/value position's input"
                                      : "the score depends on the query")
          : vc > vq ? "the score is mostly a property of the channel, the same for every position"
                    : "neither positions nor channels explain most of it (their interaction does)");
}

int analysis_gatescores_write_md(FILE *f, const analysis_data *D) {
  const analysis_gatescores *G = analysis_gs_of(D);
  if (!G) return CS_OK;
  fprintf(f, "## Are the gate scores sparse and query-dependent?\n\n");
  if (G->n_measured == 0) {
    fprintf(f, "The archives store no gate scores: none of their %d done gated cells has /gates rows "
               "(format_version 5 or older, or merged from one; docs/ARCHIVE.md, \"Versions\").\n\n",
            G->n_gated);
    return CS_OK;
  }
  fprintf(f, "The gate values σ of every gated block over the held-out evaluation inputs, at every position "
             "and channel (docs/MODELS.md, \"Gate scores and attention entropy\"): per cell the mean over "
             "its blocks of each summary, per seed the mean over the cells of the row (every task, depth "
             "and regime of that arch, gate position and family), means over seeds with 95%% t intervals "
             "([gatescores.csv](gatescores.csv)). **Sparse** means more than %g%% of the scores below 0.1 "
             "(the median below 0.1: most of what the gate multiplies is cut by at least 90%%; "
             "analysis/README.md, \"Gate scores\"). Query dependence: the share of the scores' variance "
             "between positions (rows of the position × channel table) against between channels. "
             "Verdict (the hypothesis stated before the data, Qiu et al.): G1's gate scores are sparse, "
             "per seed the share below 0.1 minus %g, one-sided sign-flip test, Holm over the G1 rows, "
             "α = %g (the memory family's gate is on the attention's output: G1's place).\n\n",
          100 * ANALYSIS_SPARSE_SHARE, ANALYSIS_SPARSE_SHARE, D->opt.alpha);
  if (G->n_measured < G->n_gated)
    fprintf(f, "%d of the %d done gated cells carry no gate scores (format_version 5 or older, or merged "
               "from one): they enter no mean or test.\n\n", G->n_gated - G->n_measured, G->n_gated);
  fprintf(f, "| row | cells | mean | median | 10%% | 90%% | share < 0.1 | variance between positions | "
             "between channels |\n|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < G->n_row; i++) {
    const analysis_gs_row *R = &G->row[i];
    if (R->n_cells == 0) continue;
    char b[3][96];
    fprintf(f, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", R->scope, R->n_cells, F4(R->q[GS_MEAN].mean),
            analysis_ci_text(b[0], 96, &R->q[GS_MEDIAN]), F4(R->q[GS_Q10].mean), F4(R->q[GS_Q90].mean),
            analysis_ci_text(b[1], 96, &R->q[GS_LOW]), analysis_ci_text(b[2], 96, &R->q[GS_VQUERY]),
            F4(R->q[GS_VCHANNEL].mean));
  }
  fprintf(f, "\n");
  for (int i = 0; i < G->n_row; i++)
    if (G->row[i].n_cells > 0) analysis_gs_sentence(f, &G->row[i]);
  fprintf(f, "\nVerdicts:\n\n");
  int any = 0;
  for (int i = 0; i < G->n_row; i++) {
    const analysis_check *c = analysis_check_keyed(D, ANALYSIS_SPARSE_CLAIM, i);
    if (!c) continue;
    any = 1;
    fprintf(f, "- G1's gate scores are sparse, %s: **%s** (share below 0.1 minus %g per seed: ",
            G->row[i].scope, analysis_gs_word(c), ANALYSIS_SPARSE_SHARE);
    analysis_md_check(f, c);
    fprintf(f, ")\n");
  }
  if (!any) fprintf(f, "- G1's gate scores are sparse: no verdict (no gated cell at g1 with gate scores).\n");
  fprintf(f, "\n");
  return CS_OK;
}

/* ---- its row's claims, tables and columns (sections.h) ---- */

static const analysis_claim_info GS_CLAIMS[] = {
    {ANALYSIS_SPARSE_CLAIM, "G1's gate scores are sparse: more than half below 0.1 (one-sided)",
     "Are the gate scores sparse and query-dependent"},
    {NULL, NULL, NULL},
};

static const analysis_table_info GS_TABLES[] = {
    {"gatescores.csv", "gated cells with /gates rows",
     "per (gated arch, gate, family): gate-score summaries over seeds and the mean histogram"},
    {NULL, NULL, NULL},
};

static const analysis_column_rule GS_COLUMNS[] = {
    {"gatescores.csv", "gate", "the gate position g1 … g5, `-` for a family that places no gate (its gate "
                               "is on the attention's output)"},
    {"gatescores.csv", "family", "the model family"},
    {"gatescores.csv", "n_cells", "done cells with gate scores (/gates rows)"},
    {"gatescores.csv", "mean_*", "mean gate score; per cell the mean over blocks, per seed over the cells"
                                 ANALYSIS_COLUMN_CI},
    {"gatescores.csv", "median_*", "median gate score (as mean_*)" ANALYSIS_COLUMN_CI},
    {"gatescores.csv", "q10_*", "10% quantile of the gate scores (as mean_*)" ANALYSIS_COLUMN_CI},
    {"gatescores.csv", "q90_*", "90% quantile of the gate scores (as mean_*)" ANALYSIS_COLUMN_CI},
    {"gatescores.csv", "frac_low_*", "share of the gate scores below 0.1 (as mean_*)" ANALYSIS_COLUMN_CI},
    {"gatescores.csv", "var_query_*", "share of the scores' variance between positions (query dependence "
                                      "for g1, g4, g5)" ANALYSIS_COLUMN_CI},
    {"gatescores.csv", "var_channel_*", "share of the scores' variance between channels" ANALYSIS_COLUMN_CI},
    {"gatescores.csv", "hist_*", "mean share of the scores in bin k: [k/20, (k+1)/20), the last closed"},
    {NULL, NULL, NULL},
};

const analysis_section_about analysis_gatescores_about = {GS_CLAIMS, GS_TABLES, GS_COLUMNS};

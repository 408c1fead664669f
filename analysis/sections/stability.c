/* stability.c — does gating tolerate larger learning rates?
 * (analysis/VERDICTS.md, "Stability"). When the archives hold ended cells
 * (done or diverged) of a classification family: the spiked and diverged
 * counts; with an lr axis, per (arch, gate position, family, lr) the share
 * of ended cells that diverged or spiked (stability.csv), per seed and unit
 * the largest stable lr of each arch (the largest lr up to which every
 * lr of the grid is stable; one grid step below the smallest when that one
 * is not, the largest when all are), and per comparison (gated arch, gate,
 * family; stability.h) the verdict "gating tolerates larger learning
 * rates": per seed the mean over units of log10 lr*(gated) − log10
 * lr*(ungated), two-sided sign-flip test, Holm within claim stab-lr
 * (checks.c). */
#include "stability.h"

#include "checks.h"
#include "compute.h"
#include "output.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static analysis_stability *analysis_stab_of(const analysis_data *D) {
  return (analysis_stability *)analysis_section_get(D, ANALYSIS_STABILITY_NAME);
}

/* 1 stable, 0 unstable (diverged, or spiked), -1 unknown (no ended cell, or
 * not measured). */
static int analysis_stab_outcome(const cs_cell_result *c) {
  if (!c) return -1;
  if (c->status == CELL_DIVERGED) return 0;
  if (!c->cstats.present) return -1;
  return c->cstats.spikes > 0 ? 0 : 1;
}

static int analysis_stab_gate_of(const analysis_data *D, int r) {
  const cs_config *c = &D->regime[r].cfg;
  return config_family_info(c->family)->gate_positions ? (int)c->gate : -1;
}

static int analysis_stab_lr_index(const analysis_stability *S, double lr) {
  for (int i = 0; i < S->n_lr; i++)
    if (S->lr[i] == lr) return i;
  return -1;
}

/* The lr axis values and the bases (regimes without lr), lr ascending. */
static int analysis_stab_bases(const analysis_data *D, analysis_stability *S) {
  CS_CHECK(CS_CALLOC(S->lr, D->n_regime + 1));
  CS_CHECK(CS_CALLOC(S->base, D->n_regime + 1));
  for (int r = 0; r < D->n_regime; r++) {
    double lr = D->regime[r].cfg.lr;
    if (analysis_stab_lr_index(S, lr) < 0) {
      int k = S->n_lr++;
      while (k > 0 && S->lr[k - 1] > lr) S->lr[k] = S->lr[k - 1], k--;
      S->lr[k] = lr;
    }
    if (config_family_estimation(D->regime[r].cfg.family)) continue;
    char name[ANALYSIS_NAME_LEN], tag[ANALYSIS_NAME_LEN];
    analysis_regime_base(D, r, S->ax_lr, name, sizeof name, tag, sizeof tag);
    int b = 0;
    while (b < S->n_base && strcmp(S->base[b].name, name)) b++;
    analysis_stab_base *B = &S->base[b];
    if (b == S->n_base) {
      S->n_base++;
      snprintf(B->name, sizeof B->name, "%s", name);
      CS_CHECK(CS_CALLOC(B->lr, D->n_regime));
      CS_CHECK(CS_CALLOC(B->regime, D->n_regime));
    }
    int k = B->n_lr++;
    while (k > 0 && B->lr[k - 1] > lr) B->lr[k] = B->lr[k - 1], B->regime[k] = B->regime[k - 1], k--;
    B->lr[k] = lr, B->regime[k] = r;
  }
  return CS_OK;
}

/* The counts per (arch, gate, family, lr) over every ended cell. */
static int analysis_stab_cells(const analysis_data *D, analysis_stability *S) {
  CS_CHECK(CS_CALLOC(S->cell, (size_t)D->n_arch * D->n_regime + 1));
  for (int a = 0; a < D->n_arch; a++)
    for (int r = 0; r < D->n_regime; r++) {
      if (config_family_estimation(D->regime[r].cfg.family)) continue;
      int gate = analysis_stab_gate_of(D, r), lr = analysis_stab_lr_index(S, D->regime[r].cfg.lr);
      cs_family fam = D->regime[r].cfg.family;
      int i = 0;
      while (i < S->n_cell && !(S->cell[i].a == a && S->cell[i].gate == gate && S->cell[i].family == fam &&
                                S->cell[i].lr == lr))
        i++;
      analysis_stab_cell *C = &S->cell[i];
      for (int t = 0; t < D->n_task; t++)
        for (int d = 0; d < D->n_depth; d++)
          for (int s = 0; s < D->n_seed; s++) {
            const cs_cell_result *c = D->ended[analysis_cidx(D, a, t, d, r, s)];
            if (!c) continue;
            if (i == S->n_cell) {
              S->n_cell++;
              *C = (analysis_stab_cell){.a = a, .gate = gate, .family = fam, .lr = lr};
            }
            int o = analysis_stab_outcome(c);
            C->n_cells++;
            C->n_diverged += c->status == CELL_DIVERGED;
            C->n_spiked += c->status == CELL_DONE && o == 0;
            C->n_unknown += o < 0;
          }
    }
  return CS_OK;
}

/* log10 of the largest stable lr of arch a in unit (t, d, base b) at seed
 * s (the censoring of stability.c's top comment); NaN when an outcome
 * before the first unstable one is unknown. */
static double analysis_stab_lstar(const analysis_data *D, const analysis_stab_base *B, int a, int t, int d,
                                  int s) {
  int last = -1;
  for (int i = 0; i < B->n_lr; i++) {
    int o = analysis_stab_outcome(D->ended[analysis_cidx(D, a, t, d, B->regime[i], s)]);
    if (o < 0) return NAN;
    if (o == 0) break;
    last = i;
  }
  if (last >= 0) return log10(B->lr[last]);
  double step = B->n_lr >= 2 ? log10(B->lr[1]) - log10(B->lr[0]) : 1.0;
  return log10(B->lr[0]) - step;
}

/* Fill comparison R: per seed the unit means of log10 lr* (x: 3·n_seed scratch). */
static int analysis_stab_row_fill(const analysis_data *D, const analysis_stability *S, analysis_stab_row *R,
                                  double *x) {
  int n = D->n_seed, ua = analysis_find_arch(D, ARCH_UNGATED);
  double *lu = x, *lg = x + n;
  CS_CHECK(CS_CALLOC(R->d_seed, n ? n : 1));
  unsigned char *seen;
  CS_CHECK(CS_CALLOC(seen, (size_t)D->n_task * D->n_depth * S->n_base + 1));
  for (int s = 0; s < n; s++) {
    double su = 0, sg = 0;
    int k = 0;
    for (int b = 0; b < S->n_base; b++) {
      const analysis_stab_base *B = &S->base[b];
      int r0 = B->regime[0];
      if (D->regime[r0].cfg.family != R->family || analysis_stab_gate_of(D, r0) != R->gate || B->n_lr < 2) continue;
      for (int t = 0; t < D->n_task; t++)
        for (int d = 0; d < D->n_depth; d++) {
          double u = analysis_stab_lstar(D, B, ua, t, d, s), g = analysis_stab_lstar(D, B, R->a, t, d, s);
          if (!isfinite(u) || !isfinite(g)) continue;
          su += u, sg += g, k++;
          seen[((size_t)t * D->n_depth + d) * S->n_base + b] = 1;
        }
    }
    lu[s] = k ? su / k : NAN, lg[s] = k ? sg / k : NAN;
    R->d_seed[s] = k ? (sg - su) / k : NAN;
  }
  for (size_t i = 0; i < (size_t)D->n_task * D->n_depth * S->n_base; i++) R->n_units += seen[i];
  free(seen);
  analysis_mean_ci(lu, n, ANALYSIS_LEVEL, &R->lstar_u);
  analysis_mean_ci(lg, n, ANALYSIS_LEVEL, &R->lstar_g);
  analysis_mean_ci(R->d_seed, n, ANALYSIS_LEVEL, &R->dlstar);
  return CS_OK;
}

static int analysis_stab_rows(const analysis_data *D, analysis_stability *S) {
  if (analysis_find_arch(D, ARCH_UNGATED) < 0) return CS_OK;
  CS_CHECK(CS_CALLOC(S->row, (size_t)D->n_arch * D->n_regime + 1));
  double *x;
  CS_CHECK(CS_CALLOC(x, 3 * (size_t)(D->n_seed ? D->n_seed : 1)));
  int rc = CS_OK;
  for (int a = 0; a < D->n_arch && !rc; a++) {
    if (!config_arch_gated(D->arch[a])) continue;
    for (int r = 0; r < D->n_regime && !rc; r++) {
      if (config_family_estimation(D->regime[r].cfg.family)) continue;
      int gate = analysis_stab_gate_of(D, r), seen = 0;
      cs_family fam = D->regime[r].cfg.family;
      for (int i = 0; i < S->n_row && !seen; i++)
        seen = S->row[i].a == a && S->row[i].gate == gate && S->row[i].family == fam;
      if (seen) continue;
      analysis_stab_row *R = &S->row[S->n_row];
      *R = (analysis_stab_row){.a = a, .gate = gate, .family = fam};
      snprintf(R->scope, sizeof R->scope, "%s %s%s%s", config_family_name(fam), config_arch_name(D->arch[a]),
               gate >= 0 ? " " : "", gate >= 0 ? config_gate_name((cs_gate_pos)gate) : "");
      rc = analysis_stab_row_fill(D, S, R, x);
      if (!rc && R->n_units > 0) S->n_row++;
      else free(R->d_seed), R->d_seed = NULL;
    }
  }
  free(x);
  return rc;
}

int analysis_stability_compute(analysis_data *D) {
  int n_ended = 0, n_measured = 0, n_spiked = 0, n_diverged = 0;
  for (size_t i = 0; i < (size_t)D->n_arch * D->n_task * D->n_depth * D->n_regime * D->n_seed; i++) {
    const cs_cell_result *c = D->ended[i];
    if (!c || config_family_estimation(D->regime[(i / D->n_seed) % D->n_regime].cfg.family)) continue;
    n_ended++;
    n_measured += c->cstats.present;
    n_diverged += c->status == CELL_DIVERGED;
    n_spiked += c->status == CELL_DONE && c->cstats.present && c->cstats.spikes > 0;
  }
  if (n_ended == 0) return CS_OK;
  void **slot = analysis_section_state(D, ANALYSIS_STABILITY_NAME);
  analysis_stability *S;
  CS_CHECK(CS_CALLOC(S, 1));
  *slot = S;
  *S = (analysis_stability){.ax_lr = spec_find_axis(D->spec, "lr"), .n_ended = n_ended,
                            .n_measured = n_measured, .n_spiked = n_spiked, .n_diverged = n_diverged};
  if (S->ax_lr < 0) return CS_OK;
  CS_CHECK(analysis_stab_bases(D, S));
  CS_CHECK(analysis_stab_cells(D, S));
  return analysis_stab_rows(D, S);
}

void analysis_stability_free(analysis_data *D) {
  void **slot = analysis_section_state(D, ANALYSIS_STABILITY_NAME);
  analysis_stability *S = slot ? *slot : NULL;
  if (!S) return;
  for (int b = 0; b < S->n_base; b++) free(S->base[b].lr), free(S->base[b].regime);
  for (int i = 0; i < S->n_row; i++) free(S->row[i].d_seed);
  free(S->lr), free(S->base), free(S->cell), free(S->row), free(S);
  *slot = NULL;
}

/* ---- the checks and verdicts (verdicts.csv) ---- */

int analysis_stability_checks(analysis_data *D) {
  const analysis_stability *S = analysis_stab_of(D);
  for (int i = 0; S && i < S->n_row; i++) {
    const analysis_stab_row *R = &S->row[i];
    char key[160];
    snprintf(key, sizeof key, "%s|%s", ANALYSIS_STAB_CLAIM, R->scope);
    analysis_check *c;
    CS_CHECK(analysis_check_add(D, ANALYSIS_STAB_CLAIM, ANALYSIS_STAB_CLAIM, 0, &c, "%s", R->scope));
    CS_CHECK(analysis_check_seed(D, c, R->d_seed, D->n_seed, ANALYSIS_TWO_SIDED, key));
    c->key = i;
  }
  return CS_OK;
}

int analysis_stability_verdicts(analysis_data *D) {
  if (!analysis_stab_of(D)) return CS_OK;
  int n = D->checks.n;
  for (int i = 0; i < n; i++) {
    analysis_check c = D->checks.c[i];
    if (!c.verdict && !strcmp(c.claim, ANALYSIS_STAB_CLAIM)) CS_CHECK(analysis_verdict_of_check(D, &c));
  }
  return CS_OK;
}

/* ---- stability.csv ---- */

static const char *analysis_stab_gate_name(int gate) {
  return gate >= 0 ? config_gate_name((cs_gate_pos)gate) : "-";
}

int analysis_stability_write_tables(const analysis_data *D, const analysis_outdir *dir) {
  const analysis_stability *S = analysis_stab_of(D);
  if (!S || S->n_cell == 0) return CS_OK;
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "stability.csv"));
  FILE *f = o.f;
  fprintf(f, "arch,gate,family,lr,n_cells,n_diverged,n_spiked,n_unknown,share_unstable\n");
  for (int i = 0; i < S->n_cell; i++) {
    const analysis_stab_cell *C = &S->cell[i];
    int known = C->n_cells - C->n_unknown;
    fprintf(f, "%s,%s,%s,%.10g,%d,%d,%d,%d", config_arch_name(D->arch[C->a]), analysis_stab_gate_name(C->gate),
            config_family_name(C->family), S->lr[C->lr], C->n_cells, C->n_diverged, C->n_spiked, C->n_unknown);
    analysis_csv_num(f, known ? (double)(C->n_diverged + C->n_spiked) / known : NAN);
    fprintf(f, "\n");
  }
  return analysis_file_commit(&o);
}

void analysis_stability_list_tables(FILE *f, const analysis_data *D) {
  const analysis_stability *S = analysis_stab_of(D);
  if (S && S->n_cell > 0)
    fprintf(f, "- [stability.csv](stability.csv): per (arch, gate, family, lr): ended cells, diverged, "
               "spiked, and the share unstable\n");
}

/* ---- index.md ---- */

static const char *analysis_stab_word(analysis_decision r) {
  return r == ANALYSIS_SUPPORTED ? "gating tolerated larger learning rates"
         : r == ANALYSIS_NOT_SUPPORTED ? "gating tolerated smaller learning rates"
         : r == ANALYSIS_TOO_FEW ? "too few seeds" : "no significant difference";
}

/* The share-unstable table: one row per (arch, gate, family), a column per lr. */
static void analysis_stab_share_table(FILE *f, const analysis_data *D, const analysis_stability *S) {
  fprintf(f, "| arch | gate | family |");
  for (int i = 0; i < S->n_lr; i++) fprintf(f, " lr %s |", F4(S->lr[i]));
  fprintf(f, "\n|---|---|---|");
  for (int i = 0; i < S->n_lr; i++) fprintf(f, "---|");
  fprintf(f, "\n");
  for (int i = 0; i < S->n_cell; i++) {
    const analysis_stab_cell *C = &S->cell[i];
    int first = 1;
    for (int j = 0; j < i && first; j++)
      first = !(S->cell[j].a == C->a && S->cell[j].gate == C->gate && S->cell[j].family == C->family);
    if (!first) continue;
    fprintf(f, "| %s | %s | %s |", config_arch_name(D->arch[C->a]), analysis_stab_gate_name(C->gate),
            config_family_name(C->family));
    for (int l = 0; l < S->n_lr; l++) {
      const analysis_stab_cell *E = NULL;
      for (int j = 0; j < S->n_cell && !E; j++)
        if (S->cell[j].a == C->a && S->cell[j].gate == C->gate && S->cell[j].family == C->family && S->cell[j].lr == l)
          E = &S->cell[j];
      int known = E ? E->n_cells - E->n_unknown : 0;
      if (!known) fprintf(f, " – |");
      else fprintf(f, " %d/%d (%d diverged) |", E->n_diverged + E->n_spiked, known, E->n_diverged);
    }
    fprintf(f, "\n");
  }
  fprintf(f, "\n");
}

int analysis_stability_write_md(FILE *f, const analysis_data *D) {
  const analysis_stability *S = analysis_stab_of(D);
  if (!S) return CS_OK;
  fprintf(f, "## Does gating tolerate larger learning rates?\n\n");
  if (S->n_measured == 0 && S->n_diverged == 0) {
    fprintf(f, "The archives store no loss spikes: none of their %d ended cells has a /cellstats row "
               "(format_version 5 or older, or merged from one; docs/ARCHIVE.md, \"Versions\").\n\n",
            S->n_ended);
    return CS_OK;
  }
  fprintf(f, "A cell is unstable when it diverged (a non-finite loss) or its training curve spiked: an "
             "evaluation whose training-set loss at least doubles and climbs back more than halfway from "
             "the best of the 5 evaluations before it to the loss of a uniform guess (docs/MODELS.md, "
             "\"Stability\"). Of the %d ended cells, %d diverged and %d spiked.", S->n_ended, S->n_diverged,
          S->n_spiked);
  if (S->n_measured < S->n_ended - S->n_diverged)
    fprintf(f, " %d done cells carry no spike count (format_version 5 or older): unknown.",
            S->n_ended - S->n_diverged - S->n_measured);
  fprintf(f, "\n\n");
  if (S->ax_lr < 0) {
    fprintf(f, "The sweep has no `lr` axis: no largest stable learning rate and no verdict "
               "(jobs/stability.ini has one).\n\n");
    return CS_OK;
  }
  fprintf(f, "Unstable cells of the ended ones per arch and learning rate, over every task, depth, regime "
             "and seed ([stability.csv](stability.csv)):\n\n");
  analysis_stab_share_table(f, D, S);
  fprintf(f, "Largest stable learning rate: per (task, depth, regime without lr) and seed, the largest lr "
             "of the grid up to which every lr is stable (one grid step below the smallest when that one "
             "is unstable, the largest when all are: both censored). Verdict: gating tolerates larger "
             "learning rates, per seed the mean over those units of log10 lr*(gated) − log10 "
             "lr*(ungated), two-sided sign-flip test, Holm within the comparisons, α = %g.\n\n",
          D->opt.alpha);
  if (S->n_row == 0) {
    fprintf(f, "No gated arch and ungated both have units with two or more learning rates: no "
               "comparison.\n\n");
    return CS_OK;
  }
  fprintf(f, "| comparison | units | log10 lr* ungated | log10 lr* gated | gated − ungated | ratio |\n"
             "|---|---|---|---|---|---|\n");
  for (int i = 0; i < S->n_row; i++) {
    const analysis_stab_row *R = &S->row[i];
    char b[3][96];
    fprintf(f, "| %s | %d | %s | %s | %s | ×%s |\n", R->scope, R->n_units, analysis_ci_text(b[0], 96, &R->lstar_u),
            analysis_ci_text(b[1], 96, &R->lstar_g), analysis_ci_text(b[2], 96, &R->dlstar),
            F4(pow(10, R->dlstar.mean)));
  }
  fprintf(f, "\nVerdicts:\n\n");
  for (int i = 0; i < S->n_row; i++) {
    const analysis_check *c = analysis_check_keyed(D, ANALYSIS_STAB_CLAIM, i);
    if (!c) continue;
    fprintf(f, "- Gating tolerates larger learning rates, %s: **%s** (log10 lr* gated − ungated per seed: ",
            S->row[i].scope, analysis_stab_word(analysis_check_two_sided(D, c)));
    analysis_md_check(f, c);
    fprintf(f, ")\n");
  }
  fprintf(f, "\n");
  return CS_OK;
}

/* ---- its row's claims, tables and columns (sections.h) ---- */

static const analysis_claim_info STAB_CLAIMS[] = {
    {ANALYSIS_STAB_CLAIM, "gating tolerates larger learning rates (largest stable lr, paired by seed)",
     "Does gating tolerate larger learning rates"},
    {NULL, NULL, NULL},
};

static const analysis_table_info STAB_TABLES[] = {
    {"stability.csv", "an lr axis", "per (arch, gate, family, lr): diverged and spiked cells, share unstable"},
    {NULL, NULL, NULL},
};

static const analysis_column_rule STAB_COLUMNS[] = {
    {"stability.csv", "gate", "the gate position g1 … g5, `-` for a family that places no gate"},
    {"stability.csv", "family", "the model family"},
    {"stability.csv", "lr", "the learning rate (the lr axis)"},
    {"stability.csv", "n_cells", "ended cells (done or diverged) over every task, depth, regime and seed"},
    {"stability.csv", "n_diverged", "of them, diverged (a non-finite loss)"},
    {"stability.csv", "n_spiked", "of them, done with a loss spike (docs/MODELS.md, \"Stability\")"},
    {"stability.csv", "n_unknown", "of them, done without a spike count (format_version 5 or older)"},
    {"stability.csv", "share_unstable", "(n_diverged + n_spiked) / (n_cells − n_unknown)"},
    {NULL, NULL, NULL},
};

const analysis_section_about analysis_stability_about = {STAB_CLAIMS, STAB_TABLES, STAB_COLUMNS};

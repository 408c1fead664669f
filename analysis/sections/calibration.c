/* calibration.c — does gating lower the calibration error? (analysis/VERDICTS.md,
 * "Calibration error"). When the archives hold done cells of a classification
 * family with a gated arch and ungated: per comparison (gated arch, gate
 * position, family; calibration.h) and seed, the mean over its units
 * (task, depth, regime) of each cell's test ECE, NLL, Brier score, accuracy
 * and attention entropy (mean over blocks) for ungated and the gated arch;
 * over seeds their means with t intervals, the ECE difference ungated −
 * gated and the accuracy difference gated − ungated; calibration.csv; the
 * section of index.md with one verdict per comparison ("gating lowers
 * ECE": the per-seed ECE differences, two-sided sign-flip test, Holm
 * within claim calib-ece; checks.c) and the accuracy difference beside it. */
#include "calibration.h"

#include "checks.h"
#include "compute.h"
#include "output.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const CALIB_Q_NAME[CALIB_COUNT] = {"ece", "nll", "brier", "acc", "entropy"};

static analysis_calib *analysis_calib_of(const analysis_data *D) {
  return (analysis_calib *)analysis_section_get(D, ANALYSIS_CALIB_NAME);
}

/* Quantity q of a done cell (NaN: not measured, e.g. an archive of
 * format_version 5 or older without /cellstats). */
static double analysis_calib_value(const cs_cell_result *c, analysis_calib_q q) {
  if (!c || !c->cstats.present) return NAN;
  switch (q) {
    case CALIB_ECE: return c->cstats.test_ece;
    case CALIB_NLL: return c->cstats.test_nll;
    case CALIB_BRIER: return c->cstats.test_brier;
    case CALIB_ACC: return c->test_acc;
    default: break;
  }
  double sum = 0;
  int n = 0;
  for (int l = 1; l <= c->depth; l++) {
    double e = analysis_cell_value(c, l, MEASURE_ATTN_ENTROPY);
    if (isfinite(e)) sum += e, n++;
  }
  return n ? sum / n : NAN;
}

/* Regime r is a classification family's (not the estimator's). */
static int analysis_calib_regime(const analysis_data *D, int r) {
  return !config_family_estimation(D->regime[r].cfg.family);
}

/* The comparison of gated arch a that regime r belongs to: its gate
 * position (-1 when the family places none) and family. */
static int analysis_calib_gate_of(const analysis_data *D, int r) {
  const cs_config *c = &D->regime[r].cfg;
  return config_family_info(c->family)->gate_positions ? (int)c->gate : -1;
}

static int analysis_calib_in_row(const analysis_data *D, const analysis_calib_row *R, int r) {
  return analysis_calib_regime(D, r) && D->regime[r].cfg.family == R->family &&
         analysis_calib_gate_of(D, r) == R->gate;
}

/* Fill row R (a, gate, family set): per seed the unit means of every
 * quantity for both archs, their intervals over seeds, and the differences.
 * x: 2·CALIB_COUNT·n_seed + n_seed scratch. */
static int analysis_calib_row_fill(const analysis_data *D, analysis_calib_row *R, double *x) {
  int n = D->n_seed, ua = analysis_find_arch(D, ARCH_UNGATED);
  double *u = x, *g = x + (size_t)CALIB_COUNT * n, *dacc = g + (size_t)CALIB_COUNT * n;
  CS_CHECK(CS_CALLOC(R->dece_seed, n ? n : 1));
  unsigned char *unit_seen;
  CS_CHECK(CS_CALLOC(unit_seen, (size_t)D->n_task * D->n_depth * D->n_regime + 1));
  for (int s = 0; s < n; s++) {
    double su[CALIB_COUNT] = {0}, sg[CALIB_COUNT] = {0}, de = 0, da = 0;
    int k[CALIB_COUNT] = {0}, pairs = 0;
    for (int t = 0; t < D->n_task; t++)
      for (int d = 0; d < D->n_depth; d++)
        for (int r = 0; r < D->n_regime; r++) {
          if (!analysis_calib_in_row(D, R, r)) continue;
          const cs_cell_result *cu = D->cell[analysis_cidx(D, ua, t, d, r, s)];
          const cs_cell_result *cg = D->cell[analysis_cidx(D, R->a, t, d, r, s)];
          double eu = analysis_calib_value(cu, CALIB_ECE), eg = analysis_calib_value(cg, CALIB_ECE);
          if (!isfinite(eu) || !isfinite(eg)) continue;
          pairs++;
          unit_seen[((size_t)t * D->n_depth + d) * D->n_regime + r] = 1;
          de += eu - eg;
          da += cg->test_acc - cu->test_acc;
          for (int q = 0; q < CALIB_COUNT; q++) {
            double vu = analysis_calib_value(cu, (analysis_calib_q)q);
            double vg = analysis_calib_value(cg, (analysis_calib_q)q);
            if (isfinite(vu) && isfinite(vg)) su[q] += vu, sg[q] += vg, k[q]++;
          }
        }
    R->n_pairs += pairs;
    R->dece_seed[s] = pairs ? de / pairs : NAN;
    dacc[s] = pairs ? da / pairs : NAN;
    for (int q = 0; q < CALIB_COUNT; q++) {
      u[(size_t)q * n + s] = k[q] ? su[q] / k[q] : NAN;
      g[(size_t)q * n + s] = k[q] ? sg[q] / k[q] : NAN;
    }
  }
  for (size_t i = 0; i < (size_t)D->n_task * D->n_depth * D->n_regime; i++) R->n_units += unit_seen[i];
  free(unit_seen);
  for (int q = 0; q < CALIB_COUNT; q++) {
    analysis_mean_ci(u + (size_t)q * n, n, ANALYSIS_LEVEL, &R->u[q]);
    analysis_mean_ci(g + (size_t)q * n, n, ANALYSIS_LEVEL, &R->g[q]);
  }
  analysis_mean_ci(R->dece_seed, n, ANALYSIS_LEVEL, &R->dece);
  analysis_mean_ci(dacc, n, ANALYSIS_LEVEL, &R->dacc);
  return CS_OK;
}

/* The comparisons: every gated arch at every (family, gate position) of
 * the classification regimes, when ungated is there too. */
static int analysis_calib_rows(analysis_data *D, analysis_calib *C) {
  int ua = analysis_find_arch(D, ARCH_UNGATED);
  if (ua < 0) return CS_OK;
  CS_CHECK(CS_CALLOC(C->row, (size_t)D->n_arch * D->n_regime + 1));
  double *x;
  CS_CHECK(CS_CALLOC(x, (2 * CALIB_COUNT + 1) * (size_t)(D->n_seed ? D->n_seed : 1)));
  int rc = CS_OK;
  for (int a = 0; a < D->n_arch && !rc; a++) {
    if (!config_arch_gated(D->arch[a])) continue;
    for (int r = 0; r < D->n_regime && !rc; r++) {
      if (!analysis_calib_regime(D, r)) continue;
      int gate = analysis_calib_gate_of(D, r), seen = 0;
      cs_family fam = D->regime[r].cfg.family;
      for (int i = 0; i < C->n_row && !seen; i++)
        seen = C->row[i].a == a && C->row[i].gate == gate && C->row[i].family == fam;
      if (seen) continue;
      analysis_calib_row *R = &C->row[C->n_row];
      *R = (analysis_calib_row){.a = a, .gate = gate, .family = fam};
      snprintf(R->scope, sizeof R->scope, "%s %s%s%s", config_family_name(fam), config_arch_name(D->arch[a]),
               gate >= 0 ? " " : "", gate >= 0 ? config_gate_name((cs_gate_pos)gate) : "");
      rc = analysis_calib_row_fill(D, R, x);
      if (!rc && R->n_pairs > 0) C->n_row++;
      else free(R->dece_seed), R->dece_seed = NULL;
    }
  }
  free(x);
  return rc;
}

int analysis_calibration_compute(analysis_data *D) {
  int n_done = 0, n_measured = 0;
  for (size_t i = 0; i < (size_t)D->n_arch * D->n_task * D->n_depth * D->n_regime * D->n_seed; i++) {
    const cs_cell_result *c = D->cell[i];
    if (!c || config_family_estimation(D->regime[(i / D->n_seed) % D->n_regime].cfg.family)) continue;
    n_done++;
    n_measured += c->cstats.present;
  }
  if (n_done == 0) return CS_OK;
  void **slot = analysis_section_state(D, ANALYSIS_CALIB_NAME);
  analysis_calib *C;
  CS_CHECK(CS_CALLOC(C, 1));
  *slot = C;
  C->n_done = n_done, C->n_measured = n_measured;
  return analysis_calib_rows(D, C);
}

void analysis_calibration_free(analysis_data *D) {
  void **slot = analysis_section_state(D, ANALYSIS_CALIB_NAME);
  analysis_calib *C = slot ? *slot : NULL;
  if (!C) return;
  for (int i = 0; i < C->n_row; i++) free(C->row[i].dece_seed);
  free(C->row), free(C);
  *slot = NULL;
}

/* ---- the checks and verdicts (verdicts.csv) ---- */

int analysis_calibration_checks(analysis_data *D) {
  const analysis_calib *C = analysis_calib_of(D);
  for (int i = 0; C && i < C->n_row; i++) {
    const analysis_calib_row *R = &C->row[i];
    char key[160];
    snprintf(key, sizeof key, "%s|%s", ANALYSIS_CALIB_CLAIM, R->scope);
    analysis_check *c;
    CS_CHECK(analysis_check_add(D, ANALYSIS_CALIB_CLAIM, ANALYSIS_CALIB_CLAIM, 0, &c, "%s", R->scope));
    CS_CHECK(analysis_check_seed(D, c, R->dece_seed, D->n_seed, ANALYSIS_TWO_SIDED, key));
    c->key = i;
  }
  return CS_OK;
}

/* One verdict row per check, its two-sided reading: supported when gating
 * lowers ECE (ungated − gated > 0, p_adj < α), not supported when it
 * raises it significantly, else inconclusive or too few. */
int analysis_calibration_verdicts(analysis_data *D) {
  if (!analysis_calib_of(D)) return CS_OK;
  int n = D->checks.n;
  for (int i = 0; i < n; i++) {
    analysis_check c = D->checks.c[i];
    if (!c.verdict && !strcmp(c.claim, ANALYSIS_CALIB_CLAIM)) CS_CHECK(analysis_verdict_of_check(D, &c));
  }
  return CS_OK;
}

/* ---- calibration.csv ---- */

int analysis_calibration_write_tables(const analysis_data *D, const analysis_outdir *dir) {
  const analysis_calib *C = analysis_calib_of(D);
  if (!C || C->n_row == 0) return CS_OK;
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "calibration.csv"));
  FILE *f = o.f;
  fprintf(f, "arch,gate,family,n_units,n_pairs");
  for (int q = 0; q < CALIB_COUNT; q++) {
    char name[32];
    snprintf(name, sizeof name, "%s_ungated", CALIB_Q_NAME[q]);
    analysis_csv_ci_header(f, name);
    snprintf(name, sizeof name, "%s_gated", CALIB_Q_NAME[q]);
    analysis_csv_ci_header(f, name);
  }
  analysis_csv_ci_header(f, "dece");
  analysis_csv_ci_header(f, "dacc");
  fprintf(f, "\n");
  for (int i = 0; i < C->n_row; i++) {
    const analysis_calib_row *R = &C->row[i];
    fprintf(f, "%s,%s,%s,%d,%d", config_arch_name(D->arch[R->a]),
            R->gate >= 0 ? config_gate_name((cs_gate_pos)R->gate) : "-", config_family_name(R->family),
            R->n_units, R->n_pairs);
    for (int q = 0; q < CALIB_COUNT; q++) analysis_csv_ci(f, &R->u[q]), analysis_csv_ci(f, &R->g[q]);
    analysis_csv_ci(f, &R->dece);
    analysis_csv_ci(f, &R->dacc);
    fprintf(f, "\n");
  }
  return analysis_file_commit(&o);
}

void analysis_calibration_list_tables(FILE *f, const analysis_data *D) {
  const analysis_calib *C = analysis_calib_of(D);
  if (C && C->n_row > 0)
    fprintf(f, "- [calibration.csv](calibration.csv): per (gated arch, gate, family): test ECE, NLL, Brier "
               "score, accuracy and attention entropy of ungated and the arch over seeds, the ECE and "
               "accuracy differences paired by seed\n");
}

/* ---- index.md ---- */

static const char *analysis_calib_word(analysis_decision r) {
  return r == ANALYSIS_SUPPORTED ? "gating lowered the ECE" : r == ANALYSIS_NOT_SUPPORTED ? "gating raised the ECE"
         : r == ANALYSIS_TOO_FEW ? "too few seeds" : "no significant difference";
}

int analysis_calibration_write_md(FILE *f, const analysis_data *D) {
  const analysis_calib *C = analysis_calib_of(D);
  if (!C) return CS_OK;
  fprintf(f, "## Does gating lower the calibration error?\n\n");
  if (C->n_measured == 0) {
    fprintf(f, "The archives store no calibration: none of their %d done cells has a /cellstats row "
               "(format_version 5 or older, or merged from one; docs/ARCHIVE.md, \"Versions\"). Test "
               "NLL, Brier score, ECE, attention entropy and loss spikes are not stored; run the sweep "
               "with this curvsweep to measure them.\n\n", C->n_done);
    return CS_OK;
  }
  fprintf(f, "The trained model's predictions on the test split (docs/MODELS.md, \"Calibration\"): the "
             "expected calibration error over 15 equal-width confidence bins (ECE), the mean negative "
             "log-likelihood (NLL) and the Brier score, beside the test accuracy and the attention "
             "entropy (mean over blocks of a query's entropy over its keys / log(keys): lower is "
             "sharper). Each gated arch against ungated, paired by seed within each (task, depth, "
             "regime) of the same family and gate position; per seed the mean over those units. "
             "Verdict: gating lowers the ECE (ungated − gated per seed, two-sided sign-flip test, Holm "
             "within the comparisons, α = %g), with the accuracy difference gated − ungated beside it: "
             "a calibration gain bought with accuracy is not the blog's claim. Means over seeds with "
             "95%% t intervals ([calibration.csv](calibration.csv); per (arch, task, depth, regime) in "
             "summary.csv and gap.csv).\n\n", D->opt.alpha);
  if (C->n_measured < C->n_done)
    fprintf(f, "%d of the %d done cells carry no calibration (/cellstats: format_version 5 or older, or "
               "merged from one): they enter no mean or test.\n\n", C->n_done - C->n_measured, C->n_done);
  if (C->n_row == 0) {
    fprintf(f, "No gated arch has done cells paired with ungated ones: no comparison.\n\n");
    return CS_OK;
  }
  fprintf(f, "| comparison | units | pairs | ECE ungated | ECE gated | ECE ungated − gated | accuracy gated − "
             "ungated | NLL ungated → gated | Brier ungated → gated | entropy ungated → gated |\n"
             "|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < C->n_row; i++) {
    const analysis_calib_row *R = &C->row[i];
    char b[4][96];
    fprintf(f, "| %s | %d | %d | %s | %s | %s | %s | %s → %s | %s → %s | %s → %s |\n", R->scope, R->n_units,
            R->n_pairs, analysis_ci_text(b[0], 96, &R->u[CALIB_ECE]), analysis_ci_text(b[1], 96, &R->g[CALIB_ECE]),
            analysis_ci_text(b[2], 96, &R->dece), analysis_ci_text(b[3], 96, &R->dacc), F4(R->u[CALIB_NLL].mean),
            F4(R->g[CALIB_NLL].mean), F4(R->u[CALIB_BRIER].mean), F4(R->g[CALIB_BRIER].mean),
            F4(R->u[CALIB_ENTROPY].mean), F4(R->g[CALIB_ENTROPY].mean));
  }
  fprintf(f, "\nVerdicts:\n\n");
  for (int i = 0; i < C->n_row; i++) {
    const analysis_calib_row *R = &C->row[i];
    const analysis_check *c = analysis_check_keyed(D, ANALYSIS_CALIB_CLAIM, i);
    if (!c) continue;
    char acc[96];
    fprintf(f, "- Gating lowers the ECE, %s: **%s** (ECE ungated − gated per seed: ", R->scope,
            analysis_calib_word(analysis_check_two_sided(D, c)));
    analysis_md_check(f, c);
    fprintf(f, "); accuracy gated − ungated %s.\n", analysis_ci_text(acc, sizeof acc, &R->dacc));
  }
  fprintf(f, "\n");
  return CS_OK;
}

/* ---- its row's claims, tables and columns (sections.h) ---- */

static const analysis_claim_info CALIB_CLAIMS[] = {
    {ANALYSIS_CALIB_CLAIM, "gating lowers the expected calibration error (test ECE), paired by seed",
     "Does gating lower the calibration error"},
    {NULL, NULL, NULL},
};

static const analysis_table_info CALIB_TABLES[] = {
    {"calibration.csv", "gated and ungated cells with /cellstats",
     "per (gated arch, gate, family): test ECE, NLL, Brier, accuracy, attention entropy of ungated "
     "and the arch, ECE and accuracy differences"},
    {NULL, NULL, NULL},
};

static const analysis_column_rule CALIB_COLUMNS[] = {
    {"calibration.csv", "gate", "the gate position g1 … g5, `-` for a family that places no gate"},
    {"calibration.csv", "family", "the model family of the compared cells"},
    {"calibration.csv", "n_units", "(task, depth, regime) units with a pair of done, measured cells"},
    {"calibration.csv", "n_pairs", "(unit, seed) pairs measured"},
    {"calibration.csv", "ece_*", "test expected calibration error, 15 equal-width confidence bins; per seed "
                                 "the mean over the units" ANALYSIS_COLUMN_CI},
    {"calibration.csv", "nll_*", "test mean negative log-likelihood (nats); per seed the mean over the "
                                 "units" ANALYSIS_COLUMN_CI},
    {"calibration.csv", "brier_*", "test Brier score Σ_k (p_k − y_k)²; per seed the mean over the units"
                                   ANALYSIS_COLUMN_CI},
    {"calibration.csv", "acc_*", "test accuracy; per seed the mean over the units" ANALYSIS_COLUMN_CI},
    {"calibration.csv", "entropy_*", "attention entropy / log(keys), mean over blocks; per seed the mean "
                                     "over the units" ANALYSIS_COLUMN_CI},
    {"calibration.csv", "dece_*", "ECE ungated − gated per seed (> 0: gating lowers it)" ANALYSIS_COLUMN_CI},
    {"calibration.csv", "dacc_*", "accuracy gated − ungated per seed" ANALYSIS_COLUMN_CI},
    {NULL, NULL, NULL},
};

const analysis_section_about analysis_calibration_about = {CALIB_CLAIMS, CALIB_TABLES, CALIB_COLUMNS};

/* csv.c — the report's CSV tables from the computed numbers (compute.c):
 * summary.csv, prefix.csv, amplification.csv, gap.csv, each section's own
 * (its row of sections.c) and verdicts.csv. The cells of a row are
 * csv_cells.c's; column meanings: analysis/README.md. */
#include "checks.h"
#include "sections.h"
#include "compute.h"
#include "output.h"
#include "writers.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdio.h>

/* The regime axes as columns, values of the regime's representative cell. */
static void analysis_csv_regime_header(FILE *f, const analysis_data *D) {
  for (int k = 0; k < D->n_other; k++) fprintf(f, ",%s", spec_axis_name(D->spec, D->other_axis[k]));
  fprintf(f, ",regime,skeleton");
}

static void analysis_csv_regime(FILE *f, const analysis_data *D, int r) {
  for (int k = 0; k < D->n_other; k++) {
    char val[128];
    spec_axis_value_text(D->spec, D->other_axis[k], D->regime[r].cell_id, val, sizeof val);
    fprintf(f, ",%s", val);
  }
  fprintf(f, ",%s,%d", D->regime[r].name, D->regime[r].skeleton);
}

/* The key columns of a group row of summary.csv and prefix.csv: arch, task,
 * boundary, depth and the regime columns. */
static void analysis_csv_group_key_header(FILE *f, const analysis_data *D) {
  fprintf(f, "arch,task,boundary,depth");
  analysis_csv_regime_header(f, D);
}

static void analysis_csv_group_key(FILE *f, const analysis_data *D, int a, int t, int d, int r) {
  fprintf(f, "%s,%s,%s,%d", config_arch_name(D->arch[a]), config_task_name(D->task[t]),
          task_boundary(D->task[t]), D->depth[d]);
  analysis_csv_regime(f, D, r);
}

/* The measure columns of a group row of use u (summary.csv, prefix.csv),
 * headers and values from the same walk of the measure table (measures.c):
 * <column>_mean, _ci_low, _ci_high and, in prefix.csv, <column>_max for a
 * measure flagged ANALYSIS_MEASURE_SEED_MAX. m, max: NULL for the header. */
static void analysis_csv_measures(FILE *f, analysis_use u, const analysis_ci *m, const double *max) {
  analysis_measure_id ids[ANALYSIS_N_MEASURES];
  int n = analysis_measures_of(u, ids);
  for (int k = 0; k < n; k++) {
    const analysis_measure *M = &ANALYSIS_MEASURES[ids[k]];
    int with_max = u == ANALYSIS_USE_PREFIX && (M->flags & ANALYSIS_MEASURE_SEED_MAX);
    if (!m) {
      analysis_csv_ci_header(f, M->use[u].column);
      if (with_max) fprintf(f, ",%s_max", M->use[u].column);
      continue;
    }
    analysis_csv_ci(f, &m[ids[k]]);
    if (with_max) analysis_csv_num(f, max[ids[k]]);
  }
}

static void analysis_write_summary(FILE *f, const analysis_data *D) {
  analysis_csv_group_key_header(f, D);
  fprintf(f, ",n_cells,n_seeds,n_failed,n_diverged");
  analysis_csv_measures(f, ANALYSIS_USE_SUMMARY, NULL, NULL);
  fprintf(f, ",unresolved_share\n");
  for (int t = 0; t < D->n_task; t++)
    for (int r = 0; r < D->n_regime; r++)
      for (int a = 0; a < D->n_arch; a++)
        for (int d = 0; d < D->n_depth; d++) {
          const analysis_group *g = &D->group[analysis_gidx(D, a, t, d, r)];
          if (g->n_cells == 0) continue;
          analysis_csv_group_key(f, D, a, t, d, r);
          fprintf(f, ",%d,%d,%d,%d", g->n_cells, g->n_done, g->n_failed, g->n_diverged);
          analysis_csv_measures(f, ANALYSIS_USE_SUMMARY, g->m, NULL);
          analysis_csv_num(f, g->unresolved_share);
          fprintf(f, "\n");
        }
}

static void analysis_write_prefix(FILE *f, const analysis_data *D) {
  analysis_csv_group_key_header(f, D);
  fprintf(f, ",prefix,n_seeds");
  analysis_csv_measures(f, ANALYSIS_USE_PREFIX, NULL, NULL);
  fprintf(f, ",unresolved_share\n");
  for (int t = 0; t < D->n_task; t++)
    for (int r = 0; r < D->n_regime; r++)
      for (int a = 0; a < D->n_arch; a++)
        for (int d = 0; d < D->n_depth; d++) {
          size_t gi = analysis_gidx(D, a, t, d, r);
          if (!D->prefix[gi]) continue;
          for (int l = 1; l <= D->depth[d]; l++) {
            const analysis_prefix *p = &D->prefix[gi][l - 1];
            analysis_csv_group_key(f, D, a, t, d, r);
            fprintf(f, ",%d,%d", l, D->group[gi].n_done);
            analysis_csv_measures(f, ANALYSIS_USE_PREFIX, p->m, p->max);
            analysis_csv_num(f, p->unresolved_share);
            fprintf(f, "\n");
          }
        }
}

static void analysis_write_amp(FILE *f, const analysis_data *D) {
  fprintf(f, "arch,task,boundary,regime,skeleton,n_depths,depth_min,depth_max,n_seeds");
  for (int q = 0; q < AQ_COUNT; q++) {
    const char *n = analysis_amp_q_name(q);
    fprintf(f, ",%s_depth_slope,%s_depth_slope_ci_low,%s_depth_slope_ci_high", n, n, n);
  }
  fprintf(f, ",prefix_depth");
  for (int q = 0; q < AQ_COUNT; q++) {
    const char *n = analysis_amp_q_name(q);
    fprintf(f, ",%s_prefix_slope,%s_prefix_slope_ci_low,%s_prefix_slope_ci_high", n, n, n);
  }
  for (int q = 0; q <= AQ_INTABSK; q++) fprintf(f, ",%s_ratio", analysis_amp_q_name(q));
  for (int q = 0; q <= AQ_INTABSK; q++) fprintf(f, ",%s_prefix_ratio", analysis_amp_q_name(q));
  fprintf(f, ",aniso_shallowest,aniso_deepest,aniso_prefix_first,aniso_prefix_last,Kt_absmean_max");
  for (int pre = 0; pre < 2; pre++)
    fprintf(f, ",dlogKt_%s,dlogKh_%s,daniso_eff_%s", pre ? "prefix" : "depth", pre ? "prefix" : "depth",
            pre ? "prefix" : "depth");
  fprintf(f, "\n");
  for (int t = 0; t < D->n_task; t++)
    for (int r = 0; r < D->n_regime; r++)
      for (int a = 0; a < D->n_arch; a++) {
        const analysis_amp *A = &D->amp[analysis_aidx(D, a, t, r)];
        if (!A->present) continue;
        fprintf(f, "%s,%s,%s,%s,%d,%d,%d,%d,%d", config_arch_name(D->arch[a]),
                config_task_name(D->task[t]), task_boundary(D->task[t]), D->regime[r].name,
                D->regime[r].skeleton, A->n_depths, A->depth_min, A->depth_max, A->n_seeds);
        for (int q = 0; q < AQ_COUNT; q++) analysis_csv_boot(f, &A->depth[q]);
        fprintf(f, ",%d", A->prefix_depth);
        for (int q = 0; q < AQ_COUNT; q++) analysis_csv_boot(f, &A->prefix[q]);
        for (int q = 0; q <= AQ_INTABSK; q++) analysis_csv_num(f, A->ratio[q]);
        for (int q = 0; q <= AQ_INTABSK; q++) analysis_csv_num(f, A->prefix_ratio[q]);
        analysis_csv_num(f, A->first[AQ_ANISO]);
        analysis_csv_num(f, A->last[AQ_ANISO]);
        analysis_csv_num(f, A->prefix_first[AQ_ANISO]);
        analysis_csv_num(f, A->prefix_last[AQ_ANISO]);
        analysis_csv_num(f, A->Kt_max);
        /* the decomposition Δ log K̃ = Δ log K̂ + Δ effective anisotropy (decomposition.c) */
        for (int pre = 0; pre < 2; pre++) {
          analysis_decomp x;
          analysis_amp_decomp(D, a, t, r, pre, &x);
          analysis_csv_num(f, x.n ? x.kt[1] - x.kt[0] : NAN);
          analysis_csv_num(f, x.n ? x.kh[1] - x.kh[0] : NAN);
          analysis_csv_num(f, x.n ? x.an[1] - x.an[0] : NAN);
        }
        fprintf(f, "\n");
      }
}

static void analysis_write_gap(FILE *f, const analysis_data *D) {
  fprintf(f, "comparison,task,boundary,depth,regime,skeleton,n_pairs");
  analysis_measure_id ids[ANALYSIS_N_MEASURES];
  int nm = analysis_measures_of(ANALYSIS_USE_GAP, ids);
  for (int k = 0; k < nm; k++) {
    const char *q = ANALYSIS_MEASURES[ids[k]].use[ANALYSIS_USE_GAP].column;
    fprintf(f, ",d%s_mean,d%s_ci_low,d%s_ci_high,d%s_npos,d%s_nneg,d%s_sign_p,d%s_dz,d%s_dz_low,d%s_dz_high", q,
            q, q, q, q, q, q, q, q);
  }
  fprintf(f, "\n");
  for (int i = 0; i < D->n_gap; i++) {
    const analysis_gap *g = &D->gap[i];
    fprintf(f, "%s-ungated,%s,%s,%d,%s,%d,%d", config_arch_name(D->arch[g->arch]),
            config_task_name(D->task[g->task]), task_boundary(D->task[g->task]), D->depth[g->depth],
            D->regime[g->regime].name, D->regime[g->regime].skeleton, g->n_pairs);
    for (int k = 0; k < nm; k++) analysis_csv_diff(f, &g->d[ids[k]]);
    fprintf(f, "\n");
  }
}

int analysis_write_tables(const analysis_data *D, const analysis_outdir *dir) {
  static const char *names[4] = {"summary.csv", "prefix.csv", "amplification.csv", "gap.csv"};
  void (*writers[4])(FILE *, const analysis_data *) = {analysis_write_summary, analysis_write_prefix,
                                                      analysis_write_amp, analysis_write_gap};
  for (int i = 0; i < 4; i++) {
    analysis_file o;
    CS_CHECK(analysis_file_open(&o, dir, names[i]));
    writers[i](o.f, D);
    CS_CHECK(analysis_file_commit(&o));
  }
  /* each section's tables, only when the sweep has its axis (sections.c) */
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    if (ANALYSIS_SECTIONS[s].write_tables) CS_CHECK(ANALYSIS_SECTIONS[s].write_tables(D, dir));
  return analysis_write_verdicts_table(D, dir); /* verdicts.csv (checks.c) */
}

int analysis_write_verdicts_table(const analysis_data *D, const analysis_outdir *dir) {
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "verdicts.csv"));
  FILE *f = o.f;
  fprintf(f, "claim,scope,test,unit,n,effect,effect_lo,effect_hi,p_raw,p_adj,adjust,decision\n");
  /* per claim: its verdict rows, then its checks, each in the order added */
  for (int rank = 0; rank <= 99; rank++)
    for (int pass = 1; pass >= 0; pass--)
      for (int i = 0; i < D->checks.n; i++) {
        const analysis_check *c = &D->checks.c[i];
        if (analysis_claim_rank(c->claim, NULL) != rank || c->verdict != pass) continue;
        fprintf(f, "%s,%s,%s,%s,%d", c->claim, c->scope, c->test, c->unit, c->n);
        analysis_csv_num(f, c->effect);
        analysis_csv_num(f, c->effect_lo);
        analysis_csv_num(f, c->effect_hi);
        analysis_csv_num(f, c->p_raw);
        analysis_csv_num(f, c->p_adj);
        fprintf(f, ",%s,%s\n", c->adjust, analysis_decision_name(c->decision));
      }
  return analysis_file_commit(&o);
}

/* The core's tables (this file), before the sections' and verdicts.csv. */
static const analysis_table_info CORE_TABLES[] = {
    {"summary.csv", "",
     "per (arch, task, depth, regime): seeds, test accuracy, last-layer curvature (mean |K|, "
     "|K̃|, K̃, ∫K dA, log det g) over seeds"},
    {"prefix.csv", "", "the same curvature statistics after every layer l of every model"},
    {"amplification.csv", "",
     "per (arch, task, regime): slopes of curvature against log depth and log prefix"},
    {"gap.csv", "", "every arch − ungated, paired by seed: accuracy and curvature differences"},
    {NULL, NULL, NULL},
};
static const analysis_table_info VERDICTS_TABLE = {"verdicts.csv", "",
                                                   "every verdict and the test behind it"};

const analysis_table_info *analysis_report_table(int i) {
  for (const analysis_table_info *t = CORE_TABLES; t->file; t++)
    if (i-- == 0) return t;
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    for (const analysis_table_info *t = ANALYSIS_SECTIONS[s].about->tables; t->file; t++)
      if (i-- == 0) return t;
  return i == 0 ? &VERDICTS_TABLE : NULL;
}

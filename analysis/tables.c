/* tables.c — the numbers of the report: per-group means and t intervals over
 * seeds (summary.csv, prefix.csv), amplification slopes with paired
 * bootstrap intervals (amplification.csv), gated − ungated gaps paired by
 * seed with sign tests (gap.csv). Column meanings: analysis/README.md. */
#include "analysis_internal.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { VAL_K = 0, VAL_KT, VAL_KT_SIGNED, VAL_INTK, VAL_LOGDET };

/* The statistic `which` of prefix l (1-based; 0 = the deepest, l = L) of a cell. */
double analysis_cell_value(const cs_cell_result *r, int prefix, int which) {
  if (!r || r->depth < 1 || !r->curv) return NAN;
  int l = prefix > 0 ? prefix : r->depth;
  if (l > r->depth) return NAN;
  const geom_stats *g = &r->curv[l - 1];
  switch (which) {
    case VAL_K: return g->K_absmean;
    case VAL_KT: return g->Kt_absmean;
    case VAL_KT_SIGNED: return g->Kt_mean;
    case VAL_INTK: return g->intK;
    case VAL_LOGDET: return g->logdet_mean;
  }
  return NAN;
}

const char *analysis_fmt(char *buf, size_t len, double v) {
  if (isnan(v))
    snprintf(buf, len, "nan");
  else if (isinf(v))
    snprintf(buf, len, v > 0 ? "inf" : "-inf");
  else
    snprintf(buf, len, "%.15g", v);
  return buf;
}

/* Mean and t interval over the seeds of group (a,t,d,r) of value (prefix, which). */
static void analysis_seed_ci(const analysis_data *D, int a, int t, int d, int r, int prefix,
                             int which, double *scratch, analysis_ci *out) {
  for (int s = 0; s < D->n_seed; s++)
    scratch[s] = analysis_cell_value(D->cell[analysis_cidx(D, a, t, d, r, s)], prefix, which);
  analysis_mean_ci(scratch, D->n_seed, ANALYSIS_LEVEL, out);
}

static int analysis_compute_groups(analysis_data *D, double *scratch) {
  for (int a = 0; a < D->n_arch; a++)
    for (int t = 0; t < D->n_task; t++)
      for (int d = 0; d < D->n_depth; d++)
        for (int r = 0; r < D->n_regime; r++) {
          size_t gi = analysis_gidx(D, a, t, d, r);
          analysis_group *g = &D->group[gi];
          if (g->n_cells == 0) continue;
          for (int s = 0; s < D->n_seed; s++) {
            const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
            scratch[s] = c ? c->test_acc : NAN;
          }
          analysis_mean_ci(scratch, D->n_seed, ANALYSIS_LEVEL, &g->acc);
          analysis_seed_ci(D, a, t, d, r, 0, VAL_K, scratch, &g->K);
          analysis_seed_ci(D, a, t, d, r, 0, VAL_KT, scratch, &g->Kt);
          analysis_seed_ci(D, a, t, d, r, 0, VAL_KT_SIGNED, scratch, &g->Kt_signed);
          analysis_seed_ci(D, a, t, d, r, 0, VAL_INTK, scratch, &g->intK);
          analysis_seed_ci(D, a, t, d, r, 0, VAL_LOGDET, scratch, &g->logdet);
          if (g->n_done == 0) continue;
          int L = D->depth[d];
          if (L < 1) continue;
          CS_CHECK(CS_CALLOC(D->prefix[gi], L));
          for (int l = 1; l <= L; l++) {
            analysis_prefix *p = &D->prefix[gi][l - 1];
            analysis_seed_ci(D, a, t, d, r, l, VAL_K, scratch, &p->K);
            analysis_seed_ci(D, a, t, d, r, l, VAL_KT, scratch, &p->Kt);
            analysis_seed_ci(D, a, t, d, r, l, VAL_KT_SIGNED, scratch, &p->Kt_signed);
            analysis_seed_ci(D, a, t, d, r, l, VAL_LOGDET, scratch, &p->logdet);
            p->Kt_max = NAN;
            for (int s = 0; s < D->n_seed; s++) {
              double v = analysis_cell_value(D->cell[analysis_cidx(D, a, t, d, r, s)], l, VAL_KT);
              if (isfinite(v) && !(v <= p->Kt_max)) p->Kt_max = v;
            }
          }
        }
  return CS_OK;
}

/* Bootstrap of one quantity for one (arch, task, regime): the stream is keyed
 * by the row and quantity names, so every row is reproducible on its own. */
static int analysis_boot_one(const analysis_data *D, int a, int t, int r, const char *what, int G,
                             int S, const double *x, const double *y, int log_y, analysis_boot *out) {
  char key[3 * ANALYSIS_NAME_LEN];
  snprintf(key, sizeof key, "%s|%s|%s|%s", config_arch_name(D->arch[a]),
           config_task_name(D->task[t]), D->regime[r].name, what);
  rng_stream rng = rng_stream_make(D->opt.bootstrap_seed, "analysis:bootstrap", 0, key);
  return analysis_bootstrap_slope(G, S, x, y, log_y, D->opt.bootstrap, ANALYSIS_LEVEL, &rng, out);
}

/* Ratio of the seed means of y at the last and the first group. */
static double analysis_end_ratio(int G, int S, const double *y) {
  double m[2];
  for (int e = 0; e < 2; e++) {
    int g = e ? G - 1 : 0, k = 0;
    double sum = 0;
    for (int s = 0; s < S; s++)
      if (isfinite(y[(size_t)g * S + s])) sum += y[(size_t)g * S + s], k++;
    m[e] = k ? sum / k : NAN;
  }
  return G >= 2 ? m[1] / m[0] : NAN;
}

static int analysis_compute_amp(analysis_data *D) {
  size_t n_rows = (size_t)D->n_arch * D->n_task * D->n_regime;
  CS_CHECK(CS_CALLOC(D->amp, n_rows));
  int maxL = D->depth[D->n_depth - 1] > D->n_depth ? D->depth[D->n_depth - 1] : D->n_depth;
  double *x = NULL, *yK = NULL, *yKt = NULL, *yLd = NULL;
  int *dsel = NULL, *ssel = NULL;
  size_t cap = (size_t)(maxL > 0 ? maxL : 1) * (D->n_seed > 0 ? D->n_seed : 1);
  int rc = CS_CALLOC(x, maxL > 0 ? maxL : 1);
  if (!rc) rc = CS_CALLOC(yK, cap);
  if (!rc) rc = CS_CALLOC(yKt, cap);
  if (!rc) rc = CS_CALLOC(yLd, cap);
  if (!rc) rc = CS_CALLOC(dsel, D->n_depth);
  if (!rc) rc = CS_CALLOC(ssel, D->n_seed);
  for (int a = 0; !rc && a < D->n_arch; a++)
    for (int t = 0; !rc && t < D->n_task; t++)
      for (int r = 0; !rc && r < D->n_regime; r++) {
        analysis_amp *A = &D->amp[analysis_aidx(D, a, t, r)];
        A->Kt_max = NAN;
        int G = 0, S = 0;
        for (int d = 0; d < D->n_depth; d++)
          if (D->group[analysis_gidx(D, a, t, d, r)].n_done > 0) dsel[G++] = d;
        if (G == 0) continue;
        A->present = 1;
        for (int s = 0; s < D->n_seed; s++) {
          int any = 0;
          for (int g = 0; g < G; g++) any |= D->cell[analysis_cidx(D, a, t, dsel[g], r, s)] != NULL;
          if (any) ssel[S++] = s;
        }
        A->n_depths = G;
        A->n_seeds = S;
        A->depth_min = D->depth[dsel[0]];
        A->depth_max = D->depth[dsel[G - 1]];
        for (int g = 0; g < G; g++) {
          int d = dsel[g];
          for (int s = 0; s < D->n_seed; s++) {
            const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
            for (int l = 1; c && l <= c->depth; l++) {
              double v = analysis_cell_value(c, l, VAL_KT);
              if (isfinite(v) && !(v <= A->Kt_max)) A->Kt_max = v;
            }
          }
        }
        /* across depths: the deepest prefix of each model */
        for (int g = 0; g < G; g++) {
          x[g] = D->depth[dsel[g]];
          for (int j = 0; j < S; j++) {
            const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, dsel[g], r, ssel[j])];
            yK[(size_t)g * S + j] = analysis_cell_value(c, 0, VAL_K);
            yKt[(size_t)g * S + j] = analysis_cell_value(c, 0, VAL_KT);
            yLd[(size_t)g * S + j] = analysis_cell_value(c, 0, VAL_LOGDET);
          }
        }
        rc = analysis_boot_one(D, a, t, r, "K|depth", G, S, x, yK, 1, &A->K_depth);
        if (!rc) rc = analysis_boot_one(D, a, t, r, "Kt|depth", G, S, x, yKt, 1, &A->Kt_depth);
        if (!rc) rc = analysis_boot_one(D, a, t, r, "logdet|depth", G, S, x, yLd, 0, &A->logdet_depth);
        A->K_ratio = analysis_end_ratio(G, S, yK);
        A->Kt_ratio = analysis_end_ratio(G, S, yKt);
        if (G < 2) {
          A->K_depth.lo = A->K_depth.hi = A->K_depth.estimate = NAN;
          A->Kt_depth.lo = A->Kt_depth.hi = A->Kt_depth.estimate = NAN;
          A->logdet_depth.lo = A->logdet_depth.hi = A->logdet_depth.estimate = NAN;
        }
        /* across prefixes l = 1..L of the deepest models */
        int dd = dsel[G - 1], L = D->depth[dd];
        A->prefix_depth = L;
        for (int l = 1; l <= L; l++) {
          x[l - 1] = l;
          for (int j = 0; j < S; j++) {
            const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, dd, r, ssel[j])];
            yK[(size_t)(l - 1) * S + j] = analysis_cell_value(c, l, VAL_K);
            yKt[(size_t)(l - 1) * S + j] = analysis_cell_value(c, l, VAL_KT);
            yLd[(size_t)(l - 1) * S + j] = analysis_cell_value(c, l, VAL_LOGDET);
          }
        }
        if (!rc) rc = analysis_boot_one(D, a, t, r, "K|prefix", L, S, x, yK, 1, &A->K_prefix);
        if (!rc) rc = analysis_boot_one(D, a, t, r, "Kt|prefix", L, S, x, yKt, 1, &A->Kt_prefix);
        if (!rc) rc = analysis_boot_one(D, a, t, r, "logdet|prefix", L, S, x, yLd, 0, &A->logdet_prefix);
        A->K_prefix_ratio = analysis_end_ratio(L, S, yK);
        A->Kt_prefix_ratio = analysis_end_ratio(L, S, yKt);
      }
  free(x), free(yK), free(yKt), free(yLd), free(dsel), free(ssel);
  return rc;
}

/* Differences b − a of paired values: mean and t interval, signs, sign test. */
static void analysis_diff_stats(const double *diff, int n, analysis_diff *out) {
  analysis_mean_ci(diff, n, ANALYSIS_LEVEL, &out->ci);
  out->n = out->ci.n;
  out->n_pos = out->n_neg = 0;
  for (int i = 0; i < n; i++) {
    if (!isfinite(diff[i])) continue;
    if (diff[i] > 0) out->n_pos++;
    if (diff[i] < 0) out->n_neg++;
  }
  out->sign_p = analysis_sign_test(out->n_pos, out->n_neg);
}

static int analysis_compute_gaps(analysis_data *D) {
  int u = analysis_find_arch(D, ARCH_UNGATED);
  if (u < 0 || D->n_arch < 2) return CS_OK;
  size_t cap = (size_t)(D->n_arch - 1) * D->n_task * D->n_depth * D->n_regime;
  CS_CHECK(CS_CALLOC(D->gap, cap));
  double *dacc = NULL, *dK = NULL, *dKt = NULL;
  int rc = CS_CALLOC(dacc, D->n_seed);
  if (!rc) rc = CS_CALLOC(dK, D->n_seed);
  if (!rc) rc = CS_CALLOC(dKt, D->n_seed);
  for (int a = 0; !rc && a < D->n_arch; a++) {
    if (a == u) continue;
    for (int t = 0; t < D->n_task; t++)
      for (int r = 0; r < D->n_regime; r++)
        for (int d = 0; d < D->n_depth; d++) {
          int n = 0;
          for (int s = 0; s < D->n_seed; s++) {
            const cs_cell_result *cu = D->cell[analysis_cidx(D, u, t, d, r, s)];
            const cs_cell_result *cg = D->cell[analysis_cidx(D, a, t, d, r, s)];
            if (!cu || !cg) continue;
            dacc[n] = cg->test_acc - cu->test_acc;
            dK[n] = analysis_cell_value(cg, 0, VAL_K) - analysis_cell_value(cu, 0, VAL_K);
            dKt[n] = analysis_cell_value(cg, 0, VAL_KT) - analysis_cell_value(cu, 0, VAL_KT);
            n++;
          }
          if (n == 0) continue;
          analysis_gap *g = &D->gap[D->n_gap++];
          g->arch = a, g->task = t, g->depth = d, g->regime = r, g->n_pairs = n;
          analysis_diff_stats(dacc, n, &g->acc);
          analysis_diff_stats(dK, n, &g->K);
          analysis_diff_stats(dKt, n, &g->Kt);
        }
  }
  free(dacc), free(dK), free(dKt);
  return rc;
}

int analysis_compute(analysis_data *D) {
  double *scratch;
  CS_CHECK(CS_CALLOC(scratch, D->n_seed));
  int rc = analysis_compute_groups(D, scratch);
  free(scratch);
  CS_CHECK(rc);
  CS_CHECK(analysis_compute_amp(D));
  CS_CHECK(analysis_compute_gaps(D));
  return CS_OK;
}

/* ---- CSV output ---- */

static void analysis_csv_num(FILE *f, double v) {
  char buf[64];
  fprintf(f, ",%s", analysis_fmt(buf, sizeof buf, v));
}

static void analysis_csv_ci(FILE *f, const analysis_ci *c) {
  analysis_csv_num(f, c->mean);
  analysis_csv_num(f, c->lo);
  analysis_csv_num(f, c->hi);
}

static void analysis_csv_boot(FILE *f, const analysis_boot *b) {
  analysis_csv_num(f, b->estimate);
  analysis_csv_num(f, b->lo);
  analysis_csv_num(f, b->hi);
}

static void analysis_csv_diff(FILE *f, const analysis_diff *d) {
  analysis_csv_ci(f, &d->ci);
  fprintf(f, ",%d,%d", d->n_pos, d->n_neg);
  analysis_csv_num(f, d->sign_p);
}

static void analysis_csv_ci_header(FILE *f, const char *name) {
  fprintf(f, ",%s_mean,%s_ci_low,%s_ci_high", name, name, name);
}

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

static void analysis_write_summary(FILE *f, const analysis_data *D) {
  fprintf(f, "arch,task,boundary,depth");
  analysis_csv_regime_header(f, D);
  fprintf(f, ",n_cells,n_seeds,n_failed,n_diverged");
  analysis_csv_ci_header(f, "acc");
  analysis_csv_ci_header(f, "K_absmean");
  analysis_csv_ci_header(f, "Kt_absmean");
  analysis_csv_ci_header(f, "Kt_mean");
  analysis_csv_ci_header(f, "intK");
  analysis_csv_ci_header(f, "logdet");
  fprintf(f, "\n");
  for (int t = 0; t < D->n_task; t++)
    for (int r = 0; r < D->n_regime; r++)
      for (int a = 0; a < D->n_arch; a++)
        for (int d = 0; d < D->n_depth; d++) {
          const analysis_group *g = &D->group[analysis_gidx(D, a, t, d, r)];
          if (g->n_cells == 0) continue;
          fprintf(f, "%s,%s,%s,%d", config_arch_name(D->arch[a]), config_task_name(D->task[t]),
                  task_boundary(D->task[t]), D->depth[d]);
          analysis_csv_regime(f, D, r);
          fprintf(f, ",%d,%d,%d,%d", g->n_cells, g->n_done, g->n_failed, g->n_diverged);
          analysis_csv_ci(f, &g->acc);
          analysis_csv_ci(f, &g->K);
          analysis_csv_ci(f, &g->Kt);
          analysis_csv_ci(f, &g->Kt_signed);
          analysis_csv_ci(f, &g->intK);
          analysis_csv_ci(f, &g->logdet);
          fprintf(f, "\n");
        }
}

static void analysis_write_prefix(FILE *f, const analysis_data *D) {
  fprintf(f, "arch,task,boundary,depth");
  analysis_csv_regime_header(f, D);
  fprintf(f, ",prefix,n_seeds");
  analysis_csv_ci_header(f, "K_absmean");
  analysis_csv_ci_header(f, "Kt_absmean");
  fprintf(f, ",Kt_absmean_max");
  analysis_csv_ci_header(f, "Kt_mean");
  analysis_csv_ci_header(f, "logdet");
  fprintf(f, "\n");
  for (int t = 0; t < D->n_task; t++)
    for (int r = 0; r < D->n_regime; r++)
      for (int a = 0; a < D->n_arch; a++)
        for (int d = 0; d < D->n_depth; d++) {
          size_t gi = analysis_gidx(D, a, t, d, r);
          if (!D->prefix[gi]) continue;
          for (int l = 1; l <= D->depth[d]; l++) {
            const analysis_prefix *p = &D->prefix[gi][l - 1];
            fprintf(f, "%s,%s,%s,%d", config_arch_name(D->arch[a]), config_task_name(D->task[t]),
                    task_boundary(D->task[t]), D->depth[d]);
            analysis_csv_regime(f, D, r);
            fprintf(f, ",%d,%d", l, D->group[gi].n_done);
            analysis_csv_ci(f, &p->K);
            analysis_csv_ci(f, &p->Kt);
            analysis_csv_num(f, p->Kt_max);
            analysis_csv_ci(f, &p->Kt_signed);
            analysis_csv_ci(f, &p->logdet);
            fprintf(f, "\n");
          }
        }
}

static void analysis_write_amp(FILE *f, const analysis_data *D) {
  fprintf(f, "arch,task,boundary,regime,skeleton,n_depths,depth_min,depth_max,n_seeds");
  const char *q[3] = {"K", "Kt", "logdet"};
  for (int i = 0; i < 3; i++)
    fprintf(f, ",%s_depth_slope,%s_depth_slope_ci_low,%s_depth_slope_ci_high", q[i], q[i], q[i]);
  fprintf(f, ",prefix_depth");
  for (int i = 0; i < 3; i++)
    fprintf(f, ",%s_prefix_slope,%s_prefix_slope_ci_low,%s_prefix_slope_ci_high", q[i], q[i], q[i]);
  fprintf(f, ",K_ratio,Kt_ratio,K_prefix_ratio,Kt_prefix_ratio,Kt_absmean_max\n");
  for (int t = 0; t < D->n_task; t++)
    for (int r = 0; r < D->n_regime; r++)
      for (int a = 0; a < D->n_arch; a++) {
        const analysis_amp *A = &D->amp[analysis_aidx(D, a, t, r)];
        if (!A->present) continue;
        fprintf(f, "%s,%s,%s,%s,%d,%d,%d,%d,%d", config_arch_name(D->arch[a]),
                config_task_name(D->task[t]), task_boundary(D->task[t]), D->regime[r].name,
                D->regime[r].skeleton, A->n_depths, A->depth_min, A->depth_max, A->n_seeds);
        analysis_csv_boot(f, &A->K_depth);
        analysis_csv_boot(f, &A->Kt_depth);
        analysis_csv_boot(f, &A->logdet_depth);
        fprintf(f, ",%d", A->prefix_depth);
        analysis_csv_boot(f, &A->K_prefix);
        analysis_csv_boot(f, &A->Kt_prefix);
        analysis_csv_boot(f, &A->logdet_prefix);
        analysis_csv_num(f, A->K_ratio);
        analysis_csv_num(f, A->Kt_ratio);
        analysis_csv_num(f, A->K_prefix_ratio);
        analysis_csv_num(f, A->Kt_prefix_ratio);
        analysis_csv_num(f, A->Kt_max);
        fprintf(f, "\n");
      }
}

static void analysis_write_gap(FILE *f, const analysis_data *D) {
  fprintf(f, "comparison,task,boundary,depth,regime,skeleton,n_pairs");
  const char *q[3] = {"dacc", "dK", "dKt"};
  for (int i = 0; i < 3; i++)
    fprintf(f, ",%s_mean,%s_ci_low,%s_ci_high,%s_npos,%s_nneg,%s_sign_p", q[i], q[i], q[i], q[i],
            q[i], q[i]);
  fprintf(f, "\n");
  for (int i = 0; i < D->n_gap; i++) {
    const analysis_gap *g = &D->gap[i];
    fprintf(f, "%s-ungated,%s,%s,%d,%s,%d,%d", config_arch_name(D->arch[g->arch]),
            config_task_name(D->task[g->task]), task_boundary(D->task[g->task]), D->depth[g->depth],
            D->regime[g->regime].name, D->regime[g->regime].skeleton, g->n_pairs);
    analysis_csv_diff(f, &g->acc);
    analysis_csv_diff(f, &g->K);
    analysis_csv_diff(f, &g->Kt);
    fprintf(f, "\n");
  }
}

int analysis_write_tables(const analysis_data *D, const char *dir) {
  static const char *names[4] = {"summary.csv", "prefix.csv", "amplification.csv", "gap.csv"};
  void (*writers[4])(FILE *, const analysis_data *) = {analysis_write_summary, analysis_write_prefix,
                                                        analysis_write_amp, analysis_write_gap};
  for (int i = 0; i < 4; i++) {
    analysis_file o;
    CS_CHECK(analysis_file_open(&o, dir, names[i]));
    writers[i](o.f, D);
    CS_CHECK(analysis_file_commit(&o));
  }
  return CS_OK;
}

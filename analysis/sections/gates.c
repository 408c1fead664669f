/* gates.c — where should the gate sit? (analysis/VERDICTS.md, "Gate
 * positions"). When the sweep has a gate axis, per (task, depth, regime
 * without gate, arch) every gate position's test accuracy, mean |K̂|, mean
 * |K̃| and attention-sink statistic (sink_mass, max_attn) at the last layer
 * over seeds, its ranks among the positions, and its differences, paired by
 * seed, against ungated at the same regime and against the same arch at g1
 * (t intervals and sign tests of compute.c); gates.csv; and the section of
 * index.md with three verdicts from sign tests pooled over the cells:
 * G1 best on accuracy, sink reduced by G1, SDPA-output/value gates (g1, g2)
 * beat query/key gates (g3, g4). The figure is plots_gates.c. */
#include "gates.h"

#include "checks.h"
#include "compute.h"
#include "output.h"
#include "sections.h"
#include "writers.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The section's state, or NULL (no gate axis). */
static analysis_gates *analysis_gates_of(const analysis_data *D) {
  return (analysis_gates *)analysis_section_get(D, ANALYSIS_GATES_NAME);
}

/* The measures of gates.csv in their column order (measures.c): *n of them. */
static const analysis_measure_id *analysis_gate_measures(int *n) {
  static analysis_measure_id ids[ANALYSIS_N_MEASURES];
  *n = analysis_measures_of(ANALYSIS_USE_GATES, ids);
  return ids;
}

/* The measures ranked among an arch's gate positions, as rank_<column>. */
static const analysis_measure_id GATE_RANKED[3] = {MEASURE_ACC, MEASURE_KH_ABS, MEASURE_KT_ABS};

/* A measure's column in gates.csv. */
static const char *analysis_gate_column(analysis_measure_id m) {
  return ANALYSIS_MEASURES[m].use[ANALYSIS_USE_GATES].column;
}

/* ---- units and rows ---- */

static int analysis_gate_group_done(const analysis_data *D, int a, int t, int d, int r) {
  return D->group[analysis_gidx(D, a, t, d, r)].n_done > 0;
}

/* The bases: regimes grouped by their name without the gate, each with its
 * gate values ascending. */
static int analysis_gate_bases(const analysis_data *D, int ax_gate, analysis_gates *G) {
  CS_CHECK(CS_CALLOC(G->base, D->n_regime));
  CS_CHECK(CS_CALLOC(G->plot_t, D->n_regime));
  CS_CHECK(CS_CALLOC(G->plot_r, D->n_regime));
  for (int r = 0; r < D->n_regime; r++) analysis_gate_group_add(D, r, ax_gate, G->base, &G->n_base);
  /* the figure of a base: at the first (task, regime) of plots.c's loop with a done cell */
  for (int b = 0; b < G->n_base; b++) {
    G->plot_t[b] = G->plot_r[b] = -1;
    for (int t = 0; t < D->n_task && G->plot_t[b] < 0; t++)
      for (int r = 0; r < D->n_regime && G->plot_t[b] < 0; r++) {
        int in = 0, any = 0;
        for (int k = 0; k < G->base[b].n_pos; k++) in |= G->base[b].regime[k] == r;
        for (int a = 0; in && a < D->n_arch; a++)
          for (int d = 0; d < D->n_depth; d++) any |= analysis_gate_group_done(D, a, t, d, r);
        if (any) G->plot_t[b] = t, G->plot_r[b] = r;
      }
  }
  return CS_OK;
}

/* The index of gate g in base B, or -1. */
static int analysis_gate_pos(const analysis_gate_base *B, cs_gate_pos g) {
  for (int k = 0; k < B->n_pos; k++)
    if (B->gate[k] == g) return k;
  return -1;
}

/* Paired differences this − other of every quantity over the seeds where
 * both cells are done. */
static int analysis_gate_pairs(const analysis_data *D, int a, int t, int d, int r, int a0, int r0,
                               double *diff, analysis_diff *out) {
  int n = 0, nm;
  const analysis_measure_id *ids = analysis_gate_measures(&nm);
  for (int k = 0; k < nm; k++) {
    n = 0;
    for (int s = 0; s < D->n_seed; s++) {
      const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
      const cs_cell_result *c0 = D->cell[analysis_cidx(D, a0, t, d, r0, s)];
      if (c && c0) diff[n++] = analysis_cell_value(c, 0, ids[k]) - analysis_cell_value(c0, 0, ids[k]);
    }
    analysis_diff_stats(diff, n, &out[ids[k]]);
  }
  return n;
}

/* One row: arch a at regime r of unit u (pos -1: an arch ignoring the gate). */
static void analysis_gate_row_fill(const analysis_data *D, const analysis_gates *G, int u, int a, int pos,
                                   int r, double *scratch, analysis_gate_row *R) {
  const analysis_gate_unit *U = &G->unit[u];
  const analysis_gate_base *B = &G->base[U->base];
  memset(R, 0, sizeof *R);
  R->unit = u, R->a = a, R->pos = pos, R->r = r;
  int nm;
  const analysis_measure_id *ids = analysis_gate_measures(&nm);
  for (int k = 0; k < nm; k++) {
    analysis_measure_id m = ids[k];
    for (int s = 0; s < D->n_seed; s++)
      scratch[s] = analysis_cell_value(D->cell[analysis_cidx(D, a, U->t, U->d, r, s)], 0, m);
    analysis_mean_ci(scratch, D->n_seed, ANALYSIS_LEVEL, &R->q[m]);
    if (ANALYSIS_MEASURES[m].flags & ANALYSIS_MEASURE_CLIP01) analysis_ci_clip01(&R->q[m]);
    analysis_diff_stats(scratch, 0, &R->vs_u[m]);
    analysis_diff_stats(scratch, 0, &R->vs_g1[m]);
  }
  R->rank[0] = R->rank[1] = R->rank[2] = NAN;
  if (pos < 0) return;
  int ua = analysis_find_arch(D, ARCH_UNGATED), k1 = analysis_gate_pos(B, GATE_G1);
  if (ua >= 0) R->n_pairs_u = analysis_gate_pairs(D, a, U->t, U->d, r, ua, r, scratch, R->vs_u);
  if (k1 >= 0 && k1 != pos)
    R->n_pairs_g1 = analysis_gate_pairs(D, a, U->t, U->d, r, a, B->regime[k1], scratch, R->vs_g1);
}

/* Ranks of the rows row0 .. row0+n−1 of one arch: 1 + the rows with a strictly higher mean. */
static void analysis_gate_ranks(analysis_gate_row *rows, int n) {
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < n; i++) {
      analysis_measure_id m = GATE_RANKED[k];
      double v = rows[i].q[m].mean;
      if (!isfinite(v)) continue;
      int above = 0;
      for (int j = 0; j < n; j++) above += isfinite(rows[j].q[m].mean) && rows[j].q[m].mean > v;
      rows[i].rank[k] = 1 + above;
    }
}

/* The units (task, depth, base) with a done cell and their rows. */
static int analysis_gate_units(const analysis_data *D, analysis_gates *G, double *scratch) {
  size_t cap_u = (size_t)D->n_task * D->n_depth * G->n_base;
  size_t cap_r = cap_u * D->n_arch * GATE_COUNT;
  CS_CHECK(CS_CALLOC(G->unit, cap_u));
  CS_CHECK(CS_CALLOC(G->row, cap_r));
  for (int t = 0; t < D->n_task; t++)
    for (int d = 0; d < D->n_depth; d++)
      for (int b = 0; b < G->n_base; b++) {
        const analysis_gate_base *B = &G->base[b];
        analysis_gate_unit *U = &G->unit[G->n_unit]; /* kept only with a done cell */
        memset(U, 0, sizeof *U);
        U->t = t, U->d = d, U->base = b, U->row0 = G->n_row;
        for (int s = 0; s < D->n_seed; s++) {
          int any = 0;
          for (int a = 0; a < D->n_arch && !any; a++)
            for (int k = 0; k < B->n_pos && !any; k++)
              any = D->cell[analysis_cidx(D, a, t, d, B->regime[k], s)] != NULL;
          U->n_seeds += any;
        }
        if (U->n_seeds == 0) continue;
        int u = G->n_unit++;
        for (int a = 0; a < D->n_arch; a++) {
          int first = G->n_row;
          for (int k = 0; k < B->n_pos; k++) {
            if (!analysis_gate_group_done(D, a, t, d, B->regime[k])) continue;
            int pos = config_arch_gated(D->arch[a]) ? k : -1;
            analysis_gate_row_fill(D, G, u, a, pos, B->regime[k], scratch, &G->row[G->n_row++]);
            if (pos < 0) break; /* the gate is ignored: one row */
          }
          if (config_arch_gated(D->arch[a])) analysis_gate_ranks(&G->row[first], G->n_row - first);
        }
        U->n_rows = G->n_row - U->row0;
      }
  return CS_OK;
}

/* ---- the pooled tests of the verdicts ---- */

/* Add the pair (x_a, x_b), difference x_a − x_b, to a pooled test. */
static void analysis_gate_test_add(analysis_gate_test *T, double xa, double xb) {
  if (!isfinite(xa) || !isfinite(xb)) return;
  T->mean_a += xa, T->mean_b += xb;
  T->n++;
  T->n_pos += xa > xb;
  T->n_neg += xa < xb;
}

static void analysis_gate_test_end(analysis_gate_test *T) {
  T->mean_a = T->n ? T->mean_a / T->n : NAN;
  T->mean_b = T->n ? T->mean_b / T->n : NAN;
  T->p = analysis_sign_test(T->n_pos, T->n_neg);
}

/* The accuracy of arch a at gate g in unit U, seed s (NaN: no such cell). */
static double analysis_gate_acc(const analysis_data *D, const analysis_gates *G,
                                const analysis_gate_unit *U, int a, cs_gate_pos g, int s) {
  int k = analysis_gate_pos(&G->base[U->base], g);
  if (k < 0) return NAN;
  return analysis_cell_value(D->cell[analysis_cidx(D, a, U->t, U->d, G->base[U->base].regime[k], s)], 0,
                             MEASURE_ACC);
}

/* Pairs pooled over the self-family units, the gated archs and the seeds. */
static void analysis_gate_tests(const analysis_data *D, analysis_gates *G) {
  int ua = analysis_find_arch(D, ARCH_UNGATED);
  memset(G->g1_vs, 0, sizeof G->g1_vs);
  memset(G->sink, 0, sizeof G->sink);
  memset(&G->ov_qk, 0, sizeof G->ov_qk);
  for (int i = 0; i < G->n_unit; i++) {
    const analysis_gate_unit *U = &G->unit[i];
    const analysis_gate_base *B = &G->base[U->base];
    int k1 = analysis_gate_pos(B, GATE_G1);
    if (!analysis_gates_ranked(B->family)) continue;
    for (int a = 0; a < D->n_arch; a++) {
      if (!config_arch_gated(D->arch[a])) continue;
      for (int s = 0; s < D->n_seed; s++) {
        double acc[GATE_COUNT];
        for (int g = 0; g < GATE_COUNT; g++) acc[g] = analysis_gate_acc(D, G, U, a, (cs_gate_pos)g, s);
        for (int g = GATE_G2; g < GATE_COUNT; g++) analysis_gate_test_add(&G->g1_vs[g], acc[GATE_G1], acc[g]);
        analysis_gate_test_add(&G->ov_qk, 0.5 * (acc[GATE_G1] + acc[GATE_G2]),
                               0.5 * (acc[GATE_G3] + acc[GATE_G4]));
        if (ua >= 0 && k1 >= 0) {
          int r1 = B->regime[k1];
          analysis_gate_test_add(&G->sink[D->arch[a]],
                                 analysis_cell_value(D->cell[analysis_cidx(D, ua, U->t, U->d, r1, s)], 0,
                                                     MEASURE_SINK_MASS),
                                 analysis_cell_value(D->cell[analysis_cidx(D, a, U->t, U->d, r1, s)], 0,
                                                     MEASURE_SINK_MASS));
        }
      }
    }
  }
  for (int g = 0; g < GATE_COUNT; g++) analysis_gate_test_end(&G->g1_vs[g]);
  for (int a = 0; a < ARCH_COUNT; a++) analysis_gate_test_end(&G->sink[a]);
  analysis_gate_test_end(&G->ov_qk);
}

static int analysis_gates_pipeline(analysis_data *D, double *scratch) {
  analysis_gates *G = analysis_gates_of(D);
  int ax_gate = spec_find_axis(D->spec, "gate");
  G->axis_len = spec_axis_length(D->spec, ax_gate);
  CS_CHECK(analysis_gate_bases(D, ax_gate, G));
  CS_CHECK(analysis_gate_units(D, G, scratch));
  for (int i = 0; i < G->n_row; i++) G->has_sink |= G->row[i].q[MEASURE_SINK_MASS].n > 0;
  analysis_gate_tests(D, G);
  return CS_OK;
}

int analysis_gates_compute(analysis_data *D) {
  if (spec_find_axis(D->spec, "gate") < 0) return CS_OK;
  analysis_gates *G;
  CS_CHECK(CS_CALLOC(G, 1));
  *analysis_section_state(D, ANALYSIS_GATES_NAME) = G;
  return analysis_with_seed_scratch(D, analysis_gates_pipeline);
}

void analysis_gates_free(analysis_data *D) {
  void **slot = analysis_section_state(D, ANALYSIS_GATES_NAME);
  analysis_gates *G = slot ? *slot : NULL;
  if (!G) return;
  free(G->base), free(G->plot_t), free(G->plot_r), free(G->unit), free(G->row), free(G);
  *slot = NULL;
}

/* ---- the checks and verdicts (verdicts.csv) ---- */

/* Per seed s, the mean over the self-family units and the gated archs of
 * the difference `which` (0: acc(g1) − acc(q); 1: sink(ungated at g1) −
 * sink(arch q at g1), arch = q; 2: mean acc(g1, g2) − mean acc(g3, g4)). */
static void analysis_gate_seed_values(const analysis_data *D, const analysis_gates *G, int which, int q,
                                      double *v) {
  int ua = analysis_find_arch(D, ARCH_UNGATED);
  for (int s = 0; s < D->n_seed; s++) {
    double sum = 0;
    int k = 0;
    for (int i = 0; i < G->n_unit; i++) {
      const analysis_gate_unit *U = &G->unit[i];
      const analysis_gate_base *B = &G->base[U->base];
      if (!analysis_gates_ranked(B->family)) continue;
      for (int a = 0; a < D->n_arch; a++) {
        if (!config_arch_gated(D->arch[a]) || (which == 1 && (int)D->arch[a] != q)) continue;
        double x = NAN;
        if (which == 0) {
          x = analysis_gate_acc(D, G, U, a, GATE_G1, s) - analysis_gate_acc(D, G, U, a, (cs_gate_pos)q, s);
        } else if (which == 1) {
          int k1 = analysis_gate_pos(B, GATE_G1);
          if (ua < 0 || k1 < 0) continue;
          int r1 = B->regime[k1];
          x = analysis_cell_value(D->cell[analysis_cidx(D, ua, U->t, U->d, r1, s)], 0, MEASURE_SINK_MASS) -
              analysis_cell_value(D->cell[analysis_cidx(D, a, U->t, U->d, r1, s)], 0, MEASURE_SINK_MASS);
        } else {
          double g[4];
          for (int j = 0; j < 4; j++) g[j] = analysis_gate_acc(D, G, U, a, (cs_gate_pos)(GATE_G1 + j), s);
          x = 0.5 * (g[0] + g[1]) - 0.5 * (g[2] + g[3]);
        }
        if (isfinite(x)) sum += x, k++;
      }
    }
    v[s] = k ? sum / k : NAN;
  }
}

/* One check of claim on the per-seed values v (two-sided: either way can be significant). */
static int analysis_gate_check(analysis_data *D, const char *claim, const char *family, const char *scope,
                               const double *v) {
  int any = 0;
  for (int s = 0; s < D->n_seed; s++) any |= isfinite(v[s]);
  if (!any) return CS_OK;
  analysis_check *c;
  char key[128];
  snprintf(key, sizeof key, "%s|%s", claim, scope);
  CS_CHECK(analysis_check_add(D, claim, family, 0, &c, "%s", scope));
  return analysis_check_seed(D, c, v, D->n_seed, ANALYSIS_TWO_SIDED, key);
}

static int analysis_gate_checks_run(analysis_data *D, double *v) {
  const analysis_gates *G = analysis_gates_of(D);
  int n_self = 0;
  for (int b = 0; b < G->n_base; b++) n_self += analysis_gates_ranked(G->base[b].family);
  if (G->axis_len < 2 || n_self == 0) return CS_OK;
  for (int q = GATE_G2; q < GATE_COUNT; q++) {
    analysis_gate_seed_values(D, G, 0, q, v);
    char scope[32];
    snprintf(scope, sizeof scope, "g1 vs %s", config_gate_name((cs_gate_pos)q));
    CS_CHECK(analysis_gate_check(D, "gate-g1-best", "gate-g1", scope, v));
  }
  if (G->has_sink)
    for (int a = 0; a < D->n_arch; a++) {
      if (!config_arch_gated(D->arch[a])) continue;
      analysis_gate_seed_values(D, G, 1, (int)D->arch[a], v);
      CS_CHECK(analysis_gate_check(D, "gate-sink", "gate-sink", config_arch_name(D->arch[a]), v));
    }
  analysis_gate_seed_values(D, G, 2, 0, v);
  return analysis_gate_check(D, "gate-ov-qk", NULL, "g1 g2 vs g3 g4", v);
}

int analysis_gates_checks(analysis_data *D) {
  return analysis_gates_of(D) ? analysis_with_seed_scratch(D, analysis_gate_checks_run) : CS_OK;
}


/* G1 best: every g1-vs-q check ahead after Holm (supported), some q ahead of
 * g1 after Holm (not supported), else inconclusive; the sink and the (g1,
 * g2)-vs-(g3, g4) verdicts: one per check, read the same way. */
int analysis_gates_verdicts(analysis_data *D) {
  if (!analysis_gates_of(D)) return CS_OK;
  analysis_check *v;
  int n1 = 0, behind = 0, few = 0, ahead = 0;
  for (int i = 0; i < D->checks.n; i++) {
    const analysis_check *c = &D->checks.c[i];
    if (c->verdict || strcmp(c->claim, "gate-g1-best")) continue;
    analysis_decision r = analysis_check_two_sided(D, c);
    n1++, ahead += r == ANALYSIS_SUPPORTED, behind += r == ANALYSIS_NOT_SUPPORTED, few += r == ANALYSIS_TOO_FEW;
  }
  if (n1) {
    CS_CHECK(analysis_verdict_from(D, "gate-g1-best", "gate-g1", NULL, ANALYSIS_ALL, "verdict", &v));
    v->decision = few == n1    ? ANALYSIS_TOO_FEW
                  : ahead == n1 ? ANALYSIS_SUPPORTED
                  : behind      ? ANALYSIS_NOT_SUPPORTED
                                : ANALYSIS_INCONCLUSIVE;
  }
  int n = D->checks.n;
  for (int i = 0; i < n; i++) {
    analysis_check c = D->checks.c[i];
    if (c.verdict || (strcmp(c.claim, "gate-sink") && strcmp(c.claim, "gate-ov-qk"))) continue;
    CS_CHECK(analysis_verdict_of_check(D, &c));
  }
  return CS_OK;
}

/* ---- gates.csv ---- */

static void analysis_gate_key(FILE *f, const analysis_data *D, const analysis_gates *G,
                              const analysis_gate_row *R, int ax_gate) {
  const analysis_gate_unit *U = &G->unit[R->unit];
  const analysis_gate_base *B = &G->base[U->base];
  fprintf(f, "%s,%s,%s,%d", config_arch_name(D->arch[R->a]), config_task_name(D->task[U->t]),
          task_boundary(D->task[U->t]), D->depth[U->d]);
  for (int k = 0; k < D->n_other; k++) {
    if (D->other_axis[k] == ax_gate) continue;
    char val[128];
    spec_axis_value_text(D->spec, D->other_axis[k], B->cell_id, val, sizeof val);
    fprintf(f, ",%s", val);
  }
  fprintf(f, ",%s,%s", B->name, R->pos < 0 ? "-" : config_gate_name(B->gate[R->pos]));
}

int analysis_gates_write_tables(const analysis_data *D, const analysis_outdir *dir) {
  const analysis_gates *G = analysis_gates_of(D);
  if (!G) return CS_OK;
  int ax_gate = spec_find_axis(D->spec, "gate"), ua = analysis_find_arch(D, ARCH_UNGATED);
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "gates.csv"));
  FILE *f = o.f;
  fprintf(f, "arch,task,boundary,depth");
  for (int k = 0; k < D->n_other; k++)
    if (D->other_axis[k] != ax_gate) fprintf(f, ",%s", spec_axis_name(D->spec, D->other_axis[k]));
  fprintf(f, ",regime,gate,n_seeds");
  int nm;
  const analysis_measure_id *ids = analysis_gate_measures(&nm);
  for (int k = 0; k < nm; k++) analysis_csv_ci_header(f, analysis_gate_column(ids[k]));
  for (int k = 0; k < 3; k++) fprintf(f, ",rank_%s", analysis_gate_column(GATE_RANKED[k]));
  for (int k = 0; k < nm; k++)
    if (ANALYSIS_MEASURES[ids[k]].flags & ANALYSIS_MEASURE_ATTENTION)
      fprintf(f, ",ungated_%s", analysis_gate_column(ids[k]));
  const char *vs[2] = {"ungated", "g1"};
  for (int b = 0; b < 2; b++) {
    fprintf(f, ",n_pairs_%s", vs[b]);
    for (int k = 0; k < nm; k++) {
      const char *n = analysis_gate_column(ids[k]);
      fprintf(f, ",d%s_vs_%s_mean,d%s_vs_%s_ci_low,d%s_vs_%s_ci_high,d%s_vs_%s_npos,d%s_vs_%s_nneg,"
                 "d%s_vs_%s_sign_p,d%s_vs_%s_dz,d%s_vs_%s_dz_low,d%s_vs_%s_dz_high",
              n, vs[b], n, vs[b], n, vs[b], n, vs[b], n, vs[b], n, vs[b], n, vs[b], n, vs[b], n, vs[b]);
    }
  }
  fprintf(f, "\n");
  for (int i = 0; i < G->n_row; i++) {
    const analysis_gate_row *R = &G->row[i];
    const analysis_gate_unit *U = &G->unit[R->unit];
    analysis_gate_key(f, D, G, R, ax_gate);
    fprintf(f, ",%d", R->q[MEASURE_ACC].n);
    for (int k = 0; k < nm; k++) analysis_csv_ci(f, &R->q[ids[k]]);
    for (int k = 0; k < 3; k++) analysis_csv_num(f, R->rank[k]);
    /* the ungated value of each attention measure beside: its row in the same unit */
    for (int k = 0; k < nm; k++) {
      if (!(ANALYSIS_MEASURES[ids[k]].flags & ANALYSIS_MEASURE_ATTENTION)) continue;
      double v = NAN;
      for (int j = U->row0; j < U->row0 + U->n_rows; j++)
        if (G->row[j].a == ua) v = G->row[j].q[ids[k]].mean;
      analysis_csv_num(f, v);
    }
    fprintf(f, ",%d", R->n_pairs_u);
    for (int k = 0; k < nm; k++) analysis_csv_diff(f, &R->vs_u[ids[k]]);
    fprintf(f, ",%d", R->n_pairs_g1);
    for (int k = 0; k < nm; k++) analysis_csv_diff(f, &R->vs_g1[ids[k]]);
    fprintf(f, "\n");
  }
  return analysis_file_commit(&o);
}

/* ---- index.md ---- */

void analysis_gates_list_tables(FILE *f, const analysis_data *D) {
  if (analysis_gates_of(D))
    fprintf(f, "- [gates.csv](gates.csv): per (arch, task, depth, regime, gate): accuracy, mean |K̂|, "
               "mean |K̃|, sink_mass, max_attn over seeds, ranks, paired differences against ungated "
               "and g1\n");
}

/* "+0.01 [−0.02, 0.04] (p 0.3)" of a paired difference, "–" without pairs. */
static const char *analysis_gate_diff_text(char *buf, size_t len, const analysis_diff *d) {
  char ci[96];
  if (d->n == 0)
    snprintf(buf, len, "–");
  else
    snprintf(buf, len, "%s, d_z %s (%d+/%d−, p %s)", analysis_ci_text(ci, sizeof ci, &d->ci),
             F4(d->dz.mean), d->n_pos, d->n_neg, F4(d->sign_p));
  return buf;
}

static void analysis_md_gate_table(FILE *f, const analysis_data *D, const analysis_gates *G) {
  fprintf(f, "| task | depth | regime | arch | gate | seeds | accuracy | rank | mean \\|K̂\\| | rank | "
             "mean \\|K̃\\| | rank | sink_mass | max_attn | Δacc vs ungated | Δacc vs g1 |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < G->n_row; i++) {
    const analysis_gate_row *R = &G->row[i];
    const analysis_gate_unit *U = &G->unit[R->unit];
    const analysis_gate_base *B = &G->base[U->base];
    char b1[96], b2[96], b3[128], b4[128];
    fprintf(f, "| %s | %d | `%s` | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
            config_task_name(D->task[U->t]), D->depth[U->d], B->name, config_arch_name(D->arch[R->a]),
            R->pos < 0 ? "–" : config_gate_name(B->gate[R->pos]), R->q[MEASURE_ACC].n,
            analysis_ci_text(b1, sizeof b1, &R->q[MEASURE_ACC]), R->pos < 0 ? "–" : F4(R->rank[0]),
            F4(R->q[MEASURE_KH_ABS].mean), R->pos < 0 ? "–" : F4(R->rank[1]), F4(R->q[MEASURE_KT_ABS].mean),
            R->pos < 0 ? "–" : F4(R->rank[2]), analysis_ci_text(b2, sizeof b2, &R->q[MEASURE_SINK_MASS]),
            F4(R->q[MEASURE_MAX_ATTN].mean), analysis_gate_diff_text(b3, sizeof b3, &R->vs_u[MEASURE_ACC]),
            analysis_gate_diff_text(b4, sizeof b4, &R->vs_g1[MEASURE_ACC]));
  }
  fprintf(f, "\n");
}

/* The word of a two-sided reading, from the numbers. */
static const char *analysis_gate_reading_word(analysis_decision r, const char *ahead, const char *behind) {
  return r == ANALYSIS_SUPPORTED ? ahead : r == ANALYSIS_NOT_SUPPORTED ? behind
         : r == ANALYSIS_TOO_FEW ? "too few seeds" : "no significant difference";
}

static void analysis_md_gate_g1(FILE *f, const analysis_data *D, const analysis_gates *G) {
  const analysis_check *V = analysis_check_find(D, "gate-g1-best", "verdict");
  if (!V) {
    fprintf(f, "- **G1 best on accuracy: no verdict** (no gated cells at g1 and another position, "
               "paired by seed).\n");
    return;
  }
  char b1[96];
  fprintf(f, "- **G1 best on accuracy: %s** (n = %d seeds; every comparison must be significant after "
             "Holm over %d, α = %g) — g1 against",
          analysis_check_decision_text(b1, sizeof b1, V), V->n, V->family_size, D->opt.alpha);
  int any = 0;
  for (int g = GATE_G2; g < GATE_COUNT; g++) {
    char scope[32];
    snprintf(scope, sizeof scope, "g1 vs %s", config_gate_name((cs_gate_pos)g));
    const analysis_check *c = analysis_check_find(D, "gate-g1-best", scope);
    if (!c) continue;
    const analysis_gate_test *T = &G->g1_vs[g];
    fprintf(f, "%s %s (mean %s vs %s; per-seed difference g1 − %s ", any++ ? ";" : "",
            config_gate_name((cs_gate_pos)g), F4(T->mean_a), F4(T->mean_b), config_gate_name((cs_gate_pos)g));
    analysis_md_check(f, c);
    fprintf(f, ": %s)", analysis_gate_reading_word(analysis_check_two_sided(D, c), "g1 ahead", "g1 behind"));
  }
  fprintf(f, ".\n");
}

static void analysis_md_gate_sink(FILE *f, const analysis_data *D, const analysis_gates *G) {
  int any = 0;
  for (int a = 0; a < D->n_arch; a++) {
    cs_arch arch = D->arch[a];
    if (!config_arch_gated(arch)) continue;
    const analysis_gate_test *T = &G->sink[arch];
    const analysis_check *c = analysis_check_find(D, "gate-sink", config_arch_name(arch));
    any++;
    if (!G->has_sink) {
      fprintf(f, "- **attention sink at G1 (%s): no sink statistic** in these archives (the memory family, "
                 "or format_version 2).\n", config_arch_name(arch));
      continue;
    }
    if (!c || T->n == 0) {
      fprintf(f, "- **attention sink at G1 (%s): no verdict** (no ungated and %s cells at g1 paired by "
                 "seed).\n",
              config_arch_name(arch), config_arch_name(arch));
      continue;
    }
    analysis_decision r = analysis_check_two_sided(D, c);
    /* the headline word comes from the test: reduced only when ungated − gated is significantly > 0 */
    fprintf(f, "- **attention sink at G1 (%s): %s → %s, %s** (mean attention mass on token 0 at the "
               "last layer, ungated → %s at g1, means over %d pairs; per-seed difference ungated − %s ",
            config_arch_name(arch), F4(T->mean_a), F4(T->mean_b),
            analysis_gate_reading_word(r, "reduced", "increased"), config_arch_name(arch), T->n,
            config_arch_name(arch));
    analysis_md_check(f, c);
    fprintf(f, ").\n");
  }
  if (!any) fprintf(f, "- **attention sink at G1: no verdict** (no gated arch in the sweep).\n");
}

static void analysis_md_gate_ovqk(FILE *f, const analysis_data *D, const analysis_gates *G) {
  const analysis_gate_test *T = &G->ov_qk;
  const analysis_check *c = analysis_check_find(D, "gate-ov-qk", "g1 g2 vs g3 g4");
  if (!c || T->n == 0) {
    fprintf(f, "- **SDPA-output/value gates (g1, g2) beat query/key gates (g3, g4): no verdict** (no gated "
               "cells at all four of g1, g2, g3, g4 paired by seed).\n");
    return;
  }
  char b1[96];
  analysis_decision r = analysis_check_two_sided(D, c);
  fprintf(f, "- **SDPA-output/value gates (g1, g2) beat query/key gates (g3, g4): %s** (%s) — mean "
             "accuracy of g1 and g2 minus that of g3 and g4, per seed averaged over units and gated "
             "archs (means %s vs %s): ",
          r == ANALYSIS_TOO_FEW ? analysis_check_decision_text(b1, sizeof b1, c) : analysis_decision_name(r),
          analysis_gate_reading_word(r, "g1, g2 ahead", "g3, g4 ahead"), F4(T->mean_a), F4(T->mean_b));
  analysis_md_check(f, c);
  fprintf(f, ".\n");
}

int analysis_gates_write_md(FILE *f, const analysis_data *D) {
  const analysis_gates *G = analysis_gates_of(D);
  if (!G) return CS_OK;
  fprintf(f, "## Where should the gate sit? (gate positions)\n\n");
  fprintf(f, "Per task, depth, regime (without the gate) and arch, each gate position's test accuracy, "
             "mean |K̂| and mean |K̃| at the last layer, mean over seeds with 95%% t interval, ranked "
             "among the arch's positions (1 = highest accuracy, most curved), beside the "
             "attention-sink statistic (sink_mass: mean attention of non-CLS queries on token 0; "
             "max_attn: mean largest weight; last layer) and the ungated row. Δ: differences paired by "
             "seed with t interval, signs and sign test, against ungated and against the same arch at "
             "g1 ([gates.csv](gates.csv) has every quantity's). The verdicts pool the paired "
             "differences of the self-family cells over tasks, depths, regimes, gated archs and seeds "
             "(one value per seed: its mean difference over them; two-sided sign-flip test, Holm "
             "within each verdict, α = %g; rules: analysis/VERDICTS.md, \"Gate positions\").\n\n",
          D->opt.alpha);
  /* the bases by what their family can do (the config family table) */
  int n_ranked = 0, present[FAMILY_COUNT] = {0};
  for (int b = 0; b < G->n_base; b++) {
    n_ranked += analysis_gates_ranked(G->base[b].family);
    if ((int)G->base[b].family >= 0 && G->base[b].family < FAMILY_COUNT) present[G->base[b].family] = 1;
  }
  if (G->axis_len < 2) {
    fprintf(f, "The gate axis has one value: there is nothing to rank and no verdict.\n\n");
    return CS_OK;
  }
  if (n_ranked == 0) {
    const char *ranked = "?"; /* the first family of the table whose positions are ranked */
    for (int k = FAMILY_COUNT - 1; k >= 0; k--)
      if (analysis_gates_ranked((cs_family)k)) ranked = config_family_name((cs_family)k);
    for (int k = 0; k < FAMILY_COUNT; k++) {
      if (!present[k]) continue;
      const cs_family_info *F = config_family_info((cs_family)k);
      if (!F->gate_positions)
        fprintf(f, "The %s family ignores the gate (docs/MODELS.md): every position is the same model, "
                   "so there is nothing to rank and no verdict.\n\n", F->name);
      else if (F->attention_map)
        fprintf(f, "These verdicts are the %s family's, and these archives hold none of its cells. The %s "
                   "family's gate positions are compared with ungated in \"Do gates remove the attention "
                   "sink?\" below.\n\n", ranked, F->name);
    }
    return CS_OK;
  }
  if (D->n_seed < 2)
    fprintf(f, "Only one seed: no intervals, and too few seeds for any verdict.\n\n");
  analysis_md_gate_table(f, D, G);
  fprintf(f, "Verdicts:\n\n");
  analysis_md_gate_g1(f, D, G);
  analysis_md_gate_sink(f, D, G);
  analysis_md_gate_ovqk(f, D, G);
  fprintf(f, "\n");
  return CS_OK;
}

/* ---- its row's claims, tables and columns (sections.h) ---- */

static const analysis_claim_info GATES_CLAIMS[] = {
    {"gate-g1-best", "the gate at g1 (after the attention output) is the best position",
     "Where should the gate sit"},
    {"gate-sink", "gating changes the attention sink", "Where should the gate sit"},
    {"gate-ov-qk", "gates on the values/output beat gates on queries/keys", "Where should the gate sit"},
    {NULL, NULL, NULL},
};

static const analysis_table_info GATES_TABLES[] = {
    {"gates.csv", "a gate axis",
     "per (arch, task, depth, regime, gate): accuracy, curvature, attention sink over seeds, ranks, "
     "paired differences against ungated and g1"},
    {NULL, NULL, NULL},
};

static const analysis_column_rule GATES_COLUMNS[] = {
    /* gates.csv */
    {"gates.csv", "gate", "the gate position g1 … g5, `-` for an arch that ignores it"},
    {"gates.csv", "rank_*", "rank of the row's mean among the gate positions of its arch in the unit "
                            "(1: most accurate / most curved)"},
    {"gates.csv", "ungated_*", "the ungated row's mean in the same unit"},
    {"gates.csv", "n_pairs_*", "seeds with this cell and the baseline's (ungated, or g1)"},
    {"gates.csv", "d*_vs_*", "this row − the baseline (ungated, or the same arch at g1), paired by "
                             "seed, for acc, Kh, Kt, sink_mass, max_attn" ANALYSIS_COLUMN_CI ANALYSIS_COLUMN_SIGNS},
    {NULL, NULL, NULL},
};

const analysis_section_about analysis_gates_about = {GATES_CLAIMS, GATES_TABLES, GATES_COLUMNS};

/* gates.c — where should the gate sit? (analysis/README.md, "Gate
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

#include "compute.h"
#include "output.h"
#include "writers.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const GQ_NAME[GQ_COUNT] = {"acc", "Kh", "Kt", "sink_mass", "max_attn"};

double analysis_gate_value(const cs_cell_result *c, analysis_gate_q q) {
  if (!c) return NAN;
  switch (q) {
    case GQ_ACC: return c->test_acc;
    case GQ_KH: return analysis_cell_value(c, 0, AV_KH_ABS);
    case GQ_KT: return analysis_cell_value(c, 0, AV_KT_ABS);
    case GQ_SINK:
    case GQ_MAXATTN:
      if (c->depth < 1 || !c->curv) return NAN;
      return q == GQ_SINK ? c->curv[c->depth - 1].sink_mass : c->curv[c->depth - 1].max_attn;
    case GQ_COUNT: break;
  }
  return NAN;
}

/* ---- units and rows ---- */

static int analysis_gate_group_done(const analysis_data *D, int a, int t, int d, int r) {
  return D->group[analysis_gidx(D, a, t, d, r)].n_done > 0;
}

/* The bases: regimes grouped by their name without the gate, each with its
 * gate values ascending. */
static int analysis_gate_bases(const analysis_data *D, int ax_gate, analysis_gates *G) {
  CS_CHECK(CS_CALLOC(G->base, D->n_regime));
  for (int r = 0; r < D->n_regime; r++) {
    char name[ANALYSIS_NAME_LEN], tag[ANALYSIS_NAME_LEN];
    analysis_regime_base(D, r, ax_gate, name, sizeof name, tag, sizeof tag);
    int b = 0;
    while (b < G->n_base && strcmp(G->base[b].name, name) != 0) b++;
    analysis_gate_base *B = &G->base[b];
    if (b == G->n_base) {
      G->n_base++;
      snprintf(B->name, sizeof B->name, "%s", name);
      snprintf(B->tag, sizeof B->tag, "%s", tag);
      B->cell_id = D->regime[r].cell_id;
      B->self = D->regime[r].cfg.family == FAMILY_SELF;
      B->plot_t = B->plot_r = -1;
    }
    /* insert by gate value */
    cs_gate_pos g = D->regime[r].cfg.gate;
    int k = B->n_pos;
    while (k > 0 && B->gate[k - 1] > g) {
      B->gate[k] = B->gate[k - 1], B->regime[k] = B->regime[k - 1];
      k--;
    }
    B->gate[k] = g, B->regime[k] = r;
    B->n_pos++;
  }
  /* the figure of a base: at the first (task, regime) of plots.c's loop with a done cell */
  for (int b = 0; b < G->n_base; b++)
    for (int t = 0; t < D->n_task && G->base[b].plot_t < 0; t++)
      for (int r = 0; r < D->n_regime && G->base[b].plot_t < 0; r++) {
        int in = 0, any = 0;
        for (int k = 0; k < G->base[b].n_pos; k++) in |= G->base[b].regime[k] == r;
        for (int a = 0; in && a < D->n_arch; a++)
          for (int d = 0; d < D->n_depth; d++) any |= analysis_gate_group_done(D, a, t, d, r);
        if (any) G->base[b].plot_t = t, G->base[b].plot_r = r;
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
  int n = 0;
  for (int q = 0; q < GQ_COUNT; q++) {
    n = 0;
    for (int s = 0; s < D->n_seed; s++) {
      const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
      const cs_cell_result *c0 = D->cell[analysis_cidx(D, a0, t, d, r0, s)];
      if (c && c0) diff[n++] = analysis_gate_value(c, q) - analysis_gate_value(c0, q);
    }
    analysis_diff_stats(diff, n, &out[q]);
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
  for (int q = 0; q < GQ_COUNT; q++) {
    for (int s = 0; s < D->n_seed; s++)
      scratch[s] = analysis_gate_value(D->cell[analysis_cidx(D, a, U->t, U->d, r, s)], q);
    analysis_mean_ci(scratch, D->n_seed, ANALYSIS_LEVEL, &R->q[q]);
  }
  for (int q = 0; q < GQ_COUNT; q++) {
    analysis_diff_stats(scratch, 0, &R->vs_u[q]);
    analysis_diff_stats(scratch, 0, &R->vs_g1[q]);
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
  static const analysis_gate_q Q[3] = {GQ_ACC, GQ_KH, GQ_KT};
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < n; i++) {
      double v = rows[i].q[Q[k]].mean;
      if (!isfinite(v)) continue;
      int above = 0;
      for (int j = 0; j < n; j++) above += isfinite(rows[j].q[Q[k]].mean) && rows[j].q[Q[k]].mean > v;
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
            int pos = analysis_is_gated(D->arch[a]) ? k : -1;
            analysis_gate_row_fill(D, G, u, a, pos, B->regime[k], scratch, &G->row[G->n_row++]);
            if (pos < 0) break; /* the gate is ignored: one row */
          }
          if (analysis_is_gated(D->arch[a])) analysis_gate_ranks(&G->row[first], G->n_row - first);
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
  return analysis_gate_value(D->cell[analysis_cidx(D, a, U->t, U->d, G->base[U->base].regime[k], s)], GQ_ACC);
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
    if (!B->self) continue;
    for (int a = 0; a < D->n_arch; a++) {
      if (!analysis_is_gated(D->arch[a])) continue;
      for (int s = 0; s < D->n_seed; s++) {
        double acc[GATE_COUNT];
        for (int g = 0; g < GATE_COUNT; g++) acc[g] = analysis_gate_acc(D, G, U, a, (cs_gate_pos)g, s);
        for (int g = GATE_G2; g < GATE_COUNT; g++) analysis_gate_test_add(&G->g1_vs[g], acc[GATE_G1], acc[g]);
        analysis_gate_test_add(&G->ov_qk, 0.5 * (acc[GATE_G1] + acc[GATE_G2]),
                               0.5 * (acc[GATE_G3] + acc[GATE_G4]));
        if (ua >= 0 && k1 >= 0) {
          int r1 = B->regime[k1];
          analysis_gate_test_add(&G->sink[D->arch[a]],
                                 analysis_gate_value(D->cell[analysis_cidx(D, ua, U->t, U->d, r1, s)], GQ_SINK),
                                 analysis_gate_value(D->cell[analysis_cidx(D, a, U->t, U->d, r1, s)], GQ_SINK));
        }
      }
    }
  }
  for (int g = 0; g < GATE_COUNT; g++) analysis_gate_test_end(&G->g1_vs[g]);
  for (int a = 0; a < ARCH_COUNT; a++) analysis_gate_test_end(&G->sink[a]);
  analysis_gate_test_end(&G->ov_qk);
}

static int analysis_gates_pipeline(analysis_data *D, int ax_gate, double *scratch) {
  analysis_gates *G = D->gates;
  G->axis_len = spec_axis_length(D->spec, ax_gate);
  CS_CHECK(analysis_gate_bases(D, ax_gate, G));
  CS_CHECK(analysis_gate_units(D, G, scratch));
  for (int i = 0; i < G->n_row; i++) G->has_sink |= G->row[i].q[GQ_SINK].n > 0;
  analysis_gate_tests(D, G);
  return CS_OK;
}

int analysis_compute_gates(analysis_data *D) {
  int ax_gate = spec_find_axis(D->spec, "gate");
  if (ax_gate < 0) return CS_OK;
  CS_CHECK(CS_CALLOC(D->gates, 1));
  double *scratch;
  CS_CHECK(CS_CALLOC(scratch, D->n_seed > 0 ? D->n_seed : 1));
  int rc = analysis_gates_pipeline(D, ax_gate, scratch);
  free(scratch);
  return rc;
}

void analysis_gates_free(analysis_data *D) {
  if (!D->gates) return;
  free(D->gates->base), free(D->gates->unit), free(D->gates->row);
  free(D->gates);
  D->gates = NULL;
}

/* ---- the verdicts ---- */

/* Pairs below the least a sign test needs, or one seed: the reason there is
 * no verdict, else NULL. */
static const char *analysis_gate_too_few(const analysis_data *D, const analysis_gate_test *T, char *buf,
                                         size_t len) {
  if (D->n_seed < 2) {
    snprintf(buf, len, "only one seed (paired-by-seed comparisons need at least 2)");
    return buf;
  }
  if (T->n < ANALYSIS_GATE_MIN_PAIRS) {
    snprintf(buf, len, "only %d paired difference%s (a sign test needs %d for p < %.2g)", T->n,
             T->n == 1 ? "" : "s", ANALYSIS_GATE_MIN_PAIRS, ANALYSIS_GATE_ALPHA);
    return buf;
  }
  return NULL;
}

/* p of a test, 1 when every difference is zero. */
static double analysis_gate_p(const analysis_gate_test *T) { return isnan(T->p) ? 1.0 : T->p; }

/* "yes": a ahead of b with p < α; "no": b ahead with p < α; else "tie". */
static const char *analysis_gate_word(const analysis_gate_test *T) {
  double p = analysis_gate_p(T);
  if (T->n_pos > T->n_neg && p < ANALYSIS_GATE_ALPHA) return "yes";
  if (T->n_neg > T->n_pos && p < ANALYSIS_GATE_ALPHA) return "no";
  return "tie";
}

/* G1 best on accuracy: yes when g1 is ahead of every other position q with
 * p_q < α (p = max p_q, an intersection-union test); no when some q is
 * ahead of g1 with Bonferroni k·p_q < α (p = the smallest k·p_q); else tie
 * (p = max p_q). NULL with the reason in why when there is no verdict. */
static const char *analysis_gate_g1_rule(const analysis_data *D, const analysis_gates *G, double *p_out,
                                         char *why, size_t len) {
  int k = 0, all_ahead = 1;
  double p_max = 0, p_no = INFINITY;
  for (int g = GATE_G2; g < GATE_COUNT; g++) k += G->g1_vs[g].n > 0;
  *p_out = NAN;
  if (k == 0) {
    snprintf(why, len, "no gated cells at g1 and another position, paired by seed");
    return NULL;
  }
  for (int g = GATE_G2; g < GATE_COUNT; g++) {
    const analysis_gate_test *T = &G->g1_vs[g];
    if (T->n == 0) continue;
    if (analysis_gate_too_few(D, T, why, len)) return NULL;
    double p = analysis_gate_p(T);
    if (p > p_max) p_max = p;
    all_ahead &= T->n_pos > T->n_neg && p < ANALYSIS_GATE_ALPHA;
    if (T->n_neg > T->n_pos && fmin(1.0, k * p) < p_no) p_no = fmin(1.0, k * p);
  }
  if (all_ahead) {
    *p_out = p_max;
    return "yes";
  }
  if (p_no < ANALYSIS_GATE_ALPHA) {
    *p_out = p_no;
    return "no";
  }
  *p_out = p_max;
  return "tie";
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

int analysis_write_gates_table(const analysis_data *D, const char *dir) {
  const analysis_gates *G = D->gates;
  if (!G) return CS_OK;
  int ax_gate = spec_find_axis(D->spec, "gate"), ua = analysis_find_arch(D, ARCH_UNGATED);
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "gates.csv"));
  FILE *f = o.f;
  fprintf(f, "arch,task,boundary,depth");
  for (int k = 0; k < D->n_other; k++)
    if (D->other_axis[k] != ax_gate) fprintf(f, ",%s", spec_axis_name(D->spec, D->other_axis[k]));
  fprintf(f, ",regime,gate,n_seeds");
  for (int q = 0; q < GQ_COUNT; q++) analysis_csv_ci_header(f, GQ_NAME[q]);
  fprintf(f, ",rank_acc,rank_Kh,rank_Kt,ungated_sink_mass,ungated_max_attn");
  const char *vs[2] = {"ungated", "g1"};
  for (int b = 0; b < 2; b++) {
    fprintf(f, ",n_pairs_%s", vs[b]);
    for (int q = 0; q < GQ_COUNT; q++) {
      const char *n = GQ_NAME[q];
      fprintf(f, ",d%s_vs_%s_mean,d%s_vs_%s_ci_low,d%s_vs_%s_ci_high,d%s_vs_%s_npos,d%s_vs_%s_nneg,"
                 "d%s_vs_%s_sign_p",
              n, vs[b], n, vs[b], n, vs[b], n, vs[b], n, vs[b], n, vs[b]);
    }
  }
  fprintf(f, "\n");
  for (int i = 0; i < G->n_row; i++) {
    const analysis_gate_row *R = &G->row[i];
    const analysis_gate_unit *U = &G->unit[R->unit];
    analysis_gate_key(f, D, G, R, ax_gate);
    fprintf(f, ",%d", R->q[GQ_ACC].n);
    for (int q = 0; q < GQ_COUNT; q++) analysis_csv_ci(f, &R->q[q]);
    for (int k = 0; k < 3; k++) analysis_csv_num(f, R->rank[k]);
    /* the ungated value beside: its row in the same unit */
    double us = NAN, um = NAN;
    for (int j = U->row0; j < U->row0 + U->n_rows; j++)
      if (G->row[j].a == ua) us = G->row[j].q[GQ_SINK].mean, um = G->row[j].q[GQ_MAXATTN].mean;
    analysis_csv_num(f, us);
    analysis_csv_num(f, um);
    fprintf(f, ",%d", R->n_pairs_u);
    for (int q = 0; q < GQ_COUNT; q++) analysis_csv_diff(f, &R->vs_u[q]);
    fprintf(f, ",%d", R->n_pairs_g1);
    for (int q = 0; q < GQ_COUNT; q++) analysis_csv_diff(f, &R->vs_g1[q]);
    fprintf(f, "\n");
  }
  return analysis_file_commit(&o);
}

/* ---- index.md ---- */

/* "0.9 [0.85, 0.95]" of an interval, "0.9" with one seed, "–" with none. */
static const char *analysis_gate_ci_text(char *buf, size_t len, const analysis_ci *c) {
  if (c->n == 0)
    snprintf(buf, len, "–");
  else if (isnan(c->lo))
    snprintf(buf, len, "%s", F4(c->mean));
  else
    snprintf(buf, len, "%s [%s, %s]", F4(c->mean), F4(c->lo), F4(c->hi));
  return buf;
}

/* "+0.01 [−0.02, 0.04] (p 0.3)" of a paired difference, "–" without pairs. */
static const char *analysis_gate_diff_text(char *buf, size_t len, const analysis_diff *d) {
  char ci[96];
  if (d->n == 0)
    snprintf(buf, len, "–");
  else
    snprintf(buf, len, "%s (%d+/%d−, p %s)", analysis_gate_ci_text(ci, sizeof ci, &d->ci), d->n_pos,
             d->n_neg, F4(d->sign_p));
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
            R->pos < 0 ? "–" : config_gate_name(B->gate[R->pos]), R->q[GQ_ACC].n,
            analysis_gate_ci_text(b1, sizeof b1, &R->q[GQ_ACC]), R->pos < 0 ? "–" : F4(R->rank[0]),
            F4(R->q[GQ_KH].mean), R->pos < 0 ? "–" : F4(R->rank[1]), F4(R->q[GQ_KT].mean),
            R->pos < 0 ? "–" : F4(R->rank[2]), analysis_gate_ci_text(b2, sizeof b2, &R->q[GQ_SINK]),
            F4(R->q[GQ_MAXATTN].mean), analysis_gate_diff_text(b3, sizeof b3, &R->vs_u[GQ_ACC]),
            analysis_gate_diff_text(b4, sizeof b4, &R->vs_g1[GQ_ACC]));
  }
  fprintf(f, "\n");
}

static void analysis_md_gate_g1(FILE *f, const analysis_data *D, const analysis_gates *G) {
  char why[160];
  double p;
  const char *w = analysis_gate_g1_rule(D, G, &p, why, sizeof why);
  if (!w) {
    fprintf(f, "- **G1 best on accuracy: no verdict** (%s).\n", why);
    return;
  }
  fprintf(f, "- **G1 best on accuracy: %s (p = %s)** — g1 against", w, F4(p));
  int any = 0;
  for (int g = GATE_G2; g < GATE_COUNT; g++) {
    const analysis_gate_test *T = &G->g1_vs[g];
    if (T->n == 0) continue;
    fprintf(f, "%s %s: ahead in %d, behind in %d of %d pairs (mean %s vs %s, p %s)", any++ ? ";" : "",
            config_gate_name((cs_gate_pos)g), T->n_pos, T->n_neg, T->n, F4(T->mean_a), F4(T->mean_b),
            F4(T->p));
  }
  fprintf(f, ".\n");
}

static void analysis_md_gate_sink(FILE *f, const analysis_data *D, const analysis_gates *G) {
  int any = 0;
  char why[160];
  for (int a = 0; a < D->n_arch; a++) {
    cs_arch arch = D->arch[a];
    if (!analysis_is_gated(arch)) continue;
    const analysis_gate_test *T = &G->sink[arch];
    any++;
    if (!G->has_sink) {
      fprintf(f, "- **sink reduced by G1 (%s): no sink statistic** in these archives (the memory family, or "
                 "format_version 2).\n", config_arch_name(arch));
      continue;
    }
    if (T->n == 0) {
      fprintf(f, "- **sink reduced by G1 (%s): no verdict** (no ungated and %s cells at g1 paired by seed).\n",
              config_arch_name(arch), config_arch_name(arch));
      continue;
    }
    const char *few = analysis_gate_too_few(D, T, why, sizeof why);
    const char *w = analysis_gate_word(T);
    fprintf(f, "- **sink reduced by G1: from %s to %s** (%s; mean attention mass on token 0 at the last "
               "layer, ungated → %s at g1 over %d pairs; reduced in %d, increased in %d, p %s: %s).\n",
            F4(T->mean_a), F4(T->mean_b), config_arch_name(arch), config_arch_name(arch), T->n, T->n_pos,
            T->n_neg, F4(T->p),
            few ? why : w[0] == 'y' ? "reduced" : w[0] == 'n' ? "increased" : "no significant change");
  }
  if (!any) fprintf(f, "- **sink reduced by G1: no verdict** (no gated arch in the sweep).\n");
}

static void analysis_md_gate_ovqk(FILE *f, const analysis_data *D, const analysis_gates *G) {
  const analysis_gate_test *T = &G->ov_qk;
  char why[160];
  if (T->n == 0) {
    fprintf(f, "- **SDPA-output/value gates (g1, g2) beat query/key gates (g3, g4): no verdict** (no gated "
               "cells at all four of g1, g2, g3, g4 paired by seed).\n");
    return;
  }
  if (analysis_gate_too_few(D, T, why, sizeof why)) {
    fprintf(f, "- **SDPA-output/value gates (g1, g2) beat query/key gates (g3, g4): no verdict** (%s).\n", why);
    return;
  }
  fprintf(f, "- **SDPA-output/value gates (g1, g2) beat query/key gates (g3, g4): %s (p = %s)** — mean "
             "accuracy of g1 and g2 minus that of g3 and g4, per arch, cell and seed: ahead in %d, behind "
             "in %d of %d (means %s vs %s).\n",
          analysis_gate_word(T), F4(analysis_gate_p(T)), T->n_pos, T->n_neg, T->n, F4(T->mean_a),
          F4(T->mean_b));
}

int analysis_md_gates(FILE *f, const analysis_data *D) {
  const analysis_gates *G = D->gates;
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
             "(two-sided sign test, zero differences dropped, α = %.2g; rules: analysis/README.md, "
             "\"Gate positions\").\n\n",
          ANALYSIS_GATE_ALPHA);
  int n_self = 0;
  for (int b = 0; b < G->n_base; b++) n_self += G->base[b].self;
  if (G->axis_len < 2) {
    fprintf(f, "The gate axis has one value: there is nothing to rank and no verdict.\n\n");
    return CS_OK;
  }
  if (n_self == 0) {
    fprintf(f, "The memory family ignores the gate (docs/MODELS.md): every position is the same model, "
               "so there is nothing to rank and no verdict.\n\n");
    return CS_OK;
  }
  if (D->n_seed < 2)
    fprintf(f, "Only one seed: no intervals, and no verdict (paired-by-seed comparisons need at least "
               "two seeds).\n\n");
  analysis_md_gate_table(f, D, G);
  fprintf(f, "Verdicts:\n\n");
  analysis_md_gate_g1(f, D, G);
  analysis_md_gate_sink(f, D, G);
  analysis_md_gate_ovqk(f, D, G);
  fprintf(f, "\n");
  return CS_OK;
}

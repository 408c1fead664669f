/* sinks.c — do gates remove the attention sink? (analysis/VERDICTS.md,
 * "Attention sinks"). When the archives hold done cells of the lm family:
 * per (task, depth, regime without gate) and per layer, the first-token
 * share (mean over heads and its largest head), the massive activation, the
 * value drain and the residual peak (docs/MODELS.md) of the ungated arch
 * and of every gated (arch, gate position), mean over seeds with t
 * intervals, and each gated row's differences from ungated paired by seed
 * (t interval, signs, sign test, d_z); sinks.csv; the section of index.md
 * with one verdict per (gated arch, gate position) and quantity (share at
 * the strongest layer, log largest massive activation, log largest drain:
 * ungated − gated per seed, mean over units; two-sided sign-flip test, Holm
 * within each quantity; checks.c), and the G1 line against Qiu et al.'s
 * 46.7% → 4.8%: the one hypothesis stated before the data (G1 lowers the
 * share), one-sided, Holm over the gated archs only (claim sink-g1). The
 * profile figure is plots_sinks.c. */
#include "sinks.h"

#include "checks.h"
#include "compute.h"
#include "output.h"
#include "sections.h"

#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The verdict quantities: per cell a measure of sinks.csv at its largest
 * layer (the first-token share at the strongest layer; the largest massive
 * activation and value drain, compared on a log scale), each tested as
 * ungated − gated paired by seed (> 0: the gate lowers it); its claim (and
 * Holm family) and its words in index.md. */
static const struct {
  analysis_measure_id m;
  const char *claim;
  int log;
  const char *what;
} SINK_VERDICTS[] = {
    {MEASURE_SINK_MASS, "sink-share", 0, "first-token share (strongest layer)"},
    {MEASURE_MASSIVE_ACT, "sink-massive", 1, "log massive activation (largest layer)"},
    {MEASURE_VALUE_DRAIN, "sink-drain", 1, "log value drain (largest layer)"},
};
#define SINK_N_VERDICTS (int)(sizeof SINK_VERDICTS / sizeof *SINK_VERDICTS)
/* the primary G1 test (one-sided, its own family) on the first verdict quantity */
#define SINK_G1_CLAIM "sink-g1"

/* The measures of sinks.csv in their column order (measures.c): *n of them. */
static const analysis_measure_id *analysis_sink_measures(int *n) {
  static analysis_measure_id ids[ANALYSIS_N_MEASURES];
  *n = analysis_measures_of(ANALYSIS_USE_SINKS, ids);
  return ids;
}

/* Measure m of a done cell at layer l (0-based; NaN: missing). */
static double analysis_sink_value(const cs_cell_result *c, int l, analysis_measure_id m) {
  return l < 0 ? NAN : analysis_cell_value(c, l + 1, m);
}

/* Verdict quantity v of a done cell: its largest value over layers (NaN: missing). */
static double analysis_sink_verdict_value(const cs_cell_result *c, int v) {
  if (!c) return NAN;
  double best = NAN;
  for (int l = 0; l < c->depth; l++) {
    double x = analysis_sink_value(c, l, SINK_VERDICTS[v].m);
    if (isfinite(x) && !(x <= best)) best = x;
  }
  return SINK_VERDICTS[v].log ? log(best) : best;
}

static analysis_sinks *analysis_sinks_of(const analysis_data *D) {
  return (analysis_sinks *)analysis_section_get(D, ANALYSIS_SINKS_NAME);
}

/* ---- bases, units, rows ---- */

/* 1 when regime r's family is read here: its attention map, gate values and
 * extreme-token statistics run forward on held-out sequences (the config
 * family table). */
static int analysis_sink_regime_lm(const analysis_data *D, int r) {
  return config_family_info(D->regime[r].cfg.family)->attention_map;
}

/* The lm regimes grouped by their name without the gate, gates ascending. */
static int analysis_sink_bases(const analysis_data *D, int ax_gate, analysis_sinks *S) {
  CS_CHECK(CS_CALLOC(S->base, D->n_regime));
  for (int r = 0; r < D->n_regime; r++)
    if (analysis_sink_regime_lm(D, r)) analysis_gate_group_add(D, r, ax_gate, S->base, &S->n_base);
  return CS_OK;
}

const cs_cell_result *analysis_sink_ungated(const analysis_data *D, const analysis_sinks *S, int u,
                                            int s) {
  const analysis_sink_unit *U = &S->unit[u];
  const analysis_sink_base *B = &S->base[U->base];
  int ua = analysis_find_arch(D, ARCH_UNGATED);
  if (ua < 0) return NULL;
  for (int k = 0; k < B->n_pos; k++) {
    const cs_cell_result *c = D->cell[analysis_cidx(D, ua, U->t, U->d, B->regime[k], s)];
    if (c) return c;
  }
  return NULL;
}

/* The cell of row R at seed s. */
static const cs_cell_result *analysis_sink_cell(const analysis_data *D, const analysis_sinks *S,
                                                const analysis_sink_row *R, int s) {
  if (R->pos < 0) return analysis_sink_ungated(D, S, R->unit, s);
  const analysis_sink_unit *U = &S->unit[R->unit];
  return D->cell[analysis_cidx(D, R->a, U->t, U->d, S->base[U->base].regime[R->pos], s)];
}

/* Fill row R (unit, arch and position set): per layer and quantity the
 * mean over seeds and, for a gated row, the differences from ungated. */
static int analysis_sink_row_fill(const analysis_data *D, const analysis_sinks *S, analysis_sink_row *R,
                                  double *x) {
  const analysis_sink_unit *U = &S->unit[R->unit];
  R->L = D->depth[U->d];
  CS_CHECK(CS_CALLOC(R->q, (size_t)R->L * ANALYSIS_N_MEASURES));
  CS_CHECK(CS_CALLOC(R->vs_u, (size_t)R->L * ANALYSIS_N_MEASURES));
  for (int s = 0; s < D->n_seed; s++) {
    const cs_cell_result *c = analysis_sink_cell(D, S, R, s);
    R->n_seeds += c != NULL;
    R->n_measured += c && isfinite(analysis_sink_value(c, 0, MEASURE_MASSIVE_ACT));
    R->n_pairs += c && R->pos >= 0 && analysis_sink_ungated(D, S, R->unit, s);
  }
  int nm;
  const analysis_measure_id *ids = analysis_sink_measures(&nm);
  for (int l = 0; l < R->L; l++)
    for (int j = 0; j < nm; j++) {
      analysis_measure_id k = ids[j];
      for (int s = 0; s < D->n_seed; s++) x[s] = analysis_sink_value(analysis_sink_cell(D, S, R, s), l, k);
      analysis_mean_ci(x, D->n_seed, ANALYSIS_LEVEL, &R->q[analysis_sink_q(l, k)]);
      if (ANALYSIS_MEASURES[k].flags & ANALYSIS_MEASURE_CLIP01) analysis_ci_clip01(&R->q[analysis_sink_q(l, k)]);
      int n = 0;
      for (int s = 0; R->pos >= 0 && s < D->n_seed; s++) {
        const cs_cell_result *c = analysis_sink_cell(D, S, R, s), *u = analysis_sink_ungated(D, S, R->unit, s);
        if (c && u) x[n++] = analysis_sink_value(c, l, k) - analysis_sink_value(u, l, k);
      }
      analysis_diff_stats(x, n, &R->vs_u[analysis_sink_q(l, k)]);
    }
  return CS_OK;
}

/* The units (task, depth, base) with a done lm cell and their rows. */
static int analysis_sink_units(const analysis_data *D, analysis_sinks *S, double *x) {
  size_t cap_u = (size_t)D->n_task * D->n_depth * S->n_base;
  CS_CHECK(CS_CALLOC(S->unit, cap_u ? cap_u : 1));
  CS_CHECK(CS_CALLOC(S->row, cap_u * (1 + (size_t)D->n_arch * GATE_COUNT) + 1));
  int ua = analysis_find_arch(D, ARCH_UNGATED);
  for (int t = 0; t < D->n_task; t++)
    for (int d = 0; d < D->n_depth; d++)
      for (int b = 0; b < S->n_base; b++) {
        const analysis_sink_base *B = &S->base[b];
        int any = 0;
        for (int a = 0; a < D->n_arch; a++)
          for (int k = 0; k < B->n_pos; k++)
            any |= D->group[analysis_gidx(D, a, t, d, B->regime[k])].n_done > 0;
        if (!any) continue;
        int u = S->n_unit++;
        S->unit[u] = (analysis_sink_unit){t, d, b, S->n_row, 0};
        if (ua >= 0) {
          analysis_sink_row *R = &S->row[S->n_row];
          *R = (analysis_sink_row){.unit = u, .a = ua, .pos = -1};
          CS_CHECK(analysis_sink_row_fill(D, S, R, x));
          if (R->n_seeds) S->n_row++;
          else free(R->q), free(R->vs_u);
        }
        for (int a = 0; a < D->n_arch; a++) {
          if (!config_arch_gated(D->arch[a])) continue;
          for (int k = 0; k < B->n_pos; k++) {
            if (D->group[analysis_gidx(D, a, t, d, B->regime[k])].n_done == 0) continue;
            analysis_sink_row *R = &S->row[S->n_row++];
            *R = (analysis_sink_row){.unit = u, .a = a, .pos = k};
            CS_CHECK(analysis_sink_row_fill(D, S, R, x));
          }
        }
        S->unit[u].n_rows = S->n_row - S->unit[u].row0;
      }
  for (int i = 0; i < S->n_row; i++) S->n_cells += S->row[i].n_seeds, S->n_measured += S->row[i].n_measured;
  return CS_OK;
}

/* ---- attention maps, from /params at analyze time ---- */

/* The archive holding result c, its index there (-1: none, in memory). */
static int analysis_sink_path_of(const analysis_data *D, const cs_cell_result *c, int64_t *i) {
  for (int p = 0; p < D->n_paths; p++)
    if (c >= D->results_per_path[p] && c < D->results_per_path[p] + D->n_per_path[p]) {
      *i = c - D->results_per_path[p];
      return p;
    }
  return -1;
}

/* The model of cell c from its trained tensors (each of the model's by
 * name and shape); *M NULL and why set when one is missing. */
static int analysis_sink_model(const analysis_data *D, const cs_cell_result *c, cs_config *cfg, cs_model **M,
                               char *why, size_t len) {
  *M = NULL;
  CS_CHECK(spec_cell_config(D->spec, c->cell_id, cfg));
  cs_model *m;
  CS_CHECK(model_create(cfg, NULL, &m));
  int missing = 0;
  for (int i = 0; i < model_tensor_count(m) && !missing; i++) {
    cs_tensor v;
    model_tensor(m, i, &v, NULL);
    int k = 0;
    while (k < c->n_tensors && strcmp(c->tensors[k].name, v.name)) k++;
    missing = k == c->n_tensors || c->tensors[k].rows != v.rows || c->tensors[k].cols != v.cols;
    if (missing)
      snprintf(why, len, "cell %lld has no stored tensor %s of %d x %d (run with save_params = yes)",
               (long long)c->cell_id, v.name, v.rows, v.cols);
    else
      memcpy(v.v, c->tensors[k].v, sizeof(double) * (size_t)v.rows * v.cols);
  }
  if (missing) model_free(m);
  else *M = m;
  return CS_OK;
}

/* The first ANALYSIS_SINK_MAP_SEQ held-out sequences of config cfg (split
 * eval: those the cell's statistics were measured on). */
static int analysis_sink_eval_seqs(const cs_config *cfg, cs_dataset *ev) {
  memset(ev, 0, sizeof *ev);
  return task_generate_sequences(cfg->task, cfg->vocab, cfg->seq_len, ANALYSIS_SINK_MAP_SEQ, cfg->seed,
                                 SPLIT_EVAL, ev);
}

/* The stored parameters of cell c read into it when it holds none and its
 * archive is on disk: *loaded the result that holds them, D's own (the
 * caller releases them with result_free_tensors), else NULL. */
static int analysis_sink_params(analysis_data *D, const cs_cell_result *c, cs_cell_result **loaded) {
  *loaded = NULL;
  int64_t i;
  int p = analysis_sink_path_of(D, c, &i);
  if (p < 0 || D->borrowed || c->n_tensors > 0) return CS_OK;
  unsigned char *want;
  CS_CHECK(CS_CALLOC(want, D->n_per_path[p]));
  want[i] = 1;
  int rc = archive_read_params_of(D->paths[p], D->results_per_path[p], D->n_per_path[p], want);
  free(want);
  if (rc == CS_OK) *loaded = &D->results_per_path[p][i];
  return rc;
}

/* Map m of cell c: its block of largest share, mean over heads and the
 * held-out sequences (analysis_sink_eval_seqs). */
static int analysis_sink_map_fill(const analysis_data *D, const cs_cell_result *c, analysis_sink_map *m) {
  cs_config cfg;
  cs_model *M;
  CS_CHECK(analysis_sink_model(D, c, &cfg, &M, m->why, sizeof m->why));
  if (!M) return CS_OK;
  m->layer = 0;
  for (int l = 1; l < c->depth; l++)
    if (c->curv[l].sink_mass > c->curv[m->layer].sink_mass) m->layer = l;
  m->share = c->curv[m->layer].sink_mass;
  cs_dataset ev;
  m->T = cfg.seq_len, m->n_seq = ANALYSIS_SINK_MAP_SEQ;
  int rc = analysis_sink_eval_seqs(&cfg, &ev);
  if (!rc) rc = CS_CALLOC(m->map, (size_t)m->T * m->T);
  if (!rc)
    rc = model_attention_map_tokens(M, m->n_seq, &(cs_token_batch){m->T, ev.tokens, ev.scored}, m->layer,
                                    m->map);
  task_dataset_free(&ev);
  model_free(M);
  return rc;
}

/* The cell drawn for arch a: the deepest unit of the first unit's base and task,
 * its g1 row (else its first position; the ungated row for ungated), the
 * lowest seed with a done cell. */
static int analysis_sink_pick(const analysis_data *D, const analysis_sinks *S, int a, analysis_sink_map *m) {
  m->a = a, m->cell_id = -1, m->row = -1;
  int best = -1;
  for (int i = 0; i < S->n_row; i++) {
    const analysis_sink_row *R = &S->row[i];
    const analysis_sink_unit *U = &S->unit[R->unit];
    if (R->a != a || U->base != S->unit[0].base || U->t != S->unit[0].t || !R->n_seeds) continue;
    int g1 = R->pos >= 0 && S->base[U->base].gate[R->pos] == GATE_G1;
    if (best < 0 || U->d > S->unit[S->row[best].unit].d ||
        (U->d == S->unit[S->row[best].unit].d && g1))
      best = i;
  }
  if (best < 0) return 0;
  m->row = best;
  for (int s = 0; s < D->n_seed && m->cell_id < 0; s++) {
    const cs_cell_result *c = analysis_sink_cell(D, S, &S->row[best], s);
    if (c) m->cell_id = c->cell_id, m->seed_index = s;
  }
  return m->cell_id >= 0;
}

static int analysis_sink_maps(analysis_data *D, analysis_sinks *S) {
  static const cs_arch ORDER[] = {ARCH_UNGATED, ARCH_GATED, ARCH_GATED_HEADWISE};
  for (size_t k = 0; k < sizeof ORDER / sizeof *ORDER; k++) {
    int a = analysis_find_arch(D, ORDER[k]);
    analysis_sink_map *m = &S->map[S->n_map];
    memset(m, 0, sizeof *m);
    if (a < 0 || !analysis_sink_pick(D, S, a, m)) continue;
    S->n_map++;
    const cs_cell_result *c = analysis_sink_cell(D, S, &S->row[m->row], m->seed_index);
    cs_cell_result *loaded; /* its /params, that cell only: kept for the figure */
    CS_CHECK(analysis_sink_params(D, c, &loaded));
    CS_CHECK(analysis_sink_map_fill(D, c, m));
  }
  return CS_OK;
}

/* ---- gate magnitudes, from /params at analyze time ---- */

/* The gate means of done gated cell c per layer (model_gate_means_tokens
 * on the held-out sequences) into later and bos; NaN and why set when it
 * has no stored parameters. Parameters read here are released after. */
static int analysis_sink_gate_cell(analysis_data *D, const cs_cell_result *c, double *later, double *bos,
                                   char *why, size_t len) {
  for (int l = 0; l < c->depth; l++) later[l] = bos[l] = NAN;
  cs_cell_result *loaded;
  CS_CHECK(analysis_sink_params(D, c, &loaded));
  cs_config cfg;
  cs_model *M = NULL;
  int rc = analysis_sink_model(D, c, &cfg, &M, why, len);
  if (!rc && M) {
    cs_dataset ev;
    rc = analysis_sink_eval_seqs(&cfg, &ev);
    if (!rc)
      rc = model_gate_means_tokens(M, ANALYSIS_SINK_MAP_SEQ, &(cs_token_batch){cfg.seq_len, ev.tokens, ev.scored},
                                   later, bos);
    task_dataset_free(&ev);
  }
  model_free(M);
  if (loaded) result_free_tensors(loaded);
  return rc;
}

/* Gated row R: per layer the mean gate value at t ≥ 1 and at BOS over seeds
 * (x: 2 · n_seed · L scratch). */
static int analysis_sink_gate_row(analysis_data *D, const analysis_sinks *S, analysis_sink_row *R, double *x) {
  int L = R->L, n = D->n_seed;
  CS_CHECK(CS_CALLOC(R->gate, 2 * (size_t)L));
  double *later = x, *bos = x + (size_t)n * L;
  for (int s = 0; s < n; s++) {
    const cs_cell_result *c = analysis_sink_cell(D, S, R, s);
    char why[sizeof R->gate_why] = "";
    for (int l = 0; l < L; l++) later[s * L + l] = bos[s * L + l] = NAN;
    if (!c || c->depth != L) continue;
    CS_CHECK(analysis_sink_gate_cell(D, c, later + s * L, bos + s * L, why, sizeof why));
    if (isfinite(later[s * L])) R->n_gate++;
    else if (!R->gate_why[0]) snprintf(R->gate_why, sizeof R->gate_why, "%s", why);
  }
  double *col;
  CS_CHECK(CS_CALLOC(col, n ? n : 1));
  for (int l = 0; l < L; l++)
    for (int k = 0; k < 2; k++) {
      for (int s = 0; s < n; s++) col[s] = (k ? bos : later)[s * L + l];
      analysis_mean_ci(col, n, ANALYSIS_LEVEL, &R->gate[2 * l + k]);
      analysis_ci_clip01(&R->gate[2 * l + k]);
    }
  free(col);
  return CS_OK;
}

static int analysis_sink_gates(analysis_data *D, analysis_sinks *S) {
  int Lmax = 0;
  for (int i = 0; i < S->n_row; i++) Lmax = S->row[i].L > Lmax ? S->row[i].L : Lmax;
  double *x;
  CS_CHECK(CS_CALLOC(x, 2 * (size_t)(D->n_seed ? D->n_seed : 1) * (Lmax ? Lmax : 1)));
  int rc = CS_OK;
  for (int i = 0; i < S->n_row && !rc; i++) {
    analysis_sink_row *R = &S->row[i];
    if (R->pos < 0) continue;
    rc = analysis_sink_gate_row(D, S, R, x);
    S->n_gated += R->n_seeds, S->n_gate += R->n_gate;
  }
  free(x);
  return rc;
}

int analysis_sinks_compute(analysis_data *D) {
  int any = 0;
  for (int r = 0; r < D->n_regime && !any; r++) any = analysis_sink_regime_lm(D, r);
  if (!any) return CS_OK;
  void **slot = analysis_section_state(D, ANALYSIS_SINKS_NAME);
  analysis_sinks *S;
  CS_CHECK(CS_CALLOC(S, 1));
  *slot = S;
  double *x;
  CS_CHECK(CS_CALLOC(x, D->n_seed > 0 ? D->n_seed : 1));
  int rc = analysis_sink_bases(D, spec_find_axis(D->spec, "gate"), S);
  if (!rc) rc = analysis_sink_units(D, S, x);
  free(x);
  if (!rc && S->n_unit > 0) rc = analysis_sink_gates(D, S);
  if (!rc && S->n_unit > 0) rc = analysis_sink_maps(D, S);
  if (!rc && S->n_unit == 0) analysis_sinks_free(D); /* no done lm cell: no section */
  return rc;
}

void analysis_sinks_free(analysis_data *D) {
  void **slot = analysis_section_state(D, ANALYSIS_SINKS_NAME);
  analysis_sinks *S = slot ? *slot : NULL;
  if (!S) return;
  for (int i = 0; i < S->n_row; i++) free(S->row[i].q), free(S->row[i].vs_u), free(S->row[i].gate);
  for (int k = 0; k < S->n_map; k++) free(S->map[k].map);
  free(S->base), free(S->unit), free(S->row), free(S);
  *slot = NULL;
}

/* ---- the checks and verdicts (verdicts.csv) ---- */

/* Per seed, the mean over the units of ungated − (arch a at gate g) of
 * verdict quantity v (NaN: no pair at that seed). */
static void analysis_sink_seed_values(const analysis_data *D, const analysis_sinks *S, int a, cs_gate_pos g,
                                      int v, double *out) {
  for (int s = 0; s < D->n_seed; s++) {
    double sum = 0;
    int k = 0;
    for (int i = 0; i < S->n_row; i++) {
      const analysis_sink_row *R = &S->row[i];
      if (R->a != a || R->pos < 0 || S->base[S->unit[R->unit].base].gate[R->pos] != g) continue;
      double x = analysis_sink_verdict_value(analysis_sink_ungated(D, S, R->unit, s), v) -
                 analysis_sink_verdict_value(analysis_sink_cell(D, S, R, s), v);
      if (isfinite(x)) sum += x, k++;
    }
    out[s] = k ? sum / k : NAN;
  }
}

/* One check of claim (its own Holm family) on quantity q of arch a at gate
 * g against ungated, per seed (v: scratch of D->n_seed); none without data. */
static int analysis_sink_check(analysis_data *D, const analysis_sinks *S, const char *claim, int a,
                               cs_gate_pos g, int q, analysis_side side, double *v) {
  analysis_sink_seed_values(D, S, a, g, q, v);
  int any = 0;
  for (int s = 0; s < D->n_seed; s++) any |= isfinite(v[s]);
  if (!any) return CS_OK;
  char scope[64], key[128];
  snprintf(scope, sizeof scope, "%s %s", config_arch_name(D->arch[a]), config_gate_name(g));
  snprintf(key, sizeof key, "%s|%s", claim, scope);
  analysis_check *c;
  CS_CHECK(analysis_check_add(D, claim, claim, 0, &c, "%s", scope));
  return analysis_check_seed(D, c, v, D->n_seed, side, key);
}

static int analysis_sink_checks_run(analysis_data *D, double *v) {
  const analysis_sinks *S = analysis_sinks_of(D);
  for (int q = 0; q < SINK_N_VERDICTS; q++)
    for (int a = 0; a < D->n_arch; a++)
      for (int g = 0; g < GATE_COUNT && config_arch_gated(D->arch[a]); g++)
        CS_CHECK(analysis_sink_check(D, S, SINK_VERDICTS[q].claim, a, (cs_gate_pos)g, q, ANALYSIS_TWO_SIDED, v));
  /* the primary hypothesis, stated before any data (Qiu et al.): G1 lowers
   * the first-token share; one-sided, its own Holm family over the gated
   * archs (analysis/VERDICTS.md, "Attention sinks") */
  for (int a = 0; a < D->n_arch; a++)
    if (config_arch_gated(D->arch[a]))
      CS_CHECK(analysis_sink_check(D, S, SINK_G1_CLAIM, a, GATE_G1, 0, ANALYSIS_GREATER, v));
  return CS_OK;
}

int analysis_sinks_checks(analysis_data *D) {
  return analysis_sinks_of(D) ? analysis_with_seed_scratch(D, analysis_sink_checks_run) : CS_OK;
}

/* One verdict row per check, its two-sided reading (checks.c): supported
 * when the gate lowers the quantity (ungated − gated > 0, p_adj < α), not
 * supported when it raises it significantly, else inconclusive or too few. */
int analysis_sinks_verdicts(analysis_data *D) {
  if (!analysis_sinks_of(D)) return CS_OK;
  int n = D->checks.n;
  for (int i = 0; i < n; i++) {
    analysis_check c = D->checks.c[i];
    int ours = 0;
    for (int q = 0; q < SINK_N_VERDICTS; q++) ours |= !strcmp(c.claim, SINK_VERDICTS[q].claim);
    ours |= !strcmp(c.claim, SINK_G1_CLAIM);
    if (!c.verdict && ours) CS_CHECK(analysis_verdict_of_check(D, &c));
  }
  return CS_OK;
}

/* ---- sinks.csv ---- */

int analysis_sinks_write_tables(const analysis_data *D, const analysis_outdir *dir) {
  const analysis_sinks *S = analysis_sinks_of(D);
  if (!S) return CS_OK;
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "sinks.csv"));
  FILE *f = o.f;
  const analysis_ci none = {.mean = NAN, .lo = NAN, .hi = NAN}; /* the ungated rows' gate columns */
  int nm;
  const analysis_measure_id *ids = analysis_sink_measures(&nm);
  fprintf(f, "arch,task,depth,regime,gate,layer,n_seeds,n_measured,n_pairs,n_gate");
  for (int k = 0; k < nm; k++) analysis_csv_ci_header(f, ANALYSIS_MEASURES[ids[k]].use[ANALYSIS_USE_SINKS].column);
  analysis_csv_ci_header(f, "gatevalue");
  analysis_csv_ci_header(f, "gatebos");
  for (int k = 0; k < nm; k++) {
    const char *n = ANALYSIS_MEASURES[ids[k]].use[ANALYSIS_USE_SINKS].column;
    fprintf(f, ",d%s_mean,d%s_ci_low,d%s_ci_high,d%s_npos,d%s_nneg,d%s_sign_p,d%s_dz,d%s_dz_low,d%s_dz_high",
            n, n, n, n, n, n, n, n, n);
  }
  fprintf(f, "\n");
  for (int i = 0; i < S->n_row; i++) {
    const analysis_sink_row *R = &S->row[i];
    const analysis_sink_unit *U = &S->unit[R->unit];
    const analysis_sink_base *B = &S->base[U->base];
    for (int l = 0; l < R->L; l++) {
      fprintf(f, "%s,%s,%d,%s,%s,%d,%d,%d,%d,%d", config_arch_name(D->arch[R->a]), config_task_name(D->task[U->t]),
              D->depth[U->d], B->name, R->pos < 0 ? "-" : config_gate_name(B->gate[R->pos]), l + 1,
              R->n_seeds, R->n_measured, R->n_pairs, R->n_gate);
      for (int k = 0; k < nm; k++) analysis_csv_ci(f, &R->q[analysis_sink_q(l, ids[k])]);
      for (int k = 0; k < 2; k++) analysis_csv_ci(f, R->gate ? &R->gate[2 * l + k] : &none);
      for (int k = 0; k < nm; k++) analysis_csv_diff(f, &R->vs_u[analysis_sink_q(l, ids[k])]);
      fprintf(f, "\n");
    }
  }
  return analysis_file_commit(&o);
}

/* ---- index.md ---- */

void analysis_sinks_list_tables(FILE *f, const analysis_data *D) {
  if (analysis_sinks_of(D))
    fprintf(f, "- [sinks.csv](sinks.csv): per (arch, task, depth, regime, gate, layer) of the lm family: "
               "first-token share, its largest head, gate value, massive activation, value drain, residual "
               "peak over seeds and their differences from ungated paired by seed\n");
}

static const char *analysis_sink_diff_text(char *buf, size_t len, const analysis_diff *d) {
  char ci[96];
  if (d->n == 0) snprintf(buf, len, "–");
  else snprintf(buf, len, "%s, d_z %s", analysis_ci_text(ci, sizeof ci, &d->ci), F4(d->dz.mean));
  return buf;
}

/* Row R's gate cell at layer l: the mean at t ≥ 1 with its interval, then
 * the mean at BOS; "–" for the ungated row, "n/a" when no cell's were measured. */
static void analysis_sink_gate_text(char *buf, size_t len, const analysis_sink_row *R, int l) {
  char ci[96];
  if (R->pos < 0) snprintf(buf, len, "–");
  else if (R->n_gate == 0) snprintf(buf, len, "n/a");
  else
    snprintf(buf, len, "%s / %s", analysis_ci_text(ci, sizeof ci, &R->gate[2 * l]), F4(R->gate[2 * l + 1].mean));
}

static void analysis_md_sink_table(FILE *f, const analysis_data *D, const analysis_sinks *S) {
  fprintf(f, "| task | depth | regime | arch | gate | layer | seeds | first-token share | largest head | "
             "gate value t ≥ 1 / at BOS | massive activation | value drain | residual peak | Δshare vs ungated | "
             "Δmassive vs ungated | Δdrain vs ungated |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < S->n_row; i++) {
    const analysis_sink_row *R = &S->row[i];
    const analysis_sink_unit *U = &S->unit[R->unit];
    const analysis_sink_base *B = &S->base[U->base];
    char nm[2 * ANALYSIS_NAME_LEN];
    analysis_md_text(B->name, nm, sizeof nm);
    for (int l = 0; l < R->L; l++) {
      const analysis_ci *q = &R->q[analysis_sink_q(l, 0)];
      const analysis_diff *v = &R->vs_u[analysis_sink_q(l, 0)];
      char b[5][96], e[3][128], g[200];
      analysis_sink_gate_text(g, sizeof g, R, l);
      fprintf(f, "| %s | %d | %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
              config_task_name(D->task[U->t]), D->depth[U->d], nm, config_arch_name(D->arch[R->a]),
              R->pos < 0 ? "–" : config_gate_name(B->gate[R->pos]), l + 1, R->n_seeds,
              analysis_ci_text(b[0], 96, &q[MEASURE_SINK_MASS]), F4(q[MEASURE_SINK_HEADMAX].mean), g,
              analysis_ci_text(b[2], 96, &q[MEASURE_MASSIVE_ACT]), analysis_ci_text(b[3], 96, &q[MEASURE_VALUE_DRAIN]),
              F4(q[MEASURE_RESID_PEAK].mean), analysis_sink_diff_text(e[0], 128, &v[MEASURE_SINK_MASS]),
              analysis_sink_diff_text(e[1], 128, &v[MEASURE_MASSIVE_ACT]), analysis_sink_diff_text(e[2], 128, &v[MEASURE_VALUE_DRAIN]));
    }
  }
  fprintf(f, "\n");
}

/* Mean over the pairs of (arch a at g) of verdict quantity v of the ungated
 * and the gated cells, *n the pairs. */
static void analysis_sink_pair_means(const analysis_data *D, const analysis_sinks *S, int a, cs_gate_pos g,
                                     double *mu, double *mg, int *n) {
  *mu = *mg = 0, *n = 0;
  for (int i = 0; i < S->n_row; i++) {
    const analysis_sink_row *R = &S->row[i];
    if (R->a != a || R->pos < 0 || S->base[S->unit[R->unit].base].gate[R->pos] != g) continue;
    for (int s = 0; s < D->n_seed; s++) {
      double u = analysis_sink_verdict_value(analysis_sink_ungated(D, S, R->unit, s), 0);
      double x = analysis_sink_verdict_value(analysis_sink_cell(D, S, R, s), 0);
      if (isfinite(u) && isfinite(x)) *mu += u, *mg += x, (*n)++;
    }
  }
  if (*n) *mu /= *n, *mg /= *n;
}

static const char *analysis_sink_word(analysis_decision r) {
  return r == ANALYSIS_SUPPORTED ? "lowered" : r == ANALYSIS_NOT_SUPPORTED ? "raised"
         : r == ANALYSIS_TOO_FEW ? "too few seeds" : "no significant difference";
}

/* The G1 line: the first-token share ungated → G1 against Qiu et al. */
static void analysis_md_sink_g1(FILE *f, const analysis_data *D, const analysis_sinks *S) {
  int any = 0;
  for (int a = 0; a < D->n_arch; a++) {
    if (!config_arch_gated(D->arch[a])) continue;
    char scope[64];
    snprintf(scope, sizeof scope, "%s g1", config_arch_name(D->arch[a]));
    const analysis_check *c = analysis_check_find(D, SINK_G1_CLAIM, scope);
    if (!c) continue;
    double mu, mg;
    int n;
    analysis_sink_pair_means(D, S, a, GATE_G1, &mu, &mg, &n);
    any++;
    fprintf(f, "- **G1 against Qiu et al. (%s): first-token share %s → %s (%s%% of the ungated share "
               "removed; Qiu et al.: %.1f%% → %.1f%%, %.0f%% removed), %s** (strongest layer, means over %d "
               "pairs; per-seed difference ungated − G1 ",
            config_arch_name(D->arch[a]), F4(mu), F4(mg), mu > 0 ? F4(100 * (1 - mg / mu)) : "n/a",
            100 * ANALYSIS_QIU_UNGATED, 100 * ANALYSIS_QIU_G1, 100 * (1 - ANALYSIS_QIU_G1 / ANALYSIS_QIU_UNGATED),
            analysis_sink_word(analysis_check_two_sided(D, c)), n);
    analysis_md_check(f, c);
    fprintf(f, ").\n");
  }
  if (!any)
    fprintf(f, "- **G1 against Qiu et al. (46.7%% → 4.8%%): no verdict** (no ungated and gated cells at g1 "
               "paired by seed).\n");
}

/* Every other verdict: one line per (quantity, arch, gate). */
static void analysis_md_sink_verdicts(FILE *f, const analysis_data *D) {
  for (int q = 0; q < SINK_N_VERDICTS; q++)
    for (int i = 0; i < D->checks.n; i++) {
      const analysis_check *c = &D->checks.c[i];
      if (c->verdict || strcmp(c->claim, SINK_VERDICTS[q].claim)) continue;
      fprintf(f, "- %s, %s: **%s** (ungated − gated per seed: ", SINK_VERDICTS[q].what, c->scope,
              analysis_sink_word(analysis_check_two_sided(D, c)));
      analysis_md_check(f, c);
      fprintf(f, ")\n");
    }
}

int analysis_sinks_write_md(FILE *f, const analysis_data *D) {
  const analysis_sinks *S = analysis_sinks_of(D);
  if (!S) return CS_OK;
  fprintf(f, "## Do gates remove the attention sink?\n\n");
  fprintf(f, "The lm family's extreme-token statistics per layer (docs/MODELS.md): the first-token share "
             "(mean attention weight on BOS over heads, query positions t ≥ 1 and held-out sequences; "
             "Qiu et al.'s measure) and its largest head; the massive activation (max |h| / median |h| "
             "of the residual stream, Sun et al. 2024); the value drain (‖v_BOS‖ / median ‖v_t‖) and the "
             "residual peak (‖h_BOS‖ / median ‖h_t‖). Means over seeds with 95%% t intervals; Δ: gated − "
             "ungated paired by seed with d_z ([sinks.csv](sinks.csv) has every interval, sign count and "
             "sign test). Verdicts: per gated arch and gate position, ungated − gated per seed (the share "
             "at each cell's strongest layer; the log of the largest massive activation and drain over "
             "layers), mean over tasks, depths and regimes, two-sided sign-flip test, Holm within each "
             "quantity, α = %g. The G1 lines test the one hypothesis stated before the data, Qiu et "
             "al.'s: G1 lowers the first-token share (the same per-seed differences, one-sided "
             "sign-flip test, Holm over the gated archs only; analysis/README.md, \"Attention "
             "sinks\").\n\n",
          D->opt.alpha);
  if (S->n_measured < S->n_cells)
    fprintf(f, "%d of the %d cells in the table below carry no massive activation, value drain or residual peak: their "
               "archives are format_version 4 or older (the first-token share is there), or merged from "
               "one; those values read as missing and enter no mean or test.\n\n",
            S->n_cells - S->n_measured, S->n_cells);
  if (D->n_seed < 2) fprintf(f, "Only one seed: no intervals, and too few seeds for any verdict.\n\n");
  fprintf(f, "Gate value: the mean of the gate σ over its channels (or heads) and %d held-out sequences, at "
             "the positions t ≥ 1 (with its interval over seeds) and at BOS, run forward from each gated "
             "cell's /params. Read each share beside its layer's gate value: behind a nearly closed gate on "
             "the attention's output (g1, g5) the attention pattern hardly reaches the loss, and a g2 gate "
             "nearly closed at BOS empties what attention on BOS brings.\n\n",
          ANALYSIS_SINK_MAP_SEQ);
  if (S->n_gate < S->n_gated) {
    const char *why = "";
    for (int i = 0; i < S->n_row && !*why; i++) why = S->row[i].gate_why;
    fprintf(f, "%d of the %d gated cells have no gate value: %s.\n\n", S->n_gated - S->n_gate, S->n_gated,
            *why ? why : "their parameters could not be read");
  }
  analysis_md_sink_table(f, D, S);
  for (int k = 0; k < S->n_map; k++) {
    const analysis_sink_map *m = &S->map[k];
    if (m->map)
      fprintf(f, "- Attention map (%s): cell %lld, block %d (its largest first-token share, %s), mean over "
                 "heads and %d held-out sequences, from its /params (figure sinks_*).\n",
              config_arch_name(D->arch[m->a]), (long long)m->cell_id, m->layer + 1, F4(m->share), m->n_seq);
    else
      fprintf(f, "- Attention map (%s): none — %s.\n", config_arch_name(D->arch[m->a]), m->why);
  }
  if (S->n_map) fprintf(f, "\n");
  fprintf(f, "Verdicts:\n\n");
  analysis_md_sink_g1(f, D, S);
  analysis_md_sink_verdicts(f, D);
  fprintf(f, "\n");
  return CS_OK;
}

/* ---- its row's claims, tables and columns (sections.h) ---- */

static const analysis_claim_info SINKS_CLAIMS[] = {
    {"sink-g1", "G1 lowers the first-token share, as Qiu et al. (lm; primary, one-sided)",
     "Do gates remove the attention sink"},
    {"sink-share", "the gate lowers the first-token share (lm)", "Do gates remove the attention sink"},
    {"sink-massive", "the gate lowers the massive activation (lm)", "Do gates remove the attention sink"},
    {"sink-drain", "the gate lowers the value drain (lm)", "Do gates remove the attention sink"},
    {NULL, NULL, NULL},
};

static const analysis_table_info SINKS_TABLES[] = {
    {"sinks.csv", "the lm family",
     "per (arch, task, depth, regime, gate, layer): first-token share, gate value, massive activation, "
     "value drain, residual peak over seeds, differences from ungated"},
    {NULL, NULL, NULL},
};

static const analysis_column_rule SINKS_COLUMNS[] = {
    /* sinks.csv (lm family, analysis/sections/sinks.c) */
    {"sinks.csv", "gate", "the gate position g1 … g5, `-` for the ungated row"},
    {"sinks.csv", "layer", "the block l = 1..depth whose output the values describe"},
    {"sinks.csv", "n_measured", "done cells with massive_act, value_drain, resid_peak stored "
                                "(format_version 5)"},
    {"sinks.csv", "n_pairs", "seeds with this cell and the ungated cell (0 on the ungated row)"},
    {"sinks.csv", "n_gate", "done cells whose gate values were measured from their /params (0 on the "
                            "ungated row, and without save_params = yes)"},
    {"sinks.csv", "gatevalue_*", "the mean gate value σ over the gate's channels (or heads), held-out "
                                 "sequences and positions t ≥ 1, from each cell's /params at analyze time "
                                 "(`nan` on the ungated row)" ANALYSIS_COLUMN_CI},
    {"sinks.csv", "gatebos_*", "the same at BOS (t = 0)" ANALYSIS_COLUMN_CI},
    {"sinks.csv", "d*", "this row − ungated, paired by seed, for share, headmax, massive, drain, "
                        "peak (`nan` on the ungated row)" ANALYSIS_COLUMN_CI ANALYSIS_COLUMN_SIGNS},
    {NULL, NULL, NULL},
};

const analysis_section_about analysis_sinks_about = {SINKS_CLAIMS, SINKS_TABLES, SINKS_COLUMNS};

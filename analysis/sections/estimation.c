/* estimation.c — estimation rates (analysis/VERDICTS.md, "Estimation rates"):
 * when the archives hold done teacher–student cells (family mha, task
 * teacher; docs/MODELS.md, "Estimation"), their rows (one per cell, an
 * ungated cell once however many gate values the grid has) are grouped
 * and fitted by estimation_fit.c; this file adds the verdict's
 * preconditions (an exact-H control whose function error falls at the
 * parametric rate, an n grid on which 1/log n is flatter than the bound,
 * four sizes at least, G1/G2 and ungated over-specified groups), its checks
 * (per over-specified group the seeds' own upper-half slopes of the Voronoi
 * error against the polynomial bound, one-sided sign-flip, Holm over all of
 * them; checks.c) and its verdict (every check supported), the tables
 * estimation.csv and estimation_slopes.csv and the section of index.md. The
 * figure is plots_estimation.c. */
#include "estimation.h"

#include "checks.h"
#include "output.h"
#include "sections.h"
#include "writers.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scope prefixes of the two kinds of check. */
#define EST_POLY "polynomial: "
#define EST_SLOW "not polynomial: "

const analysis_estimation *analysis_estimation_of(const analysis_data *D) {
  return analysis_section_get(D, ANALYSIS_ESTIMATION_NAME);
}

/* ---- rows from the loaded table ---- */

/* The regime axes the groups are made of (the others make the units). */
static int analysis_est_group_axis(const char *key, size_t len) {
  static const char *const AXES[] = {"heads", "teacher_heads", "train_points", "gate"};
  for (size_t i = 0; i < sizeof AXES / sizeof *AXES; i++)
    if (strlen(AXES[i]) == len && !strncmp(AXES[i], key, len)) return 1;
  return 0;
}

/* The name of regime r's unit: its "key=value" components but those of
 * the group axes, prefixed by task and depth when the sweep has several. */
static void analysis_est_unit_name(const analysis_data *D, int t, int d, int r, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  if (D->n_task > 1 || D->n_depth > 1)
    used = (size_t)snprintf(buf, len, "task=%s;depth=%d", config_task_name(D->task[t]), D->depth[d]);
  for (const char *c = D->regime[r].name; *c && used + 1 < len;) {
    const char *end = strchr(c, ';'), *eq = strchr(c, '=');
    size_t n = end ? (size_t)(end - c) : strlen(c);
    if (eq && eq < c + n && !analysis_est_group_axis(c, (size_t)(eq - c))) {
      int w = snprintf(buf + used, len - used, "%s%.*s", used ? ";" : "", (int)n, c);
      if (w > 0) used += (size_t)w;
      if (used >= len) used = len - 1;
    }
    c += n + (end != NULL);
  }
  if (!buf[0]) snprintf(buf, len, "all");
}

/* The unit of name `name` among names[0..*n-1], added when new. */
static int analysis_est_unit_of(char (*names)[ANALYSIS_NAME_LEN], int *n, const char *name) {
  int u = 0;
  while (u < *n && strcmp(names[u], name)) u++;
  if (u == *n) snprintf(names[(*n)++], ANALYSIS_NAME_LEN, "%s", name);
  return u;
}

/* Every done estimation cell as a row; *n rows, *n_unit units named in names. */
static int analysis_est_rows(analysis_data *D, analysis_est_row *rows, int *n, char (*names)[ANALYSIS_NAME_LEN],
                             int *n_unit, analysis_estimation_place *at) {
  *n = 0, *n_unit = 0, at->t = at->r = -1;
  for (int a = 0; a < D->n_arch; a++)
    for (int t = 0; t < D->n_task; t++)
      for (int d = 0; d < D->n_depth; d++)
        for (int r = 0; r < D->n_regime; r++)
          for (int s = 0; s < D->n_seed; s++) {
            const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
            if (!c || !c->est.present) continue;
            const cs_config *cfg = &D->regime[r].cfg;
            char name[ANALYSIS_NAME_LEN];
            analysis_est_unit_name(D, t, d, r, name, sizeof name);
            if (at->t < 0 || t < at->t || (t == at->t && r < at->r)) at->t = t, at->r = r;
            rows[(*n)++] = (analysis_est_row){
                .unit = analysis_est_unit_of(names, n_unit, name),
                .arch = D->arch[a],
                .gate = config_arch_gated(D->arch[a]) ? (int)cfg->gate : -1,
                .heads = cfg->heads,
                .teacher_heads = cfg->teacher_heads,
                .n = cfg->train_points,
                .seed = s,
                .err = {c->est.fn_error, c->est.param_error},
                .converged = c->est.converged,
                .misspecified = c->est.misspecified,
            };
          }
  return CS_OK;
}

/* ---- the verdict's preconditions ---- */

/* 1 when over-specified group g enters the verdict: a gated arch with its
 * gate at the SDPA output (g1) or the values (g2), or ungated. */
static int analysis_est_poly_group(const analysis_est_group *g) {
  return g->regime == ER_OVER && config_arch_gated(g->arch) && (g->gate == GATE_G1 || g->gate == GATE_G2);
}
static int analysis_est_slow_group(const analysis_est_group *g) {
  return g->regime == ER_OVER && g->arch == ARCH_UNGATED;
}

/* Append one reason ("; " between reasons) to buf. */
static void analysis_est_reason(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void analysis_est_reason(char *buf, size_t len, const char *fmt, ...) {
  size_t used = strlen(buf);
  if (used + 3 >= len) return;
  if (used) used += (size_t)snprintf(buf + used, len - used, "; ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, len - used, fmt, ap);
  va_end(ap);
}

/* Each exact group's `parametric`: the t interval of its seeds' function-
 * error slopes over the upper half of the n range, where the verdict reads
 * its slopes, reaches [−0.6, −0.4] (analysis/VERDICTS.md, "Estimation rates":
 * why the upper half). */
static void analysis_est_controls(analysis_estimation *E) {
  for (int i = 0; i < E->n_group; i++) {
    analysis_est_group *g = &E->group[i];
    if (g->regime != ER_EXACT) continue;
    const analysis_ci *c = &g->fit[EE_FUNCTION][ANALYSIS_EST_CONTROL_FIT].seed_ci;
    g->parametric = c->n < 2 || !isfinite(c->lo)
                        ? -1
                        : c->lo <= ANALYSIS_EST_PARAMETRIC + ANALYSIS_EST_PARAMETRIC_TOL &&
                              c->hi >= ANALYSIS_EST_PARAMETRIC - ANALYSIS_EST_PARAMETRIC_TOL;
  }
}

/* The exact-H control of verdict group v: its (unit, arch, gate)'s exact
 * groups; the reasons into E's untestable / too_few. */
static void analysis_est_control_of(analysis_estimation *E, const analysis_est_group *v) {
  char name[ANALYSIS_NAME_LEN + 96];
  int k = 0;
  for (int i = 0; i < E->n_group; i++) {
    const analysis_est_group *g = &E->group[i];
    if (g->regime != ER_EXACT || g->unit != v->unit || g->arch != v->arch || g->gate != v->gate) continue;
    k++;
    analysis_est_group_name(name, sizeof name, E, g);
    const analysis_ci *c = &g->fit[EE_FUNCTION][ANALYSIS_EST_CONTROL_FIT].seed_ci;
    if (g->parametric == 0)
      analysis_est_reason(E->untestable, sizeof E->untestable,
                          "the exact-H control %s is not parametric (upper-half function-error slope %s [%s, %s] misses "
                          "[%g, %g]): the optimiser, not the statistics, is being measured",
                          name, F4(c->mean), F4(c->lo), F4(c->hi),
                          ANALYSIS_EST_PARAMETRIC - ANALYSIS_EST_PARAMETRIC_TOL,
                          ANALYSIS_EST_PARAMETRIC + ANALYSIS_EST_PARAMETRIC_TOL);
    else if (g->parametric < 0)
      analysis_est_reason(E->too_few, sizeof E->too_few, "the exact-H control %s needs ≥ 2 seeds with a slope",
                          name);
  }
  if (k == 0) {
    analysis_est_group_name(name, sizeof name, E, v);
    analysis_est_reason(E->untestable, sizeof E->untestable, "no exact-H (H = H*) control beside %s", name);
  }
}

/* Why the verdict cannot be tested (E->untestable) or has too few sizes or
 * seeds to be (E->too_few); both "" when it can. */
static void analysis_est_preconditions(analysis_estimation *E) {
  analysis_est_controls(E);
  int n_poly = 0, n_slow = 0;
  for (int i = 0; i < E->n_group; i++) {
    const analysis_est_group *g = &E->group[i];
    if (!analysis_est_poly_group(g) && !analysis_est_slow_group(g)) continue;
    n_poly += analysis_est_poly_group(g), n_slow += analysis_est_slow_group(g);
    char name[ANALYSIS_NAME_LEN + 96];
    analysis_est_group_name(name, sizeof name, E, g);
    if (g->n_x < 4)
      analysis_est_reason(E->too_few, sizeof E->too_few, "%s has %d value%s of train_points (needs ≥ 4: two per half)",
                          name, g->n_x, g->n_x == 1 ? "" : "s");
    else if (!(g->log_ref_upper > ANALYSIS_EST_POLY_SLOPE))
      analysis_est_reason(E->untestable, sizeof E->untestable,
                          "on the upper half of %s's n grid (%d … %d) 1/log n itself falls at slope %s, steeper "
                          "than the bound %g: larger n are needed to tell the rates apart",
                          name, g->x[g->up_start], g->x[g->n_x - 1], F4(g->log_ref_upper), ANALYSIS_EST_POLY_SLOPE);
    analysis_est_control_of(E, g);
  }
  if (!n_poly)
    analysis_est_reason(E->untestable, sizeof E->untestable,
                        "no over-specified (H > H*) cells of a gated arch at g1 or g2");
  if (!n_slow)
    analysis_est_reason(E->untestable, sizeof E->untestable, "no over-specified (H > H*) ungated cells");
}

/* ---- compute, free ---- */

int analysis_estimation_set(analysis_data *D, analysis_estimation *E) {
  void **slot = analysis_section_state(D, ANALYSIS_ESTIMATION_NAME);
  if (!slot) {
    analysis_estimation_state_free(E);
    return cs_error(CS_ERR_INTERNAL, "analyze: no state slot for the estimation rates");
  }
  analysis_est_preconditions(E);
  *slot = E;
  return CS_OK;
}

static int analysis_estimation_pipeline(analysis_data *D, analysis_estimation **E) {
  analysis_est_row *rows = NULL;
  char(*names)[ANALYSIS_NAME_LEN] = NULL;
  size_t units = (size_t)D->n_task * D->n_depth * D->n_regime, cap = units * D->n_arch * D->n_seed;
  int n = 0, n_unit = 0;
  analysis_estimation_place at;
  int rc = CS_CALLOC(rows, cap ? cap : 1);
  if (!rc) rc = CS_CALLOC(names, units ? units : 1);
  if (!rc) rc = analysis_est_rows(D, rows, &n, names, &n_unit, &at);
  if (!rc && n > 0)
    rc = analysis_estimation_build(rows, n, D->n_seed, n_unit, D->opt.bootstrap, D->opt.bootstrap_seed, E);
  if (!rc && *E) {
    memcpy((*E)->unit_name, names, sizeof *names * (size_t)n_unit);
    (*E)->plot = at;
  }
  free(rows), free(names);
  return rc;
}

int analysis_estimation_compute(analysis_data *D) {
  analysis_estimation *E = NULL;
  CS_CHECK(analysis_estimation_pipeline(D, &E));
  return E ? analysis_estimation_set(D, E) : CS_OK;
}

void analysis_estimation_free(analysis_data *D) {
  void **slot = analysis_section_state(D, ANALYSIS_ESTIMATION_NAME);
  if (!slot || !*slot) return;
  analysis_estimation_state_free(*slot);
  *slot = NULL;
}

/* ---- checks and verdict ---- */

int analysis_estimation_checks(analysis_data *D) {
  const analysis_estimation *E = analysis_estimation_of(D);
  if (!E) return CS_OK;
  double *d;
  CS_CHECK(CS_CALLOC(d, E->n_seed > 0 ? E->n_seed : 1));
  int rc = CS_OK;
  for (int i = 0; !rc && i < E->n_group; i++) {
    const analysis_est_group *g = &E->group[i];
    int poly = analysis_est_poly_group(g);
    if ((!poly && !analysis_est_slow_group(g)) || g->n_x < 4) continue;
    /* oriented so that > 0 is the claim: below the bound (gated), above it (ungated) */
    const double *slope = g->fit[EE_VORONOI][EF_UPPER].slope_seed;
    for (int s = 0; s < E->n_seed; s++)
      d[s] = poly ? ANALYSIS_EST_POLY_SLOPE - slope[s] : slope[s] - ANALYSIS_EST_POLY_SLOPE;
    char name[ANALYSIS_NAME_LEN + 96];
    analysis_est_group_name(name, sizeof name, E, g);
    analysis_check *c;
    rc = analysis_check_add(D, ANALYSIS_EST_CLAIM, ANALYSIS_EST_CLAIM, 0, &c, "%s%s", poly ? EST_POLY : EST_SLOW,
                            name);
    if (!rc) rc = analysis_check_seed(D, c, d, E->n_seed, ANALYSIS_GREATER, c->scope);
  }
  free(d);
  return rc;
}

/* After Holm: each check's effect becomes the mean of the seeds' own
 * upper-half Voronoi slopes with its t interval (the difference from the
 * bound undone); the verdict: supported when every check is, not testable
 * or too few when a precondition fails (analysis/README.md). */
int analysis_estimation_verdicts(analysis_data *D) {
  const analysis_estimation *E = analysis_estimation_of(D);
  if (!E) return CS_OK;
  for (int i = 0; i < D->checks.n; i++) {
    analysis_check *c = &D->checks.c[i];
    if (c->verdict || strcmp(c->claim, ANALYSIS_EST_CLAIM)) continue;
    double m = c->effect, lo = c->effect_lo, hi = c->effect_hi, b = ANALYSIS_EST_POLY_SLOPE;
    if (!strncmp(c->scope, EST_POLY, strlen(EST_POLY)))
      c->effect = b - m, c->effect_lo = b - hi, c->effect_hi = b - lo;
    else
      c->effect = m + b, c->effect_lo = lo + b, c->effect_hi = hi + b;
  }
  analysis_check *v;
  CS_CHECK(analysis_verdict_from(D, ANALYSIS_EST_CLAIM, ANALYSIS_EST_CLAIM, NULL, ANALYSIS_ALL, "verdict", &v));
  if (E->untestable[0]) v->decision = ANALYSIS_NOT_TESTABLE;
  else if (E->too_few[0]) v->decision = ANALYSIS_TOO_FEW;
  return CS_OK;
}

/* ---- estimation.csv and estimation_slopes.csv ---- */

static void analysis_est_csv_key(FILE *f, const analysis_estimation *E, const analysis_est_group *g) {
  fprintf(f, "%s,%s,%s,%d,%d,%s", E->unit_name[g->unit], config_arch_name(g->arch),
          g->gate < 0 ? "-" : config_gate_name((cs_gate_pos)g->gate), g->heads, g->teacher_heads,
          analysis_est_regime_name(g->regime));
}

static void analysis_write_est_points(FILE *f, const analysis_estimation *E) {
  fprintf(f, "unit,arch,gate,heads,teacher_heads,specification,train_points,cells,unconverged");
  for (int e = 0; e < EE_COUNT; e++) {
    const char *n = analysis_est_error_name(e);
    fprintf(f, ",%s_seeds,%s_median,%s_median_ci_low,%s_median_ci_high", n, n, n, n);
    analysis_csv_ci_header(f, n);
    fprintf(f, ",%s_gmean,%s_gmean_ci_low,%s_gmean_ci_high", n, n, n);
  }
  fprintf(f, "\n");
  for (int i = 0; i < E->n_group; i++) {
    const analysis_est_group *g = &E->group[i];
    for (int k = 0; k < g->n_x; k++) {
      analysis_est_csv_key(f, E, g);
      fprintf(f, ",%d,%d,%d", g->x[k], g->cells[k], g->unconverged[k]);
      for (int e = 0; e < EE_COUNT; e++) {
        const analysis_est_point *p = &g->pt[e][k];
        fprintf(f, ",%d", p->median.n);
        analysis_csv_ci(f, &p->median);
        analysis_csv_ci(f, &p->mean);
        analysis_csv_ci(f, &p->gmean);
      }
      fprintf(f, "\n");
    }
  }
}

static const char *const EF_NAME[EF_COUNT] = {"full", "lower", "upper"};

static void analysis_write_est_slopes(FILE *f, const analysis_estimation *E) {
  fprintf(f, "unit,arch,gate,heads,teacher_heads,specification,n_sizes,train_points_min,train_points_max,"
             "lower_max,upper_min,seeds,cells,unconverged");
  for (int e = 0; e < EE_COUNT; e++)
    for (int k = 0; k < EF_COUNT; k++) {
      const char *n = analysis_est_error_name(e), *r = EF_NAME[k];
      fprintf(f, ",%s_%s_slope,%s_%s_slope_ci_low,%s_%s_slope_ci_high,%s_%s_seed_slopes", n, r, n, r, n, r, n, r);
      char name[64];
      snprintf(name, sizeof name, "%s_%s_seed_slope", n, r);
      analysis_csv_ci_header(f, name);
    }
  fprintf(f, ",loglaw_upper_slope,control\n");
  for (int i = 0; i < E->n_group; i++) {
    const analysis_est_group *g = &E->group[i];
    if (g->regime == ER_MISSPECIFIED) continue;
    analysis_est_csv_key(f, E, g);
    fprintf(f, ",%d,%d,%d,%d,%d,%d,%d,%d", g->n_x, g->x[0], g->x[g->n_x - 1], g->x[g->lo_end], g->x[g->up_start],
            g->n_seeds, g->n_cells, g->n_unconverged);
    for (int e = 0; e < EE_COUNT; e++)
      for (int k = 0; k < EF_COUNT; k++) {
        const analysis_est_slope *F = &g->fit[e][k];
        analysis_csv_boot(f, &F->boot);
        fprintf(f, ",%d", F->seed_ci.n);
        analysis_csv_ci(f, &F->seed_ci);
      }
    analysis_csv_num(f, g->log_ref_upper);
    fprintf(f, ",%s\n", g->regime != ER_EXACT ? "-" : g->parametric > 0 ? "parametric"
                        : g->parametric == 0                             ? "not parametric"
                                                                         : "too few");
  }
}

int analysis_estimation_write_tables(const analysis_data *D, const analysis_outdir *dir) {
  const analysis_estimation *E = analysis_estimation_of(D);
  if (!E) return CS_OK;
  static const char *const names[2] = {"estimation.csv", "estimation_slopes.csv"};
  void (*writers[2])(FILE *, const analysis_estimation *) = {analysis_write_est_points, analysis_write_est_slopes};
  for (int i = 0; i < 2; i++) {
    analysis_file o;
    CS_CHECK(analysis_file_open(&o, dir, names[i]));
    writers[i](o.f, E);
    CS_CHECK(analysis_file_commit(&o));
  }
  return CS_OK;
}

void analysis_estimation_list_tables(FILE *f, const analysis_data *D) {
  if (analysis_estimation_of(D))
    fprintf(f, "- [estimation.csv](estimation.csv): per (arch, gate, H, H*, train_points) of the teacher–student "
               "cells: seeds, median, mean and geometric mean of the function and Voronoi errors with intervals\n"
               "- [estimation_slopes.csv](estimation_slopes.csv): per (arch, gate, H, H*): slopes of log error on "
               "log n over the whole range and its halves, seed-bootstrap intervals, the seeds' own slopes\n");
}

/* ---- the section of index.md ---- */

/* "−0.49 [−0.53, −0.45]" of a bootstrap slope. */
static const char *analysis_est_slope_text(char *buf, size_t len, const analysis_boot *b) {
  if (!isfinite(b->estimate)) snprintf(buf, len, "–");
  else if (!isfinite(b->lo)) snprintf(buf, len, "%s", F4(b->estimate));
  else snprintf(buf, len, "%s [%s, %s]", F4(b->estimate), F4(b->lo), F4(b->hi));
  return buf;
}

static void analysis_md_est_table(FILE *f, const analysis_estimation *E) {
  fprintf(f, "| group | specification | n | seeds | cells (not converged) | fn slope | fn lower → upper | Voronoi slope | "
             "Voronoi lower → upper | 1/log n upper |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < E->n_group; i++) {
    const analysis_est_group *g = &E->group[i];
    if (g->regime == ER_MISSPECIFIED) continue;
    char name[ANALYSIS_NAME_LEN + 96], nm[2 * (ANALYSIS_NAME_LEN + 96)], b[6][128];
    analysis_md_text(analysis_est_group_name(name, sizeof name, E, g), nm, sizeof nm);
    const analysis_est_slope *fn = g->fit[EE_FUNCTION], *vo = g->fit[EE_VORONOI];
    fprintf(f, "| %s | %s%s | %d … %d | %d | %d (%d) | %s | %s → %s | %s | %s → %s | %s |\n", nm,
            analysis_est_regime_name(g->regime),
            g->regime != ER_EXACT ? "" : g->parametric > 0 ? ", parametric" : g->parametric == 0 ? ", NOT parametric" : "",
            g->x[0], g->x[g->n_x - 1], g->n_seeds, g->n_cells, g->n_unconverged,
            analysis_est_slope_text(b[0], 128, &fn[EF_FULL].boot), analysis_est_slope_text(b[1], 128, &fn[EF_LOWER].boot),
            analysis_est_slope_text(b[2], 128, &fn[EF_UPPER].boot), analysis_est_slope_text(b[3], 128, &vo[EF_FULL].boot),
            analysis_est_slope_text(b[4], 128, &vo[EF_LOWER].boot), analysis_est_slope_text(b[5], 128, &vo[EF_UPPER].boot),
            F4(g->log_ref_upper));
  }
  fprintf(f, "\n");
}

/* The misspecified groups, apart: per n the median errors. */
static void analysis_md_est_misspecified(FILE *f, const analysis_estimation *E) {
  if (!E->n_misspecified) return;
  fprintf(f, "Misspecified cells (H < H*: the student cannot represent its teacher, so no rate is fitted and "
             "none enters the verdict), median errors over seeds:\n\n");
  for (int i = 0; i < E->n_group; i++) {
    const analysis_est_group *g = &E->group[i];
    if (g->regime != ER_MISSPECIFIED) continue;
    char name[ANALYSIS_NAME_LEN + 96], nm[2 * (ANALYSIS_NAME_LEN + 96)];
    analysis_md_text(analysis_est_group_name(name, sizeof name, E, g), nm, sizeof nm);
    fprintf(f, "- %s (%d cells, %d not converged):", nm, g->n_cells, g->n_unconverged);
    for (int k = 0; k < g->n_x; k++)
      fprintf(f, "%s n = %d fn %s, Voronoi %s", k ? ";" : "", g->x[k], F4(g->pt[EE_FUNCTION][k].median.mean),
              F4(g->pt[EE_VORONOI][k].median.mean));
    fprintf(f, ".\n");
  }
  fprintf(f, "\n");
}

/* One line per check: the group, its bootstrap slope, the seeds' test. */
static void analysis_md_est_checks(FILE *f, const analysis_data *D, const analysis_estimation *E) {
  for (int i = 0; i < D->checks.n; i++) {
    const analysis_check *c = &D->checks.c[i];
    if (c->verdict || strcmp(c->claim, ANALYSIS_EST_CLAIM)) continue;
    int poly = !strncmp(c->scope, EST_POLY, strlen(EST_POLY));
    const char *name = c->scope + strlen(poly ? EST_POLY : EST_SLOW);
    const analysis_est_group *g = NULL;
    for (int k = 0; k < E->n_group && !g; k++) {
      char gn[ANALYSIS_NAME_LEN + 96];
      analysis_est_group_name(gn, sizeof gn, E, &E->group[k]);
      for (char *p = gn; *p; p++)
        if (*p == ',') *p = ';'; /* as the scope stores it */
      if (!strcmp(gn, name)) g = &E->group[k];
    }
    char nm[2 * ANALYSIS_NAME_LEN], b[128];
    analysis_md_text(name, nm, sizeof nm);
    fprintf(f, "- %s, upper-half Voronoi slope %s (seed bootstrap; n %d … %d); %s %g: the seeds' own slopes, ", nm,
            g ? analysis_est_slope_text(b, sizeof b, &g->fit[EE_VORONOI][EF_UPPER].boot) : "–",
            g ? g->x[g->up_start] : 0, g ? g->x[g->n_x - 1] : 0, poly ? "below" : "above", ANALYSIS_EST_POLY_SLOPE);
    analysis_md_check(f, c);
    fprintf(f, "\n");
  }
}

int analysis_estimation_write_md(FILE *f, const analysis_data *D) {
  const analysis_estimation *E = analysis_estimation_of(D);
  if (!E) return CS_OK;
  fprintf(f, "## Estimation rates (teacher–student)\n\n");
  fprintf(f, "Nguyen et al.: with the gate at the SDPA output (G1) or on the values (G2) an expert of multi-head "
             "attention is estimated at a polynomial rate in the number of training points n, ungated it is not. "
             "Each cell is a student layer fitted by least squares to a planted teacher of its own arch and gate "
             "(docs/MODELS.md, \"Estimation\"): gated and ungated cells therefore have different teachers, and "
             "no error is ever paired across archs: each group's rate is read on its own. Per group (arch, gate, "
             "student heads H, teacher heads H*) and error — the function error ‖f − f*‖ on fresh inputs "
             "(parametric, n^-1/2, for every arch: it shows the estimator works) and the Voronoi loss on the "
             "identifiable parameters — the slope of the seeds' mean log error on log n, with a seed-bootstrap "
             "interval (%d replicates, seeds resampled, the same draw at every n), over the whole n range and "
             "its lower and upper halves: a polynomial rate keeps its slope, a logarithmic one flattens toward "
             "0 (the last column: the slope 1/log n itself has on the upper half). Cells that did not converge "
             "stay in the fit (the estimator is the fit it kept) and are counted.\n\n",
          D->opt.bootstrap);
  fprintf(f, "%d done cells, %d not converged, %d misspecified%s. Tables: [estimation.csv](estimation.csv) (per n), "
             "[estimation_slopes.csv](estimation_slopes.csv) (per group); figure estimation_rates.\n\n",
          E->n_cells, E->n_unconverged, E->n_misspecified,
          E->n_flag_mismatch ? " (some cells' misspecified flag disagrees with H < H*: taken as misspecified)" : "");
  analysis_md_est_table(f, E);
  analysis_md_est_misspecified(f, E);
  const analysis_check *V = analysis_check_find(D, ANALYSIS_EST_CLAIM, "verdict");
  fprintf(f, "Verdict rule: over-specified (H > H*) groups only; per seed the slope of its log Voronoi error on "
             "log n over the upper half of the n range; G1/G2 gated groups must fall below %g (at least "
             "n^-1/4) and ungated groups stay above it, each by a one-sided sign-flip test over seeds, Holm "
             "over all of them at α = %g, every one supported; not testable when an exact-H control's upper-half "
             "function-error slope misses [%g, %g] (analysis/README.md, \"Estimation rates\").\n\n",
          ANALYSIS_EST_POLY_SLOPE, D->opt.alpha, ANALYSIS_EST_PARAMETRIC - ANALYSIS_EST_PARAMETRIC_TOL,
          ANALYSIS_EST_PARAMETRIC + ANALYSIS_EST_PARAMETRIC_TOL);
  analysis_md_est_checks(f, D, E);
  char b1[96], b2[160];
  if (V && V->decision == ANALYSIS_NOT_TESTABLE)
    fprintf(f, "\nVerdict: **G1/G2 estimate experts at a polynomial rate where ungated attention does not: not "
               "testable** — %s.\n\n",
            E->untestable);
  else if (V && V->decision == ANALYSIS_TOO_FEW && E->too_few[0])
    fprintf(f, "\nVerdict: **G1/G2 estimate experts at a polynomial rate where ungated attention does not: too "
               "few** — %s.\n\n",
            E->too_few);
  else if (V)
    fprintf(f, "\nVerdict: **G1/G2 estimate experts at a polynomial rate where ungated attention does not: %s** "
               "(every check; the weakest: n = %d seeds, %s).\n\n",
            analysis_check_decision_text(b1, sizeof b1, V), V->n, analysis_check_p_text(b2, sizeof b2, V));
  return CS_OK;
}

/* ---- its row's claims, tables and columns (sections.h) ---- */

static const analysis_claim_info ESTIMATION_CLAIMS[] = {
    {ANALYSIS_EST_CLAIM, "G1/G2 estimate experts at a polynomial rate where ungated attention does not",
     "Estimation rates"},
    {NULL, NULL, NULL},
};

static const analysis_table_info ESTIMATION_TABLES[] = {
    {"estimation.csv", "teacher–student cells",
     "per (arch, gate, H, H*, train_points): seeds, median, mean and geometric mean of each error"},
    {"estimation_slopes.csv", "teacher–student cells",
     "per (arch, gate, H, H*): slopes of log error on log n (whole range, halves) with intervals"},
    {NULL, NULL, NULL},
};

#define EST_GMEAN "; `_gmean` the geometric mean over seeds, `_gmean_ci_*` the t interval of the mean log error, exponentiated"

/* The columns both tables share. */
#define EST_KEY_COLUMNS(table)                                                                                    \
  {table, "unit", "the values of the axes other than arch, gate, heads, teacher_heads, train_points and seed "  \
                  "(`all`: none)"},                                                                            \
      {table, "gate", "the gate position g1 … g5, `-` for ungated (one cell per seed whatever the gate axis "    \
                      "says)"},                                                                                \
      {table, "heads", "H, the student's heads"}, {table, "teacher_heads", "H*, the planted teacher's heads"}, \
      {table, "specification", "`exact` (H = H*, the control), `over-specified` (H > H*), `misspecified` (H < H*: "    \
                        "no rate, no verdict)"},                                                               \
      {table, "cells", "done cells"},                                                                          \
      {table, "unconverged", "of them, cells whose estimator stopped on its step cap"}

static const analysis_column_rule ESTIMATION_COLUMNS[] = {
    EST_KEY_COLUMNS("estimation.csv"),
    EST_KEY_COLUMNS("estimation_slopes.csv"),
    {"estimation.csv", "train_points", "n, the training sets the student was fitted on"},
    {"estimation.csv", "*_seeds", "seeds with a finite positive error at this n"},
    {"estimation.csv", "*_median*", "the median over seeds with its distribution-free order-statistic "
                                    "interval (analysis/README.md)"},
    {"estimation.csv", "fn_*", "the function error ‖f − f*‖ in L2 on fresh inputs" ANALYSIS_COLUMN_CI EST_GMEAN},
    {"estimation.csv", "voronoi_*", "the Voronoi loss on the identifiable parameters (docs/MODELS.md)"
                                    ANALYSIS_COLUMN_CI EST_GMEAN},
    {"estimation_slopes.csv", "n_sizes", "values of train_points in the group"},
    {"estimation_slopes.csv", "train_points_*", "the smallest and largest n"},
    {"estimation_slopes.csv", "lower_max", "the largest n of the lower half (the first ⌈sizes/2⌉)"},
    {"estimation_slopes.csv", "upper_min", "the smallest n of the upper half (the last ⌈sizes/2⌉)"},
    {"estimation_slopes.csv", "seeds", "seeds with a cell in the group"},
    {"estimation_slopes.csv", "loglaw_upper_slope", "the slope 1/log n has on the upper half's n: a logarithmic "
                                                    "rate's local slope there"},
    {"estimation_slopes.csv", "*_seed_slopes", "seeds with a slope of their own (two sizes with an error in the range)"},
    {"estimation_slopes.csv", "*_seed_slope_*", "the mean of the seeds' own slopes with its 95% t interval"},
    {"estimation_slopes.csv", "*_slope*", "`fn_`/`voronoi_` error, `full`/`lower`/`upper` range: the slope of the "
                                          "mean log error over seeds on log n, `_ci_*` its percentile seed "
                                          "bootstrap interval"},
    {"estimation_slopes.csv", "control", "exact groups: `parametric` when the t interval of the seeds' "
                                         "upper-half function-error slopes reaches [−0.6, −0.4], else `not parametric` "
                                         "(`too few` under 2 seeds); `-` otherwise"},
    {NULL, NULL, NULL},
};

const analysis_section_about analysis_estimation_about = {ESTIMATION_CLAIMS, ESTIMATION_TABLES,
                                                          ESTIMATION_COLUMNS};

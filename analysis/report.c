/* report.c — `curvsweep analyze` end to end: load and check the archives,
 * compute the tables, write CSVs, plots and index.md, whose verdicts on the
 * claims of DESIGN §1 are computed here from the same numbers as the tables
 * (printed with %.4g, the tables with %.15g). */
#include "analysis_internal.h"

#include "curvsweep/error.h"
#include "curvsweep/tasks.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

analysis_options analysis_options_default(void) {
  analysis_options o = {ANALYSIS_BOOTSTRAP_B, 0, NULL, 1};
  return o;
}

void analysis_warn(analysis_outcome *out, const char *fmt, ...) {
  if (!out || out->n_warnings >= ANALYSIS_MAX_WARNINGS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->warnings[out->n_warnings++], sizeof out->warnings[0], fmt, ap);
  va_end(ap);
}

int analysis_file_open(analysis_file *o, const char *dir, const char *name) {
  int n1 = snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
  int n2 = snprintf(o->tmp, sizeof o->tmp, "%s/.%s.tmp", dir, name);
  if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof o->tmp)
    return cs_error(CS_ERR_INPUT, "report path too long: %s/%s", dir, name);
  o->f = fopen(o->tmp, "w");
  if (!o->f) return cs_error(CS_ERR_IO, "%s: cannot write: %s", o->tmp, strerror(errno));
  return CS_OK;
}

int analysis_file_commit(analysis_file *o) {
  int bad = ferror(o->f);
  if (fclose(o->f) != 0) bad = 1;
  o->f = NULL;
  if (bad) {
    unlink(o->tmp);
    return cs_error(CS_ERR_IO, "%s: write failed (disk full?)", o->path);
  }
  if (rename(o->tmp, o->path) != 0) {
    int e = errno;
    unlink(o->tmp);
    return cs_error(CS_ERR_IO, "%s: cannot rename into place: %s", o->path, strerror(e));
  }
  return CS_OK;
}

void analysis_file_abort(analysis_file *o) {
  if (o->f) fclose(o->f);
  o->f = NULL;
  unlink(o->tmp);
}

/* "<path without .h5>-report". */
int analysis_default_dir(const char *archive_path, char *buf, size_t len) {
  size_t n = strlen(archive_path);
  const char *exts[] = {".h5", ".hdf5", ".hdf"};
  for (int i = 0; i < 3; i++) {
    size_t e = strlen(exts[i]);
    if (n > e && strcmp(archive_path + n - e, exts[i]) == 0 && archive_path[n - e - 1] != '/') {
      n -= e;
      break;
    }
  }
  int w = snprintf(buf, len, "%.*s-report", (int)n, archive_path);
  if (w < 0 || (size_t)w >= len) return cs_error(CS_ERR_INPUT, "%s: report directory name too long", archive_path);
  return CS_OK;
}

/* mkdir -p. */
static int analysis_mkdir_p(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
    return cs_error(CS_ERR_INPUT, "report directory name too long: %s", dir);
  for (char *p = path + 1; ; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return cs_error(CS_ERR_IO, "%s: cannot create directory: %s", path, strerror(errno));
      *p = c;
      if (!c) break;
    }
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return cs_error(CS_ERR_INPUT, "%s exists and is not a directory", dir);
  return CS_OK;
}

/* ---- index.md ---- */

/* %.4g, "n/a" for NaN: the number format of the verdicts. */
static const char *analysis_f4(char *buf, double v) {
  if (isnan(v))
    snprintf(buf, 32, "n/a");
  else
    snprintf(buf, 32, "%.4g", v);
  return buf;
}
#define F4(v) analysis_f4((char[32]){0}, (v))

static int analysis_is_gated(cs_arch a) { return a == ARCH_GATED || a == ARCH_GATED_HEADWISE; }

static void analysis_md_grid(FILE *f, const analysis_data *D) {
  const cs_spec *spec = D->spec;
  fprintf(f, "## Grid\n\n| axis | values | size |\n|---|---|---|\n");
  int n_axes = spec_axis_count(spec);
  for (int ax = 0; ax < n_axes; ax++) {
    int64_t stride = 1;
    for (int b = ax + 1; b < n_axes; b++) stride *= spec_axis_length(spec, b);
    fprintf(f, "| %s | ", spec_axis_name(spec, ax));
    int len = spec_axis_length(spec, ax);
    for (int i = 0; i < len; i++) {
      char val[128];
      if (i == 12 && len > 14) {
        fprintf(f, ", … (%d more)", len - i - 1);
        i = len - 2;
        continue;
      }
      spec_axis_value_text(spec, ax, (int64_t)i * stride, val, sizeof val);
      fprintf(f, "%s%s", i ? ", " : "", val);
    }
    fprintf(f, " | %d |\n", len);
  }
  double pct = 100.0 * D->done / (double)D->cells_total;
  fprintf(f, "\nCells: **%lld of %lld done (%.1f%%)**, %lld failed, %lld diverged, %lld pending",
          (long long)D->done, (long long)D->cells_total, pct, (long long)D->failed,
          (long long)D->diverged, (long long)D->pending);
  if (D->cells_selected < D->cells_total)
    fprintf(f, ", %lld not in these archives (shards)", (long long)(D->cells_total - D->cells_selected));
  fprintf(f, ".\n\n");
  if (D->done < D->cells_total)
    fprintf(f, "> **Partial archive**: %.1f%% of the grid is done (a running, interrupted or "
               "sharded sweep). Every number below covers the done cells only; re-run analyze "
               "when the sweep has finished.\n\n",
            pct);
  fprintf(f, "Regimes (values of the axes other than arch, task, depth and seed):");
  for (int r = 0; r < D->n_regime; r++)
    fprintf(f, "%s `%s`%s", r ? "," : "", D->regime[r].name,
            D->regime[r].skeleton ? " (affine skeleton)" : "");
  const cs_config *c = &D->regime[0].cfg;
  fprintf(f, ".\nThe affine skeleton of DESIGN §1 is heads = 1, slots = input_dim + 1, residual = no, "
             "norm = none (here: heads %d, slots %d, input_dim %d, residual %s, norm %s in regime `%s`).\n\n",
          c->heads, c->slots, c->input_dim, c->residual ? "yes" : "no", config_norm_name(c->norm),
          D->regime[0].name);
}

/* Median of the finite values (NaN when none). */
static double analysis_median(const double *v, int n) {
  analysis_ci m;
  if (analysis_median_ci(v, n, ANALYSIS_LEVEL, &m, NULL) != CS_OK) return NAN;
  return m.mean;
}

/* Flatness of the ungated affine-skeleton cells of task t and regime r (every
 * task and regime when t < 0), prefix row by prefix row (depth, l): a row is
 * flat when its largest mean |K̃| over seeds is at most ANALYSIS_FLAT_KT, or
 * at most ANALYSIS_FLAT_REL × the mean |K̃| of the gated cells at the same
 * (task, depth, regime, l): K̃ is invariant to uniform rescaling only, so in a
 * model whose metric has collapsed anisotropically (log det g → −∞) the
 * rounding error of K̃ grows with the condition number of J. */
typedef struct {
  int rows, cells;        /* prefix rows checked; done cells behind them */
  int abs_flat, rel_flat; /* rows flat by the absolute bound; by the relative one only */
  double max_abs;         /* largest Kt_max */
  int max_t, max_d, max_l;
  double max_logdet;      /* mean log det g at that row */
  double worst_rel;       /* largest ratio to gated among rows above the absolute bound */
} analysis_flatness;

static analysis_flatness analysis_ungated_flatness(const analysis_data *D, int t_only, int r_only) {
  analysis_flatness F = {0, 0, 0, 0, NAN, -1, -1, -1, NAN, NAN};
  int u = analysis_find_arch(D, ARCH_UNGATED), g = analysis_find_arch(D, ARCH_GATED);
  if (g < 0) g = analysis_find_arch(D, ARCH_GATED_HEADWISE);
  if (u < 0) return F;
  for (int t = 0; t < D->n_task; t++)
    for (int r = 0; r < D->n_regime; r++) {
      if ((t_only >= 0 && t != t_only) || (r_only >= 0 && r != r_only) || !D->regime[r].skeleton)
        continue;
      for (int d = 0; d < D->n_depth; d++) {
        const analysis_prefix *p = D->prefix[analysis_gidx(D, u, t, d, r)];
        const analysis_prefix *q = g >= 0 ? D->prefix[analysis_gidx(D, g, t, d, r)] : NULL;
        if (!p) continue;
        F.cells += D->group[analysis_gidx(D, u, t, d, r)].n_done;
        for (int l = 0; l < D->depth[d]; l++) {
          double v = p[l].Kt_max;
          if (!isfinite(v)) continue;
          F.rows++;
          if (!(v <= F.max_abs)) F.max_abs = v, F.max_t = t, F.max_d = d, F.max_l = l + 1,
                                 F.max_logdet = p[l].logdet.mean;
          if (v <= ANALYSIS_FLAT_KT) {
            F.abs_flat++;
            continue;
          }
          double rel = q && q[l].Kt.mean > 0 ? v / q[l].Kt.mean : NAN;
          if (!(rel <= F.worst_rel)) F.worst_rel = rel;
          if (rel <= ANALYSIS_FLAT_REL) F.rel_flat++;
        }
      }
    }
  return F;
}

static int analysis_md_claim1(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 1 — ungated attention is flat in the structured (affine) regime\n\n");
  int u = analysis_find_arch(D, ARCH_UNGATED);
  int n_g = 0, n_o = 0, cap = 1;
  for (int d = 0; d < D->n_depth; d++) cap += D->depth[d];
  cap *= D->n_arch * D->n_task * D->n_regime;
  double *gated_skel, *ungated_other;
  CS_CHECK(CS_CALLOC(gated_skel, cap));
  int rc = CS_CALLOC(ungated_other, cap);
  if (rc) {
    free(gated_skel);
    return rc;
  }
  for (int a = 0; a < D->n_arch; a++)
    for (int t = 0; t < D->n_task; t++)
      for (int d = 0; d < D->n_depth; d++)
        for (int r = 0; r < D->n_regime; r++) {
          const analysis_prefix *p = D->prefix[analysis_gidx(D, a, t, d, r)];
          int skel = D->regime[r].skeleton;
          for (int l = 0; p && l < D->depth[d]; l++) {
            if (a == u && !skel && isfinite(p[l].Kt.mean)) ungated_other[n_o++] = p[l].Kt.mean;
            if (analysis_is_gated(D->arch[a]) && skel && isfinite(p[l].Kt.mean))
              gated_skel[n_g++] = p[l].Kt.mean;
          }
        }
  analysis_flatness F = analysis_ungated_flatness(D, -1, -1);
  if (F.rows == 0) {
    fprintf(f, "**Not testable with this archive**: no done ungated cell has the affine-skeleton "
               "config (add `arch = ungated` with heads 1, slots = input_dim + 1, residual no, "
               "norm none).\n\n");
  } else {
    fprintf(f, "Ungated cells with the affine-skeleton config: %d done; largest mean |K̃| over "
               "every cell and prefix (prefix.csv `Kt_absmean_max`): **%s** (flat bound %g), at "
               "task %s, depth %d, prefix %d, where mean log det g is %s.\n",
            F.cells, F4(F.max_abs), ANALYSIS_FLAT_KT, config_task_name(D->task[F.max_t]),
            D->depth[F.max_d], F.max_l, F4(F.max_logdet));
    if (n_g) fprintf(f, "For contrast, median over prefixes of mean |K̃| in gated skeleton cells: %s.\n",
                     F4(analysis_median(gated_skel, n_g)));
    if (n_o) fprintf(f, "Ungated cells outside the skeleton (not flat in general): median mean |K̃| %s.\n",
                     F4(analysis_median(ungated_other, n_o)));
    int above = F.rows - F.abs_flat;
    if (above == 0)
      fprintf(f, "\n**Supported**: every ungated skeleton cell is flat to rounding at every depth "
                 "and prefix.\n\n");
    else if (F.abs_flat + F.rel_flat == F.rows)
      fprintf(f, "\n**Supported, up to rounding in ill-conditioned models**: %d of %d (task, depth, "
                 "prefix) rows exceed the absolute bound, but each stays below %g × the gated mean "
                 "|K̃| at the same task, depth and prefix (largest ratio **%s**). These models have "
                 "collapsed their metric (mean log det g down to %s): K̃ is invariant to uniform "
                 "rescaling only, and its rounding error grows with the condition number of J.\n\n",
              above, F.rows, ANALYSIS_FLAT_REL, F4(F.worst_rel), F4(F.max_logdet));
    else
      fprintf(f, "\n**Not supported by these data**: %d of %d (task, depth, prefix) rows of "
                 "ungated skeleton cells exceed both the flat bound %g and %g × the gated mean "
                 "|K̃| at the same place (largest ratio **%s**); check the geometry engine with "
                 "`curvsweep verify`.\n\n",
              F.rows - F.abs_flat - F.rel_flat, F.rows, ANALYSIS_FLAT_KT, ANALYSIS_FLAT_REL,
              F4(F.worst_rel));
  }
  free(gated_skel), free(ungated_other);
  return CS_OK;
}

/* Claim 2 for one gated arch against ungated: pairs (task, depth, regime). */
static int analysis_md_claim2_arch(FILE *f, const analysis_data *D, int g, int u, int *supported) {
  size_t cap = (size_t)D->n_task * D->n_depth * D->n_regime;
  double *ratio;
  CS_CHECK(CS_CALLOC(ratio, cap));
  int n = 0, k = 0, nr = 0, skel_pairs = 0;
  for (int t = 0; t < D->n_task; t++)
    for (int d = 0; d < D->n_depth; d++)
      for (int r = 0; r < D->n_regime; r++) {
        const analysis_group *G = &D->group[analysis_gidx(D, g, t, d, r)];
        const analysis_group *U = &D->group[analysis_gidx(D, u, t, d, r)];
        if (!isfinite(G->Kt.mean) || !isfinite(U->Kt.mean)) continue;
        n++;
        k += G->Kt.mean > U->Kt.mean;
        skel_pairs += D->regime[r].skeleton;
        if (U->Kt.mean > 0) ratio[nr++] = G->Kt.mean / U->Kt.mean;
      }
  const char *name = config_arch_name(D->arch[g]);
  if (n == 0) {
    fprintf(f, "- %s: no (task, depth, regime) with both %s and ungated done.\n", name, name);
    free(ratio);
    return CS_OK;
  }
  analysis_ci med;
  double cover;
  int rc = analysis_median_ci(ratio, nr, ANALYSIS_LEVEL, &med, &cover);
  free(ratio);
  CS_CHECK(rc);
  double p = analysis_sign_test(k, n - k);
  fprintf(f, "- %s: mean |K̃| (last layer, summary.csv `Kt_absmean_mean`) above ungated on **%d of "
             "%d** (task, depth, regime) pairs, sign test p = %s; median ratio %s/ungated **%s** "
             "[%s, %s] (order-statistic interval, coverage %s).",
          name, k, n, F4(p), name, F4(med.mean), F4(med.lo), F4(med.hi), F4(cover));
  if (skel_pairs) fprintf(f, " (%d pairs are affine-skeleton ones, where ungated is flat to rounding: "
                             "there the ratio only says \"curved vs flat\".)", skel_pairs);
  fprintf(f, "\n");
  if (2 * k > n && p < 0.05)
    *supported = 2 > *supported ? 2 : *supported;
  else if (2 * k > n)
    *supported = 1 > *supported ? 1 : *supported;
  return CS_OK;
}

static int analysis_md_claim2(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 2 — gating makes the representation curved\n\n");
  int u = analysis_find_arch(D, ARCH_UNGATED), any = 0, supported = 0;
  for (int g = 0; g < D->n_arch; g++) {
    if (!analysis_is_gated(D->arch[g]) || u < 0) continue;
    any = 1;
    CS_CHECK(analysis_md_claim2_arch(f, D, g, u, &supported));
  }
  if (!any)
    fprintf(f, "**Not testable with this archive**: it needs both ungated and gated (or "
               "gated-headwise) cells.\n\n");
  else if (supported == 2)
    fprintf(f, "\n**Supported**: gated representations are more curved (scale-free) than ungated "
               "ones, significantly by the sign test.\n\n");
  else if (supported == 1)
    fprintf(f, "\n**Suggestive, not significant**: gated is more curved on most pairs, but the sign "
               "test over so few pairs is not below 0.05 (add tasks, depths or regimes).\n\n");
  else
    fprintf(f, "\n**Not supported by these data**: gated is not more curved than ungated on most "
               "pairs.\n\n");
  return CS_OK;
}

/* Pooled signs over the gap rows of one comparison and boundary. */
typedef struct {
  int rows, rows_pos, rows_sig, npos, nneg, kpos, kneg;
} analysis_pool;

static void analysis_md_claim3(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 3 — gating improves accuracy on nonlinear-boundary tasks, not on linear ones\n\n");
  int g = analysis_find_arch(D, ARCH_GATED);
  analysis_pool pool[2] = {{0}};
  const char *bname[2] = {"nonlinear", "linear"};
  if (g < 0 || analysis_find_arch(D, ARCH_UNGATED) < 0) {
    fprintf(f, "**Not testable with this archive**: it needs gated and ungated cells.\n\n");
    return;
  }
  fprintf(f, "Gated − ungated test accuracy, paired by seed (gap.csv, comparison `gated-ungated`):\n\n");
  for (int i = 0; i < D->n_gap; i++) {
    const analysis_gap *G = &D->gap[i];
    if (G->arch != g) continue;
    int b = strcmp(task_boundary(D->task[G->task]), "linear") == 0;
    analysis_pool *P = &pool[b];
    P->rows++;
    P->rows_pos += G->acc.ci.mean > 0;
    P->rows_sig += G->acc.ci.mean > 0 && G->acc.sign_p < 0.05;
    P->npos += G->acc.n_pos, P->nneg += G->acc.n_neg;
    P->kpos += G->Kt.n_pos, P->kneg += G->Kt.n_neg;
    fprintf(f, "- %s (%s), depth %d, %s: %d pair%s, Δacc %s [%s, %s], sign test p = %s; Δ mean |K̃| %s\n",
            config_task_name(D->task[G->task]), bname[b], D->depth[G->depth],
            D->regime[G->regime].name, G->n_pairs, G->n_pairs == 1 ? "" : "s", F4(G->acc.ci.mean), F4(G->acc.ci.lo),
            F4(G->acc.ci.hi), F4(G->acc.sign_p), F4(G->Kt.ci.mean));
  }
  fprintf(f, "\n");
  int sig[2] = {0, 0};
  for (int b = 0; b < 2; b++) {
    analysis_pool *P = &pool[b];
    if (!P->rows) {
      fprintf(f, "- %s tasks: none in this archive.\n", bname[b]);
      continue;
    }
    double p = analysis_sign_test(P->npos, P->nneg), pk = analysis_sign_test(P->kpos, P->kneg);
    sig[b] = P->npos > P->nneg && p < 0.05;
    fprintf(f, "- %s tasks, pooled over every seed pair: gated more accurate in **%d**, less in "
               "**%d** (sign test p = **%s**); %d of %d (task, depth, regime) rows have a positive "
               "mean gap, %d of them significant. Gated K̃ higher in %d pairs, lower in %d (p = %s).\n",
            bname[b], P->npos, P->nneg, F4(p), P->rows_pos, P->rows, P->rows_sig, P->kpos, P->kneg,
            F4(pk));
  }
  fprintf(f, "\n");
  if (!pool[0].rows)
    fprintf(f, "**Not testable with this archive**: no nonlinear-boundary task.\n\n");
  else if (!sig[0])
    fprintf(f, "**Not supported by these data**: no significant accuracy gain of gating on "
               "nonlinear-boundary tasks%s.\n\n",
            pool[0].npos > pool[0].nneg ? " (positive, but not significant)" : "");
  else if (!pool[1].rows)
    fprintf(f, "**Partly supported**: gating gains accuracy on nonlinear-boundary tasks; the "
               "linear-boundary half of the claim is not testable (no linear task in the grid).\n\n");
  else if (sig[1])
    fprintf(f, "**Partly supported**: gating gains accuracy on nonlinear-boundary tasks, but also "
               "significantly on linear ones (the claim says it should not).\n\n");
  else
    fprintf(f, "**Supported**: a significant accuracy gain on nonlinear-boundary tasks and none "
               "on linear ones.\n\n");
}

/* The reading of one slope triple (K̃, raw K, log det g) for claim 4. */
static const char *analysis_amp_reading(const analysis_boot *Kt, const analysis_boot *K,
                                        const analysis_boot *Ld, int flat, int *kind) {
  *kind = 0;
  if (flat) return "flat to rounding (slopes are rounding noise)";
  if (!isfinite(Kt->estimate) && !isfinite(K->estimate)) return "not testable (needs two or more depths)";
  if (!isfinite(Kt->lo)) return "no interval (needs two or more seeds)";
  if (Kt->lo > 0 && isfinite(Ld->hi) && Ld->hi < 0)
    return (*kind = 3), "K̃ grows while log det g falls: more than uniform shrinkage, but K̃ is "
                        "invariant to uniform rescaling only, so an anisotropic collapse of the "
                        "metric can contribute (compare ∫K dA, summary.csv intK)";
  if (Kt->lo > 0) return (*kind = 1), "K̃ grows: geometric amplification";
  if (K->lo > 0) {
    *kind = 2;
    return isfinite(Ld->hi) && Ld->hi < 0
               ? "raw K grows but K̃ does not: shrinkage, not geometry (log det g falls)"
               : "raw K grows but K̃ does not: shrinkage, not geometry";
  }
  if (Kt->hi < 0) return "K̃ decreases";
  return "no significant trend in K̃";
}

static void analysis_md_slope(FILE *f, const char *what, const analysis_boot *b) {
  fprintf(f, "%s %s [%s, %s]", what, F4(b->estimate), F4(b->lo), F4(b->hi));
}

static void analysis_md_claim4(FILE *f, const analysis_data *D) {
  fprintf(f, "### Claim 4 — depth amplifies curvature (in a structured regime)\n\n"
             "Slopes of log mean|K̃| and log mean|K| against log depth (amplification.csv; 95%% "
             "paired bootstrap over seeds, B = %d), and of mean log det g (contraction). Raw K has "
             "units 1/length², so a layer that only shrinks its output raises it: amplification of "
             "raw K alone is not evidence.\n\n",
          D->opt.bootstrap);
  int n_rows = 0, n_geo = 0, n_geo_skel = 0, n_collapse = 0, n_shrink = 0, n_testable = 0;
  int order[ARCH_COUNT], no = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int a = 0; a < D->n_arch; a++)
      if ((pass == 0) == analysis_is_gated(D->arch[a])) order[no++] = a;
  for (int t = 0; t < D->n_task; t++)
    for (int r = 0; r < D->n_regime; r++)
      for (int oi = 0; oi < no; oi++) {
        int a = order[oi];
        const analysis_amp *A = &D->amp[analysis_aidx(D, a, t, r)];
        if (!A->present) continue;
        int skel = D->regime[r].skeleton;
        analysis_flatness F = analysis_ungated_flatness(D, t, r);
        int flat = D->arch[a] == ARCH_UNGATED && skel && F.rows > 0 &&
                   F.abs_flat + F.rel_flat == F.rows;
        int kd, kp;
        const char *rd = analysis_amp_reading(&A->Kt_depth, &A->K_depth, &A->logdet_depth, flat, &kd);
        const char *rp = analysis_amp_reading(&A->Kt_prefix, &A->K_prefix, &A->logdet_prefix, flat, &kp);
        fprintf(f, "- **%s**, %s, %s%s: across depths %d–%d (%d seed%s%s): ", config_arch_name(D->arch[a]),
                config_task_name(D->task[t]), D->regime[r].name, skel ? " (skeleton)" : "",
                A->depth_min, A->depth_max, A->n_seeds, A->n_seeds == 1 ? "" : "s",
                A->n_seeds < 5 ? ", too few for a reliable bootstrap interval" : "");
        analysis_md_slope(f, "K̃ slope", &A->Kt_depth);
        analysis_md_slope(f, ", raw |K| slope", &A->K_depth);
        analysis_md_slope(f, ", log det g slope", &A->logdet_depth);
        fprintf(f, ", K̃ ratio deepest/shallowest %s, raw |K| ratio %s → *%s*. Across prefixes of "
                   "the depth-%d models: ",
                F4(A->Kt_ratio), F4(A->K_ratio), rd, A->prefix_depth);
        analysis_md_slope(f, "K̃ slope", &A->Kt_prefix);
        analysis_md_slope(f, ", raw |K| slope", &A->K_prefix);
        analysis_md_slope(f, ", log det g slope", &A->logdet_prefix);
        fprintf(f, " → *%s*.\n", rp);
        if (!analysis_is_gated(D->arch[a])) continue;
        n_rows++;
        n_testable += isfinite(A->Kt_depth.lo) || isfinite(A->Kt_prefix.lo);
        if (kd == 1 || kp == 1 || kd == 3 || kp == 3) {
          n_geo++, n_geo_skel += skel;
          n_collapse += kd != 1 && kp != 1;
        } else if (kd == 2 || kp == 2) {
          n_shrink++;
        }
      }
  fprintf(f, "\n");
  if (n_testable == 0)
    fprintf(f, "**Not testable with this archive**: no gated row has two or more depths (or a model "
               "deeper than one layer) and two or more seeds.\n\n");
  else if (n_geo > 0)
    fprintf(f, "**Supported** in %d of %d gated (arch, task, regime) rows (%d in the affine "
               "skeleton): scale-free K̃ grows with depth or along the layers. In %d of these "
               "rows it grows only where log det g falls at the same time (see above)%s.\n\n",
            n_geo, n_rows, n_geo_skel, n_collapse,
            n_shrink ? "; in other rows only raw K grows (shrinkage, not geometry)" : "");
  else if (n_shrink > 0)
    fprintf(f, "**Not supported by these data**: raw K grows with depth in %d gated rows but "
               "scale-free K̃ does not — that is shrinkage of the representation, not "
               "geometry.\n\n",
            n_shrink);
  else
    fprintf(f, "**Not supported by these data**: neither K̃ nor raw K grows significantly with "
               "depth in any gated row.\n\n");
}

static int analysis_write_index(const analysis_data *D, const char *dir, const analysis_plot *plots,
                                int n_plots, const analysis_outcome *out) {
  analysis_file o;
  CS_CHECK(analysis_file_open(&o, dir, "index.md"));
  FILE *f = o.f;
  fprintf(f, "# Depth-amplification report: %s\n\n", spec_sweep(D->spec)->name);
  fprintf(f, "Generated by curvsweep %s `analyze` from ", CS_VERSION);
  for (int p = 0; p < D->n_paths; p++) fprintf(f, "%s`%s`", p ? ", " : "", D->paths[p]);
  fprintf(f, " (spec sha256 `%s`). Every verdict below is computed from the tables; intervals are "
             "95%%.\n\n",
          spec_sha256(D->spec));
  analysis_md_grid(f, D);
  fprintf(f, "## Verdicts on the claims of DESIGN §1\n\n");
  int rc = analysis_md_claim1(f, D);
  if (!rc) rc = analysis_md_claim2(f, D);
  if (rc) {
    analysis_file_abort(&o);
    return rc;
  }
  analysis_md_claim3(f, D);
  analysis_md_claim4(f, D);
  fprintf(f, "## Tables\n\n"
             "- [summary.csv](summary.csv): per (arch, task, depth, regime): seeds, test accuracy and "
             "last-layer curvature (mean |K|, mean |K̃|, mean K̃, ∫K dA, mean log det g), each mean "
             "with 95%% t interval over seeds\n"
             "- [prefix.csv](prefix.csv): the same curvature statistics after every layer l of every "
             "model\n"
             "- [amplification.csv](amplification.csv): per (arch, task, regime): slopes of log mean "
             "|K|, log mean |K̃| and mean log det g against log depth and against log prefix, with "
             "paired bootstrap intervals; deepest/shallowest ratios\n"
             "- [gap.csv](gap.csv): gated − ungated and gated-headwise − ungated (and mlp − ungated), "
             "paired by seed: accuracy, mean |K|, mean |K̃| differences with t intervals and sign "
             "tests\n\n"
             "Column meanings: analysis/README.md in the curvsweep sources.\n\n");
  fprintf(f, "## Plots\n\n");
  if (n_plots == 0) fprintf(f, "No plots (no done cells to draw).\n\n");
  int unrendered = 0;
  for (int i = 0; i < n_plots; i++) {
    const analysis_plot *P = &plots[i];
    if (P->rendered)
      fprintf(f, "### %s\n\n%s.\n\n![%s](%s.png)\n\nScript [%s.gp](%s.gp), data [%s.dat](%s.dat).\n\n",
              P->name, P->caption, P->name, P->name, P->name, P->name, P->name, P->name);
    else
      fprintf(f, "### %s\n\n%s.\n\nNot rendered; script [%s.gp](%s.gp), data [%s.dat](%s.dat) "
                 "(`gnuplot %s.gp` in this directory writes %s.png).\n\n",
              P->name, P->caption, P->name, P->name, P->name, P->name, P->name, P->name);
    unrendered += !P->rendered;
  }
  if (!D->has_points)
    fprintf(f, "Histograms of per-point K̃ and curvature maps need per-point values: set "
               "`save_points = yes` in [sweep] of the spec.\n\n");
  if (out && out->n_warnings) {
    fprintf(f, "## Warnings\n\n");
    for (int i = 0; i < out->n_warnings; i++) fprintf(f, "- %s\n", out->warnings[i]);
    fprintf(f, "\n");
  }
  (void)unrendered;
  return analysis_file_commit(&o);
}

int analysis_run(const char *const *paths, int n_paths, const char *out_dir,
                 const analysis_options *opt, analysis_outcome *out) {
  analysis_outcome local;
  if (!out) out = &local;
  memset(out, 0, sizeof *out);
  analysis_data D;
  memset(&D, 0, sizeof D);
  D.opt = opt ? *opt : analysis_options_default();
  if (D.opt.bootstrap < 1) D.opt.bootstrap = ANALYSIS_BOOTSTRAP_B;
  if (!out_dir || !*out_dir) return cs_error(CS_ERR_INPUT, "analyze: no output directory given");
  int rc = analysis_load(paths, n_paths, &D);
  if (!rc) rc = analysis_compute(&D);
  if (!rc) {
    out->cells_total = D.cells_total;
    out->cells_selected = D.cells_selected;
    out->done = D.done, out->pending = D.pending, out->failed = D.failed, out->diverged = D.diverged;
    if (D.done < D.cells_total)
      analysis_warn(out, "partial archive: %lld of %lld cells done (%.1f%%); the report covers the "
                         "done cells only",
                    (long long)D.done, (long long)D.cells_total, 100.0 * D.done / D.cells_total);
    rc = analysis_mkdir_p(out_dir);
  }
  analysis_plot *plots = NULL;
  int n_plots = 0;
  if (!rc) rc = analysis_write_tables(&D, out_dir);
  if (!rc) rc = analysis_write_plots(&D, out_dir, &plots, &n_plots, out);
  if (!rc) rc = analysis_write_index(&D, out_dir, plots, n_plots, out);
  free(plots);
  analysis_data_free(&D);
  return rc;
}

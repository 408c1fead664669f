/* stats.c — the per-prefix statistics over evaluation points
 * (docs/NUMERICS.md, "Per-prefix statistics").
 *
 * Degenerate points (cond(J) > GEOM_DEGENERATE_COND) and unresolved points
 * (rounding error too large to call them flat or curved) are counted and
 * left out of every statistic except ∫K dA, where a degenerate box point
 * contributes 0 (a vanishing area element). Quantiles are "type 7" (linear
 * interpolation between order statistics, the R and NumPy default). With no
 * valid point every statistic is NaN. */
#include <math.h>
#include <stdlib.h>

#include "curvsweep/error.h"
#include "curvsweep/geom.h"
#include "curvsweep/quantile.h"

#include <stddef.h>

/* The statistics by name, in the archive's column order (the array bound
 * makes an extra entry a compile error; test_geom checks none is missing). */
const geom_stats_field GEOM_STATS_FIELDS[GEOM_STATS_N_FIELDS] = {
    {"degenerate_frac", offsetof(geom_stats, degenerate_frac)},
    {"unresolved_frac", offsetof(geom_stats, unresolved_frac)},
    {"flat_frac", offsetof(geom_stats, flat_frac)},
    {"curved_frac", offsetof(geom_stats, curved_frac)},
    {"K_mean", offsetof(geom_stats, K_mean)},
    {"K_median", offsetof(geom_stats, K_median)},
    {"K_absmean", offsetof(geom_stats, K_absmean)},
    {"K_q05", offsetof(geom_stats, K_q05)},
    {"K_q95", offsetof(geom_stats, K_q95)},
    {"K_fracpos", offsetof(geom_stats, K_fracpos)},
    {"S_mean", offsetof(geom_stats, S_mean)},
    {"S_se", offsetof(geom_stats, S_se)},
    {"Kt_mean", offsetof(geom_stats, Kt_mean)},
    {"Kt_median", offsetof(geom_stats, Kt_median)},
    {"Kt_absmean", offsetof(geom_stats, Kt_absmean)},
    {"Kt_q05", offsetof(geom_stats, Kt_q05)},
    {"Kt_q95", offsetof(geom_stats, Kt_q95)},
    {"Kt_fracpos", offsetof(geom_stats, Kt_fracpos)},
    {"St_mean", offsetof(geom_stats, St_mean)},
    {"Kh_mean", offsetof(geom_stats, Kh_mean)},
    {"Kh_median", offsetof(geom_stats, Kh_median)},
    {"Kh_absmean", offsetof(geom_stats, Kh_absmean)},
    {"Kh_q05", offsetof(geom_stats, Kh_q05)},
    {"Kh_q95", offsetof(geom_stats, Kh_q95)},
    {"Kh_fracpos", offsetof(geom_stats, Kh_fracpos)},
    {"aniso_median", offsetof(geom_stats, aniso_median)},
    {"H_norm_mean", offsetof(geom_stats, H_norm_mean)},
    {"logdet_mean", offsetof(geom_stats, logdet_mean)},
    {"intK", offsetof(geom_stats, intK)},
    {"intabsK", offsetof(geom_stats, intabsK)},
    {"intK_err", offsetof(geom_stats, intK_err)},
    {"sink_mass", offsetof(geom_stats, sink_mass)}, /* format_version 3 */
    {"max_attn", offsetof(geom_stats, max_attn)},   /* format_version 3 */
    {"massive_act", offsetof(geom_stats, massive_act)}, /* format_version 5 */
    {"value_drain", offsetof(geom_stats, value_drain)}, /* format_version 5 */
    {"resid_peak", offsetof(geom_stats, resid_peak)},   /* format_version 5 */
    {"sink_headmax", offsetof(geom_stats, sink_headmax)}, /* format_version 6 */
    {"attn_entropy", offsetof(geom_stats, attn_entropy)}, /* format_version 6 */
    {"ablate_first", offsetof(geom_stats, ablate_first)}, /* format_version 6 */
    {"ablate_attn", offsetof(geom_stats, ablate_attn)},   /* format_version 6 */
};

/* Distribution summary of one curvature quantity.
 * x: (n) values, sorted in place; n ≥ 1.
 * mean, median (= type-7 0.5 quantile), mean |x|, 5% and 95% quantiles,
 * fraction strictly positive. */
static void geom_summary(int n, double *x, double *mean, double *median, double *absmean,
                         double *q05, double *q95, double *fracpos) {
  double sum = 0.0, abssum = 0.0;
  int pos = 0;
  for (int i = 0; i < n; i++) {
    sum += x[i];
    abssum += fabs(x[i]);
    pos += x[i] > 0.0;
  }
  qsort(x, (size_t)n, sizeof *x, cs_compare_doubles);
  *mean = sum / n;
  *absmean = abssum / n;
  *fracpos = (double)pos / n;
  *median = cs_quantile_sorted(x, n, 0.5);
  *q05 = cs_quantile_sorted(x, n, 0.05);
  *q95 = cs_quantile_sorted(x, n, 0.95);
}

/* Usable in statistics: resolved (flat or curved). */
static int geom_point_resolved(const geom_point *p) {
  return !p->degenerate && (p->cls == GEOM_FLAT || p->cls == GEOM_CURVED);
}

/* Mean, median, mean |·|, quantiles and fraction positive of one per-point
 * quantity over the resolved points. which: 0 K, 1 K̃, 2 K̂. vals: (nv) scratch. */
static void geom_summary_of(int n, const geom_point *pts, int which, double *vals, double *mean,
                            double *median, double *absmean, double *q05, double *q95,
                            double *fracpos) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (geom_point_resolved(&pts[i]))
      vals[k++] = which == 0 ? pts[i].K : which == 1 ? pts[i].K_tilde : pts[i].K_hat;
  geom_summary(k, vals, mean, median, absmean, q05, q95, fracpos);
}

int geom_stats_compute(int n, const geom_point *pts, int n_box, const geom_point *box,
                       double box_volume, int m, geom_stats *out) {
  // pts: (n) evaluation points; box: (n_box) uniform points of the input box
  if (!out) return cs_error(CS_ERR_INPUT, "geom_stats_compute: NULL output");
  if (n < 0 || n_box < 0 || (n > 0 && !pts) || (n_box > 0 && !box))
    return cs_error(CS_ERR_INPUT, "geom_stats_compute: bad point arrays (n = %d, n_box = %d)", n,
                    n_box);
  double nan = NAN;
  *out = (geom_stats){.n_points = n,
                      .degenerate_frac = nan, .unresolved_frac = nan,
                      .flat_frac = nan, .curved_frac = nan,
                      .K_mean = nan, .K_median = nan, .K_absmean = nan,
                      .K_q05 = nan, .K_q95 = nan, .K_fracpos = nan,
                      .S_mean = nan, .S_se = nan,
                      .Kt_mean = nan, .Kt_median = nan, .Kt_absmean = nan,
                      .Kt_q05 = nan, .Kt_q95 = nan, .Kt_fracpos = nan, .St_mean = nan,
                      .Kh_mean = nan, .Kh_median = nan, .Kh_absmean = nan,
                      .Kh_q05 = nan, .Kh_q95 = nan, .Kh_fracpos = nan,
                      .aniso_median = nan,
                      .H_norm_mean = nan, .logdet_mean = nan, .intK = nan, .intabsK = nan,
                      .intK_err = nan, .sink_mass = nan, .max_attn = nan,
                      .massive_act = nan, .value_drain = nan, .resid_peak = nan,
                      .sink_headmax = nan, .attn_entropy = nan, .ablate_first = nan,
                      .ablate_attn = nan};

  // ∫K dA = volume · E_box[K·√det g] and ∫|K| dA (m = 2), Monte Carlo over the
  // box points: degenerate ones contribute 0 (vanishing area element),
  // unresolved ones are left out of the mean (their value is unknown)
  if (m == 2 && n_box > 0) {
    double acc = 0.0, absacc = 0.0, erracc = 0.0;
    int used = 0;
    for (int i = 0; i < n_box; i++) {
      if (box[i].degenerate) {
        used++;
      } else if (geom_point_resolved(&box[i])) {
        acc += box[i].K * box[i].area;
        absacc += fabs(box[i].K) * box[i].area;
        erracc += box[i].S_err / 2.0 * box[i].area; /* K = S/2 */
        used++;
      }
    }
    if (used > 0) {
      out->intK = box_volume * acc / used;
      out->intabsK = box_volume * absacc / used;
      out->intK_err = box_volume * erracc / used;
    }
  }

  int nv = 0, n_deg = 0, n_flat = 0, n_unres = 0;
  for (int i = 0; i < n; i++) {
    n_deg += pts[i].degenerate;
    n_flat += !pts[i].degenerate && pts[i].cls == GEOM_FLAT;
    n_unres += !pts[i].degenerate && !geom_point_resolved(&pts[i]);
    nv += geom_point_resolved(&pts[i]);
  }
  if (n > 0) {
    out->degenerate_frac = (double)n_deg / n;
    out->unresolved_frac = (double)n_unres / n;
    out->flat_frac = (double)n_flat / n;
    out->curved_frac = (double)(nv - n_flat) / n;
  }
  if (nv == 0) return CS_OK;

  // pass 1: plain means, and Σ (MC standard error)² of S
  double S_sum = 0.0, St_sum = 0.0, H_sum = 0.0, ld_sum = 0.0, mc_var_sum = 0.0;
  for (int i = 0; i < n; i++) {
    if (!geom_point_resolved(&pts[i])) continue;
    S_sum += pts[i].S;
    St_sum += pts[i].S_tilde;
    H_sum += pts[i].H_norm;
    ld_sum += pts[i].logdet_g;
    mc_var_sum += pts[i].S_se * pts[i].S_se;
  }
  out->S_mean = S_sum / nv;
  out->St_mean = St_sum / nv;
  out->H_norm_mean = H_sum / nv;
  out->logdet_mean = ld_sum / nv;

  // pass 2: standard error of S_mean. The sample variance s² of the per-point
  // estimates Ŝ_i = S_i + ε_i is unbiased for Var(S) + mean Var(ε_i), so
  // s²/n already carries the Monte Carlo noise; but the error of the mean can
  // never be below the Monte Carlo part alone, Σ se_i²/n². Hence
  //   se² = max(s²/n, Σ se_i²/n²),
  // which also stays sensible when s² happens to be small. One point: unknown.
  if (nv >= 2) {
    double ss = 0.0;
    for (int i = 0; i < n; i++) {
      if (!geom_point_resolved(&pts[i])) continue;
      double dev = pts[i].S - out->S_mean;
      ss += dev * dev;
    }
    double sample_var = ss / (nv - 1) / nv, mc_var = mc_var_sum / ((double)nv * nv);
    out->S_se = sqrt(sample_var > mc_var ? sample_var : mc_var);
  }

  // pass 3: distribution summaries of K, K̃ and K̂ (sorting a copy), and the
  // median anisotropy index log(tr g/m) − log det g/m = log(AM/GM) ≥ 0
  double *vals;
  CS_CHECK(CS_CALLOC(vals, nv));
  geom_summary_of(n, pts, 0, vals, &out->K_mean, &out->K_median, &out->K_absmean, &out->K_q05,
                  &out->K_q95, &out->K_fracpos);
  geom_summary_of(n, pts, 1, vals, &out->Kt_mean, &out->Kt_median, &out->Kt_absmean, &out->Kt_q05,
                  &out->Kt_q95, &out->Kt_fracpos);
  geom_summary_of(n, pts, 2, vals, &out->Kh_mean, &out->Kh_median, &out->Kh_absmean, &out->Kh_q05,
                  &out->Kh_q95, &out->Kh_fracpos);
  int k = 0;
  for (int i = 0; i < n; i++)
    if (geom_point_resolved(&pts[i]))
      vals[k++] = geom_anisotropy_index(m, pts[i].tr_g, pts[i].logdet_g);
  qsort(vals, (size_t)k, sizeof *vals, cs_compare_doubles);
  out->aniso_median = cs_quantile_sorted(vals, k, 0.5);
  free(vals);
  return CS_OK;
}

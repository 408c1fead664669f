/* decomposition.c — the decomposition of one amplification row (arch,
 * task, regime) and direction, Δ log K̃ = Δ log K̂ + Δ anisotropy
 * (analysis/README.md, "Measures"): amplification.csv's last columns
 * (csv.c) and claim 4's table (claim4.c). */
#include "compute.h"

#include <math.h>

int analysis_deepest_done(const analysis_data *D, int a, int t, int r) {
  for (int d = D->n_depth - 1; d >= 0; d--)
    if (D->group[analysis_gidx(D, a, t, d, r)].n_done > 0) return d;
  return -1;
}

void analysis_amp_decomp(const analysis_data *D, int a, int t, int r, int prefix, analysis_decomp *out) {
  int dlast = analysis_deepest_done(D, a, t, r), dfirst = -1;
  for (int d = 0; d < D->n_depth && dfirst < 0; d++)
    if (D->group[analysis_gidx(D, a, t, d, r)].n_done > 0) dfirst = d;
  out->n = 0;
  for (int e = 0; e < 2; e++) {
    double skt = 0, skh = 0;
    int k = 0;
    for (int s = 0; dlast >= 0 && s < D->n_seed; s++) {
      int d = prefix ? dlast : e ? dlast : dfirst;
      const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
      int l = prefix ? (e ? (c ? c->depth : 0) : 1) : 0;
      double kt = analysis_cell_value(c, l, MEASURE_KT_ABS), kh = analysis_cell_value(c, l, MEASURE_KH_ABS);
      if (!(kt > 0) || !(kh > 0) || !isfinite(kt) || !isfinite(kh)) continue;
      skt += log(kt), skh += log(kh), k++;
    }
    out->kt[e] = k ? skt / k : NAN, out->kh[e] = k ? skh / k : NAN;
    out->an[e] = out->kt[e] - out->kh[e];
    if (e == 0 || k < out->n) out->n = k;
  }
}

/* rounding.c — the class of a report row (rounding.h): curved, flat to
 * rounding or unresolved, from the point classes of its seeds (geom_stats,
 * docs/NUMERICS.md) or, for rows without them, the K̃ bound of claim 1
 * (analysis/VERDICTS.md, "Verdicts in index.md"). One rule for claim 1 and
 * for every figure (analysis/README.md, "Figures"). */
#include "rounding.h"

#include <math.h>

/* The reference arch of the relative K̃ bound: gated, else gated-headwise (-1: neither). */
static int analysis_rounding_reference(const analysis_data *D) {
  int g = analysis_find_arch(D, ARCH_GATED);
  return g >= 0 ? g : analysis_find_arch(D, ARCH_GATED_HEADWISE);
}

int analysis_rounding_of(const analysis_data *D, int a, int t, int d, int r, int l, analysis_rounding *out) {
  *out = (analysis_rounding){ANALYSIS_ROW_UNRESOLVED, 0, 0, NAN, NAN, NAN, NAN, NAN};
  const analysis_prefix *p = D->prefix[analysis_gidx(D, a, t, d, r)];
  if (!p || l < 1 || l > D->depth[d]) return 0;
  const analysis_prefix *row = &p[l - 1];
  out->kt_max = row->max[MEASURE_KT_ABS];
  out->logdet = row->m[MEASURE_LOGDET].mean;
  if (row->n_classified > 0) {
    /* the point classes: one curved point in one seed makes the row curved */
    out->classified = 1;
    out->resolved = row->m[MEASURE_FLAT].mean + row->m[MEASURE_CURVED].mean;
    out->curved_max = row->max[MEASURE_CURVED];
    out->cls = out->curved_max > 0  ? ANALYSIS_ROW_CURVED
               : out->resolved > 0 ? ANALYSIS_ROW_FLAT
                                   : ANALYSIS_ROW_UNRESOLVED;
    return 1;
  }
  /* no classification: the K̃ bound, absolute, then relative to the gated arch */
  if (!isfinite(out->kt_max)) return 1;
  int g = analysis_rounding_reference(D);
  const analysis_prefix *q = g >= 0 && g != a ? D->prefix[analysis_gidx(D, g, t, d, r)] : NULL;
  if (q && q[l - 1].m[MEASURE_KT_ABS].mean > 0) out->ratio = out->kt_max / q[l - 1].m[MEASURE_KT_ABS].mean;
  out->by_ratio = !(out->kt_max <= ANALYSIS_FLAT_KT) && out->ratio <= ANALYSIS_FLAT_REL;
  out->cls = out->kt_max <= ANALYSIS_FLAT_KT || out->by_ratio ? ANALYSIS_ROW_FLAT : ANALYSIS_ROW_CURVED;
  return 1;
}

analysis_row_class analysis_row_class_of(const analysis_data *D, int a, int t, int d, int r, int l) {
  analysis_rounding R;
  analysis_rounding_of(D, a, t, d, r, l, &R);
  return R.cls;
}

const char *analysis_row_class_name(analysis_row_class c) {
  static const char *const NAMES[ANALYSIS_ROW_CLASSES] = {
      [ANALYSIS_ROW_CURVED] = "curved",
      [ANALYSIS_ROW_FLAT] = "flat to rounding",
      [ANALYSIS_ROW_UNRESOLVED] = "unresolved",
  };
  return (int)c >= 0 && c < ANALYSIS_ROW_CLASSES ? NAMES[c] : "?";
}

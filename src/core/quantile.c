/* quantile.c — the ascending double comparator and the type-7 quantile of
 * sorted data (quantile.h), shared by geom, verify and analysis. */
#include "curvsweep/quantile.h"

#include <math.h>

int cs_compare_doubles(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  if (isnan(a)) return isnan(b) ? 0 : 1;
  if (isnan(b)) return -1;
  return (a > b) - (a < b);
}

double cs_quantile_sorted(const double *x, int n, double q) {
  if (n <= 0) return NAN;
  double h = (n - 1) * q;
  int lo = (int)floor(h);
  if (lo < 0) return x[0];
  if (lo >= n - 1) return x[n - 1];
  return x[lo] + (h - lo) * (x[lo + 1] - x[lo]);
}

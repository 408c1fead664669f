/* quantile.h — the one sort order and the one quantile of the project's
 * statistics (core: no dependency on any other module).
 *
 * Sort with qsort(x, n, sizeof *x, cs_compare_doubles), then read quantiles
 * with cs_quantile_sorted. Quantiles are "type 7" (linear interpolation
 * between order statistics, the R and NumPy default). */
#ifndef CURVSWEEP_QUANTILE_H
#define CURVSWEEP_QUANTILE_H

/* qsort comparator of doubles: ascending, NaN last (so a stray NaN never
 * breaks the sort); returns −1, 0 or 1. */
int cs_compare_doubles(const void *pa, const void *pb);

/* Type-7 quantile of x[0..n-1] sorted ascending (no NaN), 0 ≤ q ≤ 1:
 * h = (n − 1)·q, Q = x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋ + 1] − x[⌊h⌋]), clamped to
 * [x[0], x[n − 1]]. NaN when n ≤ 0. */
double cs_quantile_sorted(const double *x, int n, double q);

#endif

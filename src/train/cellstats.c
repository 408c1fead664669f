/* cellstats.c — the per-cell measures besides curvature (cellstats.h;
 * docs/MODELS.md, "Calibration", "Stability", "Gate scores and attention
 * entropy"): calibration sums over predictions, loss spikes of a training
 * curve, the summary of a block's gate values. */
#include "curvsweep/cellstats.h"

#include "curvsweep/error.h"
#include "curvsweep/quantile.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ calibration */

void cellstats_calib_add(cellstats_calib *c, int K, const double *z, int y) {
  // z: (K) logits; p = softmax(z) through the largest logit
  double mx = z[0], sum = 0.0;
  int am = 0;
  for (int k = 1; k < K; k++)
    if (z[k] > mx) mx = z[k], am = k;
  for (int k = 0; k < K; k++) sum += exp(z[k] - mx);
  double brier = 0.0;
  for (int k = 0; k < K; k++) {
    double p = exp(z[k] - mx) / sum, e = p - (k == y ? 1.0 : 0.0);
    brier += e * e;
  }
  double conf = 1.0 / sum; /* the largest probability: exp(0) / sum */
  int b = (int)ceil(conf * CELLSTATS_ECE_BINS) - 1;
  b = b < 0 ? 0 : b >= CELLSTATS_ECE_BINS ? CELLSTATS_ECE_BINS - 1 : b;
  c->n++;
  c->correct += am == y;
  c->nll += mx + log(sum) - z[y];
  c->brier += brier;
  c->bin_n[b] += 1.0;
  c->bin_conf[b] += conf;
  c->bin_correct[b] += am == y;
}

void cellstats_calib_finish(const cellstats_calib *c, double *nll, double *brier, double *ece,
                            double *acc) {
  if (c->n == 0) {
    *nll = *brier = *ece = *acc = NAN;
    return;
  }
  double n = (double)c->n, e = 0.0;
  for (int b = 0; b < CELLSTATS_ECE_BINS; b++)
    if (c->bin_n[b] > 0)
      e += c->bin_n[b] / n * fabs(c->bin_correct[b] / c->bin_n[b] - c->bin_conf[b] / c->bin_n[b]);
  *nll = c->nll / n;
  *brier = c->brier / n;
  *ece = e;
  *acc = (double)c->correct / n;
}

/* -------------------------------------------------------------- stability */

void cellstats_loss_spikes(int n, const double *loss, double chance, int *spikes,
                           double *ratio_max) {
  *spikes = 0;
  *ratio_max = NAN;
  int finite = 0; /* the leading finite losses (a diverged curve ends non-finite) */
  while (finite < n && isfinite(loss[finite])) finite++;
  int in_spike = 0;
  for (int k = 1; k < finite; k++) {
    // m: the best of the window of evaluations before k
    int j0 = k - CELLSTATS_SPIKE_WINDOW < 0 ? 0 : k - CELLSTATS_SPIKE_WINDOW;
    double m = loss[j0];
    for (int j = j0 + 1; j < k; j++) m = loss[j] < m ? loss[j] : m;
    if (m > 0.0) {
      double r = loss[k] / m;
      if (!(r <= *ratio_max)) *ratio_max = r; /* NaN (none yet) too */
    }
    int spiked = loss[k] > CELLSTATS_SPIKE_RATIO * m && loss[k] > m + CELLSTATS_SPIKE_BACK * (chance - m);
    *spikes += spiked && !in_spike;
    in_spike = spiked;
  }
}

/* ------------------------------------------------------------ gate scores */

int cellstats_gate_scores(int64_t rows, int width, const double *G, cs_gate_scores *out) {
  int64_t n = rows * width;
  if (rows < 1 || width < 1 || !G || rows > INT32_MAX / width)
    return cs_error(CS_ERR_INPUT, "gate scores: %lld rows of %d values (allowed: 1 to 2^31 - 1 "
                    "values)", (long long)rows, width);
  double *sorted, *col;
  CS_CHECK(CS_CALLOC(sorted, n + width));
  col = sorted + n;
  // pass 1: the mean, the column sums, the share below RESULT_GATE_LOW, the histogram
  double sum = 0.0;
  int64_t low = 0, bins[RESULT_GATE_BINS] = {0};
  for (int64_t r = 0; r < rows; r++)
    for (int c = 0; c < width; c++) {
      double g = G[r * width + c];
      sum += g;
      col[c] += g;
      low += g < RESULT_GATE_LOW;
      int b = (int)(g * RESULT_GATE_BINS);
      bins[b < 0 ? 0 : b >= RESULT_GATE_BINS ? RESULT_GATE_BINS - 1 : b]++;
    }
  double mean = sum / (double)n;
  // pass 2: the two-way decomposition of the sum of squares about the mean:
  // rows (positions) and columns (channels); the rest is their interaction
  double ss = 0.0, ss_row = 0.0, ss_col = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    double rs = 0.0;
    for (int c = 0; c < width; c++) {
      double e = G[r * width + c] - mean;
      ss += e * e;
      rs += G[r * width + c];
    }
    double a = rs / width - mean;
    ss_row += (double)width * a * a;
  }
  for (int c = 0; c < width; c++) {
    double b = col[c] / (double)rows - mean;
    ss_col += (double)rows * b * b;
  }
  memcpy(sorted, G, sizeof(double) * (size_t)n);
  qsort(sorted, (size_t)n, sizeof *sorted, cs_compare_doubles);
  out->n_scores = n;
  out->mean = mean;
  out->median = cs_quantile_sorted(sorted, (int)n, 0.5);
  out->q10 = cs_quantile_sorted(sorted, (int)n, 0.1);
  out->q90 = cs_quantile_sorted(sorted, (int)n, 0.9);
  out->frac_low = (double)low / (double)n;
  out->var_query = ss > 0.0 ? ss_row / ss : 0.0;
  out->var_channel = ss > 0.0 ? ss_col / ss : 0.0;
  for (int b = 0; b < RESULT_GATE_BINS; b++) out->hist[b] = (double)bins[b] / (double)n;
  free(sorted);
  return CS_OK;
}

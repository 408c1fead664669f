/* cellstats.h — the per-cell measures besides curvature (src/train/cellstats.c;
 * docs/MODELS.md, "Calibration", "Stability", "Gate scores and attention
 * entropy"): the calibration of a model's predictions, the loss spikes of
 * a training curve and the summary of a block's gate values. Pure
 * functions of numbers: the cell (cell.c) feeds them. */
#ifndef CURVSWEEP_CELLSTATS_H
#define CURVSWEEP_CELLSTATS_H

#include "curvsweep/result.h"

#include <stdint.h>

/* ---- calibration ---- */

#define CELLSTATS_ECE_BINS 15

/* Sums over predictions: n predictions, correct ones (argmax, the first on
 * a tie), Σ NLL, Σ Brier, and per confidence bin b (the confidence c =
 * the largest probability lies in (b/15, (b+1)/15], bin 0 also holding
 * c = 0) its count, Σ c and its correct predictions. Zero it to start. */
typedef struct {
  int64_t n, correct;
  double nll, brier;
  double bin_n[CELLSTATS_ECE_BINS], bin_conf[CELLSTATS_ECE_BINS], bin_correct[CELLSTATS_ECE_BINS];
} cellstats_calib;

/* One prediction: logits z (K ≥ 2 classes) against the target class y:
 *   p = softmax(z);  NLL = logsumexp(z) − z_y;  Brier = Σ_k (p_k − [k = y])². */
void cellstats_calib_add(cellstats_calib *c, int K, const double *z, int y);
/* The means over the predictions (NaN for none): NLL, Brier, accuracy and
 *   ECE = Σ_b (n_b / n) |acc_b − conf_b|,
 * acc_b and conf_b the bin's accuracy and mean confidence (Guo et al. 2017). */
void cellstats_calib_finish(const cellstats_calib *c, double *nll, double *brier, double *ece,
                            double *acc);

/* ---- stability (docs/MODELS.md, "Stability") ---- */

#define CELLSTATS_SPIKE_WINDOW 5   /* evaluations before k whose best loss it is compared to */
#define CELLSTATS_SPIKE_RATIO 2.0  /* a spike at least doubles that loss ... */
#define CELLSTATS_SPIKE_BACK 0.5   /* ... and climbs back more than this share of the way from
                                      it to the loss of a uniform guess, log K (K classes) */

/* Loss spikes of a training curve: loss[0..n) the full-training-set loss at
 * the curve's evaluations (a diverged cell's non-finite tail left out: only
 * the leading finite losses count), chance = log K, the loss of a uniform
 * guess over the K classes. With m_k the smallest of the W =
 * CELLSTATS_SPIKE_WINDOW losses before k, evaluation k ≥ 1 is spiked when
 *   loss[k] > CELLSTATS_SPIKE_RATIO · m_k  and
 *   loss[k] > m_k + CELLSTATS_SPIKE_BACK · (chance − m_k);
 * *spikes counts the runs of consecutive spiked evaluations, *ratio_max is
 * the largest loss[k] / m_k over k ≥ 1 with m_k > 0 (NaN when there is
 * none). */
void cellstats_loss_spikes(int n, const double *loss, double chance, int *spikes,
                           double *ratio_max);

/* ---- gate scores ---- */

/* The summary of one block's gate values G (rows × width, rows = (input,
 * position) pairs, columns the gate's channels) into out (its prefix
 * untouched): cs_gate_scores of result.h. CS_ERR_INPUT for no values;
 * CS_ERR_NOMEM. */
int cellstats_gate_scores(int64_t rows, int width, const double *G, cs_gate_scores *out);

#endif

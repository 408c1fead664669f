/* bench/synth.h — synthetic sweeps for the archive benches (bench/merge.c,
 * bench/gen_archive.c): a spec of a given cell count and a deterministic
 * result per cell, shaped like a real one (docs/ARCHIVE.md) but with no
 * training. Header-only: every bench/<name>.c is its own program. */
#ifndef CS_BENCH_SYNTH_H
#define CS_BENCH_SYNTH_H

#include "curvsweep/config.h"
#include "curvsweep/error.h"
#include "curvsweep/result.h"
#include "curvsweep/spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Spec text of n_cells cells (n_cells a multiple of 8): arch × depth 1..4 ×
 * seed, m = 2 so the per-point maps have data; points per cell. */
static void synth_spec_text(char *buf, size_t len, int64_t n_cells, int points, int save_points) {
  snprintf(buf, len,
           "; synthetic sweep of the archive benches (bench/synth.h)\n"
           "[sweep]\nname = synth-%lld\noutput = synth.h5\nsave_points = %s\n"
           "[grid]\narch = ungated, gated\ndepth = 1..4\nseed = 0..%lld\n"
           "[task]\ntrain_points = 64\ntest_points = 64\n[model]\nwidth = 4\n"
           "[train]\nepochs = 1\nbatch = 16\n[curvature]\npoints = %d\n",
           (long long)n_cells, save_points ? "yes" : "no", (long long)(n_cells / 8 - 1), points);
}

/* Result of one cell: depth from the spec, n_curve epochs, per-prefix
 * statistics that depend on cell and prefix, and (n_points > 0) per-point
 * arrays. Every 50th cell fails, every 37th diverges (no points then). */
static int synth_result(const cs_spec *spec, int64_t cell, int n_points, cs_cell_result *r) {
  memset(r, 0, sizeof *r);
  cs_config cfg;
  CS_CHECK(spec_cell_config(spec, cell, &cfg));
  double c = (double)cell;
  r->cell_id = cell;
  r->status = cell % 50 == 49 ? CELL_FAILED : cell % 37 == 36 ? CELL_DIVERGED : CELL_DONE;
  r->rank = (int)(cell % 64) + 1;
  r->attempts = 1;
  r->wall_s = 0.1 + (double)(cell % 97) / 100;
  r->train_loss = 0.5 / (1 + c / 1e5);
  r->train_acc = 0.5 + (double)(cell % 41) / 100;
  r->test_acc = 0.45 + (double)(cell % 43) / 100;
  r->n_params = 100 + cfg.depth * 40;
  if (r->status == CELL_FAILED) snprintf(r->message, sizeof r->message, "synthetic failure");
  if (r->status == CELL_DIVERGED) snprintf(r->message, sizeof r->message, "synthetic divergence");
  if (r->status == CELL_FAILED) return CS_OK;
  r->n_curve = 2;
  CS_CHECK(CS_CALLOC(r->curve, r->n_curve));
  for (int e = 0; e < r->n_curve; e++)
    r->curve[e] = (cs_curve_point){e, r->train_loss * (2 - e), r->train_acc - 0.1 * (1 - e),
                                   r->test_acc - 0.1 * (1 - e)};
  /* /cellstats: a done or diverged cell's row (docs/ARCHIVE.md) */
  r->cstats = (cs_cell_stats){1, (int)(cell % 3), 1.0 + (double)(cell % 7) / 8, NAN, NAN, NAN};
  if (r->status == CELL_DIVERGED) return CS_OK;
  r->cstats.test_nll = 2 * r->train_loss, r->cstats.test_brier = r->train_loss;
  r->cstats.test_ece = (double)(cell % 11) / 64;
  r->depth = cfg.depth;
  CS_CHECK(CS_CALLOC(r->curv, r->depth));
  for (int l = 0; l < r->depth; l++) {
    geom_stats *s = &r->curv[l];
    double v = sin(c * 0.001 + l) * (l + 1);
    s->n_points = n_points > 0 ? n_points : 32;
    s->degenerate_frac = 0.0625, s->unresolved_frac = 0.0625, s->flat_frac = 0.125;
    s->curved_frac = 0.75;
    s->K_mean = v, s->K_median = 0.9 * v, s->K_absmean = fabs(v) + 0.1, s->K_q05 = v - 1;
    s->K_q95 = v + 1, s->K_fracpos = 0.5 + 0.4 * sin(c);
    s->S_mean = 2 * v, s->S_se = 0.01, s->Kt_mean = v / 2, s->Kt_median = v / 2.2;
    s->Kt_absmean = fabs(v) / 2 + 0.05, s->Kt_q05 = v / 2 - 1, s->Kt_q95 = v / 2 + 1;
    s->Kt_fracpos = s->K_fracpos, s->St_mean = v, s->Kh_mean = v / 3, s->Kh_median = v / 3.1;
    s->Kh_absmean = fabs(v) / 3 + 0.02, s->Kh_q05 = v / 3 - 1, s->Kh_q95 = v / 3 + 1;
    s->Kh_fracpos = s->K_fracpos, s->aniso_median = 1.5, s->H_norm_mean = 3 + l;
    s->logdet_mean = -l, s->intK = v * 0.7, s->intabsK = fabs(v) * 0.8, s->intK_err = 0.01;
  }
  /* /gates: a row per block of a gated cell */
  if (config_arch_gated(cfg.arch) && config_arch_info(cfg.arch)->attention) {
    CS_CHECK(CS_CALLOC(r->gates, r->depth));
    r->n_gates = r->depth;
    for (int l = 0; l < r->depth; l++) {
      cs_gate_scores *g = &r->gates[l];
      *g = (cs_gate_scores){l + 1, 64, 0.5, 0.5, 0.25, 0.75, 0.0625, 0.5, 0.25, {0}};
      for (int b = 0; b < RESULT_GATE_BINS; b++) g->hist[b] = 1.0 / RESULT_GATE_BINS;
    }
  }
  if (n_points <= 0) return CS_OK;
  int m = 2, L = r->depth;
  r->n_points = n_points, r->m = m;
  CS_CHECK(CS_CALLOC(r->pt_x, (size_t)n_points * m));
  for (int i = 0; i < n_points * m; i++) r->pt_x[i] = sin(c + i);
  double **f[RESULT_N_POINT_ARRAYS];
  result_point_arrays(r, f);
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++) {
    CS_CHECK(CS_CALLOC(*f[k], (size_t)L * n_points));
    for (int i = 0; i < L * n_points; i++) (*f[k])[i] = cos(c + k + 0.5 * i);
  }
  CS_CHECK(CS_CALLOC(r->pt_class, (size_t)L * n_points));
  for (int i = 0; i < L * n_points; i++) r->pt_class[i] = (int8_t)((i + cell) % 4);
  return CS_OK;
}

#endif

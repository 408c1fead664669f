/* synthetic.c — synthetic cells for benchmarking the sweep engine itself
 * (docs/SCALING.md): no model, no data; a cell sleeps for a duration
 * proportional to its cost in the real cost model (sweep_cell_cost), in
 * steps of SYNTH_STEP_S with the train hooks called between steps (so rank
 * 0 serves messages exactly as between real optimisation steps), and
 * reports a done result whose values depend only on the cell id: depth =
 * cfg->depth prefixes of finite statistics, one curve point, no points or
 * parameters. Sleeping, not spinning, so 64 ranks on 2 cores measure the
 * engine's messaging and archive writes, not CPU contention. */
#include "sweep_internal.h"

#include "curvsweep/clock.h"
#include "curvsweep/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SYNTH_STEP_S 0.002 /* one synthetic "optimisation step" */

static void synth_sleep(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  nanosleep(&ts, NULL);
}

int sweep_synthetic_cell(const cs_config *cfg, int64_t cell_id, double seconds,
                         const train_hooks *hooks, cs_cell_result *r) {
  memset(r, 0, sizeof *r);
  r->cell_id = cell_id;
  double t0 = cs_monotonic_seconds();
  // the "training": sleep in steps, serving in between as real training does
  for (;;) {
    double left = seconds - (cs_monotonic_seconds() - t0);
    if (left <= 0) break;
    synth_sleep(left < SYNTH_STEP_S ? left : SYNTH_STEP_S);
    if (hooks && hooks->between_steps) CS_CHECK(hooks->between_steps(hooks->ctx));
  }
  // the result: finite values that are a function of the cell id only
  double c = (double)cell_id;
  r->status = CELL_DONE;
  r->train_loss = 1.0 / (2.0 + fmod(c, 97.0));
  r->train_acc = 0.5 + fmod(c, 41.0) / 100.0;
  r->test_acc = 0.45 + fmod(c, 43.0) / 100.0;
  r->n_params = 100 + 40 * (int64_t)cfg->depth;
  r->n_curve = 1;
  CS_CHECK(CS_CALLOC(r->curve, 1));
  r->curve[0] = (cs_curve_point){cfg->epochs, r->train_loss, r->train_acc, r->test_acc};
  r->depth = cfg->depth;
  CS_CHECK(CS_CALLOC(r->curv, r->depth));
  for (int l = 0; l < r->depth; l++) {
    geom_stats *s = &r->curv[l];
    double v = sin(0.001 * c + l) * (l + 1);
    s->n_points = cfg->points;
    s->degenerate_frac = 0, s->unresolved_frac = 0, s->flat_frac = 0.25, s->curved_frac = 0.75;
    s->K_mean = s->K_median = s->Kt_mean = s->Kt_median = s->Kh_mean = s->Kh_median = v;
    s->K_absmean = s->Kt_absmean = s->Kh_absmean = fabs(v) + 0.125;
    s->K_q05 = s->Kt_q05 = s->Kh_q05 = v - 1;
    s->K_q95 = s->Kt_q95 = s->Kh_q95 = v + 1;
    s->K_fracpos = s->Kt_fracpos = s->Kh_fracpos = 0.5;
    s->S_mean = s->St_mean = 2 * v, s->S_se = 0.01, s->aniso_median = 1.5;
    s->H_norm_mean = 3 + l, s->logdet_mean = -l, s->intK = v, s->intabsK = fabs(v), s->intK_err = 0.01;
    s->massive_act = s->value_drain = s->resid_peak = NAN; /* not measured (docs/ARCHIVE.md) */
    s->attn_entropy = s->ablate_first = s->ablate_attn = NAN;
  }
  // the rows every done cell has: /cellstats, and /gates for a gated attention arch
  r->cstats = (cs_cell_stats){1, 0, 0.5 + fmod(c, 7.0) / 16.0, 2.0 * r->train_loss,
                              0.5 * r->train_loss, fmod(c, 11.0) / 64.0};
  if (config_arch_gated(cfg->arch) && config_arch_info(cfg->arch)->attention) {
    CS_CHECK(CS_CALLOC(r->gates, r->depth));
    r->n_gates = r->depth;
    for (int l = 0; l < r->depth; l++) {
      cs_gate_scores *g = &r->gates[l];
      *g = (cs_gate_scores){l + 1, 64, 0.5, 0.5, 0.25, 0.75, 0.0625, 0.5, 0.25, {0}};
      for (int b = 0; b < RESULT_GATE_BINS; b++) g->hist[b] = 1.0 / RESULT_GATE_BINS;
    }
  }
  r->wall_s = cs_monotonic_seconds() - t0;
  return CS_OK;
}

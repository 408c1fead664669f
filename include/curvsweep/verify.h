/* verify.h — the theory checks of docs/NUMERICS.md, run on the real engine:
 * analytic surfaces, flatness of the affine (structured) regime, curvature
 * of its gated counterpart, a gated point of positive curvature, and the
 * scale behaviour of K and K̃. Shared by `curvsweep verify` and the tests. */
#ifndef CURVSWEEP_VERIFY_H
#define CURVSWEEP_VERIFY_H

#include "curvsweep/config.h"
#include "curvsweep/geom.h"

/* One row of the `curvsweep verify` table: pass = |value − expected| ≤ tol
 * (tol is the absolute bound actually applied, e.g. 1e-10·|expected|). */
typedef struct {
  char check[96];
  double value, expected, tol;
  int pass;
} verify_check;

/* Analytic-surface checks of the engine (docs/NUMERICS.md): one row per surface and
 * point (relative tolerance 1e-10, absolute 1e-12 where expected is 0).
 * *n_rows is the number of rows of the table. With rows = NULL only *n_rows
 * is set (a size query); otherwise max_rows must be at least that many
 * (CS_ERR_INPUT if not). Returns an error only if the engine itself fails:
 * a wrong curvature is a row with pass = 0, not an error. */
int verify_surfaces(verify_check *rows, int max_rows, int *n_rows);

/* A growing table of checks. */
typedef struct {
  int n, cap;
  verify_check *rows;
} verify_table;

void verify_table_free(verify_table *t);
/* Append a row; pass is given by the caller (for bounds, value ≤ tol or ≥). */
int verify_add(verify_table *t, const char *check, double value, double expected, double tol,
               int pass);

/* Affine regime (docs/MODELS.md): m input dims, m + 1 slots, one head, no
 * residual, no norm, every tensor randomised from seed; curvature of h_L at
 * random points in [-1,1]^m. ratio = |S| / Σ_ab |Π_ab|², Π_ab the
 * unprojected second derivatives in an orthonormal tangent frame (the
 * scale S would have if every second derivative were normal): flat ⇔ ratio
 * at rounding level. |K̃| is the scale-free curvature. */
/* Flat: ratio ≤ 1e-16 (the project's flatness bound is 1e-8; the engine reaches ~1e-27).
 * Curved: some point with ratio ≥ 1e-10, a million times the flat bound. */
#define VERIFY_FLAT_BOUND 1e-16
#define VERIFY_CURVED_BOUND 1e-10

typedef struct {
  double max_ratio, median_ratio;
  double max_abs_Kt, median_abs_Kt;
  int valid_points;
  int flat_points;  /* of the valid points, classified flat (docs/NUMERICS.md) */
} verify_affine;

int verify_affine_stats(cs_arch arch, int m, int depth, uint64_t seed, verify_affine *out);

/* Train the default cell (circles, width 16, 3 slots) of arch at depth and
 * measure its curvature as a sweep does: *resolved_min is the smallest, over
 * prefixes, share of non-degenerate points classified flat or curved. */
int verify_trained_resolved(cs_arch arch, int depth, double *resolved_min);

/* Search seeds 0..99 of a depth-1 gated model on the m = 2 affine skeleton
 * for an input point with K̃ > 0.05; returns the seed, point, K̃ there and
 * K̃ of the ungated model sharing every other tensor at the same point. */
int verify_positive_gated_point(int64_t *seed, double x[2], double *Kt_gated,
                                double *Kt_ungated);

/* Scale check: multiply the last layer's W_o, b_o of a random gated model
 * (no residual) by c; returns the largest relative deviation of K·c² from
 * K and of K̃ from K̃ over a set of points. */
int verify_scaling(double c, double *dev_K, double *dev_Kt);

/* Ungated affine skeleton (m = 2, depth 2) with its slot keys multiplied by
 * key_scale, so the softmax saturates and the derivatives become tiny:
 * largest |K̃| over non-degenerate points (flat ⇒ rounding level) and the
 * smallest log det g (how saturated). */
int verify_saturated_flatness(double key_scale, double *max_abs_Kt, double *min_logdet);

/* Self family (docs/DECISIONS.md, "verify: self-attention"), m = 2, width
 * 6, no LayerNorm, every tensor randomised from seed, then W_q = W_k = 0 in
 * every layer: the attention is uniform (P = 1/T). *max_second is the
 * largest |∂²h_L/∂x_a∂x_b| of the CLS map at random points (affine ⇒
 * exactly 0); *dev_ungated the largest |difference| of every jet entry of
 * h_L from the ungated model sharing every other tensor (a g3 or g4 gate
 * multiplies a zero K or Q ⇒ exactly 0). */
int verify_self_uniform(cs_arch arch, cs_gate_pos gate, int depth, int heads, int residual,
                        uint64_t seed, double *max_second, double *dev_ungated);
/* Largest |S|/Σ|Π|² of h_L at random points of a random self-family model
 * (2 heads, no residual, no norm), W_q = W_k = 0 when zero_qk. */
int verify_self_curved(cs_arch arch, cs_gate_pos gate, int depth, int zero_qk, uint64_t seed,
                       double *max_ratio);

/* lm family (lm_check.c; docs/NUMERICS.md, "Checks of the lm family"), on
 * the probe plane's jets of every prefix: *max_dev the largest |difference|
 * of an ungated model's jets at g2..g5 from those at g1 (exactly 0: the
 * ungated model ignores gate); *max_rel the largest difference, relative to
 * the largest jet entry, of a gated model with W_g = b_g = 0 (gate 1/2)
 * from the ungated model with the gated tensor halved (rounding only). */
int verify_lm_ungated_gate_free(int depth, int mlp_ratio, double *max_dev);
int verify_lm_half_gate(cs_arch arch, cs_gate_pos gate, int depth, int mlp_ratio, double *max_rel);

/* Every check, in the order `curvsweep verify` prints them. */
int verify_all(verify_table *t);

#endif

/* geom.h — intrinsic (Fisher–Rao) curvature of a representation μ(x) ∈ R^d
 * over input coordinates x ∈ R^m, from its exact first and second
 * derivatives (docs/NUMERICS.md).
 *
 * Input layout, per point: a "jet" of C = 1 + m + P rows of d values each
 * (row-major, row stride d), P = m(m+1)/2:
 *   row 0               μ(x)
 *   row 1 + a           ∂μ/∂x_a                  (a = 0..m-1)
 *   row 1 + m + p(a,b)  ∂²μ/∂x_a∂x_b, a ≤ b      p(a,b) = geom_pair_index(m, a, b)
 * Pairs are packed row by row: (0,0),(0,1),…,(0,m-1),(1,1),…,(m-1,m-1).
 * This is exactly the layout the model's jet forward pass produces. */
#ifndef CURVSWEEP_GEOM_H
#define CURVSWEEP_GEOM_H

#include "curvsweep/rng.h"

#include <stddef.h>

#define GEOM_DEGENERATE_COND 1e10

/* Rows in a second-order jet for input dimension m: 1 + m + m(m+1)/2. */
int geom_jet_rows(int m);
/* Packed index of the pair (a, b) (order irrelevant) among the P pairs. */
int geom_pair_index(int m, int a, int b);

/* How far a point's computed curvature can be trusted (docs/NUMERICS.md):
 *   CURVED      |S| > 3·S_err: the sign and size of S are resolved
 *   FLAT        |S| ≤ 3·S_err ≤ GEOM_FLAT_REL · Σ_ab |T_ab|²: zero to within
 *               rounding, and that rounding is tiny against the curvature
 *               the point would have if its second derivatives were normal
 *   UNRESOLVED  neither: kept, counted, excluded from every statistic
 *   DEGENERATE  cond(J) > GEOM_DEGENERATE_COND: no curvature at all */
typedef enum {
  GEOM_DEGENERATE = 0,
  GEOM_FLAT = 1,
  GEOM_CURVED = 2,
  GEOM_UNRESOLVED = 3
} geom_class;

#define GEOM_FLAT_REL 1e-8

/* Curvature at one point. With metric g = JᵀJ/σ²:
 *   S       scalar curvature of g, as computed (σ² × the Euclidean value);
 *           never replaced by 0
 *   S_err   absolute error estimate of S (rounding), calibrated against a
 *           high-precision reference (docs/NUMERICS.md)
 *   T2      Σ_ab |T_ab|² (σ²-scaled like S): the unprojected second
 *           derivatives in the orthonormal frame, the curvature scale of the
 *           flatness test
 *   cls     the classification above
 *   K       S / (m(m-1)): mean sectional curvature; the Gaussian curvature when m = 2
 *   S_tilde, K_tilde  trace-normalised: S · tr(g)/m, K · tr(g)/m
 *   K_hat   area-normalised: K · det(g)^{1/m}
 *   tr_g, logdet_g    trace and log-determinant of g
 *   H_norm            mean-curvature norm |Σ_a II_aa| / m (Euclidean, extrinsic)
 *   area              √det g (area element, for ∫K dA)
 *   S_se              Monte Carlo standard error of S (0 when computed exactly)
 *   cond              cond₂(J) (or an upper bound when far below the threshold)
 *   degenerate        1 when cond(R) > GEOM_DEGENERATE_COND, or when the
 *                     curvature or metric is not finite: no other field valid
 *   nonfinite         1 when degenerate because a curvature or metric value
 *                     overflowed (e.g. σ² · S_E with an extreme σ) */
typedef struct {
  double S, S_err, T2, K, S_tilde, K_tilde, K_hat, tr_g, logdet_g, H_norm, area, S_se, cond;
  geom_class cls;
  int degenerate, nonfinite;
} geom_point;

/* Rounding-error estimate (docs/NUMERICS.md, "Rounding error"), calibrated
 * against a 50-digit reference on trained models:
 *   a priori   S_err = GEOM_ERR_FACTOR · eps · cond(J) · √(Σ|II_ab|² · Σ|T_ab|²)
 *   a point is doubtful when its class would change were S_err
 *   GEOM_DOUBT_MARGIN times larger; the caller then recomputes it under
 *   upward and downward rounding and S_err becomes
 *   max(a priori, GEOM_SPREAD_FACTOR · largest |S_directed − S|). */
#define GEOM_ERR_FACTOR 16.0
#define GEOM_DOUBT_MARGIN 100.0
#define GEOM_SPREAD_FACTOR 3.0

/* The classification of S given its error estimate and curvature scale T2. */
geom_class geom_classify(double S, double S_err, double T2);
/* 1 when p is not degenerate and its class would change if S_err were
 * GEOM_DOUBT_MARGIN times larger: recompute it under directed rounding. */
int geom_point_doubtful(const geom_point *p);
/* Sharpen p with the same point recomputed (jets and geometry) under upward
 * and downward rounding: S_err = max(S_err, GEOM_SPREAD_FACTOR · spread), and
 * the class again. A recomputation that is degenerate where p is not leaves
 * S uncertain by |S|. */
void geom_point_add_rounding_spread(geom_point *p, const geom_point *up, const geom_point *down);

/* Options of the estimator. */
typedef struct {
  double sigma;        /* Fisher noise scale σ */
  int exact_dim_max;   /* m above this: Monte Carlo S over random 2-frames */
  int mc_frames;       /* number of random 2-frames for Monte Carlo (default 256) */
} geom_options;

geom_options geom_options_default(void);

/* Curvature at one point from its jet (d values per row, layout above).
 * mc supplies the random frames when m > exact_dim_max (may be NULL
 * otherwise). Returns CS_OK, or an error for invalid arguments
 * (CS_ERR_INPUT) or a non-finite jet entry (CS_ERR_NUMERIC). A degenerate
 * point (including m > d, never an immersion) is CS_OK with degenerate = 1
 * and NaN elsewhere. m = 1 (a curve, intrinsically flat): S = K = 0.
 * Not re-entrant within a thread (uses the thread's scratch buffer). */
int geom_point_curvature(int d, int m, const double *jet, const geom_options *opt,
                         rng_stream *mc, geom_point *out);

/* Sectional curvature K(p, r) of the plane spanned by tangent vectors p, r
 * given in input coordinates (need not be orthonormal), Fisher-scaled
 * (σ² × Euclidean). m ≥ 2. Degenerate J: *K_out = NaN and CS_OK; p, r not
 * spanning a plane: CS_ERR_INPUT. */
int geom_sectional_curvature(int d, int m, const double *jet, double sigma, const double *p,
                             const double *r, double *K_out);

/* The statistics of one prefix over a set of points (docs/NUMERICS.md).
 * Fractions are of all n_points and add up to 1; every other statistic is
 * over the resolved (flat or curved) points only. */
typedef struct {
  int n_points;            /* evaluation points */
  double degenerate_frac;  /* cond(J) > GEOM_DEGENERATE_COND */
  double unresolved_frac;  /* |S| within 3 S_err but S_err too large to call flat */
  double flat_frac, curved_frac;
  double K_mean, K_median, K_absmean, K_q05, K_q95, K_fracpos;
  double S_mean, S_se;     /* S_se: standard error of S_mean, √max(s²/n, Σ se_i²/n²)
                              (s² the sample variance, which already carries the
                              Monte Carlo noise; se_i the per-point MC errors);
                              NaN with fewer than 2 resolved points */
  double Kt_mean, Kt_median, Kt_absmean, Kt_q05, Kt_q95, Kt_fracpos; /* K̃ = K·tr(g)/m */
  double St_mean;
  double Kh_mean, Kh_median, Kh_absmean, Kh_q05, Kh_q95, Kh_fracpos; /* K̂ = K·det(g)^{1/m} */
  double aniso_median;     /* median of log(AM/GM of g's eigenvalues) = log(tr g/m) − log det g/m */
  double H_norm_mean;      /* mean of the mean-curvature norm */
  double logdet_mean;      /* mean log det g */
  double intK, intabsK;    /* ∫K dA and ∫|K| dA over the input box (m = 2), NaN otherwise */
  double intK_err;         /* rounding error bound of both: volume · mean(S_err/2 · area) */
  /* Not geometry: the extreme-token statistics of the same prefix and
   * evaluation points, carried here so they travel with the prefix's row
   * (docs/MODELS.md). geom_stats_compute sets NaN; the cell (train/cell.c)
   * fills them for the families that have them: sink_mass, max_attn and
   * sink_headmax for the families with a first token (model_attention_sink:
   * self and lm), massive_act, value_drain and resid_peak for lm only
   * (model_extreme_tokens). NaN: not applicable to the family, or not
   * stored by the archive read (docs/ARCHIVE.md, "Versions"). */
  double sink_mass;        /* mean attention weight of non-CLS queries on token 0 (BOS for lm) */
  double max_attn;         /* mean largest attention weight of a non-first query (over heads) */
  double massive_act;      /* lm: max |h| / median |h| over positions and channels (Sun et al.) */
  double value_drain;      /* lm: ‖v_BOS‖ / median over t ≥ 1 of ‖v_t‖ */
  double resid_peak;       /* lm: ‖h_BOS‖ / median over t ≥ 1 of ‖h_t‖ */
  double sink_headmax;     /* largest over heads of a head's first-token share */
  /* Not geometry either (docs/MODELS.md "Gate scores and
   * attention entropy", "What a sink does"); NaN where not applicable: */
  double attn_entropy;     /* mean attention entropy of a query over its keys / log(keys):
                              the families with attention blocks (model_block_stats) */
  double ablate_first;     /* lm: test loss with the block's first-token attention removed
                              (rows renormalised) minus the intact test loss */
  double ablate_attn;      /* lm: test loss with the block's attention output removed minus
                              the intact test loss (model_ablation_deltas) */
} geom_stats;

/* Statistics over n points (degenerate and unresolved ones excluded,
 * counted). box: optional second set of n_box points drawn uniformly from
 * the input box of volume box_volume, used for ∫K dA = volume ·
 * mean(K · √det g) and ∫|K| dA when m = 2 (degenerate box points contribute
 * 0, unresolved ones are left out of the mean); pass n_box = 0 to get
 * intK = intabsK = NaN. Quantiles are type 7 (linear interpolation between order
 * statistics). With no valid point every statistic is NaN. */
/* Every double of geom_stats by name, in the order of the archive's
 * /curvature columns (docs/ARCHIVE.md): what writers of tables iterate. */
typedef struct {
  const char *name;
  size_t offset;
} geom_stats_field;
enum { GEOM_STATS_N_FIELDS = 40 };
extern const geom_stats_field GEOM_STATS_FIELDS[GEOM_STATS_N_FIELDS];

int geom_stats_compute(int n, const geom_point *pts, int n_box, const geom_point *box,
                       double box_volume, int m, geom_stats *out);

/* Anisotropy index of g at a point: log(AM/GM of its eigenvalues)
 * = log(tr g / m) − log det g / m ≥ 0, 0 exactly when g is a multiple of
 * the identity. K̃/K̂ = AM/GM. */
double geom_anisotropy_index(int m, double tr_g, double logdet_g);

/* The per-point functions keep one growing scratch buffer per thread (no
 * allocation per point once it has reached size). Release it, e.g. before
 * a thread ends or to keep leak checkers quiet; it is re-created on demand. */
void geom_workspace_release(void);

/* Analytic surfaces in R^3 (d = 3, m = 2) with known Gaussian curvature,
 * fed through the same engine by the tests and `curvsweep verify`.
 * Parametrisations (u, v) and exact K:
 *   SPHERE    radius r: r(sin u cos v, sin u sin v, cos u)      K = 1/r²  (u ∉ {0, π})
 *   CYLINDER  radius r: (r cos u, r sin u, v)                    K = 0
 *   SADDLE    z = xy:   (u, v, uv)   (radius ignored)            K = -1/(1+u²+v²)²
 *   TORUS     tube r = radius, centre R = radius2 > r:
 *             ((R + r cos v) cos u, (R + r cos v) sin u, r sin v)
 *                                                                K = cos v / (r (R + r cos v)) */
typedef enum {
  GEOM_SURFACE_SPHERE,
  GEOM_SURFACE_CYLINDER,
  GEOM_SURFACE_SADDLE,
  GEOM_SURFACE_TORUS
} geom_surface;

/* Exact jet of surface s at (u, v): jet is C×3 = 6 rows of 3 values, the
 * layout above (value, ∂u, ∂v, ∂uu, ∂uv, ∂vv). K_exact (may be NULL)
 * receives the exact Gaussian curvature there (Euclidean, σ = 1). */
int geom_surface_jet(geom_surface s, double radius, double radius2, double u, double v,
                     double *jet, double *K_exact);

/* The round m-sphere of the given radius in R^{m+1} as the graph
 * x ↦ (x, √(r² − |x|²)), |x| < r: jet is geom_jet_rows(m) × (m+1) values.
 * Constant sectional curvature 1/r², scalar curvature m(m−1)/r². */
int geom_hypersphere_jet(int m, double radius, const double *x, double *jet);

#endif

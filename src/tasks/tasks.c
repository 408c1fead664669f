/* tasks.c — the synthetic datasets of docs/MODELS.md.
 *
 * A dataset is a pure function of (kind, m, n, seed, split, label_noise).
 * Every random quantity comes from its own counter-based stream:
 *   task-level parameters   ("task:<name>", -1,    "direction")  (seed only)
 *   point draws             ("task:<name>", split, "x")
 *   label-noise permutation ("task:<name>", split, "label_noise")
 * so linear's w and blobs' direction are the same for every split, while the
 * points of train, test and eval are independent. Points are drawn in order
 * from one stream, so the first n' points of a dataset of size n > n' are the
 * dataset of size n' (before label noise).
 *
 * Choices left open by docs/MODELS.md (documented here and in tasks.h):
 * - Uniform draws are 2u - 1 with u in the open (0, 1), so x ∈ (-1, 1)^m.
 * - blobs: label i % 2 (exactly balanced for even n), centre (2y - 1)·μ,
 *   noise 0.5·z with z an isotropic normal truncated to |z_j| ≤ 4 per
 *   coordinate (removes 6.3e-5 of the mass per coordinate) so every point lies
 *   in the documented box [-(1 + 4·0.5), 1 + 4·0.5]^m = [-3, 3]^m.
 * - spiral: arm y is r = 0.8 θ / (3π) at angle θ + π y, θ ∈ [π/2, 3π]
 *   (1.25 turns), θ drawn so that points are uniform in arc length (density
 *   ∝ θ); labels alternate (exactly balanced); noise 0.05 per coordinate,
 *   truncated at 4 sd, so the points lie in [-1, 1]^2.
 * - circles: r0 from task_circles_radius (circles.c).
 * - checker: cell c_j = floor(2 (x_j + 1)) ∈ {0..3}, y = (c_1 + c_2) mod 2.
 * - label noise: a seeded permutation of 0..n-1; the first round(f·n)
 *   indices are flipped, so flipped sets are nested as f grows. */
#include "curvsweep/tasks.h"

#include "curvsweep/error.h"
#include "curvsweep/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOB_SD 0.5
#define SPIRAL_SD 0.05
#define NOISE_TRUNCATION 4.0 /* Gaussian noise truncated at this many sd */
#define SPIRAL_R_MAX 0.8
#define SPIRAL_THETA_MIN (0.5 * M_PI)
#define SPIRAL_THETA_MAX (3.0 * M_PI)

static int valid_kind(cs_task_kind kind) { return kind >= 0 && kind < TASK_COUNT; }

static const char *const TASK_NAMES[TASK_COUNT] = {
    "linear", "blobs", "xor", "circles", "spiral", "checker", "bigram-backcopy",
    "associative-recall", "teacher"};

const char *task_name(cs_task_kind kind) { return valid_kind(kind) ? TASK_NAMES[kind] : "?"; }

int task_parse(const char *name) {
  for (int t = 0; t < TASK_COUNT; t++)
    if (strcmp(TASK_NAMES[t], name) == 0) return t;
  return -1;
}

static rng_stream task_stream(cs_task_kind kind, int64_t seed, int64_t index, const char *purpose) {
  char domain[64];
  snprintf(domain, sizeof domain, "task:%s", task_name(kind));
  return rng_stream_make((uint64_t)seed, domain, index, purpose);
}

/* Standard normal conditioned on |z| ≤ NOISE_TRUNCATION (rejection). */
static double truncated_normal(rng_stream *s) {
  double z;
  do z = rng_normal(s);
  while (fabs(z) > NOISE_TRUNCATION);
  return z;
}

int task_is_sequence(cs_task_kind kind) {
  return kind == TASK_BIGRAM_BACKCOPY || kind == TASK_ASSOC_RECALL;
}

int task_min_seq_len(cs_task_kind kind) {
  /* bigram-backcopy: BOS, x_1 and one scored target; associative-recall:
   * BOS, one pair, the query and the answer (src/tasks/sequences.c) */
  return kind == TASK_ASSOC_RECALL ? 5 : 3;
}

const char *task_boundary(cs_task_kind kind) {
  if (!valid_kind(kind)) return "?";
  if (task_is_sequence(kind)) return "sequence";
  if (kind == TASK_TEACHER) return "regression";
  return (kind == TASK_LINEAR || kind == TASK_BLOBS) ? "linear" : "nonlinear";
}

int task_supports_dim(cs_task_kind kind, int m) {
  switch (kind) {
    case TASK_LINEAR:
    case TASK_BLOBS: return m >= 1;
    case TASK_XOR:
    case TASK_CIRCLES: return m >= 2;
    case TASK_SPIRAL:
    case TASK_CHECKER: return m == 2;
    case TASK_BIGRAM_BACKCOPY:
    case TASK_ASSOC_RECALL: return m == 2; /* the probe plane (docs/MODELS.md) */
    case TASK_TEACHER: return m >= 1;       /* the token feature dimension */
    default: return 0;
  }
}

void task_domain(cs_task_kind kind, int m, double *lo, double *hi) {
  /* blobs: |μ_j| ≤ 1 plus truncated noise ≤ 4·0.5; spiral: radius ≤ 0.8 plus
   * truncated noise ≤ 4·0.05 per coordinate; the rest are U[-1,1]^m. */
  double half = (kind == TASK_BLOBS) ? 1.0 + NOISE_TRUNCATION * BLOB_SD
                : task_is_sequence(kind)  ? TASK_PROBE_HALF
                                          : 1.0;
  *lo = -half;
  *hi = half;
}

int task_classes(cs_task_kind kind) { return 2; }

int task_direction(cs_task_kind kind, int64_t seed, int m, double *w) {
  /* w: (m,) unit vector, uniform on the sphere: a normalised standard normal */
  if (kind != TASK_LINEAR && kind != TASK_BLOBS)
    return cs_error(CS_ERR_INPUT, "task %s has no seeded direction", task_name(kind));
  if (m < 1) return cs_error(CS_ERR_INPUT, "task %s: input dimension m = %d must be >= 1",
                             task_name(kind), m);
  rng_stream s = task_stream(kind, seed, -1, "direction");
  for (;;) {
    double norm2 = 0.0;
    for (int j = 0; j < m; j++) {
      w[j] = rng_normal(&s);
      norm2 += w[j] * w[j];
    }
    if (norm2 > 1e-300) {
      double inv = 1.0 / sqrt(norm2);
      for (int j = 0; j < m; j++) w[j] *= inv;
      return CS_OK;
    }
  }
}

/* x: (n, m) ~ U(-1, 1)^m, row by row from stream s. */
static void fill_uniform_cube(rng_stream *s, int n, int m, double *x) {
  for (size_t i = 0; i < (size_t)n * (size_t)m; i++) x[i] = 2.0 * rng_uniform(s) - 1.0;
}

/* linear: y = [w·x > 0], w from task_direction. x: (n, m), y: (n,) */
static int generate_linear(int64_t seed, rng_stream *s, int n, int m, double *x, int *y) {
  double *w;
  CS_CHECK(CS_CALLOC(w, m));
  int rc = task_direction(TASK_LINEAR, seed, m, w);
  if (!rc) fill_uniform_cube(s, n, m, x);
  for (int i = 0; i < n && !rc; i++) {
    double dot = 0.0;
    for (int j = 0; j < m; j++) dot += w[j] * x[(size_t)i * m + j];
    y[i] = dot > 0.0;
  }
  free(w);
  return rc;
}

/* blobs: y_i = i % 2, x_i = (2 y_i - 1) μ + 0.5 z, z truncated isotropic normal. */
static int generate_blobs(int64_t seed, rng_stream *s, int n, int m, double *x, int *y) {
  double *mu;
  CS_CHECK(CS_CALLOC(mu, m));
  int rc = task_direction(TASK_BLOBS, seed, m, mu);
  for (int i = 0; i < n && !rc; i++) {
    y[i] = i % 2;
    double sign = y[i] ? 1.0 : -1.0;
    for (int j = 0; j < m; j++) x[(size_t)i * m + j] = sign * mu[j] + BLOB_SD * truncated_normal(s);
  }
  free(mu);
  return rc;
}

/* xor: y = [x_1 x_2 > 0], remaining coordinates uniform and irrelevant. */
static void generate_xor(rng_stream *s, int n, int m, double *x, int *y) {
  fill_uniform_cube(s, n, m, x);
  for (int i = 0; i < n; i++) y[i] = x[(size_t)i * m] * x[(size_t)i * m + 1] > 0.0;
}

/* circles: y = [|x| < r0], r0 the median radius of U[-1,1]^m. */
static int generate_circles(rng_stream *s, int n, int m, double *x, int *y) {
  double r0;
  CS_CHECK(task_circles_radius(m, &r0));
  fill_uniform_cube(s, n, m, x);
  for (int i = 0; i < n; i++) {
    double norm2 = 0.0;
    for (int j = 0; j < m; j++) norm2 += x[(size_t)i * m + j] * x[(size_t)i * m + j];
    y[i] = norm2 < r0 * r0;
  }
  return CS_OK;
}

/* spiral (m = 2): y_i = i % 2; θ with density ∝ θ on [θ_min, θ_max] (uniform
 * in arc length) by inverting the CDF, radius r = R θ / θ_max, the arm of
 * label 1 rotated by π, plus truncated Gaussian noise. */
static void generate_spiral(rng_stream *s, int n, double *x, int *y) {
  const double t0 = SPIRAL_THETA_MIN * SPIRAL_THETA_MIN, t1 = SPIRAL_THETA_MAX * SPIRAL_THETA_MAX;
  for (int i = 0; i < n; i++) {
    y[i] = i % 2;
    double theta = sqrt(t0 + rng_uniform(s) * (t1 - t0));
    double r = SPIRAL_R_MAX * theta / SPIRAL_THETA_MAX;
    double angle = theta + M_PI * y[i];
    x[2 * i] = r * cos(angle) + SPIRAL_SD * truncated_normal(s);
    x[2 * i + 1] = r * sin(angle) + SPIRAL_SD * truncated_normal(s);
  }
}

/* checker (m = 2): 4×4 cells of side 1/2 on [-1,1]^2, y = parity of the cell. */
static void generate_checker(rng_stream *s, int n, double *x, int *y) {
  fill_uniform_cube(s, n, 2, x);
  for (int i = 0; i < n; i++) {
    int c0 = (int)floor(2.0 * (x[2 * i] + 1.0)), c1 = (int)floor(2.0 * (x[2 * i + 1] + 1.0));
    if (c0 > 3) c0 = 3; /* unreachable for x < 1, kept for safety */
    if (c1 > 3) c1 = 3;
    y[i] = (c0 + c1) % 2;
  }
}

/* Flip exactly round(f·n) labels: the first ones of a seeded permutation. */
static int flip_labels(cs_task_kind kind, int64_t seed, cs_split split, int n, double f, int *y) {
  int64_t flips = llround(f * n);
  if (flips == 0) return CS_OK;
  int64_t *perm;
  CS_CHECK(CS_CALLOC(perm, n));
  rng_stream s = task_stream(kind, seed, split, "label_noise");
  rng_permutation(&s, n, perm);
  for (int64_t i = 0; i < flips; i++) y[perm[i]] ^= 1;
  free(perm);
  return CS_OK;
}

int task_generate(cs_task_kind kind, int m, int n, int64_t seed, cs_split split,
                  double label_noise, cs_dataset *out) {
  /* out->x: (n, m) row-major, out->y: (n,) */
  *out = (cs_dataset){0};
  if (!valid_kind(kind)) return cs_error(CS_ERR_INPUT, "unknown task kind %d", (int)kind);
  const char *name = task_name(kind);
  if (task_is_sequence(kind))
    return cs_error(CS_ERR_INPUT, "task %s is a sequence task (task_generate_sequences)", name);
  if (kind == TASK_TEACHER)
    return cs_error(CS_ERR_INPUT, "task %s draws token sets (task_token_sets)", name);
  if (!task_supports_dim(kind, m)) {
    const char *allowed = (kind == TASK_SPIRAL || kind == TASK_CHECKER) ? "m = 2 only"
                          : (kind == TASK_XOR || kind == TASK_CIRCLES) ? "m >= 2"
                                                                       : "m >= 1";
    return cs_error(CS_ERR_INPUT, "task %s does not support input dimension m = %d (it needs %s)",
                    name, m, allowed);
  }
  if (n < 0) return cs_error(CS_ERR_INPUT, "task %s: number of points n = %d must be >= 0", name, n);
  if (!(label_noise >= 0.0 && label_noise <= 0.5))
    return cs_error(CS_ERR_INPUT, "task %s: label_noise = %g must lie in [0, 0.5]", name, label_noise);
  if (split < SPLIT_TRAIN || split > SPLIT_EVAL)
    return cs_error(CS_ERR_INPUT, "task %s: unknown split %d", name, (int)split);
  if ((size_t)n > SIZE_MAX / sizeof(double) / (size_t)m)
    return cs_error(CS_ERR_INPUT, "task %s: n = %d points of dimension %d is too large", name, n, m);

  double *x = NULL;
  int *y = NULL;
  int rc = CS_CALLOC(x, (size_t)n * (size_t)m);
  if (!rc) rc = CS_CALLOC(y, n);
  rng_stream s = task_stream(kind, seed, split, "x");
  if (!rc) {
    switch (kind) {
      case TASK_LINEAR: rc = generate_linear(seed, &s, n, m, x, y); break;
      case TASK_BLOBS: rc = generate_blobs(seed, &s, n, m, x, y); break;
      case TASK_XOR: generate_xor(&s, n, m, x, y); break;
      case TASK_CIRCLES: rc = generate_circles(&s, n, m, x, y); break;
      case TASK_SPIRAL: generate_spiral(&s, n, x, y); break;
      case TASK_CHECKER: generate_checker(&s, n, x, y); break;
      default: rc = cs_error(CS_ERR_INTERNAL, "task %s has no generator", name);
    }
  }
  if (!rc) rc = flip_labels(kind, seed, split, n, label_noise, y);
  if (rc)
    free(x), free(y);
  else
    *out = (cs_dataset){.n = n, .m = m, .x = x, .y = y};
  return rc;
}

void task_dataset_free(cs_dataset *d) {
  if (!d) return;
  free(d->x);
  free(d->y);
  free(d->tokens);
  free(d->scored);
  *d = (cs_dataset){0};
}

/* ------------------------------------------------------- teacher task */

int task_token_sets(int64_t seed, cs_split split, int64_t first, int count, int N, int m,
                    int dist, double *x) {
  if (N < 1 || m < 1 || count < 0)
    return cs_error(CS_ERR_INPUT, "task teacher: %d sets of %d tokens of dimension %d", count, N, m);
  int64_t w = (int64_t)N * m;
  for (int i = 0; i < count; i++) {
    rng_stream s = task_stream(TASK_TEACHER, seed, (first + i) * 4 + split, "x");
    double *xi = x + (int64_t)i * w;
    for (int64_t k = 0; k < w; k++)
      xi[k] = dist == TASK_TOKEN_GAUSSIAN ? rng_normal(&s) : 2.0 * rng_uniform(&s) - 1.0;
  }
  return CS_OK;
}

void task_token_noise(int64_t seed, cs_split split, int64_t first, int count, double sigma,
                      double *eps) {
  for (int i = 0; i < count; i++) {
    rng_stream s = task_stream(TASK_TEACHER, seed, (first + i) * 4 + split, "noise");
    eps[i] = sigma * rng_normal(&s);
  }
}

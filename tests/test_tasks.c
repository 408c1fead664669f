/* test_tasks.c — the synthetic datasets of docs/MODELS.md against their
 * definitions, recomputed independently here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#include "curvsweep/error.h"
#include "curvsweep/rng.h"
#include "curvsweep/tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_DEFAULT 2048


static cs_dataset make(cs_task_kind kind, int m, int n, int64_t seed, cs_split split, double noise) {
  cs_dataset d;
  int rc = task_generate(kind, m, n, seed, split, noise, &d);
  if (rc != CS_OK) fail_msg("task_generate(%s, m=%d): %s", task_name(kind), m, cs_error_message());
  assert_int_equal(d.n, n);
  assert_int_equal(d.m, m);
  return d;
}

static double positive_fraction(const cs_dataset *d) {
  int ones = 0;
  for (int i = 0; i < d->n; i++) {
    assert_true(d->y[i] == 0 || d->y[i] == 1);
    ones += d->y[i];
  }
  return (double)ones / d->n;
}

/* Same arguments -> bitwise identical; other seed or split -> other points. */
static void test_determinism(void **state) {
  for (int k = 0; k < TASK_POINT_COUNT; k++) {
    int m = 2;
    cs_dataset a = make(k, m, 500, 7, SPLIT_TRAIN, 0.1);
    cs_dataset b = make(k, m, 500, 7, SPLIT_TRAIN, 0.1);
    assert_memory_equal(a.x, b.x, sizeof(double) * 500 * m);
    assert_memory_equal(a.y, b.y, sizeof(int) * 500);
    cs_dataset other_seed = make(k, m, 500, 8, SPLIT_TRAIN, 0.1);
    cs_dataset other_split = make(k, m, 500, 7, SPLIT_TEST, 0.1);
    cs_dataset eval_split = make(k, m, 500, 7, SPLIT_EVAL, 0.1);
    assert_memory_not_equal(a.x, other_seed.x, sizeof(double) * 500 * m);
    assert_memory_not_equal(a.x, other_split.x, sizeof(double) * 500 * m);
    assert_memory_not_equal(a.x, eval_split.x, sizeof(double) * 500 * m);
    assert_memory_not_equal(other_split.x, eval_split.x, sizeof(double) * 500 * m);
    /* no coordinate of one split reappears in the other (independent draws) */
    for (int i = 0; i < 500 * m; i++) assert_true(a.x[i] != other_split.x[i]);
    task_dataset_free(&a);
    task_dataset_free(&b);
    task_dataset_free(&other_seed);
    task_dataset_free(&other_split);
    task_dataset_free(&eval_split);
    assert_null(a.x);
  }
}

/* linear: one seeded unit w explains the labels of every split exactly;
 * w differs across seeds. */
static void test_linear_direction_shared(void **state) {
  int dims[] = {1, 2, 3, 5, 16};
  for (int t = 0; t < 5; t++) {
    int m = dims[t];
    double w[16], w_other[16];
    assert_ok(task_direction(TASK_LINEAR, 3, m, w));
    assert_ok(task_direction(TASK_LINEAR, 4, m, w_other));
    double norm2 = 0.0, diff2 = 0.0;
    for (int j = 0; j < m; j++) {
      norm2 += w[j] * w[j];
      diff2 += (w[j] - w_other[j]) * (w[j] - w_other[j]);
    }
    assert_close(norm2, 1.0, 1e-14);
    assert_true(diff2 > 1e-6);
    for (int split = SPLIT_TRAIN; split <= SPLIT_EVAL; split++) {
      cs_dataset d = make(TASK_LINEAR, m, N_DEFAULT, 3, split, 0.0);
      for (int i = 0; i < d.n; i++) {
        double dot = 0.0;
        for (int j = 0; j < m; j++) dot += w[j] * d.x[i * m + j];
        assert_int_equal(d.y[i], dot > 0.0);
      }
      task_dataset_free(&d);
    }
  }
  assert_int_equal(task_direction(TASK_XOR, 0, 2, (double[2]){0}), CS_ERR_INPUT);
}

/* blobs: labels alternate; per-class mean ±μ (μ the seeded unit direction),
 * per-coordinate sd 0.5; Bayes accuracy Φ(2) = 0.977 along μ. */
static void test_blobs_statistics(void **state) {
  const int n = 40000;
  int dims[] = {1, 2, 5};
  for (int t = 0; t < 3; t++) {
    int m = dims[t];
    double mu[5];
    assert_ok(task_direction(TASK_BLOBS, 11, m, mu));
    cs_dataset d = make(TASK_BLOBS, m, n, 11, SPLIT_TEST, 0.0);
    double mean[2][5] = {{0}}, var[5] = {0};
    int agree = 0;
    for (int i = 0; i < n; i++) {
      assert_int_equal(d.y[i], i % 2);
      double proj = 0.0;
      for (int j = 0; j < m; j++) {
        mean[d.y[i]][j] += d.x[i * m + j] / (n / 2);
        proj += mu[j] * d.x[i * m + j];
      }
      agree += (proj > 0.0) == d.y[i];
    }
    for (int i = 0; i < n; i++)
      for (int j = 0; j < m; j++) {
        double c = d.x[i * m + j] - mean[d.y[i]][j];
        var[j] += c * c / n;
      }
    /* standard error of a class mean: 0.5 / sqrt(20000) = 0.0035 */
    for (int j = 0; j < m; j++) {
      assert_close(mean[1][j], mu[j], 0.02);
      assert_close(mean[0][j], -mu[j], 0.02);
      assert_close(sqrt(var[j]), 0.5, 0.01);
    }
    /* Φ(2) = 0.97725; binomial sd at n = 40000 is 0.00075 */
    assert_close((double)agree / n, 0.97725, 0.004);
    task_dataset_free(&d);
  }
}

/* Class balance 45–55% at n = 2048 for every task (and circles at m = 2..8). */
static void test_class_balance(void **state) {
  for (int64_t seed = 0; seed < 3; seed++) {
    for (int k = 0; k < TASK_POINT_COUNT; k++) {
      cs_dataset d = make(k, 2, N_DEFAULT, seed, SPLIT_TRAIN, 0.0);
      double p = positive_fraction(&d);
      if (p < 0.45 || p > 0.55) fail_msg("%s seed %ld: %.3f positive", task_name(k), (long)seed, p);
      task_dataset_free(&d);
    }
    for (int m = 2; m <= 8; m++) {
      cs_dataset d = make(TASK_CIRCLES, m, N_DEFAULT, seed, SPLIT_TRAIN, 0.0);
      double p = positive_fraction(&d);
      if (p < 0.45 || p > 0.55) fail_msg("circles m=%d seed %ld: %.3f positive", m, (long)seed, p);
      task_dataset_free(&d);
    }
    int other_dims[] = {1, 3, 7};
    for (int t = 0; t < 3; t++) {
      for (int k = TASK_LINEAR; k <= TASK_XOR; k++) {
        if (!task_supports_dim(k, other_dims[t])) continue;
        cs_dataset d = make(k, other_dims[t], N_DEFAULT, seed, SPLIT_TRAIN, 0.0);
        double p = positive_fraction(&d);
        if (p < 0.45 || p > 0.55)
          fail_msg("%s m=%d: %.3f positive", task_name(k), other_dims[t], p);
        task_dataset_free(&d);
      }
    }
  }
  /* alternating labels: exactly balanced */
  cs_dataset d = make(TASK_SPIRAL, 2, N_DEFAULT, 0, SPLIT_TRAIN, 0.0);
  assert_close(positive_fraction(&d), 0.5, 0.0);
  task_dataset_free(&d);
}

/* xor and checker labels recomputed from their definitions by other formulas. */
static void test_xor_checker_labels(void **state) {
  for (int m = 2; m <= 4; m++) {
    cs_dataset d = make(TASK_XOR, m, N_DEFAULT, 5, SPLIT_TRAIN, 0.0);
    for (int i = 0; i < d.n; i++) {
      double x1 = d.x[i * m], x2 = d.x[i * m + 1];
      assert_int_equal(d.y[i], (x1 > 0.0) == (x2 > 0.0));
    }
    task_dataset_free(&d);
  }
  /* checker: cells of side 1/2 with corner cell [-1,-1/2)^2 of label 0; the
   * parity of the cell equals the sign of sin(2π x1) sin(2π x2): negative
   * -> odd. Points within 1e-9 of a cell edge are skipped (none expected). */
  cs_dataset d = make(TASK_CHECKER, 2, N_DEFAULT, 5, SPLIT_TRAIN, 0.0);
  int odd = 0;
  for (int i = 0; i < d.n; i++) {
    double s = sin(2.0 * M_PI * d.x[2 * i]) * sin(2.0 * M_PI * d.x[2 * i + 1]);
    if (fabs(s) < 1e-9) continue;
    assert_int_equal(d.y[i], s < 0.0);
    odd += d.y[i];
    if (d.x[2 * i] < -0.5 && d.x[2 * i + 1] < -0.5) assert_int_equal(d.y[i], 0);
    if (d.x[2 * i] > 0.5 && d.x[2 * i + 1] < -0.5) assert_int_equal(d.y[i], 1);
  }
  assert_true(odd > 0.45 * d.n && odd < 0.55 * d.n);
  task_dataset_free(&d);
}

/* circles: r0 closed forms for m = 2, 3, labels = [|x| < r0]. */
static void test_circles_radius_and_labels(void **state) {
  double r0;
  assert_ok(task_circles_radius(2, &r0));
  assert_close(r0, sqrt(2.0 / M_PI), 1e-12);
  assert_ok(task_circles_radius(3, &r0));
  assert_close(r0, pow(3.0 / M_PI, 1.0 / 3.0), 1e-12);
  assert_int_equal(task_circles_radius(1, &r0), CS_ERR_INPUT);
  for (int m = 2; m <= 8; m++) {
    assert_ok(task_circles_radius(m, &r0));
    cs_dataset d = make(TASK_CIRCLES, m, N_DEFAULT, 9, SPLIT_TRAIN, 0.0);
    for (int i = 0; i < d.n; i++) {
      double norm2 = 0.0;
      for (int j = 0; j < m; j++) norm2 += d.x[i * m + j] * d.x[i * m + j];
      assert_int_equal(d.y[i], sqrt(norm2) < r0);
    }
    task_dataset_free(&d);
  }
}

/* Unit-ball volume V_m = π^{m/2} / Γ(m/2 + 1). */
static double ball_volume(int m) { return pow(M_PI, 0.5 * m) / tgamma(0.5 * m + 1.0); }

/* task_ball_fraction against closed forms: r ≤ 1 (ball inside the cube) for
 * m = 2..8, the m = 2 lens formula for 1 < r < √2, and the limits. */
static void test_ball_fraction_closed_forms(void **state) {
  double f;
  for (int m = 2; m <= 8; m++) {
    /* the series is capped at 2^21 terms for m = 2, 3: ~4e-8 and ~1e-11 */
    double tol = m == 2 ? 1e-7 : m == 3 ? 1e-10 : 2e-12;
    double radii[] = {0.3, 0.7, 0.95, 1.0};
    for (int t = 0; t < 4; t++) {
      double r = radii[t];
      assert_ok(task_ball_fraction(m, r, &f));
      assert_close(f, ball_volume(m) * pow(r / 2.0, m), tol);
    }
    assert_ok(task_ball_fraction(m, sqrt((double)m) * 1.0001, &f));
    assert_close(f, 1.0, 0.0);
    assert_ok(task_ball_fraction(m, 0.0, &f));
    assert_close(f, 0.0, 0.0);
  }
  /* m = 2, 1 < s = r² < 2: area of disc ∩ square over 4, per quadrant
   * sqrt(s-1) + s (π/4 - arccos(1/√s)) */
  for (double s = 1.05; s < 2.0; s += 0.2) {
    assert_ok(task_ball_fraction(2, sqrt(s), &f));
    assert_close(f, sqrt(s - 1.0) + s * (M_PI / 4.0 - acos(1.0 / sqrt(s))), 1e-7);
  }
  /* m = 3, 1 < r < √2: ball minus six spherical caps of height r - 1 */
  for (double r = 1.05; r < 1.4; r += 0.1) {
    double h = r - 1.0, cap = M_PI * h * h * (3.0 * r - h) / 3.0;
    assert_ok(task_ball_fraction(3, r, &f));
    assert_close(f, (4.0 / 3.0 * M_PI * r * r * r - 6.0 * cap) / 8.0, 1e-10);
  }
  /* the numerical CDF at the closed-form m = 3 radius is 1/2 */
  assert_ok(task_ball_fraction(3, cbrt(3.0 / M_PI), &f));
  assert_close(f, 0.5, 1e-10);
  assert_int_equal(task_ball_fraction(0, 0.5, &f), CS_ERR_INPUT);
}

/* r0 for m ≥ 4 by Monte Carlo (10^6 points, sd 5e-4) and the CLT limit
 * r0² ≈ m/3 for large m. */
static void test_circles_radius_monte_carlo(void **state) {
  const int draws = 1000000;
  for (int m = 4; m <= 8; m++) {
    double r0;
    assert_ok(task_circles_radius(m, &r0));
    assert_true(r0 > 1.0 && r0 < sqrt((double)m));
    rng_stream s = rng_stream_make(1234, "test:circles", m, "mc");
    int inside = 0;
    for (int i = 0; i < draws; i++) {
      double norm2 = 0.0;
      for (int j = 0; j < m; j++) {
        double u = 2.0 * rng_uniform(&s) - 1.0;
        norm2 += u * u;
      }
      inside += norm2 < r0 * r0;
    }
    assert_close((double)inside / draws, 0.5, 0.0025);
    /* cached value is the same value */
    double again;
    assert_ok(task_circles_radius(m, &again));
    assert_close(again, r0, 0.0);
  }
  /* |x|² has mean m/3 and sd sqrt(4m/45); its skewness decays like
   * 1/sqrt(m), so the median approaches the mean from below (median ≈ mean -
   * skew·sd/6): within 1% already at m = 64 */
  int big[] = {64, 300, 2000};
  for (int t = 0; t < 3; t++) {
    double r0;
    assert_ok(task_circles_radius(big[t], &r0));
    assert_close(r0 * r0 / (big[t] / 3.0), 1.0, 0.01);
    assert_true(r0 * r0 < big[t] / 3.0); /* right-skewed: median < mean */
  }
}

/* spiral geometry: every point lies within the truncated noise (4 sd per
 * coordinate) of its own arm r = 0.8 θ/(3π), θ ∈ [π/2, 3π], rotated by π for
 * label 1, and nearly all are closer to their own arm than to the other. */
static double distance_to_arm(double x0, double x1, int arm) {
  double best = INFINITY;
  for (int k = 0; k <= 20000; k++) {
    double theta = 0.5 * M_PI + 2.5 * M_PI * k / 20000.0;
    double r = 0.8 * theta / (3.0 * M_PI), a = theta + M_PI * arm;
    double d = hypot(x0 - r * cos(a), x1 - r * sin(a));
    if (d < best) best = d;
  }
  return best;
}

/* Signed radial residual of (x0, x1) from arm `arm`: ρ - cθ for the winding
 * θ ≡ atan2(x1, x0) - π·arm (mod 2π) whose radius cθ is nearest to ρ. */
static double radial_residual(double x0, double x1, int arm) {
  double c = 0.8 / (3.0 * M_PI), rho = hypot(x0, x1), phi = atan2(x1, x0) - M_PI * arm;
  double best = INFINITY, residual = 0.0;
  for (int j = -3; j <= 4; j++) {
    double theta = phi + 2.0 * M_PI * j;
    if (theta <= 0.0) continue;
    if (fabs(rho - c * theta) < best) {
      best = fabs(rho - c * theta);
      residual = rho - c * theta;
    }
  }
  return residual;
}

static void test_spiral_geometry(void **state) {
  const int n = 2000;
  for (int64_t seed = 0; seed < 2; seed++) {
    cs_dataset d = make(TASK_SPIRAL, 2, n, seed, SPLIT_TRAIN, 0.0);
    int own_closer = 0, inner = 0;
    double mean[2] = {0.0, 0.0}, mean_sq[2] = {0.0, 0.0};
    for (int i = 0; i < d.n; i++) {
      assert_int_equal(d.y[i], i % 2);
      double own = distance_to_arm(d.x[2 * i], d.x[2 * i + 1], d.y[i]);
      double other = distance_to_arm(d.x[2 * i], d.x[2 * i + 1], 1 - d.y[i]);
      assert_true(own <= 4.0 * 0.05 * sqrt(2.0) + 1e-3);
      own_closer += own < other;
      inner += hypot(d.x[2 * i], d.x[2 * i + 1]) < 0.8 * 1.75 / 3.0;
      double e = radial_residual(d.x[2 * i], d.x[2 * i + 1], d.y[i]);
      mean[d.y[i]] += e / (n / 2);
      mean_sq[d.y[i]] += e * e / (n / 2);
    }
    assert_true(own_closer >= 0.97 * d.n);
    /* uniform in arc length: θ has density ∝ θ on [π/2, 3π], so
     * P(θ < 1.75π) = (1.75² - 0.5²) / (3² - 0.5²) = 0.3214 (binomial sd 0.010;
     * uniform θ would give 0.5) */
    assert_close((double)inner / n, 2.8125 / 8.75, 0.035);
    /* the radial residual is the radial noise component (sd 0.05) plus a
     * curvature bias ~σ²/(2r) ≈ 0.003: per-class mean has standard error
     * 0.0016, so |mean| < 0.01 pins the arm rotation to within ~0.03π and
     * the sd pins the noise level */
    for (int c = 0; c < 2; c++) {
      assert_close(mean[c], 0.0, 0.01);
      assert_close(sqrt(mean_sq[c] - mean[c] * mean[c]), 0.05, 0.006);
    }
    task_dataset_free(&d);
  }
}

/* label noise flips exactly round(f n) labels and leaves x untouched; the
 * flipped sets are nested in f and depend on the seed. */
static void test_label_noise(void **state) {
  int sizes[] = {2048, 1000, 7};
  double fractions[] = {0.0, 0.013, 0.1, 0.25, 0.5};
  for (int k = 0; k < TASK_POINT_COUNT; k++) {
    for (int t = 0; t < 3; t++) {
      int n = sizes[t];
      cs_dataset clean = make(k, 2, n, 21, SPLIT_TRAIN, 0.0);
      int *prev_flipped = calloc((size_t)n, sizeof(int));
      assert_non_null(prev_flipped);
      for (int q = 0; q < 5; q++) {
        double f = fractions[q];
        cs_dataset noisy = make(k, 2, n, 21, SPLIT_TRAIN, f);
        assert_memory_equal(clean.x, noisy.x, sizeof(double) * 2 * n);
        int changed = 0;
        for (int i = 0; i < n; i++) {
          int flipped = clean.y[i] != noisy.y[i];
          changed += flipped;
          if (prev_flipped[i]) assert_true(flipped);
          prev_flipped[i] = flipped;
        }
        assert_int_equal(changed, (int)llround(f * n));
        task_dataset_free(&noisy);
      }
      free(prev_flipped);
      task_dataset_free(&clean);
    }
  }
  /* a different seed flips a different set (same x stream is not reused) */
  cs_dataset a = make(TASK_XOR, 2, 2048, 1, SPLIT_TRAIN, 0.25);
  cs_dataset a0 = make(TASK_XOR, 2, 2048, 1, SPLIT_TRAIN, 0.0);
  cs_dataset b = make(TASK_XOR, 2, 2048, 2, SPLIT_TRAIN, 0.25);
  cs_dataset b0 = make(TASK_XOR, 2, 2048, 2, SPLIT_TRAIN, 0.0);
  int same = 0;
  for (int i = 0; i < 2048; i++) same += (a.y[i] != a0.y[i]) && (b.y[i] != b0.y[i]);
  /* independent sets of 512 out of 2048: expected overlap 128 */
  assert_true(same > 80 && same < 180);
  task_dataset_free(&a);
  task_dataset_free(&a0);
  task_dataset_free(&b);
  task_dataset_free(&b0);
}

/* Every point lies inside task_domain's box; the uniform tasks fill it. */
static void test_domain_contains_points(void **state) {
  for (int k = 0; k < TASK_POINT_COUNT; k++) {
    for (int m = 1; m <= 6; m++) {
      if (!task_supports_dim(k, m)) continue;
      double lo, hi;
      task_domain(k, m, &lo, &hi);
      assert_true(lo < hi);
      double seen_lo = INFINITY, seen_hi = -INFINITY;
      for (int64_t seed = 0; seed < 4; seed++) {
        cs_dataset d = make(k, m, 4096, seed, seed % 3, 0.0);
        for (int i = 0; i < d.n * m; i++) {
          if (!(d.x[i] >= lo && d.x[i] <= hi))
            fail_msg("%s m=%d: %g outside [%g, %g]", task_name(k), m, d.x[i], lo, hi);
          if (d.x[i] < seen_lo) seen_lo = d.x[i];
          if (d.x[i] > seen_hi) seen_hi = d.x[i];
        }
        task_dataset_free(&d);
      }
      if (k == TASK_BLOBS) {
        assert_close(hi, 3.0, 0.0);
      } else {
        assert_close(lo, -1.0, 0.0);
        assert_close(hi, 1.0, 0.0);
        /* the box is not needlessly large: points come near its edges */
        assert_true(seen_lo < lo + 0.15 && seen_hi > hi - 0.15);
      }
    }
  }
}

/* Unsupported m and bad arguments are CS_ERR_INPUT with a clear message. */
static void test_rejects_bad_input(void **state) {
  struct { cs_task_kind kind; int m; const char *name; } bad[] = {
      {TASK_SPIRAL, 3, "spiral"}, {TASK_SPIRAL, 1, "spiral"},  {TASK_CHECKER, 3, "checker"},
      {TASK_CHECKER, 1, "checker"}, {TASK_XOR, 1, "xor"},      {TASK_CIRCLES, 1, "circles"},
      {TASK_LINEAR, 0, "linear"},   {TASK_BLOBS, -2, "blobs"},
  };
  for (size_t t = 0; t < sizeof bad / sizeof bad[0]; t++) {
    cs_dataset d;
    assert_int_equal(task_supports_dim(bad[t].kind, bad[t].m), 0);
    assert_int_equal(task_generate(bad[t].kind, bad[t].m, 10, 0, SPLIT_TRAIN, 0.0, &d), CS_ERR_INPUT);
    assert_null(d.x);
    assert_null(d.y);
    char expect[64];
    snprintf(expect, sizeof expect, "m = %d", bad[t].m);
    assert_non_null(strstr(cs_error_message(), bad[t].name));
    assert_non_null(strstr(cs_error_message(), expect));
  }
  for (int k = 0; k < TASK_COUNT; k++) assert_int_equal(task_supports_dim(k, 2), 1);
  assert_int_equal(task_supports_dim(TASK_LINEAR, 1), 1);
  assert_int_equal(task_supports_dim(TASK_BLOBS, 1), 1);
  assert_int_equal(task_supports_dim(TASK_CIRCLES, 9), 1);
  cs_dataset d;
  assert_int_equal(task_generate(TASK_XOR, 2, 10, 0, SPLIT_TRAIN, 0.6, &d), CS_ERR_INPUT);
  assert_non_null(strstr(cs_error_message(), "label_noise"));
  assert_int_equal(task_generate(TASK_XOR, 2, 10, 0, SPLIT_TRAIN, -0.1, &d), CS_ERR_INPUT);
  assert_int_equal(task_generate(TASK_XOR, 2, 10, 0, SPLIT_TRAIN, NAN, &d), CS_ERR_INPUT);
  assert_int_equal(task_generate(TASK_XOR, 2, -1, 0, SPLIT_TRAIN, 0.0, &d), CS_ERR_INPUT);
  assert_int_equal(task_generate(TASK_COUNT, 2, 10, 0, SPLIT_TRAIN, 0.0, &d), CS_ERR_INPUT);
}

static void test_boundary_and_classes(void **state) {
  const char *expect[TASK_COUNT] = {"linear",    "linear",    "nonlinear", "nonlinear",
                                    "nonlinear", "nonlinear", "sequence",  "sequence",
                                    "regression"};
  for (int k = 0; k < TASK_COUNT; k++) {
    assert_string_equal(task_boundary(k), expect[k]);
    if (k < TASK_POINT_COUNT) assert_int_equal(task_classes(k), 2);
    assert_int_equal(task_is_sequence(k), k >= TASK_POINT_COUNT && k != TASK_TEACHER);
  }
}

/* Uniform tasks: per-coordinate mean 0, variance 1/3 (sd of the estimates at
 * n = 2048·4: 0.0064 and 0.0033). */
static void test_uniform_moments(void **state) {
  cs_task_kind kinds[] = {TASK_LINEAR, TASK_XOR, TASK_CIRCLES, TASK_CHECKER};
  for (int t = 0; t < 4; t++) {
    int m = kinds[t] == TASK_CHECKER ? 2 : 3, n = 4 * N_DEFAULT;
    cs_dataset d = make(kinds[t], m, n, 17, SPLIT_TRAIN, 0.0);
    for (int j = 0; j < m; j++) {
      double mean = 0.0, sq = 0.0;
      for (int i = 0; i < n; i++) {
        mean += d.x[i * m + j] / n;
        sq += d.x[i * m + j] * d.x[i * m + j] / n;
      }
      assert_close(mean, 0.0, 0.03);
      assert_close(sq, 1.0 / 3.0, 0.015);
    }
    task_dataset_free(&d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_linear_direction_shared),
      cmocka_unit_test(test_blobs_statistics),
      cmocka_unit_test(test_class_balance),
      cmocka_unit_test(test_xor_checker_labels),
      cmocka_unit_test(test_circles_radius_and_labels),
      cmocka_unit_test(test_ball_fraction_closed_forms),
      cmocka_unit_test(test_circles_radius_monte_carlo),
      cmocka_unit_test(test_spiral_geometry),
      cmocka_unit_test(test_label_noise),
      cmocka_unit_test(test_domain_contains_points),
      cmocka_unit_test(test_rejects_bad_input),
      cmocka_unit_test(test_boundary_and_classes),
      cmocka_unit_test(test_uniform_moments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

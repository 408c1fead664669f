/* jet.h — second-order forward-mode jets (internal to the model module).
 *
 * A jet of a function u(x), x ∈ R^m, at one point is C = 1 + m + P rows
 * (P = m(m+1)/2): row 0 the value u, rows 1..m the first derivatives u_a,
 * rows 1+m.. the second derivatives u_ab (a ≤ b, packed as in geom.h).
 * An activation of N points and width w is an (N·C) × w row-major array:
 * point p's jet occupies rows p·C .. p·C + C - 1. C = 1 is the plain
 * (value only) forward pass used in training, with the same code path.
 *
 * Linear maps act on every row alike (one GEMM over all jet rows); biases
 * and constants touch only the value rows. The rules below carry the chain
 * rule for the nonlinear pieces. */
#ifndef CURVSWEEP_MODEL_JET_H
#define CURVSWEEP_MODEL_JET_H

/* glibc's libmvec has vector versions of exp and log; declaring them lets
 * the `omp simd` loops of the model call them (-fopenmp-simd, no OpenMP
 * runtime). */
#pragma omp declare simd notinbranch
double exp(double);
#pragma omp declare simd notinbranch
double log(double);
/* and, from glibc 2.35, of erfc (the lm family's GELU, forward and
 * backward: the largest cost of its training when scalar: docs/DECISIONS.md,
 * "The lm family's attention and GELU") */
#include <math.h>
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
#pragma omp declare simd notinbranch
double erfc(double);
#endif

/* The Leibniz pairs of one jet row r: row r of the product of two jets u
 * and v is Σ_{e < n} u[r1[e]] v[r2[e]], with the pairs
 *   value (0,0);  ∂_a (a,0) (0,a);  ∂_ab (ab,0) (a,b) (b,a) (0,ab)
 * (the bilinear token products of the self and lm families). */
#define JET_PAIRS_MAX 4
typedef struct {
  int n, r1[JET_PAIRS_MAX], r2[JET_PAIRS_MAX];
} jet_pairs;

typedef struct {
  int m;      /* input dimension */
  int C;      /* rows per point: 1 (values only) or 1 + m + m(m+1)/2 */
  int *pa, *pb; /* pair p -> (a, b), P entries (NULL when C = 1) */
  jet_pairs *pairs; /* C entries: the Leibniz pairs of each row (NULL when C = 1) */
} jet_shape;

/* JET_GELU: the exact GELU t Φ(t), Φ the standard normal CDF (lm family). */
typedef enum { JET_EXP, JET_SIGMOID, JET_TANH, JET_RSQRT, JET_RECIP, JET_GELU } jet_fn;

int jet_shape_init(jet_shape *s, int m, int order);
void jet_shape_free(jet_shape *s);

/* y = f(x) elementwise; x, y (N·C) × w, may alias. */
void jet_unary(const jet_shape *s, jet_fn f, int N, int w, const double *x, double *y);
/* Values only (C = 1), the gate fused: g = σ(z + b), u = g ⊙ o for N rows
 * of w; z (ld ldz) is read in place, g, o, u are N × w. */
void jet_sigmoid_gate_values(int N, int w, const double *z, int ldz, const double *b, double *g,
                             const double *o, double *u);
/* out = u ⊙ v elementwise; all (N·C) × w; out may alias u or v. */
void jet_mul(const jet_shape *s, int N, int w, const double *u, const double *v, double *out);
/* Group-broadcast product: out[:, g·n + i] = u[:, g·n + i] · v[:, g];
 * u, out (N·C) × (G·n), v (N·C) × G. out may alias u. */
void jet_mul_group(const jet_shape *s, int N, int G, int n, const double *u, const double *v,
                   double *out);
/* Linear group sum over all rows: out[r, g] = Σ_i u[r, g·n + i]; out (N·C) × G. */
void jet_group_sum(int rows, int G, int n, const double *u, double *out);
/* Value rows only: x[p·C, j] += c  (adding a constant leaves derivatives alone). */
void jet_add_value_scalar(const jet_shape *s, int N, int w, double *x, double c);
/* Softmax over each group of n columns, in place: x (N·C) × (G·n).
 * Values: shift by the max, exp, normalise. Jets: the closed form in
 * probability-weighted score differences (jet.c), accurate when the
 * softmax saturates. */
void jet_softmax_groups(const jet_shape *s, int N, int G, int n, double *x);

#endif

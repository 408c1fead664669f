/* verify.c — theory checks of the geometry engine on real models. */
#include "curvsweep/verify.h"

#include "curvsweep/cell.h"

#include "curvsweep/error.h"
#include "curvsweep/la.h"
#include "curvsweep/model.h"
#include "curvsweep/quantile.h"
#include "curvsweep/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AFFINE_WIDTH 6
#define AFFINE_POINTS 24

void verify_table_free(verify_table *t) {
  free(t->rows);
  memset(t, 0, sizeof *t);
}

int verify_add(verify_table *t, const char *check, double value, double expected, double tol,
               int pass) {
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 32;
    verify_check *r = realloc(t->rows, sizeof *r * (size_t)cap);
    if (!r) return cs_error(CS_ERR_NOMEM, "out of memory growing the verify table");
    t->rows = r, t->cap = cap;
  }
  verify_check *r = &t->rows[t->n++];
  snprintf(r->check, sizeof r->check, "%s", check);
  r->value = value, r->expected = expected, r->tol = tol, r->pass = pass;
  return CS_OK;
}

/* The affine skeleton of docs/MODELS.md: one head, m + 1 slots, pure composition. */
static cs_config affine_config(cs_arch arch, int m, int depth, uint64_t seed) {
  cs_config c = config_default();
  c.arch = arch, c.input_dim = m, c.slots = m + 1, c.heads = 1, c.residual = 0;
  c.norm = NORM_NONE, c.width = AFFINE_WIDTH, c.depth = depth, c.seed = (int64_t)seed;
  return c;
}

/* Add 0.1·N(0,1) to every tensor from a stream keyed by its name, so the
 * tensors two archs share stay identical (and biases become non-zero). */
static void randomise(cs_model *M, uint64_t seed) {
  for (int t = 0; t < model_tensor_count(M); t++) {
    cs_tensor v;
    model_tensor(M, t, &v, NULL);
    rng_stream s = rng_stream_make(seed, "verify-perturb", 0, v.name);
    for (int i = 0; i < v.rows * v.cols; i++) v.v[i] += 0.1 * rng_normal(&s);
  }
}

/* Curvature of prefix L at npts points x (npts × m) of model M. */
static int curvature_at(const cs_model *M, int m, int npts, const double *x, geom_point *pts,
                        double *scales) {
  cs_acts *A;
  CS_CHECK(model_acts_create(M, npts, 2, &A));
  int rc = model_forward(M, A, npts, x);
  int C = model_acts_jet_rows(A), d = model_width(M), L = model_depth(M);
  geom_options opt = geom_options_default();
  for (int p = 0; p < npts && !rc; p++) {
    const double *jet = model_layer_output(A, L) + (int64_t)p * C * d;
    rc = geom_point_curvature(d, m, jet, &opt, NULL, &pts[p]);
    /* T2 = σ² Σ_ab |Π_ab|², Π_ab the unprojected second derivatives in the
     * orthonormal tangent frame (geom.h); σ = 1 here */
    if (!rc && scales && !pts[p].degenerate) scales[p] = pts[p].T2;
  }
  model_acts_free(A);
  return rc;
}

static void random_points(uint64_t seed, int npts, int m, double *x) {
  rng_stream s = rng_stream_make(seed, "verify-points", m, NULL);
  for (int i = 0; i < npts * m; i++) x[i] = 2 * rng_uniform(&s) - 1;
}

int verify_affine_stats(cs_arch arch, int m, int depth, uint64_t seed, verify_affine *out) {
  cs_config c = affine_config(arch, m, depth, seed);
  cs_model *M;
  CS_CHECK(model_create(&c, NULL, &M));
  randomise(M, seed);
  double x[AFFINE_POINTS * 8], scales[AFFINE_POINTS], r[AFFINE_POINTS], kt[AFFINE_POINTS];
  geom_point pts[AFFINE_POINTS];
  random_points(seed, AFFINE_POINTS, m, x);
  int rc = curvature_at(M, m, AFFINE_POINTS, x, pts, scales);
  model_free(M);
  CS_CHECK(rc);
  int n = 0;
  out->flat_points = 0;
  for (int p = 0; p < AFFINE_POINTS; p++)
    if (!pts[p].degenerate && scales[p] > 0) {
      r[n] = fabs(pts[p].S) / scales[p];
      kt[n++] = fabs(pts[p].K_tilde);
      out->flat_points += pts[p].cls == GEOM_FLAT;
    }
  if (n < AFFINE_POINTS / 2)
    return cs_error(CS_ERR_NUMERIC, "verify: %d of %d points degenerate (m=%d depth=%d)",
                    AFFINE_POINTS - n, AFFINE_POINTS, m, depth);
  qsort(r, (size_t)n, sizeof *r, cs_compare_doubles);
  qsort(kt, (size_t)n, sizeof *kt, cs_compare_doubles);
  out->max_ratio = r[n - 1];
  out->median_ratio = r[n / 2];
  out->max_abs_Kt = kt[n - 1];
  out->median_abs_Kt = kt[n / 2];
  out->valid_points = n;
  return CS_OK;
}

/* ------------------------------------------------ self family (docs/DECISIONS.md) */

/* A random self-family model (m = 2, width 6, no LayerNorm), every tensor
 * perturbed by randomise(seed) and, with zero_qk, W_q = W_k = 0 in every
 * layer. Tensors two archs share get the same values. */
static int self_model(cs_arch arch, cs_gate_pos gate, int depth, int heads, int residual,
                      uint64_t seed, int zero_qk, cs_model **out) {
  cs_config c = config_default();
  c.family = FAMILY_SELF, c.arch = arch, c.gate = gate, c.input_dim = 2, c.heads = heads;
  c.residual = residual, c.norm = NORM_NONE, c.width = AFFINE_WIDTH, c.depth = depth;
  c.seed = (int64_t)seed;
  CS_CHECK(model_create(&c, NULL, out));
  randomise(*out, seed);
  int rc = CS_OK;
  for (int l = 0; zero_qk && l < depth && !rc; l++)
    for (int k = 0; k < 2 && !rc; k++) {
      char name[32];
      cs_tensor W;
      snprintf(name, sizeof name, "layer%d/%s", l, k ? "Wk" : "Wq");
      rc = model_find_tensor(*out, name, &W);
      if (!rc) memset(W.v, 0, sizeof(double) * W.rows * W.cols);
    }
  if (rc) model_free(*out), *out = NULL;
  return rc;
}

/* The jets of h_L (the CLS row) at the AFFINE_POINTS points of seed:
 * out AFFINE_POINTS · C × d. */
static int self_jets(const cs_model *M, uint64_t seed, double **out, int64_t *count) {
  cs_acts *A;
  double x[AFFINE_POINTS * 2];
  random_points(seed, AFFINE_POINTS, 2, x);
  CS_CHECK(model_acts_create(M, AFFINE_POINTS, 2, &A));
  int rc = model_forward(M, A, AFFINE_POINTS, x);
  *count = (int64_t)AFFINE_POINTS * model_acts_jet_rows(A) * model_width(M);
  if (!rc) rc = CS_CALLOC(*out, *count);
  if (!rc) memcpy(*out, model_layer_output(A, model_depth(M)), sizeof(double) * *count);
  model_acts_free(A);
  return rc;
}

int verify_self_uniform(cs_arch arch, cs_gate_pos gate, int depth, int heads, int residual,
                        uint64_t seed, double *max_second, double *dev_ungated) {
  cs_model *M = NULL, *U = NULL;
  double *jm = NULL, *ju = NULL;
  int64_t n = 0, nu = 0;
  int rc = self_model(arch, gate, depth, heads, residual, seed, 1, &M);
  if (!rc) rc = self_model(ARCH_UNGATED, gate, depth, heads, residual, seed, 1, &U);
  if (!rc) rc = self_jets(M, seed, &jm, &n);
  if (!rc) rc = self_jets(U, seed, &ju, &nu);
  *max_second = *dev_ungated = 0.0;
  if (!rc) {
    int d = AFFINE_WIDTH, C = (int)(n / ((int64_t)AFFINE_POINTS * d)); /* 1 + m + 3 rows */
    for (int64_t i = 0; i < n; i++) {
      int row = (int)((i / d) % C);
      if (row >= 3) *max_second = fmax(*max_second, fabs(jm[i])); /* ∂²h rows (m = 2) */
      *dev_ungated = fmax(*dev_ungated, fabs(jm[i] - ju[i]));
    }
  }
  free(jm), free(ju);
  model_free(M), model_free(U);
  return rc;
}

int verify_self_curved(cs_arch arch, cs_gate_pos gate, int depth, int zero_qk, uint64_t seed,
                       double *max_ratio) {
  cs_model *M;
  CS_CHECK(self_model(arch, gate, depth, 2, 0, seed, zero_qk, &M));
  double x[AFFINE_POINTS * 2], scales[AFFINE_POINTS];
  geom_point pts[AFFINE_POINTS];
  random_points(seed, AFFINE_POINTS, 2, x);
  int rc = curvature_at(M, 2, AFFINE_POINTS, x, pts, scales);
  model_free(M);
  CS_CHECK(rc);
  *max_ratio = 0.0;
  for (int p = 0; p < AFFINE_POINTS; p++)
    if (!pts[p].degenerate && scales[p] > 0)
      *max_ratio = fmax(*max_ratio, fabs(pts[p].S) / scales[p]);
  return CS_OK;
}

/* The gated archs (config_arch_gated) in table order: out[0..return). */
static int gated_archs(cs_arch out[ARCH_COUNT]) {
  int n = 0;
  for (int a = 0; a < ARCH_COUNT; a++)
    if (config_arch_gated((cs_arch)a)) out[n++] = (cs_arch)a;
  return n;
}

/* The self-family rows of `curvsweep verify` (docs/DECISIONS.md). */
static int verify_self_all(verify_table *t) {
  char name[96];
  cs_arch gated[ARCH_COUNT];
  int n_gated = gated_archs(gated);
  /* W_q = W_k = 0: uniform attention, the ungated CLS map is affine in x,
   * its second derivatives vanish exactly (flat) at every depth, with and
   * without residual, 1 and 2 heads */
  for (int depth = 1; depth <= 4; depth++)
    for (int residual = 0; residual <= 1; residual++) {
      double h2, dev;
      CS_CHECK(verify_self_uniform(ARCH_UNGATED, GATE_G1, depth, 1 + residual, residual,
                                   200 + depth, &h2, &dev));
      snprintf(name, sizeof name, "self ungated Wq=Wk=0 depth %d%s: max |d2 h_CLS|", depth,
               residual ? " residual 2 heads" : "");
      CS_CHECK(verify_add(t, name, h2, 0.0, 0.0, h2 == 0.0));
    }
  /* a g3 or g4 gate multiplies a zero K or Q: inert, the CLS jets equal
   * ungated's bitwise (same shared tensors) */
  for (int g = 0; g < n_gated; g++)
    for (int pos = GATE_G3; pos <= GATE_G4; pos++) {
      double h2, dev;
      CS_CHECK(verify_self_uniform(gated[g], (cs_gate_pos)pos, 3, 2, 1, 210 + pos, &h2, &dev));
      snprintf(name, sizeof name, "self %s %s Wq=Wk=0 depth 3: max |jet - ungated jet|",
               config_arch_name(gated[g]), config_gate_name((cs_gate_pos)pos));
      CS_CHECK(verify_add(t, name, dev, 0.0, 0.0, dev == 0.0));
    }
  /* at depth 1 a g1 or g5 gate of the CLS row reads the CLS token, a
   * constant: it rescales the CLS map by a constant, which stays affine */
  const cs_gate_pos after[2] = {GATE_G1, GATE_G5};
  for (int g = 0; g < n_gated; g++)
    for (int k = 0; k < 2; k++) {
      double h2, dev;
      CS_CHECK(verify_self_uniform(gated[g], after[k], 1, 2, k, 240 + k, &h2, &dev));
      snprintf(name, sizeof name, "self %s %s Wq=Wk=0 depth 1%s: max |d2 h_CLS|",
               config_arch_name(gated[g]), config_gate_name(after[k]), k ? " residual" : "");
      CS_CHECK(verify_add(t, name, h2, 0.0, 0.0, h2 == 0.0));
    }
  /* contrast (measured, not an identity): with random W_q, W_k the ungated
   * self family is curved (its values depend on x); with W_q = W_k = 0 a g2
   * gate (on every token's values) curves the CLS map at depth 1, and g1, g5
   * from depth 2 on (the CLS row then depends on x) */
  double r;
  CS_CHECK(verify_self_curved(ARCH_UNGATED, GATE_G1, 2, 0, 220, &r));
  CS_CHECK(verify_add(t, "self ungated random Wq, Wk depth 2: max |S|/|Pi|^2 >= 1e-10", r,
                      VERIFY_CURVED_BOUND, 0.0, r >= VERIFY_CURVED_BOUND));
  const cs_gate_pos curving[3] = {GATE_G2, GATE_G1, GATE_G5};
  for (int k = 0; k < 3; k++) {
    int depth = k ? 2 : 1;
    CS_CHECK(verify_self_curved(ARCH_GATED, curving[k], depth, 1, 230 + k, &r));
    snprintf(name, sizeof name, "self gated %s Wq=Wk=0 depth %d: max |S|/|Pi|^2 >= 1e-10",
             config_gate_name(curving[k]), depth);
    CS_CHECK(verify_add(t, name, r, VERIFY_CURVED_BOUND, 0.0, r >= VERIFY_CURVED_BOUND));
  }
  return CS_OK;
}

/* The lm rows of `curvsweep verify` (lm_check.c). */
static int verify_lm_all(verify_table *t) {
  char name[112];
  for (int mlp = 0; mlp <= 2; mlp += 2) {
    double dev;
    CS_CHECK(verify_lm_ungated_gate_free(2, mlp, &dev));
    snprintf(name, sizeof name, "lm ungated depth 2%s: max |jet at g2..g5 - jet at g1|",
             mlp ? " mlp" : "");
    CS_CHECK(verify_add(t, name, dev, 0.0, 0.0, dev == 0.0));
  }
  static const cs_arch ARCHS[] = {ARCH_GATED, ARCH_GATED_HEADWISE};
  for (int a = 0; a < 2; a++)
    for (int g = GATE_G1; g <= GATE_G5; g++) {
      double rel;
      CS_CHECK(verify_lm_half_gate(ARCHS[a], (cs_gate_pos)g, 2, 2, &rel));
      snprintf(name, sizeof name, "lm %s %s W_g=b_g=0 depth 2: max rel |jet - halved ungated jet|",
               config_arch_name(ARCHS[a]), config_gate_name((cs_gate_pos)g));
      CS_CHECK(verify_add(t, name, rel, 0.0, 1e-12, rel <= 1e-12));
    }
  return CS_OK;
}


int verify_positive_gated_point(int64_t *seed_out, double x_out[2], double *Kt_gated,
                                double *Kt_ungated) {
  double x[AFFINE_POINTS * 2];
  geom_point gp[AFFINE_POINTS], up[AFFINE_POINTS];
  for (uint64_t seed = 0; seed < 100; seed++) {
    cs_model *G = NULL, *U = NULL;
    cs_config cg = affine_config(ARCH_GATED, 2, 1, seed), cu = affine_config(ARCH_UNGATED, 2, 1, seed);
    int rc = model_create(&cg, NULL, &G);
    if (!rc) rc = model_create(&cu, NULL, &U);
    if (!rc) {
      randomise(G, seed);
      randomise(U, seed);
      random_points(seed, AFFINE_POINTS, 2, x);
      rc = curvature_at(G, 2, AFFINE_POINTS, x, gp, NULL);
    }
    if (!rc) rc = curvature_at(U, 2, AFFINE_POINTS, x, up, NULL);
    model_free(G);
    model_free(U);
    CS_CHECK(rc);
    for (int p = 0; p < AFFINE_POINTS; p++)
      if (!gp[p].degenerate && !up[p].degenerate && gp[p].K_tilde > 0.05) {
        *seed_out = (int64_t)seed;
        x_out[0] = x[2 * p], x_out[1] = x[2 * p + 1];
        *Kt_gated = gp[p].K_tilde;
        *Kt_ungated = up[p].K_tilde;
        return CS_OK;
      }
  }
  return cs_error(CS_ERR_NUMERIC, "verify: no gated point with K~ > 0.05 in seeds 0..99");
}

int verify_scaling(double c, double *dev_K, double *dev_Kt) {
  cs_config cfg = affine_config(ARCH_GATED, 2, 2, 3);
  cfg.slots = 4, cfg.width = 8;
  cs_model *M;
  CS_CHECK(model_create(&cfg, NULL, &M));
  randomise(M, 3);
  double x[AFFINE_POINTS * 2];
  geom_point before[AFFINE_POINTS], after[AFFINE_POINTS];
  random_points(3, AFFINE_POINTS, 2, x);
  int rc = curvature_at(M, 2, AFFINE_POINTS, x, before, NULL);
  /* h_L = W_o u + b_o (no residual): scaling W_o and b_o scales h_L by c */
  cs_tensor Wo, bo;
  if (!rc) rc = model_find_tensor(M, "layer1/Wo", &Wo);
  if (!rc) rc = model_find_tensor(M, "layer1/bo", &bo);
  if (!rc) {
    for (int i = 0; i < Wo.rows * Wo.cols; i++) Wo.v[i] *= c;
    for (int i = 0; i < bo.rows * bo.cols; i++) bo.v[i] *= c;
    rc = curvature_at(M, 2, AFFINE_POINTS, x, after, NULL);
  }
  model_free(M);
  CS_CHECK(rc);
  double dk = 0, dkt = 0;
  int n = 0;
  for (int p = 0; p < AFFINE_POINTS; p++) {
    if (before[p].degenerate || after[p].degenerate) continue;
    dk = fmax(dk, fabs(after[p].K * c * c - before[p].K) / fabs(before[p].K));
    dkt = fmax(dkt, fabs(after[p].K_tilde - before[p].K_tilde) / fabs(before[p].K_tilde));
    n++;
  }
  if (n == 0) return cs_error(CS_ERR_NUMERIC, "verify: every point degenerate in the scale check");
  *dev_K = dk, *dev_Kt = dkt;
  return CS_OK;
}

int verify_saturated_flatness(double key_scale, double *max_abs_Kt, double *min_logdet) {
  cs_config c = affine_config(ARCH_UNGATED, 2, 2, 11);
  cs_model *M;
  CS_CHECK(model_create(&c, NULL, &M));
  randomise(M, 11);
  /* scale the slot keys: scores grow, the softmax saturates at most points */
  int rc = CS_OK;
  for (int l = 0; l < c.depth && !rc; l++) {
    char name[32];
    cs_tensor K;
    snprintf(name, sizeof name, "layer%d/K", l);
    rc = model_find_tensor(M, name, &K);
    for (int i = 0; !rc && i < K.rows * K.cols; i++) K.v[i] *= key_scale;
  }
  double x[AFFINE_POINTS * 2];
  geom_point pts[AFFINE_POINTS];
  random_points(11, AFFINE_POINTS, 2, x);
  if (!rc) rc = curvature_at(M, 2, AFFINE_POINTS, x, pts, NULL);
  model_free(M);
  CS_CHECK(rc);
  double mk = 0.0, ml = INFINITY;
  int n = 0;
  for (int p = 0; p < AFFINE_POINTS; p++) {
    if (pts[p].degenerate) continue;
    mk = fmax(mk, fabs(pts[p].K_tilde));
    ml = fmin(ml, pts[p].logdet_g);
    n++;
  }
  if (n == 0) return cs_error(CS_ERR_NUMERIC, "verify: every saturated point degenerate");
  *max_abs_Kt = mk, *min_logdet = ml;
  return CS_OK;
}

int verify_trained_resolved(cs_arch arch, int depth, double *resolved_min) {
  cs_config c = config_default();
  c.arch = arch, c.depth = depth, c.task = TASK_CIRCLES, c.seed = 0;
  cs_cell_result res;
  int rc = cell_run(&c, 0, NULL, NULL, NULL, &res);
  if (!rc && res.status != CELL_DONE)
    rc = cs_error(CS_ERR_NUMERIC, "verify: the trained %s depth-%d cell %s: %s",
                  config_arch_name(arch), depth, result_status_name(res.status), res.message);
  *resolved_min = 1.0;
  for (int l = 0; !rc && l < res.depth; l++) {
    const geom_stats *st = &res.curv[l];
    double nondeg = 1.0 - st->degenerate_frac;
    double resolved = nondeg > 0 ? (st->flat_frac + st->curved_frac) / nondeg : 1.0;
    if (resolved < *resolved_min) *resolved_min = resolved;
  }
  result_free(&res);
  return rc;
}

int verify_all(verify_table *t) {
  /* 1. analytic surfaces through the engine */
  int n = 0;
  CS_CHECK(verify_surfaces(NULL, 0, &n));
  verify_check *rows;
  CS_CHECK(CS_CALLOC(rows, n));
  int rc = verify_surfaces(rows, n, &n);
  for (int i = 0; !rc && i < n; i++)
    rc = verify_add(t, rows[i].check, rows[i].value, rows[i].expected, rows[i].tol, rows[i].pass);
  free(rows);
  CS_CHECK(rc);
  char name[96];
  /* 2. affine regime: ungated flat to rounding at every depth */
  for (int m = 2; m <= 3; m++)
    for (int depth = 1; depth <= 8; depth++) {
      verify_affine v;
      CS_CHECK(verify_affine_stats(ARCH_UNGATED, m, depth, 100 + depth, &v));
      int not_flat = v.valid_points - v.flat_points;
      snprintf(name, sizeof name, "ungated affine m=%d depth %d: points not flat (of %d)", m,
               depth, v.valid_points);
      CS_CHECK(verify_add(t, name, not_flat, 0.0, 0.0, not_flat == 0));
      double r = v.max_ratio;
      snprintf(name, sizeof name, "ungated affine m=%d depth %d: max |S|/|Pi|^2", m, depth);
      CS_CHECK(verify_add(t, name, r, 0.0, VERIFY_FLAT_BOUND, r <= VERIFY_FLAT_BOUND));
    }
  /* 3. the same skeleton gated is curved: some point with |S| at least 1e6×
   * the flatness bound. (Deeper random gated stacks saturate their gates and
   * softmaxes and the ratio decays; trained models are what sweeps measure.) */
  cs_arch gated[ARCH_COUNT];
  int n_gated = gated_archs(gated);
  for (int g = 0; g < n_gated; g++)
    for (int m = 2; m <= 3; m++)
      for (int depth = 1; depth <= 3; depth++) {
        verify_affine v;
        CS_CHECK(verify_affine_stats(gated[g], m, depth, 100 + depth, &v));
        snprintf(name, sizeof name, "%s affine m=%d depth %d: max |S|/|Pi|^2 >= 1e-10",
                 config_arch_name(gated[g]), m, depth);
        CS_CHECK(verify_add(t, name, v.max_ratio, VERIFY_CURVED_BOUND, 0.0,
                            v.max_ratio >= VERIFY_CURVED_BOUND));
      }
  /* 2b. flat also where the softmax saturates (tiny but exact derivatives) */
  double mk, ml;
  CS_CHECK(verify_saturated_flatness(20.0, &mk, &ml));
  snprintf(name, sizeof name, "ungated affine, saturated softmax (min log det g %.0f): max |K~|", ml);
  CS_CHECK(verify_add(t, name, mk, 0.0, 1e-8, mk <= 1e-8));
  /* 4. positive curvature needs the gate */
  int64_t seed;
  double x[2], kg, ku;
  CS_CHECK(verify_positive_gated_point(&seed, x, &kg, &ku));
  snprintf(name, sizeof name, "gated K~ > 0 at seed %lld x=(%.3f,%.3f)", (long long)seed, x[0], x[1]);
  CS_CHECK(verify_add(t, name, kg, 0.05, 0.0, kg > 0.05));
  snprintf(name, sizeof name, "ungated K~ = 0 at the same point");
  CS_CHECK(verify_add(t, name, ku, 0.0, 1e-8, fabs(ku) <= 1e-8));
  /* 6. trained gated models: at least 99% of the non-degenerate points are
   * resolved (flat or curved) at every prefix */
  for (int g = 0; g < n_gated; g++) {
    double resolved;
    CS_CHECK(verify_trained_resolved(gated[g], 5, &resolved));
    snprintf(name, sizeof name, "trained %s depth 5: min share of points resolved",
             config_arch_name(gated[g]));
    CS_CHECK(verify_add(t, name, resolved, 0.99, 0.0, resolved >= 0.99));
  }
  /* 7. the self family where theory gives an exact answer */
  CS_CHECK(verify_self_all(t));
  /* 8. the lm family: exact identities of its jets (lm_check.c) */
  CS_CHECK(verify_lm_all(t));
  /* 5. rescaling the representation by c: K -> K/c², K~ unchanged */
  double dk, dkt;
  CS_CHECK(verify_scaling(3.0, &dk, &dkt));
  CS_CHECK(verify_add(t, "scale h_L by 3: max rel dev of K*9 from K", dk, 0.0, 1e-9, dk <= 1e-9));
  CS_CHECK(verify_add(t, "scale h_L by 3: max rel dev of K~", dkt, 0.0, 1e-9, dkt <= 1e-9));
  return CS_OK;
}

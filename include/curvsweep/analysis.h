/* analysis.h — `curvsweep analyze`: the depth-amplification report
 * (analysis/README.md).
 *
 * An archive (or several archives of one spec, merged on the fly) is read
 * through archive.h only; the report is a directory of CSV tables (the
 * core's, each optional section's and verdicts.csv: analysis_report_table
 * below), gnuplot scripts with their data files and the PNGs they render,
 * COLUMNS.md, and an index.md whose verdicts on the four claims and on each
 * section's are computed from the tables. Column meanings and the verdict
 * rules are in analysis/README.md.
 *
 * The statistics helpers (Student-t quantile, mean and t interval, least
 * squares slope, paired bootstrap of a log-log slope, sign test, median
 * interval) are public so the tests can check them against hand values. */
#ifndef CURVSWEEP_ANALYSIS_H
#define CURVSWEEP_ANALYSIS_H

#include "curvsweep/result.h"
#include "curvsweep/rng.h"

#include <stddef.h>
#include <stdint.h>

/* A cell (ungated, affine skeleton) counts as flat when its mean |K̃| is at
 * most this (the bound `curvsweep verify` applies to K̃ at a point). */
#define ANALYSIS_FLAT_KT 1e-8
/* ... or, in models whose metric has collapsed (ill-conditioned J, where the
 * rounding error of K̃ grows), when it is at most this times the mean |K̃| of
 * the gated cells at the same task, depth, regime and prefix. */
#define ANALYSIS_FLAT_REL 1e-6
/* Bootstrap replicates and confidence level of every interval. */
#define ANALYSIS_BOOTSTRAP_B 2000
#define ANALYSIS_LEVEL 0.95

#define ANALYSIS_MAX_WARNINGS 16
/* Default family-wise α of the verdicts and equivalence margin (1
 * percentage point of accuracy) of claim 3's linear tasks. */
#define ANALYSIS_ALPHA 0.05
#define ANALYSIS_MARGIN 0.01
/* Sign-flip tests enumerate all 2^n sign patterns up to this many seeds,
 * beyond it they draw ANALYSIS_MC_DRAWS patterns (analysis/README.md). */
#define ANALYSIS_EXACT_MAX 16
#define ANALYSIS_MC_DRAWS 20000

typedef struct {
  int bootstrap;            /* replicates B (default ANALYSIS_BOOTSTRAP_B) */
  uint64_t bootstrap_seed;  /* key of the bootstrap streams (default 0) */
  const char *gnuplot;      /* gnuplot binary: a path, or a name searched on
                               PATH; NULL: "gnuplot" (the CLI passes $CS_GNUPLOT) */
  int render;               /* 0: write .gp/.dat but never run gnuplot */
  double target_acc;        /* learning curves: the target test accuracy in (0, 1];
                               NaN (default): 95% of the best mean accuracy of the curve */
  double alpha;             /* family-wise error rate of every verdict, in (0, 0.5)
                               (default ANALYSIS_ALPHA; `analyze --alpha`) */
  double margin;            /* equivalence margin of claim 3's linear tasks, accuracy
                               in (0, 1) (default ANALYSIS_MARGIN; `analyze --margin`) */
} analysis_options;

analysis_options analysis_options_default(void);

/* What a run of the analysis produced. Warnings are for the caller to print
 * (library code never prints); e.g. "gnuplot not found: plots skipped". */
typedef struct {
  int64_t cells_total;      /* cells of the spec's grid */
  int64_t cells_selected;   /* cells listed in the archives (all, unless shards) */
  int64_t done, pending, failed, diverged;
  int plots_written;        /* PNGs rendered */
  int plots_scripted;       /* .gp scripts written */
  int plots_failed;         /* scripts gnuplot failed on (`analyze` then exits 1) */
  char plot_error[1024];    /* the first failure: the script and gnuplot's own message */
  int n_warnings;
  char warnings[ANALYSIS_MAX_WARNINGS][256];
} analysis_outcome;

/* Analyse n_paths archives of one spec into out_dir (created if missing;
 * files of a previous report there are replaced). Errors, all before anything
 * is written: archives of different specs (CS_ERR_INPUT naming both files and
 * hashes), an unreadable archive (the archive module's code, with the file
 * name), no done cell in any archive (CS_ERR_INPUT "no finished cells yet").
 * opt may be NULL (defaults). out may be NULL. */
int analysis_run(const char *const *paths, int n_paths, const char *out_dir,
                 const analysis_options *opt, analysis_outcome *out);

/* Analyse results already in memory (borrowed, not freed) of the sweep whose
 * spec text is spec_text, exactly as analysis_run does archives; `label`
 * stands for the archive name in index.md. For tests of the verdict rules on
 * statistics the archive may not carry. */
int analysis_run_results(const char *spec_text, const cs_cell_result *results, int64_t n,
                         const char *label, const char *out_dir, const analysis_options *opt,
                         analysis_outcome *out);

/* `curvsweep export`: the archive's tables as DIR/cells.csv (one row per
 * cell), DIR/curvature.csv (per done cell and prefix), DIR/curves.csv
 * (per finished cell and evaluation) and DIR/NAME.csv of each table of
 * archive_csv_table (estimation, gates, cellstats), each with the cell's axis values
 * decoded (analysis/README.md, "Export"); DIR is created if missing and
 * each file replaced atomically. *n_cells: the cells exported. */
int analysis_export_csv(const char *archive, const char *dir, int64_t *n_cells);

/* Default report directory: "<archive without .h5>-report" next to it,
 * e.g. results/demo.h5 -> results/demo-report. CS_ERR_INPUT if it does not fit. */
int analysis_default_dir(const char *archive_path, char *buf, size_t len);

/* The one check of a report directory, `-o DIR` or the default alike
 * (docs/SECURITY.md, "The report directory"): CS_ERR_INPUT naming it when
 * something is there that is not a directory, a symbolic link included
 * (even one to a directory); CS_OK when it is missing or a directory.
 * analysis_run and analysis_export_csv apply it too, before any work, and
 * never follow a link planted there later. */
int analysis_report_dir_check(const char *dir);

/* One CSV table of the report: its file name, when it is written ("": in
 * every report; else the sweep it needs, e.g. "a gate axis") and what a
 * row holds, in one line. */
typedef struct {
  const char *file, *when, *about;
} analysis_table_info;

/* The CSV tables `analyze` can write, in the order of the report: the
 * core's, each section's (from its row of the section table,
 * analysis/sections/sections.c), verdicts.csv; table i, NULL past the last. For
 * `analyze --help`, generated from the same table as the report. */
const analysis_table_info *analysis_report_table(int i);

/* ---- statistics (analysis/stats/stats.c) ---- */

/* Mean and two-sided t interval of the finite values among x[0..n-1]:
 * mean ± t_{(1+level)/2, k-1} · s/√k, s the sample standard deviation and k
 * the number of finite values (k = out->n). k = 0: all NaN; k = 1: lo = hi = NaN. */
typedef struct {
  int n;
  double mean, lo, hi;
} analysis_ci;

void analysis_mean_ci(const double *x, int n, double level, analysis_ci *out);

/* Regularised incomplete beta I_x(a, b) (continued fraction). */
double analysis_incbeta(double a, double b, double x);
/* Student-t CDF with df degrees of freedom (df > 0, may be fractional). */
double analysis_t_cdf(double t, double df);
/* Quantile t_{p, df}: the t with analysis_t_cdf(t, df) = p, 0 < p < 1. NaN for bad input. */
double analysis_t_quantile(double p, double df);

/* Least-squares slope of y on x over the pairs where both are finite; NaN
 * with fewer than two such pairs or no spread in x. intercept may be NULL. */
double analysis_ls_slope(const double *x, const double *y, int n, double *intercept);

/* P(X ≤ k) for X ~ Binomial(n, 1/2). */
double analysis_binom_half_cdf(int k, int n);
/* Two-sided sign test: p = min(1, 2·P(X ≤ min(n_pos, n_neg))), X ~ Bin(n_pos + n_neg, 1/2)
 * (ties dropped by the caller). NaN when n_pos + n_neg = 0. */
double analysis_sign_test(int n_pos, int n_neg);

/* Median of the finite x[] with the distribution-free order-statistic
 * interval [x_(j), x_(k-j+1)] (k finite values), j the largest with coverage
 * 1 − 2·P(Bin(k, 1/2) ≤ j−1) ≥ level; when even j = 1 falls short (k ≤ 5 at
 * 95%) j = 1 and *coverage reports the lower coverage actually achieved. */
int analysis_median_ci(const double *x, int n, double level, analysis_ci *out, double *coverage);

/* Slope of f(ȳ_g) against log x_g over groups g = 0..G-1, with ȳ_g the mean
 * of the finite y[g·S + s] over seeds s (f = log when log_y, else identity;
 * groups whose f(ȳ_g) is not finite are left out of the fit), and its
 * percentile bootstrap interval: B replicates each drawing S seed indices with
 * replacement from rng, the same draw for every group (paired by seed).
 * Replicates whose slope is not finite are dropped (n_valid counts the rest).
 * The interval is NaN when S < 2 or fewer than half the replicates are valid. */
typedef struct {
  double estimate, lo, hi;
  int n_valid;
} analysis_boot;

int analysis_bootstrap_slope(int G, int S, const double *x, const double *y, int log_y, int B,
                             double level, rng_stream *rng, analysis_boot *out);

/* ---- the tests behind the verdicts (analysis/stats/inference.c) ---- */

typedef enum { ANALYSIS_TWO_SIDED = 0, ANALYSIS_GREATER, ANALYSIS_LESS } analysis_side;

/* Paired sign-flip (permutation) test of the mean of the finite d[] against
 * 0: statistic T = Σ d_i; p = share of the 2^n sign patterns ε with
 * Σ ε_i d_i ≥ T (GREATER), ≤ T (LESS) or |Σ ε_i d_i| ≥ |T| (TWO_SIDED),
 * counted exactly for n ≤ ANALYSIS_EXACT_MAX; beyond, B = ANALYSIS_MC_DRAWS
 * random patterns from rng (NULL: a fixed stream) give p = (1 + hits)/(1 + B)
 * with Monte Carlo standard error mc_se = √(p(1 − p)/B) (0 when exact).
 * n = 0: p NaN. */
typedef struct {
  int n;
  double p, mc_se;
} analysis_perm;

int analysis_signflip(const double *d, int n, analysis_side side, rng_stream *rng, analysis_perm *out);

/* Holm's step-down adjustment of the k p-values p[] (NaN entries are not
 * part of the family and stay NaN): sorted ascending, p_adj(i) =
 * max_{j ≤ i} min(1, (m − j + 1) p_(j)), m the finite ones. Returns m. */
int analysis_holm(const double *p, int k, double *p_adj);

/* The fewest seeds with which a sign-flip test can reach p < alpha after
 * Holm over a family of k: the smallest n with k · 2^−n < alpha (one-sided)
 * or k · 2^(1−n) < alpha (two-sided). */
int analysis_seeds_needed(double alpha, int k, analysis_side side);

/* Paired standardised effect d_z = mean(d)/sd(d) of the finite d[] with an
 * approximate interval d_z ± t_{(1+level)/2, n−1} · √(1/n + d_z²/(2(n − 1)))
 * (analysis/README.md); NaN with n < 2 or sd = 0. */
void analysis_dz(const double *d, int n, double level, analysis_ci *out);

/* Paired TOST against the margin ±m: p = max of the one-sided t p-values of
 * H0: μ ≤ −m and H0: μ ≥ m; ci the (1 − 2α) t interval of the mean (so p < α
 * exactly when ci lies inside (−m, m)). n < 2: p NaN. */
typedef struct {
  analysis_ci ci;
  double p;
} analysis_tost;

void analysis_tost_t(const double *d, int n, double m, double alpha, analysis_tost *out);

/* ---- machine-readable verdicts (analysis/stats/checks.c; verdicts.csv) ---- */

typedef enum {
  ANALYSIS_SUPPORTED = 0,
  ANALYSIS_NOT_SUPPORTED,
  ANALYSIS_EQUIVALENT,
  ANALYSIS_NOT_EQUIVALENT,
  ANALYSIS_INCONCLUSIVE,
  ANALYSIS_TOO_FEW,
  ANALYSIS_NOT_TESTABLE, /* a precondition of the test failed (the estimation rates' control) */
  ANALYSIS_DECISION_COUNT
} analysis_decision;

/* "supported", "not supported", "equivalent", "not equivalent",
 * "inconclusive", "too few", "not testable". */
const char *analysis_decision_name(analysis_decision d);

/* One row of verdicts.csv: a check behind a verdict (verdict = 0) or the
 * verdict itself (verdict = 1). Columns and rules: analysis/README.md. */
typedef struct {
  char claim[32];     /* "1" … "4", "sample-efficiency", "gate-g1-best", "gate-sink", "gate-ov-qk", "sink-share", "sink-massive", "sink-drain" */
  char scope[320];    /* what it covers, fields separated by ';' (never ',') */
  char test[64];      /* e.g. "sign-flip exact one-sided", "TOST t", "holm-any" */
  char unit[16];      /* "seed", "row" (a table row), "cell" */
  char family[64];    /* Holm family key ("" for none) */
  int n;              /* units behind the test */
  double effect, effect_lo, effect_hi;  /* estimate and its interval (95%; TOST: 1 − 2α) */
  double dz, dz_lo, dz_hi;              /* paired d_z and interval (NaN when not a paired mean) */
  double p_raw, p_adj, mc_se;
  int family_size;    /* the Holm family's size (0: no adjustment) */
  char adjust[32];    /* "holm(k)", "none", "intersection-union", "min-holm(k)" */
  int needs;          /* seeds the test needs to reach alpha in its family (0: n/a) */
  analysis_decision decision;
  int verdict;
  double resolved;    /* share of the points the statistic is drawn from (NaN: n/a) */
  /* how the decision is read (set by the code that adds the check) */
  analysis_side side; /* the sign-flip test's alternative; effects are oriented so > 0 is the claim */
  int tost;           /* 1: an equivalence check (p is TOST's, effect interval 1 − 2α) */
  double margin;      /* its margin */
  int key;            /* the claim's own index of the check (−1: none), by which its index.md
                       * part finds it (analysis_check_keyed); not a column */
} analysis_check;

typedef struct {
  int n, cap;
  analysis_check *c;
} analysis_checks;

void analysis_checks_free(analysis_checks *v);

/* The verdicts of the results in memory (as analysis_run_results), computed
 * without writing anything: the same rows verdicts.csv holds, in its order.
 * Free with analysis_checks_free. */
int analysis_verdicts_results(const char *spec_text, const cs_cell_result *results, int64_t n,
                              const analysis_options *opt, analysis_checks *out);

#endif

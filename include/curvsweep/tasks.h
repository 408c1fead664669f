/* tasks.h — the synthetic datasets of docs/MODELS.md.
 *
 * Deterministic from (task, seed, split): a dataset is a pure function of
 * these (and m, n, label_noise), drawn from counter-based streams. */
#ifndef CURVSWEEP_TASKS_H
#define CURVSWEEP_TASKS_H

#include <stdint.h>

/* The tasks module depends on no other module's header but error.h and rng.h:
 * the spec module (config.h) asks it for names and supported dimensions,
 * never the other way round (docs/ARCHITECTURE.md). */
typedef enum {
  TASK_LINEAR = 0,
  TASK_BLOBS,
  TASK_XOR,
  TASK_CIRCLES,
  TASK_SPIRAL,
  TASK_CHECKER,
  TASK_BIGRAM_BACKCOPY, /* token sequences (src/tasks/sequences.c) */
  TASK_ASSOC_RECALL,
  TASK_TEACHER, /* token sets with a planted teacher's targets (task_token_sets) */
  TASK_COUNT
} cs_task_kind;
/* The point tasks (x, y) come first: kinds 0..TASK_POINT_COUNT-1. */
#define TASK_POINT_COUNT TASK_BIGRAM_BACKCOPY

/* "linear", "blobs", "xor", "circles", "spiral", "checker", "bigram-backcopy",
 * "associative-recall", "teacher"; "?" out of range. */
const char *task_name(cs_task_kind kind);
/* Name -> task kind; -1 when unknown. */
int task_parse(const char *name);

typedef enum { SPLIT_TRAIN = 0, SPLIT_TEST = 1, SPLIT_EVAL = 2 } cs_split;

/* A dataset of points (x, y) or, for the sequence tasks, of token
 * sequences (T > 0: tokens and scored; x and y are NULL). */
typedef struct {
  int n;        /* points or sequences */
  int m;        /* input dimension (0 for sequences) */
  double *x;    /* n × m, row-major */
  int *y;       /* n labels in {0, 1} */
  int T;        /* tokens per sequence including BOS; 0 for point tasks */
  int vocab;    /* V: tokens 0..V-1, BOS is token V (position 0 of every sequence) */
  int *tokens;  /* n × T, row-major */
  unsigned char *scored; /* n × T: 1 where token t is a scored target of the
                            prediction at position t − 1 (never at t = 0) */
} cs_dataset;

/* Generate n points of task kind in dimension m. label_noise flips that
 * fraction of labels (only meaningful for the train split; callers pass 0
 * otherwise). CS_ERR_INPUT for an m the task does not support. */
int task_generate(cs_task_kind kind, int m, int n, int64_t seed, cs_split split,
                  double label_noise, cs_dataset *out);
void task_dataset_free(cs_dataset *d);

/* "linear" or "nonlinear": the task's decision boundary type ("sequence"
 * for the sequence tasks, "regression" for teacher). */
const char *task_boundary(cs_task_kind kind);
/* 1 when the task is defined for input dimension m, else 0. */
int task_supports_dim(cs_task_kind kind, int m);
/* Axis-aligned box [lo, hi]^m containing the task's inputs (the domain of
 * integrated curvature): e.g. [-1, 1] for the uniform tasks; for the
 * sequence tasks the box of the probe-plane coordinates x of the lm
 * family's evaluation points, [-TASK_PROBE_HALF, TASK_PROBE_HALF]^2
 * (docs/MODELS.md, "Curvature of the lm family"). */
#define TASK_PROBE_HALF 0.5
void task_domain(cs_task_kind kind, int m, double *lo, double *hi);
/* Number of classes (2 for every current task). */
int task_classes(cs_task_kind kind);

/* ---- token-sequence tasks (src/tasks/sequences.c, docs/MODELS.md) ---- */

/* 1 for the tasks over token sequences (bigram-backcopy, associative-recall). */
int task_is_sequence(cs_task_kind kind);
/* Smallest seq_len (including BOS) the sequence task defines. */
int task_min_seq_len(cs_task_kind kind);
/* Bigram-Backcopy's constants (docs/MODELS.md). */
#define TASK_BB_TRIGGERS 3   /* trigger tokens */
#define TASK_BB_SUCCESSORS 3 /* successors per token, each w.p. 1/3 */
/* Bigram-Backcopy's structure for (seed, V): order (V) the seeded cyclic
 * order of the tokens (a permutation), triggers (TASK_BB_TRIGGERS) the
 * trigger tokens. The successors of token order[i] are order[i+1..i+3]
 * (indices mod V). CS_ERR_INPUT for V < 4. */
int task_bb_structure(int64_t seed, int V, int *order, int *triggers);
/* n sequences of task kind (a sequence task) with vocabulary V and T tokens
 * including BOS, from the streams of (kind, seed, split). */
int task_generate_sequences(cs_task_kind kind, int V, int T, int n, int64_t seed, cs_split split,
                            cs_dataset *out);

/* Added by the tasks module. Definitions and choices are documented at the top
 * of src/tasks/tasks.c (blobs/spiral noise truncated at 4 sd so task_domain
 * really contains every point: [-3, 3]^m for blobs, [-1, 1]^m otherwise). */

/* The seeded unit vector w (m entries) of linear (y = [w·x > 0]) or the
 * direction μ of blobs (centres ±μ). Depends only on (kind, seed, m), the same
 * for every split. CS_ERR_INPUT for other tasks or m < 1. */
int task_direction(cs_task_kind kind, int64_t seed, int m, double *w);
/* circles' r0: P(|x| < r0) = 1/2 for x ~ U[-1,1]^m, m >= 2. Closed form for
 * m = 2 (sqrt(2/π)) and m = 3 ((3/π)^(1/3)); for m >= 4 the root of the
 * Fourier-series CDF of task_ball_fraction (absolute CDF error <= 1e-12),
 * computed once per m and cached. */
int task_circles_radius(int m, double *r0);
/* P(|x| < r) for x ~ U[-1,1]^m (the volume of ball ∩ cube over 2^m), always by
 * the Fourier series in src/tasks/circles.c (no closed forms): absolute error
 * <= 1e-12 + rounding for m >= 4; m = 2, 3 are capped at 2^21 terms (error
 * about 1e-7 and 1e-11). */
int task_ball_fraction(int m, double r, double *fraction);

/* ---- the teacher task (docs/MODELS.md, "Estimation") ----
 * Token sets X ∈ R^{N×m} given as data, entries i.i.d. U[-1,1] (uniform) or
 * N(0, 1) (gaussian); the targets are the family mha teacher's (src/train).
 * Set i of a split is drawn from its own stream keyed by (seed, split, i),
 * so the first n sets of a split are the same for every n (nested samples). */
#define TASK_TOKEN_GAUSSIAN 1 /* token_dist values: 0 uniform, 1 gaussian (config.h) */
/* Sets first .. first + count − 1 of split: x (count × N·m, row-major, set
 * i's token t at x[i·N·m + t·m]). CS_ERR_INPUT for N, m < 1 or count < 0. */
int task_token_sets(int64_t seed, cs_split split, int64_t first, int count, int N, int m,
                    int dist, double *x);
/* The target noise ε_i ~ N(0, σ²) of the same sets (stream keyed by
 * (seed, split, i)): eps (count). */
void task_token_noise(int64_t seed, cs_split split, int64_t first, int count, double sigma,
                      double *eps);

#endif

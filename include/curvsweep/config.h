/* config.h — the fully resolved settings of one cell.
 *
 * The spec module expands a sweep spec into cells; each cell is one
 * cs_config with every axis fixed. Everything downstream (model,
 * train, geom) reads only this struct. Defaults are those of docs/SPEC.md. */
#ifndef CURVSWEEP_CONFIG_H
#define CURVSWEEP_CONFIG_H

#include "curvsweep/tasks.h"

#include <stdint.h>

typedef enum {
  ARCH_UNGATED = 0,     /* y = W_o o + b_o */
  ARCH_GATED,           /* y = W_o (σ(W_g a + b_g) ⊙ o) + b_o, elementwise gate (G1) */
  ARCH_GATED_HEADWISE,  /* one scalar gate per head */
  ARCH_MLP,             /* y = W_2 tanh(W_1 a + b_1) + b_2 */
  ARCH_COUNT
} cs_arch;

/* cs_task_kind, its count and names belong to the tasks module (tasks.h). */

/* How the entries of a teacher task's token sets are drawn. */
typedef enum { TOKEN_DIST_UNIFORM = 0, TOKEN_DIST_GAUSSIAN, TOKEN_DIST_COUNT } cs_token_dist;
typedef enum { SCHEDULE_CONSTANT = 0, SCHEDULE_COSINE, SCHEDULE_COUNT } cs_schedule;
typedef enum { NORM_NONE = 0, NORM_PRE, NORM_COUNT } cs_norm;
/* The model family (docs/MODELS.md): memory attention (query against learned
 * key/value slots), FT-style self-attention over feature tokens, or a
 * decoder-only language model over token sequences (lm). */
typedef enum { FAMILY_MEMORY = 0, FAMILY_SELF, FAMILY_LM, FAMILY_MHA, FAMILY_COUNT } cs_family;
/* family = mha: one multi-head attention layer over token sets given as
 * data, the student of task = teacher (docs/MODELS.md, "Estimation"). */
/* Where the gate of the self family sits: g1 SDPA output O, g2 values V,
 * g3 keys K, g4 queries Q, g5 after the dense output Y. */
typedef enum { GATE_G1 = 0, GATE_G2, GATE_G3, GATE_G4, GATE_G5, GATE_COUNT } cs_gate_pos;

typedef struct {
  /* the four named axes */
  cs_arch arch;          /* default gated */
  int depth;             /* default 1 */
  cs_task_kind task;     /* default circles */
  int64_t seed;          /* default 0 */
  /* [task] */
  int input_dim;         /* m, default 2 */
  int train_points;      /* 2048 */
  int test_points;       /* 2048 */
  double label_noise;    /* 0 */
  int vocab;             /* V, 32: token tasks (tokens 0..V-1, BOS is V) */
  int seq_len;           /* T, 32: tokens per sequence including BOS */
  int tokens;            /* N, 8: tokens per set (task teacher; token 0 is the query) */
  cs_token_dist token_dist; /* uniform: entries of a token set U[-1,1]; gaussian: N(0,1) */
  int teacher_heads;     /* H*, 1: heads of the planted teacher (task teacher) */
  double noise;          /* σ, 0.1: standard deviation of the target noise ε */
  /* [model] */
  cs_family family;      /* memory */
  cs_gate_pos gate;      /* g1 (self family, gated archs only) */
  int width;             /* d, 16 */
  int slots;             /* n, 3 */
  int heads;             /* H, 1 */
  int residual;          /* 0 = pure composition */
  cs_norm norm;          /* none */
  int mlp_ratio;         /* 4: lm family, MLP hidden width mlp_ratio·d; 0 = attention only */
  /* [train] */
  int epochs;            /* 100 */
  int batch;             /* 256; 0 = full batch */
  double lr;             /* 3e-3 */
  cs_schedule schedule;  /* constant */
  double weight_decay;   /* 0 */
  int eval_every;        /* 10 */
  int restarts;          /* 4: estimator restarts per cell (family mha; docs/MODELS.md) */
  double grad_tol;       /* 1e-7: the estimator stops when ‖∇ loss‖ ≤ grad_tol */
  /* [curvature] */
  int points;            /* 128 */
  double sigma;          /* 1.0 */
  int exact_dim_max;     /* 8 */
  int field;             /* 0 = off; N > 0: curvature field on an N × N grid
                            over the task's input box (input_dim 2 only) */
  /* [team] */
  int team_p, team_q;    /* 1 x 1 */
  int team_block;        /* 64: block size of the block-cyclic layout */
} cs_config;

/* Largest [curvature] field = N: N² = 262144 grid points per cell. */
#define CONFIG_FIELD_MAX 512

/* The docs/SPEC.md defaults. */
cs_config config_default(void);

/* What an arch is (docs/MODELS.md): one row per cs_arch in config.c, so
 * code asks the table instead of testing ARCH_* values. */
typedef enum {
  ARCH_GATE_NONE = 0,   /* no gate */
  ARCH_GATE_ELEMENTWISE, /* one gate per channel: width d */
  ARCH_GATE_HEADWISE    /* one scalar gate per head: width H */
} cs_arch_gate;

typedef struct {
  const char *name;     /* spec value and report label */
  int attention;        /* 1: an attention block; 0: the mlp baseline block */
  cs_arch_gate gate;    /* the gate's shape */
  const char *color;    /* plot colour, gnuplot "#rrggbb" */
} cs_arch_info;

/* The row of a (a "?" row, ungated, grey, for a value out of range). */
const cs_arch_info *config_arch_info(cs_arch a);
const char *config_arch_name(cs_arch a);        /* "ungated", "gated", "gated-headwise", "mlp" */
int config_arch_gated(cs_arch a);               /* 1 when the arch has a gate */
/* Width of the gate of a model of that width and heads: width, heads or 0. */
int config_arch_gate_width(cs_arch a, int width, int heads);
const char *config_arch_color(cs_arch a);       /* plot colour */
/* task_name and task_parse of tasks.h, for callers of this header. */
const char *config_task_name(cs_task_kind t);   /* "linear", "blobs", ... */
/* Name -> enum; -1 when unknown. */
int config_arch_parse(const char *s);
int config_task_parse(const char *s);

/* What a model family accepts (docs/MODELS.md): one row per cs_family in
 * config.c; the family's code is its row of the model module's table
 * (docs/ARCHITECTURE.md, "A new model family"). */
typedef struct {
  const char *name;     /* spec value */
  int mlp_arch;         /* 1: arch = mlp (the mlp baseline block) builds in this family */
  int tokens;           /* 1: trained on token sequences (tasks.h, task_is_sequence) */
  /* What the family can do, read by the report instead of family names
   * (docs/ARCHITECTURE.md, "A new model family"): */
  int gate_positions;   /* 1: the `gate` key places the gate (g1 … g5); 0: the gate key is ignored */
  int first_token;      /* 1: attention over tokens with a first token (CLS, BOS): the sink
                           statistics sink_mass, max_attn and sink_headmax (docs/MODELS.md) */
  int attention_map;    /* 1: its attention map, gate values and extreme-token statistics run
                           forward from /params on held-out sequences (model.h, *_tokens) */
  int estimation;       /* 1: the teacher task's student (task teacher only): one real
                           output, no curvature, results in /estimation (docs/MODELS.md) */
  int affine_skeleton;  /* 1: its ungated model is affine in the input at the skeleton's
                           settings (docs/MODELS.md, "The affine skeleton"): claim 1's cells */
} cs_family_info;

/* The row of f (a "?" row that accepts nothing, for a value out of range). */
const cs_family_info *config_family_info(cs_family f);
/* 1 when a model of family f and arch a can be built. */
int config_family_allows_arch(cs_family f, cs_arch a);
/* 1 when c's settings are the affine skeleton (docs/MODELS.md): a family
 * with that ability, one head, input_dim + 1 slots, no residual, no norm. */
int config_affine_skeleton(const cs_config *c);

const char *config_norm_name(cs_norm n);         /* "none", "pre" */
const char *config_family_name(cs_family f);     /* "memory", "self", "lm" */
/* 1 when family f trains on token-sequence tasks (and only on those). */
int config_family_tokens(cs_family f);
/* 1 when family f is the teacher task's student (estimation row of the table). */
int config_family_estimation(cs_family f);
const char *config_gate_name(cs_gate_pos g);     /* "g1" .. "g5" */
const char *config_schedule_name(cs_schedule s); /* "constant", "cosine" */
const char *config_token_dist_name(cs_token_dist t); /* "uniform", "gaussian" */
/* Name -> enum; -1 when unknown. */
int config_norm_parse(const char *s);
int config_schedule_parse(const char *s);
int config_token_dist_parse(const char *s);
int config_family_parse(const char *s);
int config_gate_parse(const char *s);

#endif

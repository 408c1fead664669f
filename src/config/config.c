/* config.c — the docs/SPEC.md defaults, the arch and family tables (what
 * each arch and family is, config.h) and the name tables of the norm, gate
 * and schedule keys (task names belong to the tasks module, tasks.h). */
#include "curvsweep/config.h"

#include <string.h>

/* The arch table (config.h); colours: the report's plots (analysis/README.md). */
static const cs_arch_info ARCHS[ARCH_COUNT] = {
    [ARCH_UNGATED] = {"ungated", 1, ARCH_GATE_NONE, "#1f77b4"},
    [ARCH_GATED] = {"gated", 1, ARCH_GATE_ELEMENTWISE, "#d62728"},
    [ARCH_GATED_HEADWISE] = {"gated-headwise", 1, ARCH_GATE_HEADWISE, "#ff7f0e"},
    [ARCH_MLP] = {"mlp", 0, ARCH_GATE_NONE, "#2ca02c"},
};
static const cs_arch_info ARCH_UNKNOWN = {"?", 0, ARCH_GATE_NONE, "#7f7f7f"};

/* The family table (config.h): the self, lm and mha families have no mlp
 * block; the lm family alone reads token sequences; the self, lm and mha
 * families place their gate by the gate key, the self and lm families
 * attend over tokens with a first token (CLS, BOS); the lm family's
 * attention is also read from /params on held-out sequences; the mha
 * family alone is the teacher task's student.
 * {name, mlp_arch, tokens, gate_positions, first_token, attention_map, estimation} */
static const cs_family_info FAMILIES[FAMILY_COUNT] = {
    [FAMILY_MEMORY] = {"memory", 1, 0, 0, 0, 0, 0, 1},
    [FAMILY_SELF] = {"self", 0, 0, 1, 1, 0, 0, 0},
    [FAMILY_LM] = {"lm", 0, 1, 1, 1, 1, 0, 0},
    [FAMILY_MHA] = {"mha", 0, 0, 1, 0, 0, 1, 0},
};
static const cs_family_info FAMILY_UNKNOWN = {"?", 0, 0, 0, 0, 0, 0, 0};

static const char *const NORM_NAMES[NORM_COUNT] = {"none", "pre"};
static const char *const SCHEDULE_NAMES[SCHEDULE_COUNT] = {"constant", "cosine"};
static const char *const TOKEN_DIST_NAMES[TOKEN_DIST_COUNT] = {"uniform", "gaussian"};
static const char *const GATE_NAMES[GATE_COUNT] = {"g1", "g2", "g3", "g4", "g5"};

cs_config config_default(void) {
  return (cs_config){
      .arch = ARCH_GATED, .depth = 1, .task = TASK_CIRCLES, .seed = 0,
      .input_dim = 2, .train_points = 2048, .test_points = 2048, .label_noise = 0.0,
      .vocab = 32, .seq_len = 32, .mlp_ratio = 4,
      .tokens = 8, .token_dist = TOKEN_DIST_UNIFORM, .teacher_heads = 1, .noise = 0.1,
      .family = FAMILY_MEMORY, .gate = GATE_G1, .width = 16, .slots = 3, .heads = 1, .residual = 0, .norm = NORM_NONE,
      .epochs = 100, .batch = 256, .lr = 3e-3, .schedule = SCHEDULE_CONSTANT,
      .weight_decay = 0.0, .eval_every = 10, .restarts = 4, .grad_tol = 1e-7,
      .points = 128, .sigma = 1.0, .exact_dim_max = 8, .field = 0,
      .team_p = 1, .team_q = 1, .team_block = 64,
  };
}

const cs_arch_info *config_arch_info(cs_arch a) {
  return ((int)a >= 0 && (int)a < ARCH_COUNT) ? &ARCHS[a] : &ARCH_UNKNOWN;
}

const char *config_arch_name(cs_arch a) { return config_arch_info(a)->name; }
int config_arch_gated(cs_arch a) { return config_arch_info(a)->gate != ARCH_GATE_NONE; }
const char *config_arch_color(cs_arch a) { return config_arch_info(a)->color; }

int config_arch_gate_width(cs_arch a, int width, int heads) {
  switch (config_arch_info(a)->gate) {
    case ARCH_GATE_ELEMENTWISE: return width;
    case ARCH_GATE_HEADWISE: return heads;
    default: return 0;
  }
}

const cs_family_info *config_family_info(cs_family f) {
  return ((int)f >= 0 && (int)f < FAMILY_COUNT) ? &FAMILIES[f] : &FAMILY_UNKNOWN;
}

int config_family_allows_arch(cs_family f, cs_arch a) {
  if ((int)a < 0 || (int)a >= ARCH_COUNT || (int)f < 0 || (int)f >= FAMILY_COUNT) return 0;
  return config_arch_info(a)->attention || config_family_info(f)->mlp_arch;
}

int config_affine_skeleton(const cs_config *c) {
  return config_family_info(c->family)->affine_skeleton && c->heads == 1 && c->slots == c->input_dim + 1 &&
         !c->residual && c->norm == NORM_NONE;
}

const char *config_task_name(cs_task_kind t) {
  return task_name(t);
}

const char *config_norm_name(cs_norm n) {
  return ((int)n >= 0 && (int)n < NORM_COUNT) ? NORM_NAMES[n] : "?";
}

const char *config_schedule_name(cs_schedule s) {
  return ((int)s >= 0 && (int)s < SCHEDULE_COUNT) ? SCHEDULE_NAMES[s] : "?";
}

const char *config_token_dist_name(cs_token_dist t) {
  return ((int)t >= 0 && (int)t < TOKEN_DIST_COUNT) ? TOKEN_DIST_NAMES[t] : "?";
}

const char *config_family_name(cs_family f) { return config_family_info(f)->name; }
int config_family_tokens(cs_family f) { return config_family_info(f)->tokens; }
int config_family_estimation(cs_family f) { return config_family_info(f)->estimation; }

const char *config_gate_name(cs_gate_pos g) {
  return ((int)g >= 0 && (int)g < GATE_COUNT) ? GATE_NAMES[g] : "?";
}

/* The index of the row named s among n table rows of size bytes, each
 * starting with its name (a name table: rows of one pointer); -1 when none. */
static int lookup(const void *rows, size_t size, int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (strcmp(*(const char *const *)((const char *)rows + (size_t)i * size), s) == 0) return i;
  return -1;
}

int config_arch_parse(const char *s) { return lookup(ARCHS, sizeof ARCHS[0], ARCH_COUNT, s); }
int config_task_parse(const char *s) { return task_parse(s); }
int config_norm_parse(const char *s) { return lookup(NORM_NAMES, sizeof(char *), NORM_COUNT, s); }
int config_schedule_parse(const char *s) {
  return lookup(SCHEDULE_NAMES, sizeof(char *), SCHEDULE_COUNT, s);
}
int config_token_dist_parse(const char *s) {
  return lookup(TOKEN_DIST_NAMES, sizeof(char *), TOKEN_DIST_COUNT, s);
}
int config_family_parse(const char *s) {
  return lookup(FAMILIES, sizeof FAMILIES[0], FAMILY_COUNT, s);
}
int config_gate_parse(const char *s) { return lookup(GATE_NAMES, sizeof(char *), GATE_COUNT, s); }

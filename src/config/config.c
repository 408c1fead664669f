/* config.c — the docs/SPEC.md defaults and the name tables of the arch, norm
 * and schedule keys (task names belong to the tasks module, tasks.h). */
#include "curvsweep/config.h"

#include <string.h>

static const char *const ARCH_NAMES[ARCH_COUNT] = {"ungated", "gated", "gated-headwise", "mlp"};
static const char *const NORM_NAMES[NORM_COUNT] = {"none", "pre"};
static const char *const SCHEDULE_NAMES[SCHEDULE_COUNT] = {"constant", "cosine"};
static const char *const FAMILY_NAMES[FAMILY_COUNT] = {"memory", "self"};
static const char *const GATE_NAMES[GATE_COUNT] = {"g1", "g2", "g3", "g4", "g5"};

cs_config config_default(void) {
  return (cs_config){
      .arch = ARCH_GATED, .depth = 1, .task = TASK_CIRCLES, .seed = 0,
      .input_dim = 2, .train_points = 2048, .test_points = 2048, .label_noise = 0.0,
      .family = FAMILY_MEMORY, .gate = GATE_G1, .width = 16, .slots = 3, .heads = 1, .residual = 0, .norm = NORM_NONE,
      .epochs = 100, .batch = 256, .lr = 3e-3, .schedule = SCHEDULE_CONSTANT,
      .weight_decay = 0.0, .eval_every = 10,
      .points = 128, .sigma = 1.0, .exact_dim_max = 8, .field = 0,
      .team_p = 1, .team_q = 1, .team_block = 64,
  };
}

const char *config_arch_name(cs_arch a) {
  return (a >= 0 && a < ARCH_COUNT) ? ARCH_NAMES[a] : "?";
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

const char *config_family_name(cs_family f) {
  return ((int)f >= 0 && (int)f < FAMILY_COUNT) ? FAMILY_NAMES[f] : "?";
}

const char *config_gate_name(cs_gate_pos g) {
  return ((int)g >= 0 && (int)g < GATE_COUNT) ? GATE_NAMES[g] : "?";
}

static int lookup(const char *const *names, int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], s) == 0) return i;
  return -1;
}

int config_arch_parse(const char *s) { return lookup(ARCH_NAMES, ARCH_COUNT, s); }
int config_task_parse(const char *s) { return task_parse(s); }
int config_norm_parse(const char *s) { return lookup(NORM_NAMES, NORM_COUNT, s); }
int config_schedule_parse(const char *s) { return lookup(SCHEDULE_NAMES, SCHEDULE_COUNT, s); }
int config_family_parse(const char *s) { return lookup(FAMILY_NAMES, FAMILY_COUNT, s); }
int config_gate_parse(const char *s) { return lookup(GATE_NAMES, GATE_COUNT, s); }

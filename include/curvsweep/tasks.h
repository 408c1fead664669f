/* tasks.h — the synthetic datasets of DESIGN §2.
 *
 * Deterministic from (task, seed, split): a dataset is a pure function of
 * these (and m, n, label_noise), drawn from counter-based streams. */
#ifndef CURVSWEEP_TASKS_H
#define CURVSWEEP_TASKS_H

#include "curvsweep/config.h"

#include <stdint.h>

typedef enum { SPLIT_TRAIN = 0, SPLIT_TEST = 1, SPLIT_EVAL = 2 } cs_split;

typedef struct {
  int n;        /* points */
  int m;        /* input dimension */
  double *x;    /* n × m, row-major */
  int *y;       /* n labels in {0, 1} */
} cs_dataset;

/* Generate n points of task kind in dimension m. label_noise flips that
 * fraction of labels (only meaningful for the train split; callers pass 0
 * otherwise). CS_ERR_INPUT for an m the task does not support. */
int task_generate(cs_task_kind kind, int m, int n, int64_t seed, cs_split split,
                  double label_noise, cs_dataset *out);
void task_dataset_free(cs_dataset *d);

/* "linear" or "nonlinear": the task's decision boundary type. */
const char *task_boundary(cs_task_kind kind);
/* 1 when the task is defined for input dimension m, else 0. */
int task_supports_dim(cs_task_kind kind, int m);
/* Axis-aligned box [lo, hi]^m containing the task's inputs (the domain of
 * integrated curvature): e.g. [-1, 1] for the uniform tasks. */
void task_domain(cs_task_kind kind, int m, double *lo, double *hi);
/* Number of classes (2 for every current task). */
int task_classes(cs_task_kind kind);

#endif

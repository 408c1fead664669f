/* train.h — training one model (docs/MODELS.md): Adam, evaluation, and the
 * hooks the sweep serves its workers from. Running a whole cell is cell.h. */
#ifndef CURVSWEEP_TRAIN_H
#define CURVSWEEP_TRAIN_H

#include "curvsweep/config.h"
#include "curvsweep/model.h"
#include "curvsweep/result.h"
#include "curvsweep/tasks.h"

/* Called between optimisation steps (the sweep's rank 0 serves workers
 * there). A non-zero return stops training with that code. */
typedef struct {
  int (*between_steps)(void *ctx);
  void *ctx;
} train_hooks;

/* Adam (β = 0.9, 0.999, ε = 1e-8), constant or cosine learning rate,
 * decoupled weight decay on weight matrices, deterministic shuffling from
 * cfg->seed. Fills status (done or diverged), message, train_loss,
 * train_acc, test_acc and the curve (every eval_every epochs and the last)
 * of res. A non-finite loss is status diverged, not an error. */
int train_model(cs_model *model, const cs_config *cfg, const cs_dataset *train,
                const cs_dataset *test, const train_hooks *hooks, cs_cell_result *res);

/* Mean loss and accuracy of the model on a dataset (forward in chunks). */
int train_evaluate(const cs_model *model, cs_acts *acts, const cs_dataset *data, double *loss,
                   double *acc);

#endif

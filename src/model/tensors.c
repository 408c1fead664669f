/* tensors.c — the parameter table of a model (model_internal.h): the
 * tensors a family's layout appends (name, shape, offset into the one flat
 * parameter array, llm.c style), their initialisation, and the views of
 * model.h by index and by name. */
#include "curvsweep/error.h"
#include "curvsweep/rng.h"
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Append a tensor to the table, at the end of the parameter array; its
 * initialisation from its name. */
int64_t model_add_tensor(cs_model *M, const char *name, int rows, int cols, int decays) {
  tensor_entry *t = &M->tensors[M->n_tensors++];
  snprintf(t->name, sizeof t->name, "%s", name);
  t->rows = rows;
  t->cols = cols;
  t->decays = decays;
  const char *leaf = strrchr(t->name, '/');
  leaf = leaf ? leaf + 1 : t->name;
  t->init = INIT_NORMAL;
  t->std = 1.0 / sqrt((double)t->cols); /* W: N(0, 1/fan_in) */
  if (leaf[0] == 'b' || strcmp(leaf, "ln_b") == 0) t->init = INIT_ZEROS;
  if (strcmp(leaf, "ln_g") == 0) t->init = INIT_ONES;
  int64_t offset = M->n_params;
  M->n_params += (int64_t)rows * cols;
  t->offset = offset;
  return offset;
}

int64_t model_add_layer_tensor(cs_model *M, int layer, const char *short_name, int rows,
                               int cols, int decays) {
  char name[48];
  snprintf(name, sizeof name, "layer%d/%s", layer, short_name);
  return model_add_tensor(M, name, rows, cols, decays);
}

void model_set_init(cs_model *M, init_kind kind, double std) {
  tensor_entry *t = &M->tensors[M->n_tensors - 1];
  t->init = kind;
  t->std = std;
}

/* Draw tensor t from its own stream keyed by (seed, tensor name): shared
 * tensors of different archs at one seed are bit-identical. */
static void model_init_tensor(cs_model *M, const tensor_entry *t) {
  double *v = M->params + t->offset;
  int64_t count = (int64_t)t->rows * t->cols;
  init_kind kind = t->init;
  double std = t->std;
  rng_stream s = rng_stream_make((uint64_t)M->cfg.seed, "init", 0, t->name);
  for (int64_t i = 0; i < count; i++)
    v[i] = kind == INIT_ZEROS ? 0.0 : kind == INIT_ONES ? 1.0 : std * rng_normal(&s);
}

void model_init_tensors(cs_model *M) {
  for (int i = 0; i < M->n_tensors; i++) model_init_tensor(M, &M->tensors[i]);
}

int model_tensor_count(const cs_model *M) { return M->n_tensors; }

void model_tensor(cs_model *M, int i, cs_tensor *view, int *decays) {
  const tensor_entry *t = &M->tensors[i];
  snprintf(view->name, sizeof view->name, "%s", t->name);
  view->rows = t->rows;
  view->cols = t->cols;
  view->v = M->params + t->offset;
  if (decays) *decays = t->decays;
}

int model_find_tensor(cs_model *M, const char *name, cs_tensor *view) {
  for (int i = 0; i < M->n_tensors; i++)
    if (strcmp(M->tensors[i].name, name) == 0) {
      model_tensor(M, i, view, NULL);
      return CS_OK;
    }
  return cs_error(CS_ERR_INPUT, "model has no tensor named '%s'", name);
}

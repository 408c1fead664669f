/* tensor.h — a named parameter tensor: the unit in which models describe
 * their parameters, results carry them and the archive stores them under
 * /params (docs/ARCHIVE.md). Header only; part of src/core. */
#ifndef CURVSWEEP_TENSOR_H
#define CURVSWEEP_TENSOR_H

/* A named parameter tensor, row-major rows × cols (vectors: rows = 1). */
typedef struct {
  char name[48];     /* e.g. "embed/W", "layer0/Wq", "readout/b" */
  int rows, cols;
  double *v;
} cs_tensor;

#endif

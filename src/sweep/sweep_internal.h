/* sweep_internal.h — what the files of src/sweep share:
 *   sweep.c      scheduling, protocol, teams
 *   synthetic.c  synthetic cells for engine benchmarks (docs/SCALING.md) */
#ifndef CURVSWEEP_SWEEP_INTERNAL_H
#define CURVSWEEP_SWEEP_INTERNAL_H

#include "curvsweep/sweep.h"
#include "curvsweep/train.h"

/* A synthetic cell: sleep `seconds` in short steps (hooks between them),
 * then a done result of finite values depending only on cell_id. */
int sweep_synthetic_cell(const cs_config *cfg, int64_t cell_id, double seconds,
                         const train_hooks *hooks, cs_cell_result *r);

#endif

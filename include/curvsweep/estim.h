/* estim.h — the estimator of the teacher task (docs/MODELS.md,
 * "Estimation"): a planted teacher of family mha, the least-squares
 * student found by restarts of full-batch Adam, and the per-cell errors
 * (the L2 function error on fresh token sets, the Voronoi loss on the
 * identifiable quantities). cell.c runs it for task = teacher. */
#ifndef CURVSWEEP_ESTIM_H
#define CURVSWEEP_ESTIM_H

#include "curvsweep/config.h"
#include "curvsweep/model.h"
#include "curvsweep/result.h"
#include "curvsweep/train.h"

/* The teacher of cell cfg: the mha model of cfg's arch and gate with
 * teacher_heads heads of the student's head dimension (width / heads),
 * its parameters at the teacher scales of docs/MODELS.md from streams
 * keyed by (seed, "teacher", tensor name): the same for every n and
 * every student H of one seed. */
int estim_teacher_create(const cs_config *cfg, cs_model **teacher);

/* Run the estimation cell cfg (family mha, task teacher): data, teacher,
 * restarts, errors into res (status, train_loss, n_params, est); with
 * save_params the student's tensors and the teacher's (named
 * "teacher/<name>") into res->tensors. The result depends only on cfg. */
int estim_run(const cs_config *cfg, const la_team *team, const train_hooks *hooks,
              int save_params, cs_cell_result *res);

/* The identifiable quantities of an mha model (docs/MODELS.md): per head
 * h the score matrix M_h = Σ_{i∈h} W_q[i]ᵀ W_k[i] / √dh (m × m, so the
 * score of key t is x_0ᵀ M_h x_t), the value-to-output vector
 * u_h = Σ_{i∈h} W_o[i] W_v[i] (m), the head's gate (w_g, b_g) (m + 1;
 * g1..g4), and what belongs to no head: b_o and the g5 gate (m + 1). */
typedef struct {
  int H, m, gate_cols; /* gate_cols: m + 1 per head (g1..g4), else 0 */
  double *M;           /* H × m × m */
  double *u;           /* H × m */
  double *gate;        /* H × gate_cols */
  double bo;
  int has_out_gate;    /* g5 */
  double *out_gate;    /* m + 1 (g5) */
} estim_heads;

/* Of a model of config cfg (family mha; cfg gives heads, arch and gate). */
int estim_heads_of(cs_model *model, const cs_config *cfg, estim_heads *out);
void estim_heads_free(estim_heads *h);

/* The Voronoi loss between a student's quantities s and the teacher's t
 * (docs/MODELS.md, "Estimation": each student head in the cell of its
 * nearest teacher head, never by index); assign (s.H) receives the cells. */
double estim_voronoi_loss(const estim_heads *s, const estim_heads *t, int *assign);

#endif

/* lm_family.c — the lm family's row of the family table (model_family_ops,
 * model.c): the operations of lm_attn.c (layout, workspace, forward),
 * lm_backward.c (loss, backward, sequence statistics) and lm_step.c (the
 * training step). A file of its own, so that none of those files refers
 * back to another that calls it. */
#include "lm_internal.h"

const model_family_ops lm_family_ops = {
    .layout = lm_layout_create,
    .acts_create = lm_acts_create,
    .acts_free = lm_acts_free,
    .forward = lm_forward,
    .loss = lm_loss,
    .backward = lm_backward,
    .train_step = lm_train_step,
    .flops_per_point = lm_flops_per_point,
    .sink_sums = lm_sink_sums,
    .sink_per_head = 1,
    .memory = lm_memory,
    .attn_map_sums = lm_attn_map_sums,
    .gate_sums = lm_gate_sums,
    .extreme_collect = lm_extreme_collect,
    .block_view = lm_block_view,
    .ablates = 1,
};

/*
 * What every kind's constructor shares (not for use outside src/model):
 * the head's buffers, allocated and freed in one place, and what is
 * derived from one step recorded on a dry backend rather than from the
 * kind's layers walked once more: the convolution workspace the step
 * needs, the model's FLOPs and its convolution shapes.
 *
 * A kind's constructor: tt_model_head_params, its layers, its tensors
 * named in an arena plan, tt_model_head_input, tt_model_size_convs (the
 * workspace the lives are recorded with), tt_model_head_place.  Its
 * destroy: tt_model_head_free, then its own.
 */
#ifndef TT_MODEL_HEAD_H
#define TT_MODEL_HEAD_H

#include "model/arena_plan.h"
#include "model/model.h"

/* Records `step` of `kind` (the kind's own struct, which begins with the
 * head m) for its convolutions; fills m->convs, m->conv_count and
 * m->flops_per_image from the forward's, and allocates the workspace
 * that serves every convolution of the step (m->workspace_buffer, none
 * when nothing needs one).  AUTO weighs only algorithms whose workspace
 * is within m->memory.workspace_limit, the larger of the plan's largest
 * tensor and 128 MiB, which the kind puts in every desc.  When the
 * workspace is still more than one
 * buffer may hold (AUTO's room for every candidate at full-resolution
 * tiles), *algo, which the kind puts in every desc, becomes the direct
 * kernels', which need no columns, and the step is recorded again; a
 * forced --algo so replaced is warned about on stderr. */
tt_status tt_model_size_convs(tt_model *m, tt_arena_plan *plan, tt_arena_step_fn step,
                              void *kind, tt_conv_algo *algo);

/* The head's arenas for `params` (the kind's table, which outlives the
 * head) on m->be: parameters initialised from `seed` (PyTorch's default
 * distributions), gradients zeroed, running statistics where the table
 * has any. */
tt_status tt_model_head_params(tt_model *m, const tt_param_table *params, uint64_t seed);
/* The input buffer, (capacity, in_channels, H, W): m->input. */
tt_status tt_model_head_input(tt_model *m);
/* Places the plan's tensors by their lives in `step` (arena_plan.h) and
 * keeps the arena in the head, with its figures in m->memory.  Here and in
 * tt_model_size_convs the head's host counters are put back after each
 * recorded step: a kind's step need not keep them. */
tt_status tt_model_head_place(tt_model *m, tt_arena_plan *plan, tt_arena_step_fn step,
                              void *kind);
/* Frees what the head owns: its buffers, counters and convolution list
 * (not the model itself).  NULL fields allowed. */
void tt_model_head_free(tt_model *m);

#endif

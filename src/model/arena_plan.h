/*
 * A model's activation arena, planned from what the model does: the model
 * names its tensors (and their sizes), and gives one training step to run;
 * the step runs once on a recording dry backend with every tensor at its
 * own place, each tensor lives from the first to the last operation that
 * touches it, and core/plan.c places them so that dead bytes are reused.
 *
 * No order of the model's stages is written down anywhere but in the step
 * itself: reorder the step and the plan follows.  A tensor that one
 * operation reads and writes in place is one tensor here, and the model
 * points its aliases into it after placement.
 *
 * Lives are counted in operations (kernel launches, copies, GEMMs), so the
 * record must run the kernels the device will run: on the dry backend the
 * convolutions take the algorithms the device's find-db names, and where
 * it names none they run every candidate once, so a life covers them all.
 */
#ifndef TT_MODEL_ARENA_PLAN_H
#define TT_MODEL_ARENA_PLAN_H

#include "backend/backend.h"
#include "core/plan.h"
#include "ops/conv_log.h"

typedef struct tt_arena_plan {
    tt_plan_item *items;
    tt_mem **dests;          /* where each tensor's place is written */
    char (*names)[48];
    int count, capacity;
    int failed;              /* out of host memory while adding */
} tt_arena_plan;

/* The planned arena: one or more buffers of TT_MEM_ACTIVATIONS. */
typedef struct tt_arena {
    tt_buffer **buffers;
    int count;
    size_t planned_bytes;    /* the arena */
    size_t unplanned_bytes;  /* what one buffer per tensor would take */
} tt_arena;

/* One tensor of `bytes`, whose place goes to *dest (now, and again after
 * placement). */
void tt_arena_plan_add(tt_arena_plan *plan, const char *name, size_t bytes, tt_mem *dest);

/* One training step of the model as the plan must cover it (forward, what
 * the caller does with the outputs, backward), run on `recorder`, with
 * every tensor at the place its dest holds. */
typedef tt_status (*tt_arena_step_fn)(void *model, tt_backend *recorder);

/* Records `step` once, places every tensor by its life, allocates the
 * arena on `be` (split at the device's largest single allocation) and
 * writes each tensor's place to its dest.  *arena: tt_arena_free(). */
tt_status tt_arena_plan_place(tt_arena_plan *plan, tt_backend *be, tt_arena_step_fn step,
                              void *model, tt_arena *arena);
/* Runs `step` once on a dry backend like `be`, every tensor at a place of
 * its own, and notes each convolution it runs in *log (emptied first;
 * tt_conv_log_free()): what the model's workspace, FLOPs and convolution
 * shapes are derived from (model_build.c), before the arena is placed.
 * *workspace, where the model finds its convolution workspace, holds a
 * stand-in as large as any convolution needs while the step runs. */
tt_status tt_arena_plan_record_convs(tt_arena_plan *plan, tt_backend *be, tt_arena_step_fn step,
                                     void *model, tt_buffer **workspace, tt_conv_log *log);
void tt_arena_plan_free(tt_arena_plan *plan);
/* Frees the arena's buffers (and the list).  NULL fields allowed. */
void tt_arena_free(tt_arena *arena);

#endif

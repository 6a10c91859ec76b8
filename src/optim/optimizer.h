/*
 * The optimizer object: one update rule over the flat parameter arena, the
 * device state it keeps between updates, the names that state is saved
 * under in checkpoints, and its count of updates (torch's state["step"]).
 *
 * AdamW and SGD implement it (src/optim/optimizer.c); callers never ask
 * which one they hold.  State buffers are TT_MEM_OPTIMIZER, as long as the
 * parameter arena, and zeroed at creation.
 */
#ifndef TT_OPTIM_OPTIMIZER_H
#define TT_OPTIM_OPTIMIZER_H

#include <stdint.h>

#include "backend/backend.h"

#define TT_OPTIMIZER_MAX_STATE 2
#define TT_OPTIMIZER_MAX_GROUPS 8

/* What to build: the rule by name and its hyperparameters. */
typedef struct tt_optimizer_request {
    const char *name;      /* "adamw" or "sgd" */
    double lr;             /* base learning rate (a schedule scales it per update) */
    double weight_decay;   /* < 0: the rule's own default (AdamW 0.01, SGD 0) */
    double momentum;       /* SGD only: 0 keeps no buffer */
    int nesterov;          /* SGD only */
} tt_optimizer_request;

typedef struct tt_optimizer tt_optimizer;

/* A parameter group (PyTorch's param_groups): a range of the arena with
 * its own rate and its own count of updates, as torch keeps state["step"]
 * per parameter: a group frozen for K steps starts its bias correction at
 * 1 when it first moves. */
typedef struct tt_optimizer_group {
    size_t begin, end;  /* floats of the arena, begin < end */
    double lr_scale;    /* the group's rate: the scheduled rate x lr_scale (>= 0) */
    int frozen;         /* 1: left out of updates (weights and state untouched), as
                           requires_grad=False leaves a parameter */
    int64_t updates;    /* updates this group took (checkpointed) */
} tt_optimizer_group;

typedef struct tt_optimizer_ops {
    const char *name;   /* "adamw": checkpoints and options */
    const char *title;  /* "AdamW": for people */
    /* One update of the n floats from `first` on (params, grads and the
     * state at that offset) at rate lr; step: the 1-based count of the
     * group's updates including this one.  Enqueued, not finished. */
    tt_status (*update)(tt_optimizer *optimizer, tt_mem params, tt_mem grads, size_t first,
                        size_t n, double lr, int64_t step);
} tt_optimizer_ops;

struct tt_optimizer {
    const tt_optimizer_ops *ops;
    tt_backend *be;
    size_t floats;                              /* the parameter arena's length */
    int64_t updates;                            /* optimizer steps done (checkpointed) */
    int group_count;                            /* >= 1; one group of the whole arena by default */
    tt_optimizer_group groups[TT_OPTIMIZER_MAX_GROUPS];
    int state_count;
    tt_buffer *state[TT_OPTIMIZER_MAX_STATE];   /* (floats) each */
    const char *state_names[TT_OPTIMIZER_MAX_STATE]; /* checkpoint suffixes: "exp_avg" */
    void *config;                               /* the rule's own hyperparameters */
};

/* Checks the request and allocates the zeroed state for `floats`
 * parameters.  An unknown name is TT_ERR_INVALID_ARGUMENT listing the known
 * ones.  *out: tt_optimizer_destroy(). */
tt_status tt_optimizer_create(tt_backend *be, const tt_optimizer_request *request, size_t floats,
                              tt_optimizer **out);
/* NULL is allowed. */
void tt_optimizer_destroy(tt_optimizer *optimizer);

/* Replaces the groups: `count` ranges that tile the arena in order, each
 * scale finite and >= 0; their update counts start at the optimizer's.
 * Errors name the group that is wrong. */
tt_status tt_optimizer_set_groups(tt_optimizer *optimizer, const tt_optimizer_group *groups,
                                  int count);

/* Counts one more step and applies it at rate `lr` x each group's scale to
 * params from grads (read only), leaving frozen groups out.  The update is
 * enqueued, not finished. */
tt_status tt_optimizer_step(tt_optimizer *optimizer, tt_mem params, tt_mem grads, double lr);

#endif

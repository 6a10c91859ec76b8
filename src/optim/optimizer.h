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

/* What to build: the rule by name and its hyperparameters. */
typedef struct tt_optimizer_request {
    const char *name;      /* "adamw" or "sgd" */
    double lr;             /* base learning rate (a schedule scales it per update) */
    double weight_decay;   /* < 0: the rule's own default (AdamW 0.01, SGD 0) */
    double momentum;       /* SGD only: 0 keeps no buffer */
    int nesterov;          /* SGD only */
} tt_optimizer_request;

typedef struct tt_optimizer tt_optimizer;

typedef struct tt_optimizer_ops {
    const char *name;   /* "adamw": checkpoints and options */
    const char *title;  /* "AdamW": for people */
    /* One update of n floats in place at rate lr; optimizer->updates is
     * already the 1-based count including this one.  Enqueued, not finished. */
    tt_status (*update)(tt_optimizer *optimizer, tt_mem params, tt_mem grads, size_t n, double lr);
} tt_optimizer_ops;

struct tt_optimizer {
    const tt_optimizer_ops *ops;
    tt_backend *be;
    size_t floats;                              /* the parameter arena's length */
    int64_t updates;                            /* updates done (checkpointed) */
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

/* Counts one more update and applies it at rate `lr` to params from grads
 * (read only).  The update is enqueued, not finished. */
tt_status tt_optimizer_step(tt_optimizer *optimizer, tt_mem params, tt_mem grads, double lr);

#endif

/*
 * A log of the convolutions a backend is asked to run: each call's
 * descriptor, its direction and whether it ran in the forward phase.
 *
 * A model records one training step on a dry backend with a log attached
 * (model/arena_plan.h) and derives from it what it would otherwise derive
 * by walking its own layers again (model/head.c): the workspace its
 * largest convolution needs, its FLOPs and its list of convolution shapes
 * (bench --layers).  Whatever the step runs is what is counted, so the
 * three follow the step.
 */
#ifndef TT_OPS_CONV_LOG_H
#define TT_OPS_CONV_LOG_H

#include "backend/backend.h"
#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"

typedef struct tt_conv_log_entry {
    int transposed;              /* which desc holds the call */
    tt_conv2d_desc conv;         /* !transposed */
    tt_conv_transpose2d_desc convt; /* transposed */
    tt_conv_dir dir;
    int forward_phase;           /* run while the backend's phase was "forward" */
    char layer[48];              /* the backend's layer tag then ("" when none) */
} tt_conv_log_entry;

typedef struct tt_conv_log {
    tt_conv_log_entry *entries;
    int count, capacity;
    int failed;                  /* out of host memory while adding */
} tt_conv_log;

/* Notes a call on be->conv_log when the backend has one (else nothing):
 * the ops call these before they run a direction. */
void tt_conv_log_conv2d(tt_backend *be, const tt_conv2d_desc *desc, tt_conv_dir dir);
void tt_conv_log_transposed(tt_backend *be, const tt_conv_transpose2d_desc *desc, tt_conv_dir dir);

void tt_conv_log_free(tt_conv_log *log);

#endif

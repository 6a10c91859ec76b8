/*
 * What the executor's banded storage (exec_band.c) takes from exec.c: the
 * tensors' places, the values the backward reads, the layers' descriptors
 * and a two-input convolution's weight halves.  Not for use outside
 * src/model.
 */
#ifndef TT_MODEL_EXEC_INTERNAL_H
#define TT_MODEL_EXEC_INTERNAL_H

#include "model/exec.h"
#include "ops/concat.h"
#include "ops/group_norm.h"

static inline tt_tensor_def *tt_exec_tensor(tt_exec *x, int t) { return &x->graph->tensors[t]; }
/* The tensor whose gradient place t's gradient is. */
int tt_exec_grad_root(tt_exec *x, int t);
tt_mem tt_exec_fwd_of(tt_exec *x, int t);
tt_mem tt_exec_grad_of(tt_exec *x, int t);
/* Where the backward (or a remake) reads t: made again as its keep says. */
tt_status tt_exec_value(tt_exec *x, int t, tt_mem *out);
/* Layer l's norm descriptors for n images (the input stored as its tensor
 * says). */
tt_batch_norm_desc tt_exec_norm_desc(tt_exec *x, const tt_layer *l, int n);
tt_group_norm_desc tt_exec_group_desc(tt_exec *x, const tt_layer *l, int n);
tt_mem tt_exec_workspace(tt_exec *x);

/* A two-input conv's weight (C', Ca + Cb, k, k) in halves by input
 * channels in the wsplit room [wa | wb | ga | gb]. */
typedef struct tt_exec_split {
    tt_mem wa, wb, ga, gb;
    tt_concat_desc desc;
    size_t floats;
} tt_exec_split;
tt_status tt_exec_split_weight(tt_exec *x, const tt_layer *l, tt_exec_split *s);

/* How the banded step stores tensor t: the model's 16-bit precision, or
 * fp32 (the image, the logits, and an odd width: two bands would share a
 * 32-bit word). */
tt_precision tt_exec_band_store(tt_exec *x, int t);

/* ---- banded storage (exec_band.c) ---- */
/* Floats of each of the three band rooms the model allocates. */
size_t tt_exec_band_room_floats(tt_exec *x);
/* Each layer's forward into `out`, band by band (the forward's, again 0,
 * its norms' statistics taken; or made again for the backward), and its
 * backward: the executor's runner with x->banded. */
extern const tt_exec_runner tt_exec_band_runner;

#endif

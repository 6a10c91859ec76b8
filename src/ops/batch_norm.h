/*
 * Batch normalisation, torch.nn.BatchNorm2d semantics, float32 NCHW.
 *
 * Training mode normalises each channel with the mean and biased variance of
 * the current micro-batch (over N, H, W) and updates the running statistics
 * with the UNBIASED variance:
 *   running_mean = (1 - m) * running_mean + m * mean
 *   running_var  = (1 - m) * running_var  + m * var * count / (count - 1)
 * with m = momentum (0.1 by default).  Eval mode uses running_mean and
 * running_var.  Both then apply y = xhat * weight[c] + bias[c].
 *
 * Eval mode is also a training op: PyTorch's FrozenBatchNorm2d with weight
 * and bias trained (a ResNet encoder's batch norm).  Neither its forward nor
 * its backward touches running_mean, running_var or num_batches_tracked;
 * the backward gives dinp = g weight / sqrt(running_var + eps), dweight =
 * sum g xhat, dbias = sum g, g = dout masked by a fused ReLU.  Backward
 * reads the forward's INPUT (xhat, and the mask found again from it), so a
 * forward run in place (out = inp) leaves backward nothing to read.
 *
 * Note for gradient accumulation: in training mode the statistics are those
 * of one micro-batch, not of the accumulation window (as in PyTorch).
 *
 * THE CALLER OWNS THE STATE (tt_batch_norm_state): the device buffers weight,
 * bias, running_mean, running_var (C floats each, PyTorch state_dict names)
 * and the host counter num_batches_tracked, which each training forward
 * with running statistics increments (PyTorch keeps it as an int64 tensor;
 * a checkpoint writes it from here).
 *
 * Training forward saves mean and rstd per channel in a caller-provided
 * buffer of tt_batch_norm_saved_floats() floats (mean[C] then rstd[C]) for
 * backward.  Backward ADDS into dinp, dweight, dbias (beta = 1); any may be
 * (tt_mem){0} and is then skipped.  In place: dinp may be dout itself (the
 * same place), which then ends up holding dL/dinp (not added to).
 *
 * With desc->sync, training statistics are those of every rank's batch
 * (PyTorch's SyncBatchNorm): a training forward calls allreduce_sum once
 * (count, sum, sum of squares per channel) and updates the running
 * statistics from the global mean and unbiased variance, the same on every
 * rank; a training backward calls it once, whatever gradients are asked
 * for (the sums the input gradient needs), and leaves dweight and dbias
 * this process's own (the trainer sums gradients).  Eval mode, and a
 * backend that runs nothing, make no call.
 */
#ifndef TT_OPS_BATCH_NORM_H
#define TT_OPS_BATCH_NORM_H

#include <stdint.h>

#include "backend/backend.h"
#include "ops/band.h"
#include "ops/norm.h"

/* momentum value meaning PyTorch's momentum=None: a cumulative average,
 * factor 1 / num_batches_tracked. */
#define TT_BATCH_NORM_CUMULATIVE_AVERAGE (-1.0f)

typedef struct tt_batch_norm_desc {
    int batch, channels, height, width; /* (N, C, H, W) */
    float eps;                          /* > 0; PyTorch: 1e-5 */
    float momentum;                     /* in [0, 1], PyTorch: 0.1; or CUMULATIVE_AVERAGE */
    int relu;                           /* 1: a ReLU follows, fused (as in group_norm.h) */
    tt_precision input_precision;       /* how the input is stored (as in group_norm.h) */
    tt_precision grad_precision;        /* how the backward's output gradient and input
                                           gradient are stored (fp32 by default; fp16 or
                                           bf16: rounded where written) */
    const tt_norm_sync *sync;           /* NULL: this process's batch only; else training
                                           statistics over every rank's batch (norm.h) */
} tt_batch_norm_desc;

/* Caller-owned parameters and state of one layer. */
typedef struct tt_batch_norm_state {
    tt_mem weight;                 /* (C) gamma; (tt_mem){0}: affine=False */
    tt_mem bias;                   /* (C) beta;  (tt_mem){0}: affine=False */
    tt_mem running_mean;           /* (C) start at 0; (tt_mem){0} with running_var: */
    tt_mem running_var;            /* (C) start at 1;  track_running_stats=False */
    int64_t num_batches_tracked;   /* host counter, starts at 0 */
} tt_batch_norm_state;

/* A descriptor with PyTorch's defaults: eps 1e-5, momentum 0.1; no ReLU,
 * no sync. */
tt_batch_norm_desc tt_batch_norm_desc_make(int batch, int channels, int height, int width);

/* Floats of the saved buffer: 2 * C statistics and the scratch that the
 * reductions pass partial sums through (0 for a bad shape). */
size_t tt_batch_norm_saved_floats(const tt_batch_norm_desc *desc);

/* Checks the descriptor for the mode; messages name the shape. Training
 * needs more than one value per channel (N * H * W > 1), as in PyTorch. */
tt_status tt_batch_norm_check(const tt_batch_norm_desc *desc, int training);

/* out (N, C, H, W) = batch_norm(inp).  training != 0: batch statistics into
 * saved (2 C), running statistics and num_batches_tracked updated when
 * present.  training == 0: running statistics (required), saved unused (may
 * be absent).  out may be inp itself, or absent: the statistics only (a
 * caller that applies them band by band). */
tt_status tt_batch_norm_forward(tt_backend *be, tt_mem out, tt_mem saved, tt_mem inp,
                                tt_batch_norm_state *state, const tt_batch_norm_desc *desc,
                                int training);

/* dinp += dL/dinp, dweight (C) += dL/dweight, dbias (C) += dL/dbias from
 * dout, the forward's inp, saved (training) and state, in the same mode as
 * the forward.  In eval mode the layer is the per-channel affine map
 * y = x * weight / sqrt(running_var + eps) + const, so dinp is element-wise;
 * saved is then needed (as scratch) only for dweight and dbias. */
tt_status tt_batch_norm_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                                 tt_mem dout, tt_mem inp, tt_mem saved,
                                 const tt_batch_norm_state *state, const tt_batch_norm_desc *desc,
                                 int training);

/* out = batch_norm(inp) in training mode with the batch statistics a
 * forward saved (none computed, running statistics untouched): the
 * forward's output again, bit for bit. */
tt_status tt_batch_norm_apply_saved(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                    const tt_batch_norm_state *state,
                                    const tt_batch_norm_desc *desc);

/* The same into a band of rows (ops/band.h: the band's rows of that
 * output, zeros outside the tensor), for a caller that runs the next layer
 * band by band on a 16-bit input; band NULL: the whole output.  saved
 * absent: eval mode's apply, with the running statistics. */
tt_status tt_batch_norm_apply_saved_band(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                         const tt_batch_norm_state *state,
                                         const tt_batch_norm_desc *desc, const tt_band *band);

#endif

/*
 * Group normalisation, torch.nn.GroupNorm semantics, float32 NCHW.
 *
 * The C channels split into G groups of C/G consecutive channels; each
 * (sample n, group g) is normalised over its (C/G) * H * W elements with the
 * biased variance, then scaled and shifted per channel:
 *
 *   y = (x - mean[n,g]) / sqrt(var[n,g] + eps) * weight[c] + bias[c]
 *
 * Forward saves mean and rstd = 1/sqrt(var + eps) per (n, g) in a small
 * caller-provided buffer of tt_group_norm_saved_floats() floats (mean of all
 * (n, g) first, then rstd, each indexed n * G + g) that backward reads.
 * Backward ADDS into dinp, dweight and dbias (beta = 1); any of them may be
 * (tt_mem){0} and is then skipped.  weight and bias may be (tt_mem){0} for
 * affine=False (1 and 0).
 */
#ifndef TT_OPS_GROUP_NORM_H
#define TT_OPS_GROUP_NORM_H

#include "backend/backend.h"

typedef struct tt_group_norm_desc {
    int batch, channels, height, width; /* (N, C, H, W) */
    int groups;                         /* G; C % G == 0 */
    float eps;                          /* > 0; TT_NORM_DEFAULT_EPS = 1e-5 */
} tt_group_norm_desc;

/* A descriptor with PyTorch's default eps. */
tt_group_norm_desc tt_group_norm_desc_make(int batch, int channels, int height, int width,
                                           int groups);

/* Floats of the saved-statistics buffer: 2 * N * G. */
size_t tt_group_norm_saved_floats(const tt_group_norm_desc *desc);

/* Checks the descriptor; messages name the shape and what to change. */
tt_status tt_group_norm_check(const tt_group_norm_desc *desc);

/* out (N, C, H, W) = group_norm(inp); saved (2 N G) = mean, rstd.
 * weight, bias: (C) or absent.  out must not alias inp. */
tt_status tt_group_norm_forward(tt_backend *be, tt_mem out, tt_mem saved, tt_mem inp,
                                tt_mem weight, tt_mem bias, const tt_group_norm_desc *desc);

/* dinp (N, C, H, W) += dL/dinp, dweight (C) += dL/dweight, dbias (C) +=
 * dL/dbias, given dout (N, C, H, W), the forward's inp and saved, and weight
 * (absent when the forward had none).  In place: dinp may be dout itself
 * (the same place), which then ends up holding dL/dinp (not added to). */
tt_status tt_group_norm_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                                 tt_mem dout, tt_mem inp, tt_mem saved, tt_mem weight,
                                 const tt_group_norm_desc *desc);

/* out = group_norm(inp) with the statistics a forward saved (no new
 * ones): the forward's output again, bit for bit, for a caller that keeps
 * inp and saved but not the output. */
tt_status tt_group_norm_apply_saved(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                    tt_mem weight, tt_mem bias, const tt_group_norm_desc *desc);

/* d (N, C, H, W) = 0 where relu(group_norm(inp)) is 0, in place: the
 * backward of a ReLU after this norm for a caller that keeps inp and saved
 * but not the ReLU output.  The mask is found with the forward's own
 * arithmetic, so it is the forward's bit for bit. */
tt_status tt_group_norm_relu_backward(tt_backend *be, tt_mem d, tt_mem inp, tt_mem saved,
                                      tt_mem weight, tt_mem bias, const tt_group_norm_desc *desc);

#endif

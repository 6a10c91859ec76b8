/*
 * Group normalisation, torch.nn.GroupNorm semantics, float32 NCHW.
 *
 * The C channels split into G groups of C/G consecutive channels; each
 * (sample n, group g) is normalised over its (C/G) * H * W elements with the
 * biased variance, then scaled and shifted per channel:
 *
 *   y = (x - mean[n,g]) / sqrt(var[n,g] + eps) * weight[c] + bias[c]
 *
 * With desc.relu a ReLU follows, fused: the forward writes relu(y) and the
 * backward takes the gradient at the ReLU's output, its mask found again
 * from inp with the forward's own arithmetic (the same bits).
 *
 * Forward saves mean and rstd = 1/sqrt(var + eps) per (n, g) in a small
 * caller-provided buffer of tt_group_norm_saved_floats() floats (mean of all
 * (n, g) first, then rstd, each indexed n * G + g; then the scratch that the
 * reductions pass partial sums through) that backward reads.
 * Backward ADDS into dinp, dweight and dbias (beta = 1); any of them may be
 * (tt_mem){0} and is then skipped.  weight and bias may be (tt_mem){0} for
 * affine=False (1 and 0).
 */
#ifndef TT_OPS_GROUP_NORM_H
#define TT_OPS_GROUP_NORM_H

#include "backend/backend.h"
#include "ops/band.h"
#include "core/precision.h"

typedef struct tt_group_norm_desc {
    int batch, channels, height, width; /* (N, C, H, W) */
    int groups;                         /* G; C % G == 0 */
    float eps;                          /* > 0; TT_NORM_DEFAULT_EPS = 1e-5 */
    int relu;                           /* 1: a ReLU follows, fused */
    tt_precision input_precision;       /* how the input is stored (fp32 by default; fp16
                                           or bf16: 16 bits an element, norm.h) */
    tt_precision grad_precision;        /* how the backward's output gradient and input
                                           gradient are stored (fp32 by default; fp16 or
                                           bf16: rounded where written) */
} tt_group_norm_desc;

/* A descriptor with PyTorch's default eps and no ReLU. */
tt_group_norm_desc tt_group_norm_desc_make(int batch, int channels, int height, int width,
                                           int groups);

/* Floats of the saved buffer: 2 * N * G statistics and the scratch
 * (a few per work-item of a pass; 0 for a bad shape). */
size_t tt_group_norm_saved_floats(const tt_group_norm_desc *desc);

/* Checks the descriptor; messages name the shape and what to change. */
tt_status tt_group_norm_check(const tt_group_norm_desc *desc);

/* out (N, C, H, W) = group_norm(inp) (relu'd with desc.relu); saved =
 * mean, rstd.  weight, bias: (C) or absent.  out may be inp itself, or
 * absent: the statistics only (a caller that applies them band by band). */
tt_status tt_group_norm_forward(tt_backend *be, tt_mem out, tt_mem saved, tt_mem inp,
                                tt_mem weight, tt_mem bias, const tt_group_norm_desc *desc);

/* dinp (N, C, H, W) += dL/dinp, dweight (C) += dL/dweight, dbias (C) +=
 * dL/dbias, given dout (N, C, H, W), the forward's inp and saved, and
 * weight and bias (absent when the forward had none; bias is read only for
 * the ReLU's mask).  In place: dinp may be dout itself (the same place),
 * which then ends up holding dL/dinp (not added to).  Writes saved's
 * scratch, not its statistics. */
tt_status tt_group_norm_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                                 tt_mem dout, tt_mem inp, tt_mem saved, tt_mem weight,
                                 tt_mem bias, const tt_group_norm_desc *desc);

/* out = group_norm(inp) with the statistics a forward saved (no new
 * ones): the forward's output again, bit for bit, for a caller that keeps
 * inp and saved but not the output. */
tt_status tt_group_norm_apply_saved(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                    tt_mem weight, tt_mem bias, const tt_group_norm_desc *desc);

/* The same into a band of rows (ops/band.h: the band's rows of that
 * output, zeros outside the tensor), for a caller that runs the next layer
 * band by band on a 16-bit input; band NULL: the whole output. */
tt_status tt_group_norm_apply_saved_band(tt_backend *be, tt_mem out, tt_mem inp, tt_mem saved,
                                         tt_mem weight, tt_mem bias,
                                         const tt_group_norm_desc *desc, const tt_band *band);

#endif

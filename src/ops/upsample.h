/*
 * Bilinear x2 upsampling of NCHW tensors, align_corners = False, exactly as
 * PyTorch's F.interpolate(x, scale_factor=2, mode='bilinear',
 * align_corners=False): output (N, C, 2H, 2W); source coordinate
 * (dst + 0.5) / 2 - 0.5 clamped at 0, the upper tap clamped to the last
 * row or column.  1x1 inputs give constant 2x2 outputs.
 *
 * Backward ADDS: every input element sums the weighted gradients of the
 * outputs that read it (a gather, no atomics).
 */
#ifndef TT_OPS_UPSAMPLE_H
#define TT_OPS_UPSAMPLE_H

#include "backend/backend.h"

/* The INPUT's shape; the output is (batch, channels, 2 height, 2 width). */
typedef struct tt_upsample_desc {
    int batch, channels, height, width;
} tt_upsample_desc;

/* What both x2 upsamplings check before a launch (`op` names the caller):
 * the sizes positive and within one launch, the (N, C, H, W) tensor
 * `small` and the (N, C, 2H, 2W) tensor `big` large enough (one without a
 * buffer, a gradient not wanted, is not checked).  *planes = N C,
 * *count = N C H W. */
tt_status tt_upsample_check(const char *op, const tt_upsample_desc *desc, tt_mem small,
                            const char *small_name, tt_mem big, const char *big_name, int *planes,
                            size_t *count);

/* out (N, C, 2H, 2W) = bilinear x2 of inp (N, C, H, W).  out must not
 * overlap inp. */
tt_status tt_upsample_bilinear2x_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                         const tt_upsample_desc *desc);
/* dinp (N, C, H, W) += transpose of the forward applied to dout
 * (N, C, 2H, 2W).  A dinp of (tt_mem){0} means not wanted: nothing is done. */
tt_status tt_upsample_bilinear2x_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                          const tt_upsample_desc *desc);

#endif

/*
 * Nearest x2 upsampling of NCHW tensors, exactly as PyTorch's
 * F.interpolate(x, scale_factor=2, mode='nearest'): output (N, C, 2H, 2W),
 * out[oy][ox] = inp[oy / 2][ox / 2] (integer division; the decoder of a
 * segmentation_models_pytorch UNet).  The forward copies, so it is exact.
 *
 * Backward ADDS, as every op's backward does (upsample.h, concat.h,
 * docs/ops.md): dinp[iy][ix] += the sum of the 2x2 block of dout at
 * (2 iy, 2 ix), one work-item per input element (a gather, no atomics).
 *
 * The shape is the bilinear op's descriptor (tt_upsample_desc, the INPUT's
 * shape), so a decoder can take either mode with the same sizes.
 */
#ifndef TT_OPS_UPSAMPLE_NEAREST_H
#define TT_OPS_UPSAMPLE_NEAREST_H

#include "backend/backend.h"
#include "ops/upsample.h"

/* out (N, C, 2H, 2W) = nearest x2 of inp (N, C, H, W).  out must not
 * overlap inp.  Sizes that are not all positive are TT_ERR_INVALID_ARGUMENT
 * naming the shape; an output of more than INT_MAX elements is
 * TT_ERR_UNSUPPORTED (tt_launch_check_count: a smaller micro-batch or tile). */
tt_status tt_upsample_nearest2x_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                        const tt_upsample_desc *desc);
/* dinp (N, C, H, W) += the sum of each 2x2 block of dout (N, C, 2H, 2W).
 * A dinp of (tt_mem){0} means not wanted: nothing is done.  dinp must not
 * overlap dout.  Errors as for the forward. */
tt_status tt_upsample_nearest2x_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                         const tt_upsample_desc *desc);

#endif

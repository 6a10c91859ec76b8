/*
 * 2-D average pooling over NCHW, PyTorch floor mode (pool2d.h): every
 * output is the sum of its kernel_h x kernel_w window / (kh * kw).  With
 * padding the padded places count as zeros, PyTorch's
 * nn.AvgPool2d(count_include_pad=True) (its default): the divisor is always
 * the window size (in floor mode with pad <= kernel / 2 no window reaches
 * past the padding, so PyTorch's divisor is kh * kw too).
 * count_include_pad=False is not offered.
 *
 * Backward ADDS: dinp[i] += sum over windows covering i of dout / (kh * kw),
 * computed as a gather per input element (no atomics for overlapping
 * windows).
 */
#ifndef TT_OPS_AVG_POOL2D_H
#define TT_OPS_AVG_POOL2D_H

#include "backend/backend.h"
#include "ops/pool2d.h"

/* out (N, C, out_h, out_w) = window means of inp (N, C, H, W). */
tt_status tt_avg_pool2d_forward(tt_backend *be, tt_mem out, tt_mem inp, const tt_pool2d_desc *desc);
/* dinp (N, C, H, W) += spread of dout (N, C, out_h, out_w).  A dinp of
 * (tt_mem){0} means not wanted: nothing is done. */
tt_status tt_avg_pool2d_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                 const tt_pool2d_desc *desc);

#endif

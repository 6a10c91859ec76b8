/*
 * 2-D average pooling over NCHW, no padding, PyTorch floor mode (pool2d.h):
 * every output is the mean of its kernel_h x kernel_w window (the divisor is
 * always the window size, since nothing is padded).
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

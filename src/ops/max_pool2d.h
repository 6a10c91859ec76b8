/*
 * 2-D max pooling over NCHW, PyTorch floor mode (pool2d.h): 2x2 stride 2
 * for a UNet encoder, 3x3 stride 2 pad 1 for a ResNet stem
 * (nn.MaxPool2d(3, 2, 1)), any kernel, stride and pad (at most half the
 * window) in general.  Padded places are never a window's maximum (they
 * act as -infinity and are not even looked at).
 *
 * The forward saves, for every output element, where its maximum came from:
 * argmax is int32 of shape (N, C, out_h, out_w), each value the flat index
 * iy * W + ix of the winning input inside its own (n, c) plane, as PyTorch's
 * return_indices gives.  Ties keep the first maximum in row-major window
 * order (as PyTorch), among the window's places inside the image; a NaN
 * in a window wins; a window all -infinity gives its first place in the
 * image.  The caller owns the argmax buffer (N * C * out_h * out_w * 4
 * bytes) and keeps it until backward.
 * Or the caller keeps no argmax (passes (tt_mem){0}) but keeps the input:
 * tt_max_pool2d_backward_from_input finds every window's winner again with
 * the same comparison, so both backwards give the same bits.
 *
 * Backward ADDS: dinp[n, c, i] += sum of dout[n, c, o] over outputs o whose
 * argmax is i.  Each output adds its gradient to its winner; where windows
 * overlap (3x3 stride 2) the outputs run in ceil(kernel / stride)^2 phases
 * (one launch each, in a fixed order) whose windows do not overlap, so no
 * atomics are needed and the sums are deterministic.
 */
#ifndef TT_OPS_MAX_POOL2D_H
#define TT_OPS_MAX_POOL2D_H

#include "backend/backend.h"
#include "ops/pool2d.h"

/* out (N, C, out_h, out_w), argmax (N, C, out_h, out_w) int32 or
 * (tt_mem){0} for none, inp (N, C, H, W). */
tt_status tt_max_pool2d_forward(tt_backend *be, tt_mem out, tt_mem argmax, tt_mem inp,
                                const tt_pool2d_desc *desc);
/* dinp (N, C, H, W) += scatter of dout (N, C, out_h, out_w) to argmax.
 * A dinp of (tt_mem){0} means not wanted: nothing is done. */
tt_status tt_max_pool2d_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem argmax,
                                 const tt_pool2d_desc *desc);
/* The same gradient from the forward's input instead of its argmax. */
tt_status tt_max_pool2d_backward_from_input(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem inp,
                                            const tt_pool2d_desc *desc);

#endif

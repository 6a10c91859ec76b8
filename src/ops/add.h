/*
 * Element-wise sum of two tensors with an optional fused ReLU: the residual
 * join of a ResNet BasicBlock, out = relu(a + b) (b the identity or its
 * downsample), over n floats of any shape.  Memory is (buffer, byte
 * offset).
 *
 * Aliasing.  Every work-item reads all it needs of element i before writing
 * element i, so two arguments may be the very same place (buffer and
 * offset); two that overlap without being the same place are refused.
 *   - forward: out may be a or b (in place; then a or b is overwritten);
 *     a and b may be the same place (out = 2a).
 *   - backward reads the forward OUTPUT (for the ReLU's mask, out > 0), never
 *     a or b, so a forward run in place still has what its backward needs
 *     (as in activation.h).  Without the ReLU, out is not read and may be
 *     (tt_mem){0}.
 *
 * Backward ADDS into da and db (beta = 1), the gradient g = dout (masked
 * with out > 0 under the ReLU) being the same for both.  Either may be
 * (tt_mem){0} (not wanted, skipped).  The one exception is in place, as
 * with the norms: a gradient at dout's very place is overwritten with g
 * (dout's room then holds it; the other gradient still adds the g of dout
 * as it was).  da and db may not overlap each other, nor out.
 */
#ifndef TT_OPS_ADD_H
#define TT_OPS_ADD_H

#include "backend/backend.h"

/* out = a + b, or relu(a + b) when relu != 0 (out = x < 0 ? 0 : x, NaN
 * passed through as in tt_relu_forward), n floats. */
tt_status tt_add_forward(tt_backend *be, tt_mem out, tt_mem a, tt_mem b, int relu, size_t n);

/* da += g, db += g with g = relu ? (out > 0 ? dout : 0) : dout; a gradient
 * at dout's very place is written (= g) instead.  out: the forward's
 * output, read only when relu != 0. */
tt_status tt_add_backward(tt_backend *be, tt_mem da, tt_mem db, tt_mem dout, tt_mem out, int relu,
                          size_t n);

#endif

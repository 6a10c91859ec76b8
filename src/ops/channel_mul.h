/*
 * Channel multiply, the excitation of squeeze-and-excitation: every plane
 * of an NCHW tensor times its own scalar,
 *   y[n, c, h, w] = x[n, c, h, w] * s[n, c].
 * Memory is (buffer, byte offset).
 *
 * Aliasing: the forward may run in place (y the same tt_mem as x, each
 * element read before it is written), but the backward needs x for the
 * scale's gradient, so in place suits inference or a step that does not
 * want ds; y must not otherwise overlap x, and never s.
 *
 * Backward ADDS into both gradients: dx += dy * s, and ds[n, c] += the
 * sum over the plane of dy * x (a deterministic reduction, fixed order, no
 * atomics: tt_plane_sum in ops/global_avg_pool.h).  Either gradient of
 * (tt_mem){0} is not wanted and skipped.
 */
#ifndef TT_OPS_CHANNEL_MUL_H
#define TT_OPS_CHANNEL_MUL_H

#include "backend/backend.h"

/* x's shape (and y's); s is (batch, channels). */
typedef struct tt_channel_mul_desc {
    int batch, channels, height, width;
} tt_channel_mul_desc;

/* y (N, C, H, W) = x * s[n, c]; y may be x (in place), nothing else may
 * overlap. */
tt_status tt_channel_mul_forward(tt_backend *be, tt_mem y, tt_mem x, tt_mem s,
                                 const tt_channel_mul_desc *desc);
/* dx (N, C, H, W) += dy * s[n, c]; ds (N, C) += sum over the plane of
 * dy * x.  dx or ds of (tt_mem){0}: not wanted.  dx must not overlap dy, x
 * or s; ds must not overlap dy or x. */
tt_status tt_channel_mul_backward(tt_backend *be, tt_mem dx, tt_mem ds, tt_mem dy, tt_mem x,
                                  tt_mem s, const tt_channel_mul_desc *desc);

#endif

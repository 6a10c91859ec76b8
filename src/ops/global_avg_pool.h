/*
 * Global average pooling, the squeeze of squeeze-and-excitation: an NCHW
 * tensor (N, C, H, W) to its plane means (N, C).  Also the plane sums it
 * is made of (tt_plane_sum), which the channel multiply's scale gradient
 * shares (ops/channel_mul.h).  Memory is (buffer, byte offset).
 *
 * The sums are deterministic: a fixed order of additions for a given
 * shape and device, no atomics.  A plane is cut into chunks of at most a
 * few thousand floats per work-item's loop (so that a 1400 x 2100 plane
 * runs as many work-groups, and lavapipe's loop limit is never near); each
 * chunk is one work-group's strided sum and tree, and the chunks of a
 * plane are added in order by a second launch.  A plane of one chunk is a
 * single launch.
 *
 * Backward ADDS, as every backward does: dinp[n, c, ., .] += dout[n, c] /
 * (H W).
 */
#ifndef TT_OPS_GLOBAL_AVG_POOL_H
#define TT_OPS_GLOBAL_AVG_POOL_H

#include "backend/backend.h"

/* The INPUT's shape; the output is (batch, channels). */
typedef struct tt_global_avg_pool_desc {
    int batch, channels, height, width;
} tt_global_avg_pool_desc;

/* out (N, C) = the mean of each plane of inp (N, C, H, W); overwrites out.
 * out must not overlap inp. */
tt_status tt_global_avg_pool_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                     const tt_global_avg_pool_desc *desc);
/* dinp (N, C, H, W) += dout[n, c] / (H W) over every element of plane
 * (n, c).  A dinp of (tt_mem){0} means not wanted: nothing is done.  dinp
 * must not overlap dout. */
tt_status tt_global_avg_pool_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                      const tt_global_avg_pool_desc *desc);

/* For each of `planes` planes of `plane` floats, contiguous from a (and b):
 * out[p] = scale * sum_i a[p, i], or scale * sum_i a[p, i] b[p, i] when b
 * has a buffer; with accumulate, out[p] += that instead.  `op` names the
 * caller in errors ("global_avg_pool forward").  out (planes floats) must
 * not overlap a or b.  A workspace of planes x chunks floats is made and
 * freed inside when a plane has more than one chunk.  TT_ERR_INVALID_ARGUMENT
 * naming op for sizes below 1, planes x plane past an int, or buffers too
 * small. */
tt_status tt_plane_sum(tt_backend *be, const char *op, tt_mem out, tt_mem a, tt_mem b,
                       int planes, int plane, float scale, int accumulate);

#endif

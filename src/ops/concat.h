/*
 * Concatenation of two NCHW tensors along channels (a UNet skip link):
 * out = [a, b], (N, Ca + Cb, H, W); backward splits: da += dout[:, :Ca],
 * db += dout[:, Ca:] (ADDS; a (tt_mem){0} gradient is skipped).
 *
 * Copy-free views.  Channel c of image n of the whole lives at float
 * (n * (Ca + Cb) + c) * H * W, so each part is a slice of the whole:
 *   - batch 1 (N == 1): each part is an ordinary contiguous (1, C, H, W)
 *     tensor inside the whole, and any producer can write straight into it;
 *   - N > 1: a part is (N, C, H, W) with a batch stride of (Ca + Cb) * H * W
 *     floats; only a producer that writes image n at view + n * batch_stride
 *     may write into it (most ops assume contiguous images: they may not).
 * tt_concat_views() gives those places.  When a part passed to forward (or a
 * gradient passed to backward) IS its view (same buffer and offset), the op
 * takes it as already in place and copies nothing for that part: a fully
 * viewed concat costs no launch at all.  For backward that means the
 * producer's gradient is the slice of dout itself, which then already holds
 * da (or db); no addition is made.
 */
#ifndef TT_OPS_CONCAT_H
#define TT_OPS_CONCAT_H

#include "backend/backend.h"

typedef struct tt_concat_desc {
    int batch;                   /* N */
    int channels_a, channels_b;  /* Ca, Cb; the output has Ca + Cb */
    int height, width;
} tt_concat_desc;

/* The places of a and b inside the concatenated tensor at `out`, and the
 * floats between consecutive images of a part (*batch_stride, may be NULL).
 * Returns 1 when the views are plain contiguous tensors (N == 1), 0 when a
 * producer must write with the batch stride.  Does not touch the device. */
int tt_concat_views(const tt_concat_desc *desc, tt_mem out, tt_mem *a_view, tt_mem *b_view,
                    size_t *batch_stride);

/* out (N, Ca + Cb, H, W) = [a (N, Ca, H, W), b (N, Cb, H, W)] along C.  A
 * part equal to its view is left as it is; a part that otherwise overlaps
 * out is refused. */
tt_status tt_concat_forward(tt_backend *be, tt_mem out, tt_mem a, tt_mem b,
                            const tt_concat_desc *desc);
/* da (N, Ca, H, W) += dout[:, :Ca]; db (N, Cb, H, W) += dout[:, Ca:].  A
 * gradient equal to its view of dout is left as it is (see above). */
tt_status tt_concat_backward(tt_backend *be, tt_mem da, tt_mem db, tt_mem dout,
                             const tt_concat_desc *desc);

#endif

/*
 * The shape of a 2-D pooling (max or average) over an NCHW tensor: window
 * kernel_h x kernel_w moved by stride_h, stride_w over the input padded by
 * pad_h rows above and below and pad_w columns left and right, PyTorch's
 * floor mode: out = (in + 2 pad - kernel) / stride + 1, so trailing rows or
 * columns that do not fill a window are dropped (7x9 with 2x2/2 gives 3x4;
 * ResNet's stem pool, 3x3/2 pad 1, gives 56x56 from 112x112 and 4x5 from
 * 7x9).  As PyTorch, a pad is at most half the window (pad_h <= kernel_h /
 * 2), so every window holds at least one input element.  Padded places are
 * never a maximum (as -infinity) and count in an average's divisor (see
 * max_pool2d.h, avg_pool2d.h).
 */
#ifndef TT_OPS_POOL2D_H
#define TT_OPS_POOL2D_H

#include "backend/backend.h"

typedef struct tt_pool2d_desc {
    int batch, channels;      /* N, C */
    int height, width;        /* input H, W */
    int kernel_h, kernel_w;   /* window */
    int stride_h, stride_w;
    int pad_h, pad_w;         /* implicit padding on each side, >= 0 */
} tt_pool2d_desc;

/* The common case: a k x k window moved by s (2, 2 halves H and W), no
 * padding. */
static inline tt_pool2d_desc tt_pool2d_square(int batch, int channels, int height, int width,
                                              int kernel, int stride)
{
    return (tt_pool2d_desc){batch, channels, height, width, kernel, kernel, stride, stride, 0, 0};
}

/* A k x k window moved by s over the input padded by `pad` on every side
 * (ResNet's stem: nn.MaxPool2d(3, 2, 1) is kernel 3, stride 2, pad 1). */
static inline tt_pool2d_desc tt_pool2d_square_padded(int batch, int channels, int height,
                                                     int width, int kernel, int stride, int pad)
{
    tt_pool2d_desc d = tt_pool2d_square(batch, channels, height, width, kernel, stride);
    d.pad_h = d.pad_w = pad;
    return d;
}

/* Output height and width (floor mode); 0 when the window does not fit.
 * Strides must be positive (tt_pool2d_check). */
static inline int tt_pool2d_out_h(const tt_pool2d_desc *d)
{
    int padded = d->height + 2 * d->pad_h;
    return padded >= d->kernel_h ? (padded - d->kernel_h) / d->stride_h + 1 : 0;
}
static inline int tt_pool2d_out_w(const tt_pool2d_desc *d)
{
    int padded = d->width + 2 * d->pad_w;
    return padded >= d->kernel_w ? (padded - d->kernel_w) / d->stride_w + 1 : 0;
}

/* Checks a descriptor for op `op` ("max_pool2d", "avg_pool2d"): positive
 * sizes, pads from 0 to half the window, a window that fits the padded
 * image, and element counts that fit one launch.  The message names the op and the shape and says what to do. */
tt_status tt_pool2d_check(const char *op, const tt_pool2d_desc *desc);

#endif

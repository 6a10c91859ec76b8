/*
 * The shape of a 2-D pooling (max or average) over an NCHW tensor: window
 * kernel_h x kernel_w moved by stride_h, stride_w, no padding, PyTorch's
 * floor mode: out = (in - kernel) / stride + 1, so trailing rows or columns
 * that do not fill a window are dropped (7x9 with 2x2/2 gives 3x4).
 */
#ifndef TT_OPS_POOL2D_H
#define TT_OPS_POOL2D_H

#include "backend/backend.h"

typedef struct tt_pool2d_desc {
    int batch, channels;      /* N, C */
    int height, width;        /* input H, W */
    int kernel_h, kernel_w;   /* window */
    int stride_h, stride_w;
} tt_pool2d_desc;

/* The common case: a k x k window moved by s (2, 2 halves H and W). */
static inline tt_pool2d_desc tt_pool2d_square(int batch, int channels, int height, int width,
                                              int kernel, int stride)
{
    return (tt_pool2d_desc){batch, channels, height, width, kernel, kernel, stride, stride};
}

/* Output height and width (floor mode); 0 when the window does not fit.
 * Strides must be positive (tt_pool2d_check). */
static inline int tt_pool2d_out_h(const tt_pool2d_desc *d)
{
    return d->height >= d->kernel_h ? (d->height - d->kernel_h) / d->stride_h + 1 : 0;
}
static inline int tt_pool2d_out_w(const tt_pool2d_desc *d)
{
    return d->width >= d->kernel_w ? (d->width - d->kernel_w) / d->stride_w + 1 : 0;
}

/* Checks a descriptor for op `op` ("max_pool2d", "avg_pool2d"): positive
 * sizes, a window that fits the image, and element counts that fit one
 * launch.  The message names the op and the shape and says what to do. */
tt_status tt_pool2d_check(const char *op, const tt_pool2d_desc *desc);

#endif

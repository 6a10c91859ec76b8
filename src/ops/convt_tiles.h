/*
 * conv_transpose2d's DIRECT algorithm for a kernel that tiles its output
 * (kernel = stride, no padding, dilation 1, no output padding, groups 1:
 * the UNet's 2x2 stride-2 up-convolution): opencl/convt_tiles.cl.  Every
 * output pixel comes from one input pixel and one tap, so the three
 * directions are small per-tap matrix products with no columns.  Other
 * shapes run DIRECT through conv2d's rows (conv_transpose2d.c).  With w8
 * (kernels 2 wide: direct_w8) the same sums with 8 columns a work-item,
 * the even and odd output columns of a float16.
 */
#ifndef TT_OPS_CONVT_TILES_H
#define TT_OPS_CONVT_TILES_H

#include <stddef.h>

#include "backend/backend.h"

typedef struct tt_convt_tiles {
    size_t batch, cin, h, w, cout; /* input (N, Cin, H, W); output (N, Cout, H kh, W kw) */
    size_t kh, kw;                 /* = the stride */
    int w8; /* 1: the float8 kernels, kernels 2 wide (direct_w8, conv_transpose2d.c) */
} tt_convt_tiles;

/* The program g's kernels are in: convt_tiles, or for the 8-wide ones
 * convt_tiles_w8 (convt_tiles.cl under a name of its own, which Vulkan
 * lacks: lavapipe, its one CPU device, picked im2col_gemm over every
 * tiling shape, so no Vulkan device would run them); with w16 (the forward
 * alone) convt_tiles_w16. */
const char *tt_convt_tiles_program(const tt_convt_tiles *g, int w16);

/* out (overwritten) = conv_transpose2d(inp, weight) + bias (may be {0});
 * with w16 (kernels 2 wide, W >= 16: DIRECT_W16, conv_transpose2d.c) the
 * same sums in the same order with 64 input columns a work-item as
 * float16 (opencl/convt_tiles_w16.cl). */
tt_status tt_convt_tiles_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                 tt_mem bias, const tt_convt_tiles *g, int w16);
/* dinp += the input gradient of dout. */
tt_status tt_convt_tiles_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                       const tt_convt_tiles *g);
/* dweight (Cin, Cout, kh, kw) += the weight gradient of dout. */
tt_status tt_convt_tiles_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                         const tt_convt_tiles *g);

#endif

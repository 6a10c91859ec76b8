/*
 * The algorithms a convolution op can run with, and the helpers that
 * conv2d.c and conv_transpose2d.c share: bias broadcast, bias gradient,
 * buffer-size checks and the workspace (a caller's, or a temporary one).
 *
 * Each op keeps a table indexed by tt_conv_algo (name, workspace size,
 * forward, backward) guarded by a _Static_assert on TT_CONV_ALGO_COUNT:
 * adding an algorithm means adding its enum value here and filling one row
 * in every op's table.
 */
#ifndef TT_OPS_CONV_ALGO_H
#define TT_OPS_CONV_ALGO_H

#include "backend/backend.h"

typedef enum tt_conv_algo {
    TT_CONV_ALGO_AUTO = 0,     /* the op picks one for the shape */
    TT_CONV_ALGO_IM2COL_GEMM,  /* im2col / col2im + GEMM (CLBlast), one image at a time */
    /* to come: TT_CONV_ALGO_DIRECT, TT_CONV_ALGO_FFT, TT_CONV_ALGO_WINOGRAD */
    TT_CONV_ALGO_COUNT
} tt_conv_algo;

/* "auto", "im2col_gemm", ...; "unknown" outside the enum. */
const char *tt_conv_algo_name(tt_conv_algo algo);

/* ---- helpers shared by the convolution ops (src/ops/conv_algo.c) -------- */

/* Fails with TT_ERR_INVALID_ARGUMENT, naming `op` and `what`, unless `mem`
 * holds `floats` floats. */
tt_status tt_conv_check_mem(const char *op, const char *what, tt_mem mem, size_t floats);

/* y (batch, channels, plane) = bias[c] broadcast over n and the plane. */
tt_status tt_conv_bias_fill(tt_backend *be, tt_mem y, tt_mem bias, size_t batch,
                            size_t channels, size_t plane);

/* dbias[c] += sum over n and the plane of dout (batch, channels, plane). */
tt_status tt_conv_bias_backward(tt_backend *be, tt_mem dbias, tt_mem dout, size_t batch,
                                size_t channels, size_t plane);

/* The workspace an op runs in: the caller's `given` if it has a buffer
 * (checked to hold `bytes`), else a temporary TT_MEM_WORKSPACE buffer named
 * `name` that tt_conv_workspace_release() frees.  bytes == 0 needs nothing. */
typedef struct tt_conv_workspace {
    tt_mem mem;
    tt_buffer *owned;  /* NULL when the caller's */
} tt_conv_workspace;

tt_status tt_conv_workspace_acquire(tt_backend *be, const char *op, const char *name,
                                    tt_mem given, size_t bytes, tt_conv_workspace *out);
void tt_conv_workspace_release(tt_conv_workspace *ws);

#endif

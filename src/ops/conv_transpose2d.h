/*
 * 2-D transposed convolution (PyTorch's nn.ConvTranspose2d), float32 NCHW:
 * the gradient of conv2d with respect to its input, used for up-sampling
 * (the UNet's 2x2 stride-2 up-convolution).
 *
 *   out    (N, Cout, OH, OW)
 *   inp    (N, Cin, H, W)
 *   weight (Cin, Cout / groups, kernel_h, kernel_w)     PyTorch's layout
 *   bias   (Cout), optional: (tt_mem){0}
 *   OH = (H - 1) stride_h - 2 pad_h + dilation_h (kernel_h - 1) + output_pad_h + 1
 *
 * The im2col + GEMM algorithm works one image at a time in a workspace of
 * tt_conv_transpose2d_workspace_bytes(desc) (the columns of one output
 * image); callers may pass one, else a temporary one is allocated.
 */
#ifndef TT_OPS_CONV_TRANSPOSE2D_H
#define TT_OPS_CONV_TRANSPOSE2D_H

#include "backend/backend.h"
#include "ops/conv_algo.h"

typedef struct tt_conv_transpose2d_desc {
    int batch;                       /* N */
    int in_channels;                 /* Cin */
    int in_h, in_w;                  /* H, W */
    int out_channels;                /* Cout */
    int kernel_h, kernel_w;
    int stride_h, stride_w;          /* >= 1 */
    int pad_h, pad_w;                /* >= 0: rows/columns cropped from each side */
    int output_pad_h, output_pad_w;  /* >= 0 and < stride: added at the bottom/right */
    int dilation_h, dilation_w;      /* 0 means 1 */
    int groups;                      /* 0 means 1; must divide Cin and Cout */
    tt_conv_algo algo;               /* TT_CONV_ALGO_AUTO (0) by default */
    tt_conv_blocks blocks;           /* as tt_conv2d_desc's (conv_algo.h) */
    size_t workspace_limit;          /* as tt_conv2d_desc's */
} tt_conv_transpose2d_desc;

/* NULL when the shape is valid and the algorithm can run it. */
tt_status tt_conv_transpose2d_check(const tt_conv_transpose2d_desc *desc);
/* OH and OW of a valid desc (0 for an invalid one). */
int tt_conv_transpose2d_out_h(const tt_conv_transpose2d_desc *desc);
int tt_conv_transpose2d_out_w(const tt_conv_transpose2d_desc *desc);
/* As tt_conv2d_algo_for: the algorithm that runs `dir` of `desc` (AUTO
 * where the pick is the autotuner's, or the desc is invalid). */
tt_conv_algo tt_conv_transpose2d_algo_for(const tt_conv_transpose2d_desc *desc, tt_conv_dir dir);
/* As tt_conv2d_runs_on: whether `be` has what every direction of `desc` runs. */
int tt_conv_transpose2d_runs_on(const tt_backend *be, const tt_conv_transpose2d_desc *desc);
/* Bytes of workspace forward and backward need; 0 for an invalid desc. */
size_t tt_conv_transpose2d_workspace_bytes(const tt_conv_transpose2d_desc *desc);
/* As tt_conv2d_workspace_bytes_on: sized for the known picks on `be`. */
size_t tt_conv_transpose2d_workspace_bytes_on(tt_backend *be, const tt_conv_transpose2d_desc *desc);

/* out = conv_transpose(inp, weight) + bias.  Overwrites out; bias and
 * workspace may be (tt_mem){0}. */
tt_status tt_conv_transpose2d_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                      tt_mem bias, const tt_conv_transpose2d_desc *desc,
                                      tt_mem workspace);

/* ADDS the gradients to dinp (N, Cin, H, W), dweight (like weight) and dbias
 * (Cout) given dout; any of them may be (tt_mem){0} and is skipped.  inp is
 * needed only for dweight, weight only for dinp. */
tt_status tt_conv_transpose2d_backward(tt_backend *be, tt_mem dinp, tt_mem dweight,
                                       tt_mem dbias, tt_mem dout, tt_mem inp, tt_mem weight,
                                       const tt_conv_transpose2d_desc *desc, tt_mem workspace);

/* As tt_conv2d_verify (conv2d.h), for the transposed convolution: every
 * algorithm that runs `dir` of `desc` on `be` checked on these inputs
 * (inp (N, Cin, H, W), weight (Cin, Cout/groups, kH, kW), bias (Cout),
 * dout (N, Cout, OH, OW), each where `dir` reads it). */
struct tt_conv_verdict;
tt_status tt_conv_transpose2d_verify(tt_backend *be, const tt_conv_transpose2d_desc *desc,
                                     tt_conv_dir dir, tt_mem inp, tt_mem weight, tt_mem bias,
                                     tt_mem dout, struct tt_conv_verdict *verdicts, int *checked);

#endif

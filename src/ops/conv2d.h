/*
 * 2-D convolution (cross-correlation, as PyTorch's nn.Conv2d), float32 NCHW.
 *
 *   out    (N, Cout, OH, OW)
 *   inp    (N, Cin, H, W)
 *   weight (Cout, Cin / groups, kernel_h, kernel_w)
 *   bias   (Cout), optional: (tt_mem){0}
 *   OH = (H + 2 pad_h - dilation_h (kernel_h - 1) - 1) / stride_h + 1, likewise OW.
 *
 * The algorithm is desc->algo (TT_CONV_ALGO_AUTO lets the op pick: see
 * conv_algo.h and conv_autotune.h).  Algorithms work in a workspace of
 * tt_conv2d_workspace_bytes(desc); callers may pass one (e.g. shared by all
 * layers), else a TT_MEM_WORKSPACE buffer is allocated and freed per call.
 * AUTO times the candidates on the first call of a shape (scratch outputs,
 * never the caller's gradients) unless the find-db knows the answer.
 */
#ifndef TT_OPS_CONV2D_H
#define TT_OPS_CONV2D_H

#include "backend/backend.h"
#include "ops/conv_algo.h"

typedef struct tt_conv2d_desc {
    int batch;                   /* N */
    int in_channels;             /* Cin */
    int in_h, in_w;              /* H, W */
    int out_channels;            /* Cout */
    int kernel_h, kernel_w;
    int stride_h, stride_w;      /* >= 1 */
    int pad_h, pad_w;            /* zero padding on each side, >= 0 */
    int dilation_h, dilation_w;  /* 0 means 1 */
    int groups;                  /* 0 means 1; must divide Cin and Cout */
    tt_conv_algo algo;           /* TT_CONV_ALGO_AUTO (0) by default */
    int no_input_grad;           /* 1: backward is never asked for the input's gradient
                                    (a first layer), so the workspace leaves it out */
    tt_conv_blocks blocks;       /* zero: the algorithm's own sizes; a named algorithm's
                                    forced ones (tests, benchmarks; conv_algo.h) */
    size_t workspace_limit;      /* AUTO weighs no algorithm whose workspace is larger
                                    (bytes; 0: no limit; a model's, model/head.c) */
} tt_conv2d_desc;

/* NULL when the shape is valid and the algorithm can run it; otherwise
 * TT_ERR_INVALID_ARGUMENT / TT_ERR_UNSUPPORTED naming what is wrong. */
tt_status tt_conv2d_check(const tt_conv2d_desc *desc);
/* OH and OW of a valid desc. */
int tt_conv2d_out_h(const tt_conv2d_desc *desc);
int tt_conv2d_out_w(const tt_conv2d_desc *desc);
/* The geometry of a valid desc, as the algorithms see it (conv_algo.h). */
tt_status tt_conv2d_shape(const tt_conv2d_desc *desc, tt_conv_shape *shape);
/* The algorithm that runs `dir` of `desc`: the desc's one,
 * or IM2COL_GEMM where that one does not run this direction of this shape;
 * TT_CONV_ALGO_AUTO when the autotuner will pick (or the desc is invalid). */
tt_conv_algo tt_conv2d_algo_for(const tt_conv2d_desc *desc, tt_conv_dir dir);
/* Likewise, and for AUTO the autotuner's pick on `be`'s device where it
 * has one (after the direction ran once); AUTO while nothing is known. */
tt_conv_algo tt_conv2d_algo_on(const tt_backend *be, const tt_conv2d_desc *desc, tt_conv_dir dir);
/* Whether `be` has what every direction of `desc` runs: its algorithm (or
 * IM2COL_GEMM where that one does not run a direction) or, for AUTO, some
 * candidate; 0 for an invalid desc.  A desc forcing an algorithm `be` lacks
 * fails there (TT_ERR_UNSUPPORTED); tests ask this first. */
int tt_conv2d_runs_on(const tt_backend *be, const tt_conv2d_desc *desc);
/* Bytes of workspace forward and backward need (0 for a 1x1 stride-1
 * unpadded convolution, which needs no columns); 0 for an invalid desc. */
size_t tt_conv2d_workspace_bytes(const tt_conv2d_desc *desc);
/* The same for what will run on `be`: for AUTO, the autotuner's picks where
 * its find-db knows them (no timing), else every candidate.  A workspace of
 * this size serves every call; when a pick changes later (the find-db was
 * deleted), the op takes a temporary workspace of its own for that call. */
size_t tt_conv2d_workspace_bytes_on(tt_backend *be, const tt_conv2d_desc *desc);

/* out = conv(inp, weight) + bias.  Overwrites out; bias may be (tt_mem){0}.
 * workspace may be (tt_mem){0}. */
tt_status tt_conv2d_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                            const tt_conv2d_desc *desc, tt_mem workspace);

/* out += conv(inp, weight), no bias: a convolution over channels that live
 * in two tensors is two convolutions into one output (the UNet's decoder
 * reads [up, skip] this way without a concatenated copy). */
tt_status tt_conv2d_forward_add(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                const tt_conv2d_desc *desc, tt_mem workspace);

/* ADDS the gradients of L to dinp (N, Cin, H, W), dweight (like weight) and
 * dbias (Cout), given dout = dL/dout.  Any of the three may be (tt_mem){0}
 * and is skipped; inp is needed only for dweight, weight only for dinp. */
tt_status tt_conv2d_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                             tt_mem dout, tt_mem inp, tt_mem weight, const tt_conv2d_desc *desc,
                             tt_mem workspace);

/* dinp (N, Cin, H, W) = the input gradient of L, given dout: OVERWRITES
 * dinp, never reading it, where tt_conv2d_backward adds.  A gradient's
 * first contribution this way costs no fill of zeros, and the algorithms
 * that can (direct's 3x3 kernels, both winograd4x4) skip reading dinp. */
tt_status tt_conv2d_input_gradient(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                   const tt_conv2d_desc *desc, tt_mem workspace);

/* Every algorithm that runs `dir` of `desc` on `be`, checked on these
 * inputs as the autotuner checks a candidate before it times it
 * (conv_verify.h): checked[a] = 1 and verdicts[a] for each, arrays of
 * TT_CONV_ALGO_COUNT (conv_autotune.h's tt_conv_verdict).  The buffers
 * `dir` reads: forward inp, weight and bias (may be (tt_mem){0}), input
 * gradient dout and weight, weight gradient dout and inp.  `tiletrain
 * selftest --algos` asks this of every layer of a recipe. */
struct tt_conv_verdict;
tt_status tt_conv2d_verify(tt_backend *be, const tt_conv2d_desc *desc, tt_conv_dir dir,
                           tt_mem inp, tt_mem weight, tt_mem bias, tt_mem dout,
                           struct tt_conv_verdict *verdicts, int *checked);

#endif

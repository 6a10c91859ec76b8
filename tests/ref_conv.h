/*
 * Plain-C double-precision references for the convolution ops, written from
 * the definitions (a gather for conv2d, a scatter for conv_transpose2d) and
 * independent of the op code: they compute their own output sizes.
 */
#ifndef TT_TESTS_REF_CONV_H
#define TT_TESTS_REF_CONV_H

#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"

/* Output size of conv2d along one axis. */
int ref_conv2d_out_size(int in, int kernel, int stride, int pad, int dilation);
/* Output size of conv_transpose2d along one axis. */
int ref_conv_transpose2d_out_size(int in, int kernel, int stride, int pad, int output_pad,
                                  int dilation);

/* out (N, Cout, OH, OW) = cross-correlation of inp (N, Cin, H, W) with
 * weight (Cout, Cin/groups, kH, kW), plus bias (Cout) unless it is NULL. */
void ref_conv2d_forward(double *out, const double *inp, const double *weight,
                        const double *bias, const tt_conv2d_desc *d);

/* The gradients of L = sum(dout * conv2d(inp, weight)), ADDED to dinp (N,
 * Cin, H, W) and dweight (like weight); either may be NULL.  Any groups. */
void ref_conv2d_backward(double *dinp, double *dweight, const double *inp, const double *weight,
                         const double *dout, const tt_conv2d_desc *d);

/* out (N, Cout, OH, OW): every inp[n, ci, y, x] * weight[ci, co_g, ky, kx]
 * lands on out[n, co, y*stride - pad + ky*dilation, ...]; plus bias. */
void ref_conv_transpose2d_forward(double *out, const double *inp, const double *weight,
                                  const double *bias, const tt_conv_transpose2d_desc *d);

#endif

/*
 * Plain-C double-precision references for the element-wise and resampling
 * ops: activations (SiLU too), max/avg pooling, bilinear and nearest x2 upsampling,
 * channel concat.
 * Written the straightforward way (scatter where the kernels gather) so the
 * two implementations share no algorithm.  Every backward ADDS into its
 * gradient, like the device ops.
 */
#ifndef TT_TESTS_REF_ACT_H
#define TT_TESTS_REF_ACT_H

#include <stddef.h>

#include "ops/concat.h"
#include "ops/pool2d.h"
#include "ops/upsample.h"

void ref_relu_forward(double *y, const double *x, size_t n);
/* dx += dy * (x > 0): from the INPUT, to check the device's use of y. */
void ref_relu_backward(double *dx, const double *dy, const double *x, size_t n);
void ref_leaky_relu_forward(double *y, const double *x, double slope, size_t n);
void ref_leaky_relu_backward(double *dx, const double *dy, const double *x, double slope,
                             size_t n);
void ref_sigmoid_forward(double *y, const double *x, size_t n);
/* dx += dy * s(x) (1 - s(x)), s recomputed from x. */
void ref_sigmoid_backward(double *dx, const double *dy, const double *x, size_t n);
/* y = x s(x), s the logistic sigmoid; dx += dy * s (1 + x (1 - s)). */
void ref_silu_forward(double *y, const double *x, size_t n);
void ref_silu_backward(double *dx, const double *dy, const double *x, size_t n);

/* y (N, C, OH, OW), argmax as the device stores it (iy * W + ix per plane,
 * first maximum in row-major window order among the places inside the
 * image: padding never wins).  Average pooling counts padding as zeros
 * and divides by the window size (count_include_pad). */
void ref_max_pool2d_forward(double *y, int *argmax, const double *x, const tt_pool2d_desc *d);
/* dx[argmax] += dy, per plane. */
void ref_max_pool2d_backward(double *dx, const double *dy, const int *argmax,
                             const tt_pool2d_desc *d);
void ref_avg_pool2d_forward(double *y, const double *x, const tt_pool2d_desc *d);
void ref_avg_pool2d_backward(double *dx, const double *dy, const tt_pool2d_desc *d);

/* PyTorch's align_corners=False bilinear x2; y is (N, C, 2H, 2W). */
void ref_upsample_bilinear2x_forward(double *y, const double *x, const tt_upsample_desc *d);
void ref_upsample_bilinear2x_backward(double *dx, const double *dy, const tt_upsample_desc *d);

/* PyTorch's mode='nearest' x2: every input element copied to its 2x2 block
 * of y (N, C, 2H, 2W); backward adds each output's gradient to its source. */
void ref_upsample_nearest2x_forward(double *y, const double *x, const tt_upsample_desc *d);
void ref_upsample_nearest2x_backward(double *dx, const double *dy, const tt_upsample_desc *d);

void ref_concat_forward(double *y, const double *a, const double *b, const tt_concat_desc *d);
/* da += dy[:, :Ca], db += dy[:, Ca:]; either may be NULL. */
void ref_concat_backward(double *da, double *db, const double *dy, const tt_concat_desc *d);

#endif

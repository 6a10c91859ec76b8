/*
 * Plain-C references for bilinear upsampling by an integer factor
 * (ops/upsample.h): PyTorch's F.interpolate(x, scale_factor=f,
 * mode='bilinear', align_corners=False), and the ref_resize_aligned_*
 * ones for align_corners=True (scale = (float)(I - 1) / (float)(O - 1),
 * 0 for O == 1, src = scale * (float)dst, each rounded once, as PyTorch
 * and the aligned kernels compute them).
 *
 * The taps and weights are computed in float with PyTorch's arithmetic
 * (scale = (float)(1.0 / f), src = scale * (dst + 0.5f) - 0.5f, unfused,
 * clamped at 0), which is also the kernels' (opencl/upsample.cl), so the
 * references and the device agree on every weight bit for bit.  Two kinds:
 *
 * - double: the weights as above, the sums in double; backward scatters
 *   output by output (no assumption about which outputs read an input), for
 *   the finite-difference checks and as the mathematical answer;
 * - f32: the kernels' float arithmetic step by step (fmaf where they fuse),
 *   so the device must give the same bits; its backward gathers over EVERY
 *   output of the plane in the kernel's order, which checks that the
 *   kernel's shorter range of outputs per input misses no reader.
 *
 * Shapes are the INPUT's (tt_upsample_desc); `factor` is passed explicitly
 * (>= 1) and the output is (N, C, factor H, factor W).  Backwards ADD.
 */
#ifndef TT_TESTS_REF_RESIZE_H
#define TT_TESTS_REF_RESIZE_H

#include "ops/upsample.h"

/* The taps of output index dst along an axis of in_size inputs: lower tap
 * *i0, upper *i1 (clamped to in_size - 1), weights *w0 and *w1 (floats). */
void ref_resize_taps(int dst, int in_size, int factor, int *i0, int *i1, float *w0, float *w1);

void ref_resize_bilinear_forward(double *y, const double *x, const tt_upsample_desc *d,
                                 int factor);
void ref_resize_bilinear_backward(double *dx, const double *dy, const tt_upsample_desc *d,
                                  int factor);

void ref_resize_bilinear_forward_f32(float *y, const float *x, const tt_upsample_desc *d,
                                     int factor);
void ref_resize_bilinear_backward_f32(float *dx, const float *dy, const tt_upsample_desc *d,
                                      int factor);

/* align_corners = True: the taps as above, then the same four kinds (the
 * same sums, double or the kernels' float steps). */
void ref_resize_aligned_taps(int dst, int in_size, int factor, int *i0, int *i1, float *w0,
                             float *w1);
void ref_resize_aligned_forward(double *y, const double *x, const tt_upsample_desc *d,
                                int factor);
void ref_resize_aligned_backward(double *dx, const double *dy, const tt_upsample_desc *d,
                                 int factor);
void ref_resize_aligned_forward_f32(float *y, const float *x, const tt_upsample_desc *d,
                                   int factor);
void ref_resize_aligned_backward_f32(float *dx, const float *dy, const tt_upsample_desc *d,
                                    int factor);

#endif

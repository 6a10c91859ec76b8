/*
 * Plain-C double-precision references for the squeeze-and-excitation ops:
 * global average pooling and the channel multiply, on (N, C, H, W) tensors
 * of `planes` = N C planes of `plane` = H W values.  Written plainly (one
 * serial loop per plane, in double) so they share no algorithm with the
 * kernels' chunked trees.  Every backward ADDS, like the device ops.
 */
#ifndef TT_TESTS_REF_CHANNEL_H
#define TT_TESTS_REF_CHANNEL_H

#include <stddef.h>

/* y[p] = mean of x's plane p. */
void ref_global_avg_pool_forward(double *y, const double *x, int planes, int plane);
/* dx[p, i] += dy[p] / plane. */
void ref_global_avg_pool_backward(double *dx, const double *dy, int planes, int plane);

/* y[p, i] = x[p, i] * s[p]. */
void ref_channel_mul_forward(double *y, const double *x, const double *s, int planes,
                             int plane);
/* dx[p, i] += dy[p, i] s[p]; ds[p] += sum_i dy[p, i] x[p, i]; dx or ds may
 * be NULL (not wanted), and s too when dx is. */
void ref_channel_mul_backward(double *dx, double *ds, const double *dy, const double *x,
                              const double *s, int planes, int plane);

#endif

/*
 * Checking a convolution algorithm's result before anything trusts it.
 *
 * The autotuner (conv_autotune.c) and `tiletrain selftest --algos` run a
 * candidate on a layer's real shape and compare its output with two
 * things: the reference algorithm's output on the same inputs, element by
 * element (IM2COL_GEMM, else DIRECT), and at sampled elements the value
 * computed on the host in double from the inputs read back (which also
 * checks the reference itself).  The error is the largest difference over
 * the larger of the reference output's largest value and the sampled
 * elements' largest sum of |terms| (fp32 rounds the terms, so a sum that
 * cancels errs by their size in every algorithm); the bound grows with the
 * square root of the reduction length, as fp32 rounding of a sum does:
 *
 *   bound(K) = TT_CONV_VERIFY_SLACK * 2^-24 * sqrt(K)
 *
 * against the host's double; two fp32 results, each within it of the
 * exact one, may differ by twice it, so off the reference the bound is
 * 2 bound(K).
 * K = Cin/groups * kH * kW (forward), Cout/groups * kH * kW (input
 * gradient), N * OH * OW (weight gradient), each on the conv2d geometry
 * (a transposed convolution's forward is its geometry's input gradient).
 * tests/test_conv_batch.c prints each algorithm's largest error over this
 * bound (F(4x4,3x3)'s transforms round more than the direct sums do); a
 * wrong tile, image, border or channel block shows as 1e-2 and more.
 */
#ifndef TT_OPS_CONV_VERIFY_H
#define TT_OPS_CONV_VERIFY_H

#include "ops/conv_algo.h"

#define TT_CONV_VERIFY_SLACK 16.0

/* The reduction length of `dir` on `s` in `family`'s terms. */
size_t tt_conv_verify_reduction(const tt_conv_family *family, const tt_conv_shape *s,
                                tt_conv_dir dir);
/* bound(K) above. */
double tt_conv_verify_bound(size_t reduction);

/* The inputs of one call on the host, as the family's run reads them
 * (NULL where `dir` reads nothing there; bias may be NULL). */
typedef struct tt_conv_host_io {
    const float *inp, *weight, *bias, *dout;
} tt_conv_host_io;

/* The floats `dir`'s output of `s` has (the family's terms). */
size_t tt_conv_verify_out_floats(const tt_conv_shape *s, tt_conv_dir dir);

/* `samples` elements of `dir`'s output (the first, the last and a spread
 * over the rest: their indices into *index) and their values computed in
 * double from io into *want; *magnitude: the largest sum of |terms| among
 * them, which bounds every partial sum of any order of summation. */
void tt_conv_verify_sample(const tt_conv_family *family, const tt_conv_shape *s, tt_conv_dir dir,
                           const tt_conv_host_io *io, size_t samples, size_t *index,
                           double *want, double *magnitude);

/* Sums this large may overflow fp32 in some algorithm's order (a
 * Winograd transform grows values before it sums): a call whose
 * results come near it decides nothing. */
#define TT_CONV_VERIFY_HUGE 1e30
/* max over the samples of |got[index[k]] - want[k]| / scale; samples whose
 * want is not finite (inputs that overflowed, as a loss-scaled fp16 step's
 * may) are not judged, a non-finite got where want is finite counts as
 * infinity. */
double tt_conv_verify_points(const float *got, const size_t *index, const double *want,
                             size_t samples, double scale);

/* max |got - want| / scale over the n floats where want is finite; a NaN
 * or infinity in got there gives infinity. */
double tt_conv_verify_diff(const float *got, const float *want, size_t n, double scale);
/* The largest finite |v| of n floats (1 when there is none but 0). */
double tt_conv_verify_scale(const float *v, size_t n);

#endif

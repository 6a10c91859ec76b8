/*
 * Plain-C reference for dropout and drop-path (ops/dropout.h): the mask's
 * hash written out again from the header's statement (not the library's
 * code), and the forward and backward in float, step by step as the
 * kernels round, so the device must give the same bits.
 *
 * Element i of n has hash index i / group: group 1 is dropout, group =
 * per_sample is drop-path (a draw per sample).
 */
#ifndef TT_TESTS_REF_DROPOUT_H
#define TT_TESTS_REF_DROPOUT_H

#include <stddef.h>
#include <stdint.h>

uint32_t ref_dropout_hash(uint64_t seed, uint32_t index);
/* 1 when index is kept for drop probability p. */
int ref_dropout_keep(uint64_t seed, uint32_t index, float p);
/* 1 / (1 - p) as the op rounds it. */
float ref_dropout_scale(float p);

/* out = inp * (keep ? scale : 0). */
void ref_dropout_forward(float *out, const float *inp, float p, uint64_t seed, size_t n,
                         size_t group);
/* dinp += dout * (keep ? scale : 0), the product rounded first. */
void ref_dropout_backward(float *dinp, const float *dout, float p, uint64_t seed, size_t n,
                          size_t group);

#endif

/*
 * Dropout and drop-path (stochastic depth, as timm's drop_path) with masks
 * that are never stored: forward and backward regenerate them from a
 * 64-bit seed and the element's (or the sample's) index, so the backward
 * needs nothing from the forward.  A model draws each image's masks from a
 * seed of its own (tt_dropout_image_seed: the run's seed, the layer and
 * the crop's index in the run's stream of crops), so a crop's masks are
 * the same whatever micro-batch, accumulation window or rank it falls in,
 * and after a resume.
 *
 * The mask, computed alike by the host (tt_dropout_hash), the OpenCL
 * kernels (opencl/dropout.cl), the Vulkan shaders (shaders/dropout/) and
 * tests/ref_dropout.c, with 32-bit unsigned integer operations only
 * (wrapping multiplication, xor, shifts):
 *
 *   fmix32(h):  h ^= h >> 16; h *= 0x85ebca6b; h ^= h >> 13;
 *               h *= 0xc2b2ae35; h ^= h >> 16           (MurmurHash3's
 *               finaliser, a bijection of the 32-bit integers)
 *   lo, hi:     the seed's low and high 32 bits
 *   key_a     = fmix32(lo ^ fmix32(hi ^ 0x9e3779b9))
 *   key_b     = fmix32(hi ^ fmix32(lo ^ 0x7f4a7c15))
 *   hash(seed, index) = fmix32(fmix32(index ^ key_a) + key_b)
 *
 *   threshold = (uint32_t)(p * 2^32), p converted to double first
 *               (exact; p < 1 keeps it below 2^32)
 *   keep      = hash(seed, index) >= threshold   (unsigned comparison)
 *   scale     = (float)(1.0 / (1.0 - p)), in double then rounded
 *
 * so an element is kept with probability 1 - threshold / 2^32, which is
 * 1 - p within 2^-32.  Dropout's index is the element's, 0 .. n - 1;
 * drop-path's is the sample's, 0 .. batch - 1 (one decision per sample).
 * The host computes the keys once per launch and passes them, the
 * threshold and the scale to the kernels.
 *
 * Forward: out[i] = inp[i] * (keep ? scale : 0), a single float
 * multiplication, so a dropped NaN or infinity gives NaN as in PyTorch
 * (input * mask * scale).  Backward ADDS: dinp[i] += dout[i] * (keep ?
 * scale : 0), the product rounded before the sum (never fused).  p = 0
 * keeps everything with scale 1: the forward is a copy and the backward
 * adds dout.  p must be in [0, 1): anything else (NaN included) is
 * TT_ERR_INVALID_ARGUMENT naming the op and the value.
 *
 * out may be inp (the very same place: in place); otherwise the tensors
 * must not overlap.  dinp must not overlap dout.  Tensors are float32 of
 * at most INT_MAX elements.
 */
#ifndef TT_OPS_DROPOUT_H
#define TT_OPS_DROPOUT_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* The seed of a run's dropout masks, from its --seed: splitmix64's
 * finaliser of run_seed ^ 0x6a09e667f3bcc909. */
uint64_t tt_dropout_run_seed(uint64_t run_seed);
/* The seed of one dropout layer's mask: seed ^ (0x9e3779b97f4a7c15 *
 * (salt + 1)), wrapping (tests/torch_resnet_unet_check.py draws it so). */
uint64_t tt_dropout_layer_seed(uint64_t seed, int salt);
/* The seed of one image's masks in that layer: mix(layer_seed ^
 * mix(crop ^ 0xbb67ae8584caa73b)), mix splitmix64's finaliser, crop the
 * image's index in the run's stream of crops (epoch * epoch length +
 * position; tests/torch_resnet_unet_check.py draws it so). */
uint64_t tt_dropout_image_seed(uint64_t layer_seed, int64_t crop);

/* The 32-bit hash of (seed, index) above, on the host. */
uint32_t tt_dropout_hash(uint64_t seed, uint32_t index);
/* Whether index is kept for drop probability p (p in [0, 1)). */
int tt_dropout_keep(uint64_t seed, uint32_t index, float p);

/* out (n) = inp * mask / (1 - p), the mask drawn per element. */
tt_status tt_dropout_forward(tt_backend *be, tt_mem out, tt_mem inp, float p, uint64_t seed,
                             size_t n);
/* dinp (n) += dout * mask / (1 - p), the forward's mask for the same p,
 * seed and n. */
tt_status tt_dropout_backward(tt_backend *be, tt_mem dinp, tt_mem dout, float p, uint64_t seed,
                              size_t n);

/* out (batch, per_sample) = inp * mask / (1 - p), one draw per sample: a
 * sample is kept whole (scaled) or zeroed whole. */
tt_status tt_drop_path_forward(tt_backend *be, tt_mem out, tt_mem inp, float p, uint64_t seed,
                               size_t batch, size_t per_sample);
/* dinp (batch, per_sample) += dout * mask / (1 - p), the forward's mask. */
tt_status tt_drop_path_backward(tt_backend *be, tt_mem dinp, tt_mem dout, float p, uint64_t seed,
                                size_t batch, size_t per_sample);

#endif

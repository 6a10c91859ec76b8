/*
 * What the banded UNet step (unet_banded.c) takes from unet_layers.c: the
 * layers' descriptors, the shared workspace and a decoder conv1's weight
 * in halves.  Not for use outside src/model.
 */
#ifndef TT_MODEL_UNET_INTERNAL_H
#define TT_MODEL_UNET_INTERNAL_H

#include "model/unet.h"
#include "ops/concat.h"
#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"
#include "ops/group_norm.h"

/* The 2x2 stride-2 up-convolution, for `batch` images. */
tt_conv_transpose2d_desc tt_unet_upconv(const tt_unet *u, int batch, int cin, int cout, int h,
                                        int w);
/* The block's norms (each followed by a fused ReLU), their input stored
 * as `xp`. */
tt_group_norm_desc tt_unet_group_desc(const tt_unet *u, const tt_unet_block *b, int n,
                                      tt_precision xp);
tt_batch_norm_desc tt_unet_batch_desc(const tt_unet *u, const tt_unet_block *b, int n,
                                      tt_precision xp);
/* The convolution workspace every layer shares (NONE when none needs one). */
tt_mem tt_unet_workspace(const tt_unet *u);

/* A decoder block's conv1 over [up, skip] without the copy: its weight
 * (C', 2C, 3, 3) split by input channels into wa (the up half) and wb
 * (the skip half) in the model's wsplit buffer [wa | wb | ga | gb], so
 * every part is an ordinary C -> C' convolution; the weight gradients are
 * made per half (ga, gb: the caller zeroes them) and joined into the
 * gradient arena. */
typedef struct tt_unet_split {
    tt_mem wa, wb, ga, gb;
    tt_concat_desc desc;    /* (C', [C | C], 3, 3) */
    size_t half_floats;     /* C' C 9 */
} tt_unet_split;
tt_status tt_unet_split_conv1(tt_unet *u, const tt_unet_block *b, tt_unet_split *s);
/* The gradient arena's conv1 weight += [ga | gb]. */
tt_status tt_unet_join_conv1_grads(tt_unet *u, const tt_unet_block *b, const tt_unet_split *s);

/* Floats of each of the banded step's three band rooms. */
size_t tt_unet_band_room_floats(const tt_unet *u);

#endif

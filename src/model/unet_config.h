/*
 * The built-in UNet, parameter for parameter the model of
 * python/tiletrain_torch.py: level i has base * 2^i channels; a block is
 * conv3x3 + norm + ReLU twice (biased convs); 2x2 max-pool down, 2x2
 * stride-2 transposed conv up; the skip is concatenated as [upsampled,
 * skip]; a 1x1 head.
 */
#ifndef TT_MODEL_UNET_CONFIG_H
#define TT_MODEL_UNET_CONFIG_H

#include "core/precision.h"
#include "model/params.h"
#include "ops/conv_algo.h"
#include "ops/norm.h"

typedef struct tt_unet_config {
    int in_channels;    /* 3: RGB */
    int classes;
    int base_channels;  /* 16 */
    int depth;          /* 3: levels below the top */
    tt_norm_kind norm;
    int groups;         /* group norm groups; must divide every level's channels */
    int checkpointing;  /* execution, not architecture: keep only what each block
                           needs to be recomputed in backward (src/model/unet.c) */
    tt_conv_algo algo;  /* execution: AUTO lets the autotuner pick per shape; else every
                           convolution runs this one (direct where its workspace won't fit) */
    tt_precision precision; /* execution: what is kept from forward to backward is stored
                               in fp32, fp16 or bf16 (src/model/unet.c) */
} tt_unet_config;

/* The defaults of tiletrain_torch.py: 3 in, 4 classes, base 16, depth 3, group norm, 8 groups. */
tt_unet_config tt_unet_config_default(void);

/* Checks the configuration; errors say which value is wrong and why. */
tt_status tt_unet_config_check(const tt_unet_config *config);

/* The tile and micro-batch a UNet of this depth takes: height and width
 * multiples of 2^depth; the error suggests the nearest tile that is. */
tt_status tt_unet_tile_check(const tt_unet_config *config, int capacity, int height, int width);

/* Whether its step is the banded one (model/exec_band.c): 16-bit storage
 * with checkpointing and a norm ($TT_UNET_BANDED: 1 in fp32 too, 0 never). */
int tt_unet_banded(const tt_unet_config *config);

/* Channels of level i: base * 2^i. */
static inline int tt_unet_channels(const tt_unet_config *c, int level)
{
    return c->base_channels << level;
}

/* Every tensor of the model, in PyTorch's state_dict order and names. */
tt_status tt_unet_params(const tt_unet_config *config, tt_param_table *table);

#endif

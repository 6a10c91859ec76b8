/*
 * timm's EfficientNet-B0..B4 (efficientnet_bN, symmetric padding, batch
 * norm eps 1e-5) as smp's "tu-efficientnet_bN" encoder: the parameters
 * under "encoder.model." in state_dict order and the layers, for a
 * decoder to add its own after (python/smp_encoders.py's
 * TuEfficientNetEncoder is the same in PyTorch).
 *
 *   conv_stem (3x3 stride 2, no bias), bn1, SiLU
 *   blocks.0 .. blocks.6: depthwise-separable blocks (blocks.0: depthwise
 *   kxk, bn1, SiLU, squeeze-and-excitation, 1x1 conv_pw, bn2) and inverted
 *   residual ones (1x1 conv_pw expanding x6, bn1, SiLU, depthwise kxk
 *   conv_dw (strided), bn2, SiLU, squeeze-and-excitation, 1x1 conv_pwl,
 *   bn3), + the block's input where the shape allows
 *   squeeze-and-excitation: the plane's mean, 1x1 conv_reduce (bias) to a
 *   quarter of the block's input channels, SiLU, 1x1 conv_expand (bias),
 *   sigmoid, times the input, channel by channel
 *
 * Features F0..F4: blocks.0 (H/2), blocks.1 (H/4), blocks.2 (H/8),
 * blocks.4 (H/16), blocks.6 (H/32).  At output stride 16, timm's builder:
 * blocks.5's first block keeps stride 1, every later block's depthwise
 * convolution is dilated by 2.
 */
#ifndef TT_MODEL_EFFICIENTNET_H
#define TT_MODEL_EFFICIENTNET_H

#include "model/graph_model.h"

typedef struct tt_efficientnet {
    const char *name;          /* "efficientnet-b2" (smp: "tu-efficientnet_b2") */
    double width, depth;       /* timm's channel and depth multipliers */
} tt_efficientnet;

/* The encoder a model kind names after its decoder ("fpn-efficientnet-b2");
 * NULL for none. */
const tt_efficientnet *tt_efficientnet_of(const char *kind);

/* The encoders' names, comma-separated, appended to buf (size bytes). */
void tt_efficientnet_names(char *buf, size_t size);

/* Adds the encoder's parameters and layers after the model's input;
 * features[0..4] get F0..F4. */
tt_status tt_efficientnet_build(tt_graph_model *gm, const tt_efficientnet *e, int output_stride,
                                int features[5]);

#endif

/*
 * torchvision's ResNets and ResNeXt as smp's encoders: the parameters
 * under "encoder." in state_dict order and the layers of the encoder, for
 * a decoder to add its own after (unet_resnet.c, fpn.c).
 *
 *   encoder.conv1 (7x7 stride 2, no bias), encoder.bn1, ReLU   -> F0 (64, H/2)
 *   max pool 3x3 stride 2 pad 1, encoder.layer1                -> F1 (H/4)
 *   encoder.layer2, layer3, layer4 (first block stride 2, a
 *   1x1 stride-2 conv + BN downsample)                         -> F2..F4 (H/8..H/32)
 *
 * Basic blocks (resnet18, resnet34: 64..512 channels) or bottleneck blocks
 * (resnet50, resnext50_32x4d with its 3x3 in 32 groups: 256..2048).  With
 * freeze_encoder_bn the norms run as FrozenBatchNorm2d.
 */
#ifndef TT_MODEL_RESNET_ENCODER_H
#define TT_MODEL_RESNET_ENCODER_H

#include "model/graph_model.h"

typedef struct tt_resnet_encoder {
    const char *name;          /* "resnet34": smp's encoder_name */
    int blocks[4], bottleneck; /* blocks per layer; bottleneck blocks (expansion 4) */
    int groups, base_width;    /* a bottleneck's 3x3 in `groups` groups of base_width *
                                  planes / 64 channels each */
} tt_resnet_encoder;

/* The encoder a model kind names after its decoder ("fpn-resnet34":
 * resnet34); NULL for none. */
const tt_resnet_encoder *tt_resnet_encoder_of(const char *kind);

/* The encoders' names, comma-separated, appended to buf (size bytes). */
void tt_resnet_encoder_names(char *buf, size_t size);

/* Adds the encoder's parameters and layers after the model's input
 * (g->input); features[0..4] get F0..F4's tensors (each kept, or made
 * again as the model's checkpointing and storage say).  output_stride 32,
 * or 16: layer4 keeps layer3's stride, every convolution of it dilated by
 * 2 (smp's make_dilated: its first block's 3x3 too). */
tt_status tt_resnet_encoder_build(tt_graph_model *gm, const tt_resnet_encoder *e, int output_stride,
                                  int features[5]);

#endif

/*
 * The UNet over a ResNet encoder, laid out and named as
 * segmentation_models_pytorch's Unet(encoder_name="resnet18" | "resnet34")
 * (python/unet_resnet.py is the same model in PyTorch):
 *
 *   encoder.conv1 (7x7 stride 2, no bias), encoder.bn1, ReLU   -> F0 (64, H/2)
 *   max pool 3x3 stride 2 pad 1, encoder.layer1                -> F1 (64, H/4)
 *   encoder.layer2, layer3, layer4 (first block stride 2, a
 *   1x1 stride-2 conv + BN downsample)                         -> F2..F4 (128..512, H/8..H/32)
 *   decoder.blocks.0..4 (256, 128, 64, 32, 16 channels): nearest x2, [up, skip]
 *   with skips F3, F2, F1, F0 and none, then twice conv 3x3 (no bias) + BN + ReLU
 *   segmentation_head.0: 3x3 conv with bias to the classes   -> logits (H)
 *
 * A basic block: relu(bn2(conv2(relu(bn1(conv1 x)))) + identity), the
 * identity x or downsample(x).  With freeze_encoder_bn the encoder's norms
 * run as PyTorch's FrozenBatchNorm2d in training too: running statistics
 * used and kept, affine parameters trained.  The tile's height and width
 * must be multiples of 32.
 *
 * The model is a layer list (model/graph.h) run by the executor
 * (model/exec.c); unet_resnet.c builds it and says what the backward keeps.
 */
#ifndef TT_MODEL_UNET_RESNET_H
#define TT_MODEL_UNET_RESNET_H

#include "model/model.h"

#define TT_UR_DECODER_BLOCKS 5
#define TT_UR_TILE_UNIT 32     /* the encoder's five halvings */

/* Builds a model of kind "unet-resnet18" or "unet-resnet34" (model.c's
 * table) for micro-batches up to `capacity` tiles of height x width. */
tt_status tt_unet_resnet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity,
                                      int height, int width, uint64_t seed, tt_model **out);

#endif

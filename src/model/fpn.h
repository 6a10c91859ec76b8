/*
 * FPN over a ResNet or ResNeXt encoder, laid out and named as
 * segmentation_models_pytorch's FPN(encoder_name=...) with its defaults
 * (python/smp_decoders.py is the same model in PyTorch):
 *
 *   encoder (resnet_encoder.h)                       -> c2..c5 (strides 4..32)
 *   decoder.p5: 1x1 conv (bias) of c5 to 256 channels
 *   decoder.p4, p3, p2: nearest x2 of the level above + a 1x1 conv (bias,
 *     .skip_conv) of c4, c3, c2
 *   decoder.seg_blocks.0..3 on p5..p2: 3, 2, 1 and 0 times [3x3 conv (no
 *     bias) to 128 channels, group norm (32 groups), ReLU, bilinear x2
 *     (align_corners)], seg_blocks.3 one conv, norm and ReLU
 *   the four summed, Dropout2d(0.2) in training
 *   segmentation_head.0: 1x1 conv (bias) to the classes, bilinear x4
 *     (align_corners)                                -> logits (H)
 *
 * Tiles: multiples of 32.
 */
#ifndef TT_MODEL_FPN_H
#define TT_MODEL_FPN_H

#include "model/model.h"

/* Builds a model of kind "fpn-resnet18", "-34", "-50" or
 * "fpn-resnext50_32x4d" (model.c's table). */
tt_status tt_fpn_model_create(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                              int width, uint64_t seed, tt_model **out);

#endif

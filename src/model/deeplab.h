/*
 * DeepLabV3+ over a ResNet or ResNeXt encoder, laid out and named as
 * segmentation_models_pytorch's DeepLabV3Plus(encoder_name=...) with its
 * defaults (python/smp_decoders.py is the same model in PyTorch):
 *
 *   encoder at output stride 16 (layer4 dilated by 2: resnet_encoder.h)
 *   decoder.aspp.0, ASPP on F4 (H/16): a 1x1 conv + batch norm + ReLU
 *     (.convs.0); for rates 12, 24, 36 a separable conv, depthwise 3x3
 *     dilated by the rate (.convs.i.0.0) and pointwise 1x1 (.convs.i.0.1),
 *     + batch norm + ReLU; image pooling (.convs.4): the plane's mean, 1x1
 *     conv, batch norm, ReLU, over every pixel again; the five
 *     concatenated, a 1x1 conv (.project.0) + batch norm + ReLU, Dropout(0.5)
 *     in training
 *   decoder.aspp.1, aspp.2: separable 3x3 conv + batch norm + ReLU, then
 *     bilinear x4 (align_corners) to H/4
 *   decoder.block1: F1 (H/4) by a 1x1 conv to 48 + batch norm + ReLU
 *   decoder.block2: the two concatenated, separable 3x3 conv to 256 +
 *     batch norm + ReLU
 *   segmentation_head.0: 1x1 conv (bias), bilinear x4      -> logits (H)
 *
 * Every convolution but the head's without a bias.  Tiles: multiples of
 * 16.  Training needs micro-batches of 2 or more (the image pooling's
 * batch norm sees one value a channel an image).
 */
#ifndef TT_MODEL_DEEPLAB_H
#define TT_MODEL_DEEPLAB_H

#include "model/model.h"

/* Builds a model of kind "deeplabv3plus-resnet18" ... (model.c's table). */
tt_status tt_deeplab_model_create(tt_backend *be, const tt_model_spec *spec, int capacity,
                                  int height, int width, uint64_t seed, tt_model **out);

#endif

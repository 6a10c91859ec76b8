/*
 * Linknet over a ResNet or ResNeXt encoder, laid out and named as
 * segmentation_models_pytorch's Linknet(encoder_name=...) with its
 * defaults (python/smp_decoders.py is the same model in PyTorch):
 *
 *   encoder (resnet_encoder.h)                    -> F0..F4 (strides 2..32)
 *   decoder.blocks.0..4 on F4, channels c[i] -> c[i + 1] with c = the
 *     encoder's F4..F0 channels then 32: a 1x1 conv (no bias) to c[i] / 4
 *     + batch norm + ReLU (.block.0), a 4x4 stride-2 padding-1 transposed
 *     conv (bias) + batch norm + ReLU (.block.1), a 1x1 conv to c[i + 1]
 *     + batch norm + ReLU (.block.2), then + F3, F2, F1, F0 (blocks 0..3)
 *   segmentation_head.0: 1x1 conv (bias) to the classes  -> logits (H)
 *
 * Tiles: multiples of 32.
 */
#ifndef TT_MODEL_LINKNET_H
#define TT_MODEL_LINKNET_H

#include "model/model.h"

/* Builds a model of kind "linknet-resnet18", "-34", "-50" or
 * "linknet-resnext50_32x4d" (model.c's table). */
tt_status tt_linknet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity,
                                  int height, int width, uint64_t seed, tt_model **out);

#endif

/*
 * A model of an encoder (resnet_encoder.h: ResNet, ResNeXt;
 * efficientnet.h: EfficientNet-B0..B4), named after its decoder in the
 * model's kind ("fpn-resnet34", "unet-efficientnet-b2"), and a decoder
 * over its features F0..F4 (strides 2, 4, 8, 16 and 32, or 16 at the last
 * at output stride 16).
 */
#ifndef TT_MODEL_ENCODER_H
#define TT_MODEL_ENCODER_H

#include "model/graph_model.h"

/* 1 when `kind` names an encoder after its decoder. */
int tt_encoder_of(const char *kind);

/* Every encoder's name, comma-separated, into buf (size bytes). */
void tt_encoder_names(char *buf, size_t size);

/* Adds a decoder and head after the encoder's features F0..F4 and sets
 * the graph's output (the logits). */
typedef tt_status (*tt_decoder_fn)(tt_graph_model *gm, const int features[5]);

/* A model over the encoder `spec->kind` names, at `output_stride` (32 or
 * 16: the tile's unit too): the input, the encoder, `decoder`, then its
 * parameters from `seed` and its places.  *out: tt_model_destroy(). */
tt_status tt_encoder_model_create(tt_backend *be, const tt_model_spec *spec, int output_stride,
                                  tt_decoder_fn decoder, int capacity, int height, int width,
                                  uint64_t seed, tt_model **out);

#endif

/*
 * The UNet over a ResNet encoder (unet_resnet.h) as a layer list run by
 * the executor (exec.c): the encoder's parameters and layers
 * (resnet_encoder.c) first, so they are one range of the arena, then the
 * decoder's in smp's state_dict order, and what the backward keeps.
 *
 * The decoder: the upsampled input of a block is made again (from the
 * convolution output below, upsampled, then normed in place), and so is a
 * norm's output that only the next convolution reads.  With checkpointing
 * blocks 0-3 run conv1 again for their backward; blocks 0-2's outputs are
 * made again once, as block 3's backward begins; the norms' outputs are
 * made again for each reader.  With 16-bit storage a kept convolution
 * output is stored in 16 bits and read there by its norm (not the one
 * below an upsampling, which upsamples the fp32 output).
 */
#include "model/unet_resnet.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/conv_norm.h"
#include "model/encoder.h"

static const int decoder_channels[TT_UR_DECODER_BLOCKS] = {256, 128, 64, 32, 16};

static tt_status decoder(tt_graph_model *u, const int features[5])
{
    const tt_model_spec *s = &u->model.spec;
    tt_graph *g = &u->graph;
    int ckpt = s->checkpointing, fp16 = s->precision != TT_PRECISION_FP32;
    tt_keep again = ckpt ? TT_RECOMPUTE : TT_REMAKE; /* a norm's output read again */
    int fd = s->freeze_decoder_bn;
    char conv[64], norm[64];
    int x = features[4], cin = tt_graph_def(g, x)->channels;
    tt_conv_norm c;
    for (int i = 0; i < TT_UR_DECODER_BLOCKS; i++) {
        int first = g->layer_count, ch = decoder_channels[i], skip = i < 4 ? features[3 - i] : -1;
        int skip_channels = skip >= 0 ? tt_graph_def(g, skip)->channels : 0;
        tt_conv_norm c1, c2;
        snprintf(conv, sizeof conv, "decoder.blocks.%d.conv1.0", i);
        snprintf(norm, sizeof norm, "decoder.blocks.%d.conv1.1", i);
        TT_TRY(tt_conv_norm_params(u, &c1, conv, norm, cin + skip_channels, ch, 3, 1, 1));
        snprintf(conv, sizeof conv, "decoder.blocks.%d.conv2.0", i);
        snprintf(norm, sizeof norm, "decoder.blocks.%d.conv2.1", i);
        TT_TRY(tt_conv_norm_params(u, &c2, conv, norm, ch, ch, 3, 1, 1));
        snprintf(conv, sizeof conv, "decoder.blocks.%d.up", i);
        const tt_tensor_def *below = tt_graph_def(g, x);
        int up = tt_graph_tensor(g, conv, cin, 2 * below->height, 2 * below->width, again);
        tt_graph_layer(g, TT_LAYER_UPSAMPLE, conv, x, -1, up);
        int recompute1 = ckpt && skip >= 0;
        int a1 = tt_conv_norm_layers(u, &c1, up, skip, -1,
                          (tt_conv_keeps){recompute1 ? TT_RECOMPUTE : TT_KEEP, again, 1, fd,
                                  fp16 && !recompute1});
        /* with checkpointing blocks 0-2's outputs are made again once, as
         * block 3's backward begins, and kept for their own; an output
         * below an upsampling stays fp32 (it is upsampled as it is) */
        int remade2 = ckpt && i < TT_UR_DECODER_BLOCKS - 2, below_up = i < TT_UR_DECODER_BLOCKS - 1;
        x = tt_conv_norm_layers(u, &c2, a1, -1, -1,
                     (tt_conv_keeps){remade2 ? TT_REMAKE : TT_KEEP, again, 1, fd,
                             fp16 && !remade2 && !below_up});
        tt_graph_group(g, first);
        cin = ch;
    }
    g->output = tt_graph_tensor(g, "logits", s->classes, u->model.height, u->model.width, TT_KEEP);
    TT_TRY(tt_conv_norm_params(u, &c, "segmentation_head.0", NULL, cin, s->classes, 3, 1, 1));
    tt_conv_norm_layers(u, &c, x, -1, g->output, (tt_conv_keeps){TT_KEEP, TT_KEEP, 0, 0, 0});
    return NULL;
}

tt_status tt_unet_resnet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity,
                                      int height, int width, uint64_t seed, tt_model **out)
{
    return tt_encoder_model_create(be, spec, 32, decoder, capacity, height, width, seed, out);
}

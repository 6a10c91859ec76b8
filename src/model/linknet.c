/*
 * Linknet (linknet.h) as a layer list run by the executor (exec.c): the
 * encoder's parameters and layers first (resnet_encoder.c), then the
 * decoder's in smp's state_dict order, and what the backward keeps:
 *  - in a block each convolution's output is kept for its norm (made again
 *    for the block's backward with checkpointing), each norm's output made
 *    again for the convolution that reads it;
 *  - the skip is added in place over the block's last norm output, and the
 *    sum kept for the next block (or the head).
 * With 16-bit storage a kept convolution output is stored in 16 bits and
 * read there by its norm.
 */
#include "model/linknet.h"

#include <stdio.h>

#include "core/status.h"
#include "model/conv_norm.h"
#include "model/encoder.h"

#define BLOCKS 5
#define PREFINAL 32

/* The transposed convolution of block i (4x4, stride 2, padding 1, with
 * bias) of mid channels, and its batch norm and ReLU; returns the norm's
 * output. */
static tt_status up_conv(tt_graph_model *gm, int i, int x, tt_conv_keeps k, int *out)
{
    tt_graph *g = &gm->graph;
    const tt_tensor_def *in = tt_graph_def(g, x);
    int mid = in->channels;
    char conv[64], norm[64];
    snprintf(conv, sizeof conv, "decoder.blocks.%d.block.1.0", i);
    snprintf(norm, sizeof norm, "decoder.blocks.%d.block.1.1", i);
    /* the parameters as a 1x1 convolution's (names, norm), the weight's
     * shape a transposed one's: (Cin, Cout, 4, 4), fan_in Cout 4 4 as
     * PyTorch's init computes it */
    tt_conv_norm c;
    TT_TRY(tt_conv_norm_param(gm, conv, "weight", 4, (int[4]){mid, mid, 4, 4}, TT_PARAM_WEIGHT,
                              mid * 16, &c.weight));
    TT_TRY(tt_conv_norm_param(gm, conv, "bias", 1, &mid, TT_PARAM_BIAS, mid * 16, &c.bias));
    int v[1] = {mid};
    TT_TRY(tt_conv_norm_param(gm, norm, "weight", 1, v, TT_PARAM_NORM_WEIGHT, 0, &c.bn_w));
    TT_TRY(tt_conv_norm_param(gm, norm, "bias", 1, v, TT_PARAM_NORM_BIAS, 0, &c.bn_b));
    TT_TRY(tt_conv_norm_param(gm, norm, "running_mean", 1, v, TT_PARAM_RUNNING_MEAN, 0, &c.bn_rm));
    TT_TRY(tt_conv_norm_param(gm, norm, "running_var", 1, v, TT_PARAM_RUNNING_VAR, 0, &c.bn_rv));
    char name[80];
    snprintf(name, sizeof name, "%s.out", conv);
    int y = tt_graph_tensor(g, name, mid, 2 * in->height, 2 * in->width, k.out);
    if (!g->failed && k.store16) g->tensors[y].storage = gm->model.spec.precision;
    tt_layer *l = tt_graph_layer(g, TT_LAYER_CONV_T, conv, x, -1, y);
    l->kernel = 4, l->stride = 2, l->pad = 1, l->weight = c.weight, l->bias = c.bias;
    snprintf(name, sizeof name, "%s.act", conv);
    *out = tt_graph_tensor(g, name, mid, 2 * in->height, 2 * in->width, k.act);
    tt_layer *n = tt_graph_layer(g, TT_LAYER_NORM, norm, y, -1, *out);
    n->relu = 1, n->frozen = k.frozen;
    n->bn_w = c.bn_w, n->bn_b = c.bn_b, n->bn_rm = c.bn_rm, n->bn_rv = c.bn_rv;
    if (!g->failed) g->tensors[y].grad_alias = *out;
    return NULL;
}

/* decoder.blocks.i over x to `cout` channels, + skip (-1: none). */
static tt_status block(tt_graph_model *gm, int i, int x, int skip, int cout, int *out)
{
    const tt_model_spec *s = &gm->model.spec;
    tt_graph *g = &gm->graph;
    int ckpt = s->checkpointing, fp16 = s->precision != TT_PRECISION_FP32;
    tt_conv_keeps k = {ckpt ? TT_RECOMPUTE : TT_KEEP, ckpt ? TT_RECOMPUTE : TT_REMAKE, 1,
                       s->freeze_decoder_bn, fp16 && !ckpt};
    int cin = tt_graph_def(g, x)->channels, mid = cin / 4, first = g->layer_count;
    char conv[64], norm[64];
    tt_conv_norm c0, c2;
    snprintf(conv, sizeof conv, "decoder.blocks.%d.block.0.0", i);
    snprintf(norm, sizeof norm, "decoder.blocks.%d.block.0.1", i);
    TT_TRY(tt_conv_norm_params(gm, &c0, conv, norm, cin, mid, 1, 1, 1));
    int a0 = tt_conv_norm_layers(gm, &c0, x, -1, -1, k);
    int a1;
    TT_TRY(up_conv(gm, i, a0, k, &a1));
    snprintf(conv, sizeof conv, "decoder.blocks.%d.block.2.0", i);
    snprintf(norm, sizeof norm, "decoder.blocks.%d.block.2.1", i);
    TT_TRY(tt_conv_norm_params(gm, &c2, conv, norm, mid, cout, 1, 1, 1));
    tt_conv_keeps last = k;
    last.act = TT_KEEP; /* the sum over it, or the block's output */
    int a2 = tt_conv_norm_layers(gm, &c2, a1, -1, -1, last);
    if (skip >= 0) {
        char name[40];
        snprintf(name, sizeof name, "decoder.blocks.%d", i);
        const tt_tensor_def *d = tt_graph_def(g, a2);
        int sum = tt_graph_tensor(g, name, d->channels, d->height, d->width, TT_KEEP);
        if (!g->failed) g->tensors[sum].alias = a2;
        tt_graph_layer(g, TT_LAYER_ADD, name, a2, skip, sum);
        a2 = sum;
    }
    tt_graph_group(g, first);
    *out = a2;
    return NULL;
}

static tt_status decoder(tt_graph_model *gm, const int f[5])
{
    const tt_model_spec *s = &gm->model.spec;
    tt_graph *g = &gm->graph;
    int x = f[4];
    for (int i = 0; i < BLOCKS; i++) {
        int skip = i < 4 ? f[3 - i] : -1;
        TT_TRY(block(gm, i, x, skip, skip >= 0 ? tt_graph_def(g, skip)->channels : PREFINAL, &x));
    }
    tt_conv_norm c;
    TT_TRY(tt_conv_norm_params(gm, &c, "segmentation_head.0", NULL, PREFINAL, s->classes, 1, 1, 1));
    g->output = tt_graph_tensor(g, "logits", s->classes, gm->model.height, gm->model.width, TT_KEEP);
    tt_conv_norm_layers(gm, &c, x, -1, g->output, (tt_conv_keeps){TT_KEEP, TT_KEEP, 0, 0, 0});
    return NULL;
}

tt_status tt_linknet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity,
                                  int height, int width, uint64_t seed, tt_model **out)
{
    return tt_encoder_model_create(be, spec, 32, decoder, capacity, height, width, seed, out);
}

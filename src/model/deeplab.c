/*
 * DeepLabV3+ (deeplab.h) as a layer list run by the executor (exec.c):
 * the encoder's parameters and layers first (resnet_encoder.c, output
 * stride 16), then the decoder's in smp's state_dict order, and what the
 * backward keeps:
 *  - a convolution's output read by its batch norm is kept (made again for
 *    its group's backward with checkpointing); a depthwise convolution's
 *    output, read by its pointwise one, is made again from its input;
 *  - a norm's output that only a concatenation, an upsampling or a
 *    broadcast reads is never read again, one that a convolution reads is
 *    made again;
 *  - the ASPP's concatenation and block2's input are kept for the
 *    convolutions that read them (made again with checkpointing); dropout
 *    is written over the projection's output, which is kept.
 * With 16-bit storage a kept convolution output is stored in 16 bits and
 * read there by its norm.
 */
#include "model/deeplab.h"

#include <stdio.h>

#include "core/status.h"
#include "model/conv_norm.h"
#include "model/encoder.h"

#define CHANNELS 256
#define LOW 48
#define DROPOUT 0.5f

static const int rates[3] = {12, 24, 36};

/* How the backward has what the builder adds (the model's settings). */
typedef struct keeps {
    tt_conv_keeps norm;       /* a convolution with its norm (the output read again) */
    tt_keep cat;              /* a concatenation a convolution reads */
    tt_keep again;            /* a norm's output a convolution reads */
} keeps;

static int tensor_like(tt_graph *g, const char *name, int like, int channels, int factor, tt_keep k)
{
    const tt_tensor_def *d = tt_graph_def(g, like);
    return tt_graph_tensor(g, name, channels, factor * d->height, factor * d->width, k);
}

/* A convolution c and its norm as one group; the norm's output kept as
 * `act` says. */
static int conv_norm(tt_graph_model *gm, const tt_conv_norm *c, int in0, int in1, tt_conv_keeps k,
                     tt_keep act)
{
    int first = gm->graph.layer_count;
    k.act = act;
    int out = tt_conv_norm_layers(gm, c, in0, in1, -1, k);
    tt_graph_group(&gm->graph, first);
    return out;
}

/* smp's SeparableConv2d then a batch norm and ReLU: depthwise `dw` (3x3,
 * dilated by `rate`), pointwise `pw` to cout, norm `norm`. */
static tt_status separable(tt_graph_model *gm, const char *dw, const char *pw, const char *norm,
                           int x, int rate, int cout, const keeps *k, tt_keep act, int *out)
{
    tt_graph *g = &gm->graph;
    int cin = tt_graph_def(g, x)->channels;
    tt_conv_norm d, p;
    TT_TRY(tt_conv_plain_params(gm, &d, dw, cin, cin, 3, cin));
    d.dilation = rate;
    TT_TRY(tt_conv_norm_params(gm, &p, pw, norm, cin, cout, 1, 1, 1));
    int first = g->layer_count;
    int y = tt_conv_norm_layers(gm, &d, x, -1, -1, (tt_conv_keeps){TT_REMAKE, TT_REMAKE, 0, 0, 0});
    tt_conv_keeps kn = k->norm;
    kn.act = act;
    *out = tt_conv_norm_layers(gm, &p, y, -1, -1, kn);
    tt_graph_group(g, first);
    return NULL;
}

static int concat(tt_graph *g, const char *name, int a, int b, tt_keep keep)
{
    int out = tensor_like(g, name, a, tt_graph_def(g, a)->channels + tt_graph_def(g, b)->channels, 1, keep);
    tt_graph_layer(g, TT_LAYER_CONCAT, name, a, b, out);
    return out;
}

static int bilinear(tt_graph *g, const char *name, int x, int factor, int out, tt_keep keep)
{
    if (out < 0) out = tensor_like(g, name, x, tt_graph_def(g, x)->channels, factor, keep);
    tt_layer *l = tt_graph_layer(g, TT_LAYER_UPSAMPLE, name, x, -1, out);
    l->bilinear = 1, l->factor = factor;
    return out;
}

/* decoder.aspp.0.convs.4: the plane's mean, 1x1 conv, norm, ReLU, over
 * every pixel of x's plane again. */
static tt_status image_pooling(tt_graph_model *gm, int x, const keeps *k, int *out)
{
    tt_graph *g = &gm->graph;
    tt_conv_norm c;
    TT_TRY(tt_conv_norm_params(gm, &c, "decoder.aspp.0.convs.4.1", "decoder.aspp.0.convs.4.2",
                               tt_graph_def(g, x)->channels, CHANNELS, 1, 1, 1));
    int mean = tt_graph_tensor(g, "decoder.aspp.0.convs.4.0", tt_graph_def(g, x)->channels, 1, 1, TT_KEEP);
    tt_graph_layer(g, TT_LAYER_MEAN, "decoder.aspp.0.convs.4.0", x, -1, mean);
    int pooled = conv_norm(gm, &c, mean, -1, k->norm, TT_REMAKE);
    *out = tensor_like(g, "decoder.aspp.0.convs.4.up", x, CHANNELS, 1, k->again);
    tt_graph_layer(g, TT_LAYER_BROADCAST, "decoder.aspp.0.convs.4.up", pooled, -1, *out);
    return NULL;
}

static tt_status aspp(tt_graph_model *gm, int x, const keeps *k, int *out)
{
    tt_graph *g = &gm->graph;
    int branch[4];
    tt_conv_norm c;
    TT_TRY(tt_conv_norm_params(gm, &c, "decoder.aspp.0.convs.0.0", "decoder.aspp.0.convs.0.1",
                               tt_graph_def(g, x)->channels, CHANNELS, 1, 1, 1));
    branch[0] = conv_norm(gm, &c, x, -1, k->norm, TT_REMAKE);
    for (int i = 1; i <= 3; i++) {
        char dw[48], pw[48], norm[48];
        snprintf(dw, sizeof dw, "decoder.aspp.0.convs.%d.0.0", i);
        snprintf(pw, sizeof pw, "decoder.aspp.0.convs.%d.0.1", i);
        snprintf(norm, sizeof norm, "decoder.aspp.0.convs.%d.1", i);
        TT_TRY(separable(gm, dw, pw, norm, x, rates[i - 1], CHANNELS, k, TT_REMAKE, &branch[i]));
    }
    int pooled;
    TT_TRY(image_pooling(gm, x, k, &pooled));
    /* [0 | 1 | 2 | 3] concatenated, the pooling's branch the projection's
     * second input (its weight split, no copy of it) */
    int c01 = concat(g, "decoder.aspp.0.cat.1", branch[0], branch[1], TT_REMAKE);
    int c012 = concat(g, "decoder.aspp.0.cat.2", c01, branch[2], TT_REMAKE);
    int c0123 = concat(g, "decoder.aspp.0.cat.3", c012, branch[3], k->cat);
    TT_TRY(tt_conv_norm_params(gm, &c, "decoder.aspp.0.project.0", "decoder.aspp.0.project.1",
                               5 * CHANNELS, CHANNELS, 1, 1, 1));
    int projected = conv_norm(gm, &c, c0123, pooled, k->norm, TT_KEEP);
    int dropped = tensor_like(g, "decoder.aspp.0.project.3", projected, CHANNELS, 1, TT_KEEP);
    if (!g->failed) g->tensors[dropped].alias = projected;
    tt_layer *d = tt_graph_layer(g, TT_LAYER_DROPOUT, "decoder.aspp.0.project.3", projected, -1,
                                 dropped);
    d->p = DROPOUT, d->salt = 0;
    *out = dropped;
    return NULL;
}

static tt_status decoder(tt_graph_model *gm, const int f[5])
{
    const tt_model_spec *s = &gm->model.spec;
    tt_graph *g = &gm->graph;
    int ckpt = s->checkpointing, fp16 = s->precision != TT_PRECISION_FP32;
    tt_keep again = ckpt ? TT_RECOMPUTE : TT_REMAKE;
    keeps k = {{ckpt ? TT_RECOMPUTE : TT_KEEP, again, 1, s->freeze_decoder_bn, fp16 && !ckpt},
               ckpt ? TT_REMAKE : TT_KEEP, again};
    int x;
    TT_TRY(aspp(gm, f[4], &k, &x));
    TT_TRY(separable(gm, "decoder.aspp.1.0", "decoder.aspp.1.1", "decoder.aspp.2", x, 1, CHANNELS,
                     &k, TT_REMAKE, &x));
    int up = bilinear(g, "decoder.up", x, 4, -1, TT_REMAKE);
    tt_conv_norm c;
    TT_TRY(tt_conv_norm_params(gm, &c, "decoder.block1.0", "decoder.block1.1",
                               tt_graph_def(g, f[1])->channels, LOW, 1, 1, 1));
    int low = conv_norm(gm, &c, f[1], -1, k.norm, TT_REMAKE);
    int cat = concat(g, "decoder.cat", up, low, k.cat);
    TT_TRY(separable(gm, "decoder.block2.0.0", "decoder.block2.0.1", "decoder.block2.1", cat, 1,
                     CHANNELS, &k, again, &x));
    TT_TRY(tt_conv_norm_params(gm, &c, "segmentation_head.0", NULL, CHANNELS, s->classes, 1, 1, 1));
    int head = tt_conv_norm_layers(gm, &c, x, -1, -1, (tt_conv_keeps){TT_REMAKE, TT_REMAKE, 0, 0, 0});
    g->output = tt_graph_tensor(g, "logits", s->classes, gm->model.height, gm->model.width, TT_KEEP);
    bilinear(g, "segmentation_head.1", head, 4, g->output, TT_KEEP);
    return NULL;
}

tt_status tt_deeplab_model_create(tt_backend *be, const tt_model_spec *spec, int capacity,
                                  int height, int width, uint64_t seed, tt_model **out)
{
    return tt_encoder_model_create(be, spec, 16, decoder, capacity, height, width, seed, out);
}

/*
 * The ResNet encoder's layers (resnet_encoder.h) and what the backward
 * keeps of them:
 *  - a norm's output that only the next convolution reads is made again
 *    from the convolution's output and the norm's statistics; so is a
 *    block's output but its layer's last (F1..F4);
 *  - the stem's convolution output is made again from the image for each
 *    block that reads it (three channels in: about 1% of a step's work
 *    twice, for an F0-sized tensor that would live through the step).
 * With checkpointing a block keeps only its norms' statistics (and
 * F1..F4): its convolutions run again for its backward, its layer's other
 * outputs are made again from the layer's input; the pool and its argmax
 * too.  With 16-bit storage a kept convolution output is stored in 16
 * bits and read there by its norm.
 */
#include "model/resnet_encoder.h"

#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "model/conv_norm.h"

static const int layer_channels[4] = {64, 128, 256, 512};

static const tt_resnet_encoder encoders[] = {
    {"resnet18", {2, 2, 2, 2}, 0, 1, 64},
    {"resnet34", {3, 4, 6, 3}, 0, 1, 64},
    {"resnet50", {3, 4, 6, 3}, 1, 1, 64},
    {"resnext50_32x4d", {3, 4, 6, 3}, 1, 32, 4},
};

const tt_resnet_encoder *tt_resnet_encoder_of(const char *kind)
{
    const char *dash = strchr(kind, '-');
    const char *name = dash ? dash + 1 : kind;
    for (size_t i = 0; i < sizeof encoders / sizeof encoders[0]; i++)
        if (strcmp(name, encoders[i].name) == 0) return &encoders[i];
    return NULL;
}

void tt_resnet_encoder_names(char *buf, size_t size)
{
    for (size_t i = 0; i < sizeof encoders / sizeof encoders[0]; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s", *buf ? ", " : "", encoders[i].name);
    }
}

/* One block: its name ("encoder.layer2.0"), its channels in, planes and
 * out, its stride, whether it has a downsample, and how the backward has
 * its convolutions and norms. */
typedef struct encoder_block {
    char name[40];
    int cin, planes, cout, stride, down;
    int dilation;             /* every convolution's (layer4 at output stride 16: 2) */
    int feature;              /* its layer's last: its output is read by the decoder */
    tt_conv_keeps k;
} encoder_block;

/* A convolution of the block and its norm: "<block>.conv<n>" and
 * "<block>.bn<n>", or the downsample's ".0" and ".1" (n 0). */
static tt_status block_conv(tt_graph_model *gm, const encoder_block *b, tt_conv_norm *c, int n,
                            int cin, int cout, int k, int s, int groups)
{
    char conv[64], norm[64];
    if (n) {
        snprintf(conv, sizeof conv, "%s.conv%d", b->name, n);
        snprintf(norm, sizeof norm, "%s.bn%d", b->name, n);
    } else {
        snprintf(conv, sizeof conv, "%s.downsample.0", b->name);
        snprintf(norm, sizeof norm, "%s.downsample.1", b->name);
    }
    TT_TRY(tt_conv_norm_params(gm, c, conv, norm, cin, cout, k, s, groups));
    c->dilation = b->dilation;
    return NULL;
}

/* relu(y + identity) over y, the main path's last norm output. */
static int residual(tt_graph_model *gm, const encoder_block *b, int y, int identity)
{
    tt_graph *g = &gm->graph;
    int out = tt_graph_tensor(g, b->name, b->cout, tt_graph_def(g, y)->height, tt_graph_def(g, y)->width,
                              b->feature ? TT_KEEP : TT_REMAKE);
    if (!g->failed) g->tensors[out].alias = y; /* the sum over it */
    tt_graph_layer(g, TT_LAYER_ADD, b->name, y, identity, out)->relu = 1;
    return out;
}

/* torchvision's BasicBlock: relu(bn2(conv2(relu(bn1(conv1 x)))) + identity).
 * The downsample first: the input's gradient then takes conv1's share
 * before the downsample's. */
static tt_status basic_block(tt_graph_model *gm, const encoder_block *b, int x, int *out)
{
    tt_conv_norm c1, c2, cd;
    TT_TRY(block_conv(gm, b, &c1, 1, b->cin, b->cout, 3, b->stride, 1));
    TT_TRY(block_conv(gm, b, &c2, 2, b->cout, b->cout, 3, 1, 1));
    if (b->down) TT_TRY(block_conv(gm, b, &cd, 0, b->cin, b->cout, 1, b->stride, 1));
    tt_conv_keeps plain = b->k, down = b->k, last = b->k;
    down.act = TT_REMAKE, down.relu = 0, last.act = TT_KEEP, last.relu = 0;
    int identity = b->down ? tt_conv_norm_layers(gm, &cd, x, -1, -1, down) : x;
    int a1 = tt_conv_norm_layers(gm, &c1, x, -1, -1, plain);
    *out = residual(gm, b, tt_conv_norm_layers(gm, &c2, a1, -1, -1, last), identity);
    return NULL;
}

/* torchvision's Bottleneck: relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1
 * x)))))) + identity), the 3x3 conv2 strided and grouped (ResNeXt); the
 * downsample after the main path, as torchvision runs it. */
static tt_status bottleneck_block(tt_graph_model *gm, const tt_resnet_encoder *e,
                                  const encoder_block *b, int x, int *out)
{
    int width = b->planes * e->base_width / 64 * e->groups;
    tt_conv_norm c1, c2, c3, cd;
    TT_TRY(block_conv(gm, b, &c1, 1, b->cin, width, 1, 1, 1));
    TT_TRY(block_conv(gm, b, &c2, 2, width, width, 3, b->stride, e->groups));
    TT_TRY(block_conv(gm, b, &c3, 3, width, b->cout, 1, 1, 1));
    if (b->down) TT_TRY(block_conv(gm, b, &cd, 0, b->cin, b->cout, 1, b->stride, 1));
    tt_conv_keeps plain = b->k, down = b->k, last = b->k;
    down.act = TT_REMAKE, down.relu = 0, last.act = TT_KEEP, last.relu = 0;
    int a1 = tt_conv_norm_layers(gm, &c1, x, -1, -1, plain);
    int a2 = tt_conv_norm_layers(gm, &c2, a1, -1, -1, plain);
    int a3 = tt_conv_norm_layers(gm, &c3, a2, -1, -1, last);
    int identity = b->down ? tt_conv_norm_layers(gm, &cd, x, -1, -1, down) : x;
    *out = residual(gm, b, a3, identity);
    return NULL;
}

tt_status tt_resnet_encoder_build(tt_graph_model *gm, const tt_resnet_encoder *e, int output_stride,
                                  int features[5])
{
    const tt_model_spec *s = &gm->model.spec;
    tt_graph *g = &gm->graph;
    int ckpt = s->checkpointing, fp16 = s->precision != TT_PRECISION_FP32;
    tt_keep again = ckpt ? TT_RECOMPUTE : TT_REMAKE; /* a norm's output read again */
    tt_keep conv_out = ckpt ? TT_RECOMPUTE : TT_KEEP;
    int fe = s->freeze_encoder_bn;
    tt_conv_norm c;
    TT_TRY(tt_conv_norm_params(gm, &c, "encoder.conv1", "encoder.bn1", s->in_channels, 64, 7, 2, 1));
    int f0 = tt_conv_norm_layers(gm, &c, g->input, -1, -1,
                                 (tt_conv_keeps){TT_RECOMPUTE, again, 1, fe, 0});
    int ph = (tt_graph_def(g, f0)->height - 1) / 2 + 1, pw = (tt_graph_def(g, f0)->width - 1) / 2 + 1;
    int x = tt_graph_tensor(g, "encoder.maxpool", 64, ph, pw, ckpt ? TT_REMAKE : TT_KEEP);
    tt_layer *pool = tt_graph_layer(g, TT_LAYER_MAX_POOL, "encoder.maxpool", f0, -1, x);
    pool->kernel = 3, pool->stride = 2, pool->pad = 1, pool->keeps_argmax = 1;
    features[0] = f0;
    int cin = 64, expansion = e->bottleneck ? 4 : 1;
    for (int l = 0; l < 4; l++) {
        for (int k = 0; k < e->blocks[l]; k++) {
            int dilated = l == 3 && output_stride == 16; /* smp's make_dilated */
            int stride = k == 0 && l > 0 && !dilated ? 2 : 1, planes = layer_channels[l];
            int cout = planes * expansion, first = g->layer_count, store = fp16 && !ckpt;
            encoder_block b = {{0}, cin, planes, cout, stride, stride != 1 || cin != cout,
                               dilated ? 2 : 1, k == e->blocks[l] - 1,
                               {conv_out, again, 1, fe, store}};
            snprintf(b.name, sizeof b.name, "encoder.layer%d.%d", l + 1, k);
            int y = -1;
            TT_TRY(e->bottleneck ? bottleneck_block(gm, e, &b, x, &y) : basic_block(gm, &b, x, &y));
            tt_graph_group(g, first);
            x = y, cin = cout;
        }
        features[l + 1] = x;
    }
    return g->failed ? tt_error_new(TT_ERR_OUT_OF_MEMORY, "model graph: out of host memory") : NULL;
}

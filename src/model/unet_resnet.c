/*
 * The UNet over a ResNet encoder (unet_resnet.h) as a layer list run by
 * the executor (exec.c): its parameters under smp's state_dict names in
 * state_dict order (the encoder's first, so they are one range of the
 * arena), its layers and what the backward keeps of each tensor.
 *
 * What the backward keeps (graph.h's TT_KEEP, TT_REMAKE, TT_RECOMPUTE):
 *  - a norm's output that only the next convolution reads (inside a block,
 *    the decoder's) is made again from the convolution's output and the
 *    norm's statistics; so is an encoder block's output but its layer's
 *    last (F1..F4), and the upsampled input of a decoder block (made from
 *    the convolution output below, upsampled, then normed in place);
 *  - the stem's convolution output is made again from the image for each
 *    block that reads it (three channels in: about 1% of a step's work
 *    twice, for an F0-sized tensor that would live through the step).
 * With checkpointing:
 *  - an encoder block keeps only its norms' statistics (and F1..F4): its
 *    convolutions run again for its backward, its layer's other outputs
 *    are made again from the layer's input; the pool and its argmax too;
 *  - decoder blocks 0-3 run conv1 again for their backward; blocks 0-2's
 *    outputs are made again once, as block 3's backward begins;
 *  - the norms' outputs are made again for each reader.
 * With 16-bit storage a kept convolution output is stored in 16 bits and
 * read there by its norm (not the decoder's below an upsampling, which
 * upsamples the fp32 output).
 */
#include "model/unet_resnet.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/graph_model.h"

static const int decoder_channels[TT_UR_DECODER_BLOCKS] = {256, 128, 64, 32, 16};
static const int layer_channels[4] = {64, 128, 256, 512};

/* torchvision's encoders: blocks per layer; bottleneck blocks (expansion
 * 4) or basic ones; a bottleneck's 3x3 convolution in `groups` groups of
 * base_width * planes / 64 channels each. */
typedef struct encoder_def {
    const char *kind;
    int blocks[4], bottleneck, groups, base_width;
} encoder_def;

static const encoder_def encoders[] = {
    {"unet-resnet18", {2, 2, 2, 2}, 0, 1, 64},
    {"unet-resnet34", {3, 4, 6, 3}, 0, 1, 64},
    {"unet-resnet50", {3, 4, 6, 3}, 1, 1, 64},
    {"unet-resnext50_32x4d", {3, 4, 6, 3}, 1, 32, 4},
};

typedef tt_graph_model tt_unet_resnet;

/* ---- parameters ------------------------------------------------------------ */

static tt_status add_param(tt_unet_resnet *u, const char *prefix, const char *suffix, int ndim,
                           const int *shape, tt_param_role role, int fan_in, int *index)
{
    char name[96];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    *index = u->params.count;
    return tt_params_add(&u->params, name, ndim, shape, role, fan_in);
}

/* A convolution and the batch norm after it, as its parameters say. */
typedef struct conv_def {
    char name[48], norm[48];  /* the norm's "" without one (the head: a bias instead) */
    int cin, cout, kernel, stride, groups;
    int weight, bias, bn_w, bn_b, bn_rm, bn_rv;
} conv_def;

/* The parameters of conv `conv` (k x k, stride s, padding k / 2, in
 * `groups` groups) of cin -> cout channels and of its batch norm `norm`
 * (NULL: none, and a bias). */
static tt_status add_grouped_params(tt_unet_resnet *u, conv_def *c, const char *conv,
                                    const char *norm, int cin, int cout, int k, int s, int groups)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", conv);
    snprintf(c->norm, sizeof c->norm, "%s", norm ? norm : "");
    c->cin = cin, c->cout = cout, c->kernel = k, c->stride = s, c->groups = groups;
    c->bias = c->bn_w = c->bn_b = c->bn_rm = c->bn_rv = -1;
    int fan_in = cin / groups * k * k, wshape[4] = {cout, cin / groups, k, k}, vec[1] = {cout};
    TT_TRY(add_param(u, conv, "weight", 4, wshape, TT_PARAM_WEIGHT, fan_in, &c->weight));
    if (!norm) return add_param(u, conv, "bias", 1, vec, TT_PARAM_BIAS, fan_in, &c->bias);
    TT_TRY(add_param(u, norm, "weight", 1, vec, TT_PARAM_NORM_WEIGHT, 0, &c->bn_w));
    TT_TRY(add_param(u, norm, "bias", 1, vec, TT_PARAM_NORM_BIAS, 0, &c->bn_b));
    TT_TRY(add_param(u, norm, "running_mean", 1, vec, TT_PARAM_RUNNING_MEAN, 0, &c->bn_rm));
    return add_param(u, norm, "running_var", 1, vec, TT_PARAM_RUNNING_VAR, 0, &c->bn_rv);
}

static tt_status add_conv_params(tt_unet_resnet *u, conv_def *c, const char *conv,
                                 const char *norm, int cin, int cout, int k, int s)
{
    return add_grouped_params(u, c, conv, norm, cin, cout, k, s, 1);
}

/* ---- layers ---------------------------------------------------------------- */

/* How the backward has a convolution's output and its norm's. */
typedef struct keeps {
    tt_keep out, act;
    int relu, frozen;
    int store16;              /* the output kept in 16 bits */
} keeps;

/* conv c over in0 (and in1: a decoder's skip) into a new tensor (or
 * `out`, the logits), and its norm; returns the tensor the next layer
 * reads (the norm's output, or the convolution's without one). */
static int add_conv(tt_unet_resnet *u, const conv_def *c, int in0, int in1, int out, keeps k)
{
    tt_graph *g = &u->graph;
    const tt_tensor_def *in = &g->tensors[in0];
    int oh = (in->height + 2 * (c->kernel / 2) - c->kernel) / c->stride + 1;
    int ow = (in->width + 2 * (c->kernel / 2) - c->kernel) / c->stride + 1;
    char name[64];
    if (out < 0) {
        snprintf(name, sizeof name, "%s.out", c->name);
        out = tt_graph_tensor(g, name, c->cout, oh, ow, k.out);
    }
    if (!g->failed && k.store16) g->tensors[out].storage = u->model.spec.precision;
    tt_layer *l = tt_graph_layer(g, TT_LAYER_CONV, c->name, in0, in1, out);
    l->kernel = c->kernel, l->stride = c->stride, l->weight = c->weight, l->bias = c->bias;
    l->groups = c->groups > 1 ? c->groups : 0;
    l->no_input_grad = in0 == g->input;
    if (c->bn_w < 0) return out;
    snprintf(name, sizeof name, "%s.act", c->name);
    int act = tt_graph_tensor(g, name, c->cout, oh, ow, k.act);
    tt_layer *n = tt_graph_layer(g, TT_LAYER_NORM, c->norm, out, -1, act);
    n->relu = k.relu, n->frozen = k.frozen;
    n->bn_w = c->bn_w, n->bn_b = c->bn_b, n->bn_rm = c->bn_rm, n->bn_rv = c->bn_rv;
    if (!g->failed) g->tensors[out].grad_alias = act; /* its backward runs in place */
    return act;
}

/* Every parameter in state_dict order and every layer in the order whose
 * reverse adds each gradient as the model's PyTorch twin sums it. */
/* One encoder block: its name ("encoder.layer2.0"), its channels in,
 * planes and out, its stride, whether it has a downsample, and how the
 * backward has its convolutions and norms. */
typedef struct encoder_block {
    char name[40];
    int cin, planes, cout, stride, down;
    int feature;              /* its layer's last: its output is read by a decoder block */
    keeps k;
} encoder_block;

/* A convolution of the block and its norm: "<block>.conv<n>" and
 * "<block>.bn<n>", or the downsample's ".0" and ".1" (n 0). */
static tt_status block_conv(tt_unet_resnet *u, const encoder_block *b, conv_def *c, int n,
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
    return add_grouped_params(u, c, conv, norm, cin, cout, k, s, groups);
}

/* relu(y + identity) over y, the main path's last norm output. */
static int residual(tt_unet_resnet *u, const encoder_block *b, int y, int identity)
{
    tt_graph *g = &u->graph;
    int out = tt_graph_tensor(g, b->name, b->cout, g->tensors[y].height, g->tensors[y].width,
                              b->feature ? TT_KEEP : TT_REMAKE);
    if (!g->failed) g->tensors[out].alias = y; /* the sum over it */
    tt_graph_layer(g, TT_LAYER_ADD, b->name, y, identity, out)->relu = 1;
    return out;
}

/* torchvision's BasicBlock: relu(bn2(conv2(relu(bn1(conv1 x)))) + identity).
 * The downsample first: the input's gradient then takes conv1's share
 * before the downsample's. */
static tt_status basic_block(tt_unet_resnet *u, const encoder_block *b, int x, int *out)
{
    conv_def c1, c2, cd;
    TT_TRY(block_conv(u, b, &c1, 1, b->cin, b->cout, 3, b->stride, 1));
    TT_TRY(block_conv(u, b, &c2, 2, b->cout, b->cout, 3, 1, 1));
    if (b->down) TT_TRY(block_conv(u, b, &cd, 0, b->cin, b->cout, 1, b->stride, 1));
    keeps plain = b->k, down = b->k, last = b->k;
    down.act = TT_REMAKE, down.relu = 0, last.act = TT_KEEP, last.relu = 0;
    int identity = b->down ? add_conv(u, &cd, x, -1, -1, down) : x;
    int a1 = add_conv(u, &c1, x, -1, -1, plain);
    *out = residual(u, b, add_conv(u, &c2, a1, -1, -1, last), identity);
    return NULL;
}

/* torchvision's Bottleneck: relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1
 * x)))))) + identity), the 3x3 conv2 strided and grouped (ResNeXt); the
 * downsample after the main path, as torchvision runs it. */
static tt_status bottleneck_block(tt_unet_resnet *u, const encoder_def *e, const encoder_block *b,
                                  int x, int *out)
{
    int width = b->planes * e->base_width / 64 * e->groups;
    conv_def c1, c2, c3, cd;
    TT_TRY(block_conv(u, b, &c1, 1, b->cin, width, 1, 1, 1));
    TT_TRY(block_conv(u, b, &c2, 2, width, width, 3, b->stride, e->groups));
    TT_TRY(block_conv(u, b, &c3, 3, width, b->cout, 1, 1, 1));
    if (b->down) TT_TRY(block_conv(u, b, &cd, 0, b->cin, b->cout, 1, b->stride, 1));
    keeps plain = b->k, down = b->k, last = b->k;
    down.act = TT_REMAKE, down.relu = 0, last.act = TT_KEEP, last.relu = 0;
    int a1 = add_conv(u, &c1, x, -1, -1, plain);
    int a2 = add_conv(u, &c2, a1, -1, -1, plain);
    int a3 = add_conv(u, &c3, a2, -1, -1, last);
    int identity = b->down ? add_conv(u, &cd, x, -1, -1, down) : x;
    *out = residual(u, b, a3, identity);
    return NULL;
}

static tt_status build(tt_unet_resnet *u, const encoder_def *e)
{
    const tt_model_spec *s = &u->model.spec;
    tt_graph *g = &u->graph;
    int ckpt = s->checkpointing, fp16 = s->precision != TT_PRECISION_FP32;
    tt_keep again = ckpt ? TT_RECOMPUTE : TT_REMAKE; /* a norm's output read again */
    tt_keep conv_out = ckpt ? TT_RECOMPUTE : TT_KEEP;
    int fe = s->freeze_encoder_bn, fd = s->freeze_decoder_bn;
    char conv[64], norm[64];
    g->input = tt_graph_tensor(g, "input", s->in_channels, u->model.height, u->model.width,
                               TT_KEEP);
    conv_def c;
    TT_TRY(add_conv_params(u, &c, "encoder.conv1", "encoder.bn1", s->in_channels, 64, 7, 2));
    int f0 = add_conv(u, &c, g->input, -1, -1, (keeps){TT_RECOMPUTE, again, 1, fe, 0});
    int ph = (g->tensors[f0].height - 1) / 2 + 1, pw = (g->tensors[f0].width - 1) / 2 + 1;
    int x = tt_graph_tensor(g, "encoder.maxpool", 64, ph, pw, ckpt ? TT_REMAKE : TT_KEEP);
    tt_layer *pool = tt_graph_layer(g, TT_LAYER_MAX_POOL, "encoder.maxpool", f0, -1, x);
    pool->kernel = 3, pool->stride = 2, pool->pad = 1, pool->keeps_argmax = 1;
    int features[5] = {f0, 0, 0, 0, 0}, cin = 64, expansion = e->bottleneck ? 4 : 1;
    for (int l = 0; l < 4; l++) {
        for (int k = 0; k < e->blocks[l]; k++) {
            int stride = k == 0 && l > 0 ? 2 : 1, planes = layer_channels[l];
            int cout = planes * expansion, first = g->layer_count, store = fp16 && !ckpt;
            encoder_block b = {{0}, cin, planes, cout, stride, stride != 1 || cin != cout,
                               k == e->blocks[l] - 1, {conv_out, again, 1, fe, store}};
            snprintf(b.name, sizeof b.name, "encoder.layer%d.%d", l + 1, k);
            int y = -1;
            TT_TRY(e->bottleneck ? bottleneck_block(u, e, &b, x, &y) : basic_block(u, &b, x, &y));
            tt_graph_group(g, first);
            x = y, cin = cout;
        }
        features[l + 1] = x;
    }
    for (int i = 0; i < TT_UR_DECODER_BLOCKS; i++) {
        int first = g->layer_count, ch = decoder_channels[i], skip = i < 4 ? features[3 - i] : -1;
        int skip_channels = skip >= 0 ? g->tensors[skip].channels : 0;
        conv_def c1, c2;
        snprintf(conv, sizeof conv, "decoder.blocks.%d.conv1.0", i);
        snprintf(norm, sizeof norm, "decoder.blocks.%d.conv1.1", i);
        TT_TRY(add_conv_params(u, &c1, conv, norm, cin + skip_channels, ch, 3, 1));
        snprintf(conv, sizeof conv, "decoder.blocks.%d.conv2.0", i);
        snprintf(norm, sizeof norm, "decoder.blocks.%d.conv2.1", i);
        TT_TRY(add_conv_params(u, &c2, conv, norm, ch, ch, 3, 1));
        snprintf(conv, sizeof conv, "decoder.blocks.%d.up", i);
        const tt_tensor_def *below = &g->tensors[x];
        int up = tt_graph_tensor(g, conv, cin, 2 * below->height, 2 * below->width, again);
        tt_graph_layer(g, TT_LAYER_UPSAMPLE, conv, x, -1, up);
        int recompute1 = ckpt && skip >= 0;
        int a1 = add_conv(u, &c1, up, skip, -1,
                          (keeps){recompute1 ? TT_RECOMPUTE : TT_KEEP, again, 1, fd,
                                  fp16 && !recompute1});
        /* with checkpointing blocks 0-2's outputs are made again once, as
         * block 3's backward begins, and kept for their own; an output
         * below an upsampling stays fp32 (it is upsampled as it is) */
        int remade2 = ckpt && i < TT_UR_DECODER_BLOCKS - 2, below_up = i < TT_UR_DECODER_BLOCKS - 1;
        x = add_conv(u, &c2, a1, -1, -1,
                     (keeps){remade2 ? TT_REMAKE : TT_KEEP, again, 1, fd,
                             fp16 && !remade2 && !below_up});
        tt_graph_group(g, first);
        cin = ch;
    }
    g->output = tt_graph_tensor(g, "logits", s->classes, u->model.height, u->model.width, TT_KEEP);
    TT_TRY(add_conv_params(u, &c, "segmentation_head.0", NULL, cin, s->classes, 3, 1));
    add_conv(u, &c, x, -1, g->output, (keeps){TT_KEEP, TT_KEEP, 0, 0, 0});
    return tt_graph_finish(g);
}

static tt_status check(const tt_model_spec *spec, int capacity, int height, int width)
{
    if (spec->classes < 1 || spec->in_channels < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %d classes, %d input channels", spec->kind,
                            spec->classes, spec->in_channels);
    const int unit = TT_UR_TILE_UNIT;
    if (capacity < 1 || height < unit || width < unit || height % unit || width % unit)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s needs a tile whose height and width are multiples of %d (got "
                            "%dx%d) and a micro-batch >= 1 (got %d); try --tile %dx%d",
                            spec->kind, unit, height, width, capacity,
                            (height + unit - 1) / unit * unit, (width + unit - 1) / unit * unit);
    return NULL;
}

tt_status tt_unet_resnet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity,
                                      int height, int width, uint64_t seed, tt_model **out)
{
    *out = NULL;
    TT_TRY(check(spec, capacity, height, width));
    tt_graph_model *u = NULL;
    TT_TRY(tt_graph_model_new(sizeof *u, be, spec, capacity, height, width, &u));
    tt_status status = NULL;
    const encoder_def *e = &encoders[0];
    for (size_t i = 0; i < sizeof encoders / sizeof encoders[0]; i++)
        if (strcmp(spec->kind, encoders[i].kind) == 0) e = &encoders[i];
    TT_CHECK(build(u, e));
    TT_CHECK(tt_graph_model_bind(u, seed));
    TT_CHECK(tt_graph_model_place(u, 0, TT_PRECISION_FP32));
    *out = &u->model;
cleanup:
    if (status) u->model.ops->destroy(&u->model);
    return status;
}

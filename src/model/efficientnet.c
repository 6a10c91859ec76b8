/*
 * The EfficientNet encoder's layers (efficientnet.h) and what the backward
 * keeps of them:
 *  - a convolution's output is kept for its batch norm (made again for its
 *    block's backward with checkpointing); the norm's output and its SiLU
 *    are made again for the readers that need them (the SiLU's backward,
 *    the next convolution, the excitation's scale);
 *  - the squeeze-and-excitation's small tensors (a value a channel) are
 *    kept, the scaled plane made again from the SiLU's output;
 *  - a block's output is kept (the next block's first convolution reads
 *    it, and the decoders the features).
 * With 16-bit storage a kept convolution output is stored in 16 bits and
 * read there by its norm.
 */
#include "model/efficientnet.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "model/conv_norm.h"

static const tt_efficientnet nets[] = {
    {"efficientnet-b0", 1.0, 1.0}, {"efficientnet-b1", 1.0, 1.1}, {"efficientnet-b2", 1.1, 1.2},
    {"efficientnet-b3", 1.2, 1.4}, {"efficientnet-b4", 1.4, 1.8},
};

/* timm's efficientnet arch_def: a stage of `repeats` blocks (depthwise-
 * separable, or inverted residual expanding `expand` times), its kernel,
 * its first block's stride and its output channels at width 1. */
typedef struct stage_def {
    int separable, repeats, kernel, stride, expand, out;
} stage_def;

static const stage_def arch[7] = {
    {1, 1, 3, 1, 1, 16},  {0, 2, 3, 2, 6, 24},  {0, 2, 5, 2, 6, 40}, {0, 3, 3, 2, 6, 80},
    {0, 3, 5, 1, 6, 112}, {0, 4, 5, 2, 6, 192}, {0, 1, 3, 1, 6, 320},
};

const tt_efficientnet *tt_efficientnet_of(const char *kind)
{
    const char *dash = strchr(kind, '-');
    const char *name = dash ? dash + 1 : kind;
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++)
        if (strcmp(name, nets[i].name) == 0) return &nets[i];
    return NULL;
}

void tt_efficientnet_names(char *buf, size_t size)
{
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s", *buf ? ", " : "", nets[i].name);
    }
}

/* timm's make_divisible (divisor 8, at least 8, never below 90% of v). */
static int divisible(double v)
{
    int n = (int)(v + 4) / 8 * 8;
    if (n < 8) n = 8;
    if (n < 0.9 * v) n += 8;
    return n;
}

/* How the backward has the block's tensors. */
typedef struct keeps {
    tt_keep conv, again;
    int frozen, store16;
} keeps;

/* Convolution c over x, its batch norm, and a SiLU after it (act) or not;
 * returns the last output. */
static int conv_bn(tt_graph_model *gm, const tt_conv_norm *c, int x, const keeps *k, int act)
{
    tt_graph *g = &gm->graph;
    tt_conv_keeps ck = {k->conv, act ? k->again : TT_KEEP, 0, k->frozen, k->store16};
    int y = tt_conv_norm_layers(gm, c, x, -1, -1, ck);
    if (!act) return y;
    char name[96];
    snprintf(name, sizeof name, "%s.silu", c->norm);
    const tt_tensor_def *d = tt_graph_def(g, y);
    int out = tt_graph_tensor(g, name, d->channels, d->height, d->width, k->again);
    tt_graph_layer(g, TT_LAYER_ACT, name, y, -1, out)->act = TT_ACT_SILU;
    return out;
}

static int act(tt_graph *g, const char *name, int x, tt_activation_kind kind, tt_keep keep)
{
    const tt_tensor_def *d = tt_graph_def(g, x);
    int out = tt_graph_tensor(g, name, d->channels, d->height, d->width, keep);
    tt_graph_layer(g, TT_LAYER_ACT, name, x, -1, out)->act = kind;
    return out;
}

/* "<block>.se": x times sigmoid(conv_expand(SiLU(conv_reduce(mean x)))),
 * channel by channel. */
static tt_status excite(tt_graph_model *gm, const char *block, int x, int reduced,
                        const keeps *k, int *out)
{
    tt_graph *g = &gm->graph;
    const tt_tensor_def *d = tt_graph_def(g, x);
    int c = d->channels;
    char name[96], conv[96];
    tt_conv_norm r, e;
    snprintf(conv, sizeof conv, "%s.se.conv_reduce", block);
    TT_TRY(tt_conv_norm_params(gm, &r, conv, NULL, c, reduced, 1, 1, 1));
    snprintf(conv, sizeof conv, "%s.se.conv_expand", block);
    TT_TRY(tt_conv_norm_params(gm, &e, conv, NULL, reduced, c, 1, 1, 1));
    snprintf(name, sizeof name, "%s.se.mean", block);
    int mean = tt_graph_tensor(g, name, c, 1, 1, TT_KEEP);
    tt_graph_layer(g, TT_LAYER_MEAN, name, x, -1, mean);
    tt_conv_keeps small = {TT_KEEP, TT_KEEP, 0, 0, 0};
    int y = tt_conv_norm_layers(gm, &r, mean, -1, -1, small);
    snprintf(name, sizeof name, "%s.se.silu", block);
    y = act(g, name, y, TT_ACT_SILU, TT_KEEP);
    small.out = TT_REMAKE; /* the sigmoid's backward reads its output */
    y = tt_conv_norm_layers(gm, &e, y, -1, -1, small);
    snprintf(name, sizeof name, "%s.se.gate", block);
    y = act(g, name, y, TT_ACT_SIGMOID, TT_KEEP);
    snprintf(name, sizeof name, "%s.se", block);
    *out = tt_graph_tensor(g, name, c, d->height, d->width, k->again);
    tt_graph_layer(g, TT_LAYER_CHANNEL_MUL, name, x, y, *out);
    return NULL;
}

/* One block ("encoder.model.blocks.S.B") from cin to cout channels; its
 * residual branch dropped per image with probability `drop` (drop-path,
 * its mask's salt `salt`). */
static tt_status block(tt_graph_model *gm, const char *name, const stage_def *s, int x, int cout,
                       int stride, int dilation, float drop, int salt, const keeps *k, int *out)
{
    tt_graph *g = &gm->graph;
    int cin = tt_graph_def(g, x)->channels, first = g->layer_count;
    int mid = s->separable ? cin : divisible((double)cin * s->expand);
    char conv[96], norm[96];
    tt_conv_norm pw, dw, pwl;
    int y = x;
    if (!s->separable) { /* the expansion */
        snprintf(conv, sizeof conv, "%s.conv_pw", name);
        snprintf(norm, sizeof norm, "%s.bn1", name);
        TT_TRY(tt_conv_norm_params(gm, &pw, conv, norm, cin, mid, 1, 1, 1));
        y = conv_bn(gm, &pw, y, k, 1);
    }
    snprintf(conv, sizeof conv, "%s.conv_dw", name);
    snprintf(norm, sizeof norm, "%s.bn%d", name, s->separable ? 1 : 2);
    TT_TRY(tt_conv_norm_params(gm, &dw, conv, norm, mid, mid, s->kernel, stride, mid));
    dw.dilation = dilation;
    y = conv_bn(gm, &dw, y, k, 1);
    TT_TRY(excite(gm, name, y, cin / 4, k, &y));
    snprintf(conv, sizeof conv, "%s.%s", name, s->separable ? "conv_pw" : "conv_pwl");
    snprintf(norm, sizeof norm, "%s.bn%d", name, s->separable ? 2 : 3);
    TT_TRY(tt_conv_norm_params(gm, &pwl, conv, norm, mid, cout, 1, 1, 1));
    y = conv_bn(gm, &pwl, y, k, 0);
    if (stride == 1 && cin == cout) { /* the residual, over the projection */
        const tt_tensor_def *d = tt_graph_def(g, y);
        if (drop > 0) { /* drop-path, in place over the branch */
            char dp[80];
            snprintf(dp, sizeof dp, "%s.drop_path", name);
            int dropped = tt_graph_tensor(g, dp, cout, d->height, d->width, TT_REMAKE);
            if (!g->failed) g->tensors[dropped].alias = y;
            tt_layer *l = tt_graph_layer(g, TT_LAYER_DROPOUT, dp, y, -1, dropped);
            l->p = drop, l->per_sample = 1, l->salt = salt;
            y = dropped, d = tt_graph_def(g, y);
        }
        int sum = tt_graph_tensor(g, name, cout, d->height, d->width, TT_KEEP);
        if (!g->failed) g->tensors[sum].alias = y;
        tt_graph_layer(g, TT_LAYER_ADD, name, y, x, sum);
        y = sum;
    }
    tt_graph_group(g, first);
    *out = y;
    return NULL;
}

tt_status tt_efficientnet_build(tt_graph_model *gm, const tt_efficientnet *e, int output_stride,
                                int features[5])
{
    const tt_model_spec *spec = &gm->model.spec;
    tt_graph *g = &gm->graph;
    int ckpt = spec->checkpointing, fp16 = spec->precision != TT_PRECISION_FP32;
    keeps k = {ckpt ? TT_RECOMPUTE : TT_KEEP, ckpt ? TT_RECOMPUTE : TT_REMAKE,
               spec->freeze_encoder_bn, fp16 && !ckpt};
    int stem = divisible(32 * e->width);
    tt_conv_norm c;
    TT_TRY(tt_conv_norm_params(gm, &c, "encoder.model.conv_stem", "encoder.model.bn1",
                               spec->in_channels, stem, 3, 2, 1));
    int x = conv_bn(gm, &c, g->input, &k, 1);
    if (!g->failed) g->tensors[x].keep = TT_KEEP; /* blocks.0's input */
    int stride = 2, dilation = 1, feature = 0, index = 0, total = 0;
    for (int si = 0; si < 7; si++) total += (int)ceil(arch[si].repeats * e->depth);
    for (int si = 0; si < 7; si++) {
        const stage_def *s = &arch[si];
        int cout = divisible(s->out * e->width), n = (int)ceil(s->repeats * e->depth);
        for (int b = 0; b < n; b++) {
            /* timm's builder: past the output stride a stage keeps stride 1
             * and the blocks after its first are dilated */
            int st = b == 0 ? s->stride : 1, dil = dilation, next = dilation;
            if (st > 1) {
                if (stride * st > output_stride) next = dilation * st, st = 1;
                else stride *= st;
            }
            dilation = next;
            char name[64];
            snprintf(name, sizeof name, "encoder.model.blocks.%d.%d", si, b);
            /* timm: block i of n drops with drop_path_rate i / n; masks
             * salted 1 + i (a decoder's dropout has 0) */
            float drop = spec->drop_path * (float)index / (float)total;
            TT_TRY(block(gm, name, s, x, cout, st, dil, drop, 1 + index, &k, &x));
            index++;
        }
        if (si == 0 || si == 1 || si == 2 || si == 4 || si == 6) features[feature++] = x;
    }
    return g->failed ? tt_error_new(TT_ERR_OUT_OF_MEMORY, "model graph: out of host memory") : NULL;
}

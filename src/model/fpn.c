/*
 * FPN (fpn.h) as a layer list run by the executor (exec.c): the encoder's
 * parameters and layers first (resnet_encoder.c), then the decoder's in
 * smp's state_dict order, and what the backward keeps:
 *  - a pyramid level (p5..p2) is kept for its segmentation block; what is
 *    added into it (the upsampled level above, the 1x1 convolution of the
 *    encoder's feature) is never read again;
 *  - in a segmentation block a convolution's output is kept for its norm
 *    (made again for the block's backward with checkpointing), the norm's
 *    output and its upsampling are made again for the next convolution;
 *  - the four blocks' outputs are summed in place over the first, dropout
 *    written over the sum and kept for the head;
 *  - the head's output and its upsampling (the logits) are not read again.
 * With 16-bit storage a kept convolution output is stored in 16 bits and
 * read there by its norm.
 */
#include "model/fpn.h"

#include <stdio.h>

#include "core/status.h"
#include "model/conv_norm.h"
#include "model/encoder.h"

#define PYRAMID 256
#define SEGMENTATION 128
#define GN_GROUPS 32
#define DROPOUT 0.2f

/* A bilinear (align_corners) upsampling of x by `factor` into a new
 * tensor (or `out`). */
static int upsample(tt_graph_model *gm, const char *name, int x, int factor, int out, tt_keep keep)
{
    tt_graph *g = &gm->graph;
    const tt_tensor_def *d = tt_graph_def(g, x);
    if (out < 0) out = tt_graph_tensor(g, name, d->channels, factor * d->height, factor * d->width, keep);
    tt_layer *l = tt_graph_layer(g, TT_LAYER_UPSAMPLE, name, x, -1, out);
    l->bilinear = 1, l->factor = factor;
    return out;
}

/* out = in0 + in1, written over in0; the result kept as `keep` says. */
static int add(tt_graph_model *gm, const char *name, int in0, int in1, tt_keep keep)
{
    tt_graph *g = &gm->graph;
    const tt_tensor_def *d = tt_graph_def(g, in0);
    int out = tt_graph_tensor(g, name, d->channels, d->height, d->width, keep);
    if (!g->failed) g->tensors[out].alias = in0;
    tt_graph_layer(g, TT_LAYER_ADD, name, in0, in1, out);
    return out;
}

/* decoder.p4 (p3, p2): nearest x2 of the level above + skip_conv(c). */
static tt_status level(tt_graph_model *gm, int n, int above, int c, int *out)
{
    tt_graph *g = &gm->graph;
    char name[64];
    snprintf(name, sizeof name, "decoder.p%d.skip_conv", n);
    tt_conv_norm conv;
    TT_TRY(tt_conv_norm_params(gm, &conv, name, NULL, tt_graph_def(g, c)->channels, PYRAMID, 1, 1, 1));
    const tt_tensor_def *a = tt_graph_def(g, above);
    snprintf(name, sizeof name, "decoder.p%d.up", n);
    int up = tt_graph_tensor(g, name, PYRAMID, 2 * a->height, 2 * a->width, TT_REMAKE);
    tt_graph_layer(g, TT_LAYER_UPSAMPLE, name, above, -1, up);
    int skip = tt_conv_norm_layers(gm, &conv, c, -1, -1, (tt_conv_keeps){TT_REMAKE, TT_REMAKE, 0, 0, 0});
    snprintf(name, sizeof name, "decoder.p%d", n);
    *out = add(gm, name, up, skip, TT_KEEP);
    return NULL;
}

/* decoder.seg_blocks.i: `ups` times conv, norm, ReLU, bilinear x2 (once
 * without the upsampling when ups is 0). */
static tt_status seg_block(tt_graph_model *gm, int i, int ups, int x, int *out)
{
    const tt_model_spec *s = &gm->model.spec;
    tt_graph *g = &gm->graph;
    int ckpt = s->checkpointing, fp16 = s->precision != TT_PRECISION_FP32;
    tt_keep again = ckpt ? TT_RECOMPUTE : TT_REMAKE;
    for (int j = 0; j < (ups ? ups : 1); j++) {
        char conv[80], norm[80], up[80];
        snprintf(conv, sizeof conv, "decoder.seg_blocks.%d.block.%d.block.0", i, j);
        snprintf(norm, sizeof norm, "decoder.seg_blocks.%d.block.%d.block.1", i, j);
        snprintf(up, sizeof up, "decoder.seg_blocks.%d.block.%d.up", i, j);
        tt_conv_norm c;
        TT_TRY(tt_conv_group_norm_params(gm, &c, conv, norm, tt_graph_def(g, x)->channels, SEGMENTATION,
                                         3, GN_GROUPS));
        int first = g->layer_count;
        x = tt_conv_norm_layers(gm, &c, x, -1, -1,
                                (tt_conv_keeps){ckpt ? TT_RECOMPUTE : TT_KEEP, again, 1, 0,
                                                fp16 && !ckpt});
        if (ups) x = upsample(gm, up, x, 2, -1, again);
        tt_graph_group(g, first);
    }
    *out = x;
    return NULL;
}

static tt_status decoder(tt_graph_model *gm, const int f[5])
{
    const tt_model_spec *s = &gm->model.spec;
    tt_graph *g = &gm->graph;
    tt_conv_norm c;
    TT_TRY(tt_conv_norm_params(gm, &c, "decoder.p5", NULL, tt_graph_def(g, f[4])->channels, PYRAMID, 1,
                               1, 1));
    int p[4]; /* p5, p4, p3, p2 */
    p[0] = tt_conv_norm_layers(gm, &c, f[4], -1, -1, (tt_conv_keeps){TT_KEEP, TT_KEEP, 0, 0, 0});
    for (int n = 4; n >= 2; n--) TT_TRY(level(gm, n, p[4 - n], f[n - 1], &p[5 - n]));
    int sum = -1;
    for (int i = 0; i < 4; i++) {
        int y;
        TT_TRY(seg_block(gm, i, 3 - i, p[i], &y));
        if (i == 0) {
            sum = y;
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "decoder.sum.%d", i);
        sum = add(gm, name, sum, y, TT_REMAKE);
    }
    int dropped = tt_graph_tensor(g, "decoder.dropout", SEGMENTATION, tt_graph_def(g, sum)->height,
                                  tt_graph_def(g, sum)->width, TT_KEEP);
    if (!g->failed) g->tensors[dropped].alias = sum;
    tt_layer *d = tt_graph_layer(g, TT_LAYER_DROPOUT, "decoder.dropout", sum, -1, dropped);
    d->p = DROPOUT, d->per_channel = 1, d->salt = 0;
    TT_TRY(tt_conv_norm_params(gm, &c, "segmentation_head.0", NULL, SEGMENTATION, s->classes, 1, 1,
                               1));
    int head = tt_conv_norm_layers(gm, &c, dropped, -1, -1, (tt_conv_keeps){TT_REMAKE, TT_REMAKE, 0, 0, 0});
    g->output = tt_graph_tensor(g, "logits", s->classes, gm->model.height, gm->model.width, TT_KEEP);
    upsample(gm, "segmentation_head.1", head, 4, g->output, TT_KEEP);
    return NULL;
}

tt_status tt_fpn_model_create(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                              int width, uint64_t seed, tt_model **out)
{
    return tt_encoder_model_create(be, spec, 32, decoder, capacity, height, width, seed, out);
}

/*
 * The UNet (unet_config.h) as a layer list run by the executor (exec.c).
 * It replaced hand-written passes with their gradients, logits and running
 * statistics bit for bit, in fp32 and 16-bit storage, with and without
 * checkpointing, and the banded step, in no more work but for one
 * up-convolution more with checkpointing (and a norm, unbanded), and in an
 * arena at most theirs.
 *
 * What the backward keeps, block by block:
 *  - without checkpointing a block keeps its convolutions' outputs (the
 *    norms read them) and its output; its first activation is made again
 *    from conv1 and the statistics (without a norm it is conv1's room,
 *    kept); enc.0 is made again whole from the image, its output kept for
 *    the readers outside it;
 *  - with checkpointing every block is made again for its backward, with
 *    its norms' statistics; an encoder block's output is made again for its
 *    decoder block too (the deepest's once, for both); dec.0, the step's
 *    peak, makes conv1 again for each layer that reads it;
 *  - with 16-bit storage a block's output is rounded as made and a kept
 *    block's convolutions stored; a kept block's output is made again from
 *    its stored conv2 wherever it is read (without a norm it is kept,
 *    rounded); the pools are made again;
 *  - the banded step (16-bit storage with checkpointing and a norm,
 *    exec_band.c) keeps the blocks' outputs but the encoder's below enc.0,
 *    made again as their decoder blocks' skips (each pool made again from
 *    that); act1 is never stored, and a block's gradient runs down it in
 *    one place.
 */
#include "model/unet.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/graph_model.h"

typedef struct unet_model {
    tt_graph_model base;      /* first */
    tt_unet_config config;
    int banded;               /* the banded step (exec_band.c) */
} unet_model;

static int param(const unet_model *u, const char *prefix, const char *suffix)
{
    char name[96];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    const tt_param *p = tt_params_find(&u->base.params, name);
    return p ? (int)(p - u->base.params.params) : -1;
}

static int find(const tt_graph *g, const char *name)
{
    for (int t = 0; t < g->tensor_count; t++)
        if (strcmp(g->tensors[t].name, name) == 0) return t;
    return -1;
}

/* What the backward keeps of one block's tensors. */
typedef struct block_keeps {
    tt_keep conv, act1, act2;
    int outside;              /* act2 kept for the readers outside the block (and its pool) */
    tt_keep pool;             /* an encoder block's pool */
} block_keeps;

/* conv `which` (conv1 or conv2) of block `name` over in0 (and in1) and its
 * norm (or ReLU in place); returns the activation's tensor. */
static int conv_norm(unet_model *u, const char *name, int which, int in0, int in1, int channels,
                     tt_keep conv_keep, tt_keep act_keep)
{
    tt_graph *g = &u->base.graph;
    const tt_tensor_def *in = tt_graph_def(g, in0);
    int h = in->height, w = in->width;
    char prefix[64], tname[80];
    snprintf(prefix, sizeof prefix, "%s.conv%d", name, which);
    int out = tt_graph_tensor(g, prefix, channels, h, w, conv_keep);
    tt_layer *l = tt_graph_layer(g, TT_LAYER_CONV, prefix, in0, in1, out);
    l->kernel = 3, l->stride = 1;
    l->weight = param(u, prefix, "weight"), l->bias = param(u, prefix, "bias");
    l->no_input_grad = in0 == g->input;
    snprintf(tname, sizeof tname, "%s.act%d", name, which);
    int act = tt_graph_tensor(g, tname, channels, h, w, act_keep);
    /* 16-bit storage: a block's output is rounded, a kept block's
     * convolutions stored (the norms read them there; without a norm the
     * ReLU's output, in the convolution's room, rounded) */
    tt_precision fp32 = TT_PRECISION_FP32, p = u->banded ? fp32 : u->config.precision;
    int kept = conv_keep == TT_KEEP;
    if (u->config.norm == TT_NORM_NONE) { /* ReLU in place: act is conv's room */
        tt_graph_layer(g, TT_LAYER_RELU, tname, out, -1, act);
        if (!g->failed) g->tensors[act].alias = out, g->tensors[out].grad_alias = act;
        if (!g->failed) g->tensors[act].rounded = which == 2 || kept ? p : fp32;
        return act;
    }
    if (!g->failed) g->tensors[out].storage = kept ? p : fp32;
    if (!g->failed) g->tensors[act].rounded = which == 2 ? p : fp32;
    snprintf(prefix, sizeof prefix, "%s.norm%d", name, which);
    tt_layer *n = tt_graph_layer(g, TT_LAYER_NORM, prefix, out, -1, act);
    n->relu = 1, n->norm = u->config.norm, n->groups = u->config.groups;
    /* a block made again takes its statistics again too (not the banded
     * step's: its statistics are over whole stored tensors) */
    n->restat = conv_keep != TT_KEEP && !u->banded;
    n->bn_w = param(u, prefix, "weight"), n->bn_b = param(u, prefix, "bias");
    n->bn_rm = param(u, prefix, "running_mean"), n->bn_rv = param(u, prefix, "running_var");
    if (!g->failed) g->tensors[out].grad_alias = act;
    return act;
}

/* A block's two convolutions and norms, and an encoder block's pool into
 * *pooled (pooled NULL: none): one group. */
static int block(unet_model *u, const char *name, int in0, int in1, int channels, block_keeps k,
                 int *pooled)
{
    tt_graph *g = &u->base.graph;
    int first = g->layer_count;
    int a1 = conv_norm(u, name, 1, in0, in1, channels, k.conv, k.act1);
    int a2 = conv_norm(u, name, 2, a1, -1, channels, k.conv, k.act2);
    if (!g->failed) g->tensors[a2].kept_outside = k.outside;
    if (u->banded && !g->failed) {
        /* act1 never stored; the block's gradient runs down it in one
         * place, conv2's input gradient over its output's */
        g->tensors[a1].fused = 1;
        g->tensors[a1].grad_alias = g->layers[g->tensors[a2].producer].in[0];
        if (k.act2 == TT_RECOMPUTE) g->tensors[a2].scope = TT_SCOPE_GROUP;
    }
    if (pooled) {
        char pname[40];
        snprintf(pname, sizeof pname, "%s.pool", name);
        const tt_tensor_def *t = tt_graph_def(g, a2);
        *pooled = tt_graph_tensor(g, pname, t->channels, t->height / 2, t->width / 2, k.pool);
        tt_layer *p = tt_graph_layer(g, TT_LAYER_MAX_POOL, pname, a2, -1, *pooled);
        p->kernel = 2, p->stride = 2;
        /* banded: made again from its block's output made again */
        if (!g->failed) g->tensors[*pooled].eager = u->banded;
    }
    tt_graph_group(g, first);
    return a2;
}

static tt_status build(unet_model *u)
{
    const tt_unet_config *c = &u->config;
    tt_graph *g = &u->base.graph;
    int none = c->norm == TT_NORM_NONE;
    int ckpt = c->checkpointing, half = c->precision != TT_PRECISION_FP32;
    tt_keep pool = ckpt || half ? TT_REMAKE : TT_KEEP;
    /* 16-bit storage: a kept block's output made again from its stored
     * conv2 wherever it is read (without a norm it is kept, rounded) */
    tt_keep out = half && !none ? TT_RECOMPUTE : TT_KEEP;
    block_keeps kept = {TT_KEEP, none ? TT_KEEP : TT_REMAKE, out, 0, pool};
    block_keeps again = {TT_RECOMPUTE, TT_RECOMPUTE, TT_RECOMPUTE, 1, pool};
    /* checkpointing: every block made again for its backward; an encoder
     * block's output made again for its decoder block's too (enc.0's kept,
     * the image's block); the deepest's made once, for both */
    block_keeps ckpt_out = {TT_RECOMPUTE, TT_RECOMPUTE, TT_KEEP, 0, pool};
    block_keeps ckpt_enc = {TT_RECOMPUTE, TT_RECOMPUTE, TT_RECOMPUTE, 0, pool};
    block_keeps ckpt_deepest = {TT_REMAKE, none ? TT_REMAKE : TT_RECOMPUTE, TT_REMAKE, 0, pool};
    if (u->banded) /* the banded step: every encoder block's output made again as its decoder
                      block's skip, enc.0's kept */
        again = (block_keeps){TT_RECOMPUTE, TT_RECOMPUTE, TT_KEEP, 0, TT_REMAKE},
        ckpt_deepest = ckpt_enc;
    g->input = tt_graph_tensor(g, "input", c->in_channels, u->base.model.height, u->base.model.width,
                               TT_KEEP);
    int x = g->input, skips[TT_UNET_MAX_DEPTH];
    char name[32];
    for (int i = 0; i <= c->depth; i++) {
        if (i < c->depth) snprintf(name, sizeof name, "enc.%d", i);
        else snprintf(name, sizeof name, "bottleneck");
        int pooled = -1, last = i == c->depth;
        block_keeps k = i == 0 ? again : !ckpt ? kept : last ? ckpt_out
                        : i == c->depth - 1 ? ckpt_deepest : ckpt_enc;
        int a2 = block(u, name, x, -1, tt_unet_channels(c, i), k,
                       last ? NULL : &pooled);
        if (last) {
            x = a2;
            break;
        }
        skips[i] = a2;
        x = pooled;
    }
    for (int i = c->depth - 1; i >= 0; i--) {
        int ch = tt_unet_channels(c, i);
        snprintf(name, sizeof name, "up.%d", i);
        const tt_tensor_def *below = tt_graph_def(g, x);
        int up = tt_graph_tensor(g, name, ch, 2 * below->height, 2 * below->width,
                                 ckpt ? TT_RECOMPUTE : TT_REMAKE);
        tt_layer *l = tt_graph_layer(g, TT_LAYER_CONV_T, name, x, -1, up);
        l->kernel = 2, l->stride = 2;
        l->weight = param(u, name, "weight"), l->bias = param(u, name, "bias");
        snprintf(name, sizeof name, "dec.%d", i);
        x = block(u, name, up, skips[i], ch, ckpt ? ckpt_out : kept, NULL);
        if (u->banded && !g->failed) { /* conv1's input gradient over its output's */
            char conv1[40];
            snprintf(conv1, sizeof conv1, "%s.conv1", name);
            g->tensors[up].grad_alias = find(g, conv1);
        }
        /* checkpointing: dec.0's backward is the step's peak; its conv1 is
         * made again for each layer that reads it, its act1 once (conv1
         * twice in all: for norm2's backward and norm1's) */
        if (ckpt && i == 0 && !none && !u->banded && !g->failed) {
            g->tensors[find(g, "dec.0.conv1")].scope = TT_SCOPE_LAYER;
            g->tensors[find(g, "dec.0.act1")].scope = TT_SCOPE_GROUP;
            /* its ReLU's mask found from conv2 and the forward's statistics */
            g->layers[g->tensors[x].producer].restat = 0;
        }
    }
    g->output = tt_graph_tensor(g, "logits", c->classes, u->base.model.height, u->base.model.width, TT_KEEP);
    tt_layer *head = tt_graph_layer(g, TT_LAYER_CONV, "head", x, -1, g->output);
    head->kernel = 1, head->stride = 1;
    head->weight = param(u, "head", "weight"), head->bias = param(u, "head", "bias");
    return tt_graph_finish(g);
}

/* The banded step runs its convolutions over its bands' halo rows too:
 * the model's FLOPs and convolution shapes are those of the plain step,
 * taken from a twin of the same layers built on a dry backend. */
static tt_status create(tt_backend *be, const tt_unet_config *config, int predict_only,
                        int capacity, int height, int width, uint64_t seed, tt_model **out);

static tt_status take_plain_convs(unet_model *u)
{
    tt_unet_config plain = u->config;
    plain.precision = TT_PRECISION_FP32;
    plain.checkpointing = 0;
    tt_model *m = &u->base.model;
    tt_backend *dry = NULL, *be = m->be;
    tt_model *twin = NULL;
    tt_status status = NULL;
    TT_CHECK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = &be->device,
                                                     .stands_for = be->kernels_of},
                               &dry));
    TT_CHECK(create(dry, &plain, m->spec.predict_only, 1, m->height, m->width, 0, &twin));
    free(m->convs);
    m->convs = twin->convs;
    m->conv_count = twin->conv_count;
    m->flops_per_image = twin->flops_per_image;
    twin->convs = NULL;
cleanup:
    if (twin) twin->ops->destroy(twin);
    tt_backend_destroy(dry);
    return status;
}

static tt_status create(tt_backend *be, const tt_unet_config *config, int predict_only,
                        int capacity, int height, int width, uint64_t seed, tt_model **out)
{
    *out = NULL;
    TT_TRY(tt_unet_config_check(config));
    TT_TRY(tt_unet_tile_check(config, capacity, height, width));
    _Static_assert(offsetof(unet_model, base) == 0, "the head comes first");
    tt_model_spec spec = tt_unet_spec_of(config);
    spec.predict_only = predict_only; /* how it runs, not the configuration */
    tt_graph_model *gm = NULL;
    TT_TRY(tt_graph_model_new(sizeof(unet_model), be, &spec, capacity, height, width, &gm));
    unet_model *u = (unet_model *)gm;
    u->config = *config;
    u->banded = tt_unet_banded(config);
    tt_status status = NULL;
    TT_CHECK(tt_unet_params(config, &gm->params));
    TT_CHECK(build(u));
    TT_CHECK(tt_graph_model_bind(gm, seed));
    TT_CHECK(tt_graph_model_place(gm, u->banded, config->precision));
    if (u->banded) TT_CHECK(take_plain_convs(u));
    *out = &gm->model;
cleanup:
    if (status) gm->model.ops->destroy(&gm->model);
    return status;
}

tt_status tt_unet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                               int width, uint64_t seed, tt_model **out)
{
    tt_unet_config c = tt_unet_config_of(spec);
    return create(be, &c, spec->predict_only, capacity, height, width, seed, out);
}

/*
 * The UNet (unet_config.h) as a layer list run by the executor (exec.c).
 * It replaced hand-written passes with their gradients, logits and running
 * statistics bit for bit, fp32 and 16-bit storage, with and without
 * checkpointing, in no more work but for one up-convolution more with
 * checkpointing, and in an arena at most theirs.
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
 *    rounded); the pools are made again.
 * The banded step (16-bit storage with checkpointing and a norm) is still
 * unet_banded.c's.
 */
#include "model/unet_graph.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/exec.h"
#include "model/head.h"

typedef struct unet_graph {
    tt_model model;           /* the head; first */
    tt_unet_config config;
    tt_param_table params;
    tt_conv_algo conv_algo;
    tt_buffer *wsplit;
    tt_graph graph;
    tt_exec exec;
} unet_graph;

static int param(const unet_graph *u, const char *prefix, const char *suffix)
{
    char name[96];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    const tt_param *p = tt_params_find(&u->params, name);
    return p ? (int)(p - u->params.params) : -1;
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
static int conv_norm(unet_graph *u, const char *name, int which, int in0, int in1, int channels,
                     tt_keep conv_keep, tt_keep act_keep)
{
    tt_graph *g = &u->graph;
    const tt_tensor_def *in = &g->tensors[in0];
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
    tt_precision p = u->config.precision, fp32 = TT_PRECISION_FP32;
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
    n->restat = conv_keep != TT_KEEP; /* a block made again: its statistics too */
    n->bn_w = param(u, prefix, "weight"), n->bn_b = param(u, prefix, "bias");
    n->bn_rm = param(u, prefix, "running_mean"), n->bn_rv = param(u, prefix, "running_var");
    if (!g->failed) g->tensors[out].grad_alias = act;
    return act;
}

/* A block's two convolutions and norms, and an encoder block's pool into
 * *pooled (pooled NULL: none): one group. */
static int block(unet_graph *u, const char *name, int in0, int in1, int channels, block_keeps k,
                 int *pooled)
{
    tt_graph *g = &u->graph;
    int first = g->layer_count;
    int a1 = conv_norm(u, name, 1, in0, in1, channels, k.conv, k.act1);
    int a2 = conv_norm(u, name, 2, a1, -1, channels, k.conv, k.act2);
    if (!g->failed) g->tensors[a2].kept_outside = k.outside;
    if (pooled) {
        char pname[40];
        snprintf(pname, sizeof pname, "%s.pool", name);
        const tt_tensor_def *t = &g->tensors[a2];
        *pooled = tt_graph_tensor(g, pname, t->channels, t->height / 2, t->width / 2, k.pool);
        tt_layer *p = tt_graph_layer(g, TT_LAYER_MAX_POOL, pname, a2, -1, *pooled);
        p->kernel = 2, p->stride = 2;
    }
    tt_graph_group(g, first);
    return a2;
}

static tt_status build(unet_graph *u)
{
    const tt_unet_config *c = &u->config;
    tt_graph *g = &u->graph;
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
    g->input = tt_graph_tensor(g, "input", c->in_channels, u->model.height, u->model.width,
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
        const tt_tensor_def *below = &g->tensors[x];
        int up = tt_graph_tensor(g, name, ch, 2 * below->height, 2 * below->width,
                                 ckpt ? TT_RECOMPUTE : TT_REMAKE);
        tt_layer *l = tt_graph_layer(g, TT_LAYER_CONV_T, name, x, -1, up);
        l->kernel = 2, l->stride = 2;
        l->weight = param(u, name, "weight"), l->bias = param(u, name, "bias");
        snprintf(name, sizeof name, "dec.%d", i);
        x = block(u, name, up, skips[i], ch, ckpt ? ckpt_out : kept, NULL);
        /* checkpointing: dec.0's backward is the step's peak; its conv1 is
         * made again for each layer that reads it, its act1 once (conv1
         * twice in all: for norm2's backward and norm1's) */
        if (ckpt && i == 0 && !none && !g->failed) {
            g->tensors[find(g, "dec.0.conv1")].scope = TT_SCOPE_LAYER;
            g->tensors[find(g, "dec.0.act1")].scope = TT_SCOPE_GROUP;
            /* its ReLU's mask found from conv2 and the forward's statistics */
            g->layers[g->tensors[x].producer].restat = 0;
        }
    }
    g->output = tt_graph_tensor(g, "logits", c->classes, u->model.height, u->model.width, TT_KEEP);
    tt_layer *head = tt_graph_layer(g, TT_LAYER_CONV, "head", x, -1, g->output);
    head->kernel = 1, head->stride = 1;
    head->weight = param(u, "head", "weight"), head->bias = param(u, "head", "bias");
    return tt_graph_finish(g);
}

static tt_status bind_norms(unet_graph *u)
{
    tt_model *m = &u->model;
    tt_graph *g = &u->graph;
    m->counters = calloc((size_t)g->layer_count + 1, sizeof *m->counters);
    if (!m->counters) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "UNet: out of host memory");
    if (u->config.norm != TT_NORM_BATCH) return NULL;
    for (int i = 0; i < g->layer_count; i++) {
        tt_layer *l = &g->layers[i];
        if (l->kind != TT_LAYER_NORM) continue;
        l->bn = (tt_batch_norm_state){tt_model_param(m, l->bn_w), tt_model_param(m, l->bn_b),
                                      tt_model_param(m, l->bn_rm), tt_model_param(m, l->bn_rv), 0};
        tt_model_counter *k = &m->counters[m->counter_count++];
        snprintf(k->name, sizeof k->name, "%.70s.num_batches_tracked", l->name);
        k->value = &l->bn.num_batches_tracked;
    }
    return NULL;
}

static tt_status allocate(unet_graph *u)
{
    tt_model *m = &u->model;
    tt_graph *g = &u->graph;
    tt_status status = NULL;
    tt_arena_plan plan = {0};
    TT_CHECK(tt_model_head_input(m));
    g->tensors[g->input].fwd = m->input;
    int c = tt_unet_channels(&u->config, u->config.depth - 1);
    TT_CHECK(tt_buffer_alloc(m->be, 4 * (size_t)c * c * 9 * sizeof(float), TT_MEM_WORKSPACE,
                             "dec.conv1.halves", &u->wsplit));
    u->exec = (tt_exec){.model = m, .graph = g, .algo = &u->conv_algo, .wsplit = u->wsplit};
    TT_CHECK(tt_exec_name_places(&u->exec, &plan));
    TT_CHECK(tt_model_size_convs(m, &plan, tt_exec_record_step, &u->exec, &u->conv_algo));
    TT_CHECK(tt_model_head_place(m, &plan, tt_exec_record_step, &u->exec));
    g->tensors[g->input].fwd = m->input;
    m->logits = g->tensors[g->output].fwd;
    m->dlogits = g->tensors[g->output].grad;
cleanup:
    tt_arena_plan_free(&plan);
    return status;
}

static tt_status forward(tt_model *m, int batch, int training)
{
    return tt_exec_forward(&((unet_graph *)m)->exec, batch, training);
}

static tt_status backward(tt_model *m) { return tt_exec_backward(&((unet_graph *)m)->exec); }

static void destroy(tt_model *m)
{
    unet_graph *u = (unet_graph *)m;
    if (!u) return;
    tt_model_head_free(&u->model);
    tt_buffer_free(u->wsplit);
    tt_exec_free(&u->exec);
    tt_graph_free(&u->graph);
    tt_params_free(&u->params);
    free(u);
}

static const tt_model_ops unet_graph_ops = {forward, backward, destroy};

tt_status tt_unet_graph_create(tt_backend *be, const tt_unet_config *config, int capacity,
                               int height, int width, uint64_t seed, tt_model **out)
{
    *out = NULL;
    TT_TRY(tt_unet_config_check(config));
    TT_TRY(tt_unet_tile_check(config, capacity, height, width));
    _Static_assert(offsetof(unet_graph, model) == 0, "the head comes first");
    unet_graph *u = calloc(1, sizeof *u);
    if (!u) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "UNet: out of host memory");
    tt_model *m = &u->model;
    *m = (tt_model){.ops = &unet_graph_ops, .be = be, .spec = tt_unet_spec_of(config),
                    .capacity = capacity, .height = height, .width = width};
    u->config = *config;
    u->conv_algo = config->algo;
    tt_status status = NULL;
    TT_CHECK(tt_unet_params(config, &u->params));
    TT_CHECK(build(u));
    TT_CHECK(tt_model_head_params(m, &u->params, seed));
    TT_CHECK(bind_norms(u));
    TT_CHECK(allocate(u));
    *out = m;
cleanup:
    if (status) destroy(m);
    return status;
}

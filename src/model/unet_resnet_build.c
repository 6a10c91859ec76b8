/*
 * Building the ResNet-encoder UNet (unet_resnet.h): its parameters under
 * smp's state_dict names in state_dict order (the encoder's first, so they
 * are one range of the arena), its layers, the activation arena planned
 * from one recorded step of unet_resnet.c, and the model interface's head.
 */
#include "model/unet_resnet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/arena_plan.h"
#include "ops/util.h"

static const int decoder_channels[TT_UR_DECODER_BLOCKS] = {256, 128, 64, 32, 16};
static const int layer_channels[4] = {64, 128, 256, 512};

/* ---- parameters and layers ------------------------------------------------ */

static tt_status add_param(tt_unet_resnet *u, const char *prefix, const char *suffix, int ndim,
                           const int *shape, tt_param_role role, int fan_in, int *index)
{
    char name[96];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    *index = u->params.count;
    return tt_params_add(&u->params, name, ndim, shape, role, fan_in);
}

/* A convolution `conv` (k x k, stride s, padding k / 2) of cin -> cout
 * channels over in_h x in_w, and the batch norm `norm` after it (NULL:
 * none, and the convolution has a bias). */
static tt_status add_conv(tt_unet_resnet *u, tt_ur_conv *c, const char *conv, const char *norm,
                          int cin, int cout, int k, int s, int in_h, int in_w, int relu)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", conv);
    c->in_channels = cin, c->out_channels = cout, c->kernel = k, c->stride = s;
    c->in_h = in_h, c->in_w = in_w;
    c->out_h = (in_h + 2 * (k / 2) - k) / s + 1;
    c->out_w = (in_w + 2 * (k / 2) - k) / s + 1;
    c->relu = relu;
    c->bias = c->bn_w = c->bn_b = c->bn_rm = c->bn_rv = -1;
    int fan_in = cin * k * k, wshape[4] = {cout, cin, k, k}, vec[1] = {cout};
    TT_TRY(add_param(u, conv, "weight", 4, wshape, TT_PARAM_WEIGHT, fan_in, &c->weight));
    if (!norm) return add_param(u, conv, "bias", 1, vec, TT_PARAM_BIAS, fan_in, &c->bias);
    TT_TRY(add_param(u, norm, "weight", 1, vec, TT_PARAM_NORM_WEIGHT, 0, &c->bn_w));
    TT_TRY(add_param(u, norm, "bias", 1, vec, TT_PARAM_NORM_BIAS, 0, &c->bn_b));
    TT_TRY(add_param(u, norm, "running_mean", 1, vec, TT_PARAM_RUNNING_MEAN, 0, &c->bn_rm));
    return add_param(u, norm, "running_var", 1, vec, TT_PARAM_RUNNING_VAR, 0, &c->bn_rv);
}

static tt_status add_block(tt_unet_resnet *u, tt_ur_block *b, int layer, int index, int cin,
                           int cout, int stride, int h, int w)
{
    char conv[48], norm[48];
    snprintf(conv, sizeof conv, "encoder.layer%d.%d.conv1", layer, index);
    snprintf(norm, sizeof norm, "encoder.layer%d.%d.bn1", layer, index);
    TT_TRY(add_conv(u, &b->conv1, conv, norm, cin, cout, 3, stride, h, w, 1));
    int oh = b->conv1.out_h, ow = b->conv1.out_w;
    snprintf(conv, sizeof conv, "encoder.layer%d.%d.conv2", layer, index);
    snprintf(norm, sizeof norm, "encoder.layer%d.%d.bn2", layer, index);
    TT_TRY(add_conv(u, &b->conv2, conv, norm, cout, cout, 3, 1, oh, ow, 0));
    b->has_down = stride != 1 || cin != cout;
    if (!b->has_down) return NULL;
    snprintf(conv, sizeof conv, "encoder.layer%d.%d.downsample.0", layer, index);
    snprintf(norm, sizeof norm, "encoder.layer%d.%d.downsample.1", layer, index);
    return add_conv(u, &b->down, conv, norm, cin, cout, 1, stride, h, w, 0);
}

static tt_status add_decoder(tt_unet_resnet *u, tt_ur_decoder *d, int i, int cin, int skip,
                             int h, int w)
{
    d->in_channels = cin, d->skip_channels = skip, d->channels = decoder_channels[i];
    d->h = h, d->w = w;
    char conv[48], norm[48];
    snprintf(conv, sizeof conv, "decoder.blocks.%d.conv1.0", i);
    snprintf(norm, sizeof norm, "decoder.blocks.%d.conv1.1", i);
    TT_TRY(add_conv(u, &d->conv1, conv, norm, cin + skip, d->channels, 3, 1, h, w, 1));
    snprintf(conv, sizeof conv, "decoder.blocks.%d.conv2.0", i);
    snprintf(norm, sizeof norm, "decoder.blocks.%d.conv2.1", i);
    return add_conv(u, &d->conv2, conv, norm, d->channels, d->channels, 3, 1, h, w, 1);
}

/* The batch norm state of c from the arenas (after they exist). */
static void bind_norm(tt_unet_resnet *u, tt_ur_conv *c, int encoder)
{
    if (c->bn_w < 0) return;
    c->bn = (tt_batch_norm_state){tt_unet_resnet_param(u, c->bn_w), tt_unet_resnet_param(u, c->bn_b),
                                  tt_unet_resnet_param(u, c->bn_rm),
                                  tt_unet_resnet_param(u, c->bn_rv), 0};
    c->frozen = encoder ? u->spec.freeze_encoder_bn : u->spec.freeze_decoder_bn;
}

/* Every layer and parameter, in state_dict order. */
static tt_status build_layers(tt_unet_resnet *u)
{
    int h = u->height, w = u->width;
    TT_TRY(add_conv(u, &u->stem, "encoder.conv1", "encoder.bn1", u->spec.in_channels, 64, 7, 2, h,
                    w, 1));
    u->stem.first = 1;
    /* F0 = stem.act is read by the pool and decoder block 3 in the forward;
     * the backward makes it again for block 3 (the pool's backward reads
     * its argmax), and stem.out too, from the image: a convolution of
     * three channels, about 1% of a step's work twice, for an F0-sized
     * tensor that would live through the whole step */
    u->stem.remade = 1;
    u->stem.recomputed = 1;
    int ph = (u->stem.out_h + 2 - 3) / 2 + 1, pw = (u->stem.out_w + 2 - 3) / 2 + 1;
    int cin = 64, bh = ph, bw = pw, n = 0;
    tt_mem *feature = &u->pool, *dfeature = &u->dpool;
    for (int l = 0; l < 4; l++) {
        for (int k = 0; k < u->layers[l]; k++, n++) {
            tt_ur_block *b = &u->blocks[n];
            int stride = k == 0 && l > 0 ? 2 : 1;
            TT_TRY(add_block(u, b, l + 1, k, cin, layer_channels[l], stride, bh, bw));
            b->input = feature, b->dinput = dfeature;
            feature = &b->y, dfeature = &b->dy;
            cin = layer_channels[l], bh = b->conv2.out_h, bw = b->conv2.out_w;
        }
        u->layer_end[l] = n;
    }
    u->block_count = n;
    for (int i = 0; i < n; i++) {
        tt_ur_block *b = &u->blocks[i];
        b->conv1.remade = 1; /* read by conv2 alone */
        b->conv1.recomputed = b->conv2.recomputed = b->down.recomputed = u->spec.checkpointing;
    }
    /* the layers' outputs F1..F4 are kept, the other blocks' outputs made
     * again before their layer's backward: from the kept convolution
     * outputs, element-wise, or with checkpointing from the layer's input */
    for (int l = 0, i = 0; l < 4; l++)
        for (; i < u->layer_end[l]; i++) u->blocks[i].output_again = i < u->layer_end[l] - 1;
    /* with checkpointing the pool and its argmax, half F0's size, too */
    u->pool_again_made = u->spec.checkpointing;
    /* decoder block i: the feature below, the skip F(3 - i) (F0 = the stem's) */
    tt_mem *skips[TT_UR_DECODER_BLOCKS] = {&u->blocks[u->layer_end[2] - 1].y,
                                           &u->blocks[u->layer_end[1] - 1].y,
                                           &u->blocks[u->layer_end[0] - 1].y, &u->stem.act, NULL};
    tt_mem *dskips[TT_UR_DECODER_BLOCKS] = {&u->blocks[u->layer_end[2] - 1].dy,
                                            &u->blocks[u->layer_end[1] - 1].dy,
                                            &u->blocks[u->layer_end[0] - 1].dy, &u->stem.dout,
                                            NULL};
    int skip_channels[TT_UR_DECODER_BLOCKS] = {256, 128, 64, 64, 0};
    for (int i = 0; i < TT_UR_DECODER_BLOCKS; i++) {
        tt_ur_decoder *d = &u->dec[i];
        bh *= 2, bw *= 2;
        TT_TRY(add_decoder(u, d, i, cin, skip_channels[i], bh, bw));
        d->input = feature, d->dinput = dfeature;
        d->skip = skips[i], d->dskip = dskips[i];
        d->below = i ? &u->dec[i - 1].conv2 : NULL;
        if (d->below) d->below->remade_upsampled = 1;
        d->skip_conv = d->skip == &u->stem.act ? &u->stem : NULL;
        feature = &d->conv2.act, dfeature = &d->conv2.dout;
        /* read by conv2, and the next block's upsampling or the head: only
         * the head's weight gradient reads it in the backward */
        d->conv1.remade = d->conv2.remade = 1;
        d->conv1.recomputed = u->spec.checkpointing && d->skip; /* all but the last */
        /* outputs that only block 3's backward and later read */
        d->conv2.recomputed = u->spec.checkpointing && i < TT_UR_DECODER_BLOCKS - 2;
        cin = d->channels;
    }
    return add_conv(u, &u->head, "segmentation_head.0", NULL, cin, u->spec.classes, 3, 1, bh, bw, 0);
}

/* Every convolution, in forward order. */
static int convs_of(tt_unet_resnet *u, tt_ur_conv **out)
{
    int n = 0;
    out[n++] = &u->stem;
    for (int i = 0; i < u->block_count; i++) {
        out[n++] = &u->blocks[i].conv1;
        out[n++] = &u->blocks[i].conv2;
        if (u->blocks[i].has_down) out[n++] = &u->blocks[i].down;
    }
    for (int i = 0; i < TT_UR_DECODER_BLOCKS; i++) out[n++] = &u->dec[i].conv1, out[n++] = &u->dec[i].conv2;
    out[n++] = &u->head;
    return n;
}

#define MAX_CONVS (1 + 3 * TT_UR_MAX_BLOCKS + 2 * TT_UR_DECODER_BLOCKS + 1)

/* ---- memory ---------------------------------------------------------------- */

static size_t bytes_of(const tt_unet_resnet *u, int channels, int h, int w)
{
    return (size_t)u->capacity * (size_t)channels * (size_t)h * (size_t)w * sizeof(float);
}

static void add_tensor(tt_arena_plan *r, const char *owner, const char *what, size_t bytes,
                       tt_mem *dest)
{
    char name[48];
    snprintf(name, sizeof name, "%.30s.%s", owner, what);
    tt_arena_plan_add(r, name, bytes, dest);
}

static void add_conv_tensors(tt_arena_plan *r, tt_unet_resnet *u, tt_ur_conv *c)
{
    if (c == &u->head) return; /* its output is the logits, its gradient dlogits */
    size_t bytes = bytes_of(u, c->out_channels, c->out_h, c->out_w);
    add_tensor(r, c->name, "out", bytes, &c->out);
    add_tensor(r, c->name, "act", bytes, &c->act);
    add_tensor(r, c->name, "dout", bytes, &c->dout);
    if (c->remade && !c->remade_upsampled)
        add_tensor(r, c->name, "act.again", bytes, &c->act_again);
    if (c->recomputed) add_tensor(r, c->name, "out.again", bytes, &c->out_again);
    if (tt_unet_resnet_keeps_16(u, c)) /* out then lives for the convolution alone */
        add_tensor(r, c->name, "out.half", bytes / 2, &c->out_half);
    tt_batch_norm_desc d = tt_batch_norm_desc_make(u->capacity, c->out_channels, c->out_h, c->out_w);
    size_t saved = tt_batch_norm_saved_floats(&d);
    if (c->remade_upsampled) { /* its norm runs over the upsampled output too */
        tt_batch_norm_desc up = tt_batch_norm_desc_make(u->capacity, c->out_channels,
                                                        2 * c->out_h, 2 * c->out_w);
        size_t more = tt_batch_norm_saved_floats(&up);
        if (more > saved) saved = more;
    }
    add_tensor(r, c->name, "saved", saved * sizeof(float), &c->saved);
}

static void build_requests(tt_unet_resnet *u, tt_arena_plan *r)
{
    tt_ur_conv *convs[MAX_CONVS];
    int nc = convs_of(u, convs);
    for (int i = 0; i < nc; i++) add_conv_tensors(r, u, convs[i]);
    size_t pooled = bytes_of(u, 64, u->blocks[0].conv1.in_h, u->blocks[0].conv1.in_w);
    tt_arena_plan_add(r, "encoder.maxpool", pooled, &u->pool);
    tt_arena_plan_add(r, "encoder.maxpool.grad", pooled, &u->dpool);
    tt_arena_plan_add(r, "encoder.maxpool.argmax", pooled / sizeof(float) * sizeof(int32_t),
                      &u->pool_argmax);
    if (u->pool_again_made) {
        tt_arena_plan_add(r, "encoder.maxpool.again", pooled, &u->pool_again);
        add_tensor(r, u->stem.name, "act.pool",
                   bytes_of(u, u->stem.out_channels, u->stem.out_h, u->stem.out_w),
                   &u->stem_act_pool);
    }
    for (int i = 0; i < u->block_count; i++) {
        tt_ur_block *b = &u->blocks[i];
        size_t bytes = bytes_of(u, b->conv2.out_channels, b->conv2.out_h, b->conv2.out_w);
        add_tensor(r, b->conv1.name, "block.dy", bytes, &b->dy); /* y is conv2.act (connect) */
        if (!b->output_again) continue;
        add_tensor(r, b->conv1.name, "block.y.again", bytes, &b->y_again);
        if (b->conv2.recomputed) add_tensor(r, b->conv1.name, "block.pass.a", bytes, &b->pass_a);
        if (b->conv2.recomputed || b->has_down)
            add_tensor(r, b->conv1.name, "block.pass.b", bytes, &b->pass_b);
    }
    for (int i = 0; i < TT_UR_DECODER_BLOCKS; i++) {
        tt_ur_decoder *d = &u->dec[i];
        size_t up = bytes_of(u, d->in_channels, d->h, d->w);
        add_tensor(r, d->conv1.name, "up", up, &d->up);
        add_tensor(r, d->conv1.name, "up.again", up, &d->up_again);
        add_tensor(r, d->conv1.name, "dup", up, &d->dup);
        if (d->skip_conv && d->skip_conv->recomputed)
            add_tensor(r, d->conv1.name, "skip.conv.out",
                       bytes_of(u, d->skip_channels, d->h, d->w), &d->skip_out_again);
        if (d->conv2.recomputed) {
            size_t out = bytes_of(u, d->channels, d->h, d->w);
            add_tensor(r, d->conv1.name, "pass.up", up, &d->pass_up);
            add_tensor(r, d->conv1.name, "pass.out", out, &d->pass_out);
            add_tensor(r, d->conv1.name, "pass.act", out, &d->pass_act);
        }
        if (!d->conv1.recomputed) continue;
        add_tensor(r, d->conv1.name, "up.pass", up, &d->up_pass);
        if (d->skip_conv)
            add_tensor(r, d->conv1.name, "skip.pass",
                       bytes_of(u, d->skip_channels, d->h, d->w), &d->skip_pass);
    }
    size_t logits = bytes_of(u, u->spec.classes, u->height, u->width);
    tt_arena_plan_add(r, "logits", logits, &u->logits);
    tt_arena_plan_add(r, "dlogits", logits, &u->dlogits);
}

/* The places shared by declaration: the head writes the logits and reads
 * its gradient from dlogits; a basic block's sum relu(conv2.act + identity) goes over conv2.act, which
 * nothing else reads (bn2's backward reads conv2.out, the sum's its
 * output). */
static void connect(tt_unet_resnet *u)
{
    for (int i = 0; i < u->block_count; i++) u->blocks[i].y = u->blocks[i].conv2.act;
    u->head.out = u->head.act = u->logits;
    u->head.dout = u->dlogits;
}

static tt_status record_step(void *model, tt_backend *recorder)
{
    tt_unet_resnet *u = model;
    tt_model *m = &u->model;
    int64_t *kept = malloc(sizeof *kept * (size_t)(m->counter_count + 1));
    if (!kept) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", u->spec.kind);
    for (int i = 0; i < m->counter_count; i++) kept[i] = *m->counters[i].value;
    connect(u);
    tt_backend *be = u->be;
    u->be = recorder;
    tt_status status = tt_unet_resnet_forward(u, u->capacity, 1);
    if (!status) status = tt_copy(recorder, u->dlogits, u->logits,
                                  bytes_of(u, u->spec.classes, u->height, u->width));
    if (!status) status = tt_unet_resnet_backward(u);
    u->be = be;
    u->batch = u->training = 0;
    for (int i = 0; i < m->counter_count; i++) *m->counters[i].value = kept[i];
    free(kept);
    return status;
}

/* The decoder whose conv1 c is, when it runs as two halves; else NULL. */
static const tt_ur_decoder *split_decoder(const tt_unet_resnet *u, const tt_ur_conv *c)
{
    for (int k = 0; k < TT_UR_DECODER_BLOCKS; k++)
        if (c == &u->dec[k].conv1 && u->dec[k].skip) return &u->dec[k];
    return NULL;
}

/* The largest workspace of the convolutions as the step runs them (a
 * split conv1 as its halves), so that the autotuner's pending layers are
 * the ones the step times. */
static size_t workspace_bytes(tt_unet_resnet *u)
{
    tt_ur_conv *convs[MAX_CONVS];
    int nc = convs_of(u, convs);
    size_t ws = 0;
    for (int i = 0; i < nc; i++) {
        const tt_ur_decoder *dec = split_decoder(u, convs[i]);
        tt_conv2d_desc d[2];
        int parts = dec ? 2 : 1;
        if (dec) {
            d[0] = tt_unet_resnet_half_desc(u, dec, dec->in_channels, u->capacity);
            d[1] = tt_unet_resnet_half_desc(u, dec, dec->skip_channels, u->capacity);
        } else {
            d[0] = tt_unet_resnet_conv_desc(u, convs[i], u->capacity);
        }
        for (int k = 0; k < parts; k++) {
            size_t b = tt_conv2d_workspace_bytes_on(u->be, &d[k]);
            if (b > ws) ws = b;
        }
    }
    return ws;
}

static tt_status allocate(tt_unet_resnet *u)
{
    tt_status status = NULL;
    tt_arena_plan r = {0};
    TT_CHECK(tt_buffer_alloc(u->be, bytes_of(u, u->spec.in_channels, u->height, u->width),
                             TT_MEM_DATA, "input", &u->input_buffer));
    u->input = tt_mem_of(u->input_buffer);
    /* as the UNet: AUTO's room for every candidate, when more than one
     * buffer may hold, gives way to the direct kernels (no columns) */
    size_t ws = workspace_bytes(u);
    if (ws > u->be->device.max_alloc_bytes || ws > u->be->device.global_mem_bytes / 8) {
        u->conv_algo = tt_conv_direct_row(u->be);
        ws = workspace_bytes(u);
    }
    if (ws)
        TT_CHECK(tt_buffer_alloc(u->be, ws, TT_MEM_WORKSPACE, "conv.workspace", &u->workspace_buffer));
    size_t halves = 0; /* the largest decoder conv1 weight, and its gradient */
    for (int i = 0; i < TT_UR_DECODER_BLOCKS; i++) {
        const tt_ur_conv *c = &u->dec[i].conv1;
        size_t f = (size_t)c->out_channels * c->in_channels * c->kernel * c->kernel;
        if (f > halves) halves = f;
    }
    TT_CHECK(tt_buffer_alloc(u->be, 2 * halves * sizeof(float), TT_MEM_WORKSPACE,
                             "decoder.conv1.halves", &u->wsplit_buffer));
    build_requests(u, &r);
    tt_arena arena;
    TT_CHECK(tt_arena_plan_place(&r, u->be, record_step, u, &arena));
    u->act_buffers = arena.buffers;
    u->act_count = arena.count;
    u->act_planned_bytes = arena.planned_bytes;
    u->act_unplanned_bytes = arena.unplanned_bytes;
    connect(u);
cleanup:
    tt_arena_plan_free(&r);
    return status;
}

/* ---- the model interface ---------------------------------------------------- */

static tt_status forward(tt_model *m, int batch, int training)
{
    return tt_unet_resnet_forward((tt_unet_resnet *)m, batch, training);
}

static tt_status backward(tt_model *m) { return tt_unet_resnet_backward((tt_unet_resnet *)m); }

static double flops_per_image(const tt_model *m)
{
    tt_unet_resnet *u = (tt_unet_resnet *)m;
    tt_ur_conv *convs[MAX_CONVS];
    int nc = convs_of(u, convs);
    double flops = 0;
    for (int i = 0; i < nc; i++) {
        const tt_ur_conv *c = convs[i];
        flops += 2.0 * c->out_channels * c->out_h * c->out_w * c->in_channels * c->kernel * c->kernel;
    }
    return flops;
}

static void destroy(tt_model *m)
{
    tt_unet_resnet *u = (tt_unet_resnet *)m;
    if (!u) return;
    free(u->model.counters);
    for (int i = 0; i < u->act_count; i++) tt_buffer_free(u->act_buffers[i]);
    free(u->act_buffers);
    tt_buffer_free(u->input_buffer);
    tt_buffer_free(u->param_buffer);
    tt_buffer_free(u->grad_buffer);
    tt_buffer_free(u->state_buffer);
    tt_buffer_free(u->workspace_buffer);
    tt_buffer_free(u->wsplit_buffer);
    tt_params_free(&u->params);
    free(u);
}

static const tt_model_ops unet_resnet_ops = {forward, backward, flops_per_image, destroy};

/* The head's fields that exist before the arena (what the plan's record
 * reads: the arenas, the counters). */
static tt_status bind_head(tt_unet_resnet *u)
{
    _Static_assert(offsetof(tt_unet_resnet, model) == 0, "the head comes first");
    tt_model *m = &u->model;
    m->ops = &unet_resnet_ops;
    m->be = u->be;
    m->spec = u->spec;
    m->params = &u->params;
    m->param_buffer = u->param_buffer;
    m->grad_buffer = u->grad_buffer;
    m->state_buffer = u->state_buffer;
    m->capacity = u->capacity;
    m->height = u->height;
    m->width = u->width;
    tt_ur_conv *convs[MAX_CONVS];
    int nc = convs_of(u, convs);
    m->counters = calloc((size_t)nc, sizeof *m->counters);
    if (!m->counters) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", u->spec.kind);
    for (int i = 0; i < nc; i++) {
        tt_ur_conv *c = convs[i];
        if (c->bn_w < 0) continue;
        tt_model_counter *k = &m->counters[m->counter_count++];
        const char *norm = u->params.params[c->bn_w].name; /* "<norm>.weight" */
        snprintf(k->name, sizeof k->name, "%.*s.num_batches_tracked",
                 (int)(strlen(norm) - strlen(".weight")), norm);
        k->value = &c->bn.num_batches_tracked;
    }
    return NULL;
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
    tt_unet_resnet *u = calloc(1, sizeof *u);
    if (!u) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", spec->kind);
    static const int r18[4] = {2, 2, 2, 2}, r34[4] = {3, 4, 6, 3};
    memcpy(u->layers, strcmp(spec->kind, "unet-resnet18") == 0 ? r18 : r34, sizeof u->layers);
    u->be = be;
    u->spec = *spec;
    u->capacity = capacity, u->height = height, u->width = width;
    u->conv_algo = spec->algo;
    tt_status status = NULL;
    float *host = NULL, *state = NULL;
    TT_CHECK(build_layers(u));
    size_t nt = u->params.trainable_floats, ns = u->params.state_floats;
    TT_CHECK(tt_buffer_alloc(be, nt * sizeof(float), TT_MEM_PARAMETERS, "parameters", &u->param_buffer));
    TT_CHECK(tt_buffer_alloc(be, nt * sizeof(float), TT_MEM_GRADIENTS, "gradients", &u->grad_buffer));
    TT_CHECK(tt_buffer_alloc(be, ns * sizeof(float), TT_MEM_PARAMETERS, "running statistics",
                             &u->state_buffer));
    TT_CHECK(bind_head(u));
    tt_ur_conv *convs[MAX_CONVS];
    int nc = convs_of(u, convs);
    for (int i = 0; i < nc; i++)
        bind_norm(u, convs[i], strncmp(convs[i]->name, "encoder.", 8) == 0);
    TT_CHECK(allocate(u));
    u->model.input = u->input;
    u->model.logits = u->logits;
    u->model.dlogits = u->dlogits;
    u->model.memory = (tt_model_memory){.activations = u->act_planned_bytes,
                                        .activations_apart = u->act_unplanned_bytes,
                                        .workspace = u->workspace_buffer ? u->workspace_buffer->bytes : 0};
    host = malloc(nt * sizeof *host);
    state = malloc((ns + 1) * sizeof *state);
    if (!host || !state) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s: out of host memory", spec->kind);
        goto cleanup;
    }
    tt_params_init(&u->params, seed, host, state);
    TT_CHECK(tt_write(be, tt_mem_of(u->param_buffer), host, nt * sizeof(float)));
    if (ns) TT_CHECK(tt_write(be, tt_mem_of(u->state_buffer), state, ns * sizeof(float)));
    TT_CHECK(tt_fill(be, tt_mem_of(u->grad_buffer), 0.0f, nt));
    *out = &u->model;
cleanup:
    free(host);
    free(state);
    if (status) destroy(&u->model);
    return status;
}

tt_status tt_unet_resnet_conv_shapes(const tt_model_spec *spec, int height, int width,
                                        tt_model_conv *out, int max, int *count)
{
    TT_TRY(check(spec, 1, height, width));
    /* the stride-1 3x3 shapes: per encoder layer, per decoder block; then
     * the stem and each of layers 2-4's first block, which halves the plane
     * (its 3x3 and the 1x1 of its down-sampling path) */
    int r34 = strcmp(spec->kind, "unet-resnet34") == 0;
    static const int r18[4] = {2, 2, 2, 2}, l34[4] = {3, 4, 6, 3};
    const int *layers = r34 ? l34 : r18;
    static const int skip[TT_UR_DECODER_BLOCKS] = {256, 128, 64, 64, 0};
    int n = 0, cin = 512;
    for (int l = 0; l < 4 && n < max; l++) {
        tt_model_conv *c = &out[n++];
        *c = (tt_model_conv){.in_channels = layer_channels[l], .out_channels = layer_channels[l],
                             .kernel = 3, .stride = 1, .height = height >> (l + 2),
                             .width = width >> (l + 2), .count = 2 * layers[l] - (l > 0)};
        snprintf(c->label, sizeof c->label, "encoder.layer%d", l + 1);
    }
    for (int i = 0; i < TT_UR_DECODER_BLOCKS && n + 1 < max; i++) {
        int h = height >> (4 - i), w = width >> (4 - i), ch = decoder_channels[i];
        out[n] = (tt_model_conv){.in_channels = cin + skip[i], .out_channels = ch, .kernel = 3,
                                 .stride = 1, .height = h, .width = w, .count = 1};
        snprintf(out[n++].label, sizeof out[0].label, "decoder.blocks.%d.conv1", i);
        out[n] = (tt_model_conv){.in_channels = ch, .out_channels = ch, .kernel = 3, .stride = 1,
                                 .height = h, .width = w, .count = 1};
        snprintf(out[n++].label, sizeof out[0].label, "decoder.blocks.%d.conv2", i);
        cin = ch;
    }
    enum { AFTER = 1 + 1 + 3 * 2 }; /* the head, the stem, layers 2-4's 3x3 and 1x1 */
    if (n + AFTER > max)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s has more convolution shapes than room "
                            "for %d", spec->kind, max);
    out[n] = (tt_model_conv){.in_channels = cin, .out_channels = spec->classes, .kernel = 3,
                             .stride = 1, .height = height, .width = width, .count = 1};
    snprintf(out[n++].label, sizeof out[0].label, "segmentation_head.0");
    out[n] = (tt_model_conv){.in_channels = spec->in_channels, .out_channels = 64, .kernel = 7,
                             .stride = 2, .height = height, .width = width, .count = 1,
                             .no_input_grad = 1};
    snprintf(out[n++].label, sizeof out[0].label, "encoder.conv1");
    for (int l = 1; l < 4; l++) {
        int h = height >> (l + 1), w = width >> (l + 1);
        for (int k = 3; k >= 1; k -= 2) {
            out[n] = (tt_model_conv){.in_channels = layer_channels[l - 1],
                                     .out_channels = layer_channels[l], .kernel = k, .stride = 2,
                                     .height = h, .width = w, .count = 1};
            snprintf(out[n++].label, sizeof out[0].label, k == 3 ? "encoder.layer%d.0.conv1"
                     : "encoder.layer%d.0.downsample.0", l + 1);
        }
    }
    *count = n;
    return NULL;
}

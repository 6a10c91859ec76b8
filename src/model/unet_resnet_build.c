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
#include "model/head.h"
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

static tt_status allocate(tt_unet_resnet *u)
{
    tt_status status = NULL;
    tt_arena_plan r = {0};
    TT_CHECK(tt_model_head_input(&u->model));
    u->input = u->model.input;
    size_t halves = 0; /* the largest decoder conv1 weight, and its gradient */
    for (int i = 0; i < TT_UR_DECODER_BLOCKS; i++) {
        const tt_ur_conv *c = &u->dec[i].conv1;
        size_t f = (size_t)c->out_channels * c->in_channels * c->kernel * c->kernel;
        if (f > halves) halves = f;
    }
    TT_CHECK(tt_buffer_alloc(u->be, 2 * halves * sizeof(float), TT_MEM_WORKSPACE,
                             "decoder.conv1.halves", &u->wsplit_buffer));
    build_requests(u, &r);
    /* the workspace from the step's convolutions (a split conv1 as its
     * halves), then the lives with it in place */
    TT_CHECK(tt_model_size_convs(&u->model, &r, record_step, u, &u->conv_algo));
    TT_CHECK(tt_model_head_place(&u->model, &r, record_step, u));
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

static void destroy(tt_model *m)
{
    tt_unet_resnet *u = (tt_unet_resnet *)m;
    if (!u) return;
    tt_model_head_free(&u->model);
    tt_buffer_free(u->wsplit_buffer);
    tt_params_free(&u->params);
    free(u);
}

static const tt_model_ops unet_resnet_ops = {forward, backward, destroy};

/* The head's fields that exist before the arena (what the plan's record
 * reads: the arenas, the counters). */
static tt_status bind_head(tt_unet_resnet *u)
{
    _Static_assert(offsetof(tt_unet_resnet, model) == 0, "the head comes first");
    tt_model *m = &u->model;
    m->ops = &unet_resnet_ops;
    m->be = u->be;
    m->spec = u->spec;
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
    TT_CHECK(build_layers(u));
    TT_CHECK(bind_head(u));
    TT_CHECK(tt_model_head_params(&u->model, &u->params, seed));
    tt_ur_conv *convs[MAX_CONVS];
    int nc = convs_of(u, convs);
    for (int i = 0; i < nc; i++)
        bind_norm(u, convs[i], strncmp(convs[i]->name, "encoder.", 8) == 0);
    TT_CHECK(allocate(u));
    u->model.logits = u->logits;
    u->model.dlogits = u->dlogits;
    *out = &u->model;
cleanup:
    if (status) destroy(&u->model);
    return status;
}

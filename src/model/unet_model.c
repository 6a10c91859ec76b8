/* The UNet behind the model interface (model/model.h): its kind's
 * constructor, the spec <-> configuration mapping, and the model head
 * filled from the built UNet. */
#include "model/unet.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

tt_unet_config tt_unet_config_of(const tt_model_spec *s)
{
    return (tt_unet_config){.in_channels = s->in_channels, .classes = s->classes,
                            .base_channels = s->base_channels, .depth = s->depth, .norm = s->norm,
                            .groups = s->groups, .checkpointing = s->checkpointing,
                            .algo = s->algo, .precision = s->precision};
}

tt_model_spec tt_unet_spec_of(const tt_unet_config *c)
{
    tt_model_spec s = {.kind = "unet", .in_channels = c->in_channels, .classes = c->classes,
                       .base_channels = c->base_channels, .depth = c->depth, .norm = c->norm,
                       .groups = c->groups, .checkpointing = c->checkpointing, .algo = c->algo,
                       .precision = c->precision};
    return s;
}

static tt_status forward(tt_model *m, int batch, int training)
{
    return tt_unet_forward(tt_unet_of(m), batch, training);
}

static tt_status backward(tt_model *m) { return tt_unet_backward(tt_unet_of(m)); }

static double flops_per_image(const tt_model *m)
{
    return tt_unet_flops_per_image((const tt_unet *)m);
}

static void destroy(tt_model *m) { tt_unet_destroy(tt_unet_of(m)); }

static const tt_model_ops unet_ops = {forward, backward, flops_per_image, destroy};

/* Every block of the UNet, in a fixed order. */
static int blocks_of(tt_unet *u, tt_unet_block **out)
{
    int n = 0;
    for (int i = 0; i < u->config.depth; i++) out[n++] = &u->enc[i];
    out[n++] = &u->bottleneck;
    for (int i = 0; i < u->config.depth; i++) out[n++] = &u->dec[i];
    return n;
}

/* Fills the head from the built UNet. */
static tt_status bind(tt_unet *u)
{
    _Static_assert(offsetof(tt_unet, model) == 0, "tt_unet_of casts: the head comes first");
    tt_model *m = &u->model;
    m->ops = &unet_ops;
    m->be = u->be;
    m->spec = tt_unet_spec_of(&u->config);
    m->params = &u->params;
    m->param_buffer = u->param_buffer;
    m->grad_buffer = u->grad_buffer;
    m->state_buffer = u->state_buffer;
    m->capacity = u->capacity;
    m->height = u->height;
    m->width = u->width;
    m->input = u->input;
    m->logits = u->logits;
    m->dlogits = u->dlogits;
    m->memory = (tt_model_memory){.activations = u->act_planned_bytes,
                                  .activations_apart = u->act_unplanned_bytes,
                                  .workspace = u->workspace_buffer ? u->workspace_buffer->bytes : 0};
    if (u->config.norm != TT_NORM_BATCH) return NULL;
    tt_unet_block *blocks[2 * TT_UNET_MAX_DEPTH + 1];
    int nb = blocks_of(u, blocks);
    m->counters = calloc((size_t)nb * 2, sizeof *m->counters);
    if (!m->counters) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "UNet: out of host memory");
    for (int i = 0; i < nb; i++) {
        tt_model_counter *c = &m->counters[m->counter_count];
        snprintf(c[0].name, sizeof c[0].name, "%s.norm1.num_batches_tracked", blocks[i]->name);
        c[0].value = &blocks[i]->bn1.num_batches_tracked;
        snprintf(c[1].name, sizeof c[1].name, "%s.norm2.num_batches_tracked", blocks[i]->name);
        c[1].value = &blocks[i]->bn2.num_batches_tracked;
        m->counter_count += 2;
    }
    return NULL;
}

tt_status tt_unet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                               int width, uint64_t seed, tt_model **out)
{
    *out = NULL;
    tt_unet_config c = tt_unet_config_of(spec);
    tt_unet *u = NULL;
    TT_TRY(tt_unet_create(be, &c, capacity, height, width, seed, &u));
    tt_status status = bind(u);
    if (status) {
        tt_unet_destroy(u);
        return status;
    }
    *out = &u->model;
    return NULL;
}

tt_status tt_unet_conv_shapes(const tt_model_spec *spec, int height, int width,
                                 tt_model_conv *out, int max, int *count)
{
    tt_unet_config c = tt_unet_config_of(spec);
    c.norm = TT_NORM_NONE; /* the convolutions alone; any groups will do */
    TT_TRY(tt_unet_config_check(&c));
    int unit = 1 << c.depth;
    if (height % unit || width % unit || height < unit || width < unit)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "--tile %dx%d: both sides must be multiples of 2^depth = %d",
                            height, width, unit);
    if (max < 3 * c.depth + 3)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "UNet of depth %d has %d convolution "
                            "shapes, room for %d", c.depth, 3 * c.depth + 3, max);
    int n = 0;
    for (int i = 0; i <= c.depth; i++) {
        int ci = tt_unet_channels(&c, i), below = i ? tt_unet_channels(&c, i - 1) : c.in_channels;
        tt_model_conv *a = &out[n++], *b = &out[n++];
        *a = (tt_model_conv){.in_channels = below, .out_channels = ci, .kernel = 3, .stride = 1,
                             .height = height >> i, .width = width >> i, .count = 1,
                             .no_input_grad = i == 0};
        *b = (tt_model_conv){.in_channels = ci, .out_channels = ci, .kernel = 3, .stride = 1,
                             .height = height >> i, .width = width >> i,
                             .count = i < c.depth ? 4 : 1};
        if (i < c.depth) {
            snprintf(a->label, sizeof a->label, "enc.%d.conv1", i);
            snprintf(b->label, sizeof b->label, "level %d, C -> C", i);
        } else {
            snprintf(a->label, sizeof a->label, "bottleneck.conv1");
            snprintf(b->label, sizeof b->label, "bottleneck.conv2");
        }
    }
    out[n] = (tt_model_conv){.in_channels = tt_unet_channels(&c, 0), .out_channels = c.classes,
                             .kernel = 1, .stride = 1, .height = height, .width = width,
                             .count = 1};
    snprintf(out[n++].label, sizeof out[0].label, "head");
    for (int i = 0; i < c.depth; i++) { /* as tt_unet_upconv */
        int ch = tt_unet_channels(&c, i);
        out[n] = (tt_model_conv){.in_channels = 2 * ch, .out_channels = ch, .kernel = 2,
                                 .stride = 2, .height = (height >> i) / 2,
                                 .width = (width >> i) / 2, .count = 1, .transposed = 1};
        snprintf(out[n++].label, sizeof out[0].label, "up.%d", i);
    }
    *count = n;
    return NULL;
}

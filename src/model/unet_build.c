/*
 * Building the UNet as a model of kind "unet": the layer list on the
 * executor (unet_graph.c), or the banded step (tt_unet): its blocks
 * (names, sizes, parameter indices), its parameters initialised from a
 * seed, and its memory (unet_memory.c plans the arena by recording one
 * forward and backward of unet_banded.c).
 */
#include "model/unet.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/knobs.h"
#include "core/status.h"
#include "model/head.h"
#include "model/unet_graph.h"

/* ---- one block ------------------------------------------------------------ */

static void block_init(tt_unet *u, tt_unet_block *b, const char *name, int cin, int c, int h, int w)
{
    snprintf(b->name, sizeof b->name, "%s", name);
    b->in_channels = cin;
    b->channels = c;
    b->height = h;
    b->width = w;
    char p1[48], p2[48];
    snprintf(p1, sizeof p1, "%s.conv1", name);
    snprintf(p2, sizeof p2, "%s.conv2", name);
    b->conv1_w = tt_unet_param_index(u, p1, "weight"), b->conv1_b = tt_unet_param_index(u, p1, "bias");
    b->conv2_w = tt_unet_param_index(u, p2, "weight"), b->conv2_b = tt_unet_param_index(u, p2, "bias");
    snprintf(p1, sizeof p1, "%s.norm1", name);
    snprintf(p2, sizeof p2, "%s.norm2", name);
    b->norm1_w = tt_unet_param_index(u, p1, "weight"), b->norm1_b = tt_unet_param_index(u, p1, "bias");
    b->norm2_w = tt_unet_param_index(u, p2, "weight"), b->norm2_b = tt_unet_param_index(u, p2, "bias");
    b->norm1_rm = tt_unet_param_index(u, p1, "running_mean"), b->norm1_rv = tt_unet_param_index(u, p1, "running_var");
    b->norm2_rm = tt_unet_param_index(u, p2, "running_mean"), b->norm2_rv = tt_unet_param_index(u, p2, "running_var");

    tt_norm_kind norm = u->config.norm;
    if (norm == TT_NORM_BATCH) {
        b->bn1 = (tt_batch_norm_state){tt_unet_param(u, b->norm1_w), tt_unet_param(u, b->norm1_b),
                                       tt_unet_param(u, b->norm1_rm), tt_unet_param(u, b->norm1_rv), 0};
        b->bn2 = (tt_batch_norm_state){tt_unet_param(u, b->norm2_w), tt_unet_param(u, b->norm2_b),
                                       tt_unet_param(u, b->norm2_rm), tt_unet_param(u, b->norm2_rv), 0};
    }
}

/* ---- the whole model ------------------------------------------------------ */

/* Names, sizes and parameter indices of every block; memory comes later. */
static tt_status init_blocks(tt_unet *u)
{
    const tt_unet_config *c = &u->config;
    char name[24];
    int cin = c->in_channels;
    for (int i = 0; i < c->depth; i++) {
        snprintf(name, sizeof name, "enc.%d", i);
        block_init(u, &u->enc[i], name, cin, tt_unet_channels(c, i), u->height >> i, u->width >> i);
        u->enc[i].level = i;
        cin = tt_unet_channels(c, i);
    }
    block_init(u, &u->bottleneck, "bottleneck", cin, tt_unet_channels(c, c->depth),
               u->height >> c->depth, u->width >> c->depth);
    u->bottleneck.level = c->depth;
    for (int i = 0; i < c->depth; i++) {
        int ch = tt_unet_channels(c, i);
        snprintf(name, sizeof name, "dec.%d", i);
        block_init(u, &u->dec[i], name, 2 * ch, ch, u->height >> i, u->width >> i);
        u->dec[i].level = i;
    }
    return NULL;
}

/* The banded step runs its convolutions over its bands' halo rows too:
 * the model's FLOPs and convolution shapes are those of the plain step,
 * taken from a twin of the same layers built on a dry backend. */
static tt_status take_plain_convs(tt_unet *u)
{
    tt_unet_config plain = u->config;
    plain.precision = TT_PRECISION_FP32;
    plain.checkpointing = 0;
    tt_backend *dry = NULL;
    tt_model *twin = NULL;
    tt_status status = NULL;
    TT_CHECK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY,
                                                     .like = &u->be->device,
                                                     .stands_for = u->be->kernels_of},
                               &dry));
    TT_CHECK(tt_unet_graph_create(dry, &plain, 1, u->height, u->width, 0, &twin));
    free(u->model.convs);
    u->model.convs = twin->convs;
    u->model.conv_count = twin->conv_count;
    u->model.flops_per_image = twin->flops_per_image;
    twin->convs = NULL;
cleanup:
    if (twin) twin->ops->destroy(twin);
    tt_backend_destroy(dry);
    return status;
}

/* The banded step behind the model interface. */
static tt_status forward(tt_model *m, int batch, int training)
{
    return tt_unet_forward((tt_unet *)m, batch, training);
}

static tt_status backward(tt_model *m) { return tt_unet_backward((tt_unet *)m); }

static void destroy(tt_model *m) { tt_unet_destroy((tt_unet *)m); }

static const tt_model_ops unet_ops = {forward, backward, destroy};

/* The head's fields that exist before the arena: what the plan's record
 * reads (the kind's functions, its sizes, the counters by name). */
static tt_status bind_head(tt_unet *u)
{
    tt_model *m = &u->model;
    m->ops = &unet_ops;
    m->be = u->be;
    m->spec = tt_unet_spec_of(&u->config);
    m->capacity = u->capacity;
    m->height = u->height;
    m->width = u->width;
    if (u->config.norm != TT_NORM_BATCH) return NULL;
    tt_unet_block *blocks[2 * TT_UNET_MAX_DEPTH + 1];
    int nb = 0;
    for (int i = 0; i < u->config.depth; i++) blocks[nb++] = &u->enc[i];
    blocks[nb++] = &u->bottleneck;
    for (int i = 0; i < u->config.depth; i++) blocks[nb++] = &u->dec[i];
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

tt_status tt_unet_create(tt_backend *be, const tt_unet_config *config, int capacity, int height,
                         int width, uint64_t seed, tt_unet **out)
{
    *out = NULL;
    TT_TRY(tt_unet_config_check(config));
    if (config->depth > TT_UNET_MAX_DEPTH)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "UNet depth %d: at most %d", config->depth,
                            TT_UNET_MAX_DEPTH);
    TT_TRY(tt_unet_tile_check(config, capacity, height, width));
    if (!tt_unet_banded(config)) /* the layer list's (unet_graph.c) */
        return tt_error_new(TT_ERR_INTERNAL, "UNet: the hand-written step is the banded one "
                            "(16-bit storage, checkpointing and a norm); use tt_model_create");
    _Static_assert(offsetof(tt_unet, model) == 0, "tt_unet_of casts: the head comes first");
    tt_unet *u = calloc(1, sizeof *u);
    if (!u) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "UNet: out of host memory");
    u->be = be;
    u->config = *config;
    u->conv_algo = config->algo;
    u->capacity = capacity;
    u->height = height;
    u->width = width;
    tt_status status = NULL;
    TT_CHECK(tt_unet_params(config, &u->params));
    const char *poison = tt_knob_str(TT_KNOB_POISON_ACTIVATIONS);
    u->poison = poison != NULL;
    u->poison_value = poison && *poison ? strtof(poison, NULL) : NAN;
    u->model.be = be;
    TT_CHECK(tt_model_head_params(&u->model, &u->params, seed));
    TT_CHECK(init_blocks(u)); /* its batch norms' places in the arenas */
    TT_CHECK(bind_head(u));
    TT_CHECK(tt_unet_allocate(u));
    TT_CHECK(take_plain_convs(u));
    *out = u;
cleanup:
    if (status) tt_unet_destroy(u);
    return status;
}

void tt_unet_destroy(tt_unet *u)
{
    if (!u) return;
    tt_model_head_free(&u->model);
    tt_buffer_free(u->wsplit_buffer);
    tt_buffer_free(u->band_buffer);
    tt_params_free(&u->params);
    free(u);
}

tt_status tt_unet_model_create(tt_backend *be, const tt_model_spec *spec, int capacity, int height,
                               int width, uint64_t seed, tt_model **out)
{
    *out = NULL;
    tt_unet_config c = tt_unet_config_of(spec);
    if (!tt_unet_banded(&c)) /* the layer list on the executor (unet_graph.c) */
        return tt_unet_graph_create(be, &c, capacity, height, width, seed, out);
    tt_unet *u = NULL;
    TT_TRY(tt_unet_create(be, &c, capacity, height, width, seed, &u));
    *out = &u->model;
    return NULL;
}

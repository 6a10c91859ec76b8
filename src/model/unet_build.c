/*
 * Building the UNet: its blocks (names, sizes, parameter indices, which
 * are recomputed with checkpointing), its parameters initialised from a
 * seed, and its memory (unet_memory.c plans the arena by recording one
 * forward and backward of unet.c).  The passes themselves are unet.c.
 */
#include "model/unet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/knobs.h"
#include "core/status.h"

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
    /* With checkpointing, dec.0's backward is the step's memory peak: it
     * runs in two rooms and pays one more conv1 (lean_backward) */
    u->dec[0].lean = c->checkpointing && c->norm != TT_NORM_NONE;
    /* Checkpointing recomputes every block in backward.  enc.0 always is:
     * its input is the image, kept anyway, so remaking it costs its two
     * convolutions (the first from 3 channels) and keeps two level-0
     * tensors out of the whole step. */
    for (int i = 0; i < c->depth; i++) u->enc[i].recompute = u->dec[i].recompute = c->checkpointing;
    u->bottleneck.recompute = c->checkpointing;
    u->enc[0].recompute = 1;
    /* The deepest encoder's set made again for dec's skip is kept for its
     * own backward, a quarter of level 1's size; level 1's is not kept: it
     * would raise the step's peak, which dec.1's backward sets. */
    if (c->depth > 1) u->enc[c->depth - 1].keeps_again = c->checkpointing;
    /* 16-bit storage with checkpointing: the banded step (unet_banded.c) */
    int banded = tt_knob_flag(TT_KNOB_UNET_BANDED, tt_unet_stores_16(u));
    u->banded = c->checkpointing && banded && c->norm != TT_NORM_NONE;
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
    int multiple = 1 << config->depth;
    if (capacity < 1 || height < multiple || width < multiple || height % multiple ||
        width % multiple)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "UNet of depth %d needs a tile whose height and width are multiples "
                            "of %d (got %dx%d) and a micro-batch >= 1 (got %d); try --tile %dx%d",
                            config->depth, multiple, height, width, capacity,
                            (height + multiple - 1) / multiple * multiple,
                            (width + multiple - 1) / multiple * multiple);
    tt_unet *u = calloc(1, sizeof *u);
    if (!u) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "UNet: out of host memory");
    u->be = be;
    u->config = *config;
    u->conv_algo = config->algo;
    u->capacity = capacity;
    u->height = height;
    u->width = width;
    tt_status status = NULL;
    float *host = NULL, *state = NULL;
    TT_CHECK(tt_unet_params(config, &u->params));
    TT_CHECK(tt_buffer_alloc(be, u->params.trainable_floats * sizeof(float), TT_MEM_PARAMETERS,
                             "parameters", &u->param_buffer));
    TT_CHECK(tt_buffer_alloc(be, u->params.trainable_floats * sizeof(float), TT_MEM_GRADIENTS,
                             "gradients", &u->grad_buffer));
    if (u->params.state_floats)
        TT_CHECK(tt_buffer_alloc(be, u->params.state_floats * sizeof(float), TT_MEM_PARAMETERS,
                                 "running statistics", &u->state_buffer));
    const char *poison = tt_knob_str(TT_KNOB_POISON_ACTIVATIONS);
    u->poison = poison != NULL;
    u->poison_value = poison && *poison ? strtof(poison, NULL) : NAN;
    TT_CHECK(init_blocks(u));
    TT_CHECK(tt_unet_allocate(u));
    host = malloc(u->params.trainable_floats * sizeof *host);
    state = malloc((u->params.state_floats + 1) * sizeof *state);
    if (!host || !state) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "UNet: out of host memory");
        goto cleanup;
    }
    tt_params_init(&u->params, seed, host, state);
    TT_CHECK(tt_unet_set_params(u, host, state));
    TT_CHECK(tt_unet_zero_grads(u));
    *out = u;
cleanup:
    free(host);
    free(state);
    if (status) tt_unet_destroy(u);
    return status;
}

void tt_unet_destroy(tt_unet *u)
{
    if (!u) return;
    free(u->model.counters); /* the head's, when bound (unet_model.c) */
    for (int i = 0; i < u->act_count; i++) tt_buffer_free(u->act_buffers[i]);
    free(u->act_buffers);
    tt_buffer_free(u->input_buffer);
    tt_buffer_free(u->param_buffer);
    tt_buffer_free(u->grad_buffer);
    tt_buffer_free(u->state_buffer);
    tt_buffer_free(u->workspace_buffer);
    tt_buffer_free(u->wsplit_buffer);
    tt_buffer_free(u->band_buffer);
    tt_params_free(&u->params);
    free(u);
}

tt_status tt_unet_get_params(tt_unet *u, float *trainable, float *state)
{
    if (trainable)
        TT_TRY(tt_read(u->be, trainable, tt_mem_of(u->param_buffer),
                       u->params.trainable_floats * sizeof(float)));
    if (state && u->state_buffer)
        TT_TRY(tt_read(u->be, state, tt_mem_of(u->state_buffer),
                       u->params.state_floats * sizeof(float)));
    return NULL;
}

tt_status tt_unet_set_params(tt_unet *u, const float *trainable, const float *state)
{
    if (trainable)
        TT_TRY(tt_write(u->be, tt_mem_of(u->param_buffer), trainable,
                        u->params.trainable_floats * sizeof(float)));
    if (state && u->state_buffer)
        TT_TRY(tt_write(u->be, tt_mem_of(u->state_buffer), state,
                        u->params.state_floats * sizeof(float)));
    return NULL;
}

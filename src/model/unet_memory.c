/*
 * Where the banded UNet step's tensors live (unet_banded.c).  This file
 * names every tensor of one training step; when each lives is not written
 * here: model/arena_plan.c runs one step (record_step below) on a
 * recording dry backend and takes every tensor's life from the first to
 * the last operation that touches it, and core/plan.c places them so that
 * a tensor's bytes are reused once it is dead.
 *
 * Each full-size tensor is stored in 16 bits (fp32 at an odd width): per
 * block conv1 and conv2 of the forward and made again (".again"), its
 * output (kept: the checkpoint), its gradient (in place down the block)
 * and its input's gradient; enc.i (i > 0) made again as dec.i's skip
 * (".skip"); up.i for the forward, made again for dec.i's recomputation
 * and for its weight gradient; pool.i and pool.i made again; the logits.
 * Its band rooms are a workspace of their own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/arena_plan.h"
#include "model/head.h"
#include "model/unet.h"
#include "model/unet_internal.h"
#include "ops/batch_norm.h"
#include "ops/conv_autotune.h"
#include "ops/group_norm.h"

static size_t tensor_bytes(const tt_unet *u, int channels, int h, int w)
{
    return (size_t)u->capacity * (size_t)channels * (size_t)h * (size_t)w * sizeof(float);
}


static void add_tensor(tt_arena_plan *r, const tt_unet_block *b, const char *tag,
                       const char *what, size_t bytes, tt_mem *dest)
{
    char name[48];
    snprintf(name, sizeof name, "%s%s.%s", b->name, tag, what);
    tt_arena_plan_add(r, name, bytes, dest);
}

/* Bytes of one of the block's norms' saved statistics (and scratch). */
static size_t norm_saved_bytes(const tt_unet *u, const tt_unet_block *b)
{
    tt_group_norm_desc gd =
        tt_group_norm_desc_make(u->capacity, b->channels, b->height, b->width, u->config.groups);
    tt_batch_norm_desc bd = tt_batch_norm_desc_make(u->capacity, b->channels, b->height, b->width);
    return sizeof(float) * (u->config.norm == TT_NORM_GROUP ? tt_group_norm_saved_floats(&gd)
                                                            : tt_batch_norm_saved_floats(&bd));
}

/* Bytes of a full-size tensor of the banded step, stored as
 * tt_unet_band_store says for its width. */
static size_t stored_bytes(const tt_unet *u, int channels, int h, int w)
{
    return (size_t)u->capacity * (size_t)channels * (size_t)h * (size_t)w *
           tt_precision_bytes(tt_unet_band_store(u, w));
}

/* A block of the banded step: conv1 and conv2 of the forward and made
 * again for the backward, its kept output, its gradient, the forward's
 * norm statistics and (dinput > 0 channels) its input's gradient. */
static void add_banded_block(tt_arena_plan *r, const tt_unet *u, tt_unet_block *b, int dinput)
{
    size_t bytes = stored_bytes(u, b->channels, b->height, b->width);
    tt_unet_block_bands *t = &b->band;
    add_tensor(r, b, "", "conv1", bytes, &t->conv1);
    add_tensor(r, b, "", "conv2", bytes, &t->conv2);
    add_tensor(r, b, ".again", "conv1", bytes, &t->conv1_again);
    add_tensor(r, b, ".again", "conv2", bytes, &t->conv2_again);
    add_tensor(r, b, "", "out", bytes, &t->out);
    add_tensor(r, b, "", "grad", bytes, &t->grad);
    if (dinput)
        add_tensor(r, b, "", "dinput", stored_bytes(u, dinput, b->height, b->width), &t->dinput);
    size_t saved = norm_saved_bytes(u, b);
    add_tensor(r, b, "", "norm1.saved", saved, &b->saved1);
    add_tensor(r, b, "", "norm2.saved", saved, &b->saved2);
}

static void build_requests(tt_unet *u, tt_arena_plan *r)
{
    const tt_unet_config *c = &u->config;
    char name[48];
    for (int i = 0; i < c->depth; i++) {
        int ch = tt_unet_channels(c, i), h = u->height >> i, w = u->width >> i;
        tt_unet_block *e = &u->enc[i];
        add_banded_block(r, u, e, i ? tt_unet_channels(c, i - 1) : 0);
        if (i) { /* made again as dec.i's skip (unet_banded.c) */
            size_t bytes = stored_bytes(u, ch, h, w);
            add_tensor(r, e, ".skip", "conv1", bytes, &e->band.skip_conv1);
            add_tensor(r, e, ".skip", "conv2", bytes, &e->band.skip_conv2);
            add_tensor(r, e, ".skip", "out", bytes, &e->band.skip_out);
        }
        size_t pooled = stored_bytes(u, ch, h / 2, w / 2), level = stored_bytes(u, ch, h, w);
        snprintf(name, sizeof name, "enc.%d.pool", i);
        tt_arena_plan_add(r, name, pooled, &u->band_pool[i]);
        snprintf(name, sizeof name, "enc.%d.pool.again", i);
        tt_arena_plan_add(r, name, pooled, &u->band_pool_again[i]);
        add_banded_block(r, u, &u->dec[i], 0);
        snprintf(name, sizeof name, "up.%d", i);
        tt_arena_plan_add(r, name, level, &u->band_up[i]);
        snprintf(name, sizeof name, "up.%d.again", i);
        tt_arena_plan_add(r, name, level, &u->band_up_again[i]);
        snprintf(name, sizeof name, "up.%d.wgrad", i);
        tt_arena_plan_add(r, name, level, &u->band_up_wgrad[i]);
    }
    add_banded_block(r, u, &u->bottleneck, tt_unet_channels(c, c->depth - 1));
    size_t logits = tensor_bytes(u, c->classes, u->height, u->width);
    tt_arena_plan_add(r, "logits", logits, &u->logits);
    tt_arena_plan_add(r, "dlogits", logits, &u->dlogits);
}

/* The step the plan covers, on the recording backend: a training forward
 * of a whole micro-batch, the loss (it reads the logits and writes their
 * gradient in one go: one copy stands for it), and the backward.  Nothing
 * runs; the mode and batch of the last forward are put back here, batch
 * norm's counters by the head (head.c). */
static tt_status record_step(void *model, tt_backend *recorder)
{
    tt_unet *u = model;
    tt_backend *be = u->be;
    u->be = recorder;
    size_t logits = tensor_bytes(u, u->config.classes, u->height, u->width);
    tt_status status = tt_unet_forward(u, u->capacity, 1);
    if (!status) status = tt_copy(recorder, u->dlogits, u->logits, logits);
    if (!status) status = tt_unet_backward(u);
    u->be = be;
    u->batch = u->training = 0;
    return status;
}

tt_status tt_unet_allocate(tt_unet *u)
{
    const tt_unet_config *c = &u->config;
    tt_status status = NULL;
    tt_arena_plan r = {0};
    TT_CHECK(tt_model_head_input(&u->model));
    u->input = u->model.input;
    u->band_floats = tt_unet_band_room_floats(u);
    TT_CHECK(tt_buffer_alloc(u->be, 3 * u->band_floats * sizeof(float), TT_MEM_WORKSPACE,
                             "band rooms", &u->band_buffer));
    /* dec.i conv1 weight (C_i, 2 C_i, 3, 3) and its gradient, each in two
     * halves (unet_layers.c): largest at the bottom */
    size_t half = (size_t)tt_unet_channels(c, c->depth - 1) * tt_unet_channels(c, c->depth - 1) * 9;
    TT_CHECK(tt_buffer_alloc(u->be, 4 * half * sizeof(float), TT_MEM_WORKSPACE, "dec.conv1.halves",
                             &u->wsplit_buffer));
    build_requests(u, &r);
    /* the workspace, from the step's convolutions; the lives are recorded
     * with it in place, so the recording sees what the device will run */
    TT_CHECK(tt_model_size_convs(&u->model, &r, record_step, u, &u->conv_algo));
    TT_CHECK(tt_model_head_place(&u->model, &r, record_step, u));
    u->model.logits = u->logits;
    u->model.dlogits = u->dlogits;
cleanup:
    tt_arena_plan_free(&r);
    return status;
}

/*
 * Where the UNet's activations live.  This file names every tensor of one
 * training step and the rooms some of them share; when each lives is not
 * written here: model/arena_plan.c runs one step (record_step below) on a
 * recording dry backend and takes every tensor's life from the operations
 * that touch it, and core/plan.c places them so that a tensor's bytes are
 * reused once it is dead.
 *
 * Without checkpointing a block keeps conv1, conv2, act2 and the norm
 * statistics from its forward to its backward.  act1 = relu(norm1(conv1))
 * has no room of its own: the forward writes it in act2's room, conv2 reads
 * it, then act2 is written over it.  With a norm the block's own backward
 * never reads act2: the ReLU masks come from conv2, conv1 and the norms'
 * statistics (the forward's own arithmetic, so the same bits), and act1 is
 * made again in conv2's room once norm2's backward has read conv2 for the
 * last time.  act2 then lives only as long as other stages read it.
 * Without a norm each act is its conv, the ReLUs working in place.
 *
 * A recomputed block's (every block with config.checkpointing; enc.0
 * always, unet.c) inner tensors live only during its own forward; its
 * output lives as long as later stages read it; and its backward first
 * recomputes them into a set of its own (".recompute").  Recomputation runs
 * the same kernels on the same inputs, so the gradients are bit-identical.
 * A recomputed block's forward writes conv2 over conv1 (norm1 has read
 * conv1 by then): its inner tensors are not kept, so one room serves both.
 *
 * Either way nothing is stored that a cheap kernel can make again from what
 * is stored anyway: max pooling keeps no argmax (its backward finds the
 * winners in the encoder output), and up.i lives only in the forward, in
 * dec.i's act2 room (conv1 reads it before act1 goes there): dec.i's
 * backward makes it again from the output below in a room free by then.
 *
 * Gradients need few rooms of their own.  The ReLU and norm backwards work
 * in place, so a block's backward carries its gradient in the room it
 * arrived in and, from conv2's backward on, in its conv2 room.  The head's
 * output gradient (dlevel, which then holds dec.0's up gradient) goes in
 * dec.0's act2 room once the head's weight gradient has read it (a room of
 * its own without a norm); the encoder inputs' gradients have a
 * quarter-level room.  A decoder block's conv1 room carries its skip's
 * gradient on to the encoder block of its level (dskip), and its conv2
 * room the gradient of the output below on to that block's backward
 * (dnext).  A room that carries a gradient on simply lives longer: the
 * record shows it.
 *
 * With checkpointing dec.0's backward is lean (unet.c, lean_backward): its
 * backward set is two rooms instead of three, for one more conv1; act2's
 * room carries dskip, the conv room dnext.  enc.i (i > 0) is made again
 * before dec.i's backward (".again"), and each pool before the backward
 * that reads it (".pool.again").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/arena_plan.h"
#include "model/unet.h"
#include "ops/batch_norm.h"
#include "ops/conv_autotune.h"
#include "ops/group_norm.h"

static size_t tensor_bytes(const tt_unet *u, int channels, int h, int w)
{
    return (size_t)u->capacity * (size_t)channels * (size_t)h * (size_t)w * sizeof(float);
}

/* One set of a block's tensors.  act1 has no room of its own: it is
 * written in act2's room, which conv2 has read before act2 is written
 * there, and it is made again there in backward.  one_conv_room: conv2 is
 * written over conv1 (only with a norm); no_saved2: the set reads the
 * forward set's norm2 statistics instead of making its own. */
static void add_set(tt_arena_plan *r, const tt_unet *u, const tt_unet_block *b, tt_unet_tensors *x,
                    const char *tag, int one_conv_room, int no_saved2)
{
    char name[48];
    size_t bytes = tensor_bytes(u, b->channels, b->height, b->width);
    int norm = u->config.norm != TT_NORM_NONE;
    x->one_conv_room = one_conv_room && norm;
    if (x->one_conv_room) {
        snprintf(name, sizeof name, "%s%s.conv", b->name, tag);
        tt_arena_plan_add(r, name, bytes, &x->conv1);
    } else {
        snprintf(name, sizeof name, "%s%s.conv1", b->name, tag);
        tt_arena_plan_add(r, name, bytes, &x->conv1);
        snprintf(name, sizeof name, "%s%s.conv2", b->name, tag);
        tt_arena_plan_add(r, name, bytes, &x->conv2);
    }
    if (!norm) return; /* ReLU in place: act == conv (aliased after planning) */
    snprintf(name, sizeof name, "%s%s.act2", b->name, tag);
    tt_arena_plan_add(r, name, bytes, &x->act2);
    tt_group_norm_desc gd =
        tt_group_norm_desc_make(u->capacity, b->channels, b->height, b->width, u->config.groups);
    tt_batch_norm_desc bd = tt_batch_norm_desc_make(u->capacity, b->channels, b->height, b->width);
    size_t saved = sizeof(float) * (u->config.norm == TT_NORM_GROUP ? tt_group_norm_saved_floats(&gd)
                                                                    : tt_batch_norm_saved_floats(&bd));
    snprintf(name, sizeof name, "%s%s.norm1.saved", b->name, tag);
    tt_arena_plan_add(r, name, saved, &x->saved1);
    if (no_saved2) return;
    snprintf(name, sizeof name, "%s%s.norm2.saved", b->name, tag);
    tt_arena_plan_add(r, name, saved, &x->saved2);
}

/* A block's tensors: kept from forward to backward, or (recomputed) a
 * short-lived forward set, its conv2 over its conv1, and a set recomputed
 * for its backward.  A lean block's backward set is two rooms (unet.c,
 * lean_backward) and reads the forward's norm2 statistics. */
static void add_block(tt_arena_plan *r, const tt_unet *u, tt_unet_block *b)
{
    if (!b->recompute) {
        add_set(r, u, b, &b->fwd, "", 0, 0);
        return;
    }
    add_set(r, u, b, &b->fwd, "", 1, 0);
    if (b->keeps_again) return; /* its bwd is the again set (build_requests) */
    add_set(r, u, b, &b->bwd, ".recompute", b->lean, b->lean);
}

/* After placement: act1 in act2's room (or each act in its conv's room
 * without a norm: ReLU in place), conv2 in conv1's where they share. */
static void alias_set(const tt_unet *u, tt_unet_tensors *x)
{
    if (u->config.norm == TT_NORM_NONE) x->act1 = x->conv1, x->act2 = x->conv2;
    else x->act1 = x->act2;
    if (x->one_conv_room) x->conv2 = x->conv1;
}

/* After planning: what each set's conv1 reads, the rooms that carry
 * gradients, and the backward sets of blocks that are not recomputed
 * (what the forward wrote). */
static void connect(tt_unet *u)
{
    const tt_unet_config *c = &u->config;
    tt_unet_block *blocks[2 * TT_UNET_MAX_DEPTH + 1];
    int nb = 0;
    for (int i = 0; i < c->depth; i++) blocks[nb++] = &u->enc[i], blocks[nb++] = &u->dec[i];
    blocks[nb++] = &u->bottleneck;
    for (int k = 0; k < nb; k++) {
        alias_set(u, &blocks[k]->fwd), alias_set(u, &blocks[k]->bwd);
        alias_set(u, &blocks[k]->again);
    }
    for (int i = 0; i < c->depth; i++) {
        tt_unet_block *e = &u->enc[i], *d = &u->dec[i];
        if (!c->checkpointing) u->pool_again[i] = u->pool[i];
        e->fwd.input = i ? u->pool[i - 1] : u->input;
        e->bwd.input = e->again.input = i ? u->pool_again[i - 1] : u->input;
        u->up[i] = d->fwd.input = d->fwd.act2;
        d->bwd.input = d->bwd.act2; /* up made again there */
        d->fwd.skip = e->fwd.act2;
        d->bwd.skip = e->again.act2.buffer ? e->again.act2 : e->fwd.act2;
    }
    u->bottleneck.fwd.input = u->pool[c->depth - 1];
    u->bottleneck.bwd.input = u->pool_again[c->depth - 1];
    for (int k = 0; k < nb; k++) {
        tt_unet_block *b = blocks[k];
        if (!b->recompute) b->bwd = b->fwd; /* backward reads what forward wrote */
        if (b->keeps_again) b->bwd = b->again;
        if (b->lean) b->bwd.saved2 = b->fwd.saved2;
    }
    for (int i = 0; i < c->depth; i++) {
        tt_unet_block *d = &u->dec[i];
        u->dskip[i] = d->lean ? d->bwd.act2 : d->bwd.conv1;
        u->dnext[i] = d->lean ? d->bwd.conv1 : d->bwd.conv2;
    }
    if (c->norm != TT_NORM_NONE) u->dlevel = u->dec[0].fwd.act2;
}

/* Every tensor of the step, in the order of the model (the order only
 * breaks ties between tensors of the same size when placing). */
static void build_requests(tt_unet *u, tt_arena_plan *r)
{
    const tt_unet_config *c = &u->config;
    char name[48];
    int ckpt = c->checkpointing;
    for (int i = 0; i < c->depth; i++) {
        int ch = tt_unet_channels(c, i), h = u->height >> i, w = u->width >> i;
        tt_unet_block *e = &u->enc[i];
        add_block(r, u, e);
        /* with checkpointing enc.i's output made again for dec.i's backward;
         * a block that keeps it holds the whole set, both conv rooms, as
         * its own backward set (connect), which makes nothing a third time */
        if (ckpt && i > 0) add_set(r, u, e, &e->again, ".again", !e->keeps_again, 0);
        size_t pooled = tensor_bytes(u, ch, h / 2, w / 2);
        snprintf(name, sizeof name, "enc.%d.pool", i);
        tt_arena_plan_add(r, name, pooled, &u->pool[i]);
        if (ckpt) {
            snprintf(name, sizeof name, "enc.%d.pool.again", i);
            tt_arena_plan_add(r, name, pooled, &u->pool_again[i]);
        }
        add_block(r, u, &u->dec[i]);
    }
    add_block(r, u, &u->bottleneck);
    size_t logits = tensor_bytes(u, c->classes, u->height, u->width);
    tt_arena_plan_add(r, "logits", logits, &u->logits);
    tt_arena_plan_add(r, "dlogits", logits, &u->dlogits);
    size_t level0 = tensor_bytes(u, tt_unet_channels(c, 0), u->height, u->width);
    if (c->norm == TT_NORM_NONE) tt_arena_plan_add(r, "backward.dlevel", level0, &u->dlevel);
    /* the largest block input below level 0: enc.1's, C_0 x H/2 x W/2 */
    size_t dinput = tensor_bytes(u, tt_unet_channels(c, 0), u->height / 2, u->width / 2);
    tt_arena_plan_add(r, "backward.dinput", dinput, &u->dinput);
}

/* The step the plan covers, on the recording backend: a training forward
 * of a whole micro-batch, the loss (it reads the logits and writes their
 * gradient in one go: one copy stands for it), and the backward.  Nothing
 * runs, and the host state a forward changes (batch norm's counters, the
 * mode and batch of the last forward) is put back. */
static tt_status record_step(void *model, tt_backend *recorder)
{
    tt_unet *u = model;
    tt_unet_block *blocks[2 * TT_UNET_MAX_DEPTH + 1];
    int64_t counters[2 * (2 * TT_UNET_MAX_DEPTH + 1)];
    int nb = 0;
    for (int i = 0; i < u->config.depth; i++) blocks[nb++] = &u->enc[i], blocks[nb++] = &u->dec[i];
    blocks[nb++] = &u->bottleneck;
    for (int k = 0; k < nb; k++)
        counters[2 * k] = blocks[k]->bn1.num_batches_tracked,
        counters[2 * k + 1] = blocks[k]->bn2.num_batches_tracked;
    connect(u);
    tt_backend *be = u->be;
    u->be = recorder;
    size_t logits = tensor_bytes(u, u->config.classes, u->height, u->width);
    tt_status status = tt_unet_forward(u, u->capacity, 1);
    if (!status) status = tt_copy(recorder, u->dlogits, u->logits, logits);
    if (!status) status = tt_unet_backward(u);
    u->be = be;
    u->batch = u->training = 0;
    for (int k = 0; k < nb; k++)
        blocks[k]->bn1.num_batches_tracked = counters[2 * k],
        blocks[k]->bn2.num_batches_tracked = counters[2 * k + 1];
    return status;
}

tt_status tt_unet_allocate(tt_unet *u)
{
    const tt_unet_config *c = &u->config;
    tt_status status = NULL;
    tt_arena_plan r = {0};
    TT_CHECK(tt_buffer_alloc(u->be, tensor_bytes(u, c->in_channels, u->height, u->width),
                             TT_MEM_DATA, "input", &u->input_buffer));
    u->input = tt_mem_of(u->input_buffer);
    /* AUTO keeps room for every candidate, im2col's columns included; when
     * that is more than one buffer may hold (full-resolution tiles), the
     * direct kernels, which need no columns, run every layer */
    size_t ws = tt_unet_workspace_bytes(u);
    if (ws > u->be->device.max_alloc_bytes || ws > u->be->device.global_mem_bytes / 8) {
        tt_conv_algo forced = tt_conv_algo_forced();
        if (forced != TT_CONV_ALGO_AUTO && forced != TT_CONV_ALGO_DIRECT)
            fprintf(stderr, "tiletrain: warning: --algo %s needs a %.0f MiB convolution workspace "
                    "at this tile, more than the device gives one buffer; running direct\n",
                    tt_conv_algo_name(forced), ws / 1048576.0);
        u->conv_algo = TT_CONV_ALGO_DIRECT;
        ws = tt_unet_workspace_bytes(u);
    }
    if (ws) TT_CHECK(tt_buffer_alloc(u->be, ws, TT_MEM_WORKSPACE, "conv.workspace", &u->workspace_buffer));
    /* dec.i conv1 weight (C_i, 2 C_i, 3, 3) and its gradient, each in two
     * halves (unet.c): largest at the bottom */
    size_t half = (size_t)tt_unet_channels(c, c->depth - 1) * tt_unet_channels(c, c->depth - 1) * 9;
    TT_CHECK(tt_buffer_alloc(u->be, 4 * half * sizeof(float), TT_MEM_WORKSPACE, "dec.conv1.halves",
                             &u->wsplit_buffer));
    /* the step runs with the workspace above, so the recording sees what
     * the device will run */
    build_requests(u, &r);
    tt_arena arena;
    TT_CHECK(tt_arena_plan_place(&r, u->be, record_step, u, &arena));
    u->act_buffers = arena.buffers;
    u->act_count = arena.count;
    u->act_planned_bytes = arena.planned_bytes;
    u->act_unplanned_bytes = arena.unplanned_bytes;
    connect(u); /* aliases and inputs, now that every tensor has its place */
cleanup:
    tt_arena_plan_free(&r);
    return status;
}

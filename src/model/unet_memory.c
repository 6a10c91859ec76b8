/*
 * Where the UNet's activations live.  This file names every tensor of one
 * training step; when each lives is not written here: model/arena_plan.c
 * runs one step (record_step below) on a recording dry backend and takes
 * every tensor's life from the first to the last operation that touches
 * it, and core/plan.c places them so that a tensor's bytes are reused once
 * it is dead.  Change the order of the passes in unet.c and the plan
 * follows.
 *
 * Every tensor has a name of its own here, even where the plan ends up
 * giving two of them the same bytes: act1 and act2 (conv2 reads act1
 * before norm2 writes act2), conv1 and conv2 of a recomputed forward,
 * up.i and what dec.i writes after its conv1, the gradients that run from
 * a decoder block to an encoder block (dskip, dnext) and the rooms of
 * blocks dead by then.  The only rooms shared by declaration are those of
 * work done in place: without a norm each act is its conv (the ReLUs work
 * in place), and inside a backward (unet.c) the gradient runs in the room
 * it arrived in and in its block's conv2 room, where act1 is made again
 * for conv2's weight gradient.
 *
 * Which tensors exist is the design (see unet.c): without checkpointing a
 * block keeps conv1, conv2, act2 and the norm statistics for its backward
 * (with a norm its backward never reads act2: the ReLU masks come from the
 * convs and the statistics).  A recomputed block (every block with
 * config.checkpointing; enc.0 always) keeps only its output, and its
 * backward first makes its inner tensors again into a set of its own
 * (".recompute"), with the same kernels on the same inputs, so the
 * gradients are bit-identical.  With checkpointing enc.i (i > 0) is made
 * again for dec.i's backward (".again"), and each pool for the backward
 * that reads it (".pool.again"); dec.0's backward is lean (unet.c,
 * lean_backward): two rooms and one more conv1.  Nothing is stored that a
 * cheap kernel can make again from what is stored anyway: max pooling
 * keeps no argmax, and up.i is made again in backward.
 *
 * With 16-bit storage (config.precision fp16 or bf16) the forward's fp32
 * tensors live for the forward only: a block that is not recomputed packs
 * conv1 and conv2 into ".half" copies of 2 bytes an element.  With a norm
 * its backward reads them there (the norm kernels read 16-bit inputs) and
 * has one fp32 room (".backward.room", act1 then d act1) and its output
 * made again from the stored conv2 (".unpacked.act2"); without, they are
 * unpacked into ".unpacked" conv1 and conv2.  A recomputed block packs
 * its output (".half.act2").  Outputs are unpacked or made again where
 * they are read: dec.i's forward skip (enc.i.skip.fwd), up.i's input made
 * again (dec.i.below.again), enc.0's output for dec.0's backward
 * (enc.0.skip.bwd) and for its pool (enc.0.pool.source); pools are made
 * again, as with checkpointing.
 *
 * The banded step (16-bit storage with checkpointing, unet_banded.c) has
 * tensors of its own, each stored in 16 bits (fp32 at an odd width): per
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

/* One set of a block's tensors.  A lean set (dec.0's backward with
 * checkpointing, lean_backward) is conv1 and act2, each room holding
 * several things in turn, and norm1's statistics: it reads the forward's
 * norm2 statistics. */
static void add_set(tt_arena_plan *r, const tt_unet *u, const tt_unet_block *b, tt_unet_tensors *x,
                    const char *tag, int lean)
{
    size_t bytes = tensor_bytes(u, b->channels, b->height, b->width);
    add_tensor(r, b, tag, "conv1", bytes, &x->conv1);
    if (!lean) add_tensor(r, b, tag, "conv2", bytes, &x->conv2);
    if (u->config.norm == TT_NORM_NONE) return; /* ReLU in place: act == conv (connect) */
    if (!lean) add_tensor(r, b, tag, "act1", bytes, &x->act1);
    add_tensor(r, b, tag, "act2", bytes, &x->act2);
    size_t saved = norm_saved_bytes(u, b);
    add_tensor(r, b, tag, "norm1.saved", saved, &x->saved1);
    if (!lean) add_tensor(r, b, tag, "norm2.saved", saved, &x->saved2);
}

/* A block's tensors: kept from forward to backward, or (recomputed) a
 * forward set and a set made again for its backward (a decoder block's
 * with its up.i made again). */
static void add_block(tt_arena_plan *r, const tt_unet *u, tt_unet_block *b, int decoder)
{
    add_set(r, u, b, &b->fwd, "", 0);
    if (tt_unet_stores_16(u)) {
        size_t halves = tensor_bytes(u, b->channels, b->height, b->width) / 2;
        /* a kept block's output is made again from its stored conv2 (unet.c
         * bring_output); without a norm it is its conv2 (connect) */
        if (b->recompute) add_tensor(r, b, ".half", "act2", halves, &b->half_act2);
        if (!b->recompute) {
            add_tensor(r, b, ".half", "conv1", halves, &b->half_conv1);
            add_tensor(r, b, ".half", "conv2", halves, &b->half_conv2);
            /* its backward set: with a norm the backward reads the halves
             * in place, and has a room of its own for act1 and d act1 (in
             * conv2's place) and its output made again; without, conv1
             * and conv2 unpacked */
            size_t bytes = 2 * halves;
            if (u->config.norm != TT_NORM_NONE) {
                add_tensor(r, b, ".backward", "room", bytes, &b->bwd.conv2);
                add_tensor(r, b, ".unpacked", "act2", bytes, &b->bwd.act2);
            } else {
                add_tensor(r, b, ".unpacked", "conv1", bytes, &b->bwd.conv1);
                add_tensor(r, b, ".unpacked", "conv2", bytes, &b->bwd.conv2);
            }
        }
    }
    if (!b->recompute || b->keeps_again) return; /* keeps_again: bwd is the again set */
    add_set(r, u, b, &b->bwd, ".recompute", b->lean);
    if (decoder && !b->lean)
        add_tensor(r, b, ".recompute", "up", tensor_bytes(u, b->channels, b->height, b->width),
                   &b->bwd.input);
}

/* After placement: the rooms shared by declaration (without a norm each
 * act is its conv), what each set's conv1 reads, and the backward sets of
 * blocks that are not recomputed (what the forward wrote). */
static void connect(tt_unet *u)
{
    const tt_unet_config *c = &u->config;
    if (u->banded) return; /* the banded step reads its own tensors */
    tt_unet_block *blocks[2 * TT_UNET_MAX_DEPTH + 1];
    int nb = 0;
    for (int i = 0; i < c->depth; i++) blocks[nb++] = &u->enc[i], blocks[nb++] = &u->dec[i];
    blocks[nb++] = &u->bottleneck;
    if (c->norm == TT_NORM_NONE)
        for (int k = 0; k < nb; k++) {
            tt_unet_tensors *sets[] = {&blocks[k]->fwd, &blocks[k]->bwd, &blocks[k]->again};
            for (int s = 0; s < 3; s++) sets[s]->act1 = sets[s]->conv1, sets[s]->act2 = sets[s]->conv2;
        }
    for (int i = 0; i < c->depth; i++) {
        tt_unet_block *e = &u->enc[i], *d = &u->dec[i];
        if (!c->checkpointing && !tt_unet_stores_16(u)) u->pool_again[i] = u->pool[i];
        e->fwd.input = i ? u->pool[i - 1] : u->input;
        e->bwd.input = e->again.input = i ? u->pool_again[i - 1] : u->input;
        d->fwd.input = u->up[i];
        d->fwd.skip = tt_unet_stores_16(u) ? u->skip_fwd[i] : e->fwd.act2;
        d->bwd.skip = e->again.act2.buffer ? e->again.act2 : e->fwd.act2;
    }
    u->bottleneck.fwd.input = u->pool[c->depth - 1];
    u->bottleneck.bwd.input = u->pool_again[c->depth - 1];
    for (int k = 0; k < nb; k++) {
        tt_unet_block *b = blocks[k];
        if (!b->recompute) {
            /* backward reads what forward wrote; with 16-bit storage conv1,
             * conv2 and act2 unpacked into the set's own (add_block) */
            tt_unet_tensors unpacked = b->bwd;
            b->bwd = b->fwd;
            if (tt_unet_stores_16(u)) {
                if (unpacked.input.buffer) b->bwd.input = unpacked.input; /* pool made again */
                b->bwd.conv1 = b->bwd.act1 = unpacked.conv1;
                b->bwd.conv2 = unpacked.conv2;
                b->bwd.act2 = c->norm == TT_NORM_NONE ? unpacked.conv2 : unpacked.act2;
            }
        }
        if (b->keeps_again) b->bwd = b->again;
        if (b->lean) b->bwd.saved2 = b->fwd.saved2;
        /* a norm-less kept block's output is its conv2: one 16-bit copy */
        if (tt_unet_stores_16(u) && !b->recompute && c->norm == TT_NORM_NONE) b->half_act2 = b->half_conv2;
    }
    /* dec.i's skip in backward, with 16-bit storage: enc.i's output
     * unpacked into enc.i's backward set, which reads it too, or into a
     * tensor of its own when that set is made again later; or enc.i made
     * again (checkpointing) */
    if (tt_unet_stores_16(u))
        for (int i = 0; i < c->depth; i++)
            if (!u->enc[i].again.act2.buffer)
                u->dec[i].bwd.skip = u->enc[i].recompute ? u->skip_bwd[i] : u->enc[i].bwd.act2;
}

/* ---- the banded step (unet_banded.c) ---- */

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
    add_tensor(r, b, "", "norm1.saved", saved, &b->fwd.saved1);
    add_tensor(r, b, "", "norm2.saved", saved, &b->fwd.saved2);
}

static void build_banded_requests(tt_unet *u, tt_arena_plan *r)
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
        add_block(r, u, e, 0);
        /* with checkpointing enc.i's output made again for dec.i's backward;
         * a block that keeps it uses that set as its own backward set
         * (connect), which makes nothing a third time */
        if (ckpt && i > 0) add_set(r, u, e, &e->again, ".again", 0);
        size_t pooled = tensor_bytes(u, ch, h / 2, w / 2);
        snprintf(name, sizeof name, "enc.%d.pool", i);
        tt_arena_plan_add(r, name, pooled, &u->pool[i]);
        if (ckpt || tt_unet_stores_16(u)) {
            snprintf(name, sizeof name, "enc.%d.pool.again", i);
            tt_arena_plan_add(r, name, pooled, &u->pool_again[i]);
        }
        if (tt_unet_stores_16(u)) add_tensor(r, e, "", "skip.fwd", tensor_bytes(u, ch, h, w), &u->skip_fwd[i]);
        if (tt_unet_stores_16(u) && e->recompute && !(ckpt && i > 0))
            add_tensor(r, e, "", "skip.bwd", tensor_bytes(u, ch, h, w), &u->skip_bwd[i]);
        if (tt_unet_stores_16(u) && e->recompute && !ckpt)
            add_tensor(r, e, "", "pool.source", tensor_bytes(u, ch, h, w), &u->pool_source[i]);
        tt_unet_block *d = &u->dec[i];
        add_block(r, u, d, 1);
        if (tt_unet_stores_16(u) && !d->recompute)
            add_tensor(r, d, "", "below.again", tensor_bytes(u, 2 * ch, h / 2, w / 2),
                       &u->below_again[i]);
        /* the up-convolution's output; the gradients dec.i's backward
         * passes on to enc.i's (dskip) and to the block below (dnext) */
        snprintf(name, sizeof name, "up.%d", i);
        tt_arena_plan_add(r, name, tensor_bytes(u, ch, h, w), &u->up[i]);
        add_tensor(r, d, "", "dskip", tensor_bytes(u, ch, h, w), &u->dskip[i]);
        add_tensor(r, d, "", "dnext", tensor_bytes(u, 2 * ch, h / 2, w / 2), &u->dnext[i]);
    }
    add_block(r, u, &u->bottleneck, 0);
    size_t logits = tensor_bytes(u, c->classes, u->height, u->width);
    tt_arena_plan_add(r, "logits", logits, &u->logits);
    tt_arena_plan_add(r, "dlogits", logits, &u->dlogits);
    size_t level0 = tensor_bytes(u, tt_unet_channels(c, 0), u->height, u->width);
    tt_arena_plan_add(r, "backward.dlevel", level0, &u->dlevel);
    /* the largest block input below level 0: enc.1's, C_0 x H/2 x W/2 */
    size_t dinput = tensor_bytes(u, tt_unet_channels(c, 0), u->height / 2, u->width / 2);
    tt_arena_plan_add(r, "backward.dinput", dinput, &u->dinput);
}

/* The step the plan covers, on the recording backend: a training forward
 * of a whole micro-batch, the loss (it reads the logits and writes their
 * gradient in one go: one copy stands for it), and the backward.  Nothing
 * runs; the mode and batch of the last forward are put back here, batch
 * norm's counters by the head (head.c). */
static tt_status record_step(void *model, tt_backend *recorder)
{
    tt_unet *u = model;
    connect(u);
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
    if (u->banded) {
        u->band_floats = tt_unet_band_room_floats(u);
        TT_CHECK(tt_buffer_alloc(u->be, 3 * u->band_floats * sizeof(float), TT_MEM_WORKSPACE,
                                 "band rooms", &u->band_buffer));
    }
    /* dec.i conv1 weight (C_i, 2 C_i, 3, 3) and its gradient, each in two
     * halves (unet.c): largest at the bottom */
    size_t half = (size_t)tt_unet_channels(c, c->depth - 1) * tt_unet_channels(c, c->depth - 1) * 9;
    TT_CHECK(tt_buffer_alloc(u->be, 4 * half * sizeof(float), TT_MEM_WORKSPACE, "dec.conv1.halves",
                             &u->wsplit_buffer));
    if (u->banded)
        build_banded_requests(u, &r);
    else
        build_requests(u, &r);
    /* the workspace, from the step's convolutions; the lives are recorded
     * with it in place, so the recording sees what the device will run */
    TT_CHECK(tt_model_size_convs(&u->model, &r, record_step, u, &u->conv_algo));
    TT_CHECK(tt_model_head_place(&u->model, &r, record_step, u));
    connect(u); /* aliases and inputs, now that every tensor has its place */
    u->model.logits = u->logits;
    u->model.dlogits = u->dlogits;
cleanup:
    tt_arena_plan_free(&r);
    return status;
}

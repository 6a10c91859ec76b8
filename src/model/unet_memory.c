/*
 * Where the UNet's activations live: every tensor of one training step is
 * given a lifetime on a timeline of the step's stages, and core/plan.c
 * places them so that a tensor's bytes are reused once it is dead.
 *
 * Timeline (depth D): forward enc.i at i, bottleneck at D, dec.i at 2D - i,
 * head at 2D+1, loss at 2D+2; backward head at 2D+3, dec.i at 2D+4+i,
 * bottleneck at 3D+4, enc.i at 4D+4-i.
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
 * recomputes them into a set that lives only during that backward.
 * Recomputation runs the same kernels on the same inputs, so the gradients
 * are bit-identical.
 *
 * A recomputed block's forward writes conv2 over conv1 (norm1 has read
 * conv1 by then): its inner tensors are not kept, so one room serves both.
 *
 * Either way nothing is stored that a cheap kernel can make again from what
 * is stored anyway: max pooling keeps no argmax (its backward finds the
 * winners in the encoder output), and up.i lives only in the forward, in
 * dec.i's act2 room (conv1 reads it before act1 goes there): dec.i's
 * backward makes it again from the output below, which lives until then
 * anyway, in a room that is free at that moment.
 *
 * Gradients need few rooms of their own.  The ReLU and norm backwards work
 * in place, so a block's backward carries its gradient in the room it
 * arrived in and, from conv2's backward on, in its conv2 room (read for the
 * last time by norm2's backward).  The head's output gradient (dlevel,
 * which then holds dec.0's up gradient) goes in dec.0's act2 room once the
 * head's weight gradient has read it (a room of its own without a norm);
 * the encoder inputs' gradients have a quarter-level room.  A decoder
 * block's conv1 room carries its skip's gradient on to the encoder block of
 * its level (dskip), and its conv2 room the gradient of the output below
 * (half its size) on to that block's backward (dnext).
 *
 * With checkpointing the peak of the step is dec.0's backward: its skip,
 * the incoming gradient and its recomputed set are all level 0.  That block
 * is lean (unet.c, lean_backward): its backward set is two rooms instead of
 * three, for one more conv1; act2's room carries dskip, the conv room dnext.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plan.h"
#include "core/status.h"
#include "model/unet.h"
#include "ops/batch_norm.h"
#include "ops/conv_autotune.h"
#include "ops/group_norm.h"

typedef struct request_list {
    tt_plan_item *items;
    tt_mem **dests;
    char (*names)[48];
    int count, capacity;
    int failed;
} request_list;

static void add(request_list *r, const char *name, size_t bytes, int first, int last, tt_mem *dest)
{
    if (r->count == r->capacity) {
        int cap = r->capacity ? 2 * r->capacity : 128;
        tt_plan_item *items = realloc(r->items, sizeof *items * (size_t)cap);
        if (items) r->items = items;
        tt_mem **dests = realloc(r->dests, sizeof *dests * (size_t)cap);
        if (dests) r->dests = dests;
        char(*names)[48] = realloc(r->names, sizeof *names * (size_t)cap);
        if (names) r->names = names;
        if (!items || !dests || !names) {
            r->failed = 1;
            return;
        }
        r->capacity = cap;
    }
    snprintf(r->names[r->count], sizeof r->names[0], "%s", name);
    r->items[r->count] = (tt_plan_item){NULL, bytes, first, last, 0, 0};
    r->dests[r->count] = dest;
    r->count++;
}

/* Stages of the timeline (see the top).  Stage k is two points: 2k + 1,
 * the stage itself, and 2k, just before it (where checkpointing makes a
 * pool and an encoder output again for a decoder block's backward). */
typedef struct timeline {
    int depth;
} timeline;
static int stage(int k) { return 2 * k + 1; }
static int before(int point) { return point - 1; }
static int f_enc(timeline t, int i) { return (void)t, stage(i); }
static int f_bottleneck(timeline t) { return stage(t.depth); }
static int f_dec(timeline t, int i) { return stage(2 * t.depth - i); }
static int f_head(timeline t) { return stage(2 * t.depth + 1); }
static int f_loss(timeline t) { return stage(2 * t.depth + 2); }
static int b_head(timeline t) { return stage(2 * t.depth + 3); }
static int b_dec(timeline t, int i) { return stage(2 * t.depth + 4 + i); }
static int b_bottleneck(timeline t) { return stage(3 * t.depth + 4); }
static int b_enc(timeline t, int i) { return stage(4 * t.depth + 4 - i); }
/* the backward after dec.i's: dec.(i+1)'s or the bottleneck's */
static int b_next(timeline t, int i) { return i + 1 < t.depth ? b_dec(t, i + 1) : b_bottleneck(t); }

static size_t tensor_bytes(const tt_unet *u, int channels, int h, int w)
{
    return (size_t)u->capacity * (size_t)channels * (size_t)h * (size_t)w * sizeof(float);
}

static int later(int a, int b) { return a > b ? a : b; }

/* How long one set of a block's tensors lives, in stages (see the top). */
typedef struct set_life {
    int first;          /* the stage that writes it */
    int inner_last;     /* the last reader of conv1, conv2 and the statistics */
    int out_last;       /* the last reader of act2's room */
    int conv1_last;     /* conv1's room carries a gradient on until then (0: no) */
    int conv2_last;     /* likewise conv2's */
    int saved2_last;    /* norm2's statistics are read until then (0: inner_last) */
    int one_conv_room;  /* conv2 is written over conv1 (only with a norm) */
    int no_saved2;      /* reads the forward set's norm2 statistics instead */
} set_life;

/* One set of a block's tensors.  act1 has no room of its own: it is
 * written in act2's room, which conv2 has read before act2 is written
 * there, and it is made again there in backward. */
static void add_set(request_list *r, const tt_unet *u, const tt_unet_block *b, tt_unet_tensors *x,
                    const char *tag, const set_life *l)
{
    char name[48];
    size_t bytes = tensor_bytes(u, b->channels, b->height, b->width);
    int norm = u->config.norm != TT_NORM_NONE;
    int conv1_last = later(l->inner_last, l->conv1_last);
    int conv2_last = later(norm ? l->inner_last : l->out_last, l->conv2_last);
    x->one_conv_room = l->one_conv_room && norm;
    if (x->one_conv_room) {
        snprintf(name, sizeof name, "%s%s.conv", b->name, tag);
        add(r, name, bytes, l->first, later(conv1_last, conv2_last), &x->conv1);
    } else {
        snprintf(name, sizeof name, "%s%s.conv1", b->name, tag);
        add(r, name, bytes, l->first, conv1_last, &x->conv1);
        snprintf(name, sizeof name, "%s%s.conv2", b->name, tag);
        add(r, name, bytes, l->first, conv2_last, &x->conv2);
    }
    if (!norm) return; /* ReLU in place: act == conv (aliased after planning) */
    snprintf(name, sizeof name, "%s%s.act2", b->name, tag);
    add(r, name, bytes, l->first, l->out_last, &x->act2);
    tt_group_norm_desc gd =
        tt_group_norm_desc_make(u->capacity, b->channels, b->height, b->width, u->config.groups);
    tt_batch_norm_desc bd = tt_batch_norm_desc_make(u->capacity, b->channels, b->height, b->width);
    size_t saved = sizeof(float) * (u->config.norm == TT_NORM_GROUP ? tt_group_norm_saved_floats(&gd)
                                                                    : tt_batch_norm_saved_floats(&bd));
    snprintf(name, sizeof name, "%s%s.norm1.saved", b->name, tag);
    add(r, name, saved, l->first, l->inner_last, &x->saved1);
    if (l->no_saved2) return;
    snprintf(name, sizeof name, "%s%s.norm2.saved", b->name, tag);
    add(r, name, saved, l->first, later(l->inner_last, l->saved2_last), &x->saved2);
}

/* A block's tensors: kept from forward to backward, or (recomputed) a
 * short-lived forward set, its conv2 over its conv1, whose output lives
 * until `out_last`, and a set recomputed at `backward`.  conv1_last,
 * conv2_last: how long the rooms that carry a decoder block's gradients on
 * are needed (0: not past the block).  A lean block's backward set is two
 * rooms (unet.c, lean_backward): act2's carries d skip on, the conv room
 * the gradient below. */
static void add_block(request_list *r, const tt_unet *u, tt_unet_block *b, int forward,
                      int out_last, int backward, int conv1_last, int conv2_last)
{
    if (!b->recompute) {
        /* with a norm the block's own backward never reads act2 (unet.c) */
        int act2_last = u->config.norm != TT_NORM_NONE ? out_last : backward;
        set_life kept = {forward, backward, act2_last, conv1_last, conv2_last, 0, 0, 0};
        add_set(r, u, b, &b->fwd, "", &kept);
        return;
    }
    set_life fwd = {forward, forward, out_last, 0, 0, b->lean ? backward : 0, 1, 0};
    add_set(r, u, b, &b->fwd, "", &fwd);
    if (b->keeps_again) return; /* its bwd is the again set (build_requests) */
    set_life bwd = {backward, backward, backward, conv1_last, conv2_last, 0, 0, 0};
    if (b->lean)
        bwd = (set_life){backward, backward, later(backward, conv1_last), 0, conv2_last, 0, 1, 1};
    add_set(r, u, b, &b->bwd, ".recompute", &bwd);
}

/* After planning: act1 in act2's room (or each act in its conv's room
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

static void build_requests(tt_unet *u, request_list *r)
{
    const tt_unet_config *c = &u->config;
    timeline t = {c->depth};
    int norm = c->norm != TT_NORM_NONE;
    char name[48];
    int ckpt = c->checkpointing;
    for (int i = 0; i < c->depth; i++) {
        int ch = tt_unet_channels(c, i), h = u->height >> i, w = u->width >> i;
        /* The skip is read by dec.i's forward and backward (its conv1's
         * input); enc.i's backward finds the pool's winners in it again
         * (in its own recomputation, if it has one).  With checkpointing
         * it lives only as long as the forward reads it: the pool and,
         * below level 0, enc.i's output are made again for the backward
         * (the output just before dec.i's backward, from the pool above,
         * made again just before too; the pool just before the next
         * backward), so no lower level lives through dec.0's backward,
         * the step's peak. */
        tt_unet_block *e = &u->enc[i];
        int skip_last = !e->recompute ? b_enc(t, i)
                        : !ckpt       ? b_dec(t, i)
                        : i == 0      ? before(b_next(t, 0))
                                      : f_dec(t, i);
        add_block(r, u, e, f_enc(t, i), skip_last, b_enc(t, i), 0, 0);
        if (ckpt && i > 0) {
            /* the output lives until the next backward; a block that keeps
             * again holds the whole set, both conv rooms, until its own
             * backward (connect: bwd is again), which makes nothing a
             * third time */
            set_life again = {before(b_dec(t, i)), before(b_dec(t, i)), before(b_next(t, i)),
                              0, 0, 0, 1, 0};
            if (e->keeps_again)
                again = (set_life){before(b_dec(t, i)), b_enc(t, i), b_enc(t, i), 0, 0, 0, 0, 0};
            add_set(r, u, e, &e->again, ".again", &again);
        }
        size_t pooled = tensor_bytes(u, ch, h / 2, w / 2);
        int reader = i + 1 < c->depth ? b_enc(t, i + 1) : b_bottleneck(t);
        int fwd_reader = i + 1 < c->depth ? f_enc(t, i + 1) : f_bottleneck(t);
        snprintf(name, sizeof name, "enc.%d.pool", i);
        add(r, name, pooled, f_enc(t, i), ckpt ? fwd_reader : reader, &u->pool[i]);
        if (ckpt) {
            snprintf(name, sizeof name, "enc.%d.pool.again", i);
            add(r, name, pooled, before(b_next(t, i)), reader, &u->pool_again[i]);
        }
        /* dec.i's output feeds up.(i-1), whose backward reads it; dec.0 feeds
         * the head, and with a norm its room then holds the head's gradient
         * until dec.0's backward (dlevel).  Its rooms carry enc.i's gradient
         * on until enc.i's backward and the gradient of the output below
         * until that block's backward.  up.i has no room of its own: it is
         * written in act2's room, read by conv1 before act1 goes there. */
        int below = b_next(t, i);
        int out_last = i > 0 ? b_dec(t, i - 1) : norm ? b_dec(t, 0) : b_head(t);
        add_block(r, u, &u->dec[i], f_dec(t, i), out_last, b_dec(t, i), b_enc(t, i), below);
    }
    add_block(r, u, &u->bottleneck, f_bottleneck(t), b_dec(t, c->depth - 1), b_bottleneck(t), 0,
              0);
    size_t logits = tensor_bytes(u, c->classes, u->height, u->width);
    add(r, "logits", logits, f_head(t), f_loss(t), &u->logits);
    add(r, "dlogits", logits, f_loss(t), b_head(t), &u->dlogits);
    size_t level0 = tensor_bytes(u, tt_unet_channels(c, 0), u->height, u->width);
    if (!norm) add(r, "backward.dlevel", level0, b_head(t), b_dec(t, 0), &u->dlevel);
    /* the largest block input below level 0: enc.1's, C_0 x H/2 x W/2 */
    size_t dinput = tensor_bytes(u, tt_unet_channels(c, 0), u->height / 2, u->width / 2);
    add(r, "backward.dinput", dinput, b_bottleneck(t), b_enc(t, 0), &u->dinput);
}

/* Debugging ($TT_PLAN_DUMP): the bytes alive at each point of the
 * timeline (a stage or just before it) and the tensors of 1 MiB or more
 * alive there, on stderr, before placement: the lower bound any placement
 * has to meet. */
static void dump_timeline(const request_list *r)
{
    int stages = 0;
    for (int i = 0; i < r->count; i++) stages = later(stages, r->items[i].last + 1);
    for (int s = 0; s < stages; s++) {
        size_t live = 0;
        for (int i = 0; i < r->count; i++)
            if (r->items[i].first <= s && s <= r->items[i].last) live += r->items[i].bytes;
        fprintf(stderr, "point %2d %9.1f MiB:", s, live / 1048576.0);
        for (int i = 0; i < r->count; i++)
            if (r->items[i].first <= s && s <= r->items[i].last && r->items[i].bytes >= 1 << 20)
                fprintf(stderr, " %s %.0f", r->names[i], r->items[i].bytes / 1048576.0);
        fprintf(stderr, "\n");
    }
}

tt_status tt_unet_allocate(tt_unet *u)
{
    const tt_unet_config *c = &u->config;
    tt_status status = NULL;
    request_list r = {0};
    TT_CHECK(tt_buffer_alloc(u->be, tensor_bytes(u, c->in_channels, u->height, u->width),
                             TT_MEM_DATA, "input", &u->input_buffer));
    u->input = tt_mem_of(u->input_buffer);
    build_requests(u, &r);
    if (r.failed) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "memory plan: out of host memory");
        goto cleanup;
    }
    for (int i = 0; i < r.count; i++) r.items[i].name = r.names[i];
    size_t align = u->be->device.base_align_bytes > 64 ? u->be->device.base_align_bytes : 64;
    if (getenv("TT_PLAN_DUMP")) dump_timeline(&r);
    tt_plan plan;
    TT_CHECK(tt_plan_solve(r.items, r.count, align, (size_t)u->be->device.max_alloc_bytes, &plan));
    u->act_buffers = calloc((size_t)plan.buffer_count, sizeof *u->act_buffers);
    if (!u->act_buffers) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "memory plan: out of host memory");
        goto cleanup;
    }
    for (int b = 0; b < plan.buffer_count; b++) {
        char name[32];
        snprintf(name, sizeof name, "activations.%d", b);
        TT_CHECK(tt_buffer_alloc(u->be, plan.buffer_bytes[b], TT_MEM_ACTIVATIONS, name,
                                 &u->act_buffers[b]));
        u->act_count++;
    }
    for (int i = 0; i < r.count; i++)
        *r.dests[i] = tt_mem_at(tt_mem_of(u->act_buffers[r.items[i].buffer]), r.items[i].offset);
    u->act_planned_bytes = plan.total_bytes;
    u->act_unplanned_bytes = plan.unplanned_bytes;
    connect(u); /* aliases and inputs, now that every tensor has its place */
    /* AUTO keeps room for every candidate, im2col's columns included; when
     * that is more than one buffer may hold (full-resolution tiles), the
     * direct kernels, which need no columns, run every layer */
    size_t ws = tt_unet_workspace_bytes(u);
    if (ws > u->be->device.max_alloc_bytes || ws > u->be->device.global_mem_bytes / 8) {
        tt_conv_algo forced = u->config.algo ? u->config.algo : tt_conv_algo_forced();
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
cleanup:
    free(r.items);
    free(r.dests);
    free(r.names);
    return status;
}

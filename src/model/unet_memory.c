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
 * With checkpointing (config.checkpointing) a block's inner tensors live
 * only during its own forward; its output lives as long as later stages
 * read it; and its backward first recomputes them into a set that lives
 * only during that backward.  Recomputation runs the same kernels on the
 * same inputs, so the gradients are bit-identical.
 *
 * A checkpointed forward writes conv2 over conv1 (norm1 has read conv1 by
 * then): its inner tensors are not kept, so one room serves both.
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

/* Stages of the timeline (see the top of the file). */
typedef struct timeline {
    int depth;
} timeline;
static int f_enc(timeline t, int i) { return (void)t, i; }
static int f_bottleneck(timeline t) { return t.depth; }
static int f_dec(timeline t, int i) { return 2 * t.depth - i; }
static int f_head(timeline t) { return 2 * t.depth + 1; }
static int f_loss(timeline t) { return 2 * t.depth + 2; }
static int b_head(timeline t) { return 2 * t.depth + 3; }
static int b_dec(timeline t, int i) { return 2 * t.depth + 4 + i; }
static int b_bottleneck(timeline t) { return 3 * t.depth + 4; }
static int b_enc(timeline t, int i) { return 4 * t.depth + 4 - i; }

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
    size_t saved = u->config.norm == TT_NORM_GROUP
                       ? 2 * (size_t)u->capacity * (size_t)u->config.groups * sizeof(float)
                       : 2 * (size_t)b->channels * sizeof(float);
    snprintf(name, sizeof name, "%s%s.norm1.saved", b->name, tag);
    add(r, name, saved, l->first, l->inner_last, &x->saved1);
    if (l->no_saved2) return;
    snprintf(name, sizeof name, "%s%s.norm2.saved", b->name, tag);
    add(r, name, saved, l->first, later(l->inner_last, l->saved2_last), &x->saved2);
}

/* A block's tensors: kept from forward to backward, or (checkpointing) a
 * short-lived forward set, its conv2 over its conv1, whose output lives
 * until `out_last`, and a set recomputed at `backward`.  conv1_last,
 * conv2_last: how long the rooms that carry a decoder block's gradients on
 * are needed (0: not past the block).  A lean block's backward set is two
 * rooms (unet.c, lean_backward): act2's carries d skip on, the conv room
 * the gradient below. */
static void add_block(request_list *r, const tt_unet *u, tt_unet_block *b, int forward,
                      int out_last, int backward, int conv1_last, int conv2_last)
{
    if (!u->config.checkpointing) {
        /* with a norm the block's own backward never reads act2 (unet.c) */
        int act2_last = u->config.norm != TT_NORM_NONE ? out_last : backward;
        set_life kept = {forward, backward, act2_last, conv1_last, conv2_last, 0, 0, 0};
        add_set(r, u, b, &b->fwd, "", &kept);
        return;
    }
    set_life fwd = {forward, forward, out_last, 0, 0, b->lean ? backward : 0, 1, 0};
    add_set(r, u, b, &b->fwd, "", &fwd);
    set_life bwd = {backward, backward, backward, conv1_last, conv2_last, 0, 0, 0};
    if (b->lean)
        bwd = (set_life){backward, backward, later(backward, conv1_last), 0, conv2_last, 0, 1, 1};
    add_set(r, u, b, &b->bwd, ".recompute", &bwd);
}

/* After planning: act1 in act2's room (or each act in its conv's room
 * without a norm: ReLU in place), conv2 in conv1's where they share,
 * backward's set, and the input. */
static void alias_block(const tt_unet *u, tt_unet_block *b, tt_mem input)
{
    tt_unet_tensors *sets[2] = {&b->fwd, &b->bwd};
    for (int k = 0; k < 2; k++) {
        tt_unet_tensors *x = sets[k];
        if (u->config.norm == TT_NORM_NONE) x->act1 = x->conv1, x->act2 = x->conv2;
        else x->act1 = x->act2;
        if (x->one_conv_room) x->conv2 = x->conv1;
    }
    if (!u->config.checkpointing) b->bwd = b->fwd; /* backward reads what forward wrote */
    if (b->lean) b->bwd.saved2 = b->fwd.saved2;
    b->input = input;
}

static void build_requests(tt_unet *u, request_list *r)
{
    const tt_unet_config *c = &u->config;
    timeline t = {c->depth};
    int norm = c->norm != TT_NORM_NONE;
    char name[48];
    for (int i = 0; i < c->depth; i++) {
        int ch = tt_unet_channels(c, i), h = u->height >> i, w = u->width >> i;
        /* the skip is read by dec.i's forward and backward (its conv1's
         * input); enc.i's backward finds the pool's winners in it again */
        add_block(r, u, &u->enc[i], f_enc(t, i), c->checkpointing ? b_dec(t, i) : b_enc(t, i),
                  b_enc(t, i), 0, 0);
        size_t pooled = tensor_bytes(u, ch, h / 2, w / 2);
        int reader = i + 1 < c->depth ? b_enc(t, i + 1) : b_bottleneck(t);
        snprintf(name, sizeof name, "enc.%d.pool", i);
        add(r, name, pooled, f_enc(t, i), reader, &u->pool[i]);
        /* dec.i's output feeds up.(i-1), whose backward reads it; dec.0 feeds
         * the head, and with a norm its room then holds the head's gradient
         * until dec.0's backward (dlevel).  Its rooms carry enc.i's gradient
         * on until enc.i's backward and the gradient of the output below
         * until that block's backward.  up.i has no room of its own: it is
         * written in act2's room, read by conv1 before act1 goes there. */
        int below = i + 1 < c->depth ? b_dec(t, i + 1) : b_bottleneck(t);
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

/* Debugging ($TT_PLAN_DUMP): the bytes alive at each stage of the
 * timeline and the tensors of 1 MiB or more alive there, on stderr, before
 * placement: the lower bound any placement has to meet. */
static void dump_timeline(const request_list *r)
{
    int stages = 0;
    for (int i = 0; i < r->count; i++) stages = later(stages, r->items[i].last + 1);
    for (int s = 0; s < stages; s++) {
        size_t live = 0;
        for (int i = 0; i < r->count; i++)
            if (r->items[i].first <= s && s <= r->items[i].last) live += r->items[i].bytes;
        fprintf(stderr, "stage %2d %9.1f MiB:", s, live / 1048576.0);
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
    /* aliases and inputs, now that every tensor has its place */
    for (int i = 0; i < c->depth; i++) {
        tt_unet_block *d = &u->dec[i];
        alias_block(u, &u->enc[i], i ? u->pool[i - 1] : u->input);
        alias_block(u, d, d->fwd.act2);
        u->up[i] = d->fwd.act2;
        d->skip = u->enc[i].fwd.act2;
        u->dskip[i] = d->lean ? d->bwd.act2 : d->bwd.conv1;
        u->dnext[i] = d->lean ? d->bwd.conv1 : d->bwd.conv2;
    }
    alias_block(u, &u->bottleneck, u->pool[c->depth - 1]);
    if (c->norm != TT_NORM_NONE) u->dlevel = u->dec[0].fwd.act2;
    /* AUTO keeps room for every candidate, im2col's columns included; when
     * that is more than one buffer may hold (full-resolution tiles), the
     * direct kernels, which need no columns, run every layer */
    size_t ws = tt_unet_workspace_bytes(u);
    if (ws > u->be->device.max_alloc_bytes || ws > u->be->device.global_mem_bytes / 8) {
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

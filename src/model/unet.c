/*
 * The UNet's forward and backward passes, written out in order (llm.c style):
 * encoder blocks with max-pooling, a bottleneck, decoder blocks fed by a
 * 2x2 stride-2 up-convolution concatenated with the skip, and a 1x1 head.
 *
 * Building the model (blocks, parameters, the arena) is unet_build.c.
 *
 * Memory: every activation has a place in the planned arena (unet_memory.c
 * names the tensors); when each lives is taken from one run of these
 * passes on a recording dry backend, so the plan follows whatever order
 * they are written in.
 *
 * 16-bit storage (config.precision fp16 or bf16): what the forward keeps
 * for the backward is packed as soon as it is made, and the rest of the
 * forward computes with the stored values, so forward and backward
 * differentiate one function.  A block that is not recomputed keeps conv1
 * and conv2: with a norm, the norms read them as stored (16-bit input, in
 * forward and backward alike) and the block's output is made again from
 * conv2 where it is read (bring_output); without, they are unpacked for
 * the backward.  A recomputed block keeps its output (store_16).  The
 * other kernels read and write fp32, so the fp32 tensors live for a
 * block's forward or backward only; pools are made again, as with
 * checkpointing.
 *
 * 16-bit storage with checkpointing (and a norm) is the banded step
 * instead (u->banded, unet_banded.c): no full-size fp32 tensor at all.
 */
#include "model/unet.h"
#include "model/unet_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/activation.h"
#include "ops/cast.h"
#include "ops/concat.h"
#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"
#include "ops/group_norm.h"
#include "ops/max_pool2d.h"
#include "ops/norm.h"
#include "ops/util.h"

#define NONE ((tt_mem){0})

/* ---- one block ------------------------------------------------------------ */

/* The norm's input is read as `xp` says it is stored: fp32, or a kept
 * block's 16-bit conv1 or conv2 (half_conv1, half_conv2) read in place. */
#define FP32 TT_PRECISION_FP32

static tt_status norm_forward(tt_unet *u, tt_unet_block *b, tt_mem out, tt_mem saved, tt_mem inp,
                              tt_precision xp, int w_index, int b_index, tt_batch_norm_state *bn,
                              int n)
{
    if (u->config.norm == TT_NORM_GROUP) {
        tt_group_norm_desc d = tt_unet_group_desc(u, b, n, xp);
        return tt_group_norm_forward(u->be, out, saved, inp, tt_unet_param(u, w_index),
                                     tt_unet_param(u, b_index), &d);
    }
    tt_batch_norm_desc d = tt_unet_batch_desc(u, b, n, xp);
    return tt_batch_norm_forward(u->be, out, saved, inp, bn, &d, u->training);
}

/* dinp = d conv given dout = d act (in place when they are the same). */
static tt_status norm_backward(tt_unet *u, tt_unet_block *b, tt_mem dinp, tt_mem dout, tt_mem inp,
                               tt_precision xp, tt_mem saved, int w_index, int b_index,
                               const tt_batch_norm_state *bn, int n)
{
    if (u->config.norm == TT_NORM_GROUP) {
        tt_group_norm_desc d = tt_unet_group_desc(u, b, n, xp);
        return tt_group_norm_backward(u->be, dinp, tt_unet_grad(u, w_index),
                                      tt_unet_grad(u, b_index), dout, inp, saved,
                                      tt_unet_param(u, w_index), tt_unet_param(u, b_index), &d);
    }
    tt_batch_norm_desc d = tt_unet_batch_desc(u, b, n, xp);
    return tt_batch_norm_backward(u->be, dinp, tt_unet_grad(u, w_index), tt_unet_grad(u, b_index),
                                  dout, inp, saved, bn, &d, 1);
}

/* dst = relu(norm(inp)) from the forward's input and statistics (`saved`):
 * the forward's output again, the same bits. */
static tt_status norm_from_saved(tt_unet *u, tt_unet_block *b, tt_mem dst, tt_mem inp,
                                 tt_precision xp, tt_mem saved, int w_index, int b_index,
                                 const tt_batch_norm_state *bn, int n)
{
    if (u->config.norm == TT_NORM_GROUP) {
        tt_group_norm_desc d = tt_unet_group_desc(u, b, n, xp);
        return tt_group_norm_apply_saved(u->be, dst, inp, saved, tt_unet_param(u, w_index),
                                         tt_unet_param(u, b_index), &d);
    }
    tt_batch_norm_desc d = tt_unet_batch_desc(u, b, n, xp);
    return tt_batch_norm_apply_saved(u->be, dst, inp, saved, bn, &d);
}

/* Elements of one of the block's tensors for n images. */
static size_t block_count(const tt_unet_block *b, int n)
{
    return (size_t)n * b->channels * b->height * b->width;
}

/* Names the layer whose work follows (the convolution log's labels). */
static void tag(tt_unet *u, const char *owner, const char *what)
{
    char name[48];
    snprintf(name, sizeof name, "%s%s", owner, what);
    tt_backend_layer(u->be, name);
}

/* ---- 16-bit storage ------------------------------------------------------ */

/* 16-bit storage, as soon as a kept tensor is made: x rounded to 16 bits
 * in place, so that from here on the forward computes with the values the
 * backward will read, and packed into `half` as well when the backward
 * reads it from there (NONE: rounded only).  Forward and backward then
 * differentiate one function, and the backward's ReLU masks, pool winners
 * and norm inputs are the forward's. */
static tt_status store_16(tt_unet *u, tt_mem x, tt_mem half, size_t count)
{
    if (!tt_unet_stores_16(u)) return NULL;
    tt_precision p = u->config.precision;
    if (!half.buffer) return tt_cast_round(u->be, x, p, count);
    TT_TRY(tt_cast_pack(u->be, half, x, p, count));
    return tt_cast_unpack(u->be, x, half, p, count);
}

/* With 16-bit storage and a norm, a kept block's backward reads its conv1
 * and conv2 where they are stored, in 16 bits (the norm kernels read them
 * so); otherwise from its backward set. */
static int reads_stored(const tt_unet *u, const tt_unet_block *b)
{
    return tt_unet_stores_16(u) && !b->recompute && u->config.norm != TT_NORM_NONE;
}

/* What a norm of the block reads as conv1 or conv2, and *xp how it is
 * stored: the 16-bit copy `half` where the block reads it as stored
 * (reads_stored: its forward and its backward alike), else the set's fp32
 * tensor `fp32`. */
static tt_mem norm_input(const tt_unet *u, const tt_unet_block *b, tt_mem half, tt_mem fp32,
                         tt_precision *xp)
{
    int stored = reads_stored(u, b);
    *xp = stored ? u->config.precision : FP32;
    return stored ? half : fp32;
}

/* 16-bit storage: the block's output into `dst` (its backward set's act2,
 * dec.i's forward skip, up.i's input made again): unpacked where it is
 * stored (a recomputed block, or one without a norm: its conv2), else
 * made again by its norm from the stored conv2 with the forward's
 * statistics and rounded, the very bits store_16 left in act2 (the norm
 * read the stored conv2 then too; norm_forward in eval mode, where batch
 * norm's apply reads the running statistics). */
static tt_status bring_output(tt_unet *u, tt_unet_block *b, tt_mem dst, int n)
{
    if (!tt_unet_stores_16(u)) return NULL;
    tt_precision p = u->config.precision;
    size_t count = block_count(b, n);
    if (b->half_act2.buffer) return tt_cast_unpack(u->be, dst, b->half_act2, p, count);
    tt_mem saved = b->fwd.saved2;
    if (u->training || u->config.norm == TT_NORM_GROUP)
        TT_TRY(norm_from_saved(u, b, dst, b->half_conv2, p, saved, b->norm2_w, b->norm2_b,
                               &b->bn2, n));
    else /* eval mode: an apply with the running statistics, nothing counted */
        TT_TRY(norm_forward(u, b, dst, saved, b->half_conv2, p, b->norm2_w, b->norm2_b, &b->bn2,
                            n));
    return tt_cast_round(u->be, dst, p, count);
}

/* The block's output as the backward reads it from outside the block: the
 * forward's, or with 16-bit storage what bring_output put in its backward
 * set. */
static tt_mem output_for_backward(const tt_unet *u, const tt_unet_block *b)
{
    return tt_unet_stores_16(u) ? b->bwd.act2 : b->fwd.act2;
}

/* ---- a decoder block's conv1, over [up, skip] without the copy -----------
 * (unet_internal.h): forward conv(up, wa) + conv(skip, wb); input
 * gradients go straight to d up and d skip; weight gradients per half. */

static tt_status dec_conv1_forward(tt_unet *u, const tt_unet_block *b, tt_mem out, tt_mem up,
                                   tt_mem skip, int n)
{
    tt_unet_split s;
    TT_TRY(tt_unet_split_conv1(u, b, &s));
    tt_conv2d_desc d = tt_unet_conv3x3(u, n, b->in_channels / 2, b->channels, b->height, b->width);
    TT_TRY(tt_conv2d_forward(u->be, out, up, s.wa, tt_unet_param(u, b->conv1_b), &d,
                             tt_unet_workspace(u)));
    return tt_conv2d_forward_add(u->be, out, skip, s.wb, &d, tt_unet_workspace(u));
}

/* Given dout = d conv1 output and g = up on entry: the weight and bias
 * gradients of conv1, dskip = d skip (overwritten) and g = d up (over the
 * up it held, which the weight gradient has read by then). */
static tt_status dec_conv1_backward(tt_unet *u, const tt_unet_block *b, tt_mem dout, tt_mem g,
                                    tt_mem skip, tt_mem dskip, int n)
{
    tt_unet_split s;
    TT_TRY(tt_unet_split_conv1(u, b, &s));
    tt_conv2d_desc d = tt_unet_conv3x3(u, n, b->in_channels / 2, b->channels, b->height, b->width);
    TT_TRY(tt_fill(u->be, s.ga, 0.0f, 2 * s.half_floats));
    /* the skip's weight gradient first: with 16-bit storage the skip's
     * unpacked copy is dead before d skip is made */
    TT_TRY(tt_conv2d_backward(u->be, NONE, s.gb, NONE, dout, skip, NONE, &d, tt_unet_workspace(u)));
    TT_TRY(tt_conv2d_backward(u->be, NONE, s.ga, tt_unet_grad(u, b->conv1_b), dout, g, NONE, &d,
                              tt_unet_workspace(u)));
    TT_TRY(tt_conv2d_input_gradient(u->be, dskip, dout, s.wb, &d, tt_unet_workspace(u)));
    /* up is read: d up goes over it */
    TT_TRY(tt_conv2d_input_gradient(u->be, g, dout, s.wa, &d, tt_unet_workspace(u)));
    return tt_unet_join_conv1_grads(u, b, &s);
}

/* up.i, the up-convolution into dec.i's first input: what it reads (the
 * output below dec.i, dec.(i+1)'s or the bottleneck's), its parameter
 * indices and its shape for n images. */
typedef struct up_conv {
    tt_mem below;
    int weight, bias;
    tt_conv_transpose2d_desc desc;
} up_conv;

/* The block below dec.i: dec.(i+1) or the bottleneck. */
static tt_unet_block *below_of(tt_unet *u, int i)
{
    return i + 1 < u->config.depth ? &u->dec[i + 1] : &u->bottleneck;
}

/* `backward`: the below's output as the backward reads it
 * (output_for_backward). */
static up_conv up_conv_of(const tt_unet *u, int i, int n, int backward)
{
    const tt_unet_config *c = &u->config;
    int ch = tt_unet_channels(c, i);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "up.%d", i);
    const tt_unet_block *below = i + 1 < c->depth ? &u->dec[i + 1] : &u->bottleneck;
    return (up_conv){backward ? output_for_backward(u, below) : below->fwd.act2,
                     tt_unet_param_index(u, prefix, "weight"),
                     tt_unet_param_index(u, prefix, "bias"),
                     tt_unet_upconv(u, n, 2 * ch, ch, (u->height >> i) / 2, (u->width >> i) / 2)};
}

/* 16-bit storage: the output of the block below dec.i unpacked for the
 * backward (up.i made again, then up.i's own backward). */
static tt_status bring_below(tt_unet *u, int i, int n)
{
    tt_unet_block *below = below_of(u, i);
    return bring_output(u, below, below->bwd.act2, n);
}

/* 16-bit storage: enc.i's output unpacked as dec.i's skip for its
 * backward, unless checkpointing makes enc.i again for that (i > 0). */
static tt_status bring_skip(tt_unet *u, int i, int n)
{
    if (i > 0 && u->config.checkpointing) return NULL; /* skip_again's */
    return bring_output(u, &u->enc[i], u->dec[i].bwd.skip, n);
}

/* up[i] into `out`: the forward's, or the same again in backward. */
static tt_status up_forward(tt_unet *u, int i, tt_mem out, int n, int backward)
{
    up_conv up = up_conv_of(u, i, n, backward);
    char name[16];
    snprintf(name, sizeof name, "up.%d", i);
    tag(u, name, "");
    return tt_conv_transpose2d_forward(u->be, out, up.below, tt_unet_param(u, up.weight),
                                       tt_unet_param(u, up.bias), &up.desc, tt_unet_workspace(u));
}

/* up.i made again into `out` for dec.i's backward.  With 16-bit storage
 * and dec.i kept, from the output below unpacked into a tensor of its own
 * (below_again), dead once read: the copy up.i's backward reads is
 * unpacked after dec.i's conv1 backward (bring_below), so neither is alive
 * when d skip is made. */
static tt_status up_again(tt_unet *u, int i, tt_mem out, int n)
{
    if (!u->below_again[i].buffer) return up_forward(u, i, out, n, 1);
    up_conv up = up_conv_of(u, i, n, 1);
    TT_TRY(bring_output(u, below_of(u, i), u->below_again[i], n));
    return tt_conv_transpose2d_forward(u->be, out, u->below_again[i], tt_unet_param(u, up.weight),
                                       tt_unet_param(u, up.bias), &up.desc, tt_unet_workspace(u));
}

/* conv1 of the block into out, from `input` (a decoder block's: up, and
 * x->skip). */
static tt_status conv1_forward(tt_unet *u, const tt_unet_block *b, const tt_unet_tensors *x,
                               tt_mem out, tt_mem input, int n)
{
    tag(u, b->name, ".conv1");
    if (x->skip.buffer) return dec_conv1_forward(u, b, out, input, x->skip, n);
    tt_conv2d_desc d1 = tt_unet_conv3x3(u, n, b->in_channels, b->channels, b->height, b->width);
    d1.no_input_grad = b == &u->enc[0]; /* the image's gradient is never asked for */
    return tt_conv2d_forward(u->be, out, input, tt_unet_param(u, b->conv1_w),
                             tt_unet_param(u, b->conv1_b), &d1, tt_unet_workspace(u));
}

/* Batch norm's state for a recomputation: its running statistics are left
 * alone (the first forward already counted this micro-batch). */
static tt_batch_norm_state no_running(tt_batch_norm_state s)
{
    s.running_mean = s.running_var = NONE;
    return s;
}

/* x->act2 = relu(norm2(conv2(relu(norm1(conv1(input)))))). */
static tt_status block_forward(tt_unet *u, tt_unet_block *b, const tt_unet_tensors *x,
                               tt_mem input, int n, int recompute)
{
    size_t count = block_count(b, n);
    int norm = u->config.norm != TT_NORM_NONE;
    tt_conv2d_desc d2 = tt_unet_conv3x3(u, n, b->channels, b->channels, b->height, b->width);
    tt_batch_norm_state bn1 = no_running(b->bn1), bn2 = no_running(b->bn2);
    tt_batch_norm_state *s1 = recompute ? &bn1 : &b->bn1, *s2 = recompute ? &bn2 : &b->bn2;
    /* 16-bit storage: a kept block's forward stores conv1 and conv2 (with
     * a norm, what the norm reads, packed as soon as made and read by the
     * norm as stored, so the fp32 conv output is dead at once; without,
     * the ReLU's output in place); every set's output is rounded, the
     * forward's stored */
    int kept = x == &b->fwd && !b->recompute, forward = x == &b->fwd;
    tt_precision xp;
    TT_TRY(conv1_forward(u, b, x, x->conv1, input, n));
    if (norm) {
        tt_mem in1 = norm_input(u, b, b->half_conv1, x->conv1, &xp);
        if (xp != FP32) TT_TRY(tt_cast_pack(u->be, in1, x->conv1, xp, count));
        TT_TRY(norm_forward(u, b, x->act1, x->saved1, in1, xp, b->norm1_w, b->norm1_b, s1, n));
    } else {
        TT_TRY(tt_relu_forward(u->be, x->act1, x->act1, count));
        if (kept) TT_TRY(store_16(u, x->act1, b->half_conv1, count));
    }
    tag(u, b->name, ".conv2");
    TT_TRY(tt_conv2d_forward(u->be, x->conv2, x->act1, tt_unet_param(u, b->conv2_w),
                             tt_unet_param(u, b->conv2_b), &d2, tt_unet_workspace(u)));
    if (norm) {
        tt_mem in2 = norm_input(u, b, b->half_conv2, x->conv2, &xp);
        if (xp != FP32) TT_TRY(tt_cast_pack(u->be, in2, x->conv2, xp, count));
        TT_TRY(norm_forward(u, b, x->act2, x->saved2, in2, xp, b->norm2_w, b->norm2_b, s2, n));
    } else {
        TT_TRY(tt_relu_forward(u->be, x->act2, x->act2, count));
        if (kept) return store_16(u, x->act2, b->half_conv2, count); /* act2: conv2's room */
    }
    return store_16(u, x->act2, forward ? b->half_act2 : NONE, count);
}

/* A recomputed block's (checkpointing, or enc.0) inner tensors made again
 * into its backward set, before anything reads that set (a decoder block's
 * up first, into the set's input); with 16-bit storage a kept block
 * without a norm has its conv2 unpacked into it instead (with a norm the
 * backward reads the stored ones: reads_stored). */
static tt_status recompute(tt_unet *u, tt_unet_block *b, int n)
{
    if (reads_stored(u, b)) return NULL;
    if (!b->recompute && tt_unet_stores_16(u)) /* conv1 later: bring_conv1 */
        return tt_cast_unpack(u->be, b->bwd.conv2, b->half_conv2, u->config.precision,
                              block_count(b, n));
    if (!b->recompute || b->keeps_again) return NULL; /* keeps_again: skip_again made it */
    tt_mem input = b->bwd.input;
    if (b->bwd.skip.buffer) TT_TRY(up_forward(u, b->level, input, n, 1));
    return block_forward(u, b, &b->bwd, input, n, 1);
}

/* 16-bit storage without a norm: a kept block's conv1 unpacked into its
 * backward set when the backward first reads it, after conv2's. */
static tt_status bring_conv1(tt_unet *u, const tt_unet_block *b, int n)
{
    if (b->recompute || !tt_unet_stores_16(u) || u->config.norm != TT_NORM_NONE) return NULL;
    return tt_cast_unpack(u->be, b->bwd.conv1, b->half_conv1, u->config.precision,
                          block_count(b, n));
}

/* dinput += d(block)/d(input) . g (dinput may be NONE), and the block's
 * parameter gradients, from the block's backward set (recompute() first),
 * given g = d act2.  With a norm act2 is never read: the ReLU masks come
 * from conv2 and conv1 and the norms' statistics (the forward's bits), so
 * g may take act2's bytes (dec.0: the head's gradient).  The
 * gradient runs down the block in two rooms: g's own (the ReLU and norm
 * gradients work in place) until conv2's backward, then conv2's, free once
 * norm2's backward has read it; act1 is made again there for conv2's weight
 * gradient, then d act1 goes over it.  A decoder block makes its up again
 * in g, free by then, writes d skip to u->dskip[i] and leaves d up in g. */
static tt_status block_backward(tt_unet *u, tt_unet_block *b, tt_mem dinput, tt_mem g, int n)
{
    const tt_unet_tensors *x = &b->bwd;
    size_t count = block_count(b, n);
    tt_conv2d_desc d1 = tt_unet_conv3x3(u, n, b->in_channels, b->channels, b->height, b->width);
    tt_conv2d_desc d2 = tt_unet_conv3x3(u, n, b->channels, b->channels, b->height, b->width);
    d1.no_input_grad = !dinput.buffer; /* enc.0's: the image's */
    tt_mem h = x->conv2, w2 = tt_unet_param(u, b->conv2_w);
    if (u->config.norm == TT_NORM_NONE) { /* act == conv: ReLUs in place */
        TT_TRY(tt_relu_backward_inplace(u->be, g, x->act2, count));        /* d conv2 out */
        TT_TRY(bring_conv1(u, b, n));
        TT_TRY(tt_conv2d_backward(u->be, NONE, tt_unet_grad(u, b->conv2_w),
                                  tt_unet_grad(u, b->conv2_b), g, x->act1, NONE, &d2,
                                  tt_unet_workspace(u)));
        /* act2 is read: d act1 over it */
        TT_TRY(tt_conv2d_input_gradient(u->be, h, g, w2, &d2, tt_unet_workspace(u)));
        TT_TRY(tt_relu_backward_inplace(u->be, h, x->act1, count));        /* d conv1 out */
    } else { /* conv1 and conv2 as the norms read them (norm_input) */
        tt_precision xp;
        tt_mem conv1 = norm_input(u, b, b->half_conv1, x->conv1, &xp);
        tt_mem conv2 = norm_input(u, b, b->half_conv2, x->conv2, &xp);
        TT_TRY(norm_backward(u, b, g, g, conv2, xp, x->saved2, b->norm2_w, b->norm2_b, &b->bn2, n));
        TT_TRY(norm_from_saved(u, b, h, conv1, xp, x->saved1, b->norm1_w, b->norm1_b, &b->bn1,
                               n));                                        /* act1 into h */
        TT_TRY(tt_conv2d_backward(u->be, NONE, tt_unet_grad(u, b->conv2_w),
                                  tt_unet_grad(u, b->conv2_b), g, h, NONE, &d2,
                                  tt_unet_workspace(u)));
        TT_TRY(tt_conv2d_input_gradient(u->be, h, g, w2, &d2, tt_unet_workspace(u))); /* d act1 */
        TT_TRY(norm_backward(u, b, h, h, conv1, xp, x->saved1, b->norm1_w, b->norm1_b, &b->bn1, n));
    }                                                                      /* d conv1 out */
    if (x->skip.buffer) {
        TT_TRY(up_again(u, b->level, g, n));
        if (!b->recompute) TT_TRY(bring_skip(u, b->level, n)); /* after up's input is dead */
        return dec_conv1_backward(u, b, h, g, x->skip, u->dskip[b->level], n);
    }
    return tt_conv2d_backward(u->be, dinput, tt_unet_grad(u, b->conv1_w),
                              tt_unet_grad(u, b->conv1_b), h, x->input,
                              tt_unet_param(u, b->conv1_w), &d1, tt_unet_workspace(u));
}

/* A decoder block's recomputation and backward in two rooms besides g, for
 * the block whose backward is the step's memory peak (checkpointing with a
 * norm): P holds up, then act1, then conv1 made a second time;
 * Q holds conv1, then conv2, then the gradient from conv2's backward on.
 * act2 is never made: its ReLU's mask is found from conv2 and the forward's
 * norm2 statistics (the same bits).  The price is conv1 once more. */
static tt_status lean_backward(tt_unet *u, tt_unet_block *b, tt_mem g, int n)
{
    const tt_unet_tensors *x = &b->bwd;
    tt_mem p = x->act2, q = x->conv1;
    tt_conv2d_desc d2 = tt_unet_conv3x3(u, n, b->channels, b->channels, b->height, b->width);
    tt_batch_norm_state bn1 = no_running(b->bn1);
    TT_TRY(up_forward(u, b->level, p, n, 1));
    TT_TRY(dec_conv1_forward(u, b, q, p, x->skip, n));                      /* conv1 */
    TT_TRY(norm_forward(u, b, p, x->saved1, q, FP32, b->norm1_w, b->norm1_b, &bn1, n)); /* act1 */
    TT_TRY(tt_conv2d_forward(u->be, q, p, tt_unet_param(u, b->conv2_w),
                             tt_unet_param(u, b->conv2_b), &d2, tt_unet_workspace(u))); /* conv2 */
    /* d norm2 out, then d conv2 out, in g */
    TT_TRY(norm_backward(u, b, g, g, q, FP32, x->saved2, b->norm2_w, b->norm2_b, &b->bn2, n));
    TT_TRY(tt_conv2d_backward(u->be, NONE, tt_unet_grad(u, b->conv2_w),
                              tt_unet_grad(u, b->conv2_b), g, p, NONE, &d2, tt_unet_workspace(u)));
    TT_TRY(tt_conv2d_input_gradient(u->be, q, g, tt_unet_param(u, b->conv2_w), &d2,
                                    tt_unet_workspace(u)));                 /* d act1 */
    TT_TRY(up_forward(u, b->level, g, n, 1));
    TT_TRY(dec_conv1_forward(u, b, p, g, x->skip, n));                      /* conv1 again */
    TT_TRY(norm_backward(u, b, q, q, p, FP32, x->saved1, b->norm1_w, b->norm1_b, &b->bn1, n));
    return dec_conv1_backward(u, b, q, g, x->skip, u->dskip[b->level], n);
}

/* With checkpointing or 16-bit storage, pool[i] made again for the
 * backward from enc.i's output, which lives until then (unet_memory.c): the
 * same kernel on the same input (with 16-bit storage, on the output as
 * stored; for a recomputed enc.i, unpacked once more into pool_source). */
static tt_status pool_again(tt_unet *u, int i, int n)
{
    if (!u->config.checkpointing && !tt_unet_stores_16(u)) return NULL;
    tt_unet_block *e = &u->enc[i];
    tt_pool2d_desc pd = tt_pool2d_square(n, e->channels, e->height, e->width, 2, 2);
    tt_mem source = u->dec[i].bwd.skip;
    if (u->pool_source[i].buffer) {
        source = u->pool_source[i];
        TT_TRY(tt_cast_unpack(u->be, source, e->half_act2, u->config.precision, block_count(e, n)));
    }
    return tt_max_pool2d_forward(u->be, u->pool_again[i], NONE, source, &pd);
}

/* With checkpointing, dec.i's skip (i > 0) made again just before its
 * backward: the pool above first, then enc.i's forward once more. */
static tt_status skip_again(tt_unet *u, int i, int n)
{
    if (!u->config.checkpointing) return NULL;
    TT_TRY(pool_again(u, i - 1, n));
    tt_unet_block *e = &u->enc[i];
    return block_forward(u, e, &e->again, e->again.input, n, 1);
}

tt_status tt_unet_forward(tt_unet *u, int n, int training)
{
    if (n < 1 || n > u->capacity)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "UNet forward: batch %d outside 1..%d", n,
                            u->capacity);
    const tt_unet_config *c = &u->config;
    u->batch = n;
    u->training = training;
    tt_backend_phase(u->be, "forward");
    if (u->poison) /* debugging: a read before a write shows up as NaN */
        for (int i = 0; i < u->model.act_count; i++)
            TT_TRY(tt_fill(u->be, tt_mem_of(u->model.act_buffers[i]), u->poison_value,
                           u->model.act_buffers[i]->bytes / sizeof(float)));
    if (u->banded) return tt_unet_banded_forward(u, n);
    for (int i = 0; i < c->depth; i++) {
        tt_unet_block *b = &u->enc[i];
        TT_TRY(block_forward(u, b, &b->fwd, b->fwd.input, n, 0));
        tt_pool2d_desc pd = tt_pool2d_square(n, b->channels, b->height, b->width, 2, 2);
        TT_TRY(tt_max_pool2d_forward(u->be, u->pool[i], NONE, b->fwd.act2, &pd));
    }
    TT_TRY(block_forward(u, &u->bottleneck, &u->bottleneck.fwd, u->bottleneck.fwd.input, n, 0));
    for (int i = c->depth - 1; i >= 0; i--) {
        TT_TRY(up_forward(u, i, u->up[i], n, 0));
        TT_TRY(bring_output(u, &u->enc[i], u->skip_fwd[i], n)); /* dec.i's fwd.skip */
        TT_TRY(block_forward(u, &u->dec[i], &u->dec[i].fwd, u->up[i], n, 0));
    }
    tag(u, "head", "");
    tt_conv2d_desc hd = tt_unet_head_desc(u, n);
    return tt_conv2d_forward(u->be, u->logits, u->dec[0].fwd.act2,
                             tt_unet_param(u, tt_unet_param_index(u, "head", "weight")),
                             tt_unet_param(u, tt_unet_param_index(u, "head", "bias")), &hd,
                             tt_unet_workspace(u));
}

tt_status tt_unet_backward(tt_unet *u)
{
    const tt_unet_config *c = &u->config;
    int n = u->batch;
    if (!u->training || n < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "UNet backward needs a training forward of the same batch first");
    tt_backend_phase(u->be, "backward");
    if (u->banded) return tt_unet_banded_backward(u);
    /* head: dlevel = d dec.0 output */
    size_t level0 = (size_t)n * tt_unet_channels(c, 0) * u->height * u->width;
    tt_conv2d_desc hd = tt_unet_head_desc(u, n);
    int hw = tt_unet_param_index(u, "head", "weight"), hb = tt_unet_param_index(u, "head", "bias");
    TT_TRY(bring_output(u, &u->dec[0], u->dec[0].bwd.act2, n));
    TT_TRY(tt_conv2d_backward(u->be, NONE, tt_unet_grad(u, hw), tt_unet_grad(u, hb), u->dlogits,
                              output_for_backward(u, &u->dec[0]), NONE, &hd, tt_unet_workspace(u)));
    /* dec.0's output is read: dlevel may take its bytes */
    TT_TRY(tt_fill(u->be, u->dlevel, 0.0f, level0));
    TT_TRY(tt_conv2d_backward(u->be, u->dlevel, NONE, NONE, u->dlogits, NONE, tt_unet_param(u, hw),
                              &hd, tt_unet_workspace(u)));
    /* decoder, top level first: dec[i] -> [d up, d skip] -> up[i] -> the
     * output below, whose gradient goes to dnext[i] */
    tt_mem g = u->dlevel;
    for (int i = 0; i < c->depth; i++) {
        tt_unet_block *b = &u->dec[i];
        if (b->recompute) { /* else in block_backward */
            TT_TRY(bring_below(u, i, n));
            TT_TRY(bring_skip(u, i, n));
        }
        if (i > 0) TT_TRY(skip_again(u, i, n));
        if (b->lean) {
            TT_TRY(lean_backward(u, b, g, n));
        } else {
            TT_TRY(recompute(u, b, n));
            TT_TRY(block_backward(u, b, NONE, g, n));
        }                                                  /* g: d up */
        if (!b->recompute) TT_TRY(bring_below(u, i, n)); /* 16-bit: what up.i read, again */
        up_conv up = up_conv_of(u, i, n, 1);
        size_t below_count = (size_t)n * up.desc.in_channels * up.desc.in_h * up.desc.in_w;
        TT_TRY(tt_fill(u->be, u->dnext[i], 0.0f, below_count));
        TT_TRY(tt_conv_transpose2d_backward(u->be, u->dnext[i], tt_unet_grad(u, up.weight),
                                            tt_unet_grad(u, up.bias), g, up.below,
                                            tt_unet_param(u, up.weight), &up.desc,
                                            tt_unet_workspace(u)));
        g = u->dnext[i];
    }
    /* bottleneck, then the encoder from the bottom: block -> pool -> dskip */
    TT_TRY(pool_again(u, c->depth - 1, n));
    tt_unet_block *bn = &u->bottleneck;
    size_t below_count = (size_t)n * bn->in_channels * bn->height * bn->width;
    TT_TRY(tt_fill(u->be, u->dinput, 0.0f, below_count));
    TT_TRY(recompute(u, bn, n));
    TT_TRY(block_backward(u, bn, u->dinput, g, n));
    for (int i = c->depth - 1; i >= 0; i--) {
        tt_unet_block *b = &u->enc[i];
        tt_pool2d_desc pd = tt_pool2d_square(n, b->channels, b->height, b->width, 2, 2);
        if (i > 0 && !c->checkpointing) TT_TRY(pool_again(u, i - 1, n)); /* 16-bit: bwd.input */
        TT_TRY(recompute(u, b, n)); /* the pool's winners are found in bwd.act2 */
        TT_TRY(tt_max_pool2d_backward_from_input(u->be, u->dskip[i], u->dinput, b->bwd.act2, &pd));
        if (i == 0) {
            TT_TRY(block_backward(u, b, NONE, u->dskip[i], n)); /* no image gradient */
        } else {
            size_t count = (size_t)n * b->in_channels * b->height * b->width;
            TT_TRY(tt_fill(u->be, u->dinput, 0.0f, count));
            TT_TRY(block_backward(u, b, u->dinput, u->dskip[i], n));
        }
    }
    return NULL;
}

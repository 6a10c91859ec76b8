/*
 * The ResNet-encoder UNet's forward and backward passes, written out in
 * order (see unet_resnet.h for the layout).  Building the model is
 * unet_resnet_build.c; every activation has its place in the planned arena
 * there, taken from one run of these passes on a recording dry backend.
 *
 * Gradients: each convolution's `dout` first receives the gradient at its
 * norm's output, which the norm's backward turns, in place, into the
 * gradient at the convolution's output.  A tensor read by two consumers (a
 * block's input, an encoder feature that is also a skip) has one gradient
 * tensor, zeroed just before the first consumer's backward adds into it.
 */
#include "model/unet_resnet.h"

#include "core/status.h"
#include "ops/add.h"
#include "ops/cast.h"
#include "ops/concat.h"
#include "ops/max_pool2d.h"
#include "ops/upsample.h"
#include "ops/upsample_nearest.h"
#include "ops/util.h"

#define NONE ((tt_mem){0})

tt_conv2d_desc tt_unet_resnet_conv_desc(const tt_unet_resnet *u, const tt_ur_conv *c, int n)
{
    int pad = c->kernel / 2;
    return (tt_conv2d_desc){.batch = n, .in_channels = c->in_channels, .in_h = c->in_h,
                            .in_w = c->in_w, .out_channels = c->out_channels,
                            .kernel_h = c->kernel, .kernel_w = c->kernel, .stride_h = c->stride,
                            .stride_w = c->stride, .pad_h = pad, .pad_w = pad,
                            .algo = u->conv_algo, .no_input_grad = c->first};
}

tt_conv2d_desc tt_unet_resnet_half_desc(const tt_unet_resnet *u, const tt_ur_decoder *d,
                                        int channels, int n)
{
    tt_conv2d_desc x = tt_unet_resnet_conv_desc(u, &d->conv1, n);
    x.in_channels = channels;
    return x;
}

static tt_mem workspace(const tt_unet_resnet *u)
{
    return u->model.workspace_buffer ? tt_mem_of(u->model.workspace_buffer) : NONE;
}

static size_t count(int n, int channels, int h, int w)
{
    return (size_t)n * (size_t)channels * (size_t)h * (size_t)w;
}

/* The norm of c: batch statistics in training unless frozen. */
static int norm_trains(const tt_unet_resnet *u, const tt_ur_conv *c)
{
    return u->training && !c->frozen;
}

static tt_batch_norm_desc norm_desc(const tt_unet_resnet *u, const tt_ur_conv *c, int n)
{
    tt_batch_norm_desc d = tt_batch_norm_desc_make(n, c->out_channels, c->out_h, c->out_w);
    d.relu = c->relu;
    d.sync = u->model.norm_sync;
    return d;
}

/* (that pass upsamples the fp32 output) */
int tt_unet_resnet_keeps_16(const tt_unet_resnet *u, const tt_ur_conv *c)
{
    return u->spec.precision != TT_PRECISION_FP32 && !c->recomputed && c->bn_w >= 0 &&
           !c->remade_upsampled;
}

/* c's convolution output as kept: out_half with 16-bit storage, else out. */
static tt_mem kept_out(const tt_ur_conv *c)
{
    return c->out_half.buffer ? c->out_half : c->out;
}

/* c's norm over `out`: its descriptor, reading `out` as it is stored (the
 * 16-bit out_half, or fp32). */
static tt_batch_norm_desc norm_desc_over(const tt_unet_resnet *u, const tt_ur_conv *c, int n,
                                         tt_mem out)
{
    tt_batch_norm_desc d = norm_desc(u, c, n);
    if (c->out_half.buffer && out.buffer == c->out_half.buffer && out.offset == c->out_half.offset)
        d.input_precision = u->spec.precision;
    return d;
}

/* 16-bit storage: c's output just made in c->out packed into out_half, the
 * values the norm reads from now on. */
static tt_status keep_out(tt_unet_resnet *u, const tt_ur_conv *c, int n)
{
    if (!c->out_half.buffer) return NULL;
    return tt_cast_pack(u->be, c->out_half, c->out, u->spec.precision,
                        count(n, c->out_channels, c->out_h, c->out_w));
}

/* out = conv(in) (+ bias) with c's weights. */
static tt_status convolve(tt_unet_resnet *u, tt_ur_conv *c, tt_mem out, tt_mem in, int n)
{
    tt_conv2d_desc d = tt_unet_resnet_conv_desc(u, c, n);
    tt_backend_layer(u->be, c->name);
    return tt_conv2d_forward(u->be, out, in, tt_unet_resnet_param(u, c->weight),
                             tt_unet_resnet_param(u, c->bias), &d, workspace(u));
}

/* act = [relu](norm(conv(in))); the head (no norm) writes act == out. */
static tt_status conv_forward(tt_unet_resnet *u, tt_ur_conv *c, tt_mem in, int n)
{
    TT_TRY(convolve(u, c, c->out, in, n));
    if (c->bn_w < 0) return NULL;
    TT_TRY(keep_out(u, c, n));
    tt_batch_norm_desc b = norm_desc_over(u, c, n, kept_out(c));
    return tt_batch_norm_forward(u->be, c->act, c->saved, kept_out(c), &c->bn, &b,
                                 norm_trains(u, c));
}

/* What the backward reads as c's convolution output. */
static tt_mem out_for_backward(const tt_ur_conv *c)
{
    return c->recomputed ? c->out_again : kept_out(c);
}

/* c's convolution again (recomputed), from `in`, into out_again. */
static tt_status recompute(tt_unet_resnet *u, tt_ur_conv *c, tt_mem in, int n)
{
    return convolve(u, c, c->out_again, in, n);
}

/* dest = c's norm(+ReLU) output again from `out` (its convolution's
 * output), the same bits as the forward's act: the norm applied with the
 * statistics the forward saved (or, frozen, the running ones). */
static tt_status remake_into(tt_unet_resnet *u, tt_ur_conv *c, tt_mem dest, tt_mem out, int n)
{
    tt_batch_norm_desc b = norm_desc_over(u, c, n, out);
    if (!norm_trains(u, c))
        return tt_batch_norm_forward(u->be, dest, c->saved, out, &c->bn, &b, 0);
    return tt_batch_norm_apply_saved(u->be, dest, out, c->saved, &c->bn, &b);
}

/* c->act_again = c's output again. */
static tt_status remake(tt_unet_resnet *u, tt_ur_conv *c, int n)
{
    return remake_into(u, c, c->act_again, out_for_backward(c), n);
}

/* up = nearest x2 of c's output, made again into the decoder's up room:
 * the upsampling of c's convolution output, then c's norm over up in
 * place.  The norm is element-wise with one scale and shift per channel,
 * so these are the bits of upsampling act, without a room for act at c's
 * size beside up's.  (c's saved room is sized for the larger layout.) */
static tt_status remake_upsampled(tt_unet_resnet *u, tt_ur_conv *c, tt_mem up, int n)
{
    tt_upsample_desc ud = {n, c->out_channels, c->out_h, c->out_w};
    TT_TRY(tt_upsample_nearest2x_forward(u->be, up, out_for_backward(c), &ud));
    tt_batch_norm_desc b = norm_desc(u, c, n);
    b.height *= 2, b.width *= 2;
    if (!norm_trains(u, c)) return tt_batch_norm_forward(u->be, up, c->saved, up, &c->bn, &b, 0);
    return tt_batch_norm_apply_saved(u->be, up, up, c->saved, &c->bn, &b);
}

/* What the backward reads as c's output. */
static tt_mem output_for_backward(const tt_ur_conv *c)
{
    return c->remade ? c->act_again : c->act;
}

/* c->dout holds the gradient at act: the norm's parameter gradients, and
 * c->dout (in place) the gradient at the convolution's output. */
static tt_status norm_backward(tt_unet_resnet *u, tt_ur_conv *c, int n)
{
    tt_batch_norm_desc b = norm_desc_over(u, c, n, out_for_backward(c));
    return tt_batch_norm_backward(u->be, c->dout, tt_unet_resnet_grad(u, c->bn_w),
                                  tt_unet_resnet_grad(u, c->bn_b), c->dout, out_for_backward(c),
                                  c->saved, &c->bn, &b, norm_trains(u, c));
}

/* c->dout holds the gradient at act: the norm's and the convolution's
 * parameter gradients, and din += the gradient at `in` (din NONE: not
 * wanted). */
static tt_status conv_backward(tt_unet_resnet *u, tt_ur_conv *c, tt_mem in, tt_mem din, int n)
{
    if (c->bn_w >= 0) TT_TRY(norm_backward(u, c, n));
    tt_conv2d_desc d = tt_unet_resnet_conv_desc(u, c, n);
    return tt_conv2d_backward(u->be, din, tt_unet_resnet_grad(u, c->weight),
                              tt_unet_resnet_grad(u, c->bias), c->dout, in,
                              tt_unet_resnet_param(u, c->weight), &d, workspace(u));
}

/* After norm_backward (c->dout the gradient at the convolution's output):
 * c's weight (and bias) gradients alone, reading `in`.  With
 * input_backward, conv_backward's work in two calls, the same bits: the
 * op runs each direction by itself; the caller lets `in` die before the
 * input's gradient is born. */
static tt_status weight_backward(tt_unet_resnet *u, tt_ur_conv *c, tt_mem in, int n)
{
    tt_conv2d_desc d = tt_unet_resnet_conv_desc(u, c, n);
    return tt_conv2d_backward(u->be, NONE, tt_unet_resnet_grad(u, c->weight),
                              tt_unet_resnet_grad(u, c->bias), c->dout, in, NONE, &d, workspace(u));
}

/* din += the gradient at c's input, from c->dout. */
static tt_status input_backward(tt_unet_resnet *u, tt_ur_conv *c, tt_mem din, int n)
{
    tt_conv2d_desc d = tt_unet_resnet_conv_desc(u, c, n);
    return tt_conv2d_backward(u->be, din, NONE, NONE, c->dout, NONE,
                              tt_unet_resnet_param(u, c->weight), &d, workspace(u));
}

static size_t conv_count(const tt_ur_conv *c, int n)
{
    return count(n, c->out_channels, c->out_h, c->out_w);
}

/* ---- the encoder ----------------------------------------------------------- */

static tt_pool2d_desc pool_desc(const tt_unet_resnet *u, int n)
{
    const tt_ur_conv *s = &u->stem;
    return (tt_pool2d_desc){.batch = n, .channels = s->out_channels, .height = s->out_h,
                            .width = s->out_w, .kernel_h = 3, .kernel_w = 3, .stride_h = 2,
                            .stride_w = 2, .pad_h = 1, .pad_w = 1};
}

/* What the backward reads as b's output y, and as its input. */
static tt_mem block_output(const tt_ur_block *b)
{
    return b->output_again ? b->y_again : b->y;
}

static tt_mem block_input(const tt_unet_resnet *u, const tt_ur_block *b)
{
    if (b == &u->blocks[0]) return u->pool_again_made ? u->pool_again : u->pool;
    return block_output(b - 1);
}

/* b->y_again = b's output again, the forward's bits: conv2's and the
 * downsample's outputs normed with their saved statistics, added to the
 * identity (the block's input, made again itself when it is not the
 * layer's) with the ReLU.  Without checkpointing the block keeps its
 * convolutions' outputs and this is element-wise; with it they are made
 * again first from the input, in the pass's rooms. */
static tt_status block_output_pass(tt_unet_resnet *u, tt_ur_block *b, int n)
{
    tt_mem in = block_input(u, b), conv2_out = kept_out(&b->conv2), down_out = kept_out(&b->down);
    if (b->conv2.recomputed) {
        TT_TRY(convolve(u, &b->conv1, b->pass_a, in, n));
        TT_TRY(remake_into(u, &b->conv1, b->pass_b, b->pass_a, n));
        TT_TRY(convolve(u, &b->conv2, b->pass_a, b->pass_b, n));
        conv2_out = b->pass_a;
    }
    TT_TRY(remake_into(u, &b->conv2, b->y_again, conv2_out, n));
    tt_mem identity = in;
    if (b->has_down) {
        if (b->down.recomputed) {
            TT_TRY(convolve(u, &b->down, b->pass_a, in, n));
            down_out = b->pass_a;
        }
        TT_TRY(remake_into(u, &b->down, b->pass_b, down_out, n));
        identity = b->pass_b;
    }
    return tt_add_forward(u->be, b->y_again, b->y_again, identity, 1, conv_count(&b->conv2, n));
}

static tt_status block_forward(tt_unet_resnet *u, tt_ur_block *b, int n)
{
    TT_TRY(conv_forward(u, &b->conv1, *b->input, n));
    TT_TRY(conv_forward(u, &b->conv2, b->conv1.act, n));
    tt_mem identity = *b->input;
    if (b->has_down) {
        TT_TRY(conv_forward(u, &b->down, *b->input, n));
        identity = b->down.act;
    }
    return tt_add_forward(u->be, b->y, b->conv2.act, identity, 1, conv_count(&b->conv2, n));
}

/* b->dy holds the gradient at y; *b->dinput is added to (zeroed by the
 * caller before the first block that adds to it), in the order of the
 * forward's sum: the identity's share, conv1's, the downsample's.  Each
 * norm's backward, which frees its convolution's output, and each weight
 * gradient, which frees its input, before a new tensor is born. */
static tt_status block_backward(tt_unet_resnet *u, tt_ur_block *b, int n)
{
    size_t out = conv_count(&b->conv2, n);
    tt_mem in = block_input(u, b);
    if (b->conv1.recomputed) {
        /* checkpointing: conv1 and conv2 again; conv2 reads conv1's act
         * made again in conv2.dout's room (the same size), not yet born */
        TT_TRY(recompute(u, &b->conv1, in, n));
        TT_TRY(remake_into(u, &b->conv1, b->conv2.dout, b->conv1.out_again, n));
        TT_TRY(recompute(u, &b->conv2, b->conv2.dout, n));
    }
    TT_TRY(tt_fill(u->be, b->conv2.dout, 0.0f, out));
    tt_mem identity_grad = *b->dinput;
    if (b->has_down) {
        TT_TRY(tt_fill(u->be, b->down.dout, 0.0f, out));
        identity_grad = b->down.dout;
    }
    TT_TRY(tt_add_backward(u->be, b->conv2.dout, identity_grad, b->dy, block_output(b), 1, out));
    if (b->has_down) {
        if (b->down.recomputed) TT_TRY(recompute(u, &b->down, in, n));
        TT_TRY(norm_backward(u, &b->down, n));
        TT_TRY(weight_backward(u, &b->down, in, n));
    }
    TT_TRY(norm_backward(u, &b->conv2, n));
    if (b->conv1.remade) TT_TRY(remake(u, &b->conv1, n));
    TT_TRY(weight_backward(u, &b->conv2, output_for_backward(&b->conv1), n));
    TT_TRY(tt_fill(u->be, b->conv1.dout, 0.0f, conv_count(&b->conv1, n)));
    TT_TRY(input_backward(u, &b->conv2, b->conv1.dout, n));
    TT_TRY(norm_backward(u, &b->conv1, n));
    TT_TRY(weight_backward(u, &b->conv1, in, n));
    TT_TRY(input_backward(u, &b->conv1, *b->dinput, n));
    if (b->has_down) TT_TRY(input_backward(u, &b->down, *b->dinput, n));
    return NULL;
}

/* ---- the decoder -----------------------------------------------------------
 * conv1 reads [up, skip] without the copy: its weight (C', Cin + Cs, 3, 3)
 * is split by input channels into wa (the up half) and wb (the skip half)
 * in the wsplit room [wa | wb | ga | gb], so each part is an ordinary
 * convolution; the weight gradients made per half are joined in the
 * [wa | wb] room and added to the gradient arena. */
typedef struct split_weight {
    tt_mem wa, wb, ga, gb;
    tt_concat_desc desc;    /* (C', [Cin | Cs], 3, 3) */
    size_t floats;          /* C' (Cin + Cs) 9 */
} split_weight;

static tt_status split(tt_unet_resnet *u, const tt_ur_decoder *d, split_weight *s)
{
    const tt_ur_conv *c = &d->conv1;
    size_t kk = (size_t)c->kernel * c->kernel;
    size_t a = (size_t)c->out_channels * d->in_channels * kk, b = (size_t)c->out_channels * d->skip_channels * kk;
    s->floats = a + b;
    s->wa = tt_mem_of(u->wsplit_buffer), s->wb = tt_mem_f32(s->wa, a);
    s->ga = tt_mem_f32(s->wa, a + b), s->gb = tt_mem_f32(s->ga, a);
    s->desc = (tt_concat_desc){c->out_channels, d->in_channels, d->skip_channels, c->kernel, c->kernel};
    TT_TRY(tt_fill(u->be, s->wa, 0.0f, s->floats));
    return tt_concat_backward(u->be, s->wa, s->wb, tt_unet_resnet_param(u, c->weight), &s->desc);
}


/* out = conv1 over [up, skip] in the forward's order, so that a pass
 * making it again has its bits: the up half (all of conv1 without a
 * skip), then the skip half added. */
static tt_status conv1_up_half(tt_unet_resnet *u, tt_ur_decoder *d, tt_mem out, tt_mem up, int n)
{
    if (!d->skip) return convolve(u, &d->conv1, out, up, n);
    split_weight s;
    TT_TRY(split(u, d, &s));
    tt_conv2d_desc da = tt_unet_resnet_half_desc(u, d, d->in_channels, n);
    tt_backend_layer(u->be, d->conv1.name);
    return tt_conv2d_forward(u->be, out, up, s.wa, NONE, &da, workspace(u));
}

static tt_status conv1_skip_half(tt_unet_resnet *u, tt_ur_decoder *d, tt_mem out, tt_mem skip,
                                 int n)
{
    if (!d->skip) return NULL;
    split_weight s;
    TT_TRY(split(u, d, &s));
    tt_conv2d_desc db = tt_unet_resnet_half_desc(u, d, d->skip_channels, n);
    return tt_conv2d_forward_add(u->be, out, skip, s.wb, &db, workspace(u));
}

static tt_status conv1_forward(tt_unet_resnet *u, tt_ur_decoder *d, int n)
{
    tt_ur_conv *c = &d->conv1;
    TT_TRY(conv1_up_half(u, d, c->out, d->up, n));
    if (d->skip) TT_TRY(conv1_skip_half(u, d, c->out, *d->skip, n));
    TT_TRY(keep_out(u, c, n));
    tt_batch_norm_desc b = norm_desc_over(u, c, n, kept_out(c));
    return tt_batch_norm_forward(u->be, c->act, c->saved, kept_out(c), &c->bn, &b,
                                 norm_trains(u, c));
}

/* up again into `dest`: from the conv below's output when it is one
 * (remake_upsampled), else from the input (F4). */
static tt_status make_up(tt_unet_resnet *u, tt_ur_decoder *d, tt_mem dest, int n)
{
    if (d->below) return remake_upsampled(u, d->below, dest, n);
    tt_upsample_desc up = {n, d->in_channels, d->h / 2, d->w / 2};
    return tt_upsample_nearest2x_forward(u->be, dest, *d->input, &up);
}

/* Where this block's backward finds its skip conv's convolution output:
 * the forward's, or (recomputed) the room decoder_backward made it again
 * in, which dies with the block. */
static tt_mem skip_conv_out(const tt_ur_decoder *d)
{
    return d->skip_conv->recomputed ? d->skip_out_again : kept_out(d->skip_conv);
}

/* The skip for the backward: kept, or the stem's output made again into
 * `dest`. */
static tt_status make_skip(tt_unet_resnet *u, tt_ur_decoder *d, tt_mem dest, tt_mem *skip, int n)
{
    *skip = *d->skip;
    if (!d->skip_conv) return NULL;
    *skip = dest;
    return remake_into(u, d->skip_conv, dest, skip_conv_out(d), n);
}

/* Checkpointing: conv1's output again into out_again, the forward's bits,
 * from up and the skip made again in rooms of this pass alone. */
static tt_status conv1_again(tt_unet_resnet *u, tt_ur_decoder *d, int n)
{
    TT_TRY(make_up(u, d, d->up_pass, n));
    TT_TRY(conv1_up_half(u, d, d->conv1.out_again, d->up_pass, n));
    if (!d->skip) return NULL;
    tt_mem skip; /* made once up is dead */
    TT_TRY(make_skip(u, d, d->skip_pass, &skip, n));
    return conv1_skip_half(u, d, d->conv1.out_again, skip, n);
}

/* Checkpointing: the outputs of decoder blocks 0 .. upto - 1 (their conv2's
 * out_again) again, block by block from F4 and the kept skips, in the
 * rooms of this pass: the forward's bits, the norms with their saved
 * statistics. */
static tt_status decoder_pass(tt_unet_resnet *u, int upto, int n)
{
    for (int i = 0; i < upto; i++) {
        tt_ur_decoder *d = &u->dec[i];
        TT_TRY(make_up(u, d, d->pass_up, n));
        TT_TRY(conv1_up_half(u, d, d->pass_out, d->pass_up, n));
        TT_TRY(conv1_skip_half(u, d, d->pass_out, *d->skip, n));
        TT_TRY(remake_into(u, &d->conv1, d->pass_act, d->pass_out, n));
        TT_TRY(convolve(u, &d->conv2, d->conv2.out_again, d->pass_act, n));
    }
    return NULL;
}

/* conv1's norm backward done (c->dout the gradient at its convolution's
 * output): its weight's gradients, dup = d up (made here, returned to
 * the block below through the upsampling), *dskip = d skip (zeroed
 * here).  Each input dies before the gradients are born: up is made
 * again (from the conv below's output when it is one: remake_upsampled)
 * for its weight gradient and dies, then the skip (made again when
 * the stem's), then dup lives only until it is folded into the input's
 * gradient, and the skip's gradient is born last. */
static tt_status conv1_backward(tt_unet_resnet *u, tt_ur_decoder *d, int n)
{
    tt_ur_conv *c = &d->conv1;
    size_t up = count(n, d->in_channels, d->h, d->w);
    tt_upsample_desc updesc = {n, d->in_channels, d->h / 2, d->w / 2};
    TT_TRY(make_up(u, d, d->up_again, n));
    if (!d->skip) {
        TT_TRY(weight_backward(u, c, d->up_again, n));
        TT_TRY(tt_fill(u->be, d->dup, 0.0f, up));
        TT_TRY(input_backward(u, c, d->dup, n));
        TT_TRY(tt_fill(u->be, *d->dinput, 0.0f, up / 4));
        return tt_upsample_nearest2x_backward(u->be, *d->dinput, d->dup, &updesc);
    }
    split_weight s;
    TT_TRY(split(u, d, &s));
    tt_conv2d_desc da = tt_unet_resnet_half_desc(u, d, d->in_channels, n);
    tt_conv2d_desc db = tt_unet_resnet_half_desc(u, d, d->skip_channels, n);
    TT_TRY(tt_fill(u->be, s.ga, 0.0f, s.floats));
    TT_TRY(tt_conv2d_backward(u->be, NONE, s.ga, NONE, c->dout, d->up_again, NONE, &da, workspace(u)));
    tt_mem skip; /* the stem's output, kept no longer than the forward */
    TT_TRY(make_skip(u, d, d->skip_conv ? d->skip_conv->act_again : NONE, &skip, n));
    TT_TRY(tt_conv2d_backward(u->be, NONE, s.gb, NONE, c->dout, skip, NONE, &db, workspace(u)));
    TT_TRY(tt_fill(u->be, d->dup, 0.0f, up));
    TT_TRY(tt_conv2d_backward(u->be, d->dup, NONE, NONE, c->dout, NONE, s.wa, &da, workspace(u)));
    TT_TRY(tt_fill(u->be, *d->dinput, 0.0f, up / 4));
    TT_TRY(tt_upsample_nearest2x_backward(u->be, *d->dinput, d->dup, &updesc));
    TT_TRY(tt_fill(u->be, *d->dskip, 0.0f, count(n, d->skip_channels, d->h, d->w)));
    TT_TRY(tt_conv2d_backward(u->be, *d->dskip, NONE, NONE, c->dout, NONE, s.wb, &db, workspace(u)));
    TT_TRY(tt_concat_forward(u->be, s.wa, s.ga, s.gb, &s.desc)); /* [ga | gb] as (C', Cin + Cs, 3, 3) */
    return tt_axpy(u->be, tt_unet_resnet_grad(u, c->weight), s.wa, 1.0f, s.floats);
}

static tt_status decoder_forward(tt_unet_resnet *u, tt_ur_decoder *d, int n)
{
    tt_upsample_desc up = {n, d->in_channels, d->h / 2, d->w / 2};
    TT_TRY(tt_upsample_nearest2x_forward(u->be, d->up, *d->input, &up));
    TT_TRY(conv1_forward(u, d, n));
    return conv_forward(u, &d->conv2, d->conv1.act, n);
}

/* d->conv2.dout holds the gradient at the block's output; *d->dinput
 * receives the input's (zeroed here).  In the order that keeps the
 * fewest full-size tensors alive at once: each norm's backward (which
 * frees its convolution's output) before anything new is made, a weight
 * gradient before the input gradient it would otherwise live beside. */
static tt_status decoder_backward(tt_unet_resnet *u, tt_ur_decoder *d, int n)
{
    if (d->below && d->below->recomputed && !d->conv2.recomputed) /* the blocks below again */
        TT_TRY(decoder_pass(u, (int)(d - u->dec), n));
    TT_TRY(norm_backward(u, &d->conv2, n));
    /* the stem's convolution output again from the image, once for the
     * block, before its first use */
    if (d->skip_conv && d->skip_conv->recomputed)
        TT_TRY(convolve(u, d->skip_conv, d->skip_out_again, u->input, n));
    if (d->conv1.recomputed) TT_TRY(conv1_again(u, d, n));
    if (d->conv1.remade) TT_TRY(remake(u, &d->conv1, n));
    TT_TRY(weight_backward(u, &d->conv2, output_for_backward(&d->conv1), n));
    TT_TRY(tt_fill(u->be, d->conv1.dout, 0.0f, conv_count(&d->conv1, n)));
    TT_TRY(input_backward(u, &d->conv2, d->conv1.dout, n));
    TT_TRY(norm_backward(u, &d->conv1, n));
    return conv1_backward(u, d, n);
}

/* Checkpointing: the pool and its argmax again, from the stem's output
 * made again from the image in a room of its own, normed there in place
 * (the stem's convolution output kept for its backward, or held since
 * the decoder's, would live through the encoder's backward beside the
 * stem's gradient). */
static tt_status pool_again(tt_unet_resnet *u, int n)
{
    tt_pool2d_desc p = pool_desc(u, n);
    TT_TRY(convolve(u, &u->stem, u->stem_act_pool, u->input, n));
    TT_TRY(remake_into(u, &u->stem, u->stem_act_pool, u->stem_act_pool, n));
    return tt_max_pool2d_forward(u->be, u->pool_again, u->pool_argmax, u->stem_act_pool, &p);
}

/* ---- the whole model ------------------------------------------------------- */

tt_status tt_unet_resnet_forward(tt_unet_resnet *u, int n, int training)
{
    if (n < 1 || n > u->capacity)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: batch %d outside 1..%d", u->spec.kind, n,
                            u->capacity);
    tt_backend_phase(u->be, "forward");
    u->batch = n;
    u->training = training;
    TT_TRY(conv_forward(u, &u->stem, u->input, n));
    tt_pool2d_desc p = pool_desc(u, n);
    int argmax = training && !u->pool_again_made; /* else the backward's pool keeps it */
    TT_TRY(tt_max_pool2d_forward(u->be, u->pool, argmax ? u->pool_argmax : NONE, u->stem.act, &p));
    for (int i = 0; i < u->block_count; i++) TT_TRY(block_forward(u, &u->blocks[i], n));
    for (int i = 0; i < TT_UR_DECODER_BLOCKS; i++) TT_TRY(decoder_forward(u, &u->dec[i], n));
    return conv_forward(u, &u->head, u->dec[TT_UR_DECODER_BLOCKS - 1].conv2.act, n);
}

tt_status tt_unet_resnet_backward(tt_unet_resnet *u)
{
    int n = u->batch;
    if (!u->training || n < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: backward needs a training forward of the same batch first",
                            u->spec.kind);
    tt_backend_phase(u->be, "backward");
    tt_ur_decoder *last = &u->dec[TT_UR_DECODER_BLOCKS - 1];
    if (last->conv2.remade) TT_TRY(remake(u, &last->conv2, n));
    TT_TRY(weight_backward(u, &u->head, output_for_backward(&last->conv2), n));
    TT_TRY(tt_fill(u->be, last->conv2.dout, 0.0f, conv_count(&last->conv2, n)));
    TT_TRY(input_backward(u, &u->head, last->conv2.dout, n));
    /* each decoder block's input gradient is the one below's output gradient */
    for (int i = TT_UR_DECODER_BLOCKS - 1; i >= 0; i--) TT_TRY(decoder_backward(u, &u->dec[i], n));
    /* the encoder, last block first; a layer's last block's output gradient
     * already holds its skip's share (zeroed by its decoder block) */
    for (int l = 3; l >= 0; l--) {
        int first = l ? u->layer_end[l - 1] : 0;
        if (l == 0 && u->pool_again_made) TT_TRY(pool_again(u, n));
        for (int i = first; i < u->layer_end[l]; i++)
            if (u->blocks[i].output_again) TT_TRY(block_output_pass(u, &u->blocks[i], n));
        for (int i = u->layer_end[l] - 1; i >= first; i--) {
            tt_ur_block *b = &u->blocks[i];
            /* b's input is F1..F3, whose gradient its decoder began */
            int reads_skip = i == first && l > 0;
            if (!reads_skip)
                TT_TRY(tt_fill(u->be, *b->dinput, 0.0f, count(n, b->conv1.in_channels,
                                                              b->conv1.in_h, b->conv1.in_w)));
            TT_TRY(block_backward(u, b, n));
        }
    }
    tt_pool2d_desc p = pool_desc(u, n);
    TT_TRY(tt_max_pool2d_backward(u->be, u->stem.dout, u->dpool, u->pool_argmax, &p));
    if (u->stem.recomputed) TT_TRY(recompute(u, &u->stem, u->input, n));
    return conv_backward(u, &u->stem, u->input, NONE, n);
}

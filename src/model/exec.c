/*
 * The executor of a layer list (exec.h).  Forward: each layer in order,
 * every tensor at its forward place.  Backward: each layer in reverse
 * whose output has a gradient; what it reads comes from the forward
 * (TT_KEEP), or is made again by its producer (TT_REMAKE: once, kept
 * after; TT_RECOMPUTE: in a place of the reader's own, for each block
 * that reads a convolution's output and each layer that reads anything
 * cheaper).  A gradient is zeroed at its first contribution; every
 * contribution adds, in reverse list order.  16-bit storage is a property
 * of a tensor (graph.h: stored, rounded); the banded storage of the whole
 * step (exec_band.c) runs each layer on row bands of 16-bit tensors.
 *
 * The places: every tensor's forward, `again` and gradient places and
 * every RECOMPUTE place are items of the arena plan (tt_exec_name_places;
 * the RECOMPUTE places are found by running the backward once with
 * nothing launched), placed by their lives in the recorded step.
 */
#include "model/exec.h"
#include "model/exec_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/knobs.h"
#include "core/status.h"
#include "ops/add.h"
#include "ops/cast.h"
#include "ops/concat.h"
#include "ops/activation.h"
#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"
#include "ops/channel_mul.h"
#include "ops/dropout.h"
#include "ops/global_avg_pool.h"
#include "ops/group_norm.h"
#include "ops/max_pool2d.h"
#include "ops/upsample.h"
#include "ops/upsample_nearest.h"
#include "ops/util.h"

#define NONE ((tt_mem){0})

/* ---- places ------------------------------------------------------------------ */

static tt_tensor_def *tensor(tt_exec *x, int t) { return &x->graph->tensors[t]; }

/* The tensor whose places t uses (in place: the one it was written over). */
static int root(tt_exec *x, int t)
{
    while (tensor(x, t)->alias >= 0) t = tensor(x, t)->alias;
    return t;
}

static int grad_root(tt_exec *x, int t)
{
    while (tensor(x, t)->grad_alias >= 0) t = tensor(x, t)->grad_alias;
    return t;
}

static tt_mem fwd_of(tt_exec *x, int t) { return tensor(x, root(x, t))->fwd; }
static tt_mem grad_of(tt_exec *x, int t) { return tensor(x, grad_root(x, t))->grad; }

/* Where the forward's readers find t: its 16-bit copy, or its place. */
static tt_mem stored_of(tt_exec *x, int t)
{
    const tt_tensor_def *d = tensor(x, t);
    return d->storage != TT_PRECISION_FP32 ? d->half : fwd_of(x, t);
}

static size_t count_of(tt_exec *x, int t, int n)
{
    const tt_tensor_def *d = tensor(x, t);
    return (size_t)n * d->channels * d->height * d->width;
}

static tt_exec_pass *pass_found(tt_exec *x, int t, int scope)
{
    for (int i = 0; i < x->pass_count; i++)
        if (x->passes[i].tensor == t && x->passes[i].scope == scope &&
            x->passes[i].forward == x->in_forward)
            return &x->passes[i];
    return NULL;
}

/* t's place for the backward of group `scope` (found by the symbolic run,
 * which adds it). */
static tt_exec_pass *pass_of(tt_exec *x, int t, int scope)
{
    tt_exec_pass *found = pass_found(x, t, scope);
    if (found || !x->symbolic) return found;
    if (x->pass_count == x->pass_capacity) {
        int cap = x->pass_capacity ? 2 * x->pass_capacity : 16;
        tt_exec_pass *p = tt_realloc(x->passes, sizeof *p * (size_t)cap);
        if (!p) {
            x->failed = 1;
            return NULL;
        }
        x->passes = p, x->pass_capacity = cap;
    }
    tt_exec_pass *p = &x->passes[x->pass_count++];
    *p = (tt_exec_pass){t, scope, x->in_forward, NONE, 0};
    return p;
}

/* Whether norm l's statistics are made again for its backward (else the
 * forward's are kept): a restat norm in training. */
static int restats(tt_exec *x, const tt_layer *l)
{
    return l->restat && x->training && !l->frozen;
}

/* A restat norm's statistics place for the group whose backward runs (a
 * pass keyed by -(layer + 1)). */
static tt_exec_pass *stats_of(tt_exec *x, const tt_layer *l)
{
    int key = -(int)(l - x->graph->layers) - 1;
    /* made once with a REMAKE output, for the whole backward */
    if (tensor(x, l->out)->keep == TT_REMAKE) return pass_of(x, key, -1);
    return pass_of(x, key, x->graph->layers[x->scope].group);
}

/* ---- descriptors --------------------------------------------------------------- */

static tt_conv2d_desc conv_desc(tt_exec *x, const tt_layer *l, int in_channels, int n)
{
    const tt_tensor_def *in = tensor(x, l->in[0]), *out = tensor(x, l->out);
    int d = l->dilation > 1 ? l->dilation : 1;
    return (tt_conv2d_desc){.batch = n, .in_channels = in_channels, .in_h = in->height,
                            .in_w = in->width, .out_channels = out->channels,
                            .kernel_h = l->kernel, .kernel_w = l->kernel, .stride_h = l->stride,
                            .stride_w = l->stride, .pad_h = d * (l->kernel / 2),
                            .pad_w = d * (l->kernel / 2), .dilation_h = l->dilation,
                            .dilation_w = l->dilation, .groups = l->groups, .algo = *x->algo,
                            .no_input_grad = l->no_input_grad,
                            .workspace_limit = x->model->memory.workspace_limit};
}

/* A concatenation's two parts; a mean's input. */
static tt_concat_desc concat_desc(tt_exec *x, const tt_layer *l, int n)
{
    const tt_tensor_def *a = tensor(x, l->in[0]), *b = tensor(x, l->in[1]);
    return (tt_concat_desc){n, a->channels, b->channels, a->height, a->width};
}

static tt_channel_mul_desc mul_desc(tt_exec *x, const tt_layer *l, int n)
{
    const tt_tensor_def *in = tensor(x, l->in[0]);
    return (tt_channel_mul_desc){n, in->channels, in->height, in->width};
}

static tt_global_avg_pool_desc mean_desc(tt_exec *x, const tt_layer *l, int n)
{
    const tt_tensor_def *in = tensor(x, l->in[0]);
    return (tt_global_avg_pool_desc){n, in->channels, in->height, in->width};
}

static tt_batch_norm_desc norm_desc(tt_exec *x, const tt_layer *l, int n)
{
    const tt_tensor_def *in = tensor(x, l->in[0]);
    tt_batch_norm_desc d = tt_batch_norm_desc_make(n, in->channels, in->height, in->width);
    d.relu = l->relu;
    d.sync = x->model->norm_sync;
    d.input_precision = in->storage; /* a 16-bit input is read where it is stored */
    return d;
}

static tt_pool2d_desc pool_desc(tt_exec *x, const tt_layer *l, int n)
{
    const tt_tensor_def *in = tensor(x, l->in[0]);
    return tt_pool2d_square_padded(n, in->channels, in->height, in->width, l->kernel, l->stride,
                                   l->pad);
}

static tt_group_norm_desc group_desc(tt_exec *x, const tt_layer *l, int n)
{
    const tt_tensor_def *in = tensor(x, l->in[0]);
    tt_group_norm_desc d =
        tt_group_norm_desc_make(n, in->channels, in->height, in->width, l->groups);
    d.relu = l->relu;
    d.input_precision = in->storage;
    return d;
}

static tt_conv_transpose2d_desc convt_desc(tt_exec *x, const tt_layer *l, int n)
{
    const tt_tensor_def *in = tensor(x, l->in[0]), *out = tensor(x, l->out);
    return (tt_conv_transpose2d_desc){.batch = n, .in_channels = in->channels, .in_h = in->height,
                                      .in_w = in->width, .out_channels = out->channels,
                                      .kernel_h = l->kernel, .kernel_w = l->kernel,
                                      .stride_h = l->stride, .stride_w = l->stride,
                                      .pad_h = l->pad, .pad_w = l->pad, .algo = *x->algo,
                                      .workspace_limit = x->model->memory.workspace_limit};
}

static tt_upsample_desc upsample_desc(tt_exec *x, const tt_layer *l, int n)
{
    const tt_tensor_def *in = tensor(x, l->in[0]);
    return (tt_upsample_desc){n, in->channels, in->height, in->width};
}

static tt_mem workspace(tt_exec *x)
{
    return x->model->workspace_buffer ? tt_mem_of(x->model->workspace_buffer) : NONE;
}

/* A batch norm over one value a channel (a micro-batch of one on a 1x1
 * plane) trains nowhere: the plan's record of a model built for such
 * micro-batches (to evaluate) runs it on its running statistics. */
static int one_value(tt_exec *x, const tt_layer *l)
{
    const tt_tensor_def *in = tensor(x, l->in[0]);
    return l->norm == TT_NORM_BATCH && (size_t)x->batch * in->height * in->width == 1;
}

static int norm_trains(tt_exec *x, const tt_layer *l)
{
    return x->training && !l->frozen && !(x->recording && one_value(x, l));
}

typedef tt_exec_split split_weight;

static tt_status split(tt_exec *x, const tt_layer *l, split_weight *s)
{
    tt_backend *be = x->model->be;
    x->splits++;
    int ca = tensor(x, l->in[0])->channels, cb = tensor(x, l->in[1])->channels;
    int cout = tensor(x, l->out)->channels;
    size_t kk = (size_t)l->kernel * l->kernel, a = (size_t)cout * ca * kk, b = (size_t)cout * cb * kk;
    s->floats = a + b;
    s->wa = tt_mem_of(x->wsplit), s->wb = tt_mem_f32(s->wa, a);
    s->ga = tt_mem_f32(s->wa, a + b), s->gb = tt_mem_f32(s->ga, a);
    s->desc = (tt_concat_desc){cout, ca, cb, l->kernel, l->kernel};
    TT_TRY(tt_fill(be, s->wa, 0.0f, s->floats));
    return tt_concat_backward(be, s->wa, s->wb, tt_model_param(x->model, l->weight), &s->desc);
}

/* A two-input conv's half over input k into `out`: the first writes (with
 * the bias), the second adds. */
static tt_status conv_half(tt_exec *x, const tt_layer *l, tt_mem out, tt_mem in, int k, int n)
{
    if (x->symbolic) return NULL;
    tt_backend *be = x->model->be;
    split_weight s;
    TT_TRY(split(x, l, &s));
    tt_backend_layer(be, l->name);
    tt_conv2d_desc d = conv_desc(x, l, k ? s.desc.channels_b : s.desc.channels_a, n);
    if (!k)
        return tt_conv2d_forward(be, out, in, s.wa, tt_model_param(x->model, l->bias), &d,
                                 workspace(x));
    return tt_conv2d_forward_add(be, out, in, s.wb, &d, workspace(x));
}

/* Dropout layer l from src into dst (the backward adds: dst the input's
 * gradient, src the output's), image by image, each with its own crop's
 * masks (model.h): per element, per channel (Dropout2d) or the whole
 * image (drop-path). */
static tt_status dropout_images(tt_exec *x, const tt_layer *l, int backward, tt_mem dst,
                                tt_mem src, int n)
{
    const tt_model *m = x->model;
    const tt_tensor_def *o = tensor(x, l->out);
    size_t plane = (size_t)o->height * o->width, image = plane * (size_t)o->channels;
    uint64_t seed = tt_dropout_layer_seed(m->dropout_seed, l->salt);
    int stride = m->dropout_stride ? m->dropout_stride : 1;
    for (int k = 0; k < n; k++) {
        uint64_t own = tt_dropout_image_seed(seed, m->dropout_first + (int64_t)k * stride);
        tt_mem d = tt_mem_f32(dst, (size_t)k * image), s = tt_mem_f32(src, (size_t)k * image);
        size_t draws = l->per_sample ? 1 : l->per_channel ? (size_t)o->channels : image;
        if (backward)
            TT_TRY(draws == image ? tt_dropout_backward(m->be, d, s, l->p, own, image)
                                  : tt_drop_path_backward(m->be, d, s, l->p, own, draws, image / draws));
        else
            TT_TRY(draws == image ? tt_dropout_forward(m->be, d, s, l->p, own, image)
                                  : tt_drop_path_forward(m->be, d, s, l->p, own, draws, image / draws));
    }
    return NULL;
}

/* ---- one layer's forward, into `out` from `in0`, `in1` ------------------------- */

static tt_status run_forward(tt_exec *x, tt_layer *l, tt_mem out, tt_mem in0, tt_mem in1,
                             int n, int again)
{
    if (x->symbolic) { /* the places a remake will take */
        if (l->kind == TT_LAYER_NORM && again && restats(x, l)) {
            tt_exec_pass *p = stats_of(x, l);
            if (p) p->made = 1;
        }
        return NULL;
    }
    tt_backend *be = x->model->be;
    tt_model *m = x->model;
    switch (l->kind) {
    case TT_LAYER_CONV: {
        tt_backend_layer(be, l->name);
        const tt_tensor_def *o = tensor(x, l->out);
        if (l->in[1] < 0) {
            tt_conv2d_desc d = conv_desc(x, l, tensor(x, l->in[0])->channels, n);
            TT_TRY(tt_conv2d_forward(be, out, in0, tt_model_param(m, l->weight),
                                     tt_model_param(m, l->bias), &d, workspace(x)));
            if (o->storage == TT_PRECISION_FP32) return NULL;
            return tt_cast_pack(be, o->half, out, o->storage, count_of(x, l->out, n));
        }
        /* forward() runs the halves in two calls, in0 then in1 */
        if (in0.buffer) TT_TRY(conv_half(x, l, out, in0, 0, n));
        if (!in1.buffer) return NULL;
        TT_TRY(conv_half(x, l, out, in1, 1, n));
        if (o->storage == TT_PRECISION_FP32) return NULL;
        return tt_cast_pack(be, o->half, out, o->storage, count_of(x, l->out, n));
    }
    case TT_LAYER_NORM: {
        tt_mem saved = l->saved;
        int restat = again && restats(x, l);
        if (restat) { /* the statistics again, into the group's place */
            tt_exec_pass *p = stats_of(x, l);
            if (!p) return tt_error_new(TT_ERR_INTERNAL, "norm '%s': no place for its "
                                        "statistics again", l->name);
            saved = p->place, p->made = 1;
        }
        if (l->norm == TT_NORM_GROUP) {
            tt_group_norm_desc d = group_desc(x, l, n);
            tt_mem w = tt_model_param(m, l->bn_w), b = tt_model_param(m, l->bn_b);
            if (!again || restat) return tt_group_norm_forward(be, out, saved, in0, w, b, &d);
            return tt_group_norm_apply_saved(be, out, in0, l->saved, w, b, &d);
        }
        tt_batch_norm_desc d = norm_desc(x, l, n);
        if (x->training && !l->frozen && one_value(x, l) && !x->recording)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: batch norm '%s' in training sees one "
                                "value a channel (a micro-batch of 1 on a 1x1 plane); give "
                                "--micro-batch 2 or more", m->spec.kind, l->name);
        tt_batch_norm_state bn = l->bn;
        if (restat) { /* nothing counted, running statistics left alone */
            bn.running_mean = bn.running_var = NONE;
            return tt_batch_norm_forward(be, out, saved, in0, &bn, &d, 1);
        }
        if (!again)
            return tt_batch_norm_forward(be, out, l->saved, in0, &l->bn, &d, norm_trains(x, l));
        /* the forward's bits from its statistics, nothing counted */
        if (!norm_trains(x, l)) return tt_batch_norm_forward(be, out, l->saved, in0, &bn, &d, 0);
        return tt_batch_norm_apply_saved(be, out, in0, l->saved, &bn, &d);
    }
    case TT_LAYER_RELU:
        return tt_relu_forward(be, out, in0, count_of(x, l->out, n));
    case TT_LAYER_ADD:
        return tt_add_forward(be, out, in0, in1, l->relu, count_of(x, l->out, n));
    case TT_LAYER_MAX_POOL: {
        tt_pool2d_desc d = pool_desc(x, l, n);
        /* its argmax where the backward will read it: made with the forward's
         * output when that is kept, else with the output made again */
        int argmax = l->keeps_argmax && x->training &&
                     (again || tensor(x, l->out)->keep == TT_KEEP);
        return tt_max_pool2d_forward(be, out, argmax ? l->argmax : NONE, in0, &d);
    }
    case TT_LAYER_CONV_T: {
        tt_backend_layer(be, l->name);
        tt_conv_transpose2d_desc d = convt_desc(x, l, n);
        TT_TRY(tt_conv_transpose2d_forward(be, out, in0, tt_model_param(m, l->weight),
                                           tt_model_param(m, l->bias), &d, workspace(x)));
        const tt_tensor_def *o = tensor(x, l->out);
        if (o->storage == TT_PRECISION_FP32) return NULL;
        return tt_cast_pack(be, o->half, out, o->storage, count_of(x, l->out, n));
    }
    case TT_LAYER_UPSAMPLE: {
        tt_upsample_desc d = upsample_desc(x, l, n);
        if (l->bilinear) return tt_upsample_bilinear_aligned_forward(be, out, in0, &d, l->factor);
        return tt_upsample_nearest2x_forward(be, out, in0, &d);
    }
    case TT_LAYER_DROPOUT: {
        if (x->training && l->p > 0) return dropout_images(x, l, 0, out, in0, n);
        if (tensor(x, l->out)->alias == l->in[0]) return NULL; /* in place: the input as it is */
        return tt_copy(be, out, in0, count_of(x, l->out, n) * sizeof(float));
    }
    case TT_LAYER_CONCAT: {
        tt_concat_desc d = concat_desc(x, l, n);
        return tt_concat_forward(be, out, in0, in1, &d);
    }
    case TT_LAYER_MEAN: {
        tt_global_avg_pool_desc d = mean_desc(x, l, n);
        return tt_global_avg_pool_forward(be, out, in0, &d);
    }
    case TT_LAYER_ACT:
        if (l->act == TT_ACT_SILU) return tt_silu_forward(be, out, in0, count_of(x, l->out, n));
        return tt_sigmoid_forward(be, out, in0, count_of(x, l->out, n));
    case TT_LAYER_CHANNEL_MUL: {
        tt_channel_mul_desc d = mul_desc(x, l, n);
        return tt_channel_mul_forward(be, out, in0, in1, &d);
    }
    case TT_LAYER_BROADCAST: { /* ones times each channel's value: the value exactly */
        const tt_tensor_def *o = tensor(x, l->out);
        tt_channel_mul_desc d = {n, o->channels, o->height, o->width};
        TT_TRY(tt_fill(be, out, 1.0f, count_of(x, l->out, n)));
        return tt_channel_mul_forward(be, out, out, in0, &d);
    }
    }
    return tt_error_new(TT_ERR_INTERNAL, "layer '%s': unknown kind %d", l->name, (int)l->kind);
}

/* ---- values for the backward --------------------------------------------------- */

static tt_status value(tt_exec *x, int t, tt_mem *out);
static tt_status eager_after(tt_exec *x, int t);

/* The backward a TT_RECOMPUTE tensor is made again for (its scope): by
 * default a convolution's output once for its whole group (a block),
 * anything cheaper for each layer that reads it, so that it lives no
 * longer than that read. */
static int scope_of(tt_exec *x, int t)
{
    const tt_tensor_def *d = tensor(x, t);
    int conv = x->graph->layers[d->producer].kind == TT_LAYER_CONV;
    if (d->scope == TT_SCOPE_GROUP || (d->scope == TT_SCOPE_AUTO && conv))
        return x->graph->layers[x->scope].group;
    return x->scope;
}

/* Whether the backward has t at hand without making it. */
static int at_hand(tt_exec *x, int t)
{
    const tt_tensor_def *d = tensor(x, t);
    int outside = d->kept_outside && x->graph->layers[d->producer].group !=
                                         x->graph->layers[x->scope].group;
    if (d->rounded != TT_PRECISION_FP32 && (d->keep == TT_KEEP || outside)) {
        const tt_exec_pass *p = pass_found(x, t, scope_of(x, t)); /* unpacked */
        return p && p->made;
    }
    if (d->producer < 0 || d->keep == TT_KEEP || outside) return 1;
    if (d->keep == TT_REMAKE) return d->made_again;
    const tt_exec_pass *p = pass_found(x, t, scope_of(x, t));
    return p && p->made;
}

/* An upsampling of a norm's output that is not at hand, made again without
 * it: the norm's input upsampled into `dest`, then the norm applied there
 * in place.  Nearest upsampling copies and the norm (with its ReLU) is one
 * scale and shift per channel, so these are the bits of the upsampled
 * output, and no room at the norm's size is needed beside dest. */
static tt_status remake_upsampled(tt_exec *x, const tt_layer *up, tt_mem dest, int *done)
{
    *done = 0;
    int a = up->in[0];
    const tt_tensor_def *ad = tensor(x, a);
    if (up->bilinear || at_hand(x, a) || x->graph->layers[ad->producer].kind != TT_LAYER_NORM)
        return NULL; /* (a ReLU does not pass through bilinear weights) */
    const tt_layer *norm = &x->graph->layers[ad->producer];
    if (tensor(x, norm->in[0])->storage != TT_PRECISION_FP32) return NULL;
    tt_mem before = NONE;
    TT_TRY(value(x, norm->in[0], &before));
    *done = 1;
    if (x->symbolic) return NULL;
    tt_backend *be = x->model->be;
    tt_upsample_desc ud = upsample_desc(x, up, x->batch);
    TT_TRY(tt_upsample_nearest2x_forward(be, dest, before, &ud));
    tt_batch_norm_desc d = norm_desc(x, norm, x->batch);
    d.height *= 2, d.width *= 2;
    tt_batch_norm_state bn = norm->bn;
    if (!norm_trains(x, norm)) return tt_batch_norm_forward(be, dest, norm->saved, dest, &bn, &d, 0);
    return tt_batch_norm_apply_saved(be, dest, dest, norm->saved, &bn, &d);
}

/* Tensor t made again into `dest` by its producer, from its inputs'
 * values (a rounded tensor not rounded yet). */
static tt_status remake_raw(tt_exec *x, int t, tt_mem dest)
{
    tt_layer *l = &x->graph->layers[tensor(x, t)->producer];
    if (x->banded) return x->runner->forward(x, l, dest, 1);
    if (l->kind == TT_LAYER_UPSAMPLE) {
        int done;
        TT_TRY(remake_upsampled(x, l, dest, &done));
        if (done) return NULL;
    }
    tt_mem in0 = NONE, in1 = NONE;
    TT_TRY(value(x, l->in[0], &in0));
    if (l->kind == TT_LAYER_CONV && l->in[1] >= 0) {
        /* the first half done before the second input is made, so that
         * the first is dead by then */
        TT_TRY(conv_half(x, l, dest, in0, 0, x->batch));
        TT_TRY(value(x, l->in[1], &in1));
        return conv_half(x, l, dest, in1, 1, x->batch);
    }
    if (l->in[1] >= 0) TT_TRY(value(x, l->in[1], &in1));
    return run_forward(x, l, dest, in0, in1, x->batch, 1);
}

/* Tensor t made again into `dest`: its producer's bits, rounded as the
 * forward rounded them. */
static tt_status remake(tt_exec *x, int t, tt_mem dest)
{
    const tt_tensor_def *d = tensor(x, t);
    TT_TRY(remake_raw(x, t, dest));
    if (d->rounded == TT_PRECISION_FP32 || x->symbolic) return NULL;
    return tt_cast_round(x->model->be, dest, d->rounded, count_of(x, t, x->batch));
}

/* A rounded tensor at a place of `scope`'s own: unpacked from its 16-bit
 * copy, or made again. */
static tt_status fetch(tt_exec *x, int t, int scope, int unpack, tt_mem *out)
{
    tt_tensor_def *d = tensor(x, t);
    tt_exec_pass *p = pass_of(x, t, scope);
    if (!p) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "executor: no place for '%s' again", d->name);
    if (!p->made) {
        if (!unpack) TT_TRY(remake(x, t, p->place));
        else if (!x->symbolic)
            TT_TRY(tt_cast_unpack(x->model->be, p->place, d->half, d->rounded,
                                  count_of(x, t, x->batch)));
        p->made = 1;
    }
    *out = p->place;
    return NULL;
}

/* Where the backward reads tensor t. */
static tt_status value(tt_exec *x, int t, tt_mem *out)
{
    tt_tensor_def *d = tensor(x, t);
    int outside = d->kept_outside && x->graph->layers[d->producer].group !=
                                         x->graph->layers[x->scope].group;
    if (d->rounded != TT_PRECISION_FP32 && (d->keep == TT_KEEP || outside))
        return fetch(x, t, scope_of(x, t), 1, out);
    if (d->producer < 0 || d->keep == TT_KEEP || outside) {
        *out = d->storage != TT_PRECISION_FP32 ? d->half : fwd_of(x, t);
        return NULL;
    }
    if (d->keep == TT_REMAKE) {
        tt_tensor_def *r = tensor(x, root(x, t));
        if (!d->made_again) {
            TT_TRY(remake(x, t, r->again));
            d->made_again = 1;
            if (r != d) r->made_again = 0; /* written over */
            TT_TRY(eager_after(x, t));
        }
        *out = r->again;
        return NULL;
    }
    const tt_exec_pass *p = pass_found(x, t, scope_of(x, t));
    int made = p && p->made;
    TT_TRY(fetch(x, t, scope_of(x, t), 0, out));
    return made ? NULL : eager_after(x, t);
}

/* The eager TT_REMAKE tensors made from t, made again now that t is. */
static tt_status eager_after(tt_exec *x, int t)
{
    tt_graph *g = x->graph;
    for (int e = 0; e < g->tensor_count; e++) {
        const tt_tensor_def *d = &g->tensors[e];
        if (!d->eager || d->keep != TT_REMAKE || d->made_again || d->producer < 0 ||
            g->layers[d->producer].in[0] != t)
            continue;
        tt_mem unused;
        TT_TRY(value(x, e, &unused));
    }
    return NULL;
}

/* ---- gradients ------------------------------------------------------------------- */

/* t's gradient, zeroed at its first contribution. */
static tt_status grad_for_adding(tt_exec *x, int t, tt_mem *out)
{
    tt_tensor_def *d = tensor(x, grad_root(x, t));
    *out = d->grad;
    if (d->grad_started) return NULL;
    d->grad_started = 1;
    return x->symbolic ? NULL : tt_fill(x->model->be, d->grad, 0.0f, count_of(x, t, x->batch));
}

static int wants_grad(tt_exec *x, int t) { return t >= 0 && tensor(x, t)->needs_grad; }

static tt_status conv_backward(tt_exec *x, const tt_layer *l, tt_mem g)
{
    tt_backend *be = x->model->be;
    tt_model *m = x->model;
    int n = x->batch;
    tt_mem in0 = NONE, in1 = NONE, din = NONE;
    if (l->in[1] < 0) {
        tt_conv2d_desc d = conv_desc(x, l, tensor(x, l->in[0])->channels, n);
        TT_TRY(value(x, l->in[0], &in0));
        if (!x->symbolic)
            TT_TRY(tt_conv2d_backward(be, NONE, tt_model_grad(m, l->weight),
                                      tt_model_grad(m, l->bias), g, in0, NONE, &d, workspace(x)));
        if (!wants_grad(x, l->in[0]) || l->no_input_grad) return NULL;
        TT_TRY(grad_for_adding(x, l->in[0], &din));
        if (x->symbolic) return NULL;
        return tt_conv2d_backward(be, din, NONE, NONE, g, NONE, tt_model_param(m, l->weight), &d,
                                  workspace(x));
    }
    /* two inputs: the weight's gradient in halves (the first input made
     * before the split, the second after the first half's: each dead before
     * the next is made), then each input's */
    TT_TRY(value(x, l->in[0], &in0));
    split_weight s;
    if (!x->symbolic) {
        TT_TRY(split(x, l, &s));
        TT_TRY(tt_fill(be, s.ga, 0.0f, s.floats));
    }
    unsigned splits = x->splits;
    int ca = tensor(x, l->in[0])->channels, cb = tensor(x, l->in[1])->channels;
    tt_conv2d_desc da = conv_desc(x, l, ca, n), db = conv_desc(x, l, cb, n);
    if (!x->symbolic)
        TT_TRY(tt_conv2d_backward(be, NONE, s.ga, tt_model_grad(m, l->bias), g, in0, NONE, &da,
                                  workspace(x)));
    TT_TRY(value(x, l->in[1], &in1));
    if (x->splits != splits) /* its halves' room was taken in between */
        return tt_error_new(TT_ERR_INTERNAL, "layer '%s': its second input is made again through "
                            "another two-input convolution; give it a room of its own", l->name);
    if (!x->symbolic)
        TT_TRY(tt_conv2d_backward(be, NONE, s.gb, NONE, g, in1, NONE, &db, workspace(x)));
    if (wants_grad(x, l->in[0])) {
        TT_TRY(grad_for_adding(x, l->in[0], &din));
        if (!x->symbolic)
            TT_TRY(tt_conv2d_backward(be, din, NONE, NONE, g, NONE, s.wa, &da, workspace(x)));
    }
    if (wants_grad(x, l->in[1])) {
        TT_TRY(grad_for_adding(x, l->in[1], &din));
        if (!x->symbolic)
            TT_TRY(tt_conv2d_backward(be, din, NONE, NONE, g, NONE, s.wb, &db, workspace(x)));
    }
    if (x->symbolic) return NULL;
    TT_TRY(tt_concat_forward(be, s.wa, s.ga, s.gb, &s.desc)); /* [ga | gb] */
    return tt_axpy(be, tt_model_grad(m, l->weight), s.wa, 1.0f, s.floats);
}

/* A restat norm's statistics for its backward: those its group made with
 * its output again, or, its output kept, made now with the output again
 * in a room of this layer's own (dead at once). */
static tt_status stats_again(tt_exec *x, const tt_layer *l, tt_mem *saved)
{
    tt_exec_pass *p = stats_of(x, l);
    if (!p || !p->made) {
        tt_mem out = NONE;
        if (!at_hand(x, l->out)) {
            TT_TRY(value(x, l->out, &out));
        } else {
            tt_exec_pass *room = pass_of(x, l->out, x->scope);
            if (!room) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "executor: no room for '%s' "
                                           "again", tensor(x, l->out)->name);
            TT_TRY(remake(x, l->out, room->place));
        }
        p = stats_of(x, l);
    }
    if (!p) return tt_error_new(TT_ERR_INTERNAL, "norm '%s': no statistics again", l->name);
    *saved = p->place;
    return NULL;
}

static tt_status layer_backward(tt_exec *x, const tt_layer *l)
{
    tt_backend *be = x->model->be;
    tt_model *m = x->model;
    int n = x->batch;
    tt_mem g = grad_of(x, l->out), in0 = NONE, out = NONE, d0 = NONE, d1 = NONE;
    switch (l->kind) {
    case TT_LAYER_CONV:
        return conv_backward(x, l, g);
    case TT_LAYER_NORM: {
        /* in place: the input's gradient is the output's place (one consumer) */
        TT_TRY(value(x, l->in[0], &in0));
        tt_mem saved = l->saved;
        if (restats(x, l)) TT_TRY(stats_again(x, l, &saved));
        tensor(x, grad_root(x, l->in[0]))->grad_started = 1;
        d0 = grad_of(x, l->in[0]);
        if (x->symbolic) return NULL;
        if (l->norm == TT_NORM_GROUP) {
            tt_group_norm_desc d = group_desc(x, l, n);
            return tt_group_norm_backward(be, d0, tt_model_grad(m, l->bn_w),
                                          tt_model_grad(m, l->bn_b), g, in0, saved,
                                          tt_model_param(m, l->bn_w), tt_model_param(m, l->bn_b),
                                          &d);
        }
        tt_batch_norm_desc d = norm_desc(x, l, n);
        return tt_batch_norm_backward(be, d0, tt_model_grad(m, l->bn_w), tt_model_grad(m, l->bn_b),
                                      g, in0, saved, &l->bn, &d, norm_trains(x, l));
    }
    case TT_LAYER_RELU:
        /* in place: the input's gradient is the output's place */
        TT_TRY(value(x, l->out, &out));
        tensor(x, grad_root(x, l->in[0]))->grad_started = 1;
        if (x->symbolic) return NULL;
        return tt_relu_backward_inplace(be, g, out, count_of(x, l->out, n));
    case TT_LAYER_CONV_T: {
        TT_TRY(value(x, l->in[0], &in0));
        if (wants_grad(x, l->in[0])) TT_TRY(grad_for_adding(x, l->in[0], &d0));
        if (x->symbolic) return NULL;
        tt_conv_transpose2d_desc d = convt_desc(x, l, n);
        return tt_conv_transpose2d_backward(be, d0, tt_model_grad(m, l->weight),
                                            tt_model_grad(m, l->bias), g, in0,
                                            tt_model_param(m, l->weight), &d, workspace(x));
    }
    case TT_LAYER_ADD:
        if (l->relu) TT_TRY(value(x, l->out, &out));
        if (wants_grad(x, l->in[0])) TT_TRY(grad_for_adding(x, l->in[0], &d0));
        if (wants_grad(x, l->in[1])) TT_TRY(grad_for_adding(x, l->in[1], &d1));
        if (x->symbolic) return NULL;
        return tt_add_backward(be, d0, d1, g, out, l->relu, count_of(x, l->out, n));
    case TT_LAYER_MAX_POOL: {
        if (!wants_grad(x, l->in[0])) return NULL;
        if (l->keeps_argmax && tensor(x, l->out)->keep != TT_KEEP)
            TT_TRY(value(x, l->out, &out)); /* the argmax made with it */
        if (!l->keeps_argmax) TT_TRY(value(x, l->in[0], &in0)); /* the winners found there */
        TT_TRY(grad_for_adding(x, l->in[0], &d0));
        if (x->symbolic) return NULL;
        tt_pool2d_desc d = pool_desc(x, l, n);
        if (!l->keeps_argmax) return tt_max_pool2d_backward_from_input(be, d0, g, in0, &d);
        return tt_max_pool2d_backward(be, d0, g, l->argmax, &d);
    }
    case TT_LAYER_UPSAMPLE: {
        if (!wants_grad(x, l->in[0])) return NULL;
        TT_TRY(grad_for_adding(x, l->in[0], &d0));
        if (x->symbolic) return NULL;
        tt_upsample_desc d = upsample_desc(x, l, n);
        if (l->bilinear) return tt_upsample_bilinear_aligned_backward(be, d0, g, &d, l->factor);
        return tt_upsample_nearest2x_backward(be, d0, g, &d);
    }
    case TT_LAYER_DROPOUT: {
        if (!wants_grad(x, l->in[0])) return NULL;
        TT_TRY(grad_for_adding(x, l->in[0], &d0));
        if (x->symbolic) return NULL;
        return dropout_images(x, l, 1, d0, g, n);
    }
    case TT_LAYER_CONCAT: {
        if (wants_grad(x, l->in[0])) TT_TRY(grad_for_adding(x, l->in[0], &d0));
        if (wants_grad(x, l->in[1])) TT_TRY(grad_for_adding(x, l->in[1], &d1));
        if (x->symbolic) return NULL;
        tt_concat_desc d = concat_desc(x, l, n);
        return tt_concat_backward(be, d0, d1, g, &d);
    }
    case TT_LAYER_MEAN: {
        if (!wants_grad(x, l->in[0])) return NULL;
        TT_TRY(grad_for_adding(x, l->in[0], &d0));
        if (x->symbolic) return NULL;
        tt_global_avg_pool_desc d = mean_desc(x, l, n);
        return tt_global_avg_pool_backward(be, d0, g, &d);
    }
    case TT_LAYER_ACT: {
        if (!wants_grad(x, l->in[0])) return NULL;
        int silu = l->act == TT_ACT_SILU; /* reads its input; sigmoid its output */
        TT_TRY(value(x, silu ? l->in[0] : l->out, silu ? &in0 : &out));
        TT_TRY(grad_for_adding(x, l->in[0], &d0));
        if (x->symbolic) return NULL;
        if (silu) return tt_silu_backward(be, d0, g, in0, count_of(x, l->out, n));
        return tt_sigmoid_backward(be, d0, g, out, count_of(x, l->out, n));
    }
    case TT_LAYER_CHANNEL_MUL: {
        tt_mem in1 = NONE;
        TT_TRY(value(x, l->in[1], &in1));
        if (wants_grad(x, l->in[1])) TT_TRY(value(x, l->in[0], &in0));
        if (wants_grad(x, l->in[0])) TT_TRY(grad_for_adding(x, l->in[0], &d0));
        if (wants_grad(x, l->in[1])) TT_TRY(grad_for_adding(x, l->in[1], &d1));
        if (x->symbolic) return NULL;
        tt_channel_mul_desc d = mul_desc(x, l, n);
        return tt_channel_mul_backward(be, d0, d1, g, in0, in1, &d);
    }
    case TT_LAYER_BROADCAST: {
        if (!wants_grad(x, l->in[0])) return NULL;
        TT_TRY(grad_for_adding(x, l->in[0], &d0));
        if (x->symbolic) return NULL;
        const tt_tensor_def *o = tensor(x, l->out);
        return tt_plane_sum(be, "broadcast backward", d0, g, NONE, n * o->channels,
                            o->height * o->width, 1.0f, 1);
    }
    }
    return tt_error_new(TT_ERR_INTERNAL, "layer '%s': unknown kind %d", l->name, (int)l->kind);
}

/* ---- the passes ------------------------------------------------------------------ */

/* Where layer `reader` finds input t in the forward: where it is stored,
 * or (rounded, read far on) unpacked or made again in a place of the
 * reader's own. */
static tt_status forward_input(tt_exec *x, int reader, int t, tt_mem *out)
{
    const tt_tensor_def *d = tensor(x, t);
    if (d->rounded == TT_PRECISION_FP32 || tt_graph_near(x->graph, t, reader)) {
        *out = stored_of(x, t);
        return NULL;
    }
    x->scope = reader;
    return fetch(x, t, reader, d->halved, out);
}

/* A rounded output, as soon as made: rounded in place, and packed into
 * its 16-bit copy where it keeps one. */
static tt_status round_output(tt_exec *x, int t)
{
    const tt_tensor_def *d = tensor(x, t);
    if (d->rounded == TT_PRECISION_FP32 || x->symbolic) return NULL;
    size_t count = count_of(x, t, x->batch);
    TT_TRY(tt_cast_round(x->model->be, fwd_of(x, t), d->rounded, count));
    if (!d->halved) return NULL;
    return tt_cast_pack(x->model->be, d->half, fwd_of(x, t), d->rounded, count);
}

static tt_status forward(tt_exec *x)
{
    tt_graph *g = x->graph;
    for (int i = 0; i < g->layer_count; i++) {
        tt_layer *l = &g->layers[i];
        if (x->banded) {
            TT_TRY(x->runner->forward(x, l, fwd_of(x, l->out), 0));
            continue;
        }
        tt_mem in0 = NONE, in1 = NONE;
        TT_TRY(forward_input(x, i, l->in[0], &in0));
        if (l->kind == TT_LAYER_CONV && l->in[1] >= 0) {
            /* the second input found after the first half, so that the
             * first is dead by then */
            TT_TRY(run_forward(x, l, fwd_of(x, l->out), in0, NONE, x->batch, 0));
            in0 = NONE;
            TT_TRY(forward_input(x, i, l->in[1], &in1));
        } else if (l->in[1] >= 0) {
            TT_TRY(forward_input(x, i, l->in[1], &in1));
        }
        TT_TRY(run_forward(x, l, fwd_of(x, l->out), in0, in1, x->batch, 0));
        TT_TRY(round_output(x, l->out));
    }
    return NULL;
}

tt_status tt_exec_forward(tt_exec *x, int n, int training)
{
    tt_model *m = x->model;
    if (n < 1 || n > m->capacity)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: batch %d outside 1..%d", m->spec.kind, n,
                            m->capacity);
    tt_backend_phase(m->be, "forward");
    x->batch = n, x->training = training;
    for (int i = 0; i < x->pass_count; i++) x->passes[i].made = 0;
    const char *poison = tt_knob_str(TT_KNOB_POISON_ACTIVATIONS);
    if (poison) { /* debugging: a read of what no launch wrote shows (NaN by default) */
        float value = *poison ? strtof(poison, NULL) : NAN;
        for (int i = 0; i < m->act_count; i++) /* none yet while the plan records */
            TT_TRY(tt_fill(m->be, tt_mem_of(m->act_buffers[i]), value,
                           m->act_buffers[i]->bytes / sizeof(float)));
    }
    x->in_forward = 1;
    tt_status status = forward(x);
    x->in_forward = 0;
    return status;
}

static tt_status backward(tt_exec *x)
{
    tt_graph *g = x->graph;
    for (int t = 0; t < g->tensor_count; t++)
        g->tensors[t].made_again = g->tensors[t].grad_started = 0;
    for (int i = 0; i < x->pass_count; i++) x->passes[i].made = 0;
    tensor(x, grad_root(x, g->output))->grad_started = 1; /* the loss's */
    for (int i = g->layer_count - 1; i >= 0; i--) {
        const tt_layer *l = &g->layers[i];
        x->scope = i;
        if (!wants_grad(x, l->out) || !tensor(x, grad_root(x, l->out))->grad_started) continue;
        TT_TRY(x->banded ? x->runner->backward(x, l) : layer_backward(x, l));
    }
    return NULL;
}

tt_status tt_exec_backward(tt_exec *x)
{
    if (!x->training || x->batch < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: backward needs a training forward of "
                            "the same batch first", x->model->spec.kind);
    tt_backend_phase(x->model->be, "backward");
    return backward(x);
}

/* ---- the plan ------------------------------------------------------------------ */

tt_precision tt_exec_band_store(tt_exec *x, int t)
{
    const tt_tensor_def *d = tensor(x, t);
    if (d->producer < 0 || t == x->graph->output || d->width % 2) return TT_PRECISION_FP32;
    return x->band_precision;
}

static size_t bytes_of(tt_exec *x, int t)
{
    size_t bytes = x->banded ? tt_precision_bytes(tt_exec_band_store(x, t)) : sizeof(float);
    return count_of(x, t, x->model->capacity) * bytes;
}

static void add_place(tt_arena_plan *plan, const char *name, const char *what, size_t bytes,
                      tt_mem *dest)
{
    char full[80];
    snprintf(full, sizeof full, "%.36s%.24s", name, what);
    tt_arena_plan_add(plan, full, bytes, dest);
}

tt_status tt_exec_name_places(tt_exec *x, tt_arena_plan *plan)
{
    tt_graph *g = x->graph;
    tt_model *m = x->model;
    /* the RECOMPUTE places: one backward run symbolically */
    x->symbolic = 1;
    x->batch = m->capacity, x->training = 1;
    x->pass_count = 0;
    x->in_forward = 1;
    tt_status status = forward(x);
    x->in_forward = 0;
    if (!status) status = backward(x);
    x->symbolic = 0;
    x->batch = x->training = 0;
    if (status) return status;
    if (x->failed) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "executor: out of host memory");
    for (int t = 0; t < g->tensor_count; t++) {
        tt_tensor_def *d = &g->tensors[t];
        if (t == g->output) {
            add_place(plan, "logits", "", bytes_of(x, t), &d->fwd);
            add_place(plan, "dlogits", "", bytes_of(x, t), &d->grad);
            continue;
        }
        if (d->producer < 0) {
            d->fwd = m->input;
            continue;
        }
        if (d->fused) continue; /* never stored (exec_band.c) */
        if (d->alias < 0) {
            add_place(plan, d->name, "", bytes_of(x, t), &d->fwd);
            int again = d->keep == TT_REMAKE; /* or a tensor written over it is */
            for (int k = 0; k < g->tensor_count; k++)
                again |= g->tensors[k].alias == t && g->tensors[k].keep == TT_REMAKE;
            if (again) add_place(plan, d->name, ".again", bytes_of(x, t), &d->again);
        }
        tt_precision half = d->storage != TT_PRECISION_FP32 ? d->storage
                          : d->halved ? d->rounded : TT_PRECISION_FP32;
        if (half != TT_PRECISION_FP32)
            add_place(plan, d->name, ".half",
                      count_of(x, t, m->capacity) * tt_precision_bytes(half), &d->half);
        if (d->needs_grad && d->grad_alias < 0)
            add_place(plan, d->name, ".grad", bytes_of(x, t), &d->grad);
    }
    for (int i = 0; i < x->pass_count; i++) {
        tt_exec_pass *p = &x->passes[i];
        char what[24];
        if (p->tensor < 0) { /* a restat norm's statistics */
            const tt_layer *l = &g->layers[-p->tensor - 1];
            snprintf(what, sizeof what, ".saved.for.%d", p->scope);
            tt_group_norm_desc gd = group_desc(x, l, m->capacity);
            tt_batch_norm_desc bd = norm_desc(x, l, m->capacity);
            size_t floats = l->norm == TT_NORM_GROUP ? tt_group_norm_saved_floats(&gd)
                                                     : tt_batch_norm_saved_floats(&bd);
            add_place(plan, l->name, what, floats * sizeof(float), &p->place);
            continue;
        }
        snprintf(what, sizeof what, "%s.for.%d", p->forward ? ".fwd" : "", p->scope);
        add_place(plan, tensor(x, p->tensor)->name, what, bytes_of(x, p->tensor), &p->place);
    }
    for (int i = 0; i < g->layer_count; i++) {
        tt_layer *l = &g->layers[i];
        if (l->kind == TT_LAYER_NORM && l->norm == TT_NORM_GROUP) {
            tt_group_norm_desc d = group_desc(x, l, m->capacity);
            add_place(plan, l->name, ".saved", tt_group_norm_saved_floats(&d) * sizeof(float),
                      &l->saved);
        } else if (l->kind == TT_LAYER_NORM) {
            tt_batch_norm_desc d = norm_desc(x, l, m->capacity);
            size_t saved = tt_batch_norm_saved_floats(&d);
            for (int k = 0; k < g->layer_count; k++) /* applied upsampled too (remake_upsampled) */
                if (g->layers[k].kind == TT_LAYER_UPSAMPLE && !g->layers[k].bilinear &&
                    g->layers[k].in[0] == l->out) {
                    d.height *= 2, d.width *= 2;
                    if (tt_batch_norm_saved_floats(&d) > saved) saved = tt_batch_norm_saved_floats(&d);
                    break;
                }
            add_place(plan, l->name, ".saved", saved * sizeof(float), &l->saved);
        }
        if (l->kind == TT_LAYER_MAX_POOL && l->keeps_argmax)
            add_place(plan, l->name, ".argmax", bytes_of(x, l->out), &l->argmax);
    }
    return NULL;
}

tt_status tt_exec_record_step(void *exec, tt_backend *recorder)
{
    tt_exec *x = exec;
    tt_model *m = x->model;
    tt_graph *g = x->graph;
    tt_backend *be = m->be;
    m->be = recorder;
    x->recording = 1; /* a micro-batch of 1 may be for eval alone */
    /* a model for prediction has no gradients: a stand-in on the recorder,
     * so that its plan and workspace are a training model's */
    tt_buffer grads = {.backend = recorder, .bytes = m->params->trainable_floats * sizeof(float)};
    snprintf(grads.record.name, sizeof grads.record.name, "gradients (stand-in)");
    if (!m->grad_buffer) m->grad_buffer = &grads;
    tt_status status = tt_exec_forward(x, m->capacity, 1);
    if (!status)
        status = tt_copy(recorder, grad_of(x, g->output), fwd_of(x, g->output), bytes_of(x, g->output));
    if (!status) status = tt_exec_backward(x);
    if (m->grad_buffer == &grads) m->grad_buffer = NULL;
    x->recording = 0;
    m->be = be;
    x->batch = x->training = 0;
    return status;
}

void tt_exec_free(tt_exec *x)
{
    free(x->passes);
    x->passes = NULL;
    x->pass_count = x->pass_capacity = 0;
}

/* ---- for exec_band.c (exec_internal.h) ------------------------------------------ */

int tt_exec_grad_root(tt_exec *x, int t) { return grad_root(x, t); }
tt_mem tt_exec_fwd_of(tt_exec *x, int t) { return fwd_of(x, t); }
tt_mem tt_exec_grad_of(tt_exec *x, int t) { return grad_of(x, t); }
tt_status tt_exec_value(tt_exec *x, int t, tt_mem *out) { return value(x, t, out); }
tt_batch_norm_desc tt_exec_norm_desc(tt_exec *x, const tt_layer *l, int n)
{
    return norm_desc(x, l, n);
}
tt_group_norm_desc tt_exec_group_desc(tt_exec *x, const tt_layer *l, int n)
{
    return group_desc(x, l, n);
}
tt_mem tt_exec_workspace(tt_exec *x) { return workspace(x); }
tt_status tt_exec_split_weight(tt_exec *x, const tt_layer *l, tt_exec_split *s)
{
    return split(x, l, s);
}

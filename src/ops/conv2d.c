/*
 * conv2d: shape checks, algorithm dispatch, and the im2col + GEMM algorithm.
 *
 * Dispatch: one row per tt_conv_algo (conv_algo.h has the table of what each
 * runs).  Each direction (forward, backward-data, backward-weight) resolves
 * separately: desc->algo, else the forced one (tt_conv_algo_force,
 * $TT_CONV_ALGO), else the autotuner's pick among the algorithms that run
 * that direction of the shape; a chosen algorithm that does not run it falls
 * back to IM2COL_GEMM.  The workspace of an AUTO desc is the largest that
 * any candidate needs, so a caller's shared workspace fits every pick.
 *
 * im2col + GEMM, one image n at a time, per group g (one strided-batched
 * GEMM over the groups; K = Cin/groups * kH * kW, P = OH * OW):
 *   forward   cols = im2col(inp[n])                      (Cin * kH * kW, P)
 *             out[n]_g = weight_g (Cout/g, K) . cols_g (K, P)   (+ bias, pre-filled)
 *   backward  dweight_g += dout[n]_g . cols_gᵀ           (beta = 1)
 *             cols_g = weight_gᵀ . dout[n]_g;  dinp[n] += col2im(cols)  (col2im adds)
 *             dbias += sum over n and P of dout
 * A 1x1 convolution with stride 1 and no padding uses the image as its own
 * columns and needs no workspace.
 */
#include "ops/conv2d.h"

#include <limits.h>
#include <stdio.h>

#include "core/status.h"
#include "ops/conv_autotune.h"

typedef tt_conv_shape conv2d_shape;

/* ---- im2col + GEMM ------------------------------------------------------ */

static size_t im2col_workspace_bytes(const conv2d_shape *s)
{
    return s->image_is_columns ? 0 : s->cin * s->kh * s->kw * s->out_plane * sizeof(float);
}

static tt_im2col im2col_geometry(const conv2d_shape *s, tt_mem image, tt_mem cols)
{
    return (tt_im2col){.channels = s->cin, .height = s->h, .width = s->w,
                       .kernel_h = s->kh, .kernel_w = s->kw, .pad_h = s->ph, .pad_w = s->pw,
                       .stride_h = s->sh, .stride_w = s->sw,
                       .dilation_h = s->dh, .dilation_w = s->dw, .im = image, .col = cols};
}

static tt_status im2col_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                tt_mem bias, const conv2d_shape *s, tt_mem ws, int accumulate)
{
    float beta = accumulate ? 1.0f : 0.0f;
    if (bias.buffer && !accumulate) {
        TT_TRY(tt_conv_bias_fill(be, out, bias, s->batch, s->cout, s->out_plane));
        beta = 1.0f;
    }
    for (size_t n = 0; n < s->batch; n++) {
        tt_mem image = tt_mem_f32(inp, n * s->cin * s->in_plane);
        tt_mem cols = image;
        if (!s->image_is_columns) {
            tt_im2col g = im2col_geometry(s, image, ws);
            TT_TRY(tt_im2col_run(be, &g));
            cols = ws;
        }
        tt_gemm gemm = {.m = s->cout_g, .n = s->out_plane, .k = s->k,
                        .alpha = 1.0f, .beta = beta,
                        .a = weight, .lda = s->k, .stride_a = s->cout_g * s->k,
                        .b = cols, .ldb = s->out_plane, .stride_b = s->k * s->out_plane,
                        .c = tt_mem_f32(out, n * s->cout * s->out_plane), .ldc = s->out_plane,
                        .stride_c = s->cout_g * s->out_plane, .batch = s->groups};
        TT_TRY(tt_gemm_run(be, &gemm));
    }
    return NULL;
}

static tt_status im2col_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                        const conv2d_shape *s, tt_mem ws)
{
    for (size_t n = 0; n < s->batch; n++) {
        tt_mem dout_n = tt_mem_f32(dout, n * s->cout * s->out_plane);
        tt_mem cols = tt_mem_f32(inp, n * s->cin * s->in_plane);
        if (!s->image_is_columns) {
            tt_im2col g = im2col_geometry(s, cols, ws);
            TT_TRY(tt_im2col_run(be, &g));
            cols = ws;
        }
        /* dweight_g (Cout/g, K) += dout_g (Cout/g, P) . cols_gᵀ (P, K) */
        tt_gemm gemm = {.trans_b = 1, .m = s->cout_g, .n = s->k, .k = s->out_plane,
                        .alpha = 1.0f, .beta = 1.0f,
                        .a = dout_n, .lda = s->out_plane, .stride_a = s->cout_g * s->out_plane,
                        .b = cols, .ldb = s->out_plane, .stride_b = s->k * s->out_plane,
                        .c = dweight, .ldc = s->k, .stride_c = s->cout_g * s->k,
                        .batch = s->groups};
        TT_TRY(tt_gemm_run(be, &gemm));
    }
    return NULL;
}

static tt_status im2col_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                      const conv2d_shape *s, tt_mem ws)
{
    for (size_t n = 0; n < s->batch; n++) {
        /* cols_g (K, P) = weight_gᵀ (K, Cout/g) . dout_g (Cout/g, P); with no
         * columns to scatter, straight into dinp with beta = 1. */
        tt_mem dout_n = tt_mem_f32(dout, n * s->cout * s->out_plane);
        tt_mem dinp_n = tt_mem_f32(dinp, n * s->cin * s->in_plane);
        tt_gemm gemm = {.trans_a = 1, .m = s->k, .n = s->out_plane, .k = s->cout_g,
                        .alpha = 1.0f, .beta = s->image_is_columns ? 1.0f : 0.0f,
                        .a = weight, .lda = s->k, .stride_a = s->cout_g * s->k,
                        .b = dout_n, .ldb = s->out_plane, .stride_b = s->cout_g * s->out_plane,
                        .c = s->image_is_columns ? dinp_n : ws, .ldc = s->out_plane,
                        .stride_c = s->k * s->out_plane, .batch = s->groups};
        TT_TRY(tt_gemm_run(be, &gemm));
        if (!s->image_is_columns) {
            tt_im2col g = im2col_geometry(s, dinp_n, ws);
            TT_TRY(tt_col2im_run(be, &g));
        }
    }
    return NULL;
}

static const tt_conv_algo_impl im2col_impl = {
    .supports = NULL, /* every shape, every direction */
    .workspace_bytes = im2col_workspace_bytes,
    .forward = im2col_forward,
    .backward_data = im2col_backward_data,
    .backward_weight = im2col_backward_weight,
};

/* ---- dispatch ----------------------------------------------------------- */

static const tt_conv_algo_impl *const conv2d_algos[] = {
    [TT_CONV_ALGO_AUTO] = NULL, /* resolved per direction by resolve() */
    [TT_CONV_ALGO_IM2COL_GEMM] = &im2col_impl,
    [TT_CONV_ALGO_DIRECT] = &tt_conv_direct_impl,
    [TT_CONV_ALGO_WINOGRAD] = &tt_conv_winograd_impl,
    [TT_CONV_ALGO_FFT] = &tt_conv_fft_impl,
};
_Static_assert(sizeof conv2d_algos / sizeof conv2d_algos[0] == TT_CONV_ALGO_COUNT,
               "conv2d needs one row per tt_conv_algo");

const tt_conv_algo_impl *tt_conv2d_algo_impl(tt_conv_algo algo)
{
    return (unsigned)algo < TT_CONV_ALGO_COUNT ? conv2d_algos[algo] : NULL;
}

/* What the caller asked for: the desc's algorithm, else the forced one. */
static tt_conv_algo requested(const tt_conv2d_desc *d)
{
    return d->algo != TT_CONV_ALGO_AUTO ? d->algo : tt_conv_algo_forced();
}

/* `want` if it runs `dir` of `s` itself, else the IM2COL_GEMM fallback. */
static tt_conv_algo concrete(tt_conv_algo want, const conv2d_shape *s, tt_conv_dir dir)
{
    return tt_conv_algo_runs(conv2d_algos[want], s, dir) ? want : TT_CONV_ALGO_IM2COL_GEMM;
}

/* The algorithms that run `dir` of `s`, in enum order; returns the count. */
static int candidates_of(const conv2d_shape *s, tt_conv_dir dir, tt_conv_algo *out)
{
    int count = 0;
    for (int a = TT_CONV_ALGO_AUTO + 1; a < TT_CONV_ALGO_COUNT; a++)
        if (tt_conv_algo_runs(conv2d_algos[a], s, dir)) out[count++] = (tt_conv_algo)a;
    return count;
}

/* The autotuner's key of one direction of a shape. */
static void key_of(const conv2d_shape *s, tt_conv_dir dir, char *key, size_t size)
{
    snprintf(key, size,
             "conv2d %s N%zu C%zu %zux%zu -> C%zu k%zux%zu s%zux%zu p%zux%zu d%zux%zu g%zu",
             tt_conv_dir_name(dir), s->batch, s->cin, s->h, s->w, s->cout, s->kh, s->kw, s->sh,
             s->sw, s->ph, s->pw, s->dh, s->dw, s->groups);
}

/* The workspace every direction's algorithm needs, so that one workspace
 * serves forward and backward.  For AUTO: the pick's where `be` (may be
 * NULL) already knows it, else every candidate's. */
static size_t workspace_of(tt_backend *be, const tt_conv2d_desc *d, const conv2d_shape *s)
{
    tt_conv_algo want = requested(d), algos[TT_CONV_ALGO_COUNT];
    size_t bytes = 0;
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
        int count = 1;
        if (dir == TT_CONV_DIR_BACKWARD_DATA && d->no_input_grad) continue;
        if (want == TT_CONV_ALGO_AUTO) {
            char key[256];
            count = candidates_of(s, (tt_conv_dir)dir, algos);
            key_of(s, (tt_conv_dir)dir, key, sizeof key);
            if (be) count = tt_conv_autotune_narrow(be, key, algos, count);
        } else {
            algos[0] = concrete(want, s, (tt_conv_dir)dir);
        }
        for (int i = 0; i < count; i++) {
            size_t b = conv2d_algos[algos[i]]->workspace_bytes(s);
            if (b > bytes) bytes = b;
        }
    }
    return bytes;
}

/* What the autotuner runs: one direction of one algorithm on the caller's
 * inputs, writing into a scratch output (never the caller's gradients). */
typedef struct tune_ctx {
    const conv2d_shape *s;
    tt_conv_dir dir;
    tt_mem inp, weight, bias, dout;
    tt_conv_tune_scratch t;
} tune_ctx;

static tt_status tune_run(void *p, tt_conv_algo algo)
{
    tune_ctx *c = p;
    const conv2d_shape *s = c->s;
    TT_TRY(tt_conv_tune_scratch_get(&c->t));
    const tt_conv_algo_impl *impl = conv2d_algos[algo];
    tt_backend *be = c->t.be;
    tt_mem out = tt_mem_of(c->t.out), ws = c->t.ws.mem;
    switch (c->dir) {
    case TT_CONV_DIR_FORWARD:
        return impl->forward(be, out, c->inp, c->weight, c->bias, s, ws, 0);
    case TT_CONV_DIR_BACKWARD_DATA:
        return impl->backward_data(be, out, c->dout, c->weight, s, ws);
    default:
        return impl->backward_weight(be, out, c->dout, c->inp, s, ws);
    }
}

/* The algorithm that runs `dir`: the requested one (or its fallback), or
 * the autotuner's pick, timed on ctx's buffers when nothing is known yet. */
static tt_status resolve(const tt_conv2d_desc *d, const conv2d_shape *s, tt_conv_dir dir,
                         tune_ctx *ctx, tt_conv_algo *out)
{
    tt_conv_algo want = requested(d);
    if (want != TT_CONV_ALGO_AUTO) {
        *out = concrete(want, s, dir);
        return NULL;
    }
    tt_conv_algo algos[TT_CONV_ALGO_COUNT];
    int count = candidates_of(s, dir, algos);
    char key[256];
    key_of(s, dir, key, sizeof key);
    ctx->s = s, ctx->dir = dir;
    ctx->t.out_floats = dir == TT_CONV_DIR_FORWARD         ? s->batch * s->cout * s->out_plane
                        : dir == TT_CONV_DIR_BACKWARD_DATA ? s->batch * s->cin * s->in_plane
                                                           : s->cout * s->k;
    ctx->t.ws_bytes = workspace_of(NULL, d, s);
    tt_status status = tt_conv_autotune_pick(ctx->t.be, key, algos, count, tune_run, ctx, out);
    tt_conv_tune_scratch_release(&ctx->t);
    return status;
}

tt_conv_algo tt_conv2d_algo_for(const tt_conv2d_desc *desc, tt_conv_dir dir)
{
    conv2d_shape s;
    tt_status status = tt_conv2d_shape(desc, &s);
    tt_status_free(status);
    tt_conv_algo want = requested(desc);
    if (status || (unsigned)dir >= TT_CONV_DIR_COUNT || want == TT_CONV_ALGO_AUTO)
        return TT_CONV_ALGO_AUTO;
    return concrete(want, &s, dir);
}

tt_conv_algo tt_conv2d_algo_on(const tt_backend *be, const tt_conv2d_desc *desc, tt_conv_dir dir)
{
    tt_conv_algo algo = tt_conv2d_algo_for(desc, dir);
    conv2d_shape s;
    tt_status status = tt_conv2d_shape(desc, &s);
    tt_status_free(status);
    if (algo != TT_CONV_ALGO_AUTO || status || (unsigned)dir >= TT_CONV_DIR_COUNT) return algo;
    tt_conv_algo algos[TT_CONV_ALGO_COUNT], pick = TT_CONV_ALGO_AUTO;
    int count = candidates_of(&s, dir, algos);
    char key[256];
    key_of(&s, dir, key, sizeof key);
    if (count == 1) return algos[0];
    return tt_conv_autotune_known(be, key, algos, count, &pick) ? pick : TT_CONV_ALGO_AUTO;
}

#define DESC_FMT "conv2d (N=%d Cin=%d %dx%d -> Cout=%d, kernel %dx%d stride %dx%d pad %dx%d " \
                 "dilation %dx%d groups %d)"
#define DESC_ARGS(d)                                                                      \
    (d)->batch, (d)->in_channels, (d)->in_h, (d)->in_w, (d)->out_channels, (d)->kernel_h,  \
        (d)->kernel_w, (d)->stride_h, (d)->stride_w, (d)->pad_h, (d)->pad_w,               \
        (d)->dilation_h ? (d)->dilation_h : 1, (d)->dilation_w ? (d)->dilation_w : 1,      \
        (d)->groups ? (d)->groups : 1

tt_status tt_conv2d_shape(const tt_conv2d_desc *d, tt_conv_shape *s)
{
    *s = (conv2d_shape){0};
    int groups = d->groups ? d->groups : 1;
    int dh = d->dilation_h ? d->dilation_h : 1, dw = d->dilation_w ? d->dilation_w : 1;
    if (d->batch < 1 || d->in_channels < 1 || d->in_h < 1 || d->in_w < 1 ||
        d->out_channels < 1 || d->kernel_h < 1 || d->kernel_w < 1 || d->stride_h < 1 ||
        d->stride_w < 1 || d->pad_h < 0 || d->pad_w < 0 || dh < 1 || dw < 1 || groups < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            DESC_FMT ": sizes, kernel, stride and dilation must be >= 1 and "
                                     "padding >= 0",
                            DESC_ARGS(d));
    if (d->in_channels % groups || d->out_channels % groups)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            DESC_FMT ": groups must divide both channel counts", DESC_ARGS(d));
    if ((unsigned)d->algo >= TT_CONV_ALGO_COUNT)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, DESC_FMT ": unknown algorithm %d",
                            DESC_ARGS(d), (int)d->algo);
    s->batch = (size_t)d->batch, s->cin = (size_t)d->in_channels;
    s->h = (size_t)d->in_h, s->w = (size_t)d->in_w, s->cout = (size_t)d->out_channels;
    s->kh = (size_t)d->kernel_h, s->kw = (size_t)d->kernel_w;
    s->sh = (size_t)d->stride_h, s->sw = (size_t)d->stride_w;
    s->ph = (size_t)d->pad_h, s->pw = (size_t)d->pad_w;
    s->dh = (size_t)dh, s->dw = (size_t)dw, s->groups = (size_t)groups;
    size_t span_h = s->dh * (s->kh - 1) + 1, span_w = s->dw * (s->kw - 1) + 1;
    if (s->h + 2 * s->ph < span_h || s->w + 2 * s->pw < span_w)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            DESC_FMT ": the kernel is larger than the padded image",
                            DESC_ARGS(d));
    s->oh = (s->h + 2 * s->ph - span_h) / s->sh + 1;
    s->ow = (s->w + 2 * s->pw - span_w) / s->sw + 1;
    s->cin_g = s->cin / s->groups, s->cout_g = s->cout / s->groups;
    s->k = s->cin_g * s->kh * s->kw;
    s->in_plane = s->h * s->w, s->out_plane = s->oh * s->ow;
    s->image_is_columns = s->kh == 1 && s->kw == 1 && s->sh == 1 && s->sw == 1 && s->ph == 0 &&
                          s->pw == 0;
    /* OpenCL kernels (ours and CLBlast's) index with int */
    if (s->batch * s->cin * s->in_plane > INT_MAX || s->batch * s->cout * s->out_plane > INT_MAX ||
        s->cin * s->kh * s->kw * s->out_plane > INT_MAX)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            DESC_FMT ": a tensor or the columns exceed 2^31 elements; use a "
                                     "smaller micro-batch or tile",
                            DESC_ARGS(d));
    return NULL;
}

tt_status tt_conv2d_check(const tt_conv2d_desc *desc)
{
    conv2d_shape s;
    return tt_conv2d_shape(desc, &s);
}

int tt_conv2d_out_h(const tt_conv2d_desc *desc)
{
    conv2d_shape s;
    tt_status status = tt_conv2d_shape(desc, &s);
    tt_status_free(status);
    return status ? 0 : (int)s.oh;
}

int tt_conv2d_out_w(const tt_conv2d_desc *desc)
{
    conv2d_shape s;
    tt_status status = tt_conv2d_shape(desc, &s);
    tt_status_free(status);
    return status ? 0 : (int)s.ow;
}

size_t tt_conv2d_workspace_bytes(const tt_conv2d_desc *desc)
{
    return tt_conv2d_workspace_bytes_on(NULL, desc);
}

size_t tt_conv2d_workspace_bytes_on(tt_backend *be, const tt_conv2d_desc *desc)
{
    conv2d_shape s;
    tt_status status = tt_conv2d_shape(desc, &s);
    tt_status_free(status);
    return status ? 0 : workspace_of(be, desc, &s);
}

/* out = conv + bias, or out += conv (accumulate; no bias). */
static tt_status forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                         const tt_conv2d_desc *desc, tt_mem workspace, int accumulate)
{
    conv2d_shape s;
    TT_TRY(tt_conv2d_shape(desc, &s));
    const char *op = accumulate ? "conv2d forward (adding)" : "conv2d forward";
    size_t f = sizeof(float), out_bytes = s.batch * s.cout * s.out_plane * f;
    size_t in_bytes = s.batch * s.cin * s.in_plane * f, weight_bytes = s.cout * s.k * f;
    TT_TRY(tt_mem_check(op, "out (N, Cout, OH, OW)", out, out_bytes));
    TT_TRY(tt_mem_check(op, "inp (N, Cin, H, W)", inp, in_bytes));
    TT_TRY(tt_mem_check(op, "weight (Cout, Cin/groups, kH, kW)", weight, weight_bytes));
    if (bias.buffer) TT_TRY(tt_mem_check(op, "bias (Cout)", bias, s.cout * f));

    tt_conv_algo algo;
    tune_ctx ctx = {.inp = inp, .weight = weight, .bias = bias,
                    .t = {.be = be, .op = "conv2d", .given_ws = workspace}};
    tt_status status = resolve(desc, &s, TT_CONV_DIR_FORWARD, &ctx, &algo);
    if (status) return tt_error_prefix(status, DESC_FMT " forward", DESC_ARGS(desc));
    const tt_conv_algo_impl *impl = conv2d_algos[algo];
    tt_conv_workspace ws;
    TT_TRY(tt_conv_workspace_acquire(be, "conv2d.workspace", workspace,
                                     impl->workspace_bytes(&s), &ws));
    status = impl->forward(be, out, inp, weight, bias, &s, ws.mem, accumulate);
    tt_conv_workspace_release(&ws);
    if (status)
        return tt_error_prefix(status, DESC_FMT " forward (%s)", DESC_ARGS(desc),
                               tt_conv_algo_name(algo));
    return NULL;
}

tt_status tt_conv2d_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                            const tt_conv2d_desc *desc, tt_mem workspace)
{
    return forward(be, out, inp, weight, bias, desc, workspace, 0);
}

tt_status tt_conv2d_forward_add(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                const tt_conv2d_desc *desc, tt_mem workspace)
{
    return forward(be, out, inp, weight, (tt_mem){0}, desc, workspace, 1);
}

tt_status tt_conv2d_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                             tt_mem dout, tt_mem inp, tt_mem weight, const tt_conv2d_desc *desc,
                             tt_mem workspace)
{
    conv2d_shape s;
    TT_TRY(tt_conv2d_shape(desc, &s));
    const char *op = "conv2d backward";
    size_t f = sizeof(float), out_bytes = s.batch * s.cout * s.out_plane * f;
    size_t in_bytes = s.batch * s.cin * s.in_plane * f, weight_bytes = s.cout * s.k * f;
    TT_TRY(tt_mem_check(op, "dout (N, Cout, OH, OW)", dout, out_bytes));
    if (dinp.buffer) {
        TT_TRY(tt_mem_check(op, "dinp (N, Cin, H, W)", dinp, in_bytes));
        TT_TRY(tt_mem_check(op, "weight (Cout, Cin/groups, kH, kW)", weight, weight_bytes));
    }
    if (dweight.buffer) {
        TT_TRY(tt_mem_check(op, "dweight (Cout, Cin/groups, kH, kW)", dweight, weight_bytes));
        TT_TRY(tt_mem_check(op, "inp (N, Cin, H, W)", inp, in_bytes));
    }
    if (dbias.buffer) TT_TRY(tt_mem_check(op, "dbias (Cout)", dbias, s.cout * f));

    tt_status status = NULL;
    tt_conv_workspace ws = {{0}, NULL};
    if (dbias.buffer)
        TT_CHECK(tt_conv_bias_backward(be, dbias, dout, s.batch, s.cout, s.out_plane));
    tt_conv_algo algo = TT_CONV_ALGO_AUTO;
    tune_ctx ctx = {.inp = inp, .weight = weight, .dout = dout,
                    .t = {.be = be, .op = "conv2d", .given_ws = workspace}};
    if (dinp.buffer) {
        TT_CHECK(resolve(desc, &s, TT_CONV_DIR_BACKWARD_DATA, &ctx, &algo));
        const tt_conv_algo_impl *impl = conv2d_algos[algo];
        TT_CHECK(tt_conv_workspace_acquire(be, "conv2d.workspace", workspace,
                                           impl->workspace_bytes(&s), &ws));
        TT_CHECK(impl->backward_data(be, dinp, dout, weight, &s, ws.mem));
        tt_conv_workspace_release(&ws);
    }
    if (dweight.buffer) {
        algo = TT_CONV_ALGO_AUTO;
        TT_CHECK(resolve(desc, &s, TT_CONV_DIR_BACKWARD_WEIGHT, &ctx, &algo));
        const tt_conv_algo_impl *impl = conv2d_algos[algo];
        TT_CHECK(tt_conv_workspace_acquire(be, "conv2d.workspace", workspace,
                                           impl->workspace_bytes(&s), &ws));
        TT_CHECK(impl->backward_weight(be, dweight, dout, inp, &s, ws.mem));
    }
cleanup:
    tt_conv_workspace_release(&ws);
    if (status)
        return tt_error_prefix(status, DESC_FMT " backward (%s)", DESC_ARGS(desc),
                               tt_conv_algo_name(algo));
    return NULL;
}

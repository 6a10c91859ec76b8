/*
 * conv2d: shape checks, its rows for the shared dispatch (tt_conv_dispatch in
 * conv_algo.c), and the im2col + GEMM algorithm.
 *
 * Dispatch: one row per tt_conv_algo (conv_algo.h has the table of what each
 * runs).  Each direction (forward, backward-data, backward-weight) resolves
 * separately: desc->algo (where a run's --algo arrives), else the
 * autotuner's pick among the algorithms that run that direction of the shape; a chosen algorithm that does not run it falls
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
#include "ops/conv_log.h"
#include "ops/device_traits.h"

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

/* The most output positions one GEMM takes, in each direction.  The
 * weight gradient sums them: a GEMM adds its reduction in one run, and
 * where the terms are alike (a region where a layer's input and the loss's
 * gradient are even) their roundings go the same way (CLBlast on PoCL was
 * 2.5e-3 of the sum off over 352x528 equal terms, six times the
 * verifier's bound, which refused it on the first full-resolution FPN
 * step; in runs of this many, each added to the gradient, 4.6e-5).  The
 * forward and the input gradient write them: CLBlast copies an operand
 * it must pad into a buffer of its own for each call, outside the memory
 * accounting, and in runs of this many that copy is at most K x 8192
 * floats however large the tile.  On a GPU, fewer where a run's 2 Cout K
 * multiply-adds a position would pass its cap on one launch's work
 * (device_traits.h dispatch_flops). */
#define IM2COL_RUN 8192

static size_t run_length(tt_backend *be, const conv2d_shape *s)
{
    return tt_dispatch_units(be, 2.0 * (double)(s->cout * s->k), IM2COL_RUN);
}

/* The positions [p, p + its return) of `plane` one GEMM of `run` takes. */
static size_t run_of(size_t plane, size_t p, size_t run)
{
    return plane - p < run ? plane - p : run;
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
        tt_mem out_n = tt_mem_f32(out, n * s->cout * s->out_plane);
        /* out_g (Cout/g, P) = weight_g (Cout/g, K) . cols_g (K, P), P in runs */
        for (size_t p = 0, run = run_length(be, s); p < s->out_plane; p += run) {
            tt_gemm gemm = {.m = s->cout_g, .n = run_of(s->out_plane, p, run), .k = s->k,
                            .alpha = 1.0f, .beta = beta,
                            .a = weight, .lda = s->k, .stride_a = s->cout_g * s->k,
                            .b = tt_mem_f32(cols, p), .ldb = s->out_plane,
                            .stride_b = s->k * s->out_plane, .c = tt_mem_f32(out_n, p),
                            .ldc = s->out_plane, .stride_c = s->cout_g * s->out_plane,
                            .batch = s->groups};
            TT_TRY(tt_gemm_run(be, &gemm));
        }
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
        /* dweight_g (Cout/g, K) += dout_g (Cout/g, P) . cols_gᵀ (P, K), P in runs */
        for (size_t p = 0, run = run_length(be, s); p < s->out_plane; p += run) {
            tt_gemm gemm = {.trans_b = 1, .m = s->cout_g, .n = s->k, .k = run_of(s->out_plane, p, run),
                            .alpha = 1.0f, .beta = 1.0f, .a = tt_mem_f32(dout_n, p),
                            .lda = s->out_plane, .stride_a = s->cout_g * s->out_plane,
                            .b = tt_mem_f32(cols, p), .ldb = s->out_plane,
                            .stride_b = s->k * s->out_plane, .c = dweight, .ldc = s->k,
                            .stride_c = s->cout_g * s->k, .batch = s->groups};
            TT_TRY(tt_gemm_run(be, &gemm));
        }
    }
    return NULL;
}

static tt_status im2col_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                      const conv2d_shape *s, tt_mem ws, int accumulate)
{
    TT_TRY(tt_conv_clear_input(be, dinp, s, accumulate));
    for (size_t n = 0; n < s->batch; n++) {
        /* cols_g (K, P) = weight_gᵀ (K, Cout/g) . dout_g (Cout/g, P), P in runs;
         * with no columns to scatter, straight into dinp with beta = 1. */
        tt_mem dout_n = tt_mem_f32(dout, n * s->cout * s->out_plane);
        tt_mem dinp_n = tt_mem_f32(dinp, n * s->cin * s->in_plane);
        tt_mem cols = s->image_is_columns ? dinp_n : ws;
        for (size_t p = 0, run = run_length(be, s); p < s->out_plane; p += run) {
            tt_gemm gemm = {.trans_a = 1, .m = s->k, .n = run_of(s->out_plane, p, run), .k = s->cout_g,
                            .alpha = 1.0f, .beta = s->image_is_columns ? 1.0f : 0.0f,
                            .a = weight, .lda = s->k, .stride_a = s->cout_g * s->k,
                            .b = tt_mem_f32(dout_n, p), .ldb = s->out_plane,
                            .stride_b = s->cout_g * s->out_plane, .c = tt_mem_f32(cols, p),
                            .ldc = s->out_plane, .stride_c = s->k * s->out_plane,
                            .batch = s->groups};
            TT_TRY(tt_gemm_run(be, &gemm));
        }
        if (!s->image_is_columns) {
            tt_im2col g = im2col_geometry(s, dinp_n, ws);
            TT_TRY(tt_col2im_run(be, &g));
        }
    }
    return NULL;
}

static int im2col_can_win(const tt_backend *be, const tt_conv_shape *s, tt_conv_dir dir)
{
    (void)s, (void)dir;
    return tt_conv_im2col_can_win(be);
}

const tt_conv_algo_impl tt_conv_im2col_impl = {
    .program = "conv",
    .needs = TT_CONV_NEEDS_GEMM | TT_CONV_NEEDS_IM2COL,
    .tuned_on = TT_TUNED_ALL, /* the verifier's first reference */
    .supports = NULL,         /* every shape, every direction */
    .can_win = im2col_can_win,
    .workspace_bytes = im2col_workspace_bytes,
    .forward = im2col_forward,
    .backward_data = im2col_backward_data,
    .backward_weight = im2col_backward_weight,
};

/* ---- dispatch ----------------------------------------------------------- */

#define ROW_(id, name, impl) [TT_CONV_ALGO_##id] = &impl,
static const tt_conv_algo_impl *const conv2d_algos[TT_CONV_ALGO_COUNT] = {
    [TT_CONV_ALGO_AUTO] = NULL, /* resolved per direction by resolve() */
    TT_CONV_ALGO_ROWS(ROW_)};
#undef ROW_

const tt_conv_algo_impl *tt_conv2d_algo_impl(tt_conv_algo algo)
{
    return (unsigned)algo < TT_CONV_ALGO_COUNT ? conv2d_algos[algo] : NULL;
}

int tt_conv_algo_tuned_on(const tt_backend *be, tt_conv_algo algo)
{
    return tt_conv_algo_impl_tuned_on(be, tt_conv2d_algo_impl(algo));
}

/* The conv2d rows as the dispatcher sees them (conv_algo.h). */
static int family_runs(tt_conv_algo algo, const conv2d_shape *s, tt_conv_dir dir)
{
    return tt_conv_algo_runs(conv2d_algos[algo], s, dir);
}

static int family_can_win(const tt_backend *be, tt_conv_algo algo, const conv2d_shape *s,
                          tt_conv_dir dir)
{
    const tt_conv_algo_impl *impl = conv2d_algos[algo];
    return !impl || !impl->can_win || impl->can_win(be, s, dir);
}

static void family_key(const conv2d_shape *s, tt_conv_dir dir, char *key, size_t size)
{
    snprintf(key, size,
             "conv2d %s N%zu C%zu %zux%zu -> C%zu k%zux%zu s%zux%zu p%zux%zu d%zux%zu g%zu",
             tt_conv_dir_name(dir), s->batch, s->cin, s->h, s->w, s->cout, s->kh, s->kw, s->sh,
             s->sw, s->ph, s->pw, s->dh, s->dw, s->groups);
}

static size_t family_workspace(tt_conv_algo algo, const conv2d_shape *s)
{
    return tt_conv_algo_workspace(conv2d_algos[algo], s);
}

static tt_status family_run(tt_backend *be, tt_conv_algo algo, tt_conv_dir dir, tt_mem out,
                            const tt_conv_io *io, const conv2d_shape *s, tt_mem ws,
                            int accumulate)
{
    const tt_conv_algo_impl *impl = conv2d_algos[algo];
    switch (dir) {
    case TT_CONV_DIR_FORWARD:
        return impl->forward(be, out, io->inp, io->weight, io->bias, s, ws, accumulate);
    case TT_CONV_DIR_BACKWARD_DATA:
        return impl->backward_data(be, out, io->dout, io->weight, s, ws, accumulate);
    default:
        return impl->backward_weight(be, out, io->dout, io->inp, s, ws);
    }
}

static const char *family_program(tt_conv_algo algo, const tt_conv_shape *s)
{
    (void)s;
    const tt_conv_algo_impl *impl = tt_conv2d_algo_impl(algo);
    return impl && impl->program ? impl->program : "conv_direct";
}

static tt_conv_shape own_geometry(const tt_conv_shape *s) { return *s; }

static const tt_conv_family conv2d_family = {
    .name = "conv2d",
    .weight_layout = "(Cout, Cin/groups, kH, kW)",
    .geometry = own_geometry,
    .program = family_program,
    .row = tt_conv2d_algo_impl,
    .runs = family_runs,
    .can_win = family_can_win,
    .key = family_key,
    .workspace = family_workspace,
    .run = family_run,
};

/* A call of `d` (valid, its shape `s`) on the inputs in `io`. */
static tt_conv_call call_of(const tt_conv2d_desc *d, const conv2d_shape *s, tt_conv_io io,
                            tt_mem workspace)
{
    return (tt_conv_call){.family = &conv2d_family, .shape = s,
                          .want = d->algo, .no_input_grad = d->no_input_grad,
                          .io = io, .workspace = workspace,
                          .workspace_limit = d->workspace_limit};
}

/* The call of `d` with no buffers, for the questions asked of a desc
 * (algorithm, backend, workspace); 0 when the desc is invalid. */
static int query_of(const tt_conv2d_desc *d, conv2d_shape *s, tt_conv_call *call)
{
    tt_status status = tt_conv2d_shape(d, s);
    tt_status_free(status);
    if (status) return 0;
    *call = call_of(d, s, (tt_conv_io){.inp = {0}}, (tt_mem){0});
    return 1;
}

tt_conv_algo tt_conv2d_algo_for(const tt_conv2d_desc *desc, tt_conv_dir dir)
{
    return tt_conv2d_algo_on(NULL, desc, dir);
}

tt_conv_algo tt_conv2d_algo_on(const tt_backend *be, const tt_conv2d_desc *desc, tt_conv_dir dir)
{
    conv2d_shape s;
    tt_conv_call call;
    if (!query_of(desc, &s, &call) || (unsigned)dir >= TT_CONV_DIR_COUNT) return TT_CONV_ALGO_AUTO;
    return tt_conv_dispatch_known(be, &call, dir);
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
    TT_TRY(tt_conv_blocks_check(&d->blocks, d->algo));
    s->blocks = d->blocks;
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

int tt_conv2d_runs_on(const tt_backend *be, const tt_conv2d_desc *desc)
{
    conv2d_shape s;
    tt_conv_call call;
    return query_of(desc, &s, &call) && tt_conv_dispatch_runs_on(be, &call);
}

size_t tt_conv2d_workspace_bytes(const tt_conv2d_desc *desc)
{
    return tt_conv2d_workspace_bytes_on(NULL, desc);
}

size_t tt_conv2d_workspace_bytes_on(tt_backend *be, const tt_conv2d_desc *desc)
{
    conv2d_shape s;
    tt_conv_call call;
    return query_of(desc, &s, &call) ? tt_conv_dispatch_workspace(be, &call) : 0;
}

/* out = conv + bias, or out += conv (accumulate; no bias). */
static tt_status forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                         const tt_conv2d_desc *desc, tt_mem workspace, int accumulate)
{
    conv2d_shape s;
    TT_TRY(tt_conv2d_shape(desc, &s));
    tt_conv_algo algo;
    tt_conv_call call = call_of(desc, &s, (tt_conv_io){.inp = inp, .weight = weight, .bias = bias},
                                workspace);
    TT_TRY(tt_conv_check_forward(&call, out, accumulate));
    tt_conv_log_conv2d(be, desc, TT_CONV_DIR_FORWARD);
    tt_status status = tt_conv_dispatch(be, &call, TT_CONV_DIR_FORWARD, out, accumulate, &algo);
    if (status)
        return tt_error_prefix(status, DESC_FMT " forward (%s)", DESC_ARGS(desc),
                               tt_conv_algo_name(algo));
    return NULL;
}

tt_status tt_conv2d_verify(tt_backend *be, const tt_conv2d_desc *desc, tt_conv_dir dir,
                           tt_mem inp, tt_mem weight, tt_mem bias, tt_mem dout,
                           tt_conv_verdict *verdicts, int *checked)
{
    conv2d_shape s;
    TT_TRY(tt_conv2d_shape(desc, &s));
    tt_conv_call call = call_of(desc, &s, (tt_conv_io){inp, weight, bias, dout}, (tt_mem){0});
    tt_status status = tt_conv_dispatch_verify(be, &call, dir, verdicts, checked);
    if (status)
        return tt_error_prefix(status, DESC_FMT " %s: checking its algorithms", DESC_ARGS(desc),
                               tt_conv_dir_name(dir));
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

tt_status tt_conv2d_input_gradient(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                   const tt_conv2d_desc *desc, tt_mem workspace)
{
    if (!dinp.buffer)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "conv2d input gradient: dinp is missing");
    conv2d_shape s;
    TT_TRY(tt_conv2d_shape(desc, &s));
    tt_conv_algo algo;
    tt_conv_call call = call_of(desc, &s, (tt_conv_io){.weight = weight, .dout = dout}, workspace);
    TT_TRY(tt_conv_check_backward(&call, dinp, (tt_mem){0}, (tt_mem){0}));
    tt_conv_log_conv2d(be, desc, TT_CONV_DIR_BACKWARD_DATA);
    tt_status status = tt_conv_dispatch(be, &call, TT_CONV_DIR_BACKWARD_DATA, dinp, 0, &algo);
    if (status)
        return tt_error_prefix(status, DESC_FMT " input gradient (%s)", DESC_ARGS(desc),
                               tt_conv_algo_name(algo));
    return NULL;
}

tt_status tt_conv2d_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                             tt_mem dout, tt_mem inp, tt_mem weight, const tt_conv2d_desc *desc,
                             tt_mem workspace)
{
    conv2d_shape s;
    TT_TRY(tt_conv2d_shape(desc, &s));
    tt_conv_algo algo;
    tt_conv_call call = call_of(desc, &s, (tt_conv_io){.inp = inp, .weight = weight, .dout = dout},
                                workspace);
    TT_TRY(tt_conv_check_backward(&call, dinp, dweight, dbias));
    if (dinp.buffer) tt_conv_log_conv2d(be, desc, TT_CONV_DIR_BACKWARD_DATA);
    if (dweight.buffer) tt_conv_log_conv2d(be, desc, TT_CONV_DIR_BACKWARD_WEIGHT);
    tt_status status = tt_conv_dispatch_backward(be, &call, dinp, dweight, dbias, &algo);
    if (status)
        return tt_error_prefix(status, DESC_FMT " backward (%s)", DESC_ARGS(desc),
                               tt_conv_algo_name(algo));
    return NULL;
}

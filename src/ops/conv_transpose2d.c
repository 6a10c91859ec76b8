/*
 * conv_transpose2d: shape checks, algorithm dispatch, and im2col + GEMM.
 *
 * A transposed convolution is conv2d's input gradient, so its columns are
 * those of the OUTPUT image (Cout * kH * kW, H * W): one image n at a time,
 * per group g (K = Cout/groups * kH * kW, P = H * W):
 *   forward   cols_g (K, P) = weight_gᵀ (K, Cin/g) . inp[n]_g (Cin/g, P)
 *             out[n] = bias (pre-filled, or zero) + col2im(cols)   (col2im adds)
 *   backward  cols = im2col(dout[n])
 *             dinp[n]_g += weight_g (Cin/g, K) . cols_g (K, P)
 *             dweight_g += inp[n]_g (Cin/g, P) . cols_gᵀ (P, K)
 *             dbias += sum over n and the output plane of dout
 * A 1x1 stride-1 unpadded kernel uses the output image as its own columns.
 */
#include "ops/conv_transpose2d.h"

#include <limits.h>

#include "core/status.h"
#include "ops/util.h"

/* The desc with defaults applied and the derived sizes, all in size_t. */
typedef struct convt_shape {
    size_t batch, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups;
    size_t oh, ow;
    size_t cin_g, cout_g;   /* channels per group */
    size_t k;               /* cout_g * kh * kw: one group's column rows */
    size_t in_plane;        /* h * w: the columns' width */
    size_t out_plane;       /* oh * ow */
    int image_is_columns;   /* 1x1, stride 1, no padding */
} convt_shape;

/* One algorithm: workspace size, forward (bias included), backward of the
 * input and the weight (dbias is done by the caller). */
typedef struct convt_algo_impl {
    size_t (*workspace_bytes)(const convt_shape *s);
    tt_status (*forward)(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                         const convt_shape *s, tt_mem ws);
    tt_status (*backward)(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dout, tt_mem inp,
                          tt_mem weight, const convt_shape *s, tt_mem ws);
} convt_algo_impl;

/* ---- im2col + GEMM ------------------------------------------------------ */

static size_t im2col_workspace_bytes(const convt_shape *s)
{
    return s->image_is_columns ? 0 : s->cout * s->kh * s->kw * s->in_plane * sizeof(float);
}

/* The output image (Cout, OH, OW) and its columns (Cout * kH * kW, H * W). */
static tt_im2col output_geometry(const convt_shape *s, tt_mem image, tt_mem cols)
{
    return (tt_im2col){.channels = s->cout, .height = s->oh, .width = s->ow,
                       .kernel_h = s->kh, .kernel_w = s->kw, .pad_h = s->ph, .pad_w = s->pw,
                       .stride_h = s->sh, .stride_w = s->sw,
                       .dilation_h = s->dh, .dilation_w = s->dw, .im = image, .col = cols};
}

static tt_status im2col_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                tt_mem bias, const convt_shape *s, tt_mem ws)
{
    if (bias.buffer)
        TT_TRY(tt_conv_bias_fill(be, out, bias, s->batch, s->cout, s->out_plane));
    else
        TT_TRY(tt_fill(be, out, 0.0f, s->batch * s->cout * s->out_plane));
    for (size_t n = 0; n < s->batch; n++) {
        tt_mem out_n = tt_mem_f32(out, n * s->cout * s->out_plane);
        tt_gemm gemm = {.trans_a = 1, .m = s->k, .n = s->in_plane, .k = s->cin_g,
                        .alpha = 1.0f, .beta = s->image_is_columns ? 1.0f : 0.0f,
                        .a = weight, .lda = s->k, .stride_a = s->cin_g * s->k,
                        .b = tt_mem_f32(inp, n * s->cin * s->in_plane), .ldb = s->in_plane,
                        .stride_b = s->cin_g * s->in_plane,
                        .c = s->image_is_columns ? out_n : ws, .ldc = s->in_plane,
                        .stride_c = s->k * s->in_plane, .batch = s->groups};
        TT_TRY(tt_gemm_run(be, &gemm));
        if (!s->image_is_columns) {
            tt_im2col g = output_geometry(s, out_n, ws);
            TT_TRY(tt_col2im_run(be, &g));
        }
    }
    return NULL;
}

static tt_status im2col_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dout,
                                 tt_mem inp, tt_mem weight, const convt_shape *s, tt_mem ws)
{
    for (size_t n = 0; n < s->batch; n++) {
        tt_mem cols = tt_mem_f32(dout, n * s->cout * s->out_plane);
        if (!s->image_is_columns) {
            tt_im2col g = output_geometry(s, cols, ws);
            TT_TRY(tt_im2col_run(be, &g));
            cols = ws;
        }
        if (dinp.buffer) {
            /* dinp_g (Cin/g, P) += weight_g (Cin/g, K) . cols_g (K, P) */
            tt_gemm gemm = {.m = s->cin_g, .n = s->in_plane, .k = s->k,
                            .alpha = 1.0f, .beta = 1.0f,
                            .a = weight, .lda = s->k, .stride_a = s->cin_g * s->k,
                            .b = cols, .ldb = s->in_plane, .stride_b = s->k * s->in_plane,
                            .c = tt_mem_f32(dinp, n * s->cin * s->in_plane), .ldc = s->in_plane,
                            .stride_c = s->cin_g * s->in_plane, .batch = s->groups};
            TT_TRY(tt_gemm_run(be, &gemm));
        }
        if (dweight.buffer) {
            /* dweight_g (Cin/g, K) += inp_g (Cin/g, P) . cols_gᵀ (P, K) */
            tt_gemm gemm = {.trans_b = 1, .m = s->cin_g, .n = s->k, .k = s->in_plane,
                            .alpha = 1.0f, .beta = 1.0f,
                            .a = tt_mem_f32(inp, n * s->cin * s->in_plane), .lda = s->in_plane,
                            .stride_a = s->cin_g * s->in_plane,
                            .b = cols, .ldb = s->in_plane, .stride_b = s->k * s->in_plane,
                            .c = dweight, .ldc = s->k, .stride_c = s->cin_g * s->k,
                            .batch = s->groups};
            TT_TRY(tt_gemm_run(be, &gemm));
        }
    }
    return NULL;
}

/* ---- dispatch ----------------------------------------------------------- */

static const convt_algo_impl convt_algos[] = {
    [TT_CONV_ALGO_AUTO] = {NULL, NULL, NULL}, /* resolved by pick_algo() */
    [TT_CONV_ALGO_IM2COL_GEMM] = {im2col_workspace_bytes, im2col_forward, im2col_backward},
};
_Static_assert(sizeof convt_algos / sizeof convt_algos[0] == TT_CONV_ALGO_COUNT,
               "conv_transpose2d needs one row per tt_conv_algo");

static tt_conv_algo pick_algo(const tt_conv_transpose2d_desc *d)
{
    if (d->algo != TT_CONV_ALGO_AUTO) return d->algo;
    return TT_CONV_ALGO_IM2COL_GEMM; /* the only one so far */
}

#define DESC_FMT "conv_transpose2d (N=%d Cin=%d %dx%d -> Cout=%d, kernel %dx%d stride %dx%d " \
                 "pad %dx%d output pad %dx%d dilation %dx%d groups %d)"
#define DESC_ARGS(d)                                                                      \
    (d)->batch, (d)->in_channels, (d)->in_h, (d)->in_w, (d)->out_channels, (d)->kernel_h,  \
        (d)->kernel_w, (d)->stride_h, (d)->stride_w, (d)->pad_h, (d)->pad_w,               \
        (d)->output_pad_h, (d)->output_pad_w, (d)->dilation_h ? (d)->dilation_h : 1,       \
        (d)->dilation_w ? (d)->dilation_w : 1, (d)->groups ? (d)->groups : 1

static tt_status shape_of(const tt_conv_transpose2d_desc *d, convt_shape *s)
{
    *s = (convt_shape){0};
    int groups = d->groups ? d->groups : 1;
    int dh = d->dilation_h ? d->dilation_h : 1, dw = d->dilation_w ? d->dilation_w : 1;
    if (d->batch < 1 || d->in_channels < 1 || d->in_h < 1 || d->in_w < 1 ||
        d->out_channels < 1 || d->kernel_h < 1 || d->kernel_w < 1 || d->stride_h < 1 ||
        d->stride_w < 1 || d->pad_h < 0 || d->pad_w < 0 || d->output_pad_h < 0 ||
        d->output_pad_w < 0 || dh < 1 || dw < 1 || groups < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            DESC_FMT ": sizes, kernel, stride and dilation must be >= 1 and "
                                     "paddings >= 0",
                            DESC_ARGS(d));
    if (d->output_pad_h >= d->stride_h || d->output_pad_w >= d->stride_w)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            DESC_FMT ": output padding must be smaller than the stride",
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
    /* OH + 2 pad = (H - 1) stride + span + output pad, so OH >= 1 needs: */
    size_t full_h = (s->h - 1) * s->sh + s->dh * (s->kh - 1) + 1 + (size_t)d->output_pad_h;
    size_t full_w = (s->w - 1) * s->sw + s->dw * (s->kw - 1) + 1 + (size_t)d->output_pad_w;
    if (full_h <= 2 * s->ph || full_w <= 2 * s->pw)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            DESC_FMT ": the padding crops the whole output", DESC_ARGS(d));
    s->oh = full_h - 2 * s->ph, s->ow = full_w - 2 * s->pw;
    s->cin_g = s->cin / s->groups, s->cout_g = s->cout / s->groups;
    s->k = s->cout_g * s->kh * s->kw;
    s->in_plane = s->h * s->w, s->out_plane = s->oh * s->ow;
    s->image_is_columns = s->kh == 1 && s->kw == 1 && s->sh == 1 && s->sw == 1 && s->ph == 0 &&
                          s->pw == 0;
    /* OpenCL kernels (ours and CLBlast's) index with int */
    if (s->batch * s->cin * s->in_plane > INT_MAX || s->batch * s->cout * s->out_plane > INT_MAX ||
        s->cout * s->kh * s->kw * s->in_plane > INT_MAX)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            DESC_FMT ": a tensor or the columns exceed 2^31 elements; use a "
                                     "smaller micro-batch or tile",
                            DESC_ARGS(d));
    if (!convt_algos[pick_algo(d)].forward)
        return tt_error_new(TT_ERR_UNSUPPORTED, DESC_FMT ": algorithm %s is not implemented",
                            DESC_ARGS(d), tt_conv_algo_name(pick_algo(d)));
    return NULL;
}

tt_status tt_conv_transpose2d_check(const tt_conv_transpose2d_desc *desc)
{
    convt_shape s;
    return shape_of(desc, &s);
}

int tt_conv_transpose2d_out_h(const tt_conv_transpose2d_desc *desc)
{
    convt_shape s;
    tt_status status = shape_of(desc, &s);
    tt_status_free(status);
    return status ? 0 : (int)s.oh;
}

int tt_conv_transpose2d_out_w(const tt_conv_transpose2d_desc *desc)
{
    convt_shape s;
    tt_status status = shape_of(desc, &s);
    tt_status_free(status);
    return status ? 0 : (int)s.ow;
}

size_t tt_conv_transpose2d_workspace_bytes(const tt_conv_transpose2d_desc *desc)
{
    convt_shape s;
    tt_status status = shape_of(desc, &s);
    tt_status_free(status);
    return status ? 0 : convt_algos[pick_algo(desc)].workspace_bytes(&s);
}

tt_status tt_conv_transpose2d_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                      tt_mem bias, const tt_conv_transpose2d_desc *desc,
                                      tt_mem workspace)
{
    convt_shape s;
    TT_TRY(shape_of(desc, &s));
    const char *op = "conv_transpose2d forward";
    TT_TRY(tt_conv_check_mem(op, "out (N, Cout, OH, OW)", out, s.batch * s.cout * s.out_plane));
    TT_TRY(tt_conv_check_mem(op, "inp (N, Cin, H, W)", inp, s.batch * s.cin * s.in_plane));
    TT_TRY(tt_conv_check_mem(op, "weight (Cin, Cout/groups, kH, kW)", weight, s.cin * s.k));
    if (bias.buffer) TT_TRY(tt_conv_check_mem(op, "bias (Cout)", bias, s.cout));

    const convt_algo_impl *impl = &convt_algos[pick_algo(desc)];
    tt_conv_workspace ws;
    TT_TRY(tt_conv_workspace_acquire(be, op, "conv_transpose2d.columns", workspace,
                                     impl->workspace_bytes(&s), &ws));
    tt_status status = impl->forward(be, out, inp, weight, bias, &s, ws.mem);
    tt_conv_workspace_release(&ws);
    if (status) return tt_error_prefix(status, DESC_FMT " forward", DESC_ARGS(desc));
    return NULL;
}

tt_status tt_conv_transpose2d_backward(tt_backend *be, tt_mem dinp, tt_mem dweight,
                                       tt_mem dbias, tt_mem dout, tt_mem inp, tt_mem weight,
                                       const tt_conv_transpose2d_desc *desc, tt_mem workspace)
{
    convt_shape s;
    TT_TRY(shape_of(desc, &s));
    const char *op = "conv_transpose2d backward";
    TT_TRY(tt_conv_check_mem(op, "dout (N, Cout, OH, OW)", dout, s.batch * s.cout * s.out_plane));
    if (dinp.buffer) {
        TT_TRY(tt_conv_check_mem(op, "dinp (N, Cin, H, W)", dinp, s.batch * s.cin * s.in_plane));
        TT_TRY(tt_conv_check_mem(op, "weight (Cin, Cout/groups, kH, kW)", weight, s.cin * s.k));
    }
    if (dweight.buffer) {
        TT_TRY(tt_conv_check_mem(op, "dweight (Cin, Cout/groups, kH, kW)", dweight,
                                 s.cin * s.k));
        TT_TRY(tt_conv_check_mem(op, "inp (N, Cin, H, W)", inp, s.batch * s.cin * s.in_plane));
    }
    if (dbias.buffer) TT_TRY(tt_conv_check_mem(op, "dbias (Cout)", dbias, s.cout));

    tt_status status = NULL;
    tt_conv_workspace ws = {{0}, NULL};
    if (dbias.buffer)
        TT_CHECK(tt_conv_bias_backward(be, dbias, dout, s.batch, s.cout, s.out_plane));
    if (dinp.buffer || dweight.buffer) {
        const convt_algo_impl *impl = &convt_algos[pick_algo(desc)];
        TT_CHECK(tt_conv_workspace_acquire(be, op, "conv_transpose2d.columns", workspace,
                                           impl->workspace_bytes(&s), &ws));
        TT_CHECK(impl->backward(be, dinp, dweight, dout, inp, weight, &s, ws.mem));
    }
cleanup:
    tt_conv_workspace_release(&ws);
    if (status) return tt_error_prefix(status, DESC_FMT " backward", DESC_ARGS(desc));
    return NULL;
}

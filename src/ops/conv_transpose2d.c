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
 *
 * DIRECT on a kernel that tiles the output (kernel = stride, no padding:
 * the UNet's up-convolution) runs its own kernels (convt_tiles.c).  The
 * other algorithms, and DIRECT on other shapes, run through conv2d's rows on
 * the conv2d geometry
 * whose input is this op's output (as_conv2d): forward = that conv2d's
 * backward-data (into the bias-filled or zeroed output), backward-data =
 * its forward (accumulating), backward-weight = its backward-weight with
 * the roles of inp and dout swapped.  Resolution per direction is the
 * shared tt_conv_dispatch's, as for conv2d (the desc's, else autotuned;
 * IM2COL_GEMM where the algorithm does not run it).
 */
#include "ops/conv_transpose2d.h"

#include <limits.h>
#include <stdio.h>

#include "core/status.h"
#include "ops/conv_autotune.h"
#include "ops/conv_log.h"
#include "ops/convt_tiles.h"
#include "ops/device_traits.h"
#include "ops/util.h"

/* The desc with defaults applied and the derived sizes, in the fields of
 * tt_conv_shape: k = Cout/groups * kH * kW (one group's rows of the output
 * image's columns), in_plane = H * W (the columns' width). */
typedef tt_conv_shape convt_shape;

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

/* The conv2d geometry whose input gradient this transposed convolution is. */
static tt_conv_shape as_conv2d(const convt_shape *s)
{
    tt_conv_shape c = {0};
    c.batch = s->batch, c.cin = s->cout, c.h = s->oh, c.w = s->ow, c.cout = s->cin;
    c.kh = s->kh, c.kw = s->kw, c.sh = s->sh, c.sw = s->sw, c.ph = s->ph, c.pw = s->pw;
    c.dh = s->dh, c.dw = s->dw, c.groups = s->groups, c.oh = s->h, c.ow = s->w;
    c.cin_g = s->cout_g, c.cout_g = s->cin_g, c.k = c.cin_g * c.kh * c.kw;
    c.in_plane = s->out_plane, c.out_plane = s->in_plane;
    c.image_is_columns = s->image_is_columns;
    c.blocks = s->blocks;
    return c;
}

/* Every algorithm's row: NULL runs this file's im2col + GEMM, else the
 * conv2d row it runs through (NULL for AUTO too, which resolve() picks). */
static const tt_conv_algo_impl *convt_via(tt_conv_algo algo)
{
    return algo == TT_CONV_ALGO_IM2COL_GEMM ? NULL : tt_conv2d_algo_impl(algo);
}

/* conv2d's direction that computes this op's `dir`. */
static tt_conv_dir conv2d_dir(tt_conv_dir dir)
{
    return dir == TT_CONV_DIR_FORWARD         ? TT_CONV_DIR_BACKWARD_DATA
           : dir == TT_CONV_DIR_BACKWARD_DATA ? TT_CONV_DIR_FORWARD
                                              : TT_CONV_DIR_BACKWARD_WEIGHT;
}

/* DIRECT on a kernel that tiles the output runs convt_tiles.c's kernels,
 * DIRECT_W8 their 8-wide ones (kernels 2 wide); DIRECT_W16 their 16-lane
 * forward (kernels 2 wide, rows of at least 16 input columns:
 * opencl/convt_tiles_w16.cl), the other directions not. */
static int tiles(tt_conv_algo algo, const convt_shape *s, tt_convt_tiles *g)
{
    int w16 = algo == TT_CONV_ALGO_DIRECT_W16 && s->kw == 2 && s->w >= 16;
    int w8 = algo == TT_CONV_ALGO_DIRECT_W8 && s->kw == 2;
    if ((algo != TT_CONV_ALGO_DIRECT && !w16 && !w8) || s->kh != s->sh || s->kw != s->sw || s->ph ||
        s->pw || s->dh != 1 || s->dw != 1 || s->groups != 1 || s->oh != s->h * s->sh ||
        s->ow != s->w * s->sw)
        return 0;
    if (g) *g = (tt_convt_tiles){s->batch, s->cin, s->h, s->w, s->cout, s->kh, s->kw, w8};
    return 1;
}

static int convt_runs(tt_conv_algo algo, const convt_shape *s, tt_conv_dir dir)
{
    if (algo == TT_CONV_ALGO_IM2COL_GEMM) return 1;
    if (tiles(algo, s, NULL)) return algo != TT_CONV_ALGO_DIRECT_W16 || dir == TT_CONV_DIR_FORWARD;
    tt_conv_shape c = as_conv2d(s);
    const tt_conv_algo_impl *impl = convt_via(algo);
    return impl && tt_conv_algo_runs(impl, &c, conv2d_dir(dir));
}

/* Tiles: the 8-wide ones on CPUs where the backend has them (OpenCL's),
 * the scalar ones where those do not run, the 16-lane forward always;
 * im2col_gemm as conv2d's; through
 * conv2d's rows, as that row says of the conv2d geometry. */
static int convt_can_win(const tt_backend *be, tt_conv_algo algo, const convt_shape *s,
                         tt_conv_dir dir)
{
    if (algo == TT_CONV_ALGO_IM2COL_GEMM) return tt_conv_im2col_can_win(be);
    tt_convt_tiles g;
    if (tiles(algo, s, &g)) {
        g.w8 = 1; /* the 8-wide tiles' program, whichever algo asks */
        int w8 = tt_device_traits_of(be).w8 &&
                 tt_backend_has_program(be, tt_convt_tiles_program(&g, 0));
        return algo == TT_CONV_ALGO_DIRECT_W8 ? w8
               : algo == TT_CONV_ALGO_DIRECT  ? !(w8 && s->kw == 2)
                                              : 1;
    }
    const tt_conv_algo_impl *impl = convt_via(algo);
    tt_conv_shape c = as_conv2d(s);
    return !impl || !impl->can_win || impl->can_win(be, &c, conv2d_dir(dir));
}

static size_t algo_workspace(tt_conv_algo algo, const convt_shape *s)
{
    if (algo == TT_CONV_ALGO_IM2COL_GEMM) return im2col_workspace_bytes(s);
    if (tiles(algo, s, NULL)) return 0;
    tt_conv_shape c = as_conv2d(s);
    return tt_conv_algo_workspace(convt_via(algo), &c);
}

/* Runs `dir` with `algo` (which runs it) into `out` (conv_algo.h). */
static tt_status family_run(tt_backend *be, tt_conv_algo algo, tt_conv_dir dir, tt_mem out,
                            const tt_conv_io *io, const convt_shape *s, tt_mem ws,
                            int accumulate)
{
    /* conv_transpose2d has no adding forward; its input gradient adds
     * (accumulate) or overwrites, as conv2d's */
    tt_mem inp = io->inp, weight = io->weight, bias = io->bias, dout = io->dout;
    int adds_only = algo == TT_CONV_ALGO_IM2COL_GEMM || tiles(algo, s, NULL);
    if (dir == TT_CONV_DIR_BACKWARD_DATA && adds_only)
        TT_TRY(tt_conv_clear_input(be, out, s, accumulate));
    if (algo == TT_CONV_ALGO_IM2COL_GEMM) {
        if (dir == TT_CONV_DIR_FORWARD) return im2col_forward(be, out, inp, weight, bias, s, ws);
        if (dir == TT_CONV_DIR_BACKWARD_DATA)
            return im2col_backward(be, out, (tt_mem){0}, dout, inp, weight, s, ws);
        return im2col_backward(be, (tt_mem){0}, out, dout, inp, weight, s, ws);
    }
    tt_convt_tiles g;
    if (tiles(algo, s, &g)) {
        if (dir == TT_CONV_DIR_FORWARD)
            return tt_convt_tiles_forward(be, out, inp, weight, bias, &g,
                                          algo == TT_CONV_ALGO_DIRECT_W16);
        if (dir == TT_CONV_DIR_BACKWARD_DATA)
            return tt_convt_tiles_backward_data(be, out, dout, weight, &g);
        return tt_convt_tiles_backward_weight(be, out, dout, inp, &g);
    }
    const tt_conv_algo_impl *impl = convt_via(algo);
    tt_conv_shape c = as_conv2d(s);
    switch (dir) {
    case TT_CONV_DIR_FORWARD: /* over the bias, or over nothing */
        if (bias.buffer) TT_TRY(tt_conv_bias_fill(be, out, bias, s->batch, s->cout, s->out_plane));
        return impl->backward_data(be, out, inp, weight, &c, ws, bias.buffer != NULL);
    case TT_CONV_DIR_BACKWARD_DATA:
        return impl->forward(be, out, dout, weight, (tt_mem){0}, &c, ws, accumulate);
    default:
        return impl->backward_weight(be, out, inp, dout, &c, ws);
    }
}

/* The autotuner's key of one direction of a shape. */
static void family_key(const convt_shape *s, tt_conv_dir dir, char *key, size_t size)
{
    snprintf(key, size,
             "conv_transpose2d %s N%zu C%zu %zux%zu -> C%zu %zux%zu k%zux%zu s%zux%zu p%zux%zu "
             "d%zux%zu g%zu",
             tt_conv_dir_name(dir), s->batch, s->cin, s->h, s->w, s->cout, s->oh, s->ow, s->kh,
             s->kw, s->sh, s->sw, s->ph, s->pw, s->dh, s->dw, s->groups);
}

/* A tiling shape runs convt_tiles.c's kernels (DIRECT_W8 its 8-wide ones,
 * DIRECT_W16 its 16-lane forward, each a program of its own), anything
 * else conv2d's rows. */
static const char *family_program(tt_conv_algo algo, const tt_conv_shape *s)
{
    tt_convt_tiles g;
    if (tiles(algo, s, &g)) return tt_convt_tiles_program(&g, algo == TT_CONV_ALGO_DIRECT_W16);
    const tt_conv_algo_impl *impl = tt_conv2d_algo_impl(algo);
    return impl && impl->program ? impl->program : "conv_direct";
}

static const tt_conv_family convt_family = {
    .name = "conv_transpose2d",
    .weight_layout = "(Cin, Cout/groups, kH, kW)",
    .geometry = as_conv2d,
    .transposed = 1,
    .program = family_program,
    .row = tt_conv2d_algo_impl, /* its im2col needs what conv2d's does */
    .runs = convt_runs,
    .can_win = convt_can_win,
    .key = family_key,
    .workspace = algo_workspace,
    .run = family_run,
};

/* A call of `d` (valid, its shape `s`) on the inputs in `io`. */
static tt_conv_call call_of(const tt_conv_transpose2d_desc *d, const convt_shape *s,
                            tt_conv_io io, tt_mem workspace)
{
    return (tt_conv_call){.family = &convt_family, .shape = s,
                          .want = d->algo, .io = io, .workspace = workspace,
                          .workspace_limit = d->workspace_limit};
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
    TT_TRY(tt_conv_blocks_check(&d->blocks, d->algo));
    s->blocks = d->blocks;
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

/* The call of `d` with no buffers, for the questions asked of a desc
 * (backend, workspace); 0 when the desc is invalid. */
static int query_of(const tt_conv_transpose2d_desc *d, convt_shape *s, tt_conv_call *call)
{
    tt_status status = shape_of(d, s);
    tt_status_free(status);
    if (status) return 0;
    *call = call_of(d, s, (tt_conv_io){.inp = {0}}, (tt_mem){0});
    return 1;
}

tt_conv_algo tt_conv_transpose2d_algo_for(const tt_conv_transpose2d_desc *desc, tt_conv_dir dir)
{
    convt_shape s;
    tt_conv_call call;
    if (!query_of(desc, &s, &call) || (unsigned)dir >= TT_CONV_DIR_COUNT) return TT_CONV_ALGO_AUTO;
    return tt_conv_dispatch_known(NULL, &call, dir);
}

int tt_conv_transpose2d_runs_on(const tt_backend *be, const tt_conv_transpose2d_desc *desc)
{
    convt_shape s;
    tt_conv_call call;
    return query_of(desc, &s, &call) && tt_conv_dispatch_runs_on(be, &call);
}

size_t tt_conv_transpose2d_workspace_bytes(const tt_conv_transpose2d_desc *desc)
{
    return tt_conv_transpose2d_workspace_bytes_on(NULL, desc);
}

size_t tt_conv_transpose2d_workspace_bytes_on(tt_backend *be, const tt_conv_transpose2d_desc *desc)
{
    convt_shape s;
    tt_conv_call call;
    return query_of(desc, &s, &call) ? tt_conv_dispatch_workspace(be, &call) : 0;
}

tt_status tt_conv_transpose2d_verify(tt_backend *be, const tt_conv_transpose2d_desc *desc,
                                     tt_conv_dir dir, tt_mem inp, tt_mem weight, tt_mem bias,
                                     tt_mem dout, tt_conv_verdict *verdicts, int *checked)
{
    convt_shape s;
    TT_TRY(shape_of(desc, &s));
    tt_conv_call call = call_of(desc, &s, (tt_conv_io){inp, weight, bias, dout}, (tt_mem){0});
    tt_status status = tt_conv_dispatch_verify(be, &call, dir, verdicts, checked);
    if (status)
        return tt_error_prefix(status, DESC_FMT " %s: checking its algorithms", DESC_ARGS(desc),
                               tt_conv_dir_name(dir));
    return NULL;
}

tt_status tt_conv_transpose2d_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                      tt_mem bias, const tt_conv_transpose2d_desc *desc,
                                      tt_mem workspace)
{
    convt_shape s;
    TT_TRY(shape_of(desc, &s));
    tt_conv_algo algo;
    tt_conv_call call = call_of(desc, &s, (tt_conv_io){.inp = inp, .weight = weight, .bias = bias},
                                workspace);
    TT_TRY(tt_conv_check_forward(&call, out, 0));
    tt_conv_log_transposed(be, desc, TT_CONV_DIR_FORWARD);
    tt_status status = tt_conv_dispatch(be, &call, TT_CONV_DIR_FORWARD, out, 0, &algo);
    if (status)
        return tt_error_prefix(status, DESC_FMT " forward (%s)", DESC_ARGS(desc),
                               tt_conv_algo_name(algo));
    return NULL;
}

tt_status tt_conv_transpose2d_backward(tt_backend *be, tt_mem dinp, tt_mem dweight,
                                       tt_mem dbias, tt_mem dout, tt_mem inp, tt_mem weight,
                                       const tt_conv_transpose2d_desc *desc, tt_mem workspace)
{
    convt_shape s;
    TT_TRY(shape_of(desc, &s));
    tt_conv_algo algo;
    tt_conv_call call = call_of(desc, &s, (tt_conv_io){.inp = inp, .weight = weight, .dout = dout},
                                workspace);
    TT_TRY(tt_conv_check_backward(&call, dinp, dweight, dbias));
    if (dinp.buffer) tt_conv_log_transposed(be, desc, TT_CONV_DIR_BACKWARD_DATA);
    if (dweight.buffer) tt_conv_log_transposed(be, desc, TT_CONV_DIR_BACKWARD_WEIGHT);
    tt_status status = tt_conv_dispatch_backward(be, &call, dinp, dweight, dbias, &algo);
    if (status)
        return tt_error_prefix(status, DESC_FMT " backward (%s)", DESC_ARGS(desc),
                               tt_conv_algo_name(algo));
    return NULL;
}

/*
 * The IMPLICIT_GEMM convolution algorithm (opencl/conv_igemm.cl,
 * shaders/conv_igemm/): every direction of every shape (groups, stride,
 * padding, dilation) as tiled GEMMs whose im2col operand each work-group
 * gathers from the image into local memory, so there is no column buffer.
 *
 *   forward          one launch: (Cout/G x N OH OW) tiles per group
 *   backward data    the gather form over dinp's pixels, one launch per
 *                    stride phase (y mod sH, x mod sW) that a tap reaches:
 *                    each pixel is written by one work-item, no atomics
 *   backward weight  (Cout/G x Cin/G kH kW) tiles, the reduction over N OH
 *                    OW pixels split into slices (by the shape alone, so
 *                    the sums are the same every run and on every device
 *                    with these kernels); several slices write partial
 *                    sums to the workspace, which conv_igemm_sum_slices adds
 *                    into dweight in slice order
 *
 * On a device that ends long-looping invocations (lavapipe; device_traits.h
 * loop_limit) a long reduction (K, a slice's pixels) runs in several
 * launches, each adding into what the one before wrote.  Workspace: none,
 * but the weight gradient's partial sums when a shape has more than one
 * slice.  Tile sizes per device type (device_traits.h):
 * CPUs a float16 of columns by 8 rows per work-item, chunks of 32, up to
 * 8 x 16 work-items (on PoCL the products then run from registers with one
 * vector load per 8 multiply-adds, and the gathers are shared by 64 rows);
 * GPUs 4 x 4 per work-item in 16 x 16 work-groups; others (lavapipe too,
 * whose traits ask for scalar kernels) 4 x 4 in 8 x 8;
 * a desc's blocks (igemm_rm .. igemm_nt) override them.  Work-groups are
 * narrowed to the product (no more work-items along a side than it needs),
 * the device's limits and half its local memory; never to a subgroup
 * width.
 */
#include <stdio.h>

#include "core/status.h"
#include "ops/conv_algo.h"
#include "ops/device_traits.h"

/* One kernel build's tile and its launch's work-group (see the top of
 * opencl/conv_igemm.cl): rm x rn outputs per work-item, bk of K per chunk,
 * mt x nt work-items (rows x columns). */
typedef struct igemm_tiles {
    size_t rm, rn, bk, mt, nt;
    char options[96];
} igemm_tiles;

/* The tile for `kernel`'s product of `rows` x `columns` on `be`'s device;
 * `fitted`: a work-group no larger than the product needs.  PoCL compiles a kernel
 * anew for every work-group size it is launched with (about a second
 * each, the weight gradient's several), so there every direction keeps
 * one size for every layer (fitted()): its products are large on the deep
 * layers it wins on, and on a small one the idle work-items only make a
 * loser slower. */
/* Halves the longer side of t's work-group until it has at most `most`
 * work-items. */
static void fit_group(igemm_tiles *t, size_t most)
{
    while (t->mt * t->nt > most && t->mt * t->nt > 1) {
        if (t->nt >= t->mt) t->nt /= 2;
        else t->mt /= 2;
    }
}

static igemm_tiles tiles_of(tt_backend *be, const char *kernel, const tt_conv_blocks *forced,
                            size_t rows, size_t columns, int fitted)
{
    tt_device_traits d = tt_device_traits_of(be);
    igemm_tiles t =
        d.opencl_cpu ? (igemm_tiles){.rm = 8, .rn = 16, .bk = 32, .mt = 8, .nt = 16}
        : d.gpu      ? (igemm_tiles){.rm = 4, .rn = 4, .bk = 16, .mt = 16, .nt = 16}
                     : (igemm_tiles){.rm = 4, .rn = 4, .bk = 8, .mt = 8, .nt = 8};
    if (forced->igemm_rm) /* all five, checked (tt_conv_blocks_check) */
        t = (igemm_tiles){.rm = (size_t)forced->igemm_rm, .rn = (size_t)forced->igemm_rn,
                          .bk = (size_t)forced->igemm_bk, .mt = (size_t)forced->igemm_mt,
                          .nt = (size_t)forced->igemm_nt};
    /* no more work-items along either side than it needs */
    while (fitted && t.mt > 1 && (t.mt / 2) * t.rm >= rows) t.mt /= 2;
    while (fitted && t.nt > 1 && (t.nt / 2) * t.rn >= columns) t.nt /= 2;
    fit_group(&t, tt_device_group_max(be));
    /* the two tiles in half the local memory: shorter chunks, then fewer
     * columns, then fewer rows */
    size_t local = be->device.local_mem_bytes ? be->device.local_mem_bytes : 16384;
    while (t.bk * (t.mt * t.rm + t.nt * t.rn) * sizeof(float) > local / 2) {
        if (t.bk > t.rn) t.bk /= 2;
        else if (t.nt > 1) t.nt /= 2;
        else if (t.mt > 1) t.mt /= 2;
        else break;
    }
    snprintf(t.options, sizeof t.options, "-DTT_IG_RM=%zu -DTT_IG_RN=%zu -DTT_IG_BK=%zu", t.rm,
             t.rn, t.bk);
    /* the kernel's own limit, which its registers can hold below the
     * device's (the build is the same: the work-group is no define) */
    fit_group(&t, tt_kernel_work_group_limit(be, "conv_igemm", kernel, t.options));
    return t;
}

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* Whether work-groups shrink to a product's rows and columns: not on an
 * OpenCL CPU, where each size is a compile of its own (tiles_of). */
static int fitted(const tt_backend *be) { return !tt_device_traits_of(be).opencl_cpu; }

/* The weight gradient's slices of the N OH OW pixels: one per
 * SLICE_PIXELS (or the desc's blocks.igemm_slice), at most SLICES_MAX, and
 * no more than keep the partial sums within SLICE_FLOATS_MAX; a function
 * of the shape alone. */
#define SLICE_PIXELS 4096
#define SLICES_MAX 64
#define SLICE_FLOATS_MAX ((size_t)4 << 20)

typedef struct igemm_slices {
    size_t count, len; /* slices, pixels each (the last may be short) */
} igemm_slices;

static igemm_slices slices_of(const tt_conv_shape *s)
{
    size_t pixels = s->batch * s->out_plane, floats = s->cout * s->k;
    size_t per = s->blocks.igemm_slice ? (size_t)s->blocks.igemm_slice : SLICE_PIXELS;
    size_t count = pixels / per;
    if (count > SLICES_MAX) count = SLICES_MAX;
    if (count * floats > SLICE_FLOATS_MAX) count = SLICE_FLOATS_MAX / floats;
    if (count < 1) count = 1;
    igemm_slices sl = {count, ceil_div(pixels, count)};
    sl.count = ceil_div(pixels, sl.len);
    return sl;
}

static size_t igemm_workspace_bytes(const tt_conv_shape *s)
{
    igemm_slices sl = slices_of(s);
    return sl.count > 1 ? sl.count * s->cout * s->k * sizeof(float) : 0;
}

#define GEOMETRY_ARGS(s)                                                                      \
    tt_arg_i32((int)(s)->batch), tt_arg_i32((int)(s)->cin), tt_arg_i32((int)(s)->h),           \
        tt_arg_i32((int)(s)->w), tt_arg_i32((int)(s)->cout), tt_arg_i32((int)(s)->oh),         \
        tt_arg_i32((int)(s)->ow), tt_arg_i32((int)(s)->kh), tt_arg_i32((int)(s)->kw),          \
        tt_arg_i32((int)(s)->sh), tt_arg_i32((int)(s)->sw), tt_arg_i32((int)(s)->ph),          \
        tt_arg_i32((int)(s)->pw), tt_arg_i32((int)(s)->dh), tt_arg_i32((int)(s)->dw),          \
        tt_arg_i32((int)(s)->groups)

/* The launch of a product of `rows` x `columns` per group (z: `depth`). */
typedef struct igemm_launch {
    size_t global[3], local[3];
    size_t a_bytes, b_bytes; /* the two local tiles */
} igemm_launch;

static igemm_launch launch_of(const igemm_tiles *t, size_t rows, size_t columns, size_t depth)
{
    size_t bm = t->mt * t->rm, bn = t->nt * t->rn;
    return (igemm_launch){.global = {ceil_div(columns, bn) * t->nt, ceil_div(rows, bm) * t->mt, depth},
                          .local = {t->nt, t->mt, 1},
                          .a_bytes = t->bk * bm * sizeof(float),
                          .b_bytes = t->bk * bn * sizeof(float)};
}

/* The images of one launch of the forward or the input gradient: its
 * pixel tiles (dimension 0) stay within 65535 work-groups, the least a
 * Vulkan device allows (OpenCL has no such limit; the split costs a
 * launch per chunk there too).  An image with more tiles than that is one
 * launch, which such a device refuses with an error naming the shader. */
#define MAX_GROUPS_X 65535

static size_t images_per_launch(const igemm_tiles *t, size_t pixels_per_image, size_t most)
{
    size_t images = MAX_GROUPS_X * t->nt * t->rn / (pixels_per_image ? pixels_per_image : 1);
    return images < 1 ? 1 : images < most ? images : most;
}

/* `s` for the images [n0, n0 + count). */
static tt_conv_shape images_of(const tt_conv_shape *s, size_t n0, size_t count)
{
    tt_conv_shape chunk = *s;
    chunk.batch = s->batch - n0 < count ? s->batch - n0 : count;
    return chunk;
}

/* The part of a reduction of `length` (K, or a slice's pixels) one launch
 * runs, each step of it `step_flops` over the launch: all of it, or
 * - on a device that ends long-looping invocations (device_traits.h
 *   loop_limit: lavapipe) as many chunks of BK as keep an invocation's loop
 *   iterations within half the limit (the other half for the loops around
 *   the chunks), counting every loop of a chunk as if the compiler
 *   unrolled none;
 * - on a GPU, as many as keep the launch within its cap on work
 *   (device_traits.h dispatch_flops).
 * A multiple of BK where it cuts. */
static size_t reduction_per_launch(const tt_backend *be, const igemm_tiles *t, size_t length,
                                   double step_flops)
{
    size_t span = tt_dispatch_units(be, step_flops, length), limit = tt_device_traits_of(be).loop_limit;
    if (limit) {
        size_t wg = t->mt * t->nt, a_step = wg >= t->bk ? wg / t->bk : 1;
        size_t per_chunk = 1 + ceil_div(t->bk, wg) * (1 + ceil_div(t->mt * t->rm, a_step)) +
                           ceil_div(t->bk, t->mt) * (1 + t->rn) + t->bk * (1 + t->rm * (1 + t->rn));
        size_t chunks = limit / 2 / per_chunk, within = (chunks ? chunks : 1) * t->bk;
        if (within < span) span = within;
    }
    return span >= length ? length : span > t->bk ? span / t->bk * t->bk : t->bk;
}

static tt_status igemm_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                               tt_mem bias, const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    (void)ws;
    igemm_tiles t = tiles_of(be, "conv_igemm_forward", &s->blocks, s->cout_g,
                             s->batch * s->out_plane, fitted(be));
    /* each image 2 Cout K per pixel, within the cap on a launch's work */
    double image_flops = 2.0 * (double)(s->cout * s->k * s->out_plane);
    size_t per = images_per_launch(&t, s->out_plane, tt_dispatch_units(be, image_flops, s->batch));
    size_t span = reduction_per_launch(be, &t, s->k, image_flops / (double)s->k * (double)per);
    tt_mem bias_mem = bias.buffer ? bias : weight; /* any valid buffer; unread */
    for (size_t n0 = 0; n0 < s->batch; n0 += per) {
        tt_conv_shape c = images_of(s, n0, per);
        igemm_launch l = launch_of(&t, s->cout_g, c.batch * s->out_plane, s->groups);
        /* the first part of K writes (or adds, as asked), the others add */
        for (size_t k0 = 0; k0 < s->k; k0 += span) {
            size_t k1 = s->k - k0 < span ? s->k : k0 + span;
            TT_TRY(tt_launch_kernel(
                be, "conv_igemm", "conv_igemm_forward", t.options, 3, l.global, l.local,
                TT_ARGS(tt_arg_mem(tt_mem_f32(out, n0 * s->cout * s->out_plane)),
                        tt_arg_mem(tt_mem_f32(inp, n0 * s->cin * s->in_plane)),
                        tt_arg_mem(weight), tt_arg_mem(bias_mem),
                        tt_arg_i32(bias.buffer != NULL && k0 == 0),
                        tt_arg_i32(accumulate || k0 > 0), GEOMETRY_ARGS(&c), tt_arg_i32((int)k0),
                        tt_arg_i32((int)k1), tt_arg_local(l.a_bytes), tt_arg_local(l.b_bytes))));
        }
    }
    return NULL;
}

/* The taps of kernel indices that reach pixel phase r along one axis
 * (as ig_phase_taps in opencl/conv_igemm.cl). */
static size_t phase_taps(size_t r, size_t stride, size_t pad, size_t dilation, size_t kernel)
{
    size_t first = 0, step = 1;
    while (first < kernel && (r + pad + stride * kernel * dilation - first * dilation) % stride)
        first++;
    while ((step * dilation) % stride) step++;
    return first < kernel ? (kernel - 1 - first) / step + 1 : 0;
}

static tt_status igemm_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                     const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    (void)ws;
    TT_TRY(tt_conv_clear_input(be, dinp, s, accumulate));
    size_t phase_pixels = ceil_div(s->h, s->sh) * ceil_div(s->w, s->sw); /* the largest phase's */
    igemm_tiles t = tiles_of(be, "conv_igemm_backward_data", &s->blocks, s->cin_g,
                             s->batch * phase_pixels, fitted(be));
    for (size_t ry = 0; ry < s->sh && ry < s->h; ry++)
        for (size_t rx = 0; rx < s->sw && rx < s->w; rx++) {
            /* K of the phase: Cout/G channels by the taps that reach it */
            size_t k = s->cout_g * phase_taps(ry, s->sh, s->ph, s->dh, s->kh) *
                       phase_taps(rx, s->sw, s->pw, s->dw, s->kw);
            double image_flops = 2.0 * (double)(s->cin * k * phase_pixels);
            size_t per = images_per_launch(&t, phase_pixels,
                                           tt_dispatch_units(be, image_flops, s->batch));
            size_t span = reduction_per_launch(be, &t, k, k ? image_flops / (double)k * (double)per : 0);
            for (size_t n0 = 0; n0 < s->batch; n0 += per) {
                tt_conv_shape c = images_of(s, n0, per);
                size_t pixels = c.batch * ceil_div(s->h - ry, s->sh) * ceil_div(s->w - rx, s->sw);
                igemm_launch l = launch_of(&t, s->cin_g, pixels, s->groups);
                for (size_t k0 = 0; k0 < k; k0 += span) /* none when no tap reaches the phase */
                    TT_TRY(tt_launch_kernel(
                        be, "conv_igemm", "conv_igemm_backward_data", t.options, 3, l.global,
                        l.local,
                        TT_ARGS(tt_arg_mem(tt_mem_f32(dinp, n0 * s->cin * s->in_plane)),
                                tt_arg_mem(tt_mem_f32(dout, n0 * s->cout * s->out_plane)),
                                tt_arg_mem(weight), GEOMETRY_ARGS(&c), tt_arg_i32((int)ry),
                                tt_arg_i32((int)rx), tt_arg_i32((int)k0),
                                tt_arg_i32((int)(k - k0 < span ? k : k0 + span)),
                                tt_arg_local(l.a_bytes), tt_arg_local(l.b_bytes))));
            }
        }
    return NULL;
}

static tt_status igemm_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                       const tt_conv_shape *s, tt_mem ws)
{
    igemm_tiles t = tiles_of(be, "conv_igemm_backward_weight", &s->blocks, s->cout_g, s->k,
                             fitted(be));
    igemm_slices sl = slices_of(s);
    igemm_launch l = launch_of(&t, s->cout_g, s->k, sl.count * s->groups);
    /* a pixel of every slice: 2 Cout K */
    size_t span = reduction_per_launch(be, &t, sl.len, 2.0 * (double)(s->cout * s->k * sl.count));
    tt_conv_workspace part = {0};
    TT_TRY(tt_conv_workspace_acquire(be, "conv_igemm.weight_slices", ws,
                                     igemm_workspace_bytes(s), &part));
    int one = sl.count == 1; /* straight into dweight */
    tt_status status = NULL;
    /* each slice's pixels in parts: the first writes its partial sums (adds,
     * into dweight), the others add */
    for (size_t q0 = 0; !status && q0 < sl.len; q0 += span)
        status = tt_launch_kernel(
            be, "conv_igemm", "conv_igemm_backward_weight", t.options, 3, l.global, l.local,
            TT_ARGS(tt_arg_mem(one ? dweight : part.mem), tt_arg_mem(dout), tt_arg_mem(inp),
                    tt_arg_i32((int)sl.len), tt_arg_i32(one || q0 > 0), GEOMETRY_ARGS(s),
                    tt_arg_i32((int)q0), tt_arg_i32((int)(sl.len - q0 < span ? sl.len : q0 + span)),
                    tt_arg_local(l.a_bytes), tt_arg_local(l.b_bytes)));
    if (!status && !one) {
        size_t count = s->cout * s->k;
        status = tt_launch_kernel(be, "conv_igemm", "conv_igemm_sum_slices", t.options, 1,
                                  (size_t[]){count}, NULL,
                                  TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(part.mem),
                                          tt_arg_i32((int)sl.count), tt_arg_i32((int)count)));
    }
    tt_conv_workspace_release(&part);
    return status;
}

const tt_conv_algo_impl tt_conv_igemm_impl = {
    .program = "conv_igemm",
    .tuned_on = TT_TUNED_ALL,
    .supports = NULL, /* every shape, every direction */
    .workspace_bytes = igemm_workspace_bytes,
    .forward = igemm_forward,
    .backward_data = igemm_backward_data,
    .backward_weight = igemm_backward_weight,
};

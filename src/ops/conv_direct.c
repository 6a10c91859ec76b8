/*
 * The DIRECT convolution algorithm (opencl/conv_direct.cl): forward,
 * backward-data and backward-weight as plain loops, groups = 1, any kernel,
 * stride, padding and dilation.  Meant for the small channel counts of the
 * UNet (3..128), where im2col's columns cost more than they save.
 *
 * Three variants of the kernels, chosen per device type (device_traits.h):
 *   tiled   GPUs: the forward stages input tiles and the block's weights in
 *           local memory (global reads are what costs there); backward as
 *           scalar
 *   w8      CPUs (PoCL), stride 1 along W: 8 columns per work-item as float8,
 *           so the SIMD units are used whatever the runtime vectorises; the
 *           UNet's 3x3 (stride 1, padding 1) has kernels of its own
 *           (opencl/conv_direct_k3.cl, OpenCL's alone: Vulkan's CPU device
 *           runs the scalar shaders faster): the forward (also the input
 *           gradient, with flipped weights), staged through local memory
 *           from 512x512 planes up, and the weight gradient over bands of
 *           rows (the same with 16 lanes is an algorithm of its own,
 *           DIRECT_W16: conv_direct_w16.c)
 *   scalar  otherwise: one column per work-item, uniform control flow
 * $TT_CONV_DIRECT_VARIANT=scalar|tiled|w8 overrides the choice (tests use
 * it; w8 still needs stride 1 along W).  Work-group sizes come from the
 * device (CL_DEVICE_MAX_WORK_GROUP_SIZE and the local memory size), never
 * from an assumed warp width.
 */
#include <stdio.h>

#include "backend/loop_budget.h"
#include "core/knobs.h"
#include "core/status.h"
#include "ops/conv_algo.h"
#include "ops/conv_direct_k3.h"
#include "ops/device_traits.h"

/* Compile-time sizes of opencl/conv_direct.cl, which has no defaults of its
 * own: every launch passes these and the per-device ones below as -D
 * defines (direct_params.options). */
#define DIRECT_TAPS 9     /* kernel taps per work-group (backward weight) */
#define DIRECT_WCOB 4     /* output channels per work-group (backward weight) */
#define DIRECT_WG_MAX 256 /* cap of the backward-weight work-group */
#define DIRECT_COB 16     /* channels per work-item (scalar and tiled) */
#define DIRECT_COB_W8 8   /* channels per work-item (w8) */

/* Per-device launch parameters, derived from the device's limits. */
typedef struct direct_params {
    size_t cob, cib;    /* channels per work-item: forward (out), backward data (in) */
    size_t wg;          /* backward weight: a power of two */
    size_t tw, th;      /* tiled forward work-group */
    size_t row;         /* untiled kernels: work-items along W per group */
    size_t kxb;         /* backward weight (w8): kernel columns per work-item */
    char options[256];  /* the -D defines for the program: all of them */
} direct_params;

/* The variant for this device and shape (see the top of the file). */
static tt_kernel_variant variant_of(const tt_backend *be, const tt_conv_shape *s)
{
    tt_kernel_variant v = tt_device_traits_of(be).direct;
    return v == TT_KERNEL_W8 && s->sw != 1 ? TT_KERNEL_SCALAR : v;
}

static direct_params params_of(const tt_backend *be, const tt_conv_shape *s)
{
    direct_params p;
    /* channels per work-item, both directions: one block a variant, not
     * one a shape, so that a device builds the program once for every
     * layer (a layer with fewer channels computes the block's rest on
     * zeros, unstored); w8 keeps 8 float8 accumulators, which fill the
     * registers */
    p.cob = p.cib = variant_of(be, s) == TT_KERNEL_W8 ? DIRECT_COB_W8 : DIRECT_COB;
    size_t max_wg = be->device.max_work_group_size ? be->device.max_work_group_size : 1;
    size_t local_floats = (size_t)(be->device.local_mem_bytes / sizeof(float));
    p.wg = tt_pow2_floor(max_wg < DIRECT_WG_MAX ? max_wg : DIRECT_WG_MAX);
    while (p.wg > 1 && DIRECT_WCOB * DIRECT_TAPS * p.wg > local_floats / 2) p.wg /= 2;
    p.tw = max_wg < 16 ? max_wg : 16;
    p.th = max_wg / p.tw < 8 ? max_wg / p.tw : 8;
    if (p.th < 1) p.th = 1;
    p.row = tt_pow2_floor(max_wg < 64 ? max_wg : 64);
    p.kxb = s->kw < 3 ? s->kw : 3;
    snprintf(p.options, sizeof p.options,
             "-DTT_DIRECT_COB=%zu -DTT_DIRECT_CIB=%zu -DTT_DIRECT_WG=%zu -DTT_DIRECT_TW=%zu "
             "-DTT_DIRECT_TH=%zu -DTT_DIRECT_KXB=%zu -DTT_DIRECT_TAPS=%d -DTT_DIRECT_WCOB=%d",
             p.cob, p.cib, p.wg, p.tw, p.th, p.kxb, DIRECT_TAPS, DIRECT_WCOB);
    return p;
}

/* Whether the tiled forward runs: its variant, a real tile, and room. */
static int use_tiles(const tt_backend *be, const direct_params *p, const tt_conv_shape *s,
                     size_t tile_floats)
{
    return variant_of(be, s) == TT_KERNEL_TILED && p->tw * p->th > 1 &&
           tile_floats * sizeof(float) <= be->device.local_mem_bytes / 2;
}

static int direct_supports(const tt_conv_shape *s, tt_conv_dir dir)
{
    (void)dir;
    return s->groups == 1;
}

/* On an OpenCL CPU only where the w8 kernels run: the scalar ones that
 * take stride 2 there won none of ResNet's picks (its 1x1 stride-2
 * shortcut went to implicit_gemm, the stride-2 3x3 and the stem to the
 * 16-wide kernels), and a weight gradient took them 1.5 to 5.8 s against
 * milliseconds for the others (docs/ops.md). */
static int direct_can_win(const tt_backend *be, const tt_conv_shape *s, tt_conv_dir dir)
{
    (void)dir;
    return !tt_device_traits_of(be).opencl_cpu || variant_of(be, s) != TT_KERNEL_SCALAR;
}


/* Whether the 8-wide 3x3 kernels run `s` on `be` (with the w8 variant):
 * OpenCL has them, Vulkan not (lavapipe runs the scalar shaders faster,
 * opencl/conv_direct_k3.cl). */
static int k3_runs(const tt_backend *be, const tt_conv_shape *s)
{
    return tt_is_k3(s) && tt_backend_has_program(be, "conv_direct_k3");
}

/* The bands of conv_direct_backward_weight_k3: rows whose dout and input
 * fit K3W_BAND_BYTES (half of a CPU's L2, so every (co, ci) pair reads
 * them from cache), in as many bands as keep the partial sums (9 floats a
 * pair a band) within K3W_PARTIAL_FLOATS; several images to a band when
 * even one band per image would pass that.  $TT_CONV_K3W_BANDS="B,F"
 * overrides the two (tests). */
#define K3W_BAND_BYTES (256u * 1024u)
#define K3W_PARTIAL_FLOATS ((size_t)1 << 20)

/* Loop steps of conv_direct_backward_weight_k3 per 8 columns of a row:
 * the column loop's, and up to three input rows' plus the one that ends
 * that loop (lavapipe counts it; the taps' loops over kx and lanes are
 * unrolled); _k3p takes fewer. */
#define K3W_STEPS_PER_VECTOR 5

tt_k3w_bands tt_k3w_bands_of(const tt_conv_shape *s, size_t band_bytes, size_t step)
{
    size_t partial_floats = K3W_PARTIAL_FLOATS;
    const char *knob = tt_knob_str(TT_KNOB_CONV_K3W_BANDS); /* "bytes,floats": tests */
    if (knob) sscanf(knob, "%zu,%zu", &band_bytes, &partial_floats);
    size_t row_bytes = (s->cin * s->w + s->cout * s->ow) * sizeof(float);
    size_t pair_floats = s->cout * s->cin * 9;
    size_t max_bands = partial_floats / pair_floats ? partial_floats / pair_floats : 1;
    tt_k3w_bands b = {1, 1, s->oh, 0};
    size_t rows = band_bytes / row_bytes ? band_bytes / row_bytes : 1;
    if (rows < s->oh) b.per_image = (s->oh + rows - 1) / rows;
    if (s->batch * b.per_image > max_bands) b.per_image = max_bands / s->batch ? max_bands / s->batch : 1;
    b.rows = (s->oh + b.per_image - 1) / b.per_image;
    if (b.rows < s->oh) b.rows = (b.rows + step - 1) / step * step;
    b.per_image = (s->oh + b.rows - 1) / b.rows;
    if (s->batch > max_bands) b.images_per_band = (s->batch + max_bands - 1) / max_bands;
    /* A band is one invocation's loop: the cap on the partial sums gives
     * way to TT_LOOP_BUDGET (lavapipe ends longer loops silently). */
    size_t row_steps = 2 + (s->ow + 7) / 8 * K3W_STEPS_PER_VECTOR;
    size_t budget_rows = TT_LOOP_BUDGET / row_steps ? TT_LOOP_BUDGET / row_steps : 1;
    if (b.images_per_band * b.rows > budget_rows) {
        b.images_per_band = budget_rows / b.rows ? budget_rows / b.rows : 1;
        if (b.rows > budget_rows) {
            b.rows = budget_rows;
            b.per_image = (s->oh + b.rows - 1) / b.rows;
            b.rows = (s->oh + b.per_image - 1) / b.per_image;
        }
    }
    b.count = (s->batch + b.images_per_band - 1) / b.images_per_band * b.per_image;
    return b;
}

/* Planes up to K3_PADDED_WIDTH wide (and a multiple of 8) are read by the
 * 3x3 kernels from a copy with the zero padding written out (conv_pad_k3):
 * on narrow planes their edge vectors and border rows are a large share of
 * the work.  Wider planes keep the edge cases: there the copy costs as
 * much as it saves (docs/tune.md has the measurements).  The copies hold one image, or the weight gradient's one band's images
 * (k3w_bands.images_per_band, usually one): the kernels run once per such
 * group, so that the room is an image's rather than the micro-batch's. */
#define K3_PADDED_WIDTH 128


/* Whether the weight gradient pads its input; $TT_K3W_PADDED=0|1 (tests). */
static int k3w_padded(const tt_conv_shape *s)
{
    if (s->w % 8 != 0) return 0;
    return tt_knob_flag(TT_KNOB_K3W_PADDED, s->w <= K3_PADDED_WIDTH);
}

/* Whether conv_direct_forward_k3 over `s` (a forward, or an input
 * gradient's forward over dout) pads its input (unless staged; the rows
 * it reads must stay in the padded plane: OH % ROWS == 0);
 * $TT_K3_PADDED=0|1 (tests). */
static int k3_padded(const tt_conv_shape *s)
{
    if (s->w % 8 != 0 || s->oh % TT_K3_ROWS != 0) return 0;
    return tt_knob_flag(TT_KNOB_K3_PADDED, s->w <= K3_PADDED_WIDTH);
}

/* Floats of the padded copy of `images` images (conv_pad_k3's layout). */
static size_t k3_padded_floats(const tt_conv_shape *s, size_t images)
{
    return images * s->cin * ((s->h + 2) * (s->w + 8) + 8);
}

/* The room each 3x3 direction takes from the workspace, in floats:
 * forward: the padded image; input gradient: the flipped weights, then
 * the padded dout image; weight gradient: the band sums, then the padded
 * input of a band's images. */
static size_t k3_forward_floats(const tt_conv_shape *s)
{
    return k3_padded(s) ? k3_padded_floats(s, 1) : 0;
}

static size_t k3_data_floats(const tt_conv_shape *s)
{
    tt_conv_shape t = tt_k3_data_shape(s);
    return tt_k3_line_floats(s->cout * s->cin * 9) + k3_forward_floats(&t);
}

static size_t k3_weight_floats(const tt_conv_shape *s)
{
    tt_k3w_bands b = tt_k3w_bands_of(s, K3W_BAND_BYTES, 1);
    return tt_k3_line_floats(b.count * s->cout * s->cin * 9) +
           (k3w_padded(s) ? k3_padded_floats(s, b.images_per_band) : 0);
}

/* The 3x3 kernels' room (any device: the size of a shape cannot ask which
 * kernels will run): the most any direction takes. */
static size_t direct_workspace_bytes(const tt_conv_shape *s)
{
    if (!tt_is_k3(s)) return 0;
    size_t weight = k3_weight_floats(s), forward = k3_forward_floats(s);
    size_t data = k3_data_floats(s), most = weight > forward ? weight : forward;
    return (most > data ? most : data) * sizeof(float);
}

/* conv_pad_k3: `images` images of `s`'s input from src into dst. */
static tt_status launch_pad(tt_backend *be, tt_mem dst, tt_mem src, size_t images,
                            const tt_conv_shape *s)
{
    size_t global[2] = {s->h + 3, images * s->cin};
    return tt_launch_kernel(be, "conv_direct_k3", "conv_pad_k3", TT_K3_OPTIONS, 2, global, NULL,
                            TT_ARGS(tt_arg_mem(dst), tt_arg_mem(src),
                                    tt_arg_i32((int)(images * s->cin)), tt_arg_i32((int)s->h),
                                    tt_arg_i32((int)s->w)));
}

static size_t row_width(const direct_params *p, size_t width)
{
    size_t row = p->row;
    while (row > 1 && row / 2 >= width) row /= 2;
    return row;
}

/* From this many pixels a plane (512x512: 1 MiB) conv_direct_forward_k3
 * reads its input through the staged tile: only large planes repay its
 * copy and two barriers per 16 channels (docs/tune.md). */
#define K3_STAGED_PIXELS ((size_t)512 * 512)

/* conv_direct_forward_k3 (or _staged, or _k3p) over shape s: out (+)=
 * conv(inp, weight) + bias (bias_mem read only with has_bias).  `room`
 * holds k3_forward_floats(s) floats. */
static tt_status launch_k3(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                           tt_mem bias_mem, int has_bias, int accumulate, const tt_conv_shape *s,
                           tt_mem room)
{
    /* Work-groups of up to 4 channel blocks x 4 column chunks: PoCL runs a
     * work-group's items in one call, and groups of one paid its per-group
     * entry for every 8x2 outputs. */
    size_t blocks = (s->cout + TT_K3_COB - 1) / TT_K3_COB;
    size_t global[3] = {blocks, (s->ow + 7) / 8, s->batch * ((s->oh + TT_K3_ROWS - 1) / TT_K3_ROWS)};
    size_t local[3] = {blocks < 4 ? blocks : 4, TT_K3_CHUNKS, 1}; /* global rounded up */
    int stage = tt_knob_flag(TT_KNOB_K3_STAGED, (size_t)s->h * s->w >= K3_STAGED_PIXELS);
    if (!stage && k3_padded(s)) {
        tt_conv_shape one = *s; /* an image at a time, padded into room */
        one.batch = 1;
        global[2] = s->oh / TT_K3_ROWS;
        tt_status status = NULL;
        for (size_t n = 0; !status && n < s->batch; n++) {
            status = launch_pad(be, room, tt_mem_f32(inp, n * s->cin * s->h * s->w), 1, s);
            if (!status)
                status = tt_launch_kernel(
                    be, "conv_direct_k3", "conv_direct_forward_k3p", TT_K3_OPTIONS, 3, global, local,
                    TT_ARGS(tt_arg_mem(tt_mem_f32(out, n * s->cout * s->oh * s->ow)),
                            tt_arg_mem(room), tt_arg_mem(weight), tt_arg_mem(bias_mem),
                            tt_arg_i32(has_bias), tt_arg_i32(accumulate), TT_K3_GEOMETRY_ARGS(&one)));
        }
        return status;
    }
    return tt_launch_kernel(be, "conv_direct_k3",
                            stage ? "conv_direct_forward_k3_staged" : "conv_direct_forward_k3",
                            TT_K3_OPTIONS, 3, global, local,
                            TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight),
                                    tt_arg_mem(bias_mem), tt_arg_i32(has_bias),
                                    tt_arg_i32(accumulate), TT_K3_GEOMETRY_ARGS(s)));
}

static tt_status direct_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                tt_mem bias, const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    tt_mem bias_mem = bias.buffer ? bias : weight; /* any valid buffer; unread */
    direct_params p = params_of(be, s);
    size_t blocks = (s->cout + p.cob - 1) / p.cob;
    size_t tile_w = (p.tw - 1) * s->sw + (s->kw - 1) * s->dw + 1;
    size_t tile_h = (p.th - 1) * s->sh + (s->kh - 1) * s->dh + 1;
    size_t wtile = p.cob * s->kh * s->kw;
    if (use_tiles(be, &p, s, tile_w * tile_h + wtile)) {
        size_t global[3] = {s->ow, s->oh, s->batch * blocks}, local[3] = {p.tw, p.th, 1};
        return tt_launch_kernel(
            be, "conv_direct", "conv_direct_forward_tiled", p.options, 3, global, local,
            TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight), tt_arg_mem(bias_mem),
                    tt_arg_i32(bias.buffer != NULL), tt_arg_i32(accumulate), TT_K3_GEOMETRY_ARGS(s),
                    tt_arg_local(tile_w * tile_h * sizeof(float)),
                    tt_arg_local(wtile * sizeof(float))));
    }
    int w8 = variant_of(be, s) == TT_KERNEL_W8;
    size_t columns = w8 ? (s->ow + 7) / 8 : s->ow;
    if (w8 && k3_runs(be, s)) {
        tt_conv_workspace room = {0};
        TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.padded_input", ws,
                                         k3_forward_floats(s) * sizeof(float), &room));
        tt_status status = launch_k3(be, out, inp, weight, bias_mem, bias.buffer != NULL,
                                     accumulate, s, room.mem);
        tt_conv_workspace_release(&room);
        return status;
    }
    size_t global[3] = {columns, s->oh, s->batch * blocks}, local[3] = {row_width(&p, columns), 1, 1};
    return tt_launch_kernel(be, "conv_direct", w8 ? "conv_direct_forward_w8" : "conv_direct_forward",
                            p.options, 3, global, local,
                            TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight),
                                    tt_arg_mem(bias_mem), tt_arg_i32(bias.buffer != NULL),
                                    tt_arg_i32(accumulate), TT_K3_GEOMETRY_ARGS(s)));
}

/* A 3x3 stride-1 padding-1 input gradient is that convolution's forward
 * over dout with the weights flipped (conv_weight_flip3), adding or not. */
static tt_status k3_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                  const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    tt_conv_workspace flipped;
    size_t count = s->cout * s->cin * 9;
    tt_conv_shape t = tt_k3_data_shape(s);
    TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.flipped_weight", ws,
                                     k3_data_floats(s) * sizeof(float), &flipped));
    tt_status status = tt_launch_kernel(be, "conv_direct_k3", "conv_weight_flip3", TT_K3_OPTIONS, 1,
                                        (size_t[]){count}, NULL,
                                        TT_ARGS(tt_arg_mem(flipped.mem), tt_arg_mem(weight),
                                                tt_arg_i32((int)s->cout), tt_arg_i32((int)s->cin)));
    if (!status)
        status = launch_k3(be, dinp, dout, flipped.mem, flipped.mem, 0, accumulate, &t,
                           tt_mem_f32(flipped.mem, tt_k3_line_floats(count)));
    tt_conv_workspace_release(&flipped);
    return status;
}

static tt_status direct_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                      const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    direct_params p = params_of(be, s);
    if (variant_of(be, s) == TT_KERNEL_W8 && k3_runs(be, s))
        return k3_backward_data(be, dinp, dout, weight, s, ws, accumulate);
    TT_TRY(tt_conv_clear_input(be, dinp, s, accumulate));
    size_t blocks = (s->cin + p.cib - 1) / p.cib;
    int w8 = variant_of(be, s) == TT_KERNEL_W8;
    size_t columns = w8 ? (s->w + 7) / 8 : s->w;
    size_t global[3] = {columns, s->h, s->batch * blocks}, local[3] = {row_width(&p, columns), 1, 1};
    return tt_launch_kernel(be, "conv_direct",
                            w8 ? "conv_direct_backward_data_w8" : "conv_direct_backward_data",
                            p.options, 3, global, local,
                            TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(weight),
                                    TT_K3_GEOMETRY_ARGS(s)));
}

/* Band sums of (co, ci) pairs (work-groups of one), then their total. */
static tt_status k3_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                    const tt_conv_shape *s, tt_mem ws)
{
    tt_k3w_bands b = tt_k3w_bands_of(s, K3W_BAND_BYTES, 1);
    size_t pairs = s->cout * s->cin;
    size_t partial_floats = tt_k3_line_floats(b.count * pairs * 9);
    tt_conv_workspace partial;
    TT_TRY(tt_conv_workspace_acquire(be, "conv_direct.weight_bands", ws,
                                     k3_weight_floats(s) * sizeof(float), &partial));
    tt_status status = NULL;
    if (!k3w_padded(s)) { /* else the padded input after the band sums (k3_weight_floats) */
        size_t global[2] = {pairs, b.count}, local[2] = {1, 1};
        status = tt_launch_kernel(
            be, "conv_direct_k3", "conv_direct_backward_weight_k3", TT_K3_OPTIONS, 2, global, local,
            TT_ARGS(tt_arg_mem(partial.mem), tt_arg_mem(dout), tt_arg_mem(inp),
                    tt_arg_i32((int)b.images_per_band), tt_arg_i32((int)b.per_image),
                    tt_arg_i32((int)b.rows), TT_K3_GEOMETRY_ARGS(s)));
    } else {
        /* one band's images at a time: pad them, then their bands */
        tt_mem padded = tt_mem_at(partial.mem, partial_floats * sizeof(float));
        size_t global[2] = {pairs, b.per_image}, local[2] = {1, 1};
        for (size_t n0 = 0, group = 0; !status && n0 < s->batch; n0 += b.images_per_band, group++) {
            tt_conv_shape g = *s;
            g.batch = s->batch - n0 < b.images_per_band ? s->batch - n0 : b.images_per_band;
            status = launch_pad(be, padded, tt_mem_f32(inp, n0 * s->cin * s->h * s->w),
                                g.batch, s);
            if (!status)
                status = tt_launch_kernel(
                    be, "conv_direct_k3", "conv_direct_backward_weight_k3p", TT_K3_OPTIONS, 2, global,
                    local,
                    TT_ARGS(tt_arg_mem(tt_mem_f32(partial.mem, group * b.per_image * pairs * 9)),
                            tt_arg_mem(tt_mem_f32(dout, n0 * s->cout * s->oh * s->ow)),
                            tt_arg_mem(padded), tt_arg_i32((int)g.batch),
                            tt_arg_i32((int)b.per_image), tt_arg_i32((int)b.rows),
                            TT_K3_GEOMETRY_ARGS(&g)));
        }
    }
    if (!status) status = tt_k3w_bands_sum(be, dweight, partial.mem, b.count, pairs * 9);
    tt_conv_workspace_release(&partial);
    return status;
}

tt_status tt_k3w_bands_sum(tt_backend *be, tt_mem dweight, tt_mem partial, size_t bands,
                           size_t count)
{
    return tt_launch_kernel(be, "conv_direct_k3", "conv_direct_weight_bands_sum", TT_K3_OPTIONS,
                            1, (size_t[]){(count + 7) / 8}, NULL,
                            TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(partial),
                                    tt_arg_i32((int)bands), tt_arg_i32((int)count)));
}

/* Output rows a launch of the weight gradient sums: an invocation loops
 * over every image and those rows, a row costing `steps` per vector of 8
 * columns (w8) or per WG columns, each image and row one or two more;
 * past TT_LOOP_BUDGET the rows run as several launches adding into
 * dweight.  Measured on lavapipe: w8 one step a vector (a 1x1 over 600 x
 * 1000 cut at 86%), counted as 2; the work-group kernel between 4 and 8
 * a row of one vector, counted as 2 + 4. */
static size_t weight_rows_per_launch(const tt_conv_shape *s, size_t columns, size_t steps)
{
    size_t per_image = TT_LOOP_BUDGET / s->batch > 1 ? TT_LOOP_BUDGET / s->batch - 1 : 1;
    size_t rows = per_image / (2 + steps * ((s->ow + columns - 1) / columns));
    return rows < 1 ? 1 : rows > s->oh ? s->oh : rows;
}

static tt_status direct_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                        const tt_conv_shape *s, tt_mem ws)
{
    direct_params p = params_of(be, s);
    size_t chunks = (s->kh * s->kw + DIRECT_TAPS - 1) / DIRECT_TAPS;
    int w8 = variant_of(be, s) == TT_KERNEL_W8;
    if (w8 && k3_runs(be, s)) return k3_backward_weight(be, dweight, dout, inp, s, ws);
    size_t global[3] = {0, 0, 1}, local[3] = {1, 1, 1};
    if (w8) {
        /* (channel block, ci) x (ky, chunk of kx), in work-groups of one:
         * PoCL's vectorising across work-items gets in the way of float8
         * code */
        global[0] = (s->cout + DIRECT_WCOB - 1) / DIRECT_WCOB * s->cin;
        global[1] = s->kh * ((s->kw + p.kxb - 1) / p.kxb);
    } else {
        /* ci x tap chunk x channel block: no dimension past 65535 groups */
        global[0] = s->cin * p.wg;
        global[1] = chunks;
        global[2] = (s->cout + DIRECT_WCOB - 1) / DIRECT_WCOB;
        local[0] = p.wg;
    }
    size_t rows = weight_rows_per_launch(s, w8 ? 8 : p.wg, w8 ? 2 : 4);
    for (size_t row0 = 0; row0 < s->oh; row0 += rows)
        TT_TRY(tt_launch_kernel(
            be, "conv_direct", w8 ? "conv_direct_backward_weight_w8" : "conv_direct_backward_weight",
            p.options, w8 ? 2 : 3, global, local,
            TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(dout), tt_arg_mem(inp), TT_K3_GEOMETRY_ARGS(s),
                    tt_arg_i32((int)row0), tt_arg_i32((int)rows))));
    return NULL;
}

const tt_conv_algo_impl tt_conv_direct_impl = {
    .supports = direct_supports,
    .can_win = direct_can_win,
    .workspace_bytes = direct_workspace_bytes,
    .forward = direct_forward,
    .backward_data = direct_backward_data,
    .backward_weight = direct_backward_weight,
};

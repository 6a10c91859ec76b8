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
 *           so the SIMD units are used whatever the runtime vectorises (the
 *           3x3 and 7x7 kernels of 16 columns a work-item are an algorithm
 *           of their own, DIRECT_W16: conv_direct_w16.c)
 *   scalar  otherwise: one column per work-item, uniform control flow
 * $TT_CONV_DIRECT_VARIANT=scalar|tiled|w8 overrides the choice (tests use
 * it; w8 still needs stride 1 along W, and OpenCL).  Work-group sizes come
 * from the device (CL_DEVICE_MAX_WORK_GROUP_SIZE and the local memory
 * size), never from an assumed warp width.
 */
#include <stdio.h>

#include "backend/loop_budget.h"
#include "core/knobs.h"
#include "core/status.h"
#include "ops/conv_algo.h"
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

/* The variant for this device and shape (see the top of the file).  The
 * w8 kernels are OpenCL's alone: no Vulkan device would run them (its CPU
 * device runs the scalar shaders 3 times faster, GPUs the tiled ones). */
static tt_kernel_variant variant_of(const tt_backend *be, const tt_conv_shape *s)
{
    tt_kernel_variant v = tt_device_traits_of(be).direct;
    int w8_runs = s->sw == 1 && be->kernels_of == TT_BACKEND_OPENCL;
    return v == TT_KERNEL_W8 && !w8_runs ? TT_KERNEL_SCALAR : v;
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


static size_t row_width(const direct_params *p, size_t width)
{
    size_t row = p->row;
    while (row > 1 && row / 2 >= width) row /= 2;
    return row;
}

static tt_status direct_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                tt_mem bias, const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    (void)ws;
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
                    tt_arg_i32(bias.buffer != NULL), tt_arg_i32(accumulate), TT_CONV_GEOMETRY_ARGS(s),
                    tt_arg_local(tile_w * tile_h * sizeof(float)),
                    tt_arg_local(wtile * sizeof(float))));
    }
    int w8 = variant_of(be, s) == TT_KERNEL_W8;
    size_t columns = w8 ? (s->ow + 7) / 8 : s->ow;
    size_t global[3] = {columns, s->oh, s->batch * blocks}, local[3] = {row_width(&p, columns), 1, 1};
    return tt_launch_kernel(be, "conv_direct", w8 ? "conv_direct_forward_w8" : "conv_direct_forward",
                            p.options, 3, global, local,
                            TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight),
                                    tt_arg_mem(bias_mem), tt_arg_i32(bias.buffer != NULL),
                                    tt_arg_i32(accumulate), TT_CONV_GEOMETRY_ARGS(s)));
}

static tt_status direct_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                      const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    (void)ws;
    direct_params p = params_of(be, s);
    TT_TRY(tt_conv_clear_input(be, dinp, s, accumulate));
    size_t blocks = (s->cin + p.cib - 1) / p.cib;
    int w8 = variant_of(be, s) == TT_KERNEL_W8;
    size_t columns = w8 ? (s->w + 7) / 8 : s->w;
    size_t global[3] = {columns, s->h, s->batch * blocks}, local[3] = {row_width(&p, columns), 1, 1};
    return tt_launch_kernel(be, "conv_direct",
                            w8 ? "conv_direct_backward_data_w8" : "conv_direct_backward_data",
                            p.options, 3, global, local,
                            TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(weight),
                                    TT_CONV_GEOMETRY_ARGS(s)));
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
    (void)ws;
    direct_params p = params_of(be, s);
    size_t chunks = (s->kh * s->kw + DIRECT_TAPS - 1) / DIRECT_TAPS;
    int w8 = variant_of(be, s) == TT_KERNEL_W8;
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
            TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(dout), tt_arg_mem(inp), TT_CONV_GEOMETRY_ARGS(s),
                    tt_arg_i32((int)row0), tt_arg_i32((int)rows))));
    return NULL;
}

const tt_conv_algo_impl tt_conv_direct_impl = {
    .program = NULL, /* the op's: conv_direct, or convt_tiles */
    .tuned_on = TT_TUNED_ALL,
    .supports = direct_supports,
    .can_win = direct_can_win,
    .forward = direct_forward,
    .backward_data = direct_backward_data,
    .backward_weight = direct_backward_weight,
};

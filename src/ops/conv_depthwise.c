/*
 * The DEPTHWISE convolution algorithm: groups = Cin = Cout (a channel
 * multiplier of 1), any kernel size, stride, padding and dilation, every
 * direction; opencl/conv_depthwise.cl and shaders/conv_depthwise/.  What
 * EfficientNet's 3x3 and 5x5 and DeepLabV3+'s atrous separable
 * convolutions run: im2col_gemm would run them as a GEMM per group with
 * K = kH kW, one small GEMM per channel and image.
 *
 *   forward          one output a work-item, its kH kW taps
 *   backward_data    one input a work-item, a gather over the outputs that
 *                    read it (no atomics; only the taps whose offset is a
 *                    multiple of the stride)
 *   backward_weight  one work-group per (channel, chunk of taps) sums the
 *                    products over N x OH x OW, then reduces in a fixed
 *                    tree in local memory (no atomics: the same bits every
 *                    run); a run past the loop budget is several launches,
 *                    each adding its part in order
 * The forward and input gradient launch images x channels work-groups in
 * one dimension: past 65535 (Vulkan's limit), in launches of some images.
 *
 * Shape values are kernel arguments, never -D defines: the program builds
 * once per device.  Work-group sizes come from the device's limits.
 *
 * DEPTHWISE_W8 (opencl/conv_depthwise_w8.cl, OpenCL's alone; AUTO times it
 * on OpenCL CPUs): the same sums a row of a plane a work-item, 8 columns
 * a vector, at column strides 1 and 2 (the scalar kernels take the rest);
 * the weight gradient's work-group per (channel, chunk of taps) takes
 * every 16th output row.
 */
#include <stdio.h>

#include "backend/loop_budget.h"
#include "core/status.h"
#include "ops/conv_algo.h"
#include "ops/device_traits.h"

#define DW_PROGRAM "conv_depthwise"
#define DW_TAPS 9     /* kernel taps per work-group of the weight gradient: a 3x3 in one */
#define DW_WG_MAX 256 /* cap of the weight gradient's work-group */
#define DW_ROW_MAX 64 /* cap of the forward's and input gradient's work-group (along W) */

/* Per-device launch sizes (the -D defines of the program: constant per
 * device, so one build serves every layer). */
typedef struct dw_params {
    size_t wg;         /* weight gradient: a power of two */
    size_t row;        /* forward and input gradient: work-items along W */
    char options[96];
} dw_params;

static dw_params params_of(const tt_backend *be)
{
    dw_params p;
    size_t max_wg = tt_device_group_max(be);
    size_t local_floats = (size_t)(be->device.local_mem_bytes / sizeof(float));
    p.wg = tt_pow2_floor(max_wg < DW_WG_MAX ? max_wg : DW_WG_MAX);
    while (p.wg > 1 && DW_TAPS * p.wg > local_floats / 2) p.wg /= 2;
    p.row = tt_pow2_floor(max_wg < DW_ROW_MAX ? max_wg : DW_ROW_MAX);
    snprintf(p.options, sizeof p.options, "-DTT_DW_WG=%zu -DTT_DW_TAPS=%d", p.wg, DW_TAPS);
    return p;
}

/* The work-group along a row of `width` pixels: the device's row, halved
 * while half of it still covers the row. */
static size_t row_width(const dw_params *p, size_t width)
{
    size_t row = p->row;
    while (row > 1 && row / 2 >= width) row /= 2;
    return row;
}

static int dw_supports(const tt_conv_shape *s, tt_conv_dir dir)
{
    (void)dir;
    return s->groups == s->cin && s->groups == s->cout;
}

/* Images a launch of the forward or the input gradient takes: its
 * dimension 2 is images x channels, in work-groups of one along it, and
 * Vulkan devices may allow no more than 65535 groups in a dimension. */
#define DW_GROUPS_MAX 65535
static size_t images_per_launch(const tt_conv_shape *s)
{
    size_t images = DW_GROUPS_MAX / s->cin;
    return images < 1 ? 1 : images;
}

static tt_status dw_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                            const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    (void)ws;
    TT_TRY(tt_launch_check_count("conv2d depthwise forward", s->batch * s->cout * s->out_plane));
    dw_params p = params_of(be);
    tt_mem bias_mem = bias.buffer ? bias : weight; /* any valid buffer; unread */
    size_t step = images_per_launch(s);
    for (size_t n = 0; n < s->batch; n += step) {
        tt_conv_shape part = *s;
        part.batch = s->batch - n < step ? s->batch - n : step;
        size_t global[3] = {s->ow, s->oh, part.batch * s->cout};
        size_t local[3] = {row_width(&p, s->ow), 1, 1};
        TT_TRY(tt_launch_kernel(
            be, DW_PROGRAM, "conv_depthwise_forward", p.options, 3, global, local,
            TT_ARGS(tt_arg_mem(tt_mem_f32(out, n * s->cout * s->out_plane)),
                    tt_arg_mem(tt_mem_f32(inp, n * s->cin * s->in_plane)), tt_arg_mem(weight),
                    tt_arg_mem(bias_mem), tt_arg_i32(bias.buffer != NULL), tt_arg_i32(accumulate),
                    TT_CONV_GEOMETRY_ARGS(&part))));
    }
    return NULL;
}

static tt_status dw_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                  const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    (void)ws;
    TT_TRY(tt_launch_check_count("conv2d depthwise backward data",
                                 s->batch * s->cin * s->in_plane));
    dw_params p = params_of(be);
    size_t step = images_per_launch(s);
    for (size_t n = 0; n < s->batch; n += step) {
        tt_conv_shape part = *s;
        part.batch = s->batch - n < step ? s->batch - n : step;
        size_t global[3] = {s->w, s->h, part.batch * s->cin};
        size_t local[3] = {row_width(&p, s->w), 1, 1};
        TT_TRY(tt_launch_kernel(
            be, DW_PROGRAM, "conv_depthwise_backward_data", p.options, 3, global, local,
            TT_ARGS(tt_arg_mem(tt_mem_f32(dinp, n * s->cin * s->in_plane)),
                    tt_arg_mem(tt_mem_f32(dout, n * s->cout * s->out_plane)), tt_arg_mem(weight),
                    tt_arg_i32(accumulate), TT_CONV_GEOMETRY_ARGS(&part))));
    }
    return NULL;
}

/* Output pixels one launch of the weight gradient sums: a work-item takes
 * every WG-th of them, each step a loop of DW_TAPS taps (counted as not
 * unrolled, plus the step itself), within TT_LOOP_BUDGET or half the
 * device's loop limit where that is less ($TT_LOOP_LIMIT: a test splits
 * small runs so). */
static size_t weight_pixels_per_launch(const tt_backend *be, const dw_params *p)
{
    size_t budget = TT_LOOP_BUDGET, limit = tt_device_traits_of(be).loop_limit;
    if (limit && limit / 2 < budget) budget = limit / 2;
    size_t steps = budget / (DW_TAPS + 2);
    return (steps ? steps : 1) * p->wg;
}

static tt_status dw_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                    const tt_conv_shape *s, tt_mem ws)
{
    (void)ws;
    size_t pixels = s->batch * s->out_plane;
    const char *op = "conv2d depthwise backward weight";
    TT_TRY(tt_launch_check_count(op, s->batch * s->cin * s->in_plane));
    TT_TRY(tt_launch_check_count(op, s->batch * s->cout * s->out_plane));
    dw_params p = params_of(be);
    size_t chunks = (s->kh * s->kw + DW_TAPS - 1) / DW_TAPS;
    size_t global[3] = {s->cin * p.wg, chunks, 1}, local[3] = {p.wg, 1, 1};
    size_t share = weight_pixels_per_launch(be, &p);
    for (size_t p0 = 0; p0 < pixels; p0 += share) {
        size_t p1 = pixels - p0 < share ? pixels : p0 + share;
        TT_TRY(tt_launch_kernel(be, DW_PROGRAM, "conv_depthwise_backward_weight", p.options, 2,
                                global, local,
                                TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(dout), tt_arg_mem(inp),
                                        TT_CONV_GEOMETRY_ARGS(s), tt_arg_i32((int)p0),
                                        tt_arg_i32((int)p1))));
    }
    return NULL;
}

/* ---- DEPTHWISE_W8: rows of 8-wide vectors, for OpenCL CPUs ------------- */

#define DW8_PROGRAM "conv_depthwise_w8"
#define DW8_OPTIONS "-DTT_DW8_WG=16 -DTT_DW8_TAPS=9"
#define DW8_WG 16
#define DW8_TAPS 9
#define DW8_ROWS 16 /* rows a work-group of the forward and input gradient takes */

/* The vector kernels take column strides 1 and 2; the scalar ones the rest. */
static int dw8_vector(const tt_conv_shape *s) { return s->sw <= 2; }

/* global (images x channels, rows) in work-groups of up to DW8_ROWS rows. */
static tt_status dw8_rows(tt_backend *be, const char *kernel, size_t planes, size_t rows,
                          int arg_count, const tt_arg *args)
{
    size_t local_rows = tt_pow2_floor(rows < DW8_ROWS ? rows : DW8_ROWS);
    size_t global[2] = {planes, rows}, local[2] = {1, local_rows};
    return tt_launch_kernel(be, DW8_PROGRAM, kernel, DW8_OPTIONS, 2, global, local, arg_count, args);
}

static tt_status dw8_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                             const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    if (!dw8_vector(s)) return dw_forward(be, out, inp, weight, bias, s, ws, accumulate);
    TT_TRY(tt_launch_check_count("conv2d depthwise forward", s->batch * s->cout * s->out_plane));
    tt_mem bias_mem = bias.buffer ? bias : weight; /* any valid buffer; unread */
    return dw8_rows(be, "conv_depthwise_w8_forward", s->batch * s->cout, s->oh,
                    TT_ARGS(tt_arg_mem(out), tt_arg_mem(inp), tt_arg_mem(weight),
                            tt_arg_mem(bias_mem), tt_arg_i32(bias.buffer != NULL),
                            tt_arg_i32(accumulate), TT_CONV_GEOMETRY_ARGS(s)));
}

static tt_status dw8_backward_data(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem weight,
                                   const tt_conv_shape *s, tt_mem ws, int accumulate)
{
    if (!dw8_vector(s)) return dw_backward_data(be, dinp, dout, weight, s, ws, accumulate);
    TT_TRY(tt_launch_check_count("conv2d depthwise backward data",
                                 s->batch * s->cin * s->in_plane));
    return dw8_rows(be, "conv_depthwise_w8_backward_data", s->batch * s->cin, s->h,
                    TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(weight),
                            tt_arg_i32(accumulate), TT_CONV_GEOMETRY_ARGS(s)));
}

static tt_status dw8_backward_weight(tt_backend *be, tt_mem dweight, tt_mem dout, tt_mem inp,
                                     const tt_conv_shape *s, tt_mem ws)
{
    if (!dw8_vector(s)) return dw_backward_weight(be, dweight, dout, inp, s, ws);
    const char *op = "conv2d depthwise backward weight";
    TT_TRY(tt_launch_check_count(op, s->batch * s->cin * s->in_plane));
    TT_TRY(tt_launch_check_count(op, s->batch * s->cout * s->out_plane));
    /* rows a launch sums: a work-item's step is a row, DW8_TAPS taps a
     * vector of it (counted as not unrolled), within the loop budget */
    size_t budget = TT_LOOP_BUDGET, limit = tt_device_traits_of(be).loop_limit;
    if (limit && limit / 2 < budget) budget = limit / 2;
    size_t per_row = (s->ow + 7) / 8 * (DW8_TAPS + 2) + 2, steps = budget / per_row;
    size_t share = (steps ? steps : 1) * DW8_WG, rows = s->batch * s->oh;
    size_t chunks = (s->kh * s->kw + DW8_TAPS - 1) / DW8_TAPS;
    size_t global[2] = {s->cin * DW8_WG, chunks}, local[2] = {DW8_WG, 1};
    for (size_t r0 = 0; r0 < rows; r0 += share) {
        size_t r1 = rows - r0 < share ? rows : r0 + share;
        TT_TRY(tt_launch_kernel(be, DW8_PROGRAM, "conv_depthwise_w8_backward_weight", DW8_OPTIONS,
                                2, global, local,
                                TT_ARGS(tt_arg_mem(dweight), tt_arg_mem(dout), tt_arg_mem(inp),
                                        TT_CONV_GEOMETRY_ARGS(s), tt_arg_i32((int)r0),
                                        tt_arg_i32((int)r1))));
    }
    return NULL;
}

const tt_conv_algo_impl tt_conv_depthwise_w8_impl = {
    .program = DW8_PROGRAM,
    .tuned_on = TT_TUNED_CL_CPU,
    .supports = dw_supports,
    .forward = dw8_forward,
    .backward_data = dw8_backward_data,
    .backward_weight = dw8_backward_weight,
};

const tt_conv_algo_impl tt_conv_depthwise_impl = {
    .program = DW_PROGRAM,
    .tuned_on = TT_TUNED_ALL,
    .supports = dw_supports,
    .forward = dw_forward,
    .backward_data = dw_backward_data,
    .backward_weight = dw_backward_weight,
};

/* 2-D max pooling (see max_pool2d.h): host side of opencl/pool.cl. */
#include "ops/max_pool2d.h"

#include "core/status.h"
#include "ops/device_traits.h"

static int unpadded(const tt_pool2d_desc *d)
{
    return d->pad_h == 0 && d->pad_w == 0;
}

/* The 2x2 stride-2 unpadded pooling of the UNet on a CPU: its own 8-wide
 * kernels (tt_device_traits, which tests can override). */
static int use_2x2_w8(const tt_backend *be, const tt_pool2d_desc *d)
{
    return d->kernel_h == 2 && d->kernel_w == 2 && d->stride_h == 2 && d->stride_w == 2 &&
           unpadded(d) && tt_device_traits_of(be).w8;
}

/* ResNet's stem pool (3x3 stride 2 pad 1) on a CPU: its own 8-wide
 * forward. */
static int use_3x3s2_w8(const tt_backend *be, const tt_pool2d_desc *d)
{
    return d->kernel_h == 3 && d->kernel_w == 3 && d->stride_h == 2 && d->stride_w == 2 &&
           d->pad_h == 1 && d->pad_w == 1 && tt_device_traits_of(be).w8;
}

/* global (ceil(out_w / 8), planes * out_h) in work-groups of one */
static tt_status launch_w8(tt_backend *be, const char *kernel, int out_w, int rows,
                               int arg_count, const tt_arg *args)
{
    size_t global[2] = {((size_t)out_w + 7) / 8, (size_t)rows}, local[2] = {1, 1};
    return tt_launch_kernel(be, "pool", kernel, NULL, 2, global, local, arg_count, args);
}

tt_status tt_max_pool2d_forward(tt_backend *be, tt_mem out, tt_mem argmax, tt_mem inp,
                                const tt_pool2d_desc *d)
{
    const char *op = "max_pool2d forward";
    TT_TRY(tt_pool2d_check(op, d));
    int out_h = tt_pool2d_out_h(d), out_w = tt_pool2d_out_w(d), planes = d->batch * d->channels;
    size_t in_count = (size_t)planes * d->height * d->width;
    size_t out_count = (size_t)planes * out_h * out_w;
    TT_TRY(tt_mem_check(op, "out", out, out_count * sizeof(float)));
    TT_TRY(tt_mem_check(op, "inp", inp, in_count * sizeof(float)));
    int keep = argmax.buffer != NULL;
    if (keep) TT_TRY(tt_mem_check(op, "argmax", argmax, out_count * sizeof(int32_t)));
    if (use_2x2_w8(be, d) || use_3x3s2_w8(be, d))
        return launch_w8(be,
                         use_2x2_w8(be, d) ? "max_pool2d_forward_2x2_w8"
                                           : "max_pool2d_forward_3x3s2_w8",
                         out_w, planes * out_h,
                         TT_ARGS(tt_arg_mem(out), tt_arg_mem(keep ? argmax : out), tt_arg_mem(inp),
                                 tt_arg_i32(keep), tt_arg_i32(planes), tt_arg_i32(d->height),
                                 tt_arg_i32(d->width), tt_arg_i32(out_h), tt_arg_i32(out_w)));
    return TT_LAUNCH_1D(be, "pool", "max_pool2d_forward", out_count, tt_arg_mem(out),
                        tt_arg_mem(keep ? argmax : out), tt_arg_mem(inp), tt_arg_i32(keep),
                        tt_arg_i32(planes), tt_arg_i32(d->height), tt_arg_i32(d->width),
                        tt_arg_i32(out_h), tt_arg_i32(out_w), tt_arg_i32(d->kernel_h),
                        tt_arg_i32(d->kernel_w), tt_arg_i32(d->stride_h), tt_arg_i32(d->stride_w),
                        tt_arg_i32(d->pad_h), tt_arg_i32(d->pad_w));
}

/* Any windows (overlapping, padded): the outputs in ceil(kernel / stride)
 * phases a side whose windows do not overlap, one launch each, in
 * row-major phase order (opencl/pool.cl max_pool2d_backward_phase). */
static tt_status backward_phases(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem argmax,
                                 tt_mem inp, int from_input, const tt_pool2d_desc *d)
{
    int out_h = tt_pool2d_out_h(d), out_w = tt_pool2d_out_w(d), planes = d->batch * d->channels;
    int phases_y = (d->kernel_h + d->stride_h - 1) / d->stride_h;
    int phases_x = (d->kernel_w + d->stride_w - 1) / d->stride_w;
    for (int phase_y = 0; phase_y < phases_y && phase_y < out_h; phase_y++)
        for (int phase_x = 0; phase_x < phases_x && phase_x < out_w; phase_x++) {
            size_t rows = (size_t)(out_h - phase_y + phases_y - 1) / phases_y;
            size_t global[2] = {(size_t)(out_w - phase_x + phases_x - 1) / phases_x,
                                (size_t)planes * rows};
            TT_TRY(tt_launch_kernel(
                be, "pool", "max_pool2d_backward_phase", NULL, 2, global, NULL,
                TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(argmax), tt_arg_mem(inp),
                        tt_arg_i32(from_input), tt_arg_i32(planes), tt_arg_i32(d->height),
                        tt_arg_i32(d->width), tt_arg_i32(out_h), tt_arg_i32(out_w),
                        tt_arg_i32(d->kernel_h), tt_arg_i32(d->kernel_w), tt_arg_i32(d->stride_h),
                        tt_arg_i32(d->stride_w), tt_arg_i32(d->pad_h), tt_arg_i32(d->pad_w),
                        tt_arg_i32(phase_y), tt_arg_i32(phase_x), tt_arg_i32(phases_y),
                        tt_arg_i32(phases_x))));
        }
    return NULL;
}

/* Either argmax or inp is given; the other is {0}. */
static tt_status backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem argmax, tt_mem inp,
                          const tt_pool2d_desc *d)
{
    const char *op = "max_pool2d backward";
    TT_TRY(tt_pool2d_check(op, d));
    if (!dinp.buffer) return NULL; /* gradient not wanted */
    int out_h = tt_pool2d_out_h(d), out_w = tt_pool2d_out_w(d), planes = d->batch * d->channels;
    size_t in_count = (size_t)planes * d->height * d->width;
    size_t out_count = (size_t)planes * out_h * out_w;
    int from_input = inp.buffer != NULL;
    TT_TRY(tt_mem_check(op, "dinp", dinp, in_count * sizeof(float)));
    TT_TRY(tt_mem_check(op, "dout", dout, out_count * sizeof(float)));
    if (from_input) TT_TRY(tt_mem_check(op, "inp", inp, in_count * sizeof(float)));
    else TT_TRY(tt_mem_check(op, "argmax", argmax, out_count * sizeof(int32_t)));
    if (use_2x2_w8(be, d))
        return launch_w8(be, "max_pool2d_backward_2x2_w8", out_w, planes * out_h,
                         TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout),
                                 tt_arg_mem(from_input ? dout : argmax),
                                 tt_arg_mem(from_input ? inp : dout), tt_arg_i32(from_input),
                                 tt_arg_i32(planes), tt_arg_i32(d->height), tt_arg_i32(d->width),
                                 tt_arg_i32(out_h), tt_arg_i32(out_w)));
    if (d->stride_h == d->kernel_h && d->stride_w == d->kernel_w && unpadded(d)) {
        size_t global[2] = {(size_t)out_w, (size_t)planes * out_h};
        return tt_launch_kernel(
            be, "pool", "max_pool2d_backward_tiles", NULL, 2, global, NULL,
            TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(from_input ? dout : argmax),
                    tt_arg_mem(from_input ? inp : dout), tt_arg_i32(from_input),
                    tt_arg_i32(planes), tt_arg_i32(d->height), tt_arg_i32(d->width),
                    tt_arg_i32(out_h), tt_arg_i32(out_w), tt_arg_i32(d->kernel_h),
                    tt_arg_i32(d->kernel_w)));
    }
    return backward_phases(be, dinp, dout, from_input ? dout : argmax, from_input ? inp : dout,
                           from_input, d);
}

tt_status tt_max_pool2d_backward(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem argmax,
                                 const tt_pool2d_desc *d)
{
    return backward(be, dinp, dout, argmax, (tt_mem){0}, d);
}

tt_status tt_max_pool2d_backward_from_input(tt_backend *be, tt_mem dinp, tt_mem dout, tt_mem inp,
                                            const tt_pool2d_desc *d)
{
    return backward(be, dinp, dout, (tt_mem){0}, inp, d);
}

/* 2-D average pooling (see avg_pool2d.h): host side of opencl/pool.cl. */
#include "ops/avg_pool2d.h"

#include "core/status.h"

tt_status tt_avg_pool2d_forward(tt_backend *be, tt_mem out, tt_mem inp, const tt_pool2d_desc *d)
{
    const char *op = "avg_pool2d forward";
    TT_TRY(tt_pool2d_check(op, d));
    int out_h = tt_pool2d_out_h(d), out_w = tt_pool2d_out_w(d), planes = d->batch * d->channels;
    size_t in_count = (size_t)planes * d->height * d->width;
    size_t out_count = (size_t)planes * out_h * out_w;
    TT_TRY(tt_mem_check(op, "out", out, out_count * sizeof(float)));
    TT_TRY(tt_mem_check(op, "inp", inp, in_count * sizeof(float)));
    return TT_LAUNCH_1D(be, "pool", "avg_pool2d_forward", out_count, tt_arg_mem(out),
                        tt_arg_mem(inp), tt_arg_i32(planes), tt_arg_i32(d->height),
                        tt_arg_i32(d->width), tt_arg_i32(out_h), tt_arg_i32(out_w),
                        tt_arg_i32(d->kernel_h), tt_arg_i32(d->kernel_w),
                        tt_arg_i32(d->stride_h), tt_arg_i32(d->stride_w), tt_arg_i32(d->pad_h),
                        tt_arg_i32(d->pad_w));
}

tt_status tt_avg_pool2d_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                 const tt_pool2d_desc *d)
{
    const char *op = "avg_pool2d backward";
    TT_TRY(tt_pool2d_check(op, d));
    if (!dinp.buffer) return NULL; /* gradient not wanted */
    int out_h = tt_pool2d_out_h(d), out_w = tt_pool2d_out_w(d), planes = d->batch * d->channels;
    size_t in_count = (size_t)planes * d->height * d->width;
    size_t out_count = (size_t)planes * out_h * out_w;
    TT_TRY(tt_mem_check(op, "dinp", dinp, in_count * sizeof(float)));
    TT_TRY(tt_mem_check(op, "dout", dout, out_count * sizeof(float)));
    return TT_LAUNCH_1D(be, "pool", "avg_pool2d_backward", in_count, tt_arg_mem(dinp),
                        tt_arg_mem(dout), tt_arg_i32(planes), tt_arg_i32(d->height),
                        tt_arg_i32(d->width), tt_arg_i32(out_h), tt_arg_i32(out_w),
                        tt_arg_i32(d->kernel_h), tt_arg_i32(d->kernel_w),
                        tt_arg_i32(d->stride_h), tt_arg_i32(d->stride_w), tt_arg_i32(d->pad_h),
                        tt_arg_i32(d->pad_w));
}

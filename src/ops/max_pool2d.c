/* 2-D max pooling (see max_pool2d.h): host side of opencl/pool.cl. */
#include "ops/max_pool2d.h"

#include "core/status.h"

tt_status tt_max_pool2d_forward(tt_backend *be, tt_mem out, tt_mem argmax, tt_mem inp,
                                const tt_pool2d_desc *d)
{
    const char *op = "max_pool2d forward";
    TT_TRY(tt_pool2d_check(op, d));
    int out_h = tt_pool2d_out_h(d), out_w = tt_pool2d_out_w(d), planes = d->batch * d->channels;
    size_t in_count = (size_t)planes * d->height * d->width;
    size_t out_count = (size_t)planes * out_h * out_w;
    TT_TRY(tt_pool2d_check_mem(op, "out", out, out_count, sizeof(float)));
    TT_TRY(tt_pool2d_check_mem(op, "inp", inp, in_count, sizeof(float)));
    int keep = argmax.buffer != NULL;
    if (keep) TT_TRY(tt_pool2d_check_mem(op, "argmax", argmax, out_count, sizeof(int32_t)));
    return TT_LAUNCH_1D(be, "pool", "max_pool2d_forward", out_count, tt_arg_mem(out),
                        tt_arg_mem(keep ? argmax : out), tt_arg_mem(inp), tt_arg_i32(keep),
                        tt_arg_i32(planes), tt_arg_i32(d->height), tt_arg_i32(d->width),
                        tt_arg_i32(out_h), tt_arg_i32(out_w), tt_arg_i32(d->kernel_h),
                        tt_arg_i32(d->kernel_w), tt_arg_i32(d->stride_h), tt_arg_i32(d->stride_w));
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
    TT_TRY(tt_pool2d_check_mem(op, "dinp", dinp, in_count, sizeof(float)));
    TT_TRY(tt_pool2d_check_mem(op, "dout", dout, out_count, sizeof(float)));
    if (from_input) TT_TRY(tt_pool2d_check_mem(op, "inp", inp, in_count, sizeof(float)));
    else TT_TRY(tt_pool2d_check_mem(op, "argmax", argmax, out_count, sizeof(int32_t)));
    if (d->stride_h == d->kernel_h && d->stride_w == d->kernel_w) {
        size_t global[2] = {(size_t)out_w, (size_t)planes * out_h};
        return tt_launch_kernel(
            be, "pool", "max_pool2d_backward_tiles", NULL, 2, global, NULL,
            TT_ARGS(tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_mem(from_input ? dout : argmax),
                    tt_arg_mem(from_input ? inp : dout), tt_arg_i32(from_input),
                    tt_arg_i32(planes), tt_arg_i32(d->height), tt_arg_i32(d->width),
                    tt_arg_i32(out_h), tt_arg_i32(out_w), tt_arg_i32(d->kernel_h),
                    tt_arg_i32(d->kernel_w)));
    }
    return TT_LAUNCH_1D(be, "pool", "max_pool2d_backward", in_count, tt_arg_mem(dinp),
                        tt_arg_mem(dout), tt_arg_mem(from_input ? dout : argmax),
                        tt_arg_mem(from_input ? inp : dout), tt_arg_i32(from_input),
                        tt_arg_i32(planes), tt_arg_i32(d->height), tt_arg_i32(d->width),
                        tt_arg_i32(out_h), tt_arg_i32(out_w), tt_arg_i32(d->kernel_h),
                        tt_arg_i32(d->kernel_w), tt_arg_i32(d->stride_h), tt_arg_i32(d->stride_w));
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

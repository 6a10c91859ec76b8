/* Nearest x2 upsampling (see upsample_nearest.h): host side of
 * opencl/upsample_nearest.cl and shaders/upsample_nearest/. */
#include "ops/upsample_nearest.h"

#include "core/status.h"

static tt_status check_desc(const char *op, const tt_upsample_desc *d)
{
    if (d->batch <= 0 || d->channels <= 0 || d->height <= 0 || d->width <= 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: input (%d, %d, %d, %d): every size must be positive", op,
                            d->batch, d->channels, d->height, d->width);
    return tt_launch_check_count(op, 4 * (size_t)d->batch * d->channels * d->height * d->width);
}

tt_status tt_upsample_nearest2x_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                        const tt_upsample_desc *d)
{
    const char *op = "upsample_nearest2x forward";
    TT_TRY(check_desc(op, d));
    int planes = d->batch * d->channels;
    size_t in_count = (size_t)planes * d->height * d->width;
    TT_TRY(tt_mem_check(op, "out", out, (4 * in_count) * sizeof(float)));
    TT_TRY(tt_mem_check(op, "inp", inp, in_count * sizeof(float)));
    return TT_LAUNCH_1D(be, "upsample_nearest", "upsample_nearest2x_forward", in_count,
                        tt_arg_mem(out), tt_arg_mem(inp), tt_arg_i32(planes),
                        tt_arg_i32(d->height), tt_arg_i32(d->width));
}

tt_status tt_upsample_nearest2x_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                         const tt_upsample_desc *d)
{
    const char *op = "upsample_nearest2x backward";
    TT_TRY(check_desc(op, d));
    if (!dinp.buffer) return NULL; /* gradient not wanted */
    int planes = d->batch * d->channels;
    size_t in_count = (size_t)planes * d->height * d->width;
    TT_TRY(tt_mem_check(op, "dinp", dinp, in_count * sizeof(float)));
    TT_TRY(tt_mem_check(op, "dout", dout, (4 * in_count) * sizeof(float)));
    return TT_LAUNCH_1D(be, "upsample_nearest", "upsample_nearest2x_backward", in_count,
                        tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_i32(planes),
                        tt_arg_i32(d->height), tt_arg_i32(d->width));
}

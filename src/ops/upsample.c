/* Bilinear x2 upsampling (see upsample.h): host side of opencl/upsample.cl. */
#include "ops/upsample.h"

#include "core/status.h"

tt_status tt_upsample_check(const char *op, const tt_upsample_desc *d, tt_mem small,
                            const char *small_name, tt_mem big, const char *big_name, int *planes,
                            size_t *count)
{
    if (d->batch <= 0 || d->channels <= 0 || d->height <= 0 || d->width <= 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: input (%d, %d, %d, %d): every size must be positive", op,
                            d->batch, d->channels, d->height, d->width);
    TT_TRY(tt_launch_check_count(op, 4 * (size_t)d->batch * d->channels * d->height * d->width));
    *planes = d->batch * d->channels;
    *count = (size_t)*planes * d->height * d->width;
    if (small.buffer) TT_TRY(tt_mem_check(op, small_name, small, *count * sizeof(float)));
    return big.buffer ? tt_mem_check(op, big_name, big, 4 * *count * sizeof(float)) : NULL;
}

tt_status tt_upsample_bilinear2x_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                         const tt_upsample_desc *d)
{
    int planes;
    size_t in_count;
    TT_TRY(tt_upsample_check("upsample_bilinear2x forward", d, inp, "inp", out, "out", &planes,
                             &in_count));
    return TT_LAUNCH_1D(be, "upsample", "upsample_bilinear2x_forward", 4 * in_count,
                        tt_arg_mem(out), tt_arg_mem(inp), tt_arg_i32(planes),
                        tt_arg_i32(d->height), tt_arg_i32(d->width));
}

tt_status tt_upsample_bilinear2x_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                          const tt_upsample_desc *d)
{
    int planes;
    size_t in_count;
    TT_TRY(tt_upsample_check("upsample_bilinear2x backward", d, dinp, "dinp", dout, "dout",
                             &planes, &in_count));
    if (!dinp.buffer) return NULL; /* gradient not wanted */
    return TT_LAUNCH_1D(be, "upsample", "upsample_bilinear2x_backward", in_count,
                        tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_i32(planes),
                        tt_arg_i32(d->height), tt_arg_i32(d->width));
}

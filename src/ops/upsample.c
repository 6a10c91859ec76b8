/* Bilinear upsampling by an integer factor (see upsample.h): host side of
 * opencl/upsample.cl and shaders/upsample/. */
#include "ops/upsample.h"

#include "core/status.h"

/* The sizes, the factor and both tensors (see tt_upsample_check), for an
 * output of factor^2 times the input's elements. */
static tt_status check(const char *op, const tt_upsample_desc *d, int factor, tt_mem small,
                       const char *small_name, tt_mem big, const char *big_name, int *planes,
                       size_t *count)
{
    if (factor < 1 || factor > TT_UPSAMPLE_MAX_FACTOR)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: factor %d: it must be 1 to %d", op, factor,
                            TT_UPSAMPLE_MAX_FACTOR);
    if (d->batch <= 0 || d->channels <= 0 || d->height <= 0 || d->width <= 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: input (%d, %d, %d, %d): every size must be positive", op,
                            d->batch, d->channels, d->height, d->width);
    size_t area = (size_t)factor * factor;
    TT_TRY(tt_launch_check_count(op, area * d->batch * d->channels * d->height * d->width));
    *planes = d->batch * d->channels;
    *count = (size_t)*planes * d->height * d->width;
    if (small.buffer) TT_TRY(tt_mem_check(op, small_name, small, *count * sizeof(float)));
    return big.buffer ? tt_mem_check(op, big_name, big, area * *count * sizeof(float)) : NULL;
}

tt_status tt_upsample_check(const char *op, const tt_upsample_desc *d, tt_mem small,
                            const char *small_name, tt_mem big, const char *big_name, int *planes,
                            size_t *count)
{
    return check(op, d, 2, small, small_name, big, big_name, planes, count);
}

/* PyTorch's scale for a scale_factor f: 1 / f in double, then float. */
static float scale_of(int factor) { return (float)(1.0 / factor); }

/* The launches, `op` naming the entry point in errors. */
static tt_status forward(tt_backend *be, tt_mem out, tt_mem inp, const tt_upsample_desc *d,
                         int factor, const char *op)
{
    int planes = 0;
    size_t in_count = 0;
    TT_TRY(check(op, d, factor, inp, "inp", out, "out", &planes, &in_count));
    return TT_LAUNCH_1D(be, "upsample", "upsample_bilinear_forward",
                        (size_t)factor * factor * in_count, tt_arg_mem(out), tt_arg_mem(inp),
                        tt_arg_i32(planes), tt_arg_i32(d->height), tt_arg_i32(d->width),
                        tt_arg_i32(factor), tt_arg_f32(scale_of(factor)));
}

static tt_status backward(tt_backend *be, tt_mem dinp, tt_mem dout, const tt_upsample_desc *d,
                          int factor, const char *op)
{
    int planes = 0;
    size_t in_count = 0;
    TT_TRY(check(op, d, factor, dinp, "dinp", dout, "dout", &planes, &in_count));
    if (!dinp.buffer) return NULL; /* gradient not wanted */
    return TT_LAUNCH_1D(be, "upsample", "upsample_bilinear_backward", in_count,
                        tt_arg_mem(dinp), tt_arg_mem(dout), tt_arg_i32(planes),
                        tt_arg_i32(d->height), tt_arg_i32(d->width), tt_arg_i32(factor),
                        tt_arg_f32(scale_of(factor)));
}

tt_status tt_upsample_bilinear_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                       const tt_upsample_desc *d, int factor)
{
    return forward(be, out, inp, d, factor, "upsample_bilinear forward");
}

tt_status tt_upsample_bilinear_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                        const tt_upsample_desc *d, int factor)
{
    return backward(be, dinp, dout, d, factor, "upsample_bilinear backward");
}

tt_status tt_upsample_bilinear2x_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                         const tt_upsample_desc *d)
{
    return forward(be, out, inp, d, 2, "upsample_bilinear2x forward");
}

tt_status tt_upsample_bilinear2x_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                          const tt_upsample_desc *d)
{
    return backward(be, dinp, dout, d, 2, "upsample_bilinear2x backward");
}

/* Bilinear upsampling by an integer factor, align_corners False and True
 * (see upsample.h): host side of opencl/upsample.cl and shaders/upsample/,
 * one forward and one backward kernel taking the variant as `aligned`. */
#include "ops/upsample.h"

#include "core/status.h"

/* The sizes, the factor and both tensors (see tt_upsample_check), for an
 * output of factor^2 times the input's elements; aligned (align_corners =
 * True) also the output sides (TT_UPSAMPLE_ALIGNED_MAX_SIDE), those before
 * the buffers' so a huge shape is named first. */
static tt_status check(const char *op, const tt_upsample_desc *d, int factor, int aligned,
                       tt_mem small, const char *small_name, tt_mem big, const char *big_name,
                       int *planes, size_t *count)
{
    if (factor < 1 || factor > TT_UPSAMPLE_MAX_FACTOR)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: factor %d: it must be 1 to %d", op, factor,
                            TT_UPSAMPLE_MAX_FACTOR);
    if (d->batch <= 0 || d->channels <= 0 || d->height <= 0 || d->width <= 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: input (%d, %d, %d, %d): every size must be positive", op,
                            d->batch, d->channels, d->height, d->width);
    if (aligned && ((long long)factor * d->height > TT_UPSAMPLE_ALIGNED_MAX_SIDE ||
                    (long long)factor * d->width > TT_UPSAMPLE_ALIGNED_MAX_SIDE))
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "%s: output %lld x %lld: align_corners=True takes sides up to %d",
                            op, (long long)factor * d->height, (long long)factor * d->width,
                            TT_UPSAMPLE_ALIGNED_MAX_SIDE);
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
    return check(op, d, 2, 0, small, small_name, big, big_name, planes, count);
}

/* PyTorch's scale along an axis of in_size inputs for a scale_factor f:
 * align_corners = False, 1 / f in double, then float; True,
 * area_pixel_compute_scale in float: (I - 1) / (O - 1) rounded once (both
 * exact as floats: O <= 2^22), 0 for a single output. */
static float scale_of(int aligned, int in_size, int factor)
{
    int out_size = factor * in_size;
    if (!aligned) return (float)(1.0 / factor);
    return out_size > 1 ? (float)(in_size - 1) / (float)(out_size - 1) : 0.0f;
}

/* The launches of both directions and variants, `op` naming the entry
 * point in errors: the forward (out = big, inp = small) or the backward
 * (dinp = small, dout = big; nothing to do when dinp is not wanted). */
static tt_status launch(tt_backend *be, int backward, int aligned, tt_mem small, tt_mem big,
                        const tt_upsample_desc *d, int factor, const char *op)
{
    int planes = 0;
    size_t in_count = 0;
    TT_TRY(check(op, d, factor, aligned, small, backward ? "dinp" : "inp", big,
                 backward ? "dout" : "out", &planes, &in_count));
    if (backward && !small.buffer) return NULL; /* gradient not wanted */
    return TT_LAUNCH_1D(be, "upsample",
                        backward ? "upsample_bilinear_backward" : "upsample_bilinear_forward",
                        backward ? in_count : (size_t)factor * factor * in_count,
                        tt_arg_mem(backward ? small : big), tt_arg_mem(backward ? big : small),
                        tt_arg_i32(planes), tt_arg_i32(d->height), tt_arg_i32(d->width),
                        tt_arg_i32(factor), tt_arg_i32(aligned),
                        tt_arg_f32(scale_of(aligned, d->height, factor)),
                        tt_arg_f32(scale_of(aligned, d->width, factor)));
}

tt_status tt_upsample_bilinear_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                       const tt_upsample_desc *d, int factor)
{
    return launch(be, 0, 0, inp, out, d, factor, "upsample_bilinear forward");
}

tt_status tt_upsample_bilinear_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                        const tt_upsample_desc *d, int factor)
{
    return launch(be, 1, 0, dinp, dout, d, factor, "upsample_bilinear backward");
}

tt_status tt_upsample_bilinear2x_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                         const tt_upsample_desc *d)
{
    return launch(be, 0, 0, inp, out, d, 2, "upsample_bilinear2x forward");
}

tt_status tt_upsample_bilinear2x_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                          const tt_upsample_desc *d)
{
    return launch(be, 1, 0, dinp, dout, d, 2, "upsample_bilinear2x backward");
}

tt_status tt_upsample_bilinear_aligned_forward(tt_backend *be, tt_mem out, tt_mem inp,
                                               const tt_upsample_desc *d, int factor)
{
    return launch(be, 0, 1, inp, out, d, factor, "upsample_bilinear_aligned forward");
}

tt_status tt_upsample_bilinear_aligned_backward(tt_backend *be, tt_mem dinp, tt_mem dout,
                                                const tt_upsample_desc *d, int factor)
{
    return launch(be, 1, 1, dinp, dout, d, factor, "upsample_bilinear_aligned backward");
}

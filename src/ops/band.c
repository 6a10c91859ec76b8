/* Row bands (band.h): host side of opencl/cast.cl's cast_rows and
 * shaders/cast/cast_rows.comp, one plane-strided copy with a format on each
 * side and zeros before and after what it copies. */
#include "ops/band.h"

#include "core/status.h"

tt_band_span tt_band_span_of(const tt_band *b)
{
    int top = b->first - b->halo, bottom = b->first + b->rows + b->halo;
    int lead = top < 0 ? -top : 0, trail = bottom > b->height ? bottom - b->height : 0;
    if (b->zero_halo) lead = trail = b->halo;
    int from = top + lead, count = (bottom - trail) - from;
    return (tt_band_span){lead * b->width, from * b->width, count * b->width, trail * b->width};
}

size_t tt_band_floats(const tt_band *b)
{
    return (size_t)b->planes * (size_t)(b->rows + 2 * b->halo) * (size_t)b->width;
}

tt_status tt_band_check(const char *op, const tt_band *b)
{
    if (b->planes < 1 || b->height < 1 || b->width < 1 || b->rows < 1 || b->halo < 0 ||
        b->first < 0 || b->first + b->rows > b->height)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: band of rows %d..%d (halo %d) of %d planes %dx%d lies outside "
                            "its tensor; give rows within 0..H",
                            op, b->first, b->first + b->rows, b->halo, b->planes, b->height,
                            b->width);
    return tt_launch_check_count(op, (size_t)b->planes * b->height * b->width + 8);
}

static tt_status check_precision(const char *op, tt_precision p)
{
    if (p == TT_PRECISION_FP32 || p == TT_PRECISION_FP16 || p == TT_PRECISION_BF16) return NULL;
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "%s: precision %s is not a storage; use fp32, fp16 or bf16", op,
                        tt_precision_name(p));
}

/* Per plane p: dst[p dst_stride + i], i < lead + count + trail, is 0 in the
 * lead and the trail and src[p src_stride + i - lead] between. */
static tt_status cast_rows(tt_backend *be, tt_mem dst, int dst_format, int dst_stride, tt_mem src,
                           int src_format, int src_stride, int planes, int lead, int count,
                           int trail)
{
    size_t len = (size_t)lead + count + trail;
    size_t global[2] = {(len + 7) / 8, (size_t)planes};
    return tt_launch_kernel(be, "cast", "cast_rows", NULL, 2, global, NULL,
                            TT_ARGS(tt_arg_mem(dst), tt_arg_mem(src), tt_arg_i32(dst_format),
                                    tt_arg_i32(src_format), tt_arg_i32(dst_stride),
                                    tt_arg_i32(src_stride), tt_arg_i32(lead), tt_arg_i32(count),
                                    tt_arg_i32(trail)));
}

/* The checks of a gather or scatter: the band and the precision, the
 * band room and the tensor in their buffers, and a 16-bit tensor at an
 * even byte. */
static tt_status check_call(const char *op, tt_mem room, tt_mem tensor, tt_precision precision,
                            const tt_band *b)
{
    TT_TRY(tt_band_check(op, b));
    TT_TRY(check_precision(op, precision));
    size_t plane = (size_t)b->height * b->width;
    TT_TRY(tt_mem_check(op, "band", room, 4 * tt_band_floats(b)));
    TT_TRY(tt_mem_check(op, "tensor", tensor, tt_precision_bytes(precision) * plane * b->planes));
    if (precision != TT_PRECISION_FP32 && tensor.offset % 2)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: a 16-bit tensor starts at odd byte %zu; place it at an even byte",
                            op, tensor.offset);
    return NULL;
}

tt_status tt_band_gather(tt_backend *be, tt_mem dst, tt_mem src, tt_precision precision,
                         const tt_band *b)
{
    TT_TRY(check_call("band gather", dst, src, precision, b));
    tt_band_span span = tt_band_span_of(b);
    size_t at = (size_t)span.from * tt_precision_bytes(precision);
    return cast_rows(be, dst, 0, (b->rows + 2 * b->halo) * b->width, tt_mem_at(src, at),
                     tt_precision_format(precision), b->height * b->width, b->planes,
                     span.lead, span.count, span.trail);
}

tt_status tt_band_scatter(tt_backend *be, tt_mem dst, tt_precision precision, tt_mem src,
                          const tt_band *b)
{
    TT_TRY(check_call("band scatter", src, dst, precision, b));
    if (precision != TT_PRECISION_FP32 && (dst.offset % 4 || b->width % 2))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "band scatter: a 16-bit tensor of width %d at byte %zu; it needs an "
                            "even width and a start at a multiple of 4 bytes",
                            b->width, dst.offset);
    size_t at = (size_t)b->first * b->width * tt_precision_bytes(precision);
    return cast_rows(be, tt_mem_at(dst, at), tt_precision_format(precision),
                     b->height * b->width,
                     tt_mem_f32(src, (size_t)b->halo * b->width), 0,
                     (b->rows + 2 * b->halo) * b->width, b->planes, 0, b->rows * b->width, 0);
}

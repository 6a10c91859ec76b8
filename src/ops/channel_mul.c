/* Channel multiply (see channel_mul.h): host side of opencl/channel.cl and
 * shaders/channel/; the scale's gradient is tt_plane_sum's. */
#include "ops/channel_mul.h"

#include "core/status.h"
#include "ops/global_avg_pool.h"

/* The shape's sizes positive and its elements within one launch; *planes
 * = N C, *plane = H W, *count = N C H W. */
static tt_status check_desc(const char *op, const tt_channel_mul_desc *d, int *planes,
                            int *plane, size_t *count)
{
    if (d->batch < 1 || d->channels < 1 || d->height < 1 || d->width < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: x (%d, %d, %d, %d): every size must be positive", op, d->batch,
                            d->channels, d->height, d->width);
    *count = (size_t)d->batch * d->channels * d->height * d->width;
    TT_TRY(tt_launch_check_count(op, *count));
    *planes = d->batch * d->channels;
    *plane = d->height * d->width;
    return NULL;
}

tt_status tt_channel_mul_forward(tt_backend *be, tt_mem y, tt_mem x, tt_mem s,
                                 const tt_channel_mul_desc *d)
{
    const char *op = "channel_mul forward";
    int planes = 0, plane = 1;
    size_t count = 0;
    TT_TRY(check_desc(op, d, &planes, &plane, &count));
    TT_TRY(tt_mem_check(op, "y", y, count * sizeof(float)));
    TT_TRY(tt_mem_check(op, "x", x, count * sizeof(float)));
    TT_TRY(tt_mem_check(op, "s", s, (size_t)planes * sizeof(float)));
    return TT_LAUNCH_1D(be, "channel", "channel_mul_forward", count, tt_arg_mem(y),
                        tt_arg_mem(x), tt_arg_mem(s), tt_arg_i32(plane), tt_arg_i32((int)count));
}

tt_status tt_channel_mul_backward(tt_backend *be, tt_mem dx, tt_mem ds, tt_mem dy, tt_mem x,
                                  tt_mem s, const tt_channel_mul_desc *d)
{
    const char *op = "channel_mul backward";
    int planes = 0, plane = 1;
    size_t count = 0;
    TT_TRY(check_desc(op, d, &planes, &plane, &count));
    if (!dx.buffer && !ds.buffer) return NULL; /* neither gradient wanted */
    TT_TRY(tt_mem_check(op, "dy", dy, count * sizeof(float)));
    if (dx.buffer) {
        TT_TRY(tt_mem_check(op, "dx", dx, count * sizeof(float)));
        TT_TRY(tt_mem_check(op, "s", s, (size_t)planes * sizeof(float)));
        if (dx.buffer == dy.buffer && dx.offset == dy.offset)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "%s: dx and dy are the same memory; backward adds into dx, so "
                                "give it its own buffer",
                                op);
        if (ds.buffer && dx.buffer == x.buffer && dx.offset == x.offset)
            return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                                "%s: dx and x are the same memory, but ds reads x after dx is "
                                "added to; give dx its own buffer",
                                op);
        TT_TRY(TT_LAUNCH_1D(be, "channel", "channel_mul_backward_data", count, tt_arg_mem(dx),
                            tt_arg_mem(dy), tt_arg_mem(s), tt_arg_i32(plane),
                            tt_arg_i32((int)count)));
    }
    if (!ds.buffer) return NULL;
    TT_TRY(tt_mem_check(op, "ds", ds, (size_t)planes * sizeof(float)));
    TT_TRY(tt_mem_check(op, "x", x, count * sizeof(float)));
    return tt_plane_sum(be, op, ds, dy, x, planes, plane, 1.0f, 1);
}

/* Checks shared by the two 2-D poolings (see pool2d.h). */
#include "ops/pool2d.h"

#include <limits.h>

#include "core/status.h"

tt_status tt_pool2d_check(const char *op, const tt_pool2d_desc *d)
{
    if (d->batch <= 0 || d->channels <= 0 || d->height <= 0 || d->width <= 0 ||
        d->kernel_h <= 0 || d->kernel_w <= 0 || d->stride_h <= 0 || d->stride_w <= 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: input (%d, %d, %d, %d), kernel %dx%d, stride %dx%d: every size "
                            "must be positive",
                            op, d->batch, d->channels, d->height, d->width, d->kernel_h,
                            d->kernel_w, d->stride_h, d->stride_w);
    if (d->height < d->kernel_h || d->width < d->kernel_w)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: input (%d, %d, %d, %d) is smaller than the %dx%d window; the "
                            "output would be empty: use a larger image or tile, or fewer "
                            "pooling levels",
                            op, d->batch, d->channels, d->height, d->width, d->kernel_h,
                            d->kernel_w);
    if ((long long)d->batch * d->channels * d->height * d->width > INT_MAX)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "%s: input (%d, %d, %d, %d) has more elements than one launch "
                            "indexes (%d); use a smaller micro-batch or tile",
                            op, d->batch, d->channels, d->height, d->width, INT_MAX);
    return NULL;
}

tt_status tt_pool2d_check_mem(const char *op, const char *what, tt_mem mem, size_t count,
                              size_t elem_bytes)
{
    size_t bytes = count * elem_bytes;
    if (!mem.buffer)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: %s is a NULL buffer", op, what);
    if (mem.offset > mem.buffer->bytes || bytes > mem.buffer->bytes - mem.offset)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: %s of %zu bytes at byte offset %zu overruns buffer '%s' of %zu "
                            "bytes; allocate it for the whole tensor",
                            op, what, bytes, mem.offset, mem.buffer->record.name,
                            mem.buffer->bytes);
    return NULL;
}

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

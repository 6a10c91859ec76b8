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
    if (d->pad_h < 0 || d->pad_w < 0 || d->pad_h > d->kernel_h / 2 || d->pad_w > d->kernel_w / 2)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: pad %dx%d with a %dx%d window: a pad must be from 0 to half "
                            "the window (%dx%d here), as PyTorch requires; use a smaller pad "
                            "or a larger window",
                            op, d->pad_h, d->pad_w, d->kernel_h, d->kernel_w, d->kernel_h / 2,
                            d->kernel_w / 2);
    if (d->height + 2 * d->pad_h < d->kernel_h || d->width + 2 * d->pad_w < d->kernel_w)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: input (%d, %d, %d, %d) is smaller than the %dx%d window "
                            "(with pad %dx%d); the output would be empty: use a larger image "
                            "or tile, or fewer pooling levels",
                            op, d->batch, d->channels, d->height, d->width, d->kernel_h,
                            d->kernel_w, d->pad_h, d->pad_w);
    long long planes = (long long)d->batch * d->channels;
    if (planes * d->height * d->width > INT_MAX ||
        planes * tt_pool2d_out_h(d) * tt_pool2d_out_w(d) > INT_MAX)
        return tt_error_new(TT_ERR_UNSUPPORTED,
                            "%s: input (%d, %d, %d, %d) or its output has more elements than "
                            "one launch indexes (%d); use a smaller micro-batch or tile",
                            op, d->batch, d->channels, d->height, d->width, INT_MAX);
    return NULL;
}

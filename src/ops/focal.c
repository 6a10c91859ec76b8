/* Sigmoid focal loss: host side of opencl/loss.cl (focal_*).  One kernel pair
 * serves both mask kinds (its class_index argument).  Without class weights
 * the kernels get the logits as a buffer they do not read, and flag 0. */
#include "ops/focal.h"

#include <math.h>

#include "core/status.h"

static tt_status check(const char *op, tt_mem logits, tt_mem targets, const tt_loss_desc *d,
                       const tt_focal *f)
{
    TT_TRY(tt_loss_check(op, d));
    if (!f)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: no focal parameters given", op);
    if (!(f->gamma >= 0.0f) || !isfinite(f->gamma))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: gamma %g must be finite and >= 0 (2 is the usual)", op,
                            (double)f->gamma);
    if (isnan(f->alpha) || f->alpha > 1.0f)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: alpha %g must be in [0, 1], or < 0 for no alpha factor", op,
                            (double)f->alpha);
    if (f->class_index != 0 && f->class_index != 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: class_index %d must be 1 (labels) or 0 (per-class targets)", op,
                            f->class_index);
    if (f->class_index && d->c > 256)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: %d classes do not fit uint8 labels (at most 256)", op, d->c);
    size_t pixels = (size_t)d->n * d->h * d->w;
    TT_TRY(tt_mem_check(op, "logits", logits, pixels * d->c * sizeof(float)));
    return tt_mem_check(op, f->class_index ? "labels" : "targets", targets,
                        f->class_index ? pixels : pixels * d->c);
}

/* The kernels' arguments after the logits and targets: weights, N, C, HW,
 * ignore, class_index, weighted, gamma, alpha (the focal_* order). */
static int tail_args(tt_arg *args, tt_mem logits, const tt_loss_desc *d, const tt_focal *f)
{
    int weighted = d->weights.buffer != NULL, k = 0;
    args[k++] = tt_arg_mem(weighted ? d->weights : logits);
    args[k++] = tt_arg_i32(d->n);
    args[k++] = tt_arg_i32(d->c);
    args[k++] = tt_arg_i32(d->h * d->w);
    args[k++] = tt_arg_i32(d->ignore);
    args[k++] = tt_arg_i32(f->class_index);
    args[k++] = tt_arg_i32(weighted);
    args[k++] = tt_arg_f32(f->gamma);
    args[k++] = tt_arg_f32(f->alpha < 0.0f ? -1.0f : f->alpha);
    return k;
}

/* Items of the launch: pixels for labels, elements for per-class targets. */
static size_t items_of(const tt_loss_desc *d, const tt_focal *f)
{
    size_t pixels = (size_t)d->n * d->h * d->w;
    return f->class_index ? pixels : pixels * d->c;
}

tt_status tt_focal_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                           const tt_loss_desc *d, const tt_focal *f)
{
    const char *op = "focal forward";
    TT_TRY(check(op, logits, targets, d, f));
    TT_TRY(tt_mem_check(op, "result", result, TT_LOSS_VALUE_BYTES));
    tt_arg extra[11];
    extra[0] = tt_arg_mem(logits);
    extra[1] = tt_arg_mem(targets);
    int count = 2 + tail_args(extra + 2, logits, d, f);
    return tt_loss_reduce(be, result, "focal_forward", items_of(d, f), count, extra);
}

tt_status tt_focal_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem targets,
                            const tt_loss_desc *d, const tt_focal *f, float scale)
{
    const char *op = "focal backward";
    TT_TRY(check(op, logits, targets, d, f));
    TT_TRY(tt_mem_check(op, "dlogits", dlogits,
                        (size_t)d->n * d->c * d->h * d->w * sizeof(float)));
    char options[32];
    tt_reduce_options(be, options, sizeof options); /* same program as the forward */
    tt_arg args[13];
    args[0] = tt_arg_mem(dlogits);
    args[1] = tt_arg_mem(logits);
    args[2] = tt_arg_mem(targets);
    int count = 3 + tail_args(args + 3, logits, d, f);
    args[count++] = tt_arg_f32(scale);
    size_t items = items_of(d, f);
    return tt_launch_kernel(be, "loss", "focal_backward", options, 1, &items, NULL, count, args);
}

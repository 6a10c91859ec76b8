/* Softmax cross-entropy: host side of opencl/loss.cl (softmax_ce_*).  With
 * class weights the _weighted kernels run (their own kernels, so the
 * unweighted ones keep their code and speed). */
#include "ops/softmax_ce.h"

#include "core/status.h"

static tt_status check(const char *op, tt_mem logits, tt_mem labels, const tt_loss_desc *d)
{
    TT_TRY(tt_loss_check(op, d));
    if (d->c > 256)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "%s: %d classes do not fit uint8 labels (at most 256)", op, d->c);
    size_t pixels = (size_t)d->n * d->h * d->w;
    TT_TRY(tt_mem_check(op, "logits", logits, pixels * d->c * sizeof(float)));
    return tt_mem_check(op, "labels", labels, pixels);
}

tt_status tt_softmax_ce_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem labels,
                                const tt_loss_desc *d)
{
    const char *op = "softmax cross-entropy forward";
    TT_TRY(check(op, logits, labels, d));
    TT_TRY(tt_mem_check(op, "result", result, TT_LOSS_VALUE_BYTES));
    size_t pixels = (size_t)d->n * d->h * d->w;
    if (d->weights.buffer) {
        tt_arg extra[] = {tt_arg_mem(logits),      tt_arg_mem(labels), tt_arg_mem(d->weights),
                          tt_arg_i32(d->n),        tt_arg_i32(d->c),   tt_arg_i32(d->h * d->w),
                          tt_arg_i32(d->ignore)};
        return tt_loss_reduce(be, result, "softmax_ce_forward_weighted", pixels,
                              (int)(sizeof extra / sizeof extra[0]), extra);
    }
    tt_arg extra[] = {tt_arg_mem(logits), tt_arg_mem(labels), tt_arg_i32(d->n),
                      tt_arg_i32(d->c), tt_arg_i32(d->h * d->w), tt_arg_i32(d->ignore)};
    return tt_loss_reduce(be, result, "softmax_ce_forward", pixels,
                          (int)(sizeof extra / sizeof extra[0]), extra);
}

tt_status tt_softmax_ce_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem labels,
                                 const tt_loss_desc *d, float scale)
{
    const char *op = "softmax cross-entropy backward";
    TT_TRY(check(op, logits, labels, d));
    TT_TRY(tt_mem_check(op, "dlogits", dlogits,
                             (size_t)d->n * d->c * d->h * d->w * sizeof(float)));
    char options[32];
    tt_reduce_options(be, options, sizeof options); /* same program as the forward */
    size_t pixels = (size_t)d->n * d->h * d->w;
    if (d->weights.buffer)
        return tt_launch_kernel(be, "loss", "softmax_ce_backward_weighted", options, 1, &pixels,
                                NULL,
                                TT_ARGS(tt_arg_mem(dlogits), tt_arg_mem(logits),
                                        tt_arg_mem(labels), tt_arg_mem(d->weights),
                                        tt_arg_i32(d->n), tt_arg_i32(d->c),
                                        tt_arg_i32(d->h * d->w), tt_arg_i32(d->ignore),
                                        tt_arg_f32(scale)));
    return tt_launch_kernel(be, "loss", "softmax_ce_backward", options, 1, &pixels, NULL,
                            TT_ARGS(tt_arg_mem(dlogits), tt_arg_mem(logits), tt_arg_mem(labels),
                                    tt_arg_i32(d->n), tt_arg_i32(d->c),
                                    tt_arg_i32(d->h * d->w), tt_arg_i32(d->ignore),
                                    tt_arg_f32(scale)));
}

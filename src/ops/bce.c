/* Sigmoid binary cross-entropy: host side of opencl/loss.cl (bce_*).  With
 * class weights the _weighted kernels run (their own kernels, so the
 * unweighted ones keep their code and speed). */
#include "ops/bce.h"

#include "core/status.h"

static tt_status check(const char *op, tt_mem logits, tt_mem targets, const tt_loss_desc *d)
{
    TT_TRY(tt_loss_check(op, d));
    size_t total = (size_t)d->n * d->c * d->h * d->w;
    TT_TRY(tt_mem_check(op, "logits", logits, total * sizeof(float)));
    return tt_mem_check(op, "targets", targets, total);
}

tt_status tt_bce_forward(tt_backend *be, tt_mem result, tt_mem logits, tt_mem targets,
                         const tt_loss_desc *d)
{
    const char *op = "binary cross-entropy forward";
    TT_TRY(check(op, logits, targets, d));
    TT_TRY(tt_mem_check(op, "result", result, TT_LOSS_VALUE_BYTES));
    int total = d->n * d->c * d->h * d->w;
    if (d->weights.buffer) {
        tt_arg extra[] = {tt_arg_mem(logits), tt_arg_mem(targets),     tt_arg_mem(d->weights),
                          tt_arg_i32(total),  tt_arg_i32(d->c),        tt_arg_i32(d->h * d->w),
                          tt_arg_i32(d->ignore)};
        return tt_loss_reduce(be, result, "bce_forward_weighted", (size_t)total,
                              (int)(sizeof extra / sizeof extra[0]), extra);
    }
    tt_arg extra[] = {tt_arg_mem(logits), tt_arg_mem(targets), tt_arg_i32(total),
                      tt_arg_i32(d->ignore)};
    return tt_loss_reduce(be, result, "bce_forward", (size_t)total,
                          (int)(sizeof extra / sizeof extra[0]), extra);
}

tt_status tt_bce_backward(tt_backend *be, tt_mem dlogits, tt_mem logits, tt_mem targets,
                          const tt_loss_desc *d, float scale)
{
    const char *op = "binary cross-entropy backward";
    TT_TRY(check(op, logits, targets, d));
    size_t total = (size_t)d->n * d->c * d->h * d->w;
    TT_TRY(tt_mem_check(op, "dlogits", dlogits, total * sizeof(float)));
    char options[32];
    tt_reduce_options(be, options, sizeof options); /* same program as the forward */
    if (d->weights.buffer)
        return tt_launch_kernel(be, "loss", "bce_backward_weighted", options, 1, &total, NULL,
                                TT_ARGS(tt_arg_mem(dlogits), tt_arg_mem(logits),
                                        tt_arg_mem(targets), tt_arg_mem(d->weights),
                                        tt_arg_i32((int)total), tt_arg_i32(d->c),
                                        tt_arg_i32(d->h * d->w), tt_arg_i32(d->ignore),
                                        tt_arg_f32(scale)));
    return tt_launch_kernel(be, "loss", "bce_backward", options, 1, &total, NULL,
                            TT_ARGS(tt_arg_mem(dlogits), tt_arg_mem(logits), tt_arg_mem(targets),
                                    tt_arg_i32((int)total), tt_arg_i32(d->ignore),
                                    tt_arg_f32(scale)));
}

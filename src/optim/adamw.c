/* AdamW: host-side scalars and the launch of opencl/optim.cl's adamw kernel. */
#include "optim/adamw.h"

#include <math.h>

#include "core/status.h"

/* Launches are split so that every count fits the kernel's int. */
#define TT_ADAMW_CHUNK ((size_t)1 << 30)

tt_adamw_config tt_adamw_config_default(void)
{
    return (tt_adamw_config){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                             .weight_decay = 0.01};
}

tt_status tt_adamw_config_check(const tt_adamw_config *c)
{
    if (!(c->lr >= 0) || isinf(c->lr))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "AdamW: learning rate %g must be finite and >= 0",
                            c->lr);
    if (!(c->eps >= 0) || isinf(c->eps))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "AdamW: eps %g must be finite and >= 0", c->eps);
    if (!(c->beta1 >= 0 && c->beta1 < 1))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "AdamW: beta1 %g must be in [0, 1)", c->beta1);
    if (!(c->beta2 >= 0 && c->beta2 < 1))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "AdamW: beta2 %g must be in [0, 1)", c->beta2);
    if (!(c->weight_decay >= 0) || isinf(c->weight_decay))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "AdamW: weight_decay %g must be finite and >= 0", c->weight_decay);
    return NULL;
}

tt_adamw_scalars tt_adamw_scalars_of(const tt_adamw_config *c, double lr, int64_t step)
{
    /* torch: Python floats (double), rounded to float32 where they meet a tensor */
    double beta1 = c->beta1, beta2 = c->beta2, t = (double)step;
    double bias_correction1 = 1.0 - pow(beta1, t);
    double bias_correction2 = 1.0 - pow(beta2, t);
    return (tt_adamw_scalars){
        .decay = (float)(1.0 - lr * (double)c->weight_decay),
        .beta1 = (float)beta1,
        .one_minus_beta1 = (float)(1.0 - beta1),
        .beta2 = (float)beta2,
        .one_minus_beta2 = (float)(1.0 - beta2),
        .neg_step_size = (float)-(lr / bias_correction1),
        .bias_correction2_sqrt = (float)sqrt(bias_correction2),
        .eps = (float)c->eps,
    };
}

tt_status tt_adamw_update(tt_backend *backend, tt_mem param, tt_mem grad, tt_mem exp_avg,
                          tt_mem exp_avg_sq, size_t n, const tt_adamw_config *config, double lr,
                          int64_t step)
{
    TT_TRY(tt_adamw_config_check(config));
    if (step < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "AdamW: step %lld must be >= 1 (the 1-based count of updates)",
                            (long long)step);
    if (!(lr >= 0) || isinf(lr))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "AdamW: learning rate %g of step %lld must be "
                            "finite and >= 0", lr, (long long)step);
    tt_adamw_scalars s = tt_adamw_scalars_of(config, lr, step);
    for (size_t done = 0; done < n; done += TT_ADAMW_CHUNK) {
        size_t count = n - done < TT_ADAMW_CHUNK ? n - done : TT_ADAMW_CHUNK;
        TT_TRY(TT_LAUNCH_1D(backend, "optim", "adamw", count, tt_arg_mem(tt_mem_f32(param, done)),
                            tt_arg_mem(tt_mem_f32(grad, done)), tt_arg_mem(tt_mem_f32(exp_avg, done)),
                            tt_arg_mem(tt_mem_f32(exp_avg_sq, done)), tt_arg_f32(s.decay),
                            tt_arg_f32(s.beta1), tt_arg_f32(s.one_minus_beta1), tt_arg_f32(s.beta2),
                            tt_arg_f32(s.one_minus_beta2), tt_arg_f32(s.neg_step_size),
                            tt_arg_f32(s.bias_correction2_sqrt), tt_arg_f32(s.eps),
                            tt_arg_i32((int32_t)count)));
    }
    return NULL;
}

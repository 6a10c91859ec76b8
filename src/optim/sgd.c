/* SGD: host-side checks and the launch of opencl/optim.cl's sgd kernels. */
#include "optim/sgd.h"

#include <math.h>

#include "core/status.h"

/* Launches are split so that every count fits the kernel's int. */
#define TT_SGD_CHUNK ((size_t)1 << 30)

tt_sgd_config tt_sgd_config_default(void)
{
    return (tt_sgd_config){.lr = 1e-2, .momentum = 0, .dampening = 0, .weight_decay = 0,
                           .nesterov = 0};
}

tt_status tt_sgd_config_check(const tt_sgd_config *c)
{
    if (!(c->lr >= 0) || isinf(c->lr))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "SGD: learning rate %g must be finite and >= 0",
                            c->lr);
    if (!(c->momentum >= 0) || isinf(c->momentum))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "SGD: momentum %g must be finite and >= 0",
                            c->momentum);
    if (!isfinite(c->dampening))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "SGD: dampening %g must be finite",
                            c->dampening);
    if (!(c->weight_decay >= 0) || isinf(c->weight_decay))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "SGD: weight_decay %g must be finite and >= 0", c->weight_decay);
    if (c->nesterov && (c->momentum <= 0 || c->dampening != 0))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "SGD: Nesterov momentum needs momentum > 0 and dampening 0 "
                            "(got momentum %g, dampening %g)", c->momentum, c->dampening);
    return NULL;
}

tt_status tt_sgd_update(tt_backend *backend, tt_mem param, tt_mem grad, tt_mem momentum_buffer,
                        size_t n, const tt_sgd_config *config, double lr, int64_t step)
{
    TT_TRY(tt_sgd_config_check(config));
    if (step < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "SGD: step %lld must be >= 1 (the 1-based count of updates)",
                            (long long)step);
    if (!(lr >= 0) || isinf(lr))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "SGD: learning rate %g of step %lld must be finite and >= 0", lr,
                            (long long)step);
    int with_momentum = config->momentum != 0;
    if (with_momentum && !momentum_buffer.buffer)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "SGD: momentum %g needs a momentum buffer; allocate one of %zu floats",
                            config->momentum, n);
    /* torch rounds each Python float to float32 where it meets a tensor */
    float weight_decay = (float)config->weight_decay, neg_lr = (float)-lr;
    for (size_t done = 0; done < n; done += TT_SGD_CHUNK) {
        size_t count = n - done < TT_SGD_CHUNK ? n - done : TT_SGD_CHUNK;
        tt_mem p = tt_mem_f32(param, done), g = tt_mem_f32(grad, done);
        if (!with_momentum) {
            TT_TRY(TT_LAUNCH_1D(backend, "optim", "sgd", count, tt_arg_mem(p), tt_arg_mem(g),
                                tt_arg_f32(weight_decay), tt_arg_f32(neg_lr),
                                tt_arg_i32((int32_t)count)));
            continue;
        }
        TT_TRY(TT_LAUNCH_1D(backend, "optim", "sgd_momentum", count, tt_arg_mem(p), tt_arg_mem(g),
                            tt_arg_mem(tt_mem_f32(momentum_buffer, done)),
                            tt_arg_f32(weight_decay), tt_arg_f32((float)config->momentum),
                            tt_arg_f32((float)(1.0 - config->dampening)), tt_arg_f32(neg_lr),
                            tt_arg_i32(config->nesterov ? 1 : 0), tt_arg_i32(step == 1 ? 1 : 0),
                            tt_arg_i32((int32_t)count)));
    }
    return NULL;
}

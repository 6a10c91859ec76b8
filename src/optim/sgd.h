/*
 * SGD (torch.optim.SGD): coupled weight decay, optional momentum with
 * dampening, optional Nesterov, over flat float arenas in one launch.
 *
 * The caller owns the memory: parameters, gradients and, with momentum, a
 * momentum buffer of the same length (TT_MEM_OPTIMIZER; its content before
 * the first step does not matter).  The caller keeps the 1-based step count:
 * on step 1 the buffer is set to the (decayed) gradient, as torch does when
 * it creates the buffer; later steps blend into it.
 */
#ifndef TT_OPTIM_SGD_H
#define TT_OPTIM_SGD_H

#include <stdint.h>

#include "backend/backend.h"

/* Hyperparameters, in double like torch's Python floats. */
typedef struct tt_sgd_config {
    double lr;           /* base learning rate (a schedule scales it per step) */
    double momentum;     /* 0: plain SGD, no buffer */
    double dampening;    /* buf = momentum buf + (1 - dampening) g */
    double weight_decay; /* coupled: g += weight_decay * p */
    int nesterov;        /* needs momentum > 0 and dampening == 0 */
} tt_sgd_config;

/* lr 1e-2, no momentum, no dampening, no weight decay, no Nesterov (torch
 * has no default lr; this one is a common starting point). */
tt_sgd_config tt_sgd_config_default(void);

/* NULL if the config is valid; else TT_ERR_INVALID_ARGUMENT naming the field
 * (torch's rules: lr, momentum, weight_decay >= 0; Nesterov needs momentum
 * > 0 and dampening 0). */
tt_status tt_sgd_config_check(const tt_sgd_config *config);

/* One SGD update of n floats, in place (g is read only):
 *   d = g + wd p
 *   with momentum: buf = step == 1 ? d : momentum buf + (1 - dampening) d
 *                  d = nesterov ? d + momentum buf : buf
 *   p = p - lr d
 * `momentum_buffer` is ignored (may be (tt_mem){0}) when momentum is 0.
 * `step` is 1-based, `lr` the scheduled rate of this step.  Errors: invalid
 * config, step < 1, missing buffer (TT_ERR_INVALID_ARGUMENT); launch errors. */
tt_status tt_sgd_update(tt_backend *backend, tt_mem param, tt_mem grad, tt_mem momentum_buffer,
                        size_t n, const tt_sgd_config *config, double lr, int64_t step);

#endif

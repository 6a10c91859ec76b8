/*
 * AdamW (torch.optim.AdamW): decoupled weight decay, then Adam with bias
 * correction, over flat float arenas in one kernel launch.
 *
 * The caller owns the memory: parameters and gradients (same layout) and two
 * state arrays of the same length (exp_avg, exp_avg_sq), zeroed before the
 * first step and allocated as TT_MEM_OPTIMIZER.  The caller also keeps the
 * step count (one per optimizer step, shared by every arena chunk, saved in
 * checkpoints), so one step may be several launches over several buffers.
 */
#ifndef TT_OPTIM_ADAMW_H
#define TT_OPTIM_ADAMW_H

#include <stdint.h>

#include "backend/backend.h"

/* Hyperparameters, in double like torch's Python floats (1 - 0.9 must be
 * the double 0.1 rounded once, not 1 - 0.9f); tt_adamw_config_default()
 * gives torch's defaults. */
typedef struct tt_adamw_config {
    double lr;           /* base learning rate (a schedule scales it per step) */
    double beta1, beta2; /* moment decay rates, in [0, 1) */
    double eps;          /* added to sqrt(v_hat), >= 0 */
    double weight_decay; /* decoupled: p *= 1 - lr * weight_decay; >= 0 */
} tt_adamw_config;

/* lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0.01. */
tt_adamw_config tt_adamw_config_default(void);

/* NULL if every field is in range; else TT_ERR_INVALID_ARGUMENT naming the
 * field and its value (same rules as torch: lr, eps, weight_decay >= 0,
 * betas in [0, 1)). */
tt_status tt_adamw_config_check(const tt_adamw_config *config);

/* The float scalars one step passes to the kernel, computed on the host in
 * double as torch does (Python floats) and rounded once. */
typedef struct tt_adamw_scalars {
    float decay;                 /* 1 - lr * weight_decay */
    float beta1, one_minus_beta1;
    float beta2, one_minus_beta2;
    float neg_step_size;         /* -lr / (1 - beta1^step) */
    float bias_correction2_sqrt; /* sqrt(1 - beta2^step) */
    float eps;
} tt_adamw_scalars;

/* Scalars of step `step` (1-based: 1 for the first update) at learning rate
 * `lr` (the scheduled rate of this step; config->lr is not used). */
tt_adamw_scalars tt_adamw_scalars_of(const tt_adamw_config *config, double lr, int64_t step);

/* One AdamW update of n floats, in place:
 *   param = param * (1 - lr wd);  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   param -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * `grad` is read only.  `step` is 1-based (t), `lr` the rate of this step.
 * Errors: an invalid config or step < 1 (TT_ERR_INVALID_ARGUMENT), launch
 * failures.  n == 0 does nothing.  The update is enqueued, not finished. */
tt_status tt_adamw_update(tt_backend *backend, tt_mem param, tt_mem grad, tt_mem exp_avg,
                          tt_mem exp_avg_sq, size_t n, const tt_adamw_config *config, double lr,
                          int64_t step);

#endif

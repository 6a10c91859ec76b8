/*
 * Optimizer updates over flat float arenas: one launch updates every
 * parameter.  The host computes the step count, bias corrections and the
 * learning rate of this step and passes them as scalars (src/optim).
 *
 * The arithmetic follows PyTorch 1.13's single-tensor CPU path operation by
 * operation, in float32: `a.add_(b, alpha=s)` is a fused multiply-add there
 * (Vectorized fmadd), so it is fma(b, s, a) here, and so is
 * `a.addcmul_(b, c, value=s)` (compiled as fma(s * b, c, a)); every other
 * product and sum is rounded on its own, so contraction is switched off.
 * tests/test_adamw.c and tests/test_sgd.c compare with torch.optim and
 * count the elements that are bitwise equal.
 */
#pragma OPENCL FP_CONTRACT OFF

/* AdamW (torch.optim.AdamW, decoupled weight decay), element i:
 *   p  = p * decay                          decay = 1 - lr * weight_decay
 *   m  = fma(g, 1 - beta1, m * beta1)
 *   v  = fma((1 - beta2) * g, g, v * beta2)
 *   p  = p + (neg_step_size * m) / (sqrt(v) / bias_correction2_sqrt + eps)
 * with neg_step_size = -lr / (1 - beta1^t), bias_correction2_sqrt =
 * sqrt(1 - beta2^t), t the 1-based step. */
__kernel void adamw(TT_MEM(float, param), TT_MEM(const float, grad), TT_MEM(float, exp_avg),
                    TT_MEM(float, exp_avg_sq), const float decay, const float beta1,
                    const float one_minus_beta1, const float beta2, const float one_minus_beta2,
                    const float neg_step_size, const float bias_correction2_sqrt, const float eps,
                    const int n)
{
    TT_PTR(float, param);
    TT_PTR(const float, grad);
    TT_PTR(float, exp_avg);
    TT_PTR(float, exp_avg_sq);
    int i = get_global_id(0);
    if (i >= n) return;
    float g = grad[i];
    float p = param[i] * decay;
    float m = fma(g, one_minus_beta1, exp_avg[i] * beta1);
    float v = fma(one_minus_beta2 * g, g, exp_avg_sq[i] * beta2);
    float denom = sqrt(v) / bias_correction2_sqrt + eps;
    param[i] = p + neg_step_size * m / denom;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
}

/* SGD without momentum (torch.optim.SGD, momentum = 0), element i:
 *   d = fma(p, weight_decay, g)     (only when weight_decay != 0)
 *   p = fma(d, -lr, p)
 * The gradient is read, never written. */
__kernel void sgd(TT_MEM(float, param), TT_MEM(const float, grad), const float weight_decay,
                  const float neg_lr, const int n)
{
    TT_PTR(float, param);
    TT_PTR(const float, grad);
    int i = get_global_id(0);
    if (i >= n) return;
    float p = param[i];
    float d = grad[i];
    if (weight_decay != 0.0f) d = fma(p, weight_decay, d);
    param[i] = fma(d, neg_lr, p);
}

/* SGD with momentum (torch.optim.SGD, momentum > 0), element i:
 *   d   = fma(p, weight_decay, g)               (only when weight_decay != 0)
 *   buf = first ? d : fma(d, 1 - dampening, buf * momentum)
 *   d   = nesterov ? fma(buf, momentum, d) : buf
 *   p   = fma(d, -lr, p)
 * `first` is 1 on the first step, when torch creates the buffer as a copy of d. */
__kernel void sgd_momentum(TT_MEM(float, param), TT_MEM(const float, grad),
                           TT_MEM(float, momentum_buffer), const float weight_decay,
                           const float momentum, const float one_minus_dampening,
                           const float neg_lr, const int nesterov, const int first, const int n)
{
    TT_PTR(float, param);
    TT_PTR(const float, grad);
    TT_PTR(float, momentum_buffer);
    int i = get_global_id(0);
    if (i >= n) return;
    float p = param[i];
    float d = grad[i];
    if (weight_decay != 0.0f) d = fma(p, weight_decay, d);
    float buf = first ? d : fma(d, one_minus_dampening, momentum_buffer[i] * momentum);
    momentum_buffer[i] = buf;
    if (nesterov) d = fma(buf, momentum, d);
    else d = buf;
    param[i] = fma(d, neg_lr, p);
}

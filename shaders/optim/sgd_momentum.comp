/* optim/sgd_momentum: one SGD step with momentum (opencl/optim.cl
 * sgd_momentum; arguments param, grad, momentum_buffer, weight_decay,
 * momentum, one_minus_dampening, neg_lr, nesterov, first, n):
 *   d   = fma(p, weight_decay, g)        (only when weight_decay != 0)
 *   buf = first ? d : fma(d, 1 - dampening, buf * momentum)
 *   d   = nesterov ? fma(buf, momentum, d) : buf
 *   p   = fma(d, -lr, p) */
#version 450
#include "common.glsl"
#include "exact_fma.glsl"

TT_BUFFER(0, float, param);
TT_BUFFER(1, float, grad);
TT_BUFFER(2, float, momentum_buffer);
layout(push_constant) uniform Args {
    uint param_offset; uint grad_offset; uint momentum_buffer_offset;
    float weight_decay; float momentum; float one_minus_dampening; float neg_lr;
    int nesterov; int first; int n;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    int ip = TT_AT(args.param_offset, 4) + i, ib = TT_AT(args.momentum_buffer_offset, 4) + i;
    float p = TT_B(param)[ip];
    precise float d = TT_B(grad)[TT_AT(args.grad_offset, 4) + i];
    if (args.weight_decay != 0.0) d = tt_fma(p, args.weight_decay, d);
    precise float buf = args.first != 0
        ? d : tt_fma(d, args.one_minus_dampening, TT_B(momentum_buffer)[ib] * args.momentum);
    TT_B(momentum_buffer)[ib] = buf;
    if (args.nesterov != 0) d = tt_fma(buf, args.momentum, d);
    else d = buf;
    precise float next = tt_fma(d, args.neg_lr, p);
    TT_B(param)[ip] = next;
}

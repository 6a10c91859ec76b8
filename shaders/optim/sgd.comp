/* optim/sgd: one SGD step without momentum (opencl/optim.cl sgd; arguments
 * param, grad, weight_decay, neg_lr, n): d = fma(p, weight_decay, g) when
 * weight_decay != 0, p = fma(d, -lr, p).  The gradient is only read. */
#version 450
#include "common.glsl"
#include "exact_fma.glsl"

TT_BUFFER(0, float, param);
TT_BUFFER(1, float, grad);
layout(push_constant) uniform Args {
    uint param_offset; uint grad_offset; float weight_decay; float neg_lr; int n;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    int ip = TT_AT(args.param_offset, 4) + i;
    float p = TT_B(param)[ip];
    precise float d = TT_B(grad)[TT_AT(args.grad_offset, 4) + i];
    if (args.weight_decay != 0.0) d = tt_fma(p, args.weight_decay, d);
    precise float next = tt_fma(d, args.neg_lr, p);
    TT_B(param)[ip] = next;
}

/* optim/adamw: one AdamW step over flat arrays (opencl/optim.cl adamw;
 * arguments param, grad, exp_avg, exp_avg_sq, decay, beta1,
 * one_minus_beta1, beta2, one_minus_beta2, neg_step_size,
 * bias_correction2_sqrt, eps, n).  The OpenCL kernel fuses exactly the
 * products it writes as fma() and rounds every other operation on its own
 * (FP_CONTRACT OFF): here tt_fma() (exact_fma.glsl, rounded once) where it
 * has fma(), `precise` elsewhere. */
#version 450
#include "common.glsl"
#include "exact_fma.glsl"

TT_BUFFER(0, float, param);
TT_BUFFER(1, float, grad);
TT_BUFFER(2, float, exp_avg);
TT_BUFFER(3, float, exp_avg_sq);
layout(push_constant) uniform Args {
    uint param_offset; uint grad_offset; uint exp_avg_offset; uint exp_avg_sq_offset;
    float decay; float beta1; float one_minus_beta1; float beta2; float one_minus_beta2;
    float neg_step_size; float bias_correction2_sqrt; float eps; int n;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    int ip = TT_AT(args.param_offset, 4) + i, im = TT_AT(args.exp_avg_offset, 4) + i;
    int iv = TT_AT(args.exp_avg_sq_offset, 4) + i;
    float g = TT_B(grad)[TT_AT(args.grad_offset, 4) + i];
    precise float p = TT_B(param)[ip] * args.decay;
    precise float m = tt_fma(g, args.one_minus_beta1, TT_B(exp_avg)[im] * args.beta1);
    precise float v = tt_fma(args.one_minus_beta2 * g, g, TT_B(exp_avg_sq)[iv] * args.beta2);
    precise float denom = sqrt(v) / args.bias_correction2_sqrt + args.eps;
    precise float next = p + args.neg_step_size * m / denom;
    TT_B(param)[ip] = next;
    TT_B(exp_avg)[im] = m;
    TT_B(exp_avg_sq)[iv] = v;
}

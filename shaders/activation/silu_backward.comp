/* activation/silu_backward: dinp += dout * s * (1 + inp * (1 - s)),
 * s = sigmoid(inp) from exp(-|inp|), finite for every finite inp
 * (opencl/activation.cl; arguments dinp, dout, inp, n). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, inp);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint inp_offset; int n;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    int id = TT_AT(args.dinp_offset, 4) + i;
    float g = TT_B(dout)[TT_AT(args.dout_offset, 4) + i];
    float x = TT_B(inp)[TT_AT(args.inp_offset, 4) + i];
    float e = exp(-abs(x));
    float r = 1.0 / (1.0 + e);
    float s = x >= 0.0 ? r : e * r;
    precise float slope = s * (1.0 + x * (1.0 - s));
    precise float sum = TT_B(dinp)[id] + g * slope;
    TT_B(dinp)[id] = sum;
}

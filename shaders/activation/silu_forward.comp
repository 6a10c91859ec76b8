/* activation/silu_forward: out = inp * sigmoid(inp), sigmoid from
 * exp(-|inp|) so that no large |inp| overflows (opencl/activation.cl;
 * arguments out, inp, n). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, inp);
layout(push_constant) uniform Args { uint out_offset; uint inp_offset; int n; } args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    float x = TT_B(inp)[TT_AT(args.inp_offset, 4) + i];
    float e = exp(-abs(x));
    float r = 1.0 / (1.0 + e);
    float s = x >= 0.0 ? r : e * r;
    precise float y = x * s;
    TT_B(outp)[TT_AT(args.out_offset, 4) + i] = y;
}

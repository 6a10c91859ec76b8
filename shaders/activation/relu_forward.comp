/* activation/relu_forward: out = max(inp, 0), NaN passed through
 * (opencl/activation.cl; arguments out, inp, n). */
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
    float y = x < 0.0 ? 0.0 : x;
    TT_B(outp)[TT_AT(args.out_offset, 4) + i] = y;
}

/* add/add_forward: out = a + b, with relu out < 0 -> 0 (NaN passed through)
 * (opencl/add.cl; arguments out, a, b, relu, n). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, a);
TT_BUFFER(2, float, b);
layout(push_constant) uniform Args {
    uint out_offset; uint a_offset; uint b_offset; int relu; int n;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    precise float v = TT_B(a)[TT_AT(args.a_offset, 4) + i] + TT_B(b)[TT_AT(args.b_offset, 4) + i];
    TT_B(outp)[TT_AT(args.out_offset, 4) + i] = args.relu != 0 && v < 0.0 ? 0.0 : v;
}

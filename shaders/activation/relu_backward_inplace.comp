/* activation/relu_backward_inplace: d = out > 0 ? d : 0, in place
 * (opencl/activation.cl; arguments d, out, n). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, d);
TT_BUFFER(1, float, outp);
layout(push_constant) uniform Args { uint d_offset; uint out_offset; int n; } args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    if (!(TT_B(outp)[TT_AT(args.out_offset, 4) + i] > 0.0)) TT_B(d)[TT_AT(args.d_offset, 4) + i] = 0.0;
}

/* activation/sigmoid_backward: dinp += dout * out * (1 - out)
 * (opencl/activation.cl; arguments dinp, dout, out, n). */
#version 450
#include "common.glsl"
#include "exact_fma.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, outp);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint out_offset; int n;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    int id = TT_AT(args.dinp_offset, 4) + i;
    float g = TT_B(dout)[TT_AT(args.dout_offset, 4) + i];
    float y = TT_B(outp)[TT_AT(args.out_offset, 4) + i];
    precise float sum = tt_fma(g * y, 1.0 - y, TT_B(dinp)[id]);
    TT_B(dinp)[id] = sum;
}

/* activation/leaky_relu_backward: dinp += out > 0 ? dout : negative_slope *
 * dout (opencl/activation.cl; arguments dinp, dout, out, negative_slope, n). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, float, outp);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint out_offset; float negative_slope; int n;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    int id = TT_AT(args.dinp_offset, 4) + i;
    float g = TT_B(dout)[TT_AT(args.dout_offset, 4) + i];
    float y = TT_B(outp)[TT_AT(args.out_offset, 4) + i];
    precise float term = y > 0.0 ? g : g * args.negative_slope;
    precise float sum = TT_B(dinp)[id] + term;
    TT_B(dinp)[id] = sum;
}

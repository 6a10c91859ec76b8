/* channel/global_avg_pool_backward: dinp[i] += dout[i / plane] * scale,
 * scale = 1 / plane (opencl/channel.cl; arguments dinp, dout, plane, n,
 * scale). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; int plane; int n; float scale;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    int id = TT_AT(args.dinp_offset, 4) + i;
    float g = TT_B(dout)[TT_AT(args.dout_offset, 4) + i / args.plane];
    precise float term = g * args.scale;
    precise float sum = TT_B(dinp)[id] + term;
    TT_B(dinp)[id] = sum;
}

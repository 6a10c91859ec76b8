/* channel/channel_mul_forward: y[i] = x[i] * s[i / plane]; y may be x
 * (opencl/channel.cl; arguments y, x, s, plane, n). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, y);
TT_BUFFER(1, float, x);
TT_BUFFER(2, float, s);
layout(push_constant) uniform Args {
    uint y_offset; uint x_offset; uint s_offset; int plane; int n;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    float v = TT_B(x)[TT_AT(args.x_offset, 4) + i];
    precise float r = v * TT_B(s)[TT_AT(args.s_offset, 4) + i / args.plane];
    TT_B(y)[TT_AT(args.y_offset, 4) + i] = r;
}

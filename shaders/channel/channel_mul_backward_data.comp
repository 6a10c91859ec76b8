/* channel/channel_mul_backward_data: dx[i] += dy[i] * s[i / plane]
 * (opencl/channel.cl; arguments dx, dy, s, plane, n). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dx);
TT_BUFFER(1, float, dy);
TT_BUFFER(2, float, s);
layout(push_constant) uniform Args {
    uint dx_offset; uint dy_offset; uint s_offset; int plane; int n;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    int id = TT_AT(args.dx_offset, 4) + i;
    float g = TT_B(dy)[TT_AT(args.dy_offset, 4) + i];
    precise float term = g * TT_B(s)[TT_AT(args.s_offset, 4) + i / args.plane];
    precise float sum = TT_B(dx)[id] + term;
    TT_B(dx)[id] = sum;
}

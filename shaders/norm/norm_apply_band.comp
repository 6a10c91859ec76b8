/* norm/norm_apply_band: norm_apply over a band of rows (src/ops/band.h)
 * into a buffer of its own (opencl/norm.cl; arguments y, x, then
 * NORM_PLANE_ARGS, first, lead, count, trail).  Invocation (k, p) sets
 * y[p len + i], len = lead + count + trail, 8 k <= i < min(8 k + 8, len):
 * 0 in the lead and the trail, between them the norm's output at
 * x[p hw + first + i - lead], norm_apply's formula and so its bits.  The
 * chunk arguments are not used. */
#version 450
#include "common.glsl"
#include "half.glsl"
#include "norm/norm.glsl"

TT_BUFFER(0, float, y);
TT_BUFFER(1, uint, x);
NORM_PLANE_BUFFERS(2);
layout(push_constant) uniform Args {
    uint y_offset; uint x_offset; NORM_PLANE_PUSH; int first; int lead; int count; int trail;
} args;

#include "norm/norm_plane.glsl"

void main()
{
    int k = int(gl_GlobalInvocationID.x), p = int(gl_GlobalInvocationID.y);
    int len = args.lead + args.count + args.trail;
    int begin = 8 * k, end = min(len, 8 * k + 8);
    if (begin >= end) return;
    norm_plane q = norm_plane_of(p);
    int xb = norm_x_first(args.x_offset, p, args.hw) + args.first - args.lead;
    int yb = TT_AT(args.y_offset, 4) + p * len;
    for (int i = begin; i < end; i++) {
        float v = 0.0;
        if (i >= args.lead && i < args.lead + args.count) {
            v = norm_value(NORM_X(xb + i), q.mean, q.r, q.w, q.b);
            if (args.relu != 0 && !(v > 0.0)) v = 0.0;
        }
        TT_B(y)[yb + i] = v;
    }
}

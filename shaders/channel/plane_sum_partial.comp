/* channel/plane_sum_partial: dst[g] (+)= scale * the sum of a over chunk
 * g % chunks of plane g / chunks (opencl/channel.cl; arguments dst, a,
 * planes, plane, chunk, chunks, scale, accumulate).  One work-group of
 * TT_WG (the launch's local size) per chunk, the OpenCL kernel's strided
 * walk and tree; g counts the groups of a launch folded into rows, and the
 * groups past the last plane (the fold's rounding) leave at once, whole. */
#version 450
#include "common.glsl"

layout(constant_id = 3) const int TT_WG = 256;

TT_BUFFER(0, float, dst);
TT_BUFFER(1, float, a);
layout(push_constant) uniform Args {
    uint dst_offset; uint a_offset; int planes; int plane; int chunk; int chunks; float scale;
    int accumulate;
} args;
shared float s[TT_WG];

void main()
{
    int g = int(gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x);
    int lid = int(gl_LocalInvocationID.x);
    int p = g / args.chunks;
    if (p >= args.planes) return; /* the whole group */
    int begin = (g - p * args.chunks) * args.chunk;
    int end = args.chunk < args.plane - begin ? begin + args.chunk : args.plane;
    int row = TT_AT(args.a_offset, 4) + p * args.plane;
    float sum = 0.0;
    for (int i = begin + lid; i < end; i += TT_WG) sum += TT_B(a)[row + i];
    s[lid] = sum;
    for (int half_ = TT_WG / 2; half_ > 0; half_ >>= 1) {
        barrier();
        if (lid < half_) s[lid] += s[lid + half_];
    }
    barrier();
    if (lid != 0) return;
    int at = TT_AT(args.dst_offset, 4) + g;
    precise float v = s[0] * args.scale;
    if (args.accumulate != 0) v = TT_B(dst)[at] + v;
    TT_B(dst)[at] = v;
}

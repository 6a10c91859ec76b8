/* norm/norm_apply: y = norm_value(x), or with relu that where it is > 0
 * and 0 elsewhere (NaN included); y may be x (opencl/norm.cl; arguments y,
 * x, then NORM_PLANE_ARGS). */
#version 450
#include "common.glsl"
#include "half.glsl"
#include "norm/norm.glsl"

TT_BUFFER(0, float, y);
TT_BUFFER(1, uint, x);
NORM_PLANE_BUFFERS(2);
layout(push_constant) uniform Args { uint y_offset; uint x_offset; NORM_PLANE_PUSH; } args;

#include "norm/norm_plane.glsl"

void main()
{
    int k = int(gl_GlobalInvocationID.x), p = int(gl_GlobalInvocationID.y);
    if (k >= args.chunks) return;
    norm_plane q = norm_plane_of(p);
    int nv = args.hw / 8, m = norm_share(k, nv, args.chunks, args.chunk_vecs);
    int ends = m * 8 + norm_tail(k, args.hw);
    int xb = norm_x_first(args.x_offset, p, args.hw), yb = TT_AT(args.y_offset, 4) + p * args.hw;
    /* element e < 8 m of the share is in vector e / 8, then the tail */
    for (int e = 0; e < ends; e++) {
        int at = e < 8 * m ? norm_vec(k, e / 8, args.chunks, args.chunk_vecs) + e % 8
                           : 8 * nv + e - 8 * m;
        float v = norm_value(NORM_X(xb + at), q.mean, q.r, q.w, q.b);
        TT_B(y)[yb + at] = args.relu != 0 && !(v > 0.0) ? 0.0 : v;
    }
}

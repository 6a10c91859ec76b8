/* norm/norm_backward_input: dinp (+)= r (g w - mean_g - xhat mean_gx) with
 * norm_input_coefs' coefficients (training), or r g w without them (eval
 * batch norm); without accumulate dinp is written and may be dy
 * (opencl/norm.cl; arguments dinp, dy, x, coef, use_coef, accumulate, then
 * NORM_PLANE_ARGS). */
#version 450
#include "common.glsl"
#include "half.glsl"
#include "norm/norm.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dy);
TT_BUFFER(2, uint, x);
TT_BUFFER(3, float, coef);
NORM_PLANE_BUFFERS(4);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dy_offset; uint x_offset; uint coef_offset; int use_coef;
    int accumulate; NORM_PLANE_PUSH;
} args;

#include "norm/norm_plane.glsl"

void main()
{
    int k = int(gl_GlobalInvocationID.x), p = int(gl_GlobalInvocationID.y);
    if (k >= args.chunks) return;
    norm_plane q = norm_plane_of(p);
    int c0 = TT_AT(args.coef_offset, 4) + 2 * q.s;
    float mean_g = args.use_coef != 0 ? TT_B(coef)[c0] : 0.0;
    float mean_gx = args.use_coef != 0 ? TT_B(coef)[c0 + 1] : 0.0;
    int nv = args.hw / 8, m = norm_share(k, nv, args.chunks, args.chunk_vecs);
    int ends = m * 8 + norm_tail(k, args.hw), off = p * args.hw;
    int xb = norm_x_first(args.x_offset, p, args.hw), db = TT_AT(args.dy_offset, 4) + off;
    int ib = TT_AT(args.dinp_offset, 4) + off;
    for (int e = 0; e < ends; e++) {
        int at = e < 8 * m ? norm_vec(k, e / 8, args.chunks, args.chunk_vecs) + e % 8
                           : 8 * nv + e - 8 * m;
        float xv = NORM_X(xb + at), g = norm_grad(TT_B(dy)[db + at], xv, q);
        float v = q.r * (g * q.w - mean_g - (xv - q.mean) * q.r * mean_gx);
        TT_B(dinp)[ib + at] = args.accumulate != 0 ? TT_B(dinp)[ib + at] + v : v;
    }
}

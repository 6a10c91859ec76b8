/* norm/norm_backward_input: dinp (+)= r (g w - mean_g - xhat mean_gx) with
 * norm_input_coefs' coefficients (training), or r g w without them (eval
 * batch norm); without accumulate dinp is written and may be dy
 * (opencl/norm.cl; arguments dinp, dy, x, coef, use_coef, accumulate, then
 * NORM_PLANE_ARGS).  dy and dinp stored as NORM_G16 says.
 *
 * In 16 bits two gradients share a word, so each word of dinp has one
 * writer: the invocation owning the word's low half, which computes the
 * high half too (the next element, in its plane or the next plane's
 * first), or, where the low half lies before the tensor, the one owning
 * the high half.  A half outside the tensor keeps its bits.  Every element
 * is read (dy, x, dinp) only by its word's writer, so in place is safe.
 * The grid's rows are exactly the planes (vk_launch.c: one row a group). */
#version 450
#include "common.glsl"
#include "half.glsl"
#include "norm/norm.glsl"

TT_BUFFER(0, uint, dinp);
TT_BUFFER(1, uint, dy);
TT_BUFFER(2, uint, x);
TT_BUFFER(3, float, coef);
NORM_PLANE_BUFFERS(4);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dy_offset; uint x_offset; uint coef_offset; int use_coef;
    int accumulate; NORM_PLANE_PUSH;
} args;

#include "norm/norm_plane.glsl"

/* Plane q's (mean_g, mean_gx): norm_input_coefs', or 0 without them. */
vec2 coefs_of(norm_plane q)
{
    if (args.use_coef == 0) return vec2(0.0);
    int c0 = TT_AT(args.coef_offset, 4) + 2 * q.s;
    return vec2(TT_B(coef)[c0], TT_B(coef)[c0 + 1]);
}

/* The term added to (or written at) the element with x index xe and dy
 * index ge, of plane q with coefficients c. */
float term(norm_plane q, vec2 c, int xe, int ge)
{
    float xv = NORM_X(xe), g = norm_grad(NORM_G(dy, ge), xv, q);
    return q.r * (g * q.w - c.x - (xv - q.mean) * q.r * c.y);
}

/* The 16 bits of dinp half h (as word holds it) after adding or writing v. */
uint new_half(uint word, int h, float v)
{
    return norm_g_bits(args.accumulate != 0 ? norm_g_value(word, h) + v : v);
}

void main()
{
    int k = int(gl_GlobalInvocationID.x), p = int(gl_GlobalInvocationID.y);
    if (k >= args.chunks) return;
    int planes = int(gl_NumWorkGroups.y * gl_WorkGroupSize.y);
    norm_plane q = norm_plane_of(p);
    vec2 c = coefs_of(q);
    int nv = args.hw / 8, m = norm_share(k, nv, args.chunks, args.chunk_vecs);
    int ends = m * 8 + norm_tail(k, args.hw), off = p * args.hw;
    int xb = norm_x_first(args.x_offset, p, args.hw), db = norm_g_first(args.dy_offset, p, args.hw);
    int ib = norm_g_first(args.dinp_offset, p, args.hw);
    for (int e = 0; e < ends; e++) {
        int at = e < 8 * m ? norm_vec(k, e / 8, args.chunks, args.chunk_vecs) + e % 8
                           : 8 * nv + e - 8 * m;
        if (NORM_G16 == 0) {
            float v = term(q, c, xb + at, db + at);
            if (args.accumulate != 0) v = uintBitsToFloat(TT_B(dinp)[ib + at]) + v;
            TT_B(dinp)[ib + at] = floatBitsToUint(v);
            continue;
        }
        int h = ib + at;
        bool high = (h & 1) != 0;
        if (high && off + at > 0) continue; /* the previous element's invocation writes it */
        uint word = TT_B(dinp)[h >> 1];
        uint lo = word & 0xffffu, hi = word >> 16;
        float v = term(q, c, xb + at, db + at);
        if (high) {
            hi = new_half(word, h, v);
        } else {
            lo = new_half(word, h, v);
            if (at + 1 < args.hw) {
                hi = new_half(word, h + 1, term(q, c, xb + at + 1, db + at + 1));
            } else if (p + 1 < planes) { /* the next plane's first element */
                norm_plane q1 = norm_plane_of(p + 1);
                hi = new_half(word, h + 1, term(q1, coefs_of(q1), xb + at + 1, db + at + 1));
            }
        }
        TT_B(dinp)[h >> 1] = lo | (hi << 16);
    }
}

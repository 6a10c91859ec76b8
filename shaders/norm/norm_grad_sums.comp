/* norm/norm_grad_sums: work-item (k, p) writes partial[2 (p chunks + k) +
 * 0..1] = sum g and sum g xhat over its share, g the gradient at the
 * norm's output, xhat = (x - mean) r (opencl/norm.cl; arguments partial,
 * dy, x, then NORM_PLANE_ARGS; dy stored as NORM_G16 says). */
#version 450
#include "common.glsl"
#include "half.glsl"
#include "norm/norm.glsl"

TT_BUFFER(0, float, partial);
TT_BUFFER(1, uint, dy);
TT_BUFFER(2, uint, x);
NORM_PLANE_BUFFERS(3);
layout(push_constant) uniform Args {
    uint partial_offset; uint dy_offset; uint x_offset; NORM_PLANE_PUSH;
} args;

#include "norm/norm_plane.glsl"

void main()
{
    int k = int(gl_GlobalInvocationID.x), p = int(gl_GlobalInvocationID.y);
    if (k >= args.chunks) return;
    norm_plane q = norm_plane_of(p);
    int nv = args.hw / 8, m = norm_share(k, nv, args.chunks, args.chunk_vecs);
    int tail = norm_tail(k, args.hw);
    int xb = norm_x_first(args.x_offset, p, args.hw), db = norm_g_first(args.dy_offset, p, args.hw);
    float sg[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    float sgx[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (int j = 0; j < m; j++) {
        int i = norm_vec(k, j, args.chunks, args.chunk_vecs);
        for (int l = 0; l < 8; l++) {
            float xv = NORM_X(xb + i + l), g = norm_grad(NORM_G(dy, db + i + l), xv, q);
            sg[l] += g;
            sgx[l] = fma(g, (xv - q.mean) * q.r, sgx[l]);
        }
    }
    float a = norm_hsum(sg), b = norm_hsum(sgx);
    for (int t = 0; t < tail; t++) {
        int i = 8 * nv + t;
        float xi = NORM_X(xb + i), g = norm_grad(NORM_G(dy, db + i), xi, q);
        a += g;
        precise float gx = g * (xi - q.mean) * q.r;
        b += gx;
    }
    int at = TT_AT(args.partial_offset, 4) + 2 * (p * args.chunks + k);
    TT_B(partial)[at] = a;
    TT_B(partial)[at + 1] = b;
}

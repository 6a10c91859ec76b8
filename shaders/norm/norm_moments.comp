/* norm/norm_moments: work-item (k, p) writes partial[3 (p chunks + k) +
 * 0..2] = count, mean and sum of squared deviations of its share
 * (opencl/norm.cl; arguments partial, x, hw, chunks, chunk_vecs). */
#version 450
#include "common.glsl"
#include "half.glsl"
#include "norm/norm.glsl"

TT_BUFFER(0, float, partial);
TT_BUFFER(1, uint, x);
layout(push_constant) uniform Args {
    uint partial_offset; uint x_offset; int hw; int chunks; int chunk_vecs;
} args;

void main()
{
    int k = int(gl_GlobalInvocationID.x), p = int(gl_GlobalInvocationID.y);
    if (k >= args.chunks) return;
    int plane = norm_x_first(args.x_offset, p, args.hw);
    int nv = args.hw / 8, m = norm_share(k, nv, args.chunks, args.chunk_vecs);
    int tail = norm_tail(k, args.hw), rest = plane + 8 * nv;
    float acc[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (int j = 0; j < m; j++) {
        int i = plane + norm_vec(k, j, args.chunks, args.chunk_vecs);
        for (int l = 0; l < 8; l++) acc[l] += NORM_X(i + l);
    }
    float sum = norm_hsum(acc);
    for (int t = 0; t < tail; t++) sum += NORM_X(rest + t);
    float count = float(8 * m + tail);
    float mu = count > 0.0 ? sum / count : 0.0;
    float sq[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (int j = 0; j < m; j++) {
        int i = plane + norm_vec(k, j, args.chunks, args.chunk_vecs);
        for (int l = 0; l < 8; l++) {
            float d = NORM_X(i + l) - mu;
            sq[l] = fma(d, d, sq[l]);
        }
    }
    float m2 = norm_hsum(sq);
    for (int t = 0; t < tail; t++) {
        precise float d = NORM_X(rest + t) - mu, dd = d * d;
        m2 += dd;
    }
    int at = TT_AT(args.partial_offset, 4) + 3 * (p * args.chunks + k);
    TT_B(partial)[at] = count;
    TT_B(partial)[at + 1] = mu;
    TT_B(partial)[at + 2] = m2;
}

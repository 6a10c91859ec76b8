/* norm/norm_stat_moments: one work-item per statistic s (batch norm summed
 * over ranks): moments[2 s + 0..1] = mean and sum of squared deviations of
 * this process's elements of s, merged from norm_moments' partials as
 * norm_stats merges them (opencl/norm.cl; arguments moments, partial,
 * stat_count, planes_per_stat, stat_plane_stride, plane_stride, chunks). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, moments);
TT_BUFFER(1, float, partial);
layout(push_constant) uniform Args {
    uint moments_offset; uint partial_offset; int stat_count; int planes_per_stat;
    int stat_plane_stride; int plane_stride; int chunks;
} args;

void main()
{
    int s = tt_global_id();
    if (s >= args.stat_count) return;
    float n = 0.0, mu = 0.0, m2 = 0.0;
    for (int j = 0; j < args.planes_per_stat; j++) {
        int p = s * args.stat_plane_stride + j * args.plane_stride;
        int part = TT_AT(args.partial_offset, 4) + 3 * p * args.chunks;
        for (int k = 0; k < args.chunks; k++, part += 3) {
            float nb = TT_B(partial)[part];
            if (nb == 0.0) continue;
            float total = n + nb, delta = TT_B(partial)[part + 1] - mu;
            mu += delta * (nb / total);
            m2 += TT_B(partial)[part + 2] + delta * delta * (n * nb / total);
            n = total;
        }
    }
    int at = TT_AT(args.moments_offset, 4) + 2 * s;
    TT_B(moments)[at] = mu;
    TT_B(moments)[at + 1] = m2;
}

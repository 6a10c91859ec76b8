/* norm/norm_stats: one work-item per statistic s: mean[s], rstd[s] from
 * the partials of its planes (Chan et al.'s pairwise merge); with
 * update_running, running = (1 - m) running + m stat, the variance
 * unbiased (opencl/norm.cl; arguments mean, rstd, running_mean,
 * running_var, partial, stat_count, planes_per_stat, stat_plane_stride,
 * plane_stride, chunks, eps, update_running, momentum). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, mean);
TT_BUFFER(1, float, rstd);
TT_BUFFER(2, float, running_mean);
TT_BUFFER(3, float, running_var);
TT_BUFFER(4, float, partial);
layout(push_constant) uniform Args {
    uint mean_offset; uint rstd_offset; uint running_mean_offset; uint running_var_offset;
    uint partial_offset; int stat_count; int planes_per_stat; int stat_plane_stride;
    int plane_stride; int chunks; float eps; int update_running; float momentum;
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
    float var = m2 / n;
    TT_B(mean)[TT_AT(args.mean_offset, 4) + s] = mu;
    TT_B(rstd)[TT_AT(args.rstd_offset, 4) + s] = inversesqrt(var + args.eps);
    if (args.update_running != 0) {
        float unbiased = n > 1.0 ? var * (n / (n - 1.0)) : var;
        int rm = TT_AT(args.running_mean_offset, 4) + s, rv = TT_AT(args.running_var_offset, 4) + s;
        TT_B(running_mean)[rm] = (1.0 - args.momentum) * TT_B(running_mean)[rm] + args.momentum * mu;
        TT_B(running_var)[rv] = (1.0 - args.momentum) * TT_B(running_var)[rv] + args.momentum * unbiased;
    }
}

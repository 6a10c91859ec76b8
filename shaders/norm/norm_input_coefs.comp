/* norm/norm_input_coefs: one work-item per statistic s (training):
 * coef[2 s + 0..1] = mean of g weight[c] and of g weight[c] xhat over its
 * elements (opencl/norm.cl; arguments coef, partial, weight, has_weight,
 * stat_count, planes_per_stat, stat_plane_stride, plane_stride, channels,
 * hw, chunks). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, coef);
TT_BUFFER(1, float, partial);
TT_BUFFER(2, float, weight);
layout(push_constant) uniform Args {
    uint coef_offset; uint partial_offset; uint weight_offset; int has_weight; int stat_count;
    int planes_per_stat; int stat_plane_stride; int plane_stride; int channels; int hw;
    int chunks;
} args;

void main()
{
    int s = tt_global_id();
    if (s >= args.stat_count) return;
    float sum_g = 0.0, sum_gx = 0.0;
    for (int j = 0; j < args.planes_per_stat; j++) {
        int p = s * args.stat_plane_stride + j * args.plane_stride;
        float w = args.has_weight != 0 ? TT_B(weight)[TT_AT(args.weight_offset, 4) + p % args.channels]
                                       : 1.0;
        float a = 0.0, b = 0.0;
        int part = TT_AT(args.partial_offset, 4) + 2 * p * args.chunks;
        for (int k = 0; k < args.chunks; k++) {
            a += TT_B(partial)[part + 2 * k];
            b += TT_B(partial)[part + 2 * k + 1];
        }
        sum_g += w * a;
        sum_gx += w * b;
    }
    float count = float(args.planes_per_stat) * float(args.hw);
    int at = TT_AT(args.coef_offset, 4) + 2 * s;
    TT_B(coef)[at] = sum_g / count;
    TT_B(coef)[at + 1] = sum_gx / count;
}

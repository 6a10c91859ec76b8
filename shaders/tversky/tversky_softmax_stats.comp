/* tversky/tversky_softmax_stats: pixel_stats[2 q] = max_k x_k and
 * [2 q + 1] = sum_k exp(x_k - max) for pixel q = n * HW + i
 * (opencl/tversky.cl; arguments pixel_stats, logits, N, C, HW). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, pixel_stats);
TT_BUFFER(1, float, logits);
layout(push_constant) uniform Args {
    uint stats_offset; uint logits_offset;
    int N; int C; int HW;
} args;

void main()
{
    int q = tt_global_id(), HW = args.HW, C = args.C;
    if (q >= args.N * HW) return;
    int n = q / HW;
    int x = TT_AT(args.logits_offset, 4) + (n * C) * HW + (q - n * HW); /* stride HW */
    float m = TT_B(logits)[x];
    for (int k = 1; k < C; k++) m = max(m, TT_B(logits)[x + k * HW]);
    precise float e = 0.0;
    for (int k = 0; k < C; k++) e += exp(TT_B(logits)[x + k * HW] - m);
    int at = TT_AT(args.stats_offset, 4) + 2 * q;
    TT_B(pixel_stats)[at + 0] = m;
    TT_B(pixel_stats)[at + 1] = e;
}

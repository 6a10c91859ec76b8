/* tversky/tversky_finish: stats (regions, 2) = (score, D) from sums
 * (regions, 3); when add_result, result += (sum_r w_k (1 - score_r) /
 * sum_k w_k, per_image ? N : 1, invalid[0]); one work-group, weights read
 * only when has_weights (opencl/tversky.cl; arguments result, stats, sums,
 * invalid, weights, has_weights, N, C, regions, alpha, beta, smooth,
 * per_image, add_result). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, uint, result);
TT_BUFFER(1, float, stats);
TT_BUFFER(2, float, sums);
TT_BUFFER(3, uint, invalid);
TT_BUFFER(4, float, weights);
layout(push_constant) uniform Args {
    uint result_offset; uint stats_offset; uint sums_offset; uint invalid_offset;
    uint weights_offset;
    int has_weights; int N; int C; int regions; float alpha; float beta; float smooth_;
    int per_image; int add_result;
} args;
shared float s[TT_WG];

float weight_of(int k)
{
    return args.has_weights != 0 ? TT_B(weights)[TT_AT(args.weights_offset, 4) + k] : 1.0;
}

void main()
{
    int lid = int(gl_LocalInvocationID.x);
    int s0 = TT_AT(args.sums_offset, 4), st = TT_AT(args.stats_offset, 4);
    precise float terms = 0.0;
    for (int r = lid; r < args.regions; r += TT_WG) {
        float inter = TT_B(sums)[s0 + r * 3 + 0], psum = TT_B(sums)[s0 + r * 3 + 1];
        float tsum = TT_B(sums)[s0 + r * 3 + 2];
        precise float denom = inter + args.alpha * (psum - inter) + args.beta * (tsum - inter) +
                              args.smooth_;
        precise float score = (inter + args.smooth_) / denom;
        TT_B(stats)[st + r * 2 + 0] = score;
        TT_B(stats)[st + r * 2 + 1] = denom;
        terms += weight_of(r % args.C) * (1.0 - score);
    }
    s[lid] = terms;
    for (int half_ = TT_WG / 2; half_ > 0; half_ >>= 1) {
        barrier();
        if (lid < half_) s[lid] += s[lid + half_];
    }
    if (lid == 0 && args.add_result != 0) {
        precise float weight_sum = 0.0;
        for (int k = 0; k < args.C; k++) weight_sum += weight_of(k);
        int r = TT_AT(args.result_offset, 4);
        precise float total = uintBitsToFloat(TT_B(result)[r]) + s[0] / weight_sum;
        TT_B(result)[r] = floatBitsToUint(total);
        TT_B(result)[r + 1] += args.per_image != 0 ? uint(args.N) : 1u;
        TT_B(result)[r + 2] += TT_B(invalid)[TT_AT(args.invalid_offset, 4)];
    }
}

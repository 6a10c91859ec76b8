/* tversky/tversky_backward: dlogits += scale * d loss / d logits at valid
 * items, with d term / d p = -(t - score ((1 - alpha - beta) t + alpha)) / D
 * from the region's stats (score, D) and share_k = w_k / sum_j w_j.
 * Sigmoid, a work-item an element: share_k * d term/d p * p (1 - p).
 * Softmax, a work-item a pixel: g_k = share_k * d term_k / d p_k,
 * dx_j = p_j (g_j - sum_k g_k p_k) (opencl/tversky.cl; arguments dlogits,
 * stats, logits, targets as bytes, weights, has_weights, N, C, HW,
 * softmax, per_image, ignore, alpha, beta, scale). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, dlogits);
TT_BUFFER(1, float, stats);
TT_BUFFER(2, float, logits);
TT_BUFFER(3, uint, targets);
TT_BUFFER(4, float, weights);
layout(push_constant) uniform Args {
    uint dlogits_offset; uint stats_offset; uint logits_offset; uint targets_offset;
    uint weights_offset;
    int has_weights; int N; int C; int HW; int softmax; int per_image; int ignore;
    float alpha; float beta; float scale;
} args;

float weight_of(int k)
{
    return args.has_weights != 0 ? TT_B(weights)[TT_AT(args.weights_offset, 4) + k] : 1.0;
}

float weight_sum()
{
    if (args.has_weights == 0) return float(args.C);
    precise float sum = 0.0;
    for (int k = 0; k < args.C; k++) sum += weight_of(k);
    return sum;
}

/* d term / d p of an item with target t in `region` */
float tversky_dp(int region, float t)
{
    int at = TT_AT(args.stats_offset, 4) + region * 2;
    float score = TT_B(stats)[at], denom = TT_B(stats)[at + 1];
    precise float dp = -(t - score * ((1.0 - args.alpha - args.beta) * t + args.alpha)) / denom;
    return dp;
}

void main()
{
    int id = tt_global_id(), HW = args.HW, C = args.C;
    int x0 = TT_AT(args.logits_offset, 4), d0 = TT_AT(args.dlogits_offset, 4);
    if (args.softmax == 0) {
        if (id >= args.N * C * HW) return;
        int t = TT_BYTE(targets, args.targets_offset, id);
        if (t == args.ignore || t > 1) return;
        int plane = id / HW, k = plane % C;
        float x = TT_B(logits)[x0 + id];
        precise float slope = tt_sigmoid(x) * tt_sigmoid(-x); /* p (1 - p) without cancellation */
        float dp = tversky_dp(args.per_image != 0 ? plane : k, float(t));
        precise float share = weight_of(k) / weight_sum();
        precise float g = args.scale * share * dp * slope;
        TT_B(dlogits)[d0 + id] += g;
        return;
    }
    if (id >= args.N * HW) return;
    int label = TT_BYTE(targets, args.targets_offset, id);
    if (label == args.ignore || label >= C) return;
    int n = id / HW;
    int base = (n * C) * HW + (id - n * HW), first = args.per_image != 0 ? n * C : 0;
    float m = TT_B(logits)[x0 + base];
    for (int k = 1; k < C; k++) m = max(m, TT_B(logits)[x0 + base + k * HW]);
    precise float e = 0.0;
    for (int k = 0; k < C; k++) e += exp(TT_B(logits)[x0 + base + k * HW] - m);
    float wsum = weight_sum();
    precise float gp = 0.0;
    for (int k = 0; k < C; k++) {
        precise float g = weight_of(k) / wsum * tversky_dp(first + k, label == k ? 1.0 : 0.0);
        gp += g * (exp(TT_B(logits)[x0 + base + k * HW] - m) / e);
    }
    for (int k = 0; k < C; k++) {
        precise float g = weight_of(k) / wsum * tversky_dp(first + k, label == k ? 1.0 : 0.0);
        precise float p = exp(TT_B(logits)[x0 + base + k * HW] - m) / e;
        TT_B(dlogits)[d0 + base + k * HW] += args.scale * p * (g - gp);
    }
}

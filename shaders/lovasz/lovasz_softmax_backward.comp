/* lovasz/lovasz_softmax_backward: dlogits += scale * p_j (g_j - sum_k g_k
 * p_k) at valid pixels, g_k = w_k / (sum of the present classes' weights)
 * * grad (dloss/dp from lovasz_steps mode 2), 0 for absent classes
 * (opencl/lovasz.cl; arguments dlogits, grad, logits, labels as bytes,
 * plane_positive, weights, N, C, HW, ignore, has_weights, scale). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, dlogits);
TT_BUFFER(1, float, grad);
TT_BUFFER(2, float, logits);
TT_BUFFER(3, uint, labels);
TT_BUFFER(4, uint, plane_positive);
TT_BUFFER(5, float, weights);
layout(push_constant) uniform Args {
    uint dlogits_offset; uint grad_offset; uint logits_offset; uint labels_offset;
    uint positive_offset; uint weights_offset;
    int N; int C; int HW; int ignore; int has_weights; float scale;
} args;

float weight_of(int n, int k)
{
    if (TT_B(plane_positive)[TT_AT(args.positive_offset, 4) + n * args.C + k] == 0u) return 0.0;
    return args.has_weights != 0 ? TT_B(weights)[TT_AT(args.weights_offset, 4) + k] : 1.0;
}

void main()
{
    int p = tt_global_id(), HW = args.HW, C = args.C;
    if (p >= args.N * HW) return;
    int label = TT_BYTE(labels, args.labels_offset, p);
    if (label == args.ignore || label >= C) return;
    int n = p / HW;
    precise float wsum = 0.0;
    for (int k = 0; k < C; k++) wsum += weight_of(n, k);
    if (!(wsum > 0.0)) return;
    int base = n * C * HW + (p - n * HW);
    int x = TT_AT(args.logits_offset, 4) + base, g0 = TT_AT(args.grad_offset, 4) + base;
    int dx = TT_AT(args.dlogits_offset, 4) + base;
    float m = TT_B(logits)[x];
    for (int k = 1; k < C; k++) m = max(m, TT_B(logits)[x + k * HW]);
    precise float e = 0.0;
    for (int k = 0; k < C; k++) e += exp(TT_B(logits)[x + k * HW] - m);
    precise float dot = 0.0;
    for (int k = 0; k < C; k++) {
        float w = weight_of(n, k);
        if (w == 0.0) continue;
        dot += w / wsum * TT_B(grad)[g0 + k * HW] * (exp(TT_B(logits)[x + k * HW] - m) / e);
    }
    for (int k = 0; k < C; k++) {
        precise float g = weight_of(n, k) / wsum * TT_B(grad)[g0 + k * HW];
        precise float d = TT_B(dlogits)[dx + k * HW] +
                          args.scale * (exp(TT_B(logits)[x + k * HW] - m) / e) * (g - dot);
        TT_B(dlogits)[dx + k * HW] = d;
    }
}

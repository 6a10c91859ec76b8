/* loss/focal_backward: dlogits += scale * w_k * d focal / dx at the terms
 * of valid items, one work-item per item: an element of per-class targets
 * (class_index 0) or a pixel of labels and its C planes (class_index 1);
 * w_k = weights[k] when weighted, else 1 (opencl/loss.cl; arguments
 * dlogits, logits, targets as bytes, weights, N, C, HW, ignore,
 * class_index, weighted, gamma, alpha, scale); the multiply-add fused as
 * PoCL contracts it. */
#version 450
#include "common.glsl"
#include "exact_fma.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, dlogits);
TT_BUFFER(1, float, logits);
TT_BUFFER(2, uint, targets);
TT_BUFFER(3, float, weights);
layout(push_constant) uniform Args {
    uint dlogits_offset; uint logits_offset; uint targets_offset; uint weights_offset;
    int N; int C; int HW; int ignore; int class_index; int weighted; float gamma;
    float alpha; float scale;
} args;

/* dlogits[at] += scale * (weight of plane k) * d focal / dx at logits[at] */
void add_grad(int at, int t, int k)
{
    precise float g = tt_focal_grad(TT_B(logits)[TT_AT(args.logits_offset, 4) + at], t,
                                    args.gamma, args.alpha);
    if (args.weighted != 0) g *= TT_B(weights)[TT_AT(args.weights_offset, 4) + k];
    int id = TT_AT(args.dlogits_offset, 4) + at;
    TT_B(dlogits)[id] = tt_fma(args.scale, g, TT_B(dlogits)[id]);
}

void main()
{
    int i = tt_global_id(), HW = args.HW, C = args.C;
    if (i >= (args.class_index != 0 ? args.N * HW : args.N * C * HW)) return;
    int t = TT_BYTE(targets, args.targets_offset, i);
    if (t == args.ignore || t >= (args.class_index != 0 ? C : 2)) return;
    if (args.class_index != 0) {
        int n = i / HW;
        int base = (n * C) * HW + (i - n * HW);
        for (int k = 0; k < C; k++) add_grad(base + k * HW, k == t ? 1 : 0, k);
    } else {
        add_grad(i, t, (i / HW) % C);
    }
}

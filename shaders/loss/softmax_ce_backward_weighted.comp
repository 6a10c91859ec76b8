/* loss/softmax_ce_backward_weighted: dlogits += scale * weights[label] *
 * (softmax(x) - onehot(label)) at valid pixels (opencl/loss.cl; arguments
 * dlogits, logits, labels as bytes, weights, N, C, HW, ignore, scale). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, dlogits);
TT_BUFFER(1, float, logits);
TT_BUFFER(2, uint, labels);
TT_BUFFER(3, float, weights);
layout(push_constant) uniform Args {
    uint dlogits_offset; uint logits_offset; uint labels_offset; uint weights_offset;
    int N; int C; int HW; int ignore; float scale;
} args;

void main()
{
    int p = tt_global_id(), HW = args.HW, C = args.C;
    if (p >= args.N * HW) return;
    int label = TT_BYTE(labels, args.labels_offset, p);
    if (label == args.ignore || label >= C) return;
    int n = p / HW;
    int base = (n * C) * HW + (p - n * HW);
    int x = TT_AT(args.logits_offset, 4) + base, dx = TT_AT(args.dlogits_offset, 4) + base;
    float m = TT_B(logits)[x];
    for (int k = 1; k < C; k++) m = max(m, TT_B(logits)[x + k * HW]);
    precise float e = 0.0;
    for (int k = 0; k < C; k++) e += exp(TT_B(logits)[x + k * HW] - m);
    precise float pixel_scale = args.scale * TT_B(weights)[TT_AT(args.weights_offset, 4) + label];
    precise float inv = pixel_scale / e;
    for (int k = 0; k < C; k++) {
        precise float g = exp(TT_B(logits)[x + k * HW] - m) * inv;
        if (k == label) g -= pixel_scale;
        precise float next = TT_B(dlogits)[dx + k * HW] + g;
        TT_B(dlogits)[dx + k * HW] = next;
    }
}

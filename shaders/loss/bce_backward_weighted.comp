/* loss/bce_backward_weighted: dlogits += scale * w * (sigmoid(x) - t) at
 * valid elements, w the weight of the element's class plane,
 * weights[(i / HW) % C] (opencl/loss.cl; arguments dlogits, logits, targets
 * as bytes, weights, total, C, HW, ignore, scale); sigmoid(x) - 1 as
 * -sigmoid(-x), and the multiply-add fused as PoCL contracts it. */
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
    int total; int C; int HW; int ignore; float scale;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.total) return;
    int t = TT_BYTE(targets, args.targets_offset, i);
    if (t == args.ignore || t > 1) return;
    float x = TT_B(logits)[TT_AT(args.logits_offset, 4) + i];
    precise float g = t != 0 ? -tt_sigmoid(-x) : tt_sigmoid(x);
    g *= TT_B(weights)[TT_AT(args.weights_offset, 4) + (i / args.HW) % args.C];
    int id = TT_AT(args.dlogits_offset, 4) + i;
    TT_B(dlogits)[id] = tt_fma(args.scale, g, TT_B(dlogits)[id]);
}

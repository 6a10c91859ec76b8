/* loss/dice_backward: dlogits += scale / C * (dice - 2 t) / denom * p (1 - p)
 * at valid pixels (opencl/loss.cl; arguments dlogits, stats, logits,
 * targets as bytes, total, C, HW, ignore, scale); the last multiply-add
 * fused as PoCL contracts it. */
#version 450
#include "common.glsl"
#include "exact_fma.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, dlogits);
TT_BUFFER(1, float, stats);
TT_BUFFER(2, float, logits);
TT_BUFFER(3, uint, targets);
layout(push_constant) uniform Args {
    uint dlogits_offset; uint stats_offset; uint logits_offset; uint targets_offset;
    int total; int C; int HW; int ignore; float scale;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.total) return;
    int t = TT_BYTE(targets, args.targets_offset, i);
    if (t == args.ignore || t > 1) return;
    int at = TT_AT(args.stats_offset, 4) + (i / args.HW) * 2;
    float dice = TT_B(stats)[at], denom = TT_B(stats)[at + 1];
    float x = TT_B(logits)[TT_AT(args.logits_offset, 4) + i];
    precise float slope = tt_sigmoid(x) * tt_sigmoid(-x); /* p (1 - p) without cancellation */
    precise float factor = args.scale / float(args.C) * (dice - 2.0 * float(t)) / denom;
    int id = TT_AT(args.dlogits_offset, 4) + i;
    TT_B(dlogits)[id] = tt_fma(factor, slope, TT_B(dlogits)[id]);
}

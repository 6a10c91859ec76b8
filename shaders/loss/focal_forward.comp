/* loss/focal_forward: per group, the partial (sum, count, invalid) of the
 * sigmoid focal loss over valid items: elements of per-class targets
 * (class_index 0; a target > 1 is invalid) or pixels of labels, each the
 * sum of its C planes' terms (class_index 1; a label >= C is invalid);
 * when weighted, plane k's terms times weights[k] (opencl/loss.cl;
 * arguments part_sum, part_count, part_invalid, logits, targets as bytes,
 * weights, N, C, HW, ignore, class_index, weighted, gamma, alpha). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, part_sum);
TT_BUFFER(1, uint, part_count);
TT_BUFFER(2, uint, part_invalid);
TT_BUFFER(3, float, logits);
TT_BUFFER(4, uint, targets);
TT_BUFFER(5, float, weights);
layout(push_constant) uniform Args {
    uint sum_offset; uint count_offset; uint invalid_offset; uint logits_offset;
    uint targets_offset; uint weights_offset; int N; int C; int HW; int ignore;
    int class_index; int weighted; float gamma; float alpha;
} args;
shared float s[TT_WG];
shared uint c[TT_WG], b[TT_WG];

/* the term of logit x, target t in plane k, weighted when asked */
float weighted_term(float x, int t, int k)
{
    precise float term = tt_focal_term(x, t, args.gamma, args.alpha);
    if (args.weighted != 0) term *= TT_B(weights)[TT_AT(args.weights_offset, 4) + k];
    return term;
}

void main()
{
    int lid = int(gl_LocalInvocationID.x), HW = args.HW, C = args.C;
    int items = args.class_index != 0 ? args.N * HW : args.N * C * HW;
    int classes = args.class_index != 0 ? C : 2;
    int x0 = TT_AT(args.logits_offset, 4);
    precise float sum = 0.0;
    uint count = 0u, invalid = 0u;
    int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int i = int(gl_GlobalInvocationID.x); i < items; i += stride) {
        int t = TT_BYTE(targets, args.targets_offset, i);
        if (t == args.ignore) continue;
        if (t >= classes) {
            invalid++;
            continue;
        }
        if (args.class_index != 0) {
            int n = i / HW;
            int x = x0 + (n * C) * HW + (i - n * HW); /* stride HW */
            precise float pixel = 0.0;
            for (int k = 0; k < C; k++)
                pixel += weighted_term(TT_B(logits)[x + k * HW], k == t ? 1 : 0, k);
            sum += pixel;
        } else {
            sum += weighted_term(TT_B(logits)[x0 + i], t, (i / HW) % C);
        }
        count++;
    }
    s[lid] = sum;
    c[lid] = count;
    b[lid] = invalid;
    TT_LOSS_GROUP_REDUCE(lid);
    if (lid == 0) {
        int g = int(gl_WorkGroupID.x);
        TT_B(part_sum)[TT_AT(args.sum_offset, 4) + g] = s[0];
        TT_B(part_count)[TT_AT(args.count_offset, 4) + g] = c[0];
        TT_B(part_invalid)[TT_AT(args.invalid_offset, 4) + g] = b[0];
    }
}

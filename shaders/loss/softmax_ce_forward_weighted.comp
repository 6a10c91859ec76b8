/* loss/softmax_ce_forward_weighted: per group, the partial (sum, count,
 * invalid) of weights[label] * (logsumexp_c(x_c) - x_label) over pixels
 * whose label is not `ignore`; a label >= C is invalid (opencl/loss.cl;
 * arguments part_sum, part_count, part_invalid, logits, labels as bytes,
 * weights, N, C, HW, ignore). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, part_sum);
TT_BUFFER(1, uint, part_count);
TT_BUFFER(2, uint, part_invalid);
TT_BUFFER(3, float, logits);
TT_BUFFER(4, uint, labels);
TT_BUFFER(5, float, weights);
layout(push_constant) uniform Args {
    uint sum_offset; uint count_offset; uint invalid_offset; uint logits_offset;
    uint labels_offset; uint weights_offset; int N; int C; int HW; int ignore;
} args;
shared float s[TT_WG];
shared uint c[TT_WG], b[TT_WG];

void main()
{
    int lid = int(gl_LocalInvocationID.x), HW = args.HW, C = args.C;
    precise float sum = 0.0;
    uint count = 0u, invalid = 0u;
    int pixels = args.N * HW, stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int p = int(gl_GlobalInvocationID.x); p < pixels; p += stride) {
        int label = TT_BYTE(labels, args.labels_offset, p);
        if (label == args.ignore) continue;
        if (label >= C) {
            invalid++;
            continue;
        }
        int n = p / HW;
        int x = TT_AT(args.logits_offset, 4) + (n * C) * HW + (p - n * HW); /* stride HW */
        float m = TT_B(logits)[x];
        for (int k = 1; k < C; k++) m = max(m, TT_B(logits)[x + k * HW]);
        precise float e = 0.0;
        for (int k = 0; k < C; k++) e += exp(TT_B(logits)[x + k * HW] - m);
        precise float loss = log(e) - (TT_B(logits)[x + label * HW] - m);
        sum += loss * TT_B(weights)[TT_AT(args.weights_offset, 4) + label];
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

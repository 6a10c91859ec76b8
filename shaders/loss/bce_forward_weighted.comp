/* loss/bce_forward_weighted: bce_forward with each element's loss times the
 * weight of its class plane, weights[(i / HW) % C] (opencl/loss.cl;
 * arguments part_sum, part_count, part_invalid, logits, targets as bytes,
 * weights, total, C, HW, ignore).  As the OpenCL kernel: 8 elements a
 * work-item a pass in 8 lane sums, the last total % 8 one each, then the
 * lanes added in the same order.  A kernel of its own, not a flag of
 * bce_forward: lavapipe runs both sides of a branch, and the plane's
 * division would cost the unweighted loss. */
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
    uint targets_offset; uint weights_offset; int total; int C; int HW; int ignore;
} args;
shared float s[TT_WG];
shared uint c[TT_WG], b[TT_WG];

/* the weighted loss of element i of logit x and target t (0 or 1) */
float element_loss(int i, float x, int t)
{
    precise float loss = max(x, 0.0) - (t == 1 ? x : 0.0) + tt_log1p(exp(-abs(x)));
    loss *= TT_B(weights)[TT_AT(args.weights_offset, 4) + (i / args.HW) % args.C];
    return loss;
}

void main()
{
    int lid = int(gl_LocalInvocationID.x), total = args.total;
    int items = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x), gid = int(gl_GlobalInvocationID.x);
    int x0 = TT_AT(args.logits_offset, 4);
    precise float lanes[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    uint count = 0u, invalid = 0u;
    int whole = total / 8 * 8;
    for (int i = gid * 8; i < whole; i += items * 8)
        for (int l = 0; l < 8; l++) {
            int t = TT_BYTE(targets, args.targets_offset, i + l);
            if (t == args.ignore) continue;
            if (t > 1) {
                invalid++;
                continue;
            }
            lanes[l] += element_loss(i + l, TT_B(logits)[x0 + i + l], t);
            count++;
        }
    precise float sum = 0.0;
    for (int i = whole + gid; i < total; i += items) {
        int t = TT_BYTE(targets, args.targets_offset, i);
        if (t == args.ignore) continue;
        if (t > 1) {
            invalid++;
            continue;
        }
        sum += element_loss(i, TT_B(logits)[x0 + i], t);
        count++;
    }
    precise float s4[4];
    for (int l = 0; l < 4; l++) s4[l] = lanes[l] + lanes[l + 4];
    sum += (s4[0] + s4[1]) + (s4[2] + s4[3]);
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

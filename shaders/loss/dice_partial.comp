/* loss/dice_partial: for plane (n*C + c) = the launch's y and chunk = the
 * group's x, part[(plane * chunks + chunk) * 3 + 0..2] = (sum p t, sum p,
 * sum t) over the chunk's valid pixels, p = sigmoid(x), and part_invalid
 * the invalid targets (opencl/loss.cl; arguments part, part_invalid,
 * logits, targets as bytes, HW, chunks, ignore). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, part);
TT_BUFFER(1, uint, part_invalid);
TT_BUFFER(2, float, logits);
TT_BUFFER(3, uint, targets);
layout(push_constant) uniform Args {
    uint part_offset; uint invalid_offset; uint logits_offset; uint targets_offset;
    int HW; int chunks; int ignore;
} args;
shared float s_i[TT_WG], s_p[TT_WG];
shared uint s_t[TT_WG], s_b[TT_WG];

void main()
{
    int plane = int(gl_GlobalInvocationID.y), chunk = int(gl_WorkGroupID.x);
    int lid = int(gl_LocalInvocationID.x), HW = args.HW;
    int x = TT_AT(args.logits_offset, 4) + plane * HW;
    precise float inter = 0.0, psum = 0.0;
    uint tsum = 0u, invalid = 0u;
    for (int i = chunk * TT_WG + lid; i < HW; i += args.chunks * TT_WG) {
        int t = TT_BYTE(targets, args.targets_offset, plane * HW + i);
        if (t == args.ignore) continue;
        if (t > 1) {
            invalid++;
            continue;
        }
        float p = tt_sigmoid(TT_B(logits)[x + i]);
        psum += p;
        if (t != 0) {
            inter += p;
            tsum++;
        }
    }
    s_i[lid] = inter;
    s_p[lid] = psum;
    s_t[lid] = tsum;
    s_b[lid] = invalid;
    for (int half_ = TT_WG / 2; half_ > 0; half_ >>= 1) {
        barrier();
        if (lid < half_) {
            s_i[lid] += s_i[lid + half_];
            s_p[lid] += s_p[lid + half_];
            s_t[lid] += s_t[lid + half_];
            s_b[lid] += s_b[lid + half_];
        }
    }
    if (lid == 0) {
        int at = plane * args.chunks + chunk, base = TT_AT(args.part_offset, 4) + at * 3;
        TT_B(part)[base + 0] = s_i[0];
        TT_B(part)[base + 1] = s_p[0];
        TT_B(part)[base + 2] = float(s_t[0]);
        TT_B(part_invalid)[TT_AT(args.invalid_offset, 4) + at] = s_b[0];
    }
}

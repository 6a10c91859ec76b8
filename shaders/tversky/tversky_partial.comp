/* tversky/tversky_partial: for region = the launch's y and chunk = the
 * group's x, part[(region * chunks + chunk) * 3 + 0..2] = (sum p t, sum p,
 * sum t) over the chunk's valid items and part_invalid their invalid
 * targets; sigmoid per element, or softmax from pixel_stats with only
 * class 0's regions counting invalid labels (opencl/tversky.cl; arguments
 * part, part_invalid, logits, targets as bytes, pixel_stats, N, C, HW,
 * softmax, per_image, chunks, ignore). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, part);
TT_BUFFER(1, uint, part_invalid);
TT_BUFFER(2, float, logits);
TT_BUFFER(3, uint, targets);
TT_BUFFER(4, float, pixel_stats);
layout(push_constant) uniform Args {
    uint part_offset; uint invalid_offset; uint logits_offset; uint targets_offset;
    uint stats_offset;
    int N; int C; int HW; int softmax; int per_image; int chunks; int ignore;
} args;
shared float s_i[TT_WG], s_p[TT_WG];
shared uint s_t[TT_WG], s_b[TT_WG];

void main()
{
    int region = int(gl_GlobalInvocationID.y), chunk = int(gl_WorkGroupID.x);
    int lid = int(gl_LocalInvocationID.x), HW = args.HW, C = args.C;
    int k = region % C;
    int items = args.per_image != 0 ? HW : args.N * HW;
    int x0 = TT_AT(args.logits_offset, 4), s0 = TT_AT(args.stats_offset, 4);
    precise float inter = 0.0, psum = 0.0;
    uint tsum = 0u, invalid = 0u;
    for (int j = chunk * TT_WG + lid; j < items; j += args.chunks * TT_WG) {
        int n = args.per_image != 0 ? region / C : j / HW;
        int i = args.per_image != 0 ? j : j - n * HW;
        int at = (n * C + k) * HW + i; /* the element of logits */
        int t;
        float p;
        if (args.softmax != 0) {
            int q = n * HW + i, label = TT_BYTE(targets, args.targets_offset, q);
            if (label == args.ignore) continue;
            if (label >= C) {
                if (k == 0) invalid++;
                continue;
            }
            t = label == k ? 1 : 0;
            precise float pk = exp(TT_B(logits)[x0 + at] - TT_B(pixel_stats)[s0 + 2 * q]) /
                               TT_B(pixel_stats)[s0 + 2 * q + 1];
            p = pk;
        } else {
            t = TT_BYTE(targets, args.targets_offset, at);
            if (t == args.ignore) continue;
            if (t > 1) {
                invalid++;
                continue;
            }
            p = tt_sigmoid(TT_B(logits)[x0 + at]);
        }
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
        int at = region * args.chunks + chunk, base = TT_AT(args.part_offset, 4) + at * 3;
        TT_B(part)[base + 0] = s_i[0];
        TT_B(part)[base + 1] = s_p[0];
        TT_B(part)[base + 2] = float(s_t[0]);
        TT_B(part_invalid)[TT_AT(args.invalid_offset, 4) + at] = s_b[0];
    }
}

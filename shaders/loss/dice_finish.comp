/* loss/dice_finish: stats[plane] = (dice, P + T + smooth) for every plane
 * from dice_partial's chunks; when add_result, result += (sum over planes
 * of (1 - dice) / C, N, invalid) (opencl/loss.cl; arguments result, stats,
 * part, part_invalid, N, C, chunks, smooth, add_result); one work-group. */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, uint, result);
TT_BUFFER(1, float, stats);
TT_BUFFER(2, float, part);
TT_BUFFER(3, uint, part_invalid);
layout(push_constant) uniform Args {
    uint result_offset; uint stats_offset; uint part_offset; uint invalid_offset;
    int N; int C; int chunks; float smooth_; int add_result;
} args;
shared float s[TT_WG];
shared uint c[TT_WG], b[TT_WG];

void main()
{
    int lid = int(gl_LocalInvocationID.x);
    precise float terms = 0.0;
    uint invalid = 0u;
    int p0 = TT_AT(args.part_offset, 4), st = TT_AT(args.stats_offset, 4);
    for (int plane = lid; plane < args.N * args.C; plane += TT_WG) {
        precise float inter = 0.0, psum = 0.0, tsum = 0.0;
        for (int k = 0; k < args.chunks; k++) {
            int at = plane * args.chunks + k;
            inter += TT_B(part)[p0 + at * 3 + 0];
            psum += TT_B(part)[p0 + at * 3 + 1];
            tsum += TT_B(part)[p0 + at * 3 + 2];
            invalid += TT_B(part_invalid)[TT_AT(args.invalid_offset, 4) + at];
        }
        precise float denom = psum + tsum + args.smooth_;
        precise float dice = (2.0 * inter + args.smooth_) / denom;
        TT_B(stats)[st + plane * 2 + 0] = dice;
        TT_B(stats)[st + plane * 2 + 1] = denom;
        terms += 1.0 - dice;
    }
    s[lid] = terms;
    c[lid] = 0u;
    b[lid] = invalid;
    TT_LOSS_GROUP_REDUCE(lid);
    if (lid == 0 && args.add_result != 0) {
        int r = TT_AT(args.result_offset, 4);
        precise float total = uintBitsToFloat(TT_B(result)[r]) + s[0] / float(args.C);
        TT_B(result)[r] = floatBitsToUint(total);
        TT_B(result)[r + 1] += uint(args.N);
        TT_B(result)[r + 2] += b[0];
    }
}

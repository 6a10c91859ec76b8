/* tversky/tversky_gather: sums (regions, 3) += the chunks of each region in
 * chunk order, invalid[0] += every chunk's invalid count; one work-group
 * (opencl/tversky.cl; arguments sums, invalid, part, part_invalid,
 * regions, chunks). */
#version 450
#include "common.glsl"
#include "loss_common.glsl"

TT_BUFFER(0, float, sums);
TT_BUFFER(1, uint, invalid);
TT_BUFFER(2, float, part);
TT_BUFFER(3, uint, part_invalid);
layout(push_constant) uniform Args {
    uint sums_offset; uint invalid_offset; uint part_offset; uint part_invalid_offset;
    int regions; int chunks;
} args;
shared uint b[TT_WG];

void main()
{
    int lid = int(gl_LocalInvocationID.x);
    int s0 = TT_AT(args.sums_offset, 4), p0 = TT_AT(args.part_offset, 4);
    int b0 = TT_AT(args.part_invalid_offset, 4);
    uint bad = 0u;
    for (int r = lid; r < args.regions; r += TT_WG) {
        precise float inter = 0.0, psum = 0.0, tsum = 0.0;
        for (int c = 0; c < args.chunks; c++) {
            int at = r * args.chunks + c;
            inter += TT_B(part)[p0 + at * 3 + 0];
            psum += TT_B(part)[p0 + at * 3 + 1];
            tsum += TT_B(part)[p0 + at * 3 + 2];
            bad += TT_B(part_invalid)[b0 + at];
        }
        precise float i2 = TT_B(sums)[s0 + r * 3 + 0] + inter;
        precise float p2 = TT_B(sums)[s0 + r * 3 + 1] + psum;
        precise float t2 = TT_B(sums)[s0 + r * 3 + 2] + tsum;
        TT_B(sums)[s0 + r * 3 + 0] = i2;
        TT_B(sums)[s0 + r * 3 + 1] = p2;
        TT_B(sums)[s0 + r * 3 + 2] = t2;
    }
    b[lid] = bad;
    for (int half_ = TT_WG / 2; half_ > 0; half_ >>= 1) {
        barrier();
        if (lid < half_) b[lid] += b[lid + half_];
    }
    if (lid == 0) TT_B(invalid)[TT_AT(args.invalid_offset, 4)] += b[0];
}

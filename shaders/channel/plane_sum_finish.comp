/* channel/plane_sum_finish: out[p] (+)= scale * the sum of partial[p chunks
 * .. p chunks + chunks), in chunk order (opencl/channel.cl; arguments out,
 * partial, planes, chunks, scale, accumulate).  One invocation per plane;
 * chunks <= 4096 (src/ops/global_avg_pool.c), within the loop budget. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, partial);
layout(push_constant) uniform Args {
    uint out_offset; uint partial_offset; int planes; int chunks; float scale; int accumulate;
} args;

void main()
{
    int p = tt_global_id();
    if (p >= args.planes) return;
    int row = TT_AT(args.partial_offset, 4) + p * args.chunks;
    float sum = 0.0;
    for (int k = 0; k < args.chunks; k++) sum += TT_B(partial)[row + k];
    int at = TT_AT(args.out_offset, 4) + p;
    precise float v = sum * args.scale;
    if (args.accumulate != 0) v = TT_B(outp)[at] + v;
    TT_B(outp)[at] = v;
}

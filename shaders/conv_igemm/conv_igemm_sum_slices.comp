/* conv_igemm/conv_igemm_sum_slices: dweight[i] += the sum over s < slices
 * of part[s count + i], in slice order (opencl/conv_igemm.cl; arguments
 * dweight, part, slices, count).  1-D over count. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dweight);
TT_BUFFER(1, float, part);
layout(push_constant) uniform Args {
    uint dweight_offset; uint part_offset; int slices; int count;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.count) return;
    float sum = 0.0;
    int at = TT_AT(args.part_offset, 4) + i;
    for (int s = 0; s < args.slices; s++) sum += TT_B(part)[at + s * args.count];
    TT_B(dweight)[TT_AT(args.dweight_offset, 4) + i] += sum;
}

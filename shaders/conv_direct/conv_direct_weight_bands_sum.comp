/* conv_direct/conv_direct_weight_bands_sum: dweight[i] += sum over the
 * bands of partial[b count + i], i < count, 8 consecutive i a work-item
 * (opencl/conv_direct.cl; arguments dweight, partial, bands, count; global
 * (ceil(count / 8))). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dweight);
TT_BUFFER(1, float, partial);
layout(push_constant) uniform Args {
    uint dweight_offset; uint partial_offset; int bands; int count;
} args;

void main()
{
    int i0 = tt_global_id() * 8, count = args.count;
    if (i0 >= count) return;
    int dw = TT_AT(args.dweight_offset, 4), p = TT_AT(args.partial_offset, 4);
    int end = min(i0 + 8, count);
    for (int i = i0; i < end; i++) {
        float sum = 0.0;
        for (int b = 0; b < args.bands; b++) sum += TT_B(partial)[p + b * count + i];
        TT_B(dweight)[dw + i] += sum;
    }
}

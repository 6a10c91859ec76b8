/* upsample_nearest/upsample_nearest2x_backward: dinp[i] += the sum of the
 * 2x2 block of dout that input i was copied to (opencl/upsample_nearest.cl;
 * arguments dinp, dout, planes, height, width).  One work-item per input,
 * no loop; the sums in OpenCL's order, (top-left + top-right) +
 * (bottom-left + bottom-right), `precise` so none is reordered. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; int planes; int height; int width;
} args;

void main()
{
    int height = args.height, width = args.width, out_w = 2 * width;
    int i = tt_global_id();
    if (i >= args.planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int g = TT_AT(args.dout_offset, 4) + (i / (width * height)) * 4 * height * width +
            (2 * iy) * out_w + 2 * ix;
    precise float top = TT_B(dout)[g] + TT_B(dout)[g + 1];
    precise float bottom = TT_B(dout)[g + out_w] + TT_B(dout)[g + out_w + 1];
    int id = TT_AT(args.dinp_offset, 4) + i;
    precise float total = TT_B(dinp)[id] + (top + bottom);
    TT_B(dinp)[id] = total;
}

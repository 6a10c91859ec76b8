/* upsample_nearest/upsample_nearest2x_forward: out (planes, 2 height,
 * 2 width) = nearest x2 of inp (planes, height, width): output (oy, ox)
 * reads input (oy / 2, ox / 2) (opencl/upsample_nearest.cl; arguments out,
 * inp, planes, height, width).  A copy: equal to OpenCL bit for bit. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, inp);
layout(push_constant) uniform Args {
    uint out_offset; uint inp_offset; int planes; int height; int width;
} args;

void main()
{
    int height = args.height, width = args.width, out_h = 2 * height, out_w = 2 * width;
    int o = tt_global_id();
    if (o >= args.planes * out_h * out_w) return;
    int ox = o % out_w;
    int oy = (o / out_w) % out_h;
    int x = TT_AT(args.inp_offset, 4) + (o / (out_w * out_h)) * height * width;
    TT_B(outp)[TT_AT(args.out_offset, 4) + o] = TT_B(inp)[x + (oy / 2) * width + ox / 2];
}

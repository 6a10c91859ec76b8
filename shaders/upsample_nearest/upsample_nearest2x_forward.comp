/* upsample_nearest/upsample_nearest2x_forward: out (planes, 2 height,
 * 2 width) = nearest x2 of inp (planes, height, width): one invocation per
 * input, copied to its 2x2 block (opencl/upsample_nearest.cl; arguments
 * out, inp, planes, height, width).  A copy: equal to OpenCL bit for bit. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, inp);
layout(push_constant) uniform Args {
    uint out_offset; uint inp_offset; int planes; int height; int width;
} args;

void main()
{
    int height = args.height, width = args.width, out_w = 2 * width;
    int i = tt_global_id();
    if (i >= args.planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int plane = i / (width * height);
    float v = TT_B(inp)[TT_AT(args.inp_offset, 4) + i];
    int o = TT_AT(args.out_offset, 4) + plane * 4 * height * width + (2 * iy) * out_w + 2 * ix;
    TT_B(outp)[o] = v;
    TT_B(outp)[o + 1] = v;
    TT_B(outp)[o + out_w] = v;
    TT_B(outp)[o + out_w + 1] = v;
}

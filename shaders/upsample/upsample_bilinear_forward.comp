/* upsample/upsample_bilinear_forward: out (planes, f height, f width) =
 * bilinear upsampling by f of inp (planes, height, width), align_corners
 * False (aligned 0) or True (1) (opencl/upsample.cl; arguments out, inp,
 * planes, height, width, factor, aligned, scale_y, scale_x).  The same
 * float steps as the OpenCL kernel, every one `precise` and the fused ones
 * through tt_fma, so the bits are its bits:
 * fma(hy0, fma(wx0, a, wx1 * b), hy1 * fma(wx0, c, wx1 * d)). */
#version 450
#include "common.glsl"
#include "exact_fma.glsl"
#include "upsample/bilinear.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, inp);
layout(push_constant) uniform Args {
    uint out_offset; uint inp_offset; int planes; int height; int width; int factor;
    int aligned; float scale_y; float scale_x;
} args;

void main()
{
    int height = args.height, width = args.width;
    int out_h = args.factor * height, out_w = args.factor * width;
    int o = tt_global_id();
    if (o >= args.planes * out_h * out_w) return;
    int ox = o % out_w;
    int oy = (o / out_w) % out_h;
    int x = TT_AT(args.inp_offset, 4) + (o / (out_w * out_h)) * height * width;
    int y0, y1, x0, x1;
    float hy1, wx1;
    bilinear_taps(oy, height, args.aligned, args.scale_y, y0, y1, hy1);
    bilinear_taps(ox, width, args.aligned, args.scale_x, x0, x1, wx1);
    precise float hy0 = 1.0 - hy1, wx0 = 1.0 - wx1;
    precise float top = tt_fma(wx0, TT_B(inp)[x + y0 * width + x0], wx1 * TT_B(inp)[x + y0 * width + x1]);
    precise float bottom = tt_fma(wx0, TT_B(inp)[x + y1 * width + x0], wx1 * TT_B(inp)[x + y1 * width + x1]);
    precise float value = tt_fma(hy0, top, hy1 * bottom);
    TT_B(outp)[TT_AT(args.out_offset, 4) + o] = value;
}

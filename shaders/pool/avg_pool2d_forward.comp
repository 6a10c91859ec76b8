/* pool/avg_pool2d_forward: out = the mean of each kernel_h x kernel_w window
 * (opencl/pool.cl; arguments out, inp, planes, height, width, out_h, out_w,
 * kernel_h, kernel_w, stride_h, stride_w). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, inp);
layout(push_constant) uniform Args {
    uint out_offset; uint inp_offset; int planes; int height; int width; int out_h; int out_w;
    int kernel_h; int kernel_w; int stride_h; int stride_w;
} args;

void main()
{
    int out_h = args.out_h, out_w = args.out_w, width = args.width;
    int o = tt_global_id();
    if (o >= args.planes * out_h * out_w) return;
    int ox = o % out_w;
    int oy = (o / out_w) % out_h;
    int plane = o / (out_w * out_h);
    int x = TT_AT(args.inp_offset, 4) + plane * args.height * width + oy * args.stride_h * width +
            ox * args.stride_w;
    precise float sum = 0.0;
    for (int ky = 0; ky < args.kernel_h; ky++)
        for (int kx = 0; kx < args.kernel_w; kx++) sum += TT_B(inp)[x + ky * width + kx];
    precise float mean = sum / float(args.kernel_h * args.kernel_w);
    TT_B(outp)[TT_AT(args.out_offset, 4) + o] = mean;
}

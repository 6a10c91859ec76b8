/* pool/avg_pool2d_forward: out = the sum of each kernel_h x kernel_w
 * window's places inside the plane / (kernel_h * kernel_w) (opencl/pool.cl;
 * arguments out, inp, planes, height, width, out_h, out_w, kernel_h,
 * kernel_w, stride_h, stride_w, pad_h, pad_w). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, inp);
layout(push_constant) uniform Args {
    uint out_offset; uint inp_offset; int planes; int height; int width; int out_h; int out_w;
    int kernel_h; int kernel_w; int stride_h; int stride_w; int pad_h; int pad_w;
} args;

void main()
{
    int out_h = args.out_h, out_w = args.out_w, width = args.width;
    int o = tt_global_id();
    if (o >= args.planes * out_h * out_w) return;
    int ox = o % out_w;
    int oy = (o / out_w) % out_h;
    int plane = o / (out_w * out_h);
    int y0 = oy * args.stride_h - args.pad_h, x0 = ox * args.stride_w - args.pad_w;
    int ky0 = max(0, -y0), ky1 = min(args.kernel_h, args.height - y0);
    int kx0 = max(0, -x0), kx1 = min(args.kernel_w, width - x0);
    int x = TT_AT(args.inp_offset, 4) + plane * args.height * width;
    precise float sum = 0.0;
    for (int ky = ky0; ky < ky1; ky++)
        for (int kx = kx0; kx < kx1; kx++) sum += TT_B(inp)[x + (y0 + ky) * width + x0 + kx];
    precise float mean = sum / float(args.kernel_h * args.kernel_w);
    TT_B(outp)[TT_AT(args.out_offset, 4) + o] = mean;
}

/* pool/avg_pool2d_backward: dinp[i] += the sum of dout[o] / (kernel_h *
 * kernel_w) over the windows o covering i (opencl/pool.cl; arguments dinp,
 * dout, planes, height, width, out_h, out_w, kernel_h, kernel_w, stride_h,
 * stride_w, pad_h, pad_w). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; int planes; int height; int width; int out_h; int out_w;
    int kernel_h; int kernel_w; int stride_h; int stride_w; int pad_h; int pad_w;
} args;

/* The first output row (or column) whose window covers row i of the
 * padded input (i = input row + pad). */
int pool_first_out(int i, int window, int stride)
{
    int lo = i - window + 1;
    return lo <= 0 ? 0 : (lo + stride - 1) / stride;
}

void main()
{
    int height = args.height, width = args.width, out_h = args.out_h, out_w = args.out_w;
    int i = tt_global_id();
    if (i >= args.planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int g = TT_AT(args.dout_offset, 4) + (i / (width * height)) * out_h * out_w;
    int py = iy + args.pad_h, px = ix + args.pad_w; /* in the padded input */
    int oy_end = min(py / args.stride_h + 1, out_h), ox_end = min(px / args.stride_w + 1, out_w);
    precise float sum = 0.0;
    for (int oy = pool_first_out(py, args.kernel_h, args.stride_h); oy < oy_end; oy++)
        for (int ox = pool_first_out(px, args.kernel_w, args.stride_w); ox < ox_end; ox++)
            sum += TT_B(dout)[g + oy * out_w + ox];
    int id = TT_AT(args.dinp_offset, 4) + i;
    precise float total = TT_B(dinp)[id] + sum / float(args.kernel_h * args.kernel_w);
    TT_B(dinp)[id] = total;
}

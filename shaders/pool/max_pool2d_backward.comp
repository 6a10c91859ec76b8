/* pool/max_pool2d_backward: dinp[i] += the sum of dout[o] over the outputs
 * o whose maximum came from i, as argmax says or, with from_input, as inp
 * shows again (opencl/pool.cl; arguments dinp, dout, argmax, inp,
 * from_input, planes, height, width, out_h, out_w, kernel_h, kernel_w,
 * stride_h, stride_w, pad_h, pad_w).  One work-item per input element. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, int, argmax);
TT_BUFFER(3, float, inp);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint argmax_offset; uint inp_offset; int from_input;
    int planes; int height; int width; int out_h; int out_w; int kernel_h; int kernel_w;
    int stride_h; int stride_w; int pad_h; int pad_w;
} args;

#include "pool_common.glsl"

void main()
{
    int height = args.height, width = args.width, out_h = args.out_h, out_w = args.out_w;
    int i = tt_global_id();
    if (i >= args.planes * height * width) return;
    int ix = i % width;
    int iy = (i / width) % height;
    int plane = i / (width * height);
    int here = iy * width + ix;
    int x = TT_AT(args.inp_offset, 4) + plane * height * width;
    int base = plane * out_h * out_w;
    int py = iy + args.pad_h, px = ix + args.pad_w; /* in the padded input */
    int oy_end = min(py / args.stride_h + 1, out_h), ox_end = min(px / args.stride_w + 1, out_w);
    precise float sum = 0.0;
    for (int oy = pool_first_out(py, args.kernel_h, args.stride_h); oy < oy_end; oy++)
        for (int ox = pool_first_out(px, args.kernel_w, args.stride_w); ox < ox_end; ox++) {
            int o = base + oy * out_w + ox;
            float best;
            int winner = args.from_input != 0
                ? max_pool_window(x, height, width, oy * args.stride_h - args.pad_h,
                                  ox * args.stride_w - args.pad_w, args.kernel_h, args.kernel_w,
                                  best)
                : TT_B(argmax)[TT_AT(args.argmax_offset, 4) + o];
            if (winner == here) sum += TT_B(dout)[TT_AT(args.dout_offset, 4) + o];
        }
    int id = TT_AT(args.dinp_offset, 4) + i;
    precise float total = TT_B(dinp)[id] + sum;
    TT_B(dinp)[id] = total;
}

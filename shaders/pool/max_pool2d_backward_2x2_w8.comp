/* pool/max_pool2d_backward_2x2_w8: max_pool2d_backward_tiles for 2x2
 * stride 2, 8 outputs a work-item, global (ceil(out_w / 8), planes * out_h):
 * each window's winner (found again, or from argmax) gets dout, its other
 * elements 0 (opencl/pool.cl; arguments dinp, dout, argmax, inp,
 * from_input, planes, height, width, out_h, out_w). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, int, argmax);
TT_BUFFER(3, float, inp);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint argmax_offset; uint inp_offset; int from_input;
    int planes; int height; int width; int out_h; int out_w;
} args;

#define TT_POOL_BACKWARD
#include "pool_common.glsl"

void main()
{
    int x0 = int(gl_GlobalInvocationID.x) * 8, row = int(gl_GlobalInvocationID.y);
    if (x0 >= args.out_w || row >= args.planes * args.out_h) return;
    int plane = row / args.out_h, oy = row - plane * args.out_h;
    int o = row * args.out_w + x0, first = plane * args.height * args.width;
    for (int ox = x0; ox < min(x0 + 8, args.out_w); ox++) {
        int winner =
            args.from_input != 0 ? -1 : TT_B(argmax)[TT_AT(args.argmax_offset, 4) + o + ox - x0];
        max_pool_window_backward(TT_AT(args.dinp_offset, 4) + first,
                                 TT_AT(args.inp_offset, 4) + first, args.height, args.width,
                                 2 * oy, 2 * ox, 2, 2, winner,
                                 TT_B(dout)[TT_AT(args.dout_offset, 4) + o + ox - x0]);
    }
}

/* pool/max_pool2d_backward_tiles: max_pool2d_backward for windows that do
 * not overlap (stride = kernel, pad 0): one work-item per output, 2-D (out_w,
 * planes * out_h), adds dout[o] to its window's winner and 0 to the other
 * elements (opencl/pool.cl; arguments dinp, dout, argmax, inp, from_input,
 * planes, height, width, out_h, out_w, kernel_h, kernel_w). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, int, argmax);
TT_BUFFER(3, float, inp);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint argmax_offset; uint inp_offset; int from_input;
    int planes; int height; int width; int out_h; int out_w; int kernel_h; int kernel_w;
} args;

#define TT_POOL_BACKWARD
#include "pool_common.glsl"

void main()
{
    int ox = int(gl_GlobalInvocationID.x), row = int(gl_GlobalInvocationID.y);
    if (ox >= args.out_w || row >= args.planes * args.out_h) return;
    int plane = row / args.out_h, oy = row - plane * args.out_h;
    int o = row * args.out_w + ox, first = plane * args.height * args.width;
    int winner = args.from_input != 0 ? -1 : TT_B(argmax)[TT_AT(args.argmax_offset, 4) + o];
    max_pool_window_backward(TT_AT(args.dinp_offset, 4) + first,
                             TT_AT(args.inp_offset, 4) + first, args.height, args.width,
                             oy * args.kernel_h, ox * args.kernel_w, args.kernel_h, args.kernel_w,
                             winner,
                             TT_B(dout)[TT_AT(args.dout_offset, 4) + o]);
}

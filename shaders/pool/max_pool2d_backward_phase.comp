/* pool/max_pool2d_backward_phase: one phase of max_pool2d_backward for any
 * windows: the outputs (oy, ox) with oy = phase_y (mod phases_y), ox =
 * phase_x (mod phases_x), whose windows do not overlap, each adding dout[o]
 * to its winner (argmax, or with from_input the one found again in inp).
 * 2-D (the phase's columns, planes x its rows) (opencl/pool.cl; arguments
 * dinp, dout, argmax, inp, from_input, planes, height, width, out_h, out_w,
 * kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, phase_y, phase_x,
 * phases_y, phases_x). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
TT_BUFFER(2, int, argmax);
TT_BUFFER(3, float, inp);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; uint argmax_offset; uint inp_offset; int from_input;
    int planes; int height; int width; int out_h; int out_w; int kernel_h; int kernel_w;
    int stride_h; int stride_w; int pad_h; int pad_w; int phase_y; int phase_x; int phases_y;
    int phases_x;
} args;

#include "pool_common.glsl"

void main()
{
    int rows = (args.out_h - args.phase_y + args.phases_y - 1) / args.phases_y;
    int ox = args.phase_x + int(gl_GlobalInvocationID.x) * args.phases_x;
    int row = int(gl_GlobalInvocationID.y);
    if (ox >= args.out_w || row >= args.planes * rows) return;
    int plane = row / rows, oy = args.phase_y + (row - plane * rows) * args.phases_y;
    int o = (plane * args.out_h + oy) * args.out_w + ox;
    int first = plane * args.height * args.width;
    float best;
    int winner = args.from_input != 0
        ? max_pool_window(TT_AT(args.inp_offset, 4) + first, args.height, args.width,
                          oy * args.stride_h - args.pad_h, ox * args.stride_w - args.pad_w,
                          args.kernel_h, args.kernel_w, best)
        : TT_B(argmax)[TT_AT(args.argmax_offset, 4) + o];
    int id = TT_AT(args.dinp_offset, 4) + first + winner;
    precise float sum = TT_B(dinp)[id] + TT_B(dout)[TT_AT(args.dout_offset, 4) + o];
    TT_B(dinp)[id] = sum;
}

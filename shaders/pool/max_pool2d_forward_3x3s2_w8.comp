/* pool/max_pool2d_forward_3x3s2_w8: 3x3 stride-2 pad-1 max pooling (ResNet's
 * stem), 8 outputs a work-item, global (ceil(out_w / 8), planes * out_h)
 * (opencl/pool.cl; arguments out, argmax, inp, keep_argmax, planes, height,
 * width, out_h, out_w).  The OpenCL kernel's vector lanes apply
 * max_pool_window's rule in its order, so output by output it is that
 * function, as here. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, int, argmax);
TT_BUFFER(2, float, inp);
layout(push_constant) uniform Args {
    uint out_offset; uint argmax_offset; uint inp_offset; int keep_argmax; int planes;
    int height; int width; int out_h; int out_w;
} args;

#include "pool_common.glsl"

void main()
{
    int x0 = int(gl_GlobalInvocationID.x) * 8, row = int(gl_GlobalInvocationID.y);
    if (x0 >= args.out_w || row >= args.planes * args.out_h) return;
    int plane = row / args.out_h, oy = row - plane * args.out_h;
    int o = row * args.out_w + x0;
    int x = TT_AT(args.inp_offset, 4) + plane * args.height * args.width;
    for (int ox = x0; ox < min(x0 + 8, args.out_w); ox++) {
        float best;
        int at = max_pool_window(x, args.height, args.width, 2 * oy - 1, 2 * ox - 1, 3, 3,
                                 best);
        TT_B(outp)[TT_AT(args.out_offset, 4) + o + ox - x0] = best;
        if (args.keep_argmax != 0) TT_B(argmax)[TT_AT(args.argmax_offset, 4) + o + ox - x0] = at;
    }
}

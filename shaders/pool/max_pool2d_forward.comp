/* pool/max_pool2d_forward: out (planes, out_h, out_w) = the maximum of each
 * window of inp (planes, height, width); with keep_argmax, argmax = its
 * place in the plane (opencl/pool.cl; arguments out, argmax, inp,
 * keep_argmax, planes, height, width, out_h, out_w, kernel_h, kernel_w,
 * stride_h, stride_w, pad_h, pad_w). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, int, argmax);
TT_BUFFER(2, float, inp);
layout(push_constant) uniform Args {
    uint out_offset; uint argmax_offset; uint inp_offset; int keep_argmax; int planes;
    int height; int width; int out_h; int out_w; int kernel_h; int kernel_w; int stride_h;
    int stride_w; int pad_h; int pad_w;
} args;

#include "pool_common.glsl"

void main()
{
    int out_h = args.out_h, out_w = args.out_w;
    int o = tt_global_id();
    if (o >= args.planes * out_h * out_w) return;
    int ox = o % out_w;
    int oy = (o / out_w) % out_h;
    int plane = o / (out_w * out_h);
    float best;
    int at = max_pool_window(TT_AT(args.inp_offset, 4) + plane * args.height * args.width,
                             args.height, args.width, oy * args.stride_h - args.pad_h,
                             ox * args.stride_w - args.pad_w, args.kernel_h, args.kernel_w, best);
    TT_B(outp)[TT_AT(args.out_offset, 4) + o] = best;
    if (args.keep_argmax != 0) TT_B(argmax)[TT_AT(args.argmax_offset, 4) + o] = at;
}

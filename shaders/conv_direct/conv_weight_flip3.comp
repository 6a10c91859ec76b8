/* conv_direct/conv_weight_flip3: dst (Cin, Cout, 3, 3) = src (Cout, Cin, 3,
 * 3) with ci and co swapped and the taps reversed: the weights of the 3x3
 * convolution whose output is conv_direct_forward_k3's input gradient
 * (opencl/conv_direct.cl; arguments dst, src, Cout, Cin; global (Cout Cin
 * 9)). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, dst);
TT_BUFFER(1, float, src);
layout(push_constant) uniform Args {
    uint dst_offset; uint src_offset; int Cout; int Cin;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.Cout * args.Cin * 9) return;
    int t = i % 9, co = (i / 9) % args.Cout, ci = i / 9 / args.Cout;
    int from = TT_AT(args.src_offset, 4) + (co * args.Cin + ci) * 9 + 8 - t;
    TT_B(dst)[TT_AT(args.dst_offset, 4) + i] = TT_B(src)[from];
}

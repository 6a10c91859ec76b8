/* dropout/dropout_forward: out[i] = inp[i] * (keep ? scale : 0)
 * (opencl/dropout.cl; arguments out, inp, key_a, key_b, threshold, scale,
 * n, group).  out may be inp: each invocation reads its element before
 * writing it. */
#version 450
#include "common.glsl"
#include "dropout/dropout_common.glsl"

TT_BUFFER(0, float, outp);
TT_BUFFER(1, float, inp);
layout(push_constant) uniform Args {
    uint out_offset; uint inp_offset; int key_a; int key_b; int threshold; float scale; int n;
    int group;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    float factor = dropout_factor(i, args.group, uint(args.key_a), uint(args.key_b),
                                  uint(args.threshold), args.scale);
    precise float value = TT_B(inp)[TT_AT(args.inp_offset, 4) + i] * factor;
    TT_B(outp)[TT_AT(args.out_offset, 4) + i] = value;
}

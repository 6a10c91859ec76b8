/* dropout/dropout_backward: dinp[i] += dout[i] * (keep ? scale : 0)
 * (opencl/dropout.cl; arguments dinp, dout, key_a, key_b, threshold,
 * scale, n, group); the product rounded before the sum (`precise`), as
 * the kernel's. */
#version 450
#include "common.glsl"
#include "dropout/dropout_common.glsl"

TT_BUFFER(0, float, dinp);
TT_BUFFER(1, float, dout);
layout(push_constant) uniform Args {
    uint dinp_offset; uint dout_offset; int key_a; int key_b; int threshold; float scale; int n;
    int group;
} args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    float factor = dropout_factor(i, args.group, uint(args.key_a), uint(args.key_b),
                                  uint(args.threshold), args.scale);
    precise float g = TT_B(dout)[TT_AT(args.dout_offset, 4) + i] * factor;
    int id = TT_AT(args.dinp_offset, 4) + i;
    precise float total = TT_B(dinp)[id] + g;
    TT_B(dinp)[id] = total;
}

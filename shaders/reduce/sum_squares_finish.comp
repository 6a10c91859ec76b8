/* reduce/sum_squares_finish: acc[0] += the sum of partial[0 .. groups)
 * (opencl/reduce.cl; arguments acc, partial, groups); one work-group of
 * TT_WG items, the same order of additions as the OpenCL kernel. */
#version 450
#include "common.glsl"

layout(constant_id = 3) const int TT_WG = 256;

TT_BUFFER(0, float, acc);
TT_BUFFER(1, float, partial);
layout(push_constant) uniform Args { uint acc_offset; uint partial_offset; int groups; } args;
shared float s[TT_WG];

void main()
{
    int lid = int(gl_LocalInvocationID.x);
    int base = TT_AT(args.partial_offset, 4);
    precise float sum = 0.0;
    for (int i = lid; i < args.groups; i += TT_WG) sum += TT_B(partial)[base + i];
    s[lid] = sum;
    for (int half_ = TT_WG / 2; half_ > 0; half_ >>= 1) {
        barrier();
        if (lid < half_) s[lid] += s[lid + half_];
    }
    barrier();
    if (lid == 0) TT_B(acc)[TT_AT(args.acc_offset, 4)] += s[0];
}

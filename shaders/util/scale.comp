/* util/scale: x[i] *= alpha (opencl/util.cl scale; arguments x, alpha, n). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, x);
layout(push_constant) uniform Args { uint x_offset; float alpha; int n; } args;

void main()
{
    int i = tt_global_id();
    if (i < args.n) TT_B(x)[TT_AT(args.x_offset, 4) + i] *= args.alpha;
}

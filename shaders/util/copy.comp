/* util/copy: y[i] = x[i] (opencl/util.cl copy; arguments y, x, n). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, y);
TT_BUFFER(1, float, x);
layout(push_constant) uniform Args { uint y_offset; uint x_offset; int n; } args;

void main()
{
    int i = tt_global_id();
    if (i < args.n) TT_B(y)[TT_AT(args.y_offset, 4) + i] = TT_B(x)[TT_AT(args.x_offset, 4) + i];
}

/* util/axpy: y[i] += alpha * x[i] (opencl/util.cl axpy; arguments y, x,
 * alpha, n).  `precise`: a multiply and an add, never fused, as in C. */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, y);
TT_BUFFER(1, float, x);
layout(push_constant) uniform Args { uint y_offset; uint x_offset; float alpha; int n; } args;

void main()
{
    int i = tt_global_id();
    if (i >= args.n) return;
    int iy = TT_AT(args.y_offset, 4) + i;
    precise float product = args.alpha * TT_B(x)[TT_AT(args.x_offset, 4) + i];
    precise float sum = TT_B(y)[iy] + product;
    TT_B(y)[iy] = sum;
}

/* util/fill_w8: work-item k sets x[k run .. (k + 1) run - 1], those below n,
 * to value (opencl/util.cl fill_w8; arguments x, value, n, run). */
#version 450
#include "common.glsl"

TT_BUFFER(0, float, x);
layout(push_constant) uniform Args { uint x_offset; float value; int n; int run; } args;

void main()
{
    int start = tt_global_id() * args.run, end = min(args.n, start + args.run);
    int base = TT_AT(args.x_offset, 4);
    for (int i = start; i < end; i++) TT_B(x)[base + i] = args.value;
}

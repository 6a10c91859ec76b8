/* cast/cast_round: x[i] rounded to 16 bits (format 1 fp16, 2 bf16) and
 * widened again, in place, i < n, eight a invocation (opencl/cast.cl;
 * arguments x, format, n). */
#version 450
#include "common.glsl"
#include "half.glsl"

TT_BUFFER(0, uint, x);
layout(push_constant) uniform Args { uint x_offset; int format; int n; } args;

void main()
{
    int x0 = TT_AT(args.x_offset, 4);
    for (int i = 8 * tt_global_id(); i < min(args.n, 8 * tt_global_id() + 8); i++) {
        uint bits = TT_B(x)[x0 + i];
        TT_B(x)[x0 + i] = args.format == 1 ? tt_f16_to_f32(tt_f32_to_f16(bits)) : tt_bf16_to_f32(tt_f32_to_bf16(bits));
    }
}

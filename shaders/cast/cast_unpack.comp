/* cast/cast_unpack: dst[i] = the float src[i]'s 16 bits hold, i < n,
 * format 1 fp16 or 2 bf16, eight a invocation (opencl/cast.cl; arguments
 * dst, src, format, n).  src may start at either half of a 32-bit word. */
#version 450
#include "common.glsl"
#include "half.glsl"

TT_BUFFER(0, uint, dst);
TT_BUFFER(1, uint, src);
layout(push_constant) uniform Args { uint dst_offset; uint src_offset; int format; int n; } args;

void main()
{
    int first = int(args.src_offset / 2u), dst0 = TT_AT(args.dst_offset, 4);
    for (int i = 8 * tt_global_id(); i < min(args.n, 8 * tt_global_id() + 8); i++) {
        int h = first + i;
        uint bits = (TT_B(src)[h / 2] >> uint(16 * (h % 2))) & 0xffffu;
        TT_B(dst)[dst0 + i] = args.format == 1 ? tt_f16_to_f32(bits) : tt_bf16_to_f32(bits);
    }
}

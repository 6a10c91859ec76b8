/* cast/cast_pack: dst[i] = the 16-bit bits of src[i], i < n, format 1 fp16
 * or 2 bf16 (opencl/cast.cl; arguments dst, src, format, n).  Invocation k
 * owns four 32-bit words of dst (eight halves, from the word holding dst[0]
 * on), so no two write the same word; a half of a word outside [0, n) keeps
 * its bits.  The host launches n / 8 + 1 (dst may start at either half of a
 * word). */
#version 450
#include "common.glsl"
#include "half.glsl"

TT_BUFFER(0, uint, dst);
TT_BUFFER(1, uint, src);
layout(push_constant) uniform Args { uint dst_offset; uint src_offset; int format; int n; } args;

void main()
{
    int first = int(args.dst_offset / 2u); /* dst[0]'s half index from the binding */
    int src0 = TT_AT(args.src_offset, 4);
    for (int w = 0; w < 4; w++) {
        int word = first / 2 + 4 * tt_global_id() + w;
        uint packed = 0u, kept_mask = 0u;
        for (int j = 0; j < 2; j++) {
            int i = 2 * word + j - first;
            uint shift = uint(16 * j);
            if (i < 0 || i >= args.n) {
                kept_mask |= 0xffffu << shift;
                continue;
            }
            uint x = TT_B(src)[src0 + i];
            packed |= (args.format == 1 ? tt_f32_to_f16(x) : tt_f32_to_bf16(x)) << shift;
        }
        if (kept_mask == 0xffffffffu) continue; /* no half of ours */
        if (kept_mask != 0u) packed |= TT_B(dst)[word] & kept_mask;
        TT_B(dst)[word] = packed;
    }
}

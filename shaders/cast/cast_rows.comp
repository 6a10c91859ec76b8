/* cast/cast_rows: row bands (src/ops/band.c; opencl/cast.cl, arguments
 * dst, src, dst_format, src_format, dst_stride, src_stride, lead, count,
 * trail).  Invocation (k, p) sets dst[p dst_stride + i], 8 k <= i <
 * min(8 k + 8, lead + count + trail): 0 in the lead and the trail,
 * src[p src_stride + i - lead] between, each side in its format (0 fp32,
 * 1 fp16, 2 bf16).  A 16-bit src may start at either half of a word; a
 * 16-bit dst is written in whole 32-bit words, so the host starts it and
 * its strides at even elements (no two invocations share a word); a half
 * outside the invocation's range keeps its bits. */
#version 450
#include "common.glsl"
#include "half.glsl"

TT_BUFFER(0, uint, dst);
TT_BUFFER(1, uint, src);
layout(push_constant) uniform Args {
    uint dst_offset; uint src_offset; int dst_format; int src_format; int dst_stride;
    int src_stride; int lead; int count; int trail;
} args;

/* The float bits of src's element e (counted from src's first). */
uint src_bits(int e)
{
    if (args.src_format == 0) return TT_B(src)[TT_AT(args.src_offset, 4) + e];
    int h = int(args.src_offset / 2u) + e;
    uint bits = (TT_B(src)[h >> 1] >> uint(16 * (h & 1))) & 0xffffu;
    return args.src_format == 1 ? tt_f16_to_f32(bits) : tt_bf16_to_f32(bits);
}

/* Element i of plane p's row of dst, as float bits. */
uint value_bits(int p, int i)
{
    if (i < args.lead || i >= args.lead + args.count) return 0u;
    return src_bits(p * args.src_stride + i - args.lead);
}

void main()
{
    int k = int(gl_GlobalInvocationID.x), p = int(gl_GlobalInvocationID.y);
    int len = args.lead + args.count + args.trail;
    int begin = 8 * k, end = min(len, 8 * k + 8);
    if (begin >= end) return;
    if (args.dst_format == 0) {
        int d0 = TT_AT(args.dst_offset, 4) + p * args.dst_stride;
        for (int i = begin; i < end; i++) TT_B(dst)[d0 + i] = value_bits(p, i);
        return;
    }
    int d0 = int(args.dst_offset / 2u) + p * args.dst_stride; /* the row's first half */
    for (int word = (d0 + begin) >> 1; word <= (d0 + end - 1) >> 1; word++) {
        uint packed = 0u, kept_mask = 0u;
        for (int j = 0; j < 2; j++) {
            int i = 2 * word + j - d0;
            uint shift = uint(16 * j);
            if (i < begin || i >= end) {
                kept_mask |= 0xffffu << shift;
                continue;
            }
            uint x = value_bits(p, i);
            packed |= (args.dst_format == 1 ? tt_f32_to_f16(x) : tt_f32_to_bf16(x)) << shift;
        }
        if (kept_mask != 0u) packed |= TT_B(dst)[word] & kept_mask;
        TT_B(dst)[word] = packed;
    }
}

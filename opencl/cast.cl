/*
 * Casts between fp32 and 16-bit storage (src/ops/cast.h): format 1 is fp16,
 * 2 is bf16 (tt_precision's values); the conversions are common.cl's
 * tt_f32_to_f16 and friends.
 */

/* dst[i] = the 16-bit bits of src[i] for i = 2k, 2k + 1 below n (work-item
 * k; the host launches n / 2 + 1, as for the Vulkan shader, which packs a
 * 32-bit word each). */
__kernel void cast_pack(TT_MEM(ushort, dst), TT_MEM(const float, src), const int format, const int n)
{
    TT_PTR(ushort, dst);
    TT_PTR(const float, src);
    for (int i = 2 * get_global_id(0); i < n && i < 2 * get_global_id(0) + 2; i++)
        dst[i] = format == 1 ? tt_f32_to_f16(src[i]) : tt_f32_to_bf16(src[i]);
}

/* dst[i] = the float src[i]'s 16 bits hold, i < n (a work-item each). */
__kernel void cast_unpack(TT_MEM(float, dst), TT_MEM(const ushort, src), const int format, const int n)
{
    TT_PTR(float, dst);
    TT_PTR(const ushort, src);
    const int i = get_global_id(0);
    if (i >= n) return;
    dst[i] = format == 1 ? tt_f16_to_f32(src[i]) : tt_bf16_to_f32(src[i]);
}

/*
 * Casts between fp32 and 16-bit storage (src/ops/cast.h): format 1 is fp16,
 * 2 is bf16 (tt_precision's values); the conversions are common.cl's
 * tt_f32_to_f16_8 and friends, 8 values a work-item, the scalar ones at
 * the ragged end.  The host launches n / 8 + 1 work-items for every kernel
 * (the Vulkan pack needs the extra one), the last returning early.
 */

#define CAST_NARROW8(v) (format == 1 ? tt_f32_to_f16_8(v) : tt_f32_to_bf16_8(v))
#define CAST_WIDEN8(h) (format == 1 ? tt_f16_to_f32_8(h) : tt_bf16_to_f32_8(h))
#define CAST_NARROW(v) (format == 1 ? tt_f32_to_f16(v) : tt_f32_to_bf16(v))
#define CAST_WIDEN(h) (format == 1 ? tt_f16_to_f32(h) : tt_bf16_to_f32(h))

/* dst[i] = the 16-bit bits of src[i], i < n. */
__kernel void cast_pack(TT_MEM(ushort, dst), TT_MEM(const float, src), const int format, const int n)
{
    TT_PTR(ushort, dst);
    TT_PTR(const float, src);
    const int i0 = 8 * get_global_id(0);
    if (i0 + 8 <= n) {
        vstore8(CAST_NARROW8(vload8(0, src + i0)), 0, dst + i0);
        return;
    }
    for (int i = i0; i < n; i++) dst[i] = CAST_NARROW(src[i]);
}

/* dst[i] = the float src[i]'s 16 bits hold, i < n. */
__kernel void cast_unpack(TT_MEM(float, dst), TT_MEM(const ushort, src), const int format, const int n)
{
    TT_PTR(float, dst);
    TT_PTR(const ushort, src);
    const int i0 = 8 * get_global_id(0);
    if (i0 + 8 <= n) {
        vstore8(CAST_WIDEN8(vload8(0, src + i0)), 0, dst + i0);
        return;
    }
    for (int i = i0; i < n; i++) dst[i] = CAST_WIDEN(src[i]);
}

/* x[i] = x[i] rounded to 16 bits and widened again (what a pack and an
 * unpack give), in place, i < n. */
__kernel void cast_round(TT_MEM(float, x), const int format, const int n)
{
    TT_PTR(float, x);
    const int i0 = 8 * get_global_id(0);
    if (i0 + 8 <= n) {
        vstore8(CAST_WIDEN8(CAST_NARROW8(vload8(0, x + i0))), 0, x + i0);
        return;
    }
    for (int i = i0; i < n; i++) x[i] = CAST_WIDEN(CAST_NARROW(x[i]));
}

/* x[i] of a tensor stored as `format` (0 fp32, 1 fp16, 2 bf16), as a float. */
static float cast_load(__global const uchar *x, int format, size_t i)
{
    if (format == 0) return ((__global const float *)x)[i];
    return CAST_WIDEN(((__global const ushort *)x)[i]);
}

/* x[i] = v, rounded to `format`. */
static void cast_store(__global uchar *x, int format, size_t i, float v)
{
    if (format == 0)
        ((__global float *)x)[i] = v;
    else
        ((__global ushort *)x)[i] = CAST_NARROW(v);
}

/* 8 values at x[i] as floats, and stored, as cast_load / cast_store. */
static float8 cast_load8(__global const uchar *x, int format, size_t i)
{
    if (format == 0) return vload8(0, (__global const float *)x + i);
    return CAST_WIDEN8(vload8(0, (__global const ushort *)x + i));
}
static void cast_store8(__global uchar *x, int format, size_t i, float8 v)
{
    if (format == 0)
        vstore8(v, 0, (__global float *)x + i);
    else
        vstore8(CAST_NARROW8(v), 0, (__global ushort *)x + i);
}

/* Row bands (src/ops/band.c): work-item (k, p) sets dst[p dst_stride + i],
 * 8 k <= i < min(8 k + 8, lead + count + trail): 0 in the lead and the
 * trail, src[p src_stride + i - lead] between, each side in its format;
 * 8 at once where all 8 are copied (the formats are the launch's, so
 * every work-item takes the same branches). */
__kernel void cast_rows(TT_MEM(uchar, dst), TT_MEM(const uchar, src), const int dst_format,
                        const int src_format, const int dst_stride, const int src_stride,
                        const int lead, const int count, const int trail)
{
    TT_PTR(uchar, dst);
    TT_PTR(const uchar, src);
    const int p = get_global_id(1), len = lead + count + trail, i0 = 8 * get_global_id(0);
    const size_t d0 = (size_t)p * dst_stride, s0 = (size_t)p * src_stride;
    if (i0 >= lead && i0 + 8 <= lead + count) {
        cast_store8(dst, dst_format, d0 + i0, cast_load8(src, src_format, s0 + i0 - lead));
        return;
    }
    for (int i = i0; i < min(len, i0 + 8); i++) {
        float v = i < lead || i >= lead + count ? 0.0f : cast_load(src, src_format, s0 + i - lead);
        cast_store(dst, dst_format, d0 + i, v);
    }
}

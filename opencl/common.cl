/*
 * Prefixed to every program.  A buffer argument arrives as a pointer and a
 * byte offset (the host never makes sub-buffers):
 *
 *   __kernel void k(TT_MEM(float, x), const int n) { TT_PTR(float, x); ... }
 */
#define TT_MEM(type, name) __global type *name##_base, const ulong name##_offset
#define TT_PTR(type, name) \
    __global type *name = (__global type *)((__global char *)name##_base + name##_offset)

/* Helpers are TT_INLINE, never a bare `inline`: C99 gives a plain inline
 * no external definition, so a compiler that keeps a call fails to link
 * it, and elsewhere than clang TT_INLINE is `static inline`.  Under clang
 * (PoCL, ROCm, Intel's, Mesa's) it stays the plain `inline`, which clang
 * links at the optimisation we build with: `static inline` (and
 * always_inline) ran PoCL's kernels 28% slower
 * (unet-efficientnet-b2, the same picks).  A loop to unroll is TT_UNROLL:
 * OpenCL C 2.0's attribute, which clang also takes in the 1.2 programs we
 * build; another 1.2 front end gets nothing rather than a build error that
 * would take the whole program.  (tests/check_opencl.py keeps both so.) */
#if defined(__clang__)
#define TT_INLINE inline
#else
#define TT_INLINE static inline
#endif
#if defined(__clang__) || __OPENCL_C_VERSION__ >= 200
#define TT_UNROLL __attribute__((opencl_unroll_hint))
#else
#define TT_UNROLL
#endif

/* 8-wide row access for the CPU kernels: row[x0 .. x0 + 7], 0 outside [0, w). */
TT_INLINE float8 tt_load8(__global const float *row, const int x0, const int w)
{
    if (x0 >= 0 && x0 + 8 <= w) return vload8(0, row + x0);
    float lanes[8];
    for (int l = 0; l < 8; l++) lanes[l] = (x0 + l >= 0 && x0 + l < w) ? row[x0 + l] : 0.0f;
    return vload8(0, lanes);
}

/* row[x0 .. x0 + 7] (+)= v, only the lanes inside [0, w). */
TT_INLINE void tt_store8(__global float *row, const int x0, const int w, const float8 v,
                      const int accumulate)
{
    if (x0 + 8 <= w) {
        vstore8(accumulate ? vload8(0, row + x0) + v : v, 0, row + x0);
        return;
    }
    float lanes[8];
    vstore8(v, 0, lanes);
    for (int l = 0; l < 8 && x0 + l < w; l++) row[x0 + l] = (accumulate ? row[x0 + l] : 0.0f) + lanes[l];
}

/* 16-wide row access for the 16-lane CPU kernels: row[x0 .. x0 + 15], 0
 * past w (x0 >= 0), and row[x0 .. x0 + 15] = v for the lanes inside
 * [0, w).  Where the row ends, lane by lane with no private array (one
 * cost the 16-lane kernels' accumulators their registers). */
#define TT_AT16(i) (x0 + (i) < w ? row[x0 + (i)] : 0.0f)
TT_INLINE float16 tt_load16(__global const float *row, const int x0, const int w)
{
    if (x0 + 16 <= w) return vload16(0, row + x0);
    return (float16)(TT_AT16(0), TT_AT16(1), TT_AT16(2), TT_AT16(3), TT_AT16(4), TT_AT16(5),
                     TT_AT16(6), TT_AT16(7), TT_AT16(8), TT_AT16(9), TT_AT16(10), TT_AT16(11),
                     TT_AT16(12), TT_AT16(13), TT_AT16(14), TT_AT16(15));
}
#undef TT_AT16

#define TT_SET16(i, lane) \
    if (x0 + (i) < w) row[x0 + (i)] = v.lane
TT_INLINE void tt_store16(__global float *row, const int x0, const int w, const float16 v)
{
    if (x0 + 16 <= w) {
        vstore16(v, 0, row + x0);
        return;
    }
    TT_SET16(0, s0); TT_SET16(1, s1); TT_SET16(2, s2); TT_SET16(3, s3);
    TT_SET16(4, s4); TT_SET16(5, s5); TT_SET16(6, s6); TT_SET16(7, s7);
    TT_SET16(8, s8); TT_SET16(9, s9); TT_SET16(10, sa); TT_SET16(11, sb);
    TT_SET16(12, sc); TT_SET16(13, sd); TT_SET16(14, se);
}
#undef TT_SET16

/* The 3x3 kernels' edge columns without a lane-by-lane load: v = row[0 .. 7]
 * gives row[-1 .. 6] with the padding 0 in front (tt_shift_in8), and v =
 * row[w - 8 .. w - 1] gives row[w - 7 .. w] with the padding 0 behind
 * (tt_shift_out8). */
TT_INLINE float8 tt_shift_in8(const float8 v)
{
    return shuffle2((float8)(0.0f), v, (uint8)(0, 8, 9, 10, 11, 12, 13, 14));
}
TT_INLINE float8 tt_shift_out8(const float8 v)
{
    return shuffle2(v, (float8)(0.0f), (uint8)(1, 2, 3, 4, 5, 6, 7, 8));
}

/* 16-bit storage (src/core/precision.h, whose C functions these repeat
 * operation for operation so every backend stores the same bits): fp16 and
 * bf16 rounded to nearest, ties to even, NaN kept quiet, fp16 overflowing
 * to infinity from 65520; back to float exactly.  Plain integer code, not
 * vstore_half_rte, whose NaN payloads are the implementation's. */
TT_INLINE ushort tt_f32_to_f16(const float value)
{
    const uint x = as_uint(value), sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return (ushort)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
    if (magnitude >= 0x477ff000u) return (ushort)(sign | 0x7c00u);
    if (magnitude < 0x38800000u) {
        if (magnitude < 0x33000000u) return (ushort)sign;
        const uint exponent = magnitude >> 23, mantissa = (magnitude & 0x7fffffu) | 0x800000u;
        const uint shift = 126u - exponent, rest = mantissa & ((1u << shift) - 1u);
        const uint halfway = 1u << (shift - 1u);
        uint kept = mantissa >> shift;
        kept += (rest > halfway || (rest == halfway && (kept & 1u))) ? 1u : 0u;
        return (ushort)(sign | kept);
    }
    const uint rebased = magnitude - 0x38000000u, rest = rebased & 0x1fffu;
    uint kept = rebased >> 13;
    kept += (rest > 0x1000u || (rest == 0x1000u && (kept & 1u))) ? 1u : 0u;
    return (ushort)(sign | kept);
}
TT_INLINE float tt_f16_to_f32(const ushort bits)
{
    const uint sign = (uint)(bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1fu;
    const uint mantissa = bits & 0x3ffu;
    if (exponent == 0x1fu) return as_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0u) return as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    return as_float(sign | as_uint((float)mantissa * 0x1p-24f));
}
TT_INLINE ushort tt_f32_to_bf16(const float value)
{
    uint x = as_uint(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (ushort)(x >> 16);
}
TT_INLINE float tt_bf16_to_f32(const ushort bits) { return as_float((uint)bits << 16); }

/* The same conversions on 8 values at once, without branches (PoCL runs
 * them as vector code; the scalar ones above it cannot vectorise across
 * work-items).  Vector comparisons are -1 where true, hence the selects. */
TT_INLINE ushort8 tt_f32_to_f16_8(const float8 value)
{
    const uint8 x = as_uint8(value), sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
    const uint8 rebased = magnitude - 0x38000000u, rest = rebased & 0x1fffu;
    uint8 normal = rebased >> 13;
    normal += select((uint8)(0u), (uint8)(1u),
                     as_uint8((rest > 0x1000u) | ((rest == 0x1000u) & ((normal & 1u) != 0u))));
    const uint8 exponent = magnitude >> 23, mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint8 shift = clamp((uint8)(126u) - min(exponent, (uint8)(126u)), (uint8)(14u), (uint8)(24u));
    const uint8 srest = mantissa & ((((uint8)(1u)) << shift) - 1u), halfway = ((uint8)(1u)) << (shift - 1u);
    uint8 sub = mantissa >> shift;
    sub += select((uint8)(0u), (uint8)(1u),
                  as_uint8((srest > halfway) | ((srest == halfway) & ((sub & 1u) != 0u))));
    uint8 h = select(normal, sub, as_uint8(magnitude < 0x38800000u));
    h = select(h, (uint8)(0u), as_uint8(magnitude < 0x33000000u));
    h = select(h, (uint8)(0x7c00u), as_uint8(magnitude >= 0x477ff000u));
    h = select(h, (uint8)(0x7e00u) | ((magnitude >> 13) & 0x3ffu), as_uint8(magnitude > 0x7f800000u));
    return convert_ushort8(sign | h);
}
TT_INLINE float8 tt_f16_to_f32_8(const ushort8 half_bits)
{
    const uint8 bits = convert_uint8(half_bits), sign = (bits & 0x8000u) << 16;
    const uint8 exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
    const uint8 normal = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    const uint8 special = sign | 0x7f800000u | (mantissa << 13);
    const uint8 sub = sign | as_uint8(convert_float8(mantissa) * 0x1p-24f);
    uint8 x = select(normal, sub, as_uint8(exponent == 0u));
    x = select(x, special, as_uint8(exponent == 0x1fu));
    return as_float8(x);
}
TT_INLINE ushort8 tt_f32_to_bf16_8(const float8 value)
{
    const uint8 x = as_uint8(value);
    const uint8 rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    return convert_ushort8(select(rounded, (x >> 16) | 0x40u, as_uint8((x & 0x7fffffffu) > 0x7f800000u)));
}
TT_INLINE float8 tt_bf16_to_f32_8(const ushort8 bits) { return as_float8(convert_uint8(bits) << 16); }

/* The direct convolutions' geometry arguments (conv_direct*.cl: N, Cin, H,
 * W, Cout, OH, OW, kH, kW, sH, sW, pH, pW, dH, dW) and their forwards'
 * arguments and pointers. */
#define TT_GEOMETRY                                                                   \
    const int N, const int Cin, const int H, const int W, const int Cout, const int OH, \
        const int OW, const int KH, const int KW, const int SH, const int SW, const int PH, \
        const int PW, const int DH, const int DW
#define TT_FORWARD_ARGS                                                                  \
    TT_MEM(float, out), TT_MEM(const float, inp), TT_MEM(const float, weight),           \
        TT_MEM(const float, bias), const int has_bias, const int accumulate, TT_GEOMETRY
#define TT_FORWARD_PTRS         \
    TT_PTR(float, out);         \
    TT_PTR(const float, inp);   \
    TT_PTR(const float, weight); \
    TT_PTR(const float, bias)

/*
 * 16-bit storage in shaders (src/core/precision.h, whose C functions these
 * repeat operation for operation so every backend stores the same bits):
 * fp16 and bf16 rounded to nearest, ties to even, NaN kept quiet, fp16
 * overflowing to infinity from 65520; back to float exactly.  Integer code
 * on the float's bits (uint buffers), so no device flushes a subnormal on
 * the way and no 16-bit storage feature is needed: two halves share a
 * 32-bit word, the first in its low bits.
 */
uint tt_f32_to_f16(uint x)
{
    uint sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu);
    if (magnitude >= 0x477ff000u) return sign | 0x7c00u;
    if (magnitude < 0x38800000u) {
        if (magnitude < 0x33000000u) return sign;
        uint exponent = magnitude >> 23, mantissa = (magnitude & 0x7fffffu) | 0x800000u;
        uint shift = 126u - exponent, rest = mantissa & ((1u << shift) - 1u);
        uint halfway = 1u << (shift - 1u);
        uint kept = mantissa >> shift;
        kept += (rest > halfway || (rest == halfway && (kept & 1u) != 0u)) ? 1u : 0u;
        return sign | kept;
    }
    uint rebased = magnitude - 0x38000000u, rest = rebased & 0x1fffu;
    uint kept = rebased >> 13;
    kept += (rest > 0x1000u || (rest == 0x1000u && (kept & 1u) != 0u)) ? 1u : 0u;
    return sign | kept;
}

/* The float's bits of an fp16's: subnormals normalised with integer steps. */
uint tt_f16_to_f32(uint bits)
{
    uint sign = (bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
    if (exponent == 0x1fu) return sign | 0x7f800000u | (mantissa << 13);
    if (exponent != 0u) return sign | ((exponent + 112u) << 23) | (mantissa << 13);
    if (mantissa == 0u) return sign;
    uint top = uint(findMSB(mantissa)); /* value = mantissa 2^-24, top bit 2^(top - 24) */
    return sign | ((top + 103u) << 23) | ((mantissa << (23u - top)) & 0x7fffffu);
}

uint tt_f32_to_bf16(uint x)
{
    if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
    x += 0x7fffu + ((x >> 16) & 1u);
    return x >> 16;
}

uint tt_bf16_to_f32(uint bits) { return bits << 16; }

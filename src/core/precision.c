/* Storage precisions: names and the reference conversions (precision.h).
 * The bit manipulations here are the ones opencl/cast.cl and
 * shaders/cast/ spell out again, so every backend stores the same bits. */
#include "core/precision.h"

#include <string.h>
#include <strings.h>

static const char *const precision_names[] = {
    [TT_PRECISION_FP32] = "fp32",
    [TT_PRECISION_FP16] = "fp16",
    [TT_PRECISION_BF16] = "bf16",
    [TT_PRECISION_AUTO] = "auto",
};
_Static_assert(sizeof precision_names / sizeof precision_names[0] == TT_PRECISION_COUNT,
               "every tt_precision needs a name");

const char *tt_precision_name(tt_precision precision)
{
    return (unsigned)precision < TT_PRECISION_COUNT ? precision_names[precision] : "unknown";
}

tt_status tt_precision_parse(const char *what, const char *name, tt_precision *out)
{
    for (int p = 0; p < TT_PRECISION_COUNT; p++)
        if (name && strcasecmp(name, precision_names[p]) == 0) {
            *out = (tt_precision)p;
            return NULL;
        }
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: unknown precision '%s'; use one of %s",
                        what, name ? name : "(none)", TT_PRECISION_CHOICES);
}

int tt_precision_format(tt_precision precision)
{
    return precision == TT_PRECISION_FP16 ? 1 : precision == TT_PRECISION_BF16 ? 2 : 0;
}

size_t tt_precision_bytes(tt_precision precision)
{
    return precision == TT_PRECISION_FP16 || precision == TT_PRECISION_BF16 ? 2 : 4;
}

static uint32_t bits_of(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

static float float_of(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

uint16_t tt_f32_to_f16(float value)
{
    uint32_t x = bits_of(value);
    uint32_t sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
    if (magnitude >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: infinity */
    if (magnitude < 0x38800000u) {
        /* below 2^-14: a subnormal half, m 2^-24 with m = round(|value| 2^24) */
        if (magnitude < 0x33000000u) return (uint16_t)sign; /* <= 2^-25: rounds to 0 */
        uint32_t exponent = magnitude >> 23, mantissa = (magnitude & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - exponent; /* 14..24: value = mantissa 2^(exponent - 150) */
        uint32_t kept = mantissa >> shift, rest = mantissa & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        kept += rest > halfway || (rest == halfway && (kept & 1u));
        return (uint16_t)(sign | kept);
    }
    /* normal: rebias 127 -> 15, round the 13 dropped bits to nearest even;
     * a carry into the exponent is the right result (up to infinity) */
    uint32_t rebased = magnitude - 0x38000000u;
    uint32_t kept = rebased >> 13, rest = rebased & 0x1fffu;
    kept += rest > 0x1000u || (rest == 0x1000u && (kept & 1u));
    return (uint16_t)(sign | kept);
}

float tt_f16_to_f32(uint16_t bits)
{
    uint32_t sign = (uint32_t)(bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1fu;
    uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0x1fu) return float_of(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    /* zero or subnormal: mantissa 2^-24, exact in binary32 */
    float magnitude = (float)mantissa * 0x1p-24f;
    return float_of(sign | bits_of(magnitude));
}

uint16_t tt_f32_to_bf16(float value)
{
    uint32_t x = bits_of(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u); /* to nearest, ties to even; carries reach infinity */
    return (uint16_t)(x >> 16);
}

float tt_bf16_to_f32(uint16_t bits) { return float_of((uint32_t)bits << 16); }

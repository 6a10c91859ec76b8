/*
 * Storage precisions of activations (issue: half-precision storage): what a
 * 16-bit tensor holds, the names users write (--precision), and the exact
 * conversions every backend must reproduce, in plain C: the reference of
 * the cast op (ops/cast.h) and of every kernel that reads or writes halves.
 *
 *   fp32  IEEE binary32, as every tensor is today
 *   fp16  IEEE binary16: 5 exponent bits (largest finite 65504, smallest
 *         normal 2^-14, subnormals down to 2^-24), 10 mantissa bits
 *   bf16  the top 16 bits of a binary32: its exponent range, 7 mantissa bits
 *
 * Both 16-bit conversions round to nearest, ties to even; fp16 overflows to
 * infinity (a value at or past 65520 rounds up out of range); a NaN stays a
 * NaN (quiet, its sign kept); 16 -> 32 is exact.  Arithmetic is always fp32:
 * these are storage formats only.
 */
#ifndef TT_CORE_PRECISION_H
#define TT_CORE_PRECISION_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef enum tt_precision {
    TT_PRECISION_FP32 = 0,
    TT_PRECISION_FP16,
    TT_PRECISION_BF16,
    TT_PRECISION_AUTO,   /* chosen at the start of a run; never a tensor's */
    TT_PRECISION_COUNT
} tt_precision;

#define TT_PRECISION_CHOICES "fp32|fp16|bf16|auto"

/* "fp32", "fp16", "bf16", "auto"; "unknown" past the enum. */
const char *tt_precision_name(tt_precision precision);
/* The precision named (case-insensitive); otherwise an error naming `what`
 * (a flag or a file's field) and the choices. */
tt_status tt_precision_parse(const char *what, const char *name, tt_precision *out);
/* Bytes of one stored element: 4 or 2 (auto: 4, it is not a storage). */
size_t tt_precision_bytes(tt_precision precision);
/* How kernels are told a tensor's storage (opencl/cast.cl's formats,
 * norm.cl's NORM_X16 and NORM_G16): 0 fp32, 1 fp16, 2 bf16 (auto: 0). */
int tt_precision_format(tt_precision precision);

/* The conversions (see the top of the file). */
uint16_t tt_f32_to_f16(float value);
float tt_f16_to_f32(uint16_t bits);
uint16_t tt_f32_to_bf16(float value);
float tt_bf16_to_f32(uint16_t bits);

#endif

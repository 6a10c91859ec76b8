/*
 * Casts between fp32 tensors and 16-bit storage (fp16 or bf16, see
 * core/precision.h for the exact rounding): the pack and unpack of
 * activations kept in 16 bits.  Memory is (buffer, byte offset); a 16-bit
 * tensor of n elements takes 2 n bytes and must start at an even byte.
 * dst and src may not overlap.  Unpacking what was packed gives the value
 * rounded to 16 bits; packing what was unpacked gives the same bits.
 */
#ifndef TT_OPS_CAST_H
#define TT_OPS_CAST_H

#include "backend/backend.h"
#include "core/precision.h"

/* dst (n 16-bit values) = src (n floats) rounded to `precision` (fp16 or
 * bf16; anything else is refused). */
tt_status tt_cast_pack(tt_backend *be, tt_mem dst, tt_mem src, tt_precision precision, size_t n);

/* dst (n floats) = the values of src (n 16-bit values of `precision`). */
tt_status tt_cast_unpack(tt_backend *be, tt_mem dst, tt_mem src, tt_precision precision, size_t n);

/* x (n floats) = x rounded to `precision` and widened again, in place: the
 * values a pack and an unpack would give, with no 16-bit copy. */
tt_status tt_cast_round(tt_backend *be, tt_mem x, tt_precision precision, size_t n);

#endif

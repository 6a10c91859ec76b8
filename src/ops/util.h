/*
 * Utility ops over flat float arrays: fill, scale, axpy, copy.
 * Counts are in floats; memory is (buffer, byte offset).
 */
#ifndef TT_OPS_UTIL_H
#define TT_OPS_UTIL_H

#include "backend/backend.h"

tt_status tt_fill(tt_backend *be, tt_mem x, float value, size_t n);   /* x = value */
tt_status tt_scale(tt_backend *be, tt_mem x, float alpha, size_t n);  /* x *= alpha */
tt_status tt_axpy(tt_backend *be, tt_mem y, tt_mem x, float alpha, size_t n); /* y += alpha x */
tt_status tt_copy_f32(tt_backend *be, tt_mem y, tt_mem x, size_t n);  /* y = x, by kernel */

#endif

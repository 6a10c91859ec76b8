/*
 * Run-length encoded masks as the Kaggle segmentation competitions write
 * them ("Understanding Clouds", "Severstal"): space-separated `start length`
 * pairs, 1-based, pixels numbered top to bottom, then left to right
 * (column-major).  The empty string is an empty mask.
 *
 * Decoding is strict: odd token counts, non-numeric tokens, zero or negative
 * starts and lengths, runs past the end of the image and overlapping or
 * unsorted runs are errors (TT_ERR_FORMAT) whose message says which token;
 * the caller prefixes the file and line.
 */
#ifndef TT_DATA_RLE_H
#define TT_DATA_RLE_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

/* Decodes `text` (NUL-terminated; NULL counts as empty) into plane
 * (height x width bytes, row-major): 1 inside a run, 0 elsewhere.  The whole
 * plane is written, also on error (then its content is unspecified).
 * plane == NULL only validates. */
tt_status tt_rle_decode(const char *text, int width, int height, uint8_t *plane);

/* Same, for `size` bytes that need not be NUL-terminated (fuzzing, CSV
 * fields).  A NUL byte inside is an error. */
tt_status tt_rle_decode_n(const char *text, size_t size, int width, int height, uint8_t *plane);

/* Encodes plane (height x width, row-major, nonzero = inside) as RLE text in
 * column-major order.  *text is malloc'd, owned by the caller; "" for an
 * empty plane. */
tt_status tt_rle_encode(const uint8_t *plane, int width, int height, char **text);

#endif

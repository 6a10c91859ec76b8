/*
 * Decoding whole images into 8-bit RGB, and reading their size from the
 * header alone.
 *
 * JPEG, PNG and BMP go through stb_image; TIFF (stripped or tiled, any
 * photometric libtiff's RGBA interface knows, first directory) through
 * libtiff.  Pixels are interleaved: height x width x 3 bytes, row-major,
 * R G B per pixel.  Images are never resized.  The size is checked against
 * a max_pixels limit from the header BEFORE anything is decoded, so a huge
 * file is refused without allocating its pixels.
 */
#ifndef TT_DATA_IMAGE_H
#define TT_DATA_IMAGE_H

#include <stdint.h>

#include "tiletrain.h"

/* The limit used when a caller passes max_pixels = 0: 2^28 pixels
 * (16384 x 16384), 768 MiB of decoded RGB. */
#define TT_IMAGE_DEFAULT_MAX_PIXELS (1ULL << 28)

typedef struct tt_image {
    int width, height;
    uint8_t *pixels; /* (H, W, 3) interleaved RGB, malloc'd; tt_image_free() */
} tt_image;

typedef enum tt_image_format {
    TT_IMAGE_UNKNOWN,
    TT_IMAGE_STB,  /* JPEG, PNG, BMP (and what else stb_image reads) */
    TT_IMAGE_TIFF,
} tt_image_format;

/* Reads only the header: width and height.  tiled (may be NULL) is set to 1
 * for a tiled TIFF, 0 otherwise.  Errors name the file: missing file
 * (TT_ERR_IO), unknown or broken header (TT_ERR_FORMAT). */
tt_status tt_image_info(const char *path, int *width, int *height, int *tiled);

/* Decodes the whole image into out (out->pixels owned by the caller).
 * Refuses (TT_ERR_TOO_LARGE) an image of more than max_pixels pixels
 * (0 = TT_IMAGE_DEFAULT_MAX_PIXELS) before decoding it.  A truncated or
 * corrupt file is TT_ERR_FORMAT naming the file. */
tt_status tt_image_load(const char *path, uint64_t max_pixels, tt_image *out);

/* Frees the pixels; the struct is zeroed.  NULL allowed. */
void tt_image_free(tt_image *image);

/* The format by the file's first bytes (TIFF magic or not); UNKNOWN when the
 * file cannot be opened. */
tt_image_format tt_image_sniff(const char *path);

/* Refusal message shared with the tile cache: TT_ERR_TOO_LARGE when
 * width * height > max_pixels (0 = default), else NULL. */
tt_status tt_image_check_size(const char *path, int width, int height, uint64_t max_pixels);

/* libtiff reports errors through process-wide handlers; these route them
 * into a per-thread buffer instead of stderr.  Call tt_tiff_quiet() before
 * any libtiff use (idempotent, thread-safe); tt_tiff_last_error() returns
 * the last libtiff error message of this thread ("" if none) and
 * tt_tiff_clear_error() empties it. */
void tt_tiff_quiet(void);
const char *tt_tiff_last_error(void);
void tt_tiff_clear_error(void);

#endif

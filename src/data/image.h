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

#include "data/image_probe.h" /* TT_IMAGE_DEFAULT_MAX_PIXELS */
#include "tiletrain.h"


typedef struct tt_image {
    int width, height;
    uint8_t *pixels; /* (H, W, 3) interleaved RGB, malloc'd; tt_image_free() */
} tt_image;

/* Reads only the header: width and height.  tiled (may be NULL) is set to 1
 * for a tiled TIFF, 0 otherwise.  Errors name the file: missing file
 * (TT_ERR_IO), unknown or broken header (TT_ERR_FORMAT). */
tt_status tt_image_info(const char *path, int *width, int *height, int *tiled);

/* Decodes the whole image into out (out->pixels owned by the caller).
 * Refuses (TT_ERR_TOO_LARGE) an image of more than max_pixels pixels
 * (0 = TT_IMAGE_DEFAULT_MAX_PIXELS) before decoding it.  A truncated or
 * corrupt file is TT_ERR_FORMAT naming the file. */
tt_status tt_image_load(const char *path, uint64_t max_pixels, tt_image *out);

/* Writes (h, w, channels) bytes as a PNG at path, atomically
 * (tt_file_write_atomic): the file is whole or as it was.  Errors name it. */
tt_status tt_image_write_png(const char *path, int w, int h, int channels, const uint8_t *pixels);

/* Frees the pixels; the struct is zeroed.  NULL allowed. */
void tt_image_free(tt_image *image);

/* The file extensions read as images (case-insensitive), for messages:
 * ".png .jpg .jpeg .bmp .tif .tiff". */
#define TT_IMAGE_EXTENSIONS ".png .jpg .jpeg .bmp .tif .tiff"

/* The names (not paths) of the image files in dir by extension, hidden
 * files left out, sorted by strcmp.  TT_ERR_IO when dir cannot be read.
 * *names is an array of *count strings; free with tt_image_free_names. */
tt_status tt_image_list_dir(const char *dir, char ***names, int *count);
void tt_image_free_names(char **names, int count);

/* The max_pixels refusal (image_probe.c's message), for the tile cache:
 * TT_ERR_TOO_LARGE when width * height > max_pixels (0 = default), else NULL. */
tt_status tt_image_check_size(const char *path, int width, int height, uint64_t max_pixels);

#endif

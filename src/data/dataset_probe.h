/*
 * Looking at image and mask files without decoding the images: existence,
 * size, the format from the magic bytes, the dimensions from the header
 * (stbi_info, libtiff), a refusal of headers that claim more pixels than a
 * limit, and a truncation check (the PNG IEND chunk, the JPEG end-of-image
 * marker).  Also reads 8-bit mask PNGs as class indices, palette PNGs
 * included (see tt_probe_mask_png).
 */
#ifndef TT_DATA_DATASET_PROBE_H
#define TT_DATA_DATASET_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "data/image.h"
#include "tiletrain.h"

/* Images above this many pixels are refused unless the options say more:
 * the decoder's limit (2^28), so what the data set accepts also decodes. */
#define TT_DATASET_DEFAULT_MAX_PIXELS TT_IMAGE_DEFAULT_MAX_PIXELS

typedef struct tt_image_header {
    int width, height;
    int channels;     /* as stored in the file */
    const char *kind; /* "PNG", "JPEG", "BMP", "TIFF" */
} tt_image_header;

/* Checks the image at path: present, not empty, a PNG/JPEG/BMP/TIFF whose
 * header reads, width * height <= max_pixels (0: the default), not cut
 * short.  Errors are one line naming the file and the reason: TT_ERR_IO for
 * missing or unreadable files, TT_ERR_FORMAT for bad content,
 * TT_ERR_TOO_LARGE for headers above the limit. */
tt_status tt_probe_image(const char *path, uint64_t max_pixels, tt_image_header *header);

/* The same checks for an image held in memory (fuzzing, tests); TIFF is
 * recognised but only checked from files. */
tt_status tt_probe_image_memory(const unsigned char *data, size_t size, const char *name,
                                uint64_t max_pixels, tt_image_header *header);

/* Decodes a mask PNG held in memory into one plane of class indices
 * (height x width, row-major, malloc'd into *plane, owned by the caller).
 * Grayscale PNGs of 8 bits give their values; palette PNGs give the palette
 * INDEX of each pixel: stb_image expands palettes to colours, so the colours
 * are mapped back through the PLTE (and tRNS) chunks read from the file;
 * a pixel whose colour two palette entries share is an error.  Other colour
 * types and bit depths are refused with advice.  `name` prefixes errors. */
tt_status tt_probe_mask_png(const unsigned char *data, size_t size, const char *name,
                            uint64_t max_pixels, int *width, int *height, uint8_t **plane);

/* Reads a whole file into memory (*data malloc'd, owned by the caller).
 * Missing and zero-byte files are one-line TT_ERR_IO errors naming it. */
tt_status tt_probe_read_file(const char *path, unsigned char **data, size_t *size);

#endif

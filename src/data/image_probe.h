/*
 * Looking at an image file without decoding its pixels: the one place
 * that tells the format from the first bytes, reads the size from the
 * header (stbi_info, libtiff), refuses headers above a max-pixels limit
 * and spots files cut short (the PNG IEND chunk, the JPEG end-of-image
 * marker).  image.c runs it before decoding, the data sets at open.
 * Also opens TIFFs with per-handle error handlers (no global libtiff
 * state): every libtiff user in src/data goes through tt_tiff_open.
 */
#ifndef TT_DATA_IMAGE_PROBE_H
#define TT_DATA_IMAGE_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

/* libtiff's handle, as tiffio.h declares it (C11 allows the typedef twice):
 * users of tt_tiff_open include tiffio.h themselves. */
typedef struct tiff TIFF;

/* The limit used when a caller passes max_pixels = 0: 2^28 pixels
 * (16384 x 16384), 768 MiB of decoded RGB. */
#define TT_IMAGE_DEFAULT_MAX_PIXELS (1ULL << 28)

/* Bytes at the end of a file searched for the PNG IEND / JPEG EOI marker,
 * so that a little trailing junk some writers add is tolerated. */
#define TT_IMAGE_TAIL 4096

typedef struct tt_image_header {
    int width, height;
    int channels;     /* as stored in the file */
    int tiled;        /* a tiled TIFF */
    const char *kind; /* "PNG", "JPEG", "BMP", "TIFF" */
} tt_image_header;

/* The kind of image from its first bytes ("PNG", "JPEG", "BMP", "TIFF"),
 * or NULL. */
const char *tt_image_kind(const unsigned char *head, size_t n);

/* TT_ERR_TOO_LARGE when width * height > max_pixels (0: the default
 * limit), naming the file, the kind and the numbers; else NULL. */
tt_status tt_image_check_pixels(const char *name, const char *kind, int width, int height,
                                uint64_t max_pixels);

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

/* Missing, unreadable or empty files as one TT_ERR_IO line naming path;
 * else NULL with *size set. */
tt_status tt_probe_file_size(const char *path, size_t *size);

/* libtiff errors of one handle: the first message since the open. */
typedef struct tt_tiff_errors {
    char message[256];
} tt_tiff_errors;

/* TIFFOpen with handlers of this handle only: errors go to *errors (which
 * must live until TIFFClose), warnings (unknown tags, GeoTIFF keys) are
 * dropped.  NULL when the file does not open; tt_tiff_reason says why. */
TIFF *tt_tiff_open(const char *path, const char *mode, tt_tiff_errors *errors);
/* The first error, or "libtiff gave no reason". */
const char *tt_tiff_reason(const tt_tiff_errors *errors);
/* The same over an open descriptor (TIFFClose closes it); `name` is what
 * messages call it. */
TIFF *tt_tiff_fdopen(int fd, const char *name, const char *mode, tt_tiff_errors *errors);

#endif

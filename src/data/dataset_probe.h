/*
 * What the data sets read from their files besides image headers (those
 * are image_probe.h's, included here): 8-bit mask PNGs as class indices,
 * palette PNGs included (see tt_probe_mask_png), and whole files.
 */
#ifndef TT_DATA_DATASET_PROBE_H
#define TT_DATA_DATASET_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "data/image.h"
#include "data/image_probe.h"
#include "tiletrain.h"

/* Images above this many pixels are refused unless the options say more:
 * the decoder's limit (2^28), so what the data set accepts also decodes. */
#define TT_DATASET_DEFAULT_MAX_PIXELS TT_IMAGE_DEFAULT_MAX_PIXELS

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

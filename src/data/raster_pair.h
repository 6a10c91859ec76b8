/*
 * A raster pair: an image raster (any band count; 8- or 16-bit unsigned or
 * 32-bit float samples) and its label raster (one band of 8-bit class
 * indices, 255 = ignore) on the same grid, read for training crop by crop
 * from the files' own tiles or strips (data/raster.h), never decoded whole.
 *
 * The grid: both rasters have the same width and height, and when both
 * carry a georeference (pixel scale, tiepoints, transformation) it is the
 * same.  A mask with no GeoTIFF tag at all is taken as on the image's grid.
 *
 * Ignore.  A pixel is ignored (mask 255, image 0 after normalisation) when
 * the mask says 255 or the pair's mask nodata value, when any chosen band
 * of the image holds the image's nodata value (its GDAL_NODATA tag; "nan"
 * matches NaN), or when it lies outside the rasters (a crop may overhang).
 * The losses leave 255 out (ops/softmax_ce.h, ops/bce.h: desc->ignore).
 *
 * Not thread-safe: one reader per thread.
 */
#ifndef TT_DATA_RASTER_PAIR_H
#define TT_DATA_RASTER_PAIR_H

#include <stdint.h>

#include "data/raster.h"
#include "tiletrain.h"

#define TT_RASTER_MAX_BANDS 64 /* chosen bands: a model's input channels at most */

/* A run's input bands and their normalisation, as a checkpoint keeps them. */
typedef struct tt_band_norm {
    int count;                              /* 0: none (an RGB run) */
    int bands[TT_RASTER_MAX_BANDS];         /* from 1 */
    float mean[TT_RASTER_MAX_BANDS], std[TT_RASTER_MAX_BANDS]; /* in the samples' own scale */
} tt_band_norm;

/* "4,3,2" into bands (from 1) and *count; TT_ERR_INVALID_ARGUMENT naming
 * `what` (e.g. "--bands") for anything but 1 to `max` positive numbers. */
tt_status tt_raster_bands_parse(const char *text, const char *what, int *bands, int max,
                                int *count);

typedef struct tt_raster_pair_options {
    const int *bands;  /* the image's bands to read, counted from 1 (4,3,2); NULL: all */
    int band_count;    /* entries of bands */
    int mask_nodata;   /* a mask value read as ignore besides 255; -1: none */
} tt_raster_pair_options;

typedef struct tt_raster_pair tt_raster_pair;

typedef struct tt_raster_pair_info {
    int width, height;
    int raster_bands;          /* the image's bands */
    int channels;              /* bands chosen */
    int bands[TT_RASTER_MAX_BANDS]; /* chosen, from 1 */
    tt_raster_sample sample;   /* the image's */
    int has_nodata;            /* the image's GDAL_NODATA */
    double nodata;
    int tiled, bigtiff, block_w, block_h;
} tt_raster_pair_info;

/* Opens both rasters and checks them.  Errors name the file and say what
 * to do: TT_ERR_IO or TT_ERR_FORMAT (missing, not a TIFF), TT_ERR_UNSUPPORTED
 * (a sample format raster.h refuses; a mask that is not one band of 8-bit
 * classes), TT_ERR_INVALID_ARGUMENT (a band out of range, more than
 * TT_RASTER_MAX_BANDS, a mask on another grid). */
tt_status tt_raster_pair_open(const char *image_path, const char *mask_path,
                              const tt_raster_pair_options *options, tt_raster_pair **out);
void tt_raster_pair_close(tt_raster_pair *p);
const tt_raster_pair_info *tt_raster_pair_get_info(const tt_raster_pair *p);
const char *tt_raster_pair_image_path(const tt_raster_pair *p);
const char *tt_raster_pair_mask_path(const tt_raster_pair *p);

/* The w x h crop at (x0, y0), which may overhang the rasters: image
 * ((channels, h, w) floats) the chosen bands as stored, then (v - mean[c])
 * / std[c] when mean and std are given (NULL: as stored); mask ((h, w)
 * class indices).  Ignored pixels (above) are 0 in the image and 255 in
 * the mask.  *ignored (may be NULL) is their count, and *nodata (may be
 * NULL) the count of those the image's nodata marks. */
tt_status tt_raster_pair_read(tt_raster_pair *p, int x0, int y0, int w, int h, const float *mean,
                              const float *std, float *image, uint8_t *mask, int64_t *ignored,
                              int64_t *nodata);

/* Whether the mask has a foreground pixel (a class 1 to 254, not the
 * mask's nodata value) in the w x h crop at (x0, y0) (clipped to the
 * raster): the mask alone is read.  *found 1 or 0. */
tt_status tt_raster_pair_has_foreground(tt_raster_pair *p, int x0, int y0, int w, int h,
                                        int *found);

#endif

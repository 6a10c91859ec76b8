/*
 * What a raster pair holds, from a grid of crops spread over it (never the
 * whole raster): each chosen band's mean and standard deviation over the
 * pixels that are not ignored, in the samples' own scale (a 16-bit band's
 * mean may be 1400, not 1400/255), the share of nodata and of ignored
 * pixels, and the pixels of each class.  Accumulates over several pairs
 * (a data set's fingerprint); tt_raster_stats_finish turns the sums into
 * means.
 */
#ifndef TT_DATA_RASTER_STATS_H
#define TT_DATA_RASTER_STATS_H

#include <stdint.h>

#include "data/raster_pair.h"

typedef struct tt_raster_stats {
    int channels;
    uint64_t pixels;               /* read */
    uint64_t nodata;               /* of those, the image's nodata */
    uint64_t ignored;              /* for any reason (nodata, mask 255 or its nodata) */
    uint64_t class_pixels[256];    /* by mask value, ignored ones left out */
    double sum[TT_RASTER_MAX_BANDS], sum_sq[TT_RASTER_MAX_BANDS]; /* of valid pixels */
    double mean[TT_RASTER_MAX_BANDS], std[TT_RASTER_MAX_BANDS];   /* after finish */
} tt_raster_stats;

/* Adds a grid of up to grid x grid crops of side x side pixels (the pair
 * whole when it is smaller), spread evenly over the pair, to *stats
 * (zeroed first by the caller; the pairs added must have the same channel
 * count).  Errors: the pair's reads', TT_ERR_INVALID_ARGUMENT for a pair of
 * another channel count. */
tt_status tt_raster_stats_add(tt_raster_pair *p, int grid, int side, tt_raster_stats *stats);
/* mean and std from the sums (std 1 where a band is constant or unread). */
void tt_raster_stats_finish(tt_raster_stats *stats);
/* The statistics of every pair of a set (data/raster_set.h), a grid of 8 x 8
 * crops of 256 a side each, finished.  TT_ERR_FORMAT naming the set's
 * first image when every pixel read is ignored. */
struct tt_raster_set;
tt_status tt_raster_stats_of_set(struct tt_raster_set *set, tt_raster_stats *stats);

#endif

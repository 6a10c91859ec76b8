/*
 * The Cloud-Optimized GeoTIFF writer behind tt_raster_writer_open_cog
 * (data/raster.h, defined in raster_cog.c, which hands it to a
 * tt_raster_writer through tt_raster_writer_wrap), and the tags
 * raster_write.c sets on every image it writes, for raster_cog.c too.
 */
#ifndef TT_DATA_RASTER_COG_H
#define TT_DATA_RASTER_COG_H

#include "data/image_probe.h"
#include "data/raster.h"

/* The side of the square tiles every written raster has. */
#define TT_RASTER_TILE 256

typedef struct tt_cog tt_cog;

/* See tt_raster_writer_open_cog; *out is freed by tt_cog_close or
 * tt_cog_abort. */
tt_status tt_cog_open(const char *path, int width, int height, int bands,
                      tt_raster_sample sample, const tt_georef *georef, int ignore, tt_cog **out);
tt_status tt_cog_rows(tt_cog *c, int rows, const void *samples);
/* Writes PATH (PATH.part renamed); frees c either way, leaving no PATH.part*. */
tt_status tt_cog_close(tt_cog *c);
/* Frees c and removes its files.  NULL allowed. */
void tt_cog_abort(tt_cog *c);

/* The tags of a tiled, DEFLATE-compressed image of width x height pixels:
 * a reduced image (SUBFILETYPE 1) when `reduced`; georef (may be NULL, or
 * hold the nodata tag alone) copied.  Errors name `name`. */
tt_status tt_raster_tags_set(TIFF *tif, const char *name, tt_tiff_errors *errors, int width,
                             int height, int bands, tt_raster_sample sample,
                             const tt_georef *georef, int reduced);

#endif

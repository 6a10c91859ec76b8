/*
 * The raster data-set format: raster pairs (data/raster_pair.h) in a folder,
 *
 *   DIR/images/NAME.tif   an image raster (GeoTIFF or plain TIFF; BigTIFF,
 *                         tiled or in strips; 8/16-bit unsigned or float32;
 *                         any band count; its GDAL_NODATA ignored in the loss)
 *   DIR/masks/NAME.tif    its labels on the same grid: one band of 8-bit
 *                         class indices, 255 = ignore
 *
 * (.tiff too), matched by stem.  Every pair is opened and checked at open;
 * each keeps its two files open and reads them crop by crop.  A folder is
 * a raster set when DIR/masks holds a TIFF (the folder format's masks are
 * PNGs).
 */
#ifndef TT_DATA_RASTER_SET_H
#define TT_DATA_RASTER_SET_H

#include "data/raster_pair.h"

typedef struct tt_raster_set tt_raster_set;

/* 1 when DIR/images and DIR/masks exist and DIR/masks holds a .tif/.tiff. */
int tt_raster_set_detect(const char *dir);

/* Opens every pair of DIR, sorted by name, with the same options.  Errors
 * name the file and what to do: TT_ERR_IO (no DIR/images or DIR/masks),
 * TT_ERR_FORMAT (no raster at all; an image without its mask), and
 * tt_raster_pair_open's; a pair choosing another number of bands than the
 * first.  *out: tt_raster_set_destroy. */
tt_status tt_raster_set_open(const char *dir, const tt_raster_pair_options *options,
                             tt_raster_set **out);
/* The same, the bands given as a list ("4,3,2", "" for all; errors name
 * --bands) and a mask nodata value (-1: none), as train, plan and data
 * check take them. */
tt_status tt_raster_set_open_flags(const char *dir, const char *bands, int mask_nodata,
                                   tt_raster_set **out);
void tt_raster_set_destroy(tt_raster_set *set);
int tt_raster_set_count(const tt_raster_set *set);
tt_raster_pair *tt_raster_set_pair(tt_raster_set *set, int index);
/* The pair's name: its image's file name. */
const char *tt_raster_set_name(const tt_raster_set *set, int index);

#endif

/*
 * A raster's bands as a model trained on raster bands takes them: the
 * bands a checkpoint names (infer/model_load.h's tt_band_norm), each
 * (v - mean) / std in its samples' own scale, read crop by crop from the
 * raster's blocks (data/raster.h); a pixel that any of them marks nodata
 * (the raster's GDAL_NODATA) is 0 in every band, the mean, as training
 * gave it.  A tt_crop_reader's read_planes.
 */
#ifndef TT_INFER_BAND_READER_H
#define TT_INFER_BAND_READER_H

#include "data/raster.h"
#include "data/raster_pair.h"
#include "infer/predict.h"

typedef struct tt_band_reader {
    tt_raster *raster;       /* borrowed */
    const char *path;        /* for errors */
    tt_band_norm norm;
    int has_nodata;
    double nodata;
} tt_band_reader;

/* A tt_raster_output's nodata_rows (ctx: the reader): flags (rows x
 * width) 1 where any band the model takes holds the raster's nodata.
 * Reads the rows 16 at a time. */
tt_status tt_band_reader_nodata_rows(void *ctx, int y0, int rows, uint8_t *flags);

/* Checks the bands against the raster (TT_ERR_INVALID_ARGUMENT naming
 * path, its band count and the bands asked for) and fills *b; *reader is
 * then a crop reader over it (b must outlive it). */
tt_status tt_band_reader_init(tt_band_reader *b, tt_raster *raster, const char *path,
                              const tt_band_norm *norm, tt_crop_reader *reader);

#endif

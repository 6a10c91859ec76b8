/*
 * Validation on raster pairs (data/raster_set.h): held-out regions (whole
 * scenes, or blocks of one scene: data/raster_holdout.h) predicted with the
 * sliding window, streamed (tt_predict_stream: a row of tiles of the
 * region's width in memory, whatever its size), each finished band of rows
 * scored against the mask read for it, 16 rows at a time.  Shared by
 * `train --val-fraction` on rasters and `tiletrain eval` on a raster set.
 *
 * Scoring is the image path's (train/metrics.h): each region counts as one
 * image; the prediction is the argmax of the blended logits; ignored
 * pixels are those training ignores (the mask's 255 and --mask-nodata
 * value, the image's GDAL_NODATA in any chosen band).  The region is
 * predicted alone: its edges are padded as an image's are.
 *
 * Each call opens the pair's files afresh, so that validation never reads
 * through the readers the training crops' thread uses.
 */
#ifndef TT_TRAIN_VALIDATE_RASTER_H
#define TT_TRAIN_VALIDATE_RASTER_H

#include "data/raster_holdout.h"
#include "data/raster_pair.h"
#include "infer/predict.h"
#include "model/model.h"
#include "train/metrics.h"

/* Adds each region of `set` (regions[0..count)) to `metrics` (the model's
 * class count) as one image.  norm: the model's bands and their
 * normalisation (as a checkpoint records them); mask_nodata: a mask value
 * read as ignore besides 255, or -1.  Errors: the rasters' (naming the
 * file), prediction's. */
tt_status tt_validate_raster(tt_model *model, tt_raster_set *set, const tt_raster_region *regions,
                             int count, const tt_band_norm *norm, int mask_nodata,
                             const tt_predict_options *predict, tt_metrics *metrics);

#endif

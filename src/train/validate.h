/*
 * Validation: predict whole images at full resolution with the sliding
 * window (src/infer/predict.h), read through a tile cache, and score them
 * against their masks with per-class Dice and IoU (src/train/metrics.h).
 * Shared by `train --val-every` and `tiletrain eval`.
 */
#ifndef TT_TRAIN_VALIDATE_H
#define TT_TRAIN_VALIDATE_H

#include "data/source.h"
#include "data/tilecache.h"
#include "infer/predict.h"
#include "model/unet.h"
#include "train/metrics.h"

typedef struct tt_validate_options {
    tt_predict_options predict;
    tt_mask_kind kind;      /* how masks are stored, and so how to decide */
    float threshold;        /* multi-label: probability above which a pixel is in */
} tt_validate_options;

/* Adds every item of `items` to `metrics` (which must have the model's
 * class count).  The model runs in eval mode with its own tile size. */
tt_status tt_validate(tt_unet *unet, tt_tilecache *cache, const int *items, int count,
                      const tt_validate_options *options, tt_metrics *metrics);

#endif

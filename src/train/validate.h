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
#include "model/model.h"
#include "infer/pp_search.h"
#include "train/metrics.h"

typedef struct tt_validate_options {
    tt_predict_options predict;
    tt_mask_kind kind;      /* how masks are stored, and so how to decide */
    float threshold;        /* multi-label: probability above which a pixel is in */
    int min_size;           /* multi-label: predicted components under this many
                               pixels are removed before scoring (0: none), as
                               for a submission (predict --min-size) */
    const float *class_threshold; /* NULL, or per class in place of threshold */
    const int *class_min_size;    /* NULL, or per class in place of min_size */
    const char *gallery_dir;  /* NULL, or a folder for pictures of the first
                                 gallery_max images: truth | prediction */
    int gallery_max;
    tt_pp_search *search;     /* NULL, or the post-processing search each image is added to */
} tt_validate_options;

/* Adds every item of `items` to `metrics` (which must have the model's
 * class count).  The model runs in eval mode with its own tile size.  With
 * a gallery_dir, the first gallery_max items also get GALLERY/NAME.png (the
 * image with its true masks, left, and the predicted ones, right; at most
 * 480 pixels a side wide), NAME being the item's name with '/' as '_'. */
/* How many validation images the training run draws in its gallery. */
#define TT_GALLERY_MAX 8

/* The gallery picture's file name of item `index`: NAME.png, with '/' in
 * the item's name written as '_'. */
void tt_validate_gallery_file(tt_tilecache *cache, int index, char *buf, size_t size);

tt_status tt_validate(tt_model *model, tt_tilecache *cache, const int *items, int count,
                      const tt_validate_options *options, tt_metrics *metrics);

#endif

/*
 * The seam between the two halves of the data side.
 *
 * The format half (src/data/dataset.c: folder and Kaggle-RLE layouts,
 * validation) describes each training item; the pixel half (tile cache,
 * crops, sampler, augmentation, prefetch) reads pixels through this
 * interface and never looks at CSV files or folder layouts.
 */
#ifndef TT_DATA_SOURCE_H
#define TT_DATA_SOURCE_H

#include <stdint.h>

#include "tiletrain.h"

typedef enum tt_mask_kind {
    TT_MASK_CLASS_INDEX, /* one plane: class index per pixel, 255 = ignore (folder) */
    TT_MASK_MULTI_LABEL, /* `classes` planes of 0/1, one per class (kaggle-rle) */
} tt_mask_kind;

typedef struct tt_item_source {
    void *ctx;
    int count;           /* items, in sorted name order */
    int classes;
    tt_mask_kind mask_kind;
    /* The item's name (file name without folder) and the path of its image. */
    const char *(*name)(void *ctx, int index);
    const char *(*image_path)(void *ctx, int index);
    /* Writes the item's mask for an image of width x height: planes of
     * height * width bytes, row-major, (1 plane for TT_MASK_CLASS_INDEX,
     * `classes` planes for TT_MASK_MULTI_LABEL).  Errors name the file (and
     * the CSV line) at fault. */
    tt_status (*mask)(void *ctx, int index, int width, int height, uint8_t *planes);
    /* Changes whenever the mask's source changes (mask file size and mtime,
     * the CSV rows of the item): part of the tile-cache key. */
    uint64_t (*mask_key)(void *ctx, int index);
} tt_item_source;

#endif

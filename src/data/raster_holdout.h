/*
 * Held-out validation regions of a raster set (data/raster_set.h).
 *
 * Several scenes: a share of whole scenes is held out (round(fraction x
 * scenes), at least 1 and at most all but one), picked by a generator
 * seeded with the run's seed, so the same flags hold out the same scenes.
 *
 * One scene: a coarse grid of square blocks of `block` pixels (twice the
 * larger side of the training crop) over it, and the blocks (bx, by) with
 * (bx + by x s) mod k = 0 held out, k = round(1 / fraction) (at least 2)
 * and s = ceil(k / 2): about one block in k, spread over rows and columns
 * (a checkerboard for k = 2) rather than in a column.  Blocks at the right
 * and bottom edges are clipped to the scene.  Training crops never touch a
 * held-out block (data/raster_sampler.h); validation predicts each block
 * alone (its edges padded as an image's), so no pixel of the training
 * crops is ever in a validated window.
 */
#ifndef TT_DATA_RASTER_HOLDOUT_H
#define TT_DATA_RASTER_HOLDOUT_H

#include <stdint.h>

#include "data/raster_set.h"

typedef struct tt_raster_region {
    int scene; /* index in the set */
    int x0, y0, width, height;
} tt_raster_region;

typedef struct tt_raster_holdout {
    int scenes;
    uint8_t *held;   /* (scenes) 1: a held-out scene (whole-scene holdout) */
    int block;       /* 0: whole scenes; else the grid's block side (one scene) */
    int every, step; /* k and s above */
    int width, height; /* the one scene's */
    tt_raster_region *regions; /* held out: whole scenes, or blocks in row-major order */
    int region_count;
} tt_raster_holdout;

/* Plans the holdout of `fraction` (0 < fraction < 1) of the set for
 * training crops of tile_w x tile_h.  TT_ERR_INVALID_ARGUMENT naming
 * --val-fraction for a single scene too small to keep a whole block of the
 * grid for training (give a smaller --tile or more scenes).  *out:
 * tt_raster_holdout_free. */
tt_status tt_raster_holdout_plan(tt_raster_set *set, double fraction, uint64_t seed, int tile_w,
                                 int tile_h, tt_raster_holdout *out);
void tt_raster_holdout_free(tt_raster_holdout *h);

/* Whether the w x h rectangle at (x0, y0) of scene `scene` touches a
 * held-out region (a held-out scene: always).  NULL h: never. */
int tt_raster_holdout_touches(const tt_raster_holdout *h, int scene, int x0, int y0, int w,
                              int hgt);

/* The number of whole blocks of the grid kept for training, and the i-th
 * of them (row-major) as a region: where a crop that found no free place
 * at random goes (data/raster_sampler.c). */
int tt_raster_holdout_free_blocks(const tt_raster_holdout *h);
tt_raster_region tt_raster_holdout_free_block(const tt_raster_holdout *h, int i);

/* "scenes b.tif, d.tif" or "5 blocks of 128 px of a.tif (one in 5)": what
 * is held out, for the log and OUT/validation.txt (buf of size bytes). */
void tt_raster_holdout_describe(const tt_raster_holdout *h, const tt_raster_set *set, char *buf,
                                size_t size);

#endif

/*
 * Data augmentation of one crop, on the host (CPU), in the prefetch thread:
 * horizontal and vertical flips, quarter turns (square crops only),
 * brightness and contrast jitter.  Masks follow the geometry exactly (the
 * same flips and turns, no interpolation); colour jitter touches only the
 * image.  Parameters are drawn from the sampler's per-sample generator, so
 * a crop's augmentation is reproducible from (seed, epoch, position).
 */
#ifndef TT_DATA_AUGMENT_H
#define TT_DATA_AUGMENT_H

#include <stdint.h>

#include "data/rng.h"

typedef struct tt_augment_config {
    int flips;         /* draw horizontal and vertical flips, each with probability 1/2 */
    int rot90;         /* draw 0..3 quarter turns (only when the crop is square) */
    float brightness;  /* add a uniform offset in [-brightness, brightness] (image in [0, 1]) */
    float contrast;    /* scale about 0.5 by a factor in [1 - contrast, 1 + contrast] */
} tt_augment_config;

/* Flips and turns on, brightness 0.1, contrast 0.1. */
tt_augment_config tt_augment_defaults(void);

typedef struct tt_augment_params {
    int flip_h, flip_v;  /* mirror left-right, top-bottom */
    int quarter_turns;   /* counter-clockwise, 0..3 */
    float brightness;    /* offset, in [0, 1] image units */
    float contrast;      /* factor */
} tt_augment_params;

/* Draws parameters (always the same number of draws from rng, whatever
 * the config, so turning one augmentation off does not shift the others).
 * square = the crop is square (quarter turns allowed). */
void tt_augment_draw(const tt_augment_config *config, int square, tt_rng *rng, tt_augment_params *out);

/* The identity. */
tt_augment_params tt_augment_identity(void);

/* Applies params in place: the geometry (flip_h, then flip_v, then the turns)
 * to rgb ((h, w, 3)) and to each of `planes` mask planes ((planes, h, w)),
 * then the colour jitter to rgb: v' = clamp(round(255 * ((v/255 - 0.5) *
 * contrast + 0.5 + brightness))).  Quarter turns need w == h.  scratch holds
 * w * h * 3 bytes. */
void tt_augment_apply(const tt_augment_params *params, int w, int h, uint8_t *rgb, uint8_t *masks,
                      int planes, uint8_t *scratch);

#endif

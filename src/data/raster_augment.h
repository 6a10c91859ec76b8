/*
 * Augmentation of a raster crop: N float bands and its class-index mask.
 *
 * The geometry of tt_augment_params (data/augment.h) only: the horizontal
 * flip, then the vertical one, then quarter turns counter-clockwise
 * (square crops), exact index maps applied alike to every band and to the
 * mask.  The colour transforms (brightness, contrast, gamma, hue and
 * saturation, noise, blur) are defined on RGB in [0, 1], and the warps
 * interpolate 8-bit RGB: neither applies to bands of other scales, so a
 * raster crop leaves them out (the parameters are still drawn, so the
 * stream of draws is the same as an RGB run's).
 */
#ifndef TT_DATA_RASTER_AUGMENT_H
#define TT_DATA_RASTER_AUGMENT_H

#include <stdint.h>

#include "data/augment.h"

/* Applies params' flips and turns in place to planes ((channels, h, w))
 * and mask ((h, w)).  Turns need w == h.  scratch holds w * h floats and
 * w * h ints. */
void tt_raster_augment_geometry(const tt_augment_params *params, int w, int h, float *planes,
                                int channels, uint8_t *mask, float *scratch, int *map);

#endif

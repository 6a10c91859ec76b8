/*
 * Data augmentation of one crop, on the host (CPU), in the prefetch thread.
 *
 * Geometry: horizontal and vertical flips and quarter turns (square crops),
 * exact index maps; and a warp: shift-scale-rotate (affine), grid
 * distortion and elastic distortion, composed into one map from each crop
 * pixel to a point of the source image, sampled bilinearly for the image
 * and nearest for the masks; a point outside the image is ignore (255) in
 * every mask plane.  Colour, on the image only: brightness, contrast,
 * gamma, hue and saturation, Gaussian noise and Gaussian blur.
 *
 * Every transform is drawn from the sampler's per-crop generator, with the
 * same number of draws whatever the configuration (turning one transform
 * off does not shift the others), so a crop's augmentation is a function
 * of (seed, epoch, position): the same after a resume and under any number
 * of ranks.
 *
 * A configuration is written as a spec (--augment): "none", "default", or
 * a comma-separated list of transforms, each `name` or
 * `name:key=value:key=value` with the keys of its row in augment.c's
 * table, e.g. "flip,rot90,affine:p=0.5:rotate=30,noise:std=0.05".
 */
#ifndef TT_DATA_AUGMENT_H
#define TT_DATA_AUGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "data/rng.h"
#include "tiletrain.h"

typedef struct tt_augment_config {
    int flips;         /* draw horizontal and vertical flips, each with probability flip_p */
    int rot90;         /* with probability rot90_p, 0..3 quarter turns (square crops only) */
    float brightness;  /* add a uniform offset in [-brightness, brightness] (image in [0, 1]) */
    float contrast;    /* scale about 0.5 by a factor in [1 - contrast, 1 + contrast] */
    float flip_p, rot90_p, brightness_p, contrast_p; /* 0.5, 1, 1, 1 by default */
    /* the transforms below are applied each with its probability p (0: off) */
    float affine_p, shift, scale, rotate; /* shift: of the crop's side; scale: in [1 - scale,
                                             1 + scale]; rotate: degrees either way */
    float grid_p, grid_steps, grid_limit; /* cells per side, each stretched by up to +-limit */
    float elastic_p, elastic_alpha, elastic_spacing; /* displacements up to alpha px at control
                                                        points every spacing px */
    float gamma_p, gamma;                 /* exponent in [1 - gamma, 1 + gamma] */
    float hsv_p, hue, saturation;         /* hue shift in degrees; saturation factor 1 +- */
    float noise_p, noise;                 /* Gaussian noise of standard deviation noise (0..1) */
    float blur_p, blur;                   /* Gaussian blur of sigma in [0.3, blur] px */
} tt_augment_config;

/* Flips (each 1/2) and turns on, brightness 0.1 and contrast 0.1 always:
 * the spec "default". */
tt_augment_config tt_augment_defaults(void);

/* Parses a spec (see above) into *out.  TT_ERR_INVALID_ARGUMENT naming the
 * transform or key that is unknown or out of range, and the known ones. */
tt_status tt_augment_parse(const char *spec, tt_augment_config *out);

/* The spec of a configuration, parsed back to the same one ("none" when
 * nothing is on).  Returns buf. */
const char *tt_augment_format(const tt_augment_config *config, char *buf, size_t size);

typedef struct tt_augment_params {
    int flip_h, flip_v;  /* mirror left-right, top-bottom */
    int quarter_turns;   /* counter-clockwise, 0..3 */
    float brightness;    /* offset, in [0, 1] image units */
    float contrast;      /* factor */
    /* the warp: the output pixel's point moved by the grid and elastic
     * fields, then mapped back through the affine transform */
    int affine;
    float dx, dy;        /* shift, px */
    float zoom, angle;   /* scale factor, radians counter-clockwise */
    int grid, elastic;
    float grid_steps, grid_limit, elastic_alpha, elastic_spacing;
    uint64_t warp_seed;  /* the grid's and the elastic field's draws */
    float gamma;         /* 1: none */
    float hue, saturation; /* degrees; factor (0 and 1: none) */
    float noise;         /* standard deviation, 0..1 units (0: none) */
    uint64_t noise_seed;
    float blur;          /* sigma, px (0: none) */
} tt_augment_params;

/* Draws parameters (always the same number of draws from rng, whatever
 * the config).  square = the crop is square (quarter turns allowed). */
void tt_augment_draw(const tt_augment_config *config, int square, tt_rng *rng, tt_augment_params *out);

/* The identity. */
tt_augment_params tt_augment_identity(void);

/* 1 when params warp (affine, grid or elastic): the crop is then sampled
 * through tt_augment_source_map. */
int tt_augment_warps(const tt_augment_params *params);

/* For each pixel (x, y) of a w x h crop, the point of the source it takes,
 * in pixels relative to the crop's origin (sx, sy: w * h floats each). */
void tt_augment_source_map(const tt_augment_params *params, int w, int h, float *sx, float *sy);

/* Samples a crop through a source map from a window of the source read at
 * (wx0, wy0) relative to the crop's origin, ww x wh: win_rgb ((wh, ww, 3)),
 * win_masks ((planes, wh, ww)); the image bilinearly (points outside the
 * window are 0), the masks at the nearest pixel (outside: 255). */
void tt_augment_sample(const float *sx, const float *sy, int w, int h, int wx0, int wy0, int ww,
                       int wh, const uint8_t *win_rgb, const uint8_t *win_masks, int planes,
                       uint8_t *rgb, uint8_t *masks);

/* Applies the rest of params in place: the geometry (flip_h, then flip_v,
 * then the turns) to rgb ((h, w, 3)) and to each of `planes` mask planes
 * ((planes, h, w)), then to rgb alone: brightness and contrast, v' =
 * clamp(round(255 * ((v/255 - 0.5) * contrast + 0.5 + brightness))); gamma;
 * hue and saturation; blur; noise.  Quarter turns need w == h.  scratch
 * holds w * h * 3 bytes. */
void tt_augment_apply(const tt_augment_params *params, int w, int h, uint8_t *rgb, uint8_t *masks,
                      int planes, uint8_t *scratch);

#endif

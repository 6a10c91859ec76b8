/*
 * A learnable synthetic dataset in the real formats, for demos and tests.
 *
 * Each image is a cloud-like field (fractal Perlin noise over a dark
 * ocean) with random blob regions; inside a blob of class c the texture and
 * colour depend on c (fine fbm, ridges, turbulence or stripes, a colour per
 * class), so a network can learn the classes from pixels alone.
 *
 *   kaggle-rle: DIR/train_images/NAME.jpg and DIR/train.csv in the
 *     Understanding Clouds layout: a header `Image_Label,EncodedPixels`, then
 *     one row `NAME.jpg_LABEL,RLE` per image and class (RLE empty when the
 *     class is absent).  RLE is `start length` pairs, 1-based, column-major
 *     (pixels numbered top to bottom, then left to right).  `classes` labels,
 *     all foreground, possibly overlapping: Fish, Flower, Gravel, Sugar, then
 *     Class5, Class6, ...  Where blobs overlap, the pixel mixes the colours
 *     and textures of every class it is labelled with.
 *   folder: DIR/images/NAME.png (RGB) and DIR/masks/NAME.png (8-bit class
 *     index: 0 background, 1..classes-1 the blob classes; later blobs cover
 *     earlier ones; 255 = ignore where ignore regions are asked for).
 * Options for sets of other statistics: grey (one-channel images, the
 * luminance of the colour render), region_scale (blob radii times this:
 * smaller or larger regions), ignore_regions (folder: that many ellipses
 * per image marked 255 in the mask, the image unchanged under them, as
 * areas an annotator left out).
 * Names are synth_00000, synth_00001, ...  Everything follows from the seed.
 */
#ifndef TT_DATA_SYNTH_H
#define TT_DATA_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

typedef enum tt_synth_format {
    TT_SYNTH_KAGGLE_RLE,
    TT_SYNTH_FOLDER,
} tt_synth_format;

typedef struct tt_synth_config {
    const char *out_dir;
    tt_synth_format format;
    int count;
    int height, width;
    int classes;   /* kaggle-rle: labels (1..32); folder: including background (2..255) */
    uint64_t seed;
    int grey;              /* one-channel images */
    double region_scale;   /* blob radii times this (0: 1) */
    int ignore_regions;    /* folder: ellipses of 255 per image */
    double rare_class;     /* > 0: the last blob class shows with this probability,
                              never as the class an image is sure to show (0: as others) */
} tt_synth_config;

/* Checks a config; errors say which value is wrong and what is allowed. */
tt_status tt_synth_validate(const tt_synth_config *config);

/* Renders image `index`: rgb ((H, W, 3); R = G = B when grey) and labels
 * ((fg, H, W) 0/1 planes, fg = the number of blob classes: `classes` for
 * kaggle-rle, classes - 1 for folder).  *top ((H, W), may be NULL) gets the
 * 1-based blob class drawn last at each pixel, 0 for background, 255
 * inside an ignore region (labels are not changed there). */
void tt_synth_render(const tt_synth_config *config, int index, uint8_t *rgb, uint8_t *labels, uint8_t *top);

/* The label of blob class k (0-based) in the kaggle-rle CSV. */
const char *tt_synth_label(int k, char *buf, size_t size);

/* Writes the whole dataset under config->out_dir (created if missing). */
tt_status tt_synth_write(const tt_synth_config *config);

#endif

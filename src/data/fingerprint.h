/*
 * A data set's fingerprint (nnU-Net's word): what `tiletrain plan` chooses
 * a recipe from.  Image sizes, whether the images are grey, the intensity
 * statistics, the label kind, each class's share of the labelled pixels,
 * the images it appears in and the sizes of its connected regions, the
 * share of images with no foreground and of ignored pixels.
 *
 * Regions are 4-connected and found on each mask sampled every `stride`
 * pixels in both directions (stride = the longer side / 512, at least 1):
 * an area is the count there times stride^2, so regions thinner than the
 * stride may be missed or merged.  Pixel statistics take the same grid.
 * Class index masks: class 0 is the background (synth and most layouts),
 * 255 ignored; multi-label: each plane's 1s.
 */
#ifndef TT_DATA_FINGERPRINT_H
#define TT_DATA_FINGERPRINT_H

#include <stdint.h>

#include "data/dataset.h"

#define TT_FINGERPRINT_MAX_CLASSES 32

typedef struct tt_class_fingerprint {
    double pixel_share;        /* of the labelled (not ignored) pixels */
    int images;                /* images it appears in */
    int regions;               /* connected regions over the images read */
    double median_area;        /* pixels of full resolution; 0 without regions */
    double min_area, max_area;
    double median_extent;      /* the longer side of a region's bounding box */
    double typical_area;       /* of the region a random foreground pixel lies in (the
                                  median weighted by area: specks do not move it) */
    double typical_extent;     /* that region's bounding-box side, likewise */
    double small_area;         /* the area below which 5% of the class's pixels lie */
} tt_class_fingerprint;

typedef struct tt_fingerprint {
    int images;                /* usable items of the data set */
    int images_read;           /* of those, read here (evenly spread, at most max_images) */
    int min_width, min_height, median_width, median_height, max_width, max_height;
    int grey;                  /* every sampled pixel has R = G = B */
    double mean[3], std[3];    /* of pixel / 255 per channel */
    tt_mask_kind mask_kind;
    int classes;
    int foreground_classes;    /* classes counted as foreground (multi-label: all; index: 1..) */
    double empty_share;        /* images read with no foreground pixel */
    double ignore_share;       /* pixels marked 255 (class index) */
    double foreground_share;   /* pixels of any foreground class */
    int stride;                /* the sampling grid of the largest image */
    int raster_bands;          /* a raster set (data/raster_fingerprint.h): the bands chosen, the
                                  model's input channels; 0: RGB images (3 channels) */
    tt_class_fingerprint cls[TT_FINGERPRINT_MAX_CLASSES];
} tt_fingerprint;

/* Reads up to max_images items of `ds` (all when 0), evenly spread over its
 * sorted names.  Errors: TT_ERR_FORMAT naming the image whose pixels or
 * mask cannot be read, TT_ERR_UNSUPPORTED past TT_FINGERPRINT_MAX_CLASSES
 * classes, TT_ERR_OUT_OF_MEMORY. */
tt_status tt_fingerprint_compute(tt_dataset *ds, int max_images, tt_fingerprint *out);

#endif

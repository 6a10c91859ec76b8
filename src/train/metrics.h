/*
 * Segmentation metrics accumulated over images: per-class Dice and IoU.
 *
 * For each image and class the true positives, false positives and false
 * negatives are counted; the image's Dice is 2TP / (2TP + FP + FN) and its
 * IoU TP / (TP + FP + FN), both 1 when prediction and truth are both empty
 * (TP + FP + FN = 0) and 0 when only one is.  As the Kaggle "Understanding
 * Clouds" metric does, a class's score is the mean over images, and the
 * mean score is the mean over all (image, class) pairs.  The dataset-wide
 * ("global") Dice and IoU from the summed counts are kept too.
 *
 * Masks: class-index planes (one byte per pixel, the class; `ignore`
 * (255) pixels of the truth are left out of every count; a predicted value
 * >= classes counts as no class), or multi-label planes (`classes` planes
 * of 0/nonzero bytes, class-major).
 *
 * Usage: tt_metrics_create, then one tt_metrics_add_* per image, then read
 * tt_metrics_dice/iou/mean_* or tt_metrics_json.
 */
#ifndef TT_TRAIN_METRICS_H
#define TT_TRAIN_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "tiletrain.h"

#define TT_METRICS_IGNORE 255

typedef struct tt_metrics {
    int classes;
    int images;         /* images added */
    double *dice_sum;   /* (classes) sum over images of the image's Dice */
    double *iou_sum;    /* (classes) likewise IoU */
    uint64_t *tp, *fp, *fn; /* (classes) summed over images */
} tt_metrics;

/* classes in 1..256.  *out: tt_metrics_destroy(). */
tt_status tt_metrics_create(int classes, tt_metrics **out);
void tt_metrics_destroy(tt_metrics *metrics);
/* Forgets every image added. */
void tt_metrics_reset(tt_metrics *metrics);

/* Adds one image of `pixels` pixels given as class-index planes; truth
 * pixels equal to `ignore` (TT_METRICS_IGNORE, or -1 for none) are left out. */
void tt_metrics_add_class_index(tt_metrics *metrics, const uint8_t *pred, const uint8_t *truth,
                                size_t pixels, int ignore);
/* Adds one image given as `classes` planes of `pixels` bytes each. */
void tt_metrics_add_multi_label(tt_metrics *metrics, const uint8_t *pred, const uint8_t *truth,
                                size_t pixels);
/* Adds one image's counts for every class (tp, fp, fn: `classes` entries
 * each), for callers that count themselves (e.g. on the device). */
void tt_metrics_add_counts(tt_metrics *metrics, const uint64_t *tp, const uint64_t *fp,
                           const uint64_t *fn);

/* Per class, the mean over images (NAN before any image). */
double tt_metrics_dice(const tt_metrics *metrics, int cls);
double tt_metrics_iou(const tt_metrics *metrics, int cls);
/* Mean over (image, class) pairs. */
double tt_metrics_mean_dice(const tt_metrics *metrics);
double tt_metrics_mean_iou(const tt_metrics *metrics);
/* From the counts summed over images (1 when the class never occurs). */
double tt_metrics_global_dice(const tt_metrics *metrics, int cls);
double tt_metrics_global_iou(const tt_metrics *metrics, int cls);

/* {"images": N, "mean_dice": .., "mean_iou": .., "classes": [{"name": ..,
 * "dice": .., "iou": .., "global_dice": .., "global_iou": .., "tp": ..,
 * "fp": .., "fn": ..}, ...]}.  names may be NULL ("0", "1", ...).  Returns a
 * malloc'd string (free()), NULL when out of memory. */
char *tt_metrics_json(const tt_metrics *metrics, const char *const *names);

#endif

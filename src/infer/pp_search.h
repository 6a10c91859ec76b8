/*
 * The per-class post-processing search: on held-out images' full-resolution
 * probabilities, each class's probability threshold (multi-label) and
 * minimum component size, scored by the competition's Dice: per (image,
 * class), 2|P n T| / (|P| + |T|), an empty truth and an empty prediction
 * scoring 1, averaged over the images; pixels the truth ignores (255)
 * count on neither side.
 *
 * Each image adds, for every class and threshold, its predicted connected
 * components (8-connectivity) with their size and their overlap with the
 * truth; every minimum size is then scored from those lists without
 * labelling again.  Class-index models take the argmax (no threshold to
 * search: one candidate, the default) and search classes 1.. only (class 0
 * is what removed components become).
 */
#ifndef TT_INFER_PP_SEARCH_H
#define TT_INFER_PP_SEARCH_H

#include <stdint.h>

#include "tiletrain.h"

#define TT_PP_THRESHOLDS 9 /* 0.30, 0.35, .. 0.70 */
#define TT_PP_SIZES 11     /* 0, the default, and 1e-4 .. 5e-2 of the images' mean area */

typedef struct tt_pp_choice {
    float threshold;      /* multi-label; the default for class index */
    int min_size;         /* components under this many pixels removed */
    double dice;          /* mean competition Dice over the images with it */
    double default_dice;  /* the same with the defaults */
} tt_pp_choice;

typedef struct tt_pp_search tt_pp_search;

/* A search over `classes` classes; multi_label 1 for sigmoid planes, 0 for
 * class index; the defaults it is measured against; mean_pixels the held-out
 * images' mean area (the minimum sizes' scale). */
tt_status tt_pp_search_create(int classes, int multi_label, float default_threshold,
                              int default_min_size, double mean_pixels, tt_pp_search **out);
void tt_pp_search_destroy(tt_pp_search *search);

/* One image: probs (classes planes of w x h probabilities: sigmoid for
 * multi-label, softmax for class index), truth (multi-label: classes planes
 * of 0, 1 or 255; class index: one plane of class values, 255 ignored). */
tt_status tt_pp_search_add(tt_pp_search *search, const float *probs, const uint8_t *truth, int w,
                           int h);

/* Seconds spent in tt_pp_search_add so far (the search's own cost). */
double tt_pp_search_seconds(const tt_pp_search *search);

/* The best threshold and minimum size of each class (ties: the candidate
 * nearer the defaults, so noise does not move them), into choices
 * (classes entries); *mean and *default_mean: the mean over the searched
 * classes.  No image added: every choice the defaults, Dice 0. */
void tt_pp_search_result(const tt_pp_search *search, tt_pp_choice *choices, double *mean,
                         double *default_mean);

/* {"threshold": [..], "min_size": [..]}: the checkpoint metadata
 * "postprocess" of `classes` choices (thresholds to 3 decimals); malloc'd,
 * NULL when out of memory. */
char *tt_pp_choices_json(const tt_pp_choice *choices, int classes);

#endif

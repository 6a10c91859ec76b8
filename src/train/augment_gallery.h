/*
 * Pictures of augmented training crops for report.html: what the network
 * is shown, and that the masks follow the images.
 */
#ifndef TT_TRAIN_AUGMENT_GALLERY_H
#define TT_TRAIN_AUGMENT_GALLERY_H

#include "data/sampler.h"

#define TT_AUGMENT_GALLERY_MAX 8

/* Draws the first `count` crops (at most TT_AUGMENT_GALLERY_MAX) of a new
 * sampler of `config` over `items` of `cache` (which no other thread may
 * be using) and writes DIR/crop<k>.png for each: the crop | the crop with
 * its masks drawn over it (ignored pixels dark).  The training stream is
 * not touched. */
tt_status tt_augment_gallery(const tt_sampler_config *config, tt_tilecache *cache, const int *items,
                             int item_count, const char *dir, int count);

#endif

/*
 * The sampler: which crop of which image comes next.
 *
 * Training (the default): an epoch visits every item crops_per_image times
 * in an order shuffled from (seed, epoch); each visit takes one crop of
 * tile_width x tile_height at full resolution:
 *   - with probability fg_fraction (nnU-Net uses 0.33) the crop is centred
 *     on a foreground pixel: a class present in the item is chosen
 *     uniformly, then a pixel of that class uniformly; the crop is then
 *     shifted as little as needed to stay inside the image when the image
 *     is at least as large as the crop (the pixel stays inside the crop);
 *   - otherwise at a uniform position inside the image;
 *   - an image smaller than the crop sits at a uniform offset inside it.
 * Pixels outside the image are padded: image 0, mask 255 (ignore) for
 * class-index masks and 0 for multi-label masks.
 *
 * Every random choice of sample `position` of `epoch` comes from a generator
 * seeded with (seed, epoch, position), so the state is three integers and
 * restoring it resumes the exact same stream.
 *
 * no_shuffle: items in the order given (sorted, as sources list them), each
 * covered by a grid of crops from the top-left, row by row (the last row
 * and column padded); an image whose size equals the crop is one whole
 * crop.  With no_augment, nothing is flipped or jittered: validation order.
 */
#ifndef TT_DATA_SAMPLER_H
#define TT_DATA_SAMPLER_H

#include <stdint.h>

#include "data/augment.h"
#include "data/tilecache.h"

typedef struct tt_sampler tt_sampler;

typedef struct tt_sampler_config {
    int tile_width, tile_height; /* crop size (0: 256) */
    double fg_fraction;          /* 0..1 */
    int crops_per_image;         /* per epoch when shuffling (0: 1) */
    int no_shuffle;
    int no_augment;
    uint64_t seed;
    tt_augment_config augment;   /* used unless no_augment */
    int stride;                  /* take every stride-th crop of the stream, skipping the
                                    others (rank r of K data-parallel ranks: stride K, state
                                    started r crops in); 0: 1, every crop */
} tt_sampler_config;

/* Where the stream stands: save it with a checkpoint, restore it to resume. */
typedef struct tt_sampler_state {
    uint64_t seed;
    int64_t epoch;
    int64_t position; /* next sample within the epoch */
} tt_sampler_state;

/* What one crop is. */
typedef struct tt_crop_info {
    int item;              /* source index */
    int x0, y0;            /* top-left in the image (may be negative: padding) */
    int foreground;        /* centred on a foreground pixel */
    tt_augment_params augment;
    int64_t epoch, position;
} tt_crop_info;

/* A sampler over `items` (source indices; copied) of the cache's source.
 * Reads every item's header (no decode) to know its size. */
tt_status tt_sampler_create(const tt_sampler_config *config, tt_tilecache *cache, const int *items,
                            int count, tt_sampler **out);
void tt_sampler_destroy(tt_sampler *sampler);

/* Crops per epoch. */
int64_t tt_sampler_epoch_length(const tt_sampler *sampler);
int tt_sampler_tile_width(const tt_sampler *sampler);
int tt_sampler_tile_height(const tt_sampler *sampler);
int tt_sampler_planes(const tt_sampler *sampler);

void tt_sampler_get_state(const tt_sampler *sampler, tt_sampler_state *state);
/* Errors when the state's seed differs from the sampler's (a different run)
 * or its position is outside the epoch. */
tt_status tt_sampler_set_state(tt_sampler *sampler, const tt_sampler_state *state);

/* The crop's place in the whole stream: epoch * epoch_length + position. */
int64_t tt_sampler_stream_index(const tt_sampler *sampler, const tt_sampler_state *state);
/* The state `crops` crops of the stream after `state` (crossing epochs). */
tt_sampler_state tt_sampler_state_after(const tt_sampler *sampler, tt_sampler_state state,
                                        int64_t crops);

/* Produces the next crop: rgb ((tile_h, tile_w, 3)), masks ((planes,
 * tile_h, tile_w)), info (may be NULL); advances the state (to the next
 * epoch after the last crop of one). */
tt_status tt_sampler_next(tt_sampler *sampler, uint8_t *rgb, uint8_t *masks, tt_crop_info *info);

/* ---- train / validation split -------------------------------------------- */

/* Splits the source's items: a fraction (rounded, at least one item when
 * the fraction is > 0 and there are two items or more) chosen from seed
 * goes to validation.  Both lists come back sorted; caller frees them. */
tt_status tt_split_fraction(const tt_item_source *source, double val_fraction, uint64_t seed, int **train,
                            int *train_count, int **val, int *val_count);

/* Splits by a list file: one item name per line (as source->name gives it,
 * or without its extension; blank lines and lines starting with '#' are
 * skipped).  An unknown name is an error naming the file and line. */
tt_status tt_split_list(const tt_item_source *source, const char *list_path, int **train, int *train_count,
                        int **val, int *val_count);

#endif

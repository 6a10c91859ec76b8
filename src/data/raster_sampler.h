/*
 * Training crops from a raster set (data/raster_set.h), for the prefetch
 * thread: a tt_prefetch_fill_fn that fills batches of (channels, H, W)
 * normalised bands and (1, H, W) class-index masks.
 *
 * Crops are read straight from the rasters' own tiles or strips, so they
 * do not go through the tile cache: its entries exist to make a JPEG or
 * PNG readable by the crop, and a tiled raster already is (the cache
 * reads a tiled TIFF in place as well).  An epoch is one crop per tile of
 * every raster (ceil(W / tile) x ceil(H / tile), summed, less the held-out
 * scenes and blocks' share); crop k of an
 * epoch picks a raster with probability proportional to its area and a
 * uniform position inside it (an overhanging crop where the raster is the
 * smaller); a share fg_fraction of the crops seeks foreground instead,
 * reading the mask alone at up to TT_RASTER_FG_TRIES positions (a scene's
 * foreground is not indexed: that would read its whole mask); all drawn from a generator seeded with (seed, epoch, k): the
 * state is a tt_sampler_state, so a resume takes the same crops.  Rank r of
 * K takes crops r, r + K, ... (stride).  Augmentation: the flips and turns
 * of the run's spec (data/raster_augment.h).
 */
#ifndef TT_DATA_RASTER_SAMPLER_H
#define TT_DATA_RASTER_SAMPLER_H

#include "data/prefetch.h"
#include "data/raster_holdout.h"
#include "data/raster_set.h"
#include "data/sampler.h"

#define TT_RASTER_FG_TRIES 8
#define TT_RASTER_HOLDOUT_TRIES 16

typedef struct tt_raster_sampler_config {
    int tile_width, tile_height;
    uint64_t seed;
    int no_augment;
    tt_augment_config augment;
    int stride;                  /* 0: 1 */
    double fg_fraction;          /* share of crops that seek foreground: up to
                                    TT_RASTER_FG_TRIES positions, the first whose mask
                                    holds a class other than 0 kept (else the last) */
    const float *mean, *std;     /* per chosen band (the set's channels), or NULL: as stored */
    const tt_raster_holdout *holdout; /* NULL, or regions no crop may touch (borrowed):
                                    held-out scenes are never drawn; a position touching
                                    a held-out block is drawn again, up to
                                    TT_RASTER_HOLDOUT_TRIES times, then the crop goes
                                    inside a whole block kept for training, drawn
                                    uniformly */
} tt_raster_sampler_config;

typedef struct tt_raster_sampler tt_raster_sampler;

/* A sampler over the set (borrowed: it must outlive the sampler). */
tt_status tt_raster_sampler_create(const tt_raster_sampler_config *config, tt_raster_set *set,
                                   tt_raster_sampler **out);
void tt_raster_sampler_destroy(tt_raster_sampler *s);
int64_t tt_raster_sampler_epoch_length(const tt_raster_sampler *s);
void tt_raster_sampler_get_state(const tt_raster_sampler *s, tt_sampler_state *state);
/* Ends the stream after max_crops more crops (0: endless), the last batch
 * short if need be (a finite run). */
void tt_raster_sampler_limit(tt_raster_sampler *s, int64_t max_crops);
/* Errors when the seed differs (another run) or the position is outside
 * the epoch. */
tt_status tt_raster_sampler_set_state(tt_raster_sampler *s, const tt_sampler_state *state);
/* A tt_prefetch_fill_fn (ctx: the sampler): an endless stream, each
 * batch's state_after and first_crop set. */
tt_status tt_raster_sampler_fill(void *ctx, tt_batch *batch, int *end);

#endif

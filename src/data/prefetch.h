/*
 * Background batch production: a pthreads producer fills a bounded queue of
 * staging batches (image float32 NCHW in [0, 1], optionally normalised by a
 * per-channel mean and std; uint8 masks) while the consumer computes.
 *
 * The consumer's time spent waiting for a batch is measured (per batch and
 * in total) so the training log can show when data is the bottleneck.  A
 * producer error stops production and comes back to the consumer as a
 * tt_status from tt_prefetch_next(); destroy stops and joins the thread
 * whatever state it is in.
 */
#ifndef TT_DATA_PREFETCH_H
#define TT_DATA_PREFETCH_H

#include <stdint.h>

#include "data/sampler.h"

typedef struct tt_prefetch tt_prefetch;

typedef struct tt_batch {
    int batch_size;           /* items filled (the last batch of a finite stream may be short) */
    int height, width, planes;
    int channels;             /* image channels: 3 (RGB), or a raster's bands */
    float *image;             /* (N, channels, H, W) */
    uint8_t *mask;            /* (N, planes, H, W) */
    int *items;               /* (N) source index of each item */
    tt_sampler_state state_after; /* sampler state after this batch: save it once the batch is used */
    int64_t first_crop;       /* the stream index of its first item (tt_sampler_stream_index;
                                 the next are the sampler's stride apart); 0 from a plain fill */
    int64_t sequence;         /* 0, 1, 2, ... in production order */
    double wait_seconds;      /* how long the consumer waited for this batch */
} tt_batch;

typedef struct tt_prefetch_config {
    int batch_size;   /* items per batch */
    int height, width, planes;
    int queue_depth;  /* staging batches (>= 1; 0: 2) */
    int normalize;    /* apply (x - mean) / std per channel after scaling to [0, 1] */
    float mean[3], std[3];
    int channels;     /* image channels (0: 3); a custom fill may give more (raster bands) */
} tt_prefetch_config;

/* Fills one batch (batch->batch_size = capacity on entry; set it to the
 * items filled).  *end = 1 means the stream is over (a batch with items
 * filled is still delivered).  Runs on the producer thread. */
typedef tt_status (*tt_prefetch_fill_fn)(void *ctx, tt_batch *batch, int *end);

/* Starts the producer with a custom fill function (ctx borrowed). */
tt_status tt_prefetch_create(const tt_prefetch_config *config, tt_prefetch_fill_fn fill, void *ctx,
                             tt_prefetch **out);

/* Starts the producer over a sampler (borrowed; the producer thread owns it
 * until destroy: do not call it meanwhile).  An endless stream of batches
 * of config->batch_size crops, unless max_crops > 0: then the stream ends
 * after that many crops, the last batch short if need be (a finite run). */
tt_status tt_prefetch_create_sampler(const tt_prefetch_config *config, tt_sampler *sampler,
                                     int64_t max_crops, tt_prefetch **out);

/* Blocks until a batch is ready.  *batch = NULL at the end of the stream.
 * Batches produced before a producer error are delivered first; then the
 * error is returned (once; later calls return TT_ERR_INTERNAL "stopped
 * after an error").  Release each batch when done with it. */
tt_status tt_prefetch_next(tt_prefetch *prefetch, tt_batch **batch);
/* Gives a batch's slot back to the producer. */
void tt_prefetch_release(tt_prefetch *prefetch, tt_batch *batch);

typedef struct tt_prefetch_stats {
    int64_t batches;         /* handed to the consumer */
    double wait_seconds;     /* total consumer wait */
    double last_wait_seconds;
    double produce_seconds;  /* producer time spent filling */
} tt_prefetch_stats;

void tt_prefetch_get_stats(tt_prefetch *prefetch, tt_prefetch_stats *stats);

/* Stops the producer (waking it if blocked), joins it, frees the queue.
 * Batches not yet released become invalid.  NULL allowed. */
void tt_prefetch_destroy(tt_prefetch *prefetch);

/* Converts a (H, W, 3) uint8 crop into (3, H, W) floats v/255, then
 * (x - mean) / std per channel when normalize. */
void tt_prefetch_to_planar(const uint8_t *rgb, int w, int h, int normalize, const float mean[3],
                           const float std[3], float *out);

#endif

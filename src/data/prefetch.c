/*
 * The prefetch queue (see prefetch.h): one producer thread, one consumer,
 * `queue_depth` preallocated staging batches cycling FREE -> FILLING ->
 * READY -> HELD -> FREE under one mutex and two condition variables.
 */
#include "data/prefetch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/status.h"

enum { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_HELD };

struct tt_prefetch {
    tt_prefetch_config config;
    tt_prefetch_fill_fn fill;
    void *ctx;
    void (*ctx_free)(void *ctx);
    pthread_t thread;
    int started;
    pthread_mutex_t mutex;
    pthread_cond_t ready_cv;   /* consumer waits: a batch is ready, or an end/error */
    pthread_cond_t free_cv;    /* producer waits: a slot is free, or stop */
    int depth;
    tt_batch *slots;           /* (depth) */
    int *slot_state;           /* (depth) */
    int *ready;                /* (depth) FIFO of READY slot indices */
    int ready_head, ready_count;
    int stop, ended, error_reported;
    tt_status error;
    int64_t produced;
    tt_prefetch_stats stats;
};

void tt_prefetch_to_planar(const uint8_t *rgb, int w, int h, int normalize, const float mean[3],
                           const float std[3], float *out)
{
    size_t n = (size_t)w * h;
    for (int c = 0; c < 3; c++) {
        float scale = 1.0f / 255.0f, shift = 0.0f;
        if (normalize) { /* (v/255 - mean) / std = v * scale + shift */
            scale /= std[c];
            shift = -mean[c] / std[c];
        }
        float *plane = out + (size_t)c * n;
        for (size_t i = 0; i < n; i++) plane[i] = rgb[3 * i + c] * scale + shift;
    }
}

static void *producer_main(void *arg)
{
    tt_prefetch *p = arg;
    pthread_mutex_lock(&p->mutex);
    while (!p->stop) {
        int slot = -1;
        for (int i = 0; i < p->depth && slot < 0; i++)
            if (p->slot_state[i] == SLOT_FREE) slot = i;
        if (slot < 0) {
            pthread_cond_wait(&p->free_cv, &p->mutex);
            continue;
        }
        p->slot_state[slot] = SLOT_FILLING;
        pthread_mutex_unlock(&p->mutex);

        tt_batch *b = &p->slots[slot];
        b->batch_size = p->config.batch_size;
        int end = 0;
        double t0 = tt_seconds();
        tt_status status = p->fill(p->ctx, b, &end);
        double spent = tt_seconds() - t0;

        pthread_mutex_lock(&p->mutex);
        p->stats.produce_seconds += spent;
        if (status) {
            p->error = status;
            p->slot_state[slot] = SLOT_FREE;
            pthread_cond_broadcast(&p->ready_cv);
            break;
        }
        if (b->batch_size > 0) {
            b->sequence = p->produced++;
            p->slot_state[slot] = SLOT_READY;
            p->ready[(p->ready_head + p->ready_count++) % p->depth] = slot;
        } else {
            p->slot_state[slot] = SLOT_FREE;
        }
        if (end) p->ended = 1;
        pthread_cond_broadcast(&p->ready_cv);
        if (end) break;
    }
    pthread_mutex_unlock(&p->mutex);
    return NULL;
}

tt_status tt_prefetch_create(const tt_prefetch_config *config, tt_prefetch_fill_fn fill, void *ctx,
                             tt_prefetch **out)
{
    *out = NULL;
    tt_prefetch_config cfg = *config;
    if (!cfg.queue_depth) cfg.queue_depth = 2;
    if (!cfg.channels) cfg.channels = 3;
    if (cfg.batch_size < 1 || cfg.height < 1 || cfg.width < 1 || cfg.planes < 0 || cfg.queue_depth < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "prefetch: batch %d of %d x %d with %d mask planes, queue depth %d; all must be "
                            "positive", cfg.batch_size, cfg.height, cfg.width, cfg.planes, cfg.queue_depth);
    for (int c = 0; c < 3 && cfg.normalize; c++)
        if (!(cfg.std[c] > 0.0f))
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "prefetch: std[%d] = %g; give a positive std", c,
                                cfg.std[c]);
    tt_status status = NULL;
    tt_prefetch *p = tt_calloc(1, sizeof *p);
    if (!p) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "prefetch: no host memory");
    p->config = cfg;
    p->fill = fill;
    p->ctx = ctx;
    p->depth = cfg.queue_depth;
    pthread_mutex_init(&p->mutex, NULL);
    pthread_cond_init(&p->ready_cv, NULL);
    pthread_cond_init(&p->free_cv, NULL);
    p->slots = tt_calloc((size_t)p->depth, sizeof *p->slots);
    p->slot_state = tt_calloc((size_t)p->depth, sizeof *p->slot_state);
    p->ready = tt_calloc((size_t)p->depth, sizeof *p->ready);
    if (!p->slots || !p->slot_state || !p->ready) goto oom;
    size_t px = (size_t)cfg.height * cfg.width;
    for (int i = 0; i < p->depth; i++) {
        tt_batch *b = &p->slots[i];
        b->height = cfg.height;
        b->width = cfg.width;
        b->planes = cfg.planes;
        b->channels = cfg.channels;
        b->image = tt_malloc(sizeof *b->image * cfg.batch_size * (size_t)cfg.channels * px);
        b->mask = tt_malloc((size_t)cfg.batch_size * (cfg.planes ? cfg.planes : 1) * px);
        b->items = tt_calloc((size_t)cfg.batch_size, sizeof *b->items);
        if (!b->image || !b->mask || !b->items) goto oom;
    }
    if (pthread_create(&p->thread, NULL, producer_main, p) != 0) {
        status = tt_error_new(TT_ERR_INTERNAL, "prefetch: cannot start the producer thread");
        goto cleanup;
    }
    p->started = 1;
    *out = p;
    return NULL;
oom:
    status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "prefetch: no host memory for %d staging batches of %d x %d "
                          "x %d x %d", p->depth, cfg.batch_size, cfg.channels, cfg.height, cfg.width);
cleanup:
    tt_prefetch_destroy(p);
    return status;
}

tt_status tt_prefetch_next(tt_prefetch *prefetch, tt_batch **batch)
{
    tt_prefetch *p = prefetch;
    *batch = NULL;
    double t0 = tt_seconds();
    pthread_mutex_lock(&p->mutex);
    while (!p->ready_count && !p->error && !p->error_reported && !p->ended && !p->stop)
        pthread_cond_wait(&p->ready_cv, &p->mutex);
    tt_status status = NULL;
    if (p->ready_count) {
        int slot = p->ready[p->ready_head];
        p->ready_head = (p->ready_head + 1) % p->depth;
        p->ready_count--;
        p->slot_state[slot] = SLOT_HELD;
        double waited = tt_seconds() - t0;
        p->slots[slot].wait_seconds = waited;
        p->stats.batches++;
        p->stats.wait_seconds += waited;
        p->stats.last_wait_seconds = waited;
        *batch = &p->slots[slot];
    } else if (p->error && !p->error_reported) {
        p->error_reported = 1;
        status = tt_error_prefix(p->error, "prefetch producer");
        p->error = NULL;
    } else if (p->error_reported) {
        status = tt_error_new(TT_ERR_INTERNAL, "prefetch: the producer stopped after an error reported earlier");
    }
    pthread_mutex_unlock(&p->mutex);
    return status;
}

void tt_prefetch_release(tt_prefetch *prefetch, tt_batch *batch)
{
    if (!prefetch || !batch) return;
    pthread_mutex_lock(&prefetch->mutex);
    int slot = (int)(batch - prefetch->slots);
    TT_ASSERT(slot >= 0 && slot < prefetch->depth && prefetch->slot_state[slot] == SLOT_HELD);
    prefetch->slot_state[slot] = SLOT_FREE;
    pthread_cond_signal(&prefetch->free_cv);
    pthread_mutex_unlock(&prefetch->mutex);
}

void tt_prefetch_get_stats(tt_prefetch *prefetch, tt_prefetch_stats *stats)
{
    pthread_mutex_lock(&prefetch->mutex);
    *stats = prefetch->stats;
    pthread_mutex_unlock(&prefetch->mutex);
}

void tt_prefetch_destroy(tt_prefetch *prefetch)
{
    tt_prefetch *p = prefetch;
    if (!p) return;
    if (p->started) {
        pthread_mutex_lock(&p->mutex);
        p->stop = 1;
        pthread_cond_broadcast(&p->free_cv);
        pthread_cond_broadcast(&p->ready_cv);
        pthread_mutex_unlock(&p->mutex);
        pthread_join(p->thread, NULL);
    }
    tt_status_free(p->error);
    if (p->slots)
        for (int i = 0; i < p->depth; i++) {
            free(p->slots[i].image);
            free(p->slots[i].mask);
            free(p->slots[i].items);
        }
    free(p->slots);
    free(p->slot_state);
    free(p->ready);
    if (p->ctx_free) p->ctx_free(p->ctx);
    pthread_mutex_destroy(&p->mutex);
    pthread_cond_destroy(&p->ready_cv);
    pthread_cond_destroy(&p->free_cv);
    free(p);
}

/* ---- the sampler as a producer -------------------------------------------- */

typedef struct sampler_fill {
    tt_sampler *sampler;
    int normalize;
    float mean[3], std[3];
    int64_t max_crops, filled; /* crops */
    uint8_t *rgb; /* (H, W, 3) one crop */
} sampler_fill;

static void sampler_fill_free(void *ctx)
{
    sampler_fill *f = ctx;
    if (!f) return;
    free(f->rgb);
    free(f);
}

static tt_status sampler_fill_batch(void *ctx, tt_batch *b, int *end)
{
    sampler_fill *f = ctx;
    size_t px = (size_t)b->height * b->width;
    int want = b->batch_size;
    if (f->max_crops > 0 && f->max_crops - f->filled < want) want = (int)(f->max_crops - f->filled);
    b->batch_size = want;
    tt_sampler_state before;
    tt_sampler_get_state(f->sampler, &before);
    b->first_crop = tt_sampler_stream_index(f->sampler, &before);
    for (int i = 0; i < want; i++) {
        tt_crop_info info;
        TT_TRY(tt_sampler_next(f->sampler, f->rgb, b->mask + (size_t)i * b->planes * px, &info));
        tt_prefetch_to_planar(f->rgb, b->width, b->height, f->normalize, f->mean, f->std,
                              b->image + (size_t)i * 3 * px);
        b->items[i] = info.item;
    }
    tt_sampler_get_state(f->sampler, &b->state_after);
    f->filled += want;
    if (f->max_crops > 0 && f->filled >= f->max_crops) *end = 1;
    return NULL;
}

tt_status tt_prefetch_create_sampler(const tt_prefetch_config *config, tt_sampler *sampler,
                                     int64_t max_crops, tt_prefetch **out)
{
    *out = NULL;
    if (config->width != tt_sampler_tile_width(sampler) || config->height != tt_sampler_tile_height(sampler) ||
        config->planes != tt_sampler_planes(sampler))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "prefetch: batches of %d x %d with %d planes, but the sampler makes %d x %d crops "
                            "with %d planes", config->height, config->width, config->planes,
                            tt_sampler_tile_height(sampler), tt_sampler_tile_width(sampler),
                            tt_sampler_planes(sampler));
    sampler_fill *f = tt_calloc(1, sizeof *f);
    if (f) f->rgb = tt_malloc((size_t)config->width * config->height * 3);
    if (!f || !f->rgb) {
        sampler_fill_free(f);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "prefetch: no host memory");
    }
    f->sampler = sampler;
    f->normalize = config->normalize;
    memcpy(f->mean, config->mean, sizeof f->mean);
    memcpy(f->std, config->std, sizeof f->std);
    f->max_crops = max_crops;
    tt_status status = tt_prefetch_create(config, sampler_fill_batch, f, out);
    if (status) {
        sampler_fill_free(f);
        return status;
    }
    /* the producer only reads ctx_free at destroy, after the join */
    (*out)->ctx_free = sampler_fill_free;
    return NULL;
}

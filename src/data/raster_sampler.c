/* Training crops from a raster set, for the prefetch thread; see
 * raster_sampler.h. */
#include "data/raster_sampler.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "data/raster_augment.h"
#include "data/rng.h"

struct tt_raster_sampler {
    tt_raster_sampler_config config;
    tt_raster_set *set;
    int channels;
    int64_t epoch_length;
    double *area_below;      /* (count + 1): pixels of the rasters before each, cumulative */
    float mean[TT_RASTER_MAX_BANDS], std[TT_RASTER_MAX_BANDS];
    int normalize;
    tt_sampler_state state;
    int64_t max_crops, filled; /* a finite stream: crops in all, so far (0: endless) */
    float *scratch;          /* w * h */
    int *map;                /* w * h */
};

void tt_raster_sampler_destroy(tt_raster_sampler *s)
{
    if (!s) return;
    free(s->area_below);
    free(s->scratch);
    free(s->map);
    free(s);
}

tt_status tt_raster_sampler_create(const tt_raster_sampler_config *config, tt_raster_set *set,
                                   tt_raster_sampler **out)
{
    *out = NULL;
    tt_raster_sampler *s = tt_calloc(1, sizeof *s);
    if (!s) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "raster sampler: out of host memory");
    s->config = *config;
    if (s->config.stride < 1) s->config.stride = 1;
    int tw = config->tile_width, th = config->tile_height, count = tt_raster_set_count(set);
    s->set = set;
    s->channels = tt_raster_pair_get_info(tt_raster_set_pair(set, 0))->channels;
    s->area_below = tt_calloc((size_t)count + 1, sizeof *s->area_below);
    s->scratch = tt_malloc((size_t)tw * th * sizeof *s->scratch);
    s->map = tt_malloc((size_t)tw * th * sizeof *s->map);
    if (!s->area_below || !s->scratch || !s->map || tw < 1 || th < 1) {
        tt_raster_sampler_destroy(s);
        return tw < 1 || th < 1 ? tt_error_new(TT_ERR_INVALID_ARGUMENT, "raster sampler: a crop "
                                               "of %dx%d", tw, th)
                                : tt_error_new(TT_ERR_OUT_OF_MEMORY, "raster sampler: out of "
                                               "host memory");
    }
    const tt_raster_holdout *h = config->holdout;
    for (int i = 0; i < count; i++) {
        const tt_raster_pair_info *in = tt_raster_pair_get_info(tt_raster_set_pair(set, i));
        int held = h && h->held[i]; /* never drawn: no area */
        s->area_below[i + 1] = s->area_below[i] + (held ? 0 : (double)in->width * in->height);
        if (!held)
            s->epoch_length += (int64_t)((in->width + tw - 1) / tw) * ((in->height + th - 1) / th);
    }
    if (h && h->block) { /* the held-out blocks' share of the scene's crops */
        double held_area = 0;
        for (int i = 0; i < h->region_count; i++)
            held_area += (double)h->regions[i].width * h->regions[i].height;
        s->epoch_length -= (int64_t)(held_area / ((double)tw * th));
        if (s->epoch_length < 1) s->epoch_length = 1;
    }
    s->normalize = config->mean && config->std;
    for (int c = 0; s->normalize && c < s->channels; c++) {
        s->mean[c] = config->mean[c], s->std[c] = config->std[c];
        if (!(s->std[c] > 0)) {
            tt_raster_sampler_destroy(s);
            return tt_error_new(TT_ERR_INVALID_ARGUMENT, "raster sampler: band %d's std is %g; "
                                "it must be > 0", c + 1, (double)config->std[c]);
        }
    }
    s->state = (tt_sampler_state){config->seed, 0, 0};
    *out = s;
    return NULL;
}

int64_t tt_raster_sampler_epoch_length(const tt_raster_sampler *s) { return s->epoch_length; }
void tt_raster_sampler_get_state(const tt_raster_sampler *s, tt_sampler_state *state)
{
    *state = s->state;
}

void tt_raster_sampler_limit(tt_raster_sampler *s, int64_t max_crops)
{
    s->max_crops = max_crops > 0 ? max_crops : 0;
    s->filled = 0;
}

tt_status tt_raster_sampler_set_state(tt_raster_sampler *s, const tt_sampler_state *state)
{
    if (state->seed != s->config.seed)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "raster sampler: the saved state has seed "
                            "%llu but this run uses seed %llu; resume with the same seed",
                            (unsigned long long)state->seed,
                            (unsigned long long)s->config.seed);
    if (state->epoch < 0 || state->position < 0 || state->position >= s->epoch_length)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "raster sampler: saved position %lld is "
                            "outside an epoch of %lld crops; were the rasters or the tile size "
                            "changed?", (long long)state->position, (long long)s->epoch_length);
    s->state = *state;
    return NULL;
}

/* The raster holding area point u (binary search over area_below). */
static int raster_at(const tt_raster_sampler *s, double u)
{
    int lo = 0, hi = tt_raster_set_count(s->set) - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (s->area_below[mid] <= u) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* A crop's origin along a side of `length` for a crop of `side`: inside
 * when the raster is the larger; else the raster at a uniform offset in
 * the crop. */
static int random_origin(tt_rng *rng, int length, int side)
{
    return length >= side ? (int)tt_rng_range(rng, 0, length - side)
                          : -(int)tt_rng_range(rng, 0, side - length);
}

/* A crop's origin in raster k that touches no held-out region (without a
 * holdout: the first draw, as ever). */
static void draw_origin(const tt_raster_sampler *s, tt_rng *rng, int k,
                        const tt_raster_pair_info *in, int *x0, int *y0)
{
    int tw = s->config.tile_width, th = s->config.tile_height;
    const tt_raster_holdout *h = s->config.holdout;
    for (int t = 0; t < TT_RASTER_HOLDOUT_TRIES; t++) {
        *x0 = random_origin(rng, in->width, tw), *y0 = random_origin(rng, in->height, th);
        if (!tt_raster_holdout_touches(h, k, *x0, *y0, tw, th)) return;
    }
    /* inside a whole block kept for training (blocks are twice the crop) */
    tt_raster_region b = tt_raster_holdout_free_block(
        h, (int)tt_rng_below(rng, (uint64_t)tt_raster_holdout_free_blocks(h)));
    *x0 = b.x0 + (int)tt_rng_range(rng, 0, b.width - tw);
    *y0 = b.y0 + (int)tt_rng_range(rng, 0, b.height - th);
}

/* Crop `state` of the stream into image ((channels, th, tw)) and mask. */
static tt_status crop(tt_raster_sampler *s, const tt_sampler_state *state, float *image,
                      uint8_t *mask, int *item)
{
    int tw = s->config.tile_width, th = s->config.tile_height;
    tt_rng rng = tt_rng_from(state->seed, (uint64_t)state->epoch, (uint64_t)state->position);
    int count = tt_raster_set_count(s->set);
    int k = raster_at(s, tt_rng_uniform(&rng) * s->area_below[count]);
    tt_raster_pair *p = tt_raster_set_pair(s->set, k);
    const tt_raster_pair_info *in = tt_raster_pair_get_info(p);
    /* a crop seeking foreground tries up to TT_RASTER_FG_TRIES positions (the
     * generator is the crop's own: later crops draw the same whatever it took) */
    int seek = tt_rng_uniform(&rng) < s->config.fg_fraction;
    int x0, y0;
    draw_origin(s, &rng, k, in, &x0, &y0);
    for (int t = 1, found = 0; seek && t <= TT_RASTER_FG_TRIES; t++) {
        TT_TRY(tt_raster_pair_has_foreground(p, x0, y0, tw, th, &found));
        if (found || t == TT_RASTER_FG_TRIES) break; /* none found: the last place */
        draw_origin(s, &rng, k, in, &x0, &y0);
    }
    TT_TRY(tt_raster_pair_read(p, x0, y0, tw, th, s->normalize ? s->mean : NULL,
                               s->normalize ? s->std : NULL, image, mask, NULL, NULL));
    if (!s->config.no_augment) {
        tt_augment_params a;
        tt_augment_draw(&s->config.augment, tw == th, &rng, &a);
        tt_raster_augment_geometry(&a, tw, th, image, s->channels, mask, s->scratch, s->map);
    }
    *item = k;
    return NULL;
}

static tt_sampler_state advance(const tt_raster_sampler *s, tt_sampler_state st, int64_t crops)
{
    int64_t index = st.epoch * s->epoch_length + st.position + crops;
    st.epoch = index / s->epoch_length;
    st.position = index % s->epoch_length;
    return st;
}

tt_status tt_raster_sampler_fill(void *ctx, tt_batch *b, int *end)
{
    tt_raster_sampler *s = ctx;
    if (b->channels != s->channels || b->planes != 1 || b->width != s->config.tile_width ||
        b->height != s->config.tile_height)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "raster sampler: batches of %d bands, %d "
                            "planes, %dx%d; its crops are %d bands, 1 plane, %dx%d", b->channels,
                            b->planes, b->width, b->height, s->channels, s->config.tile_width,
                            s->config.tile_height);
    int want = b->batch_size;
    if (s->max_crops && s->max_crops - s->filled < want) want = (int)(s->max_crops - s->filled);
    size_t plane = (size_t)b->width * b->height;
    b->batch_size = want;
    b->first_crop = s->state.epoch * s->epoch_length + s->state.position;
    for (int i = 0; i < want; i++) {
        TT_TRY(crop(s, &s->state, b->image + (size_t)i * s->channels * plane,
                    b->mask + (size_t)i * plane, &b->items[i]));
        s->state = advance(s, s->state, s->config.stride);
    }
    b->state_after = s->state;
    s->filled += want;
    if (s->max_crops && s->filled >= s->max_crops) *end = 1;
    return NULL;
}

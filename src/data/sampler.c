/*
 * The sampler (see sampler.h): shuffled random crops with optional
 * foreground oversampling, or a sorted grid of crops; exact resume from
 * (seed, epoch, position).  The train/validation split is in split.c.
 */
#include "data/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

struct tt_sampler {
    tt_sampler_config config;
    tt_tilecache *cache;
    int count;
    int *items;            /* (count) source indices */
    int *width, *height;   /* (count) image sizes */
    int64_t *grid_start;   /* (count + 1) no_shuffle: first crop of each item */
    int64_t epoch_length;
    tt_sampler_state state;
    int64_t perm_epoch;    /* the epoch `perm` was drawn for; -1 none */
    int64_t *perm;         /* (epoch_length) shuffle: visit order */
    uint64_t *fg_counts;   /* (classes) scratch */
    uint8_t *scratch;      /* (tile_h * tile_w * 3) for augmentation */
    float *map;            /* (2 * tile_h * tile_w) a warp's source points */
    uint8_t *window;       /* a warp's source window: rgb, then the mask planes */
    size_t window_size;
};

tt_status tt_sampler_create(const tt_sampler_config *config, tt_tilecache *cache, const int *items,
                            int count, tt_sampler **out)
{
    *out = NULL;
    tt_sampler_config cfg = *config;
    if (!cfg.tile_width) cfg.tile_width = 256;
    if (!cfg.tile_height) cfg.tile_height = 256;
    if (!cfg.crops_per_image) cfg.crops_per_image = 1;
    if (!cfg.stride) cfg.stride = 1;
    if (cfg.stride < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "sampler: stride %d must be positive",
                            cfg.stride);
    if (cfg.tile_width < 1 || cfg.tile_height < 1 || cfg.crops_per_image < 1 || count < 1 ||
        !(cfg.fg_fraction >= 0.0 && cfg.fg_fraction <= 1.0))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "sampler: tile %d x %d, crops_per_image %d, fg_fraction %g over %d items; "
                            "sizes must be positive, fg_fraction in [0, 1] and the item list non-empty",
                            cfg.tile_width, cfg.tile_height, cfg.crops_per_image, cfg.fg_fraction, count);
    tt_status status = NULL;
    const tt_item_source *source = tt_tilecache_source(cache);
    tt_sampler *s = tt_calloc(1, sizeof *s);
    if (!s) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "sampler: no host memory");
    s->config = cfg;
    s->cache = cache;
    s->count = count;
    s->items = tt_malloc(sizeof *s->items * count);
    s->width = tt_malloc(sizeof *s->width * count);
    s->height = tt_malloc(sizeof *s->height * count);
    s->grid_start = tt_malloc(sizeof *s->grid_start * (count + 1));
    s->fg_counts = tt_malloc(sizeof *s->fg_counts * source->classes);
    s->scratch = tt_malloc((size_t)cfg.tile_width * cfg.tile_height * 3);
    if (!s->items || !s->width || !s->height || !s->grid_start || !s->fg_counts || !s->scratch) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "sampler: no host memory for %d items", count);
        goto cleanup;
    }
    s->grid_start[0] = 0;
    for (int k = 0; k < count; k++) {
        if (items[k] < 0 || items[k] >= source->count) {
            status = tt_error_new(TT_ERR_INVALID_ARGUMENT, "sampler: item %d is not in the source (0..%d)",
                                  items[k], source->count - 1);
            goto cleanup;
        }
        s->items[k] = items[k];
        TT_CHECK(tt_tilecache_item_size(cache, items[k], &s->width[k], &s->height[k]));
        int64_t gx = (s->width[k] + cfg.tile_width - 1) / cfg.tile_width;
        int64_t gy = (s->height[k] + cfg.tile_height - 1) / cfg.tile_height;
        s->grid_start[k + 1] = s->grid_start[k] + gx * gy;
    }
    s->epoch_length = cfg.no_shuffle ? s->grid_start[count] : (int64_t)count * cfg.crops_per_image;
    if (!cfg.no_shuffle) {
        s->perm = tt_malloc(sizeof *s->perm * s->epoch_length);
        if (!s->perm) {
            status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "sampler: no host memory");
            goto cleanup;
        }
    }
    s->perm_epoch = -1;
    s->state.seed = cfg.seed;
    *out = s;
cleanup:
    if (status) tt_sampler_destroy(s);
    return status;
}

void tt_sampler_destroy(tt_sampler *sampler)
{
    if (!sampler) return;
    free(sampler->items);
    free(sampler->width);
    free(sampler->height);
    free(sampler->grid_start);
    free(sampler->perm);
    free(sampler->fg_counts);
    free(sampler->scratch);
    free(sampler->map);
    free(sampler->window);
    free(sampler);
}

int64_t tt_sampler_epoch_length(const tt_sampler *sampler) { return sampler->epoch_length; }
int tt_sampler_tile_width(const tt_sampler *sampler) { return sampler->config.tile_width; }
int tt_sampler_tile_height(const tt_sampler *sampler) { return sampler->config.tile_height; }
int tt_sampler_planes(const tt_sampler *sampler) { return tt_tilecache_planes(sampler->cache); }

void tt_sampler_get_state(const tt_sampler *sampler, tt_sampler_state *state) { *state = sampler->state; }

tt_status tt_sampler_set_state(tt_sampler *sampler, const tt_sampler_state *state)
{
    if (state->seed != sampler->config.seed)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "sampler: the saved state has seed %llu but this run uses seed %llu; resume "
                            "with the same seed", (unsigned long long)state->seed,
                            (unsigned long long)sampler->config.seed);
    if (state->epoch < 0 || state->position < 0 || state->position >= sampler->epoch_length)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "sampler: saved position %lld of epoch %lld is outside an epoch of %lld crops; "
                            "was the dataset or the tile size changed?", (long long)state->position,
                            (long long)state->epoch, (long long)sampler->epoch_length);
    sampler->state = *state;
    return NULL;
}

int64_t tt_sampler_stream_index(const tt_sampler *s, const tt_sampler_state *state)
{
    return state->epoch * s->epoch_length + state->position;
}

tt_sampler_state tt_sampler_state_after(const tt_sampler *s, tt_sampler_state state, int64_t crops)
{
    int64_t index = tt_sampler_stream_index(s, &state) + crops;
    state.epoch = index / s->epoch_length;
    state.position = index % s->epoch_length;
    return state;
}

/* Fisher-Yates over the visits of one epoch, from (seed, epoch). */
static void draw_permutation(tt_sampler *s, int64_t epoch)
{
    tt_rng rng = tt_rng_from(s->config.seed, (uint64_t)epoch, 0x7065726dULL /* "perm" */);
    for (int64_t i = 0; i < s->epoch_length; i++) s->perm[i] = i;
    for (int64_t i = s->epoch_length - 1; i > 0; i--) {
        int64_t j = (int64_t)tt_rng_below(&rng, (uint64_t)i + 1);
        int64_t t = s->perm[i];
        s->perm[i] = s->perm[j];
        s->perm[j] = t;
    }
    s->perm_epoch = epoch;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Picks the crop origin of a training visit of item k. */
static tt_status random_origin(tt_sampler *s, int k, tt_rng *rng, tt_crop_info *info)
{
    int tw = s->config.tile_width, th = s->config.tile_height;
    int w = s->width[k], h = s->height[k];
    int64_t lox = w < tw ? w - tw : 0, hix = w < tw ? 0 : w - tw;
    int64_t loy = h < th ? h - th : 0, hiy = h < th ? 0 : h - th;
    double u = tt_rng_uniform(rng);
    info->foreground = 0;
    if (u < s->config.fg_fraction) {
        const tt_item_source *src = tt_tilecache_source(s->cache);
        TT_TRY(tt_tilecache_fg_counts(s->cache, s->items[k], s->fg_counts));
        int present = 0;
        for (int c = 0; c < src->classes; c++) present += s->fg_counts[c] > 0;
        if (present) {
            int pick = (int)tt_rng_below(rng, (uint64_t)present), cls = 0;
            for (cls = 0; cls < src->classes; cls++)
                if (s->fg_counts[cls] > 0 && pick-- == 0) break;
            uint64_t nth = tt_rng_below(rng, s->fg_counts[cls]);
            int px, py;
            TT_TRY(tt_tilecache_fg_pixel(s->cache, s->items[k], cls, nth, &px, &py));
            info->x0 = (int)clamp64(px - tw / 2, lox, hix);
            info->y0 = (int)clamp64(py - th / 2, loy, hiy);
            info->foreground = 1;
            return NULL;
        }
    }
    info->x0 = (int)tt_rng_range(rng, lox, hix);
    info->y0 = (int)tt_rng_range(rng, loy, hiy);
    return NULL;
}

/* The crop through its warp: the source points of its pixels, the window
 * of the image they fall in (read with the masks' out-of-image pixels
 * ignore, 255), sampled. */
static tt_status read_warped(tt_sampler *s, const tt_crop_info *info, uint8_t *rgb, uint8_t *masks)
{
    int tw = s->config.tile_width, th = s->config.tile_height, planes = tt_tilecache_planes(s->cache);
    size_t n = (size_t)tw * th;
    if (!s->map && !(s->map = tt_malloc(sizeof *s->map * 2 * n)))
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "sampler: no host memory for the warp");
    float *sx = s->map, *sy = s->map + n;
    tt_augment_source_map(&info->augment, tw, th, sx, sy);
    float lox = sx[0], hix = sx[0], loy = sy[0], hiy = sy[0];
    for (size_t i = 1; i < n; i++) {
        lox = sx[i] < lox ? sx[i] : lox, hix = sx[i] > hix ? sx[i] : hix;
        loy = sy[i] < loy ? sy[i] : loy, hiy = sy[i] > hiy ? sy[i] : hiy;
    }
    /* bilinear reads one pixel past the point; a far point is clamped (it
     * samples nothing: the window's edge is as far as anything is read) */
    const float far = 4.0f * (tw > th ? tw : th);
    int wx0 = (int)floorf(lox < -far ? -far : lox), wy0 = (int)floorf(loy < -far ? -far : loy);
    int wx1 = (int)floorf(hix > far ? far : hix) + 2, wy1 = (int)floorf(hiy > far ? far : hiy) + 2;
    int ww = wx1 - wx0, wh = wy1 - wy0;
    size_t need = (size_t)ww * wh * (3 + (size_t)planes);
    if (need > s->window_size) {
        uint8_t *grown = tt_realloc(s->window, need);
        if (!grown) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "sampler: no host memory for the warp");
        s->window = grown, s->window_size = need;
    }
    uint8_t *win_rgb = s->window, *win_masks = s->window + (size_t)ww * wh * 3;
    TT_TRY(tt_tilecache_read_image(s->cache, info->item, info->x0 + wx0, info->y0 + wy0, ww, wh,
                                   win_rgb));
    TT_TRY(tt_tilecache_read_mask(s->cache, info->item, info->x0 + wx0, info->y0 + wy0, ww, wh,
                                  255, win_masks));
    tt_augment_sample(sx, sy, tw, th, wx0, wy0, ww, wh, win_rgb, win_masks, planes, rgb, masks);
    return NULL;
}

tt_status tt_sampler_next(tt_sampler *sampler, uint8_t *rgb, uint8_t *masks, tt_crop_info *info)
{
    tt_sampler *s = sampler;
    tt_crop_info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    int64_t epoch = s->state.epoch, pos = s->state.position;
    int tw = s->config.tile_width, th = s->config.tile_height;
    tt_rng rng = tt_rng_from(s->config.seed, (uint64_t)epoch, (uint64_t)pos);
    int k;
    if (s->config.no_shuffle) {
        int lo = 0, hi = s->count - 1; /* the last k with grid_start[k] <= pos */
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (s->grid_start[mid] <= pos) lo = mid; else hi = mid - 1;
        }
        k = lo;
        int64_t local_index = pos - s->grid_start[k];
        int64_t gx = (s->width[k] + tw - 1) / tw;
        info->x0 = (int)(local_index % gx) * tw;
        info->y0 = (int)(local_index / gx) * th;
    } else {
        if (s->perm_epoch != epoch) draw_permutation(s, epoch);
        k = (int)(s->perm[pos] / s->config.crops_per_image);
        TT_TRY(random_origin(s, k, &rng, info));
    }
    info->item = s->items[k];
    info->epoch = epoch;
    info->position = pos;
    const tt_item_source *src = tt_tilecache_source(s->cache);
    uint8_t pad = src->mask_kind == TT_MASK_CLASS_INDEX ? 255 : 0;
    info->augment = tt_augment_identity();
    if (!s->config.no_augment) tt_augment_draw(&s->config.augment, tw == th, &rng, &info->augment);
    if (tt_augment_warps(&info->augment)) {
        TT_TRY(read_warped(s, info, rgb, masks));
    } else {
        TT_TRY(tt_tilecache_read_image(s->cache, info->item, info->x0, info->y0, tw, th, rgb));
        TT_TRY(tt_tilecache_read_mask(s->cache, info->item, info->x0, info->y0, tw, th, pad, masks));
    }
    if (!s->config.no_augment)
        tt_augment_apply(&info->augment, tw, th, rgb, masks, tt_tilecache_planes(s->cache), s->scratch);
    s->state = tt_sampler_state_after(s, s->state, s->config.stride);
    return NULL;
}

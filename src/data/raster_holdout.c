/* Held-out validation regions of a raster set; see raster_holdout.h. */
#include "data/raster_holdout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "data/rng.h"

void tt_raster_holdout_free(tt_raster_holdout *h)
{
    if (!h) return;
    free(h->held);
    free(h->regions);
    memset(h, 0, sizeof *h);
}

static int block_held(const tt_raster_holdout *h, int bx, int by)
{
    return (bx + by * h->step) % h->every == 0;
}

static int blocks_across(const tt_raster_holdout *h) { return (h->width + h->block - 1) / h->block; }
static int blocks_down(const tt_raster_holdout *h) { return (h->height + h->block - 1) / h->block; }

static tt_status plan_blocks(tt_raster_holdout *h, const tt_raster_pair_info *in,
                             const char *name, double fraction, int tile_w, int tile_h)
{
    h->block = 2 * (tile_w > tile_h ? tile_w : tile_h);
    h->every = (int)lround(1.0 / fraction);
    if (h->every < 2) h->every = 2;
    h->step = (h->every + 1) / 2;
    h->width = in->width, h->height = in->height;
    int across = blocks_across(h), down = blocks_down(h);
    h->regions = tt_malloc(sizeof *h->regions * (size_t)across * down);
    if (!h->regions) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int by = 0; by < down; by++)
        for (int bx = 0; bx < across; bx++) {
            if (!block_held(h, bx, by)) continue;
            int x0 = bx * h->block, y0 = by * h->block;
            h->regions[h->region_count++] = (tt_raster_region){
                0, x0, y0, in->width - x0 < h->block ? in->width - x0 : h->block,
                in->height - y0 < h->block ? in->height - y0 : h->block};
        }
    if (!tt_raster_holdout_free_blocks(h))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--val-fraction %g: %s (%dx%d) is the only "
                            "scene, and a grid of %d px blocks over it (twice the %dx%d crop) "
                            "keeps no whole block for training once one in %d is held out; give "
                            "a smaller --tile, or more scenes (whole scenes are then held out)",
                            fraction, name, in->width, in->height, h->block, tile_w, tile_h,
                            h->every);
    return NULL;
}

tt_status tt_raster_holdout_plan(tt_raster_set *set, double fraction, uint64_t seed, int tile_w,
                                 int tile_h, tt_raster_holdout *out)
{
    memset(out, 0, sizeof *out);
    int count = tt_raster_set_count(set);
    if (!(fraction > 0 && fraction < 1))
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--val-fraction %g: give a share between 0 "
                            "and 1", fraction);
    out->scenes = count;
    out->held = tt_calloc((size_t)count, 1);
    if (!out->held) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    tt_status status = NULL;
    if (count == 1) {
        status = plan_blocks(out, tt_raster_pair_get_info(tt_raster_set_pair(set, 0)),
                             tt_raster_set_name(set, 0), fraction, tile_w, tile_h);
    } else {
        int held = (int)lround(fraction * count);
        held = held < 1 ? 1 : held > count - 1 ? count - 1 : held;
        int *order = tt_calloc((size_t)count, sizeof *order);
        out->regions = tt_malloc(sizeof *out->regions * (size_t)held);
        if (!order || !out->regions) {
            free(order);
            tt_raster_holdout_free(out);
            return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        tt_rng rng = tt_rng_from(seed, 0x486f6c646f7574ull /* "Holdout" */, 0);
        for (int i = 0; i < count; i++) order[i] = i;
        for (int i = count - 1; i > 0; i--) { /* Fisher-Yates */
            int j = (int)tt_rng_below(&rng, (uint64_t)i + 1), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        for (int i = 0; i < held; i++) out->held[order[i]] = 1;
        for (int k = 0; k < count; k++) /* in the set's (name) order */
            if (out->held[k]) {
                const tt_raster_pair_info *in = tt_raster_pair_get_info(tt_raster_set_pair(set, k));
                out->regions[out->region_count++] = (tt_raster_region){k, 0, 0, in->width,
                                                                       in->height};
            }
        free(order);
    }
    if (status) tt_raster_holdout_free(out);
    return status;
}

int tt_raster_holdout_touches(const tt_raster_holdout *h, int scene, int x0, int y0, int w,
                              int hgt)
{
    if (!h) return 0;
    if (h->held[scene]) return 1;
    if (!h->block) return 0;
    int bx0 = x0 < 0 ? 0 : x0 / h->block, by0 = y0 < 0 ? 0 : y0 / h->block;
    int bx1 = (x0 + w - 1) / h->block, by1 = (y0 + hgt - 1) / h->block;
    if (bx1 >= blocks_across(h)) bx1 = blocks_across(h) - 1;
    if (by1 >= blocks_down(h)) by1 = blocks_down(h) - 1;
    for (int by = by0; by <= by1; by++)
        for (int bx = bx0; bx <= bx1; bx++)
            if (block_held(h, bx, by)) return 1;
    return 0;
}

int tt_raster_holdout_free_blocks(const tt_raster_holdout *h)
{
    int n = 0;
    for (int by = 0; (by + 1) * h->block <= h->height; by++)
        for (int bx = 0; (bx + 1) * h->block <= h->width; bx++) n += !block_held(h, bx, by);
    return n;
}

tt_raster_region tt_raster_holdout_free_block(const tt_raster_holdout *h, int i)
{
    for (int by = 0; (by + 1) * h->block <= h->height; by++)
        for (int bx = 0; (bx + 1) * h->block <= h->width; bx++)
            if (!block_held(h, bx, by) && i-- == 0)
                return (tt_raster_region){0, bx * h->block, by * h->block, h->block, h->block};
    return (tt_raster_region){0, 0, 0, 0, 0};
}

void tt_raster_holdout_describe(const tt_raster_holdout *h, const tt_raster_set *set, char *buf,
                                size_t size)
{
    if (h->block) {
        snprintf(buf, size, "%d blocks of %d px of %s (one in %d of a %dx%d grid)",
                 h->region_count, h->block, tt_raster_set_name(set, 0), h->every,
                 blocks_across(h), blocks_down(h));
        return;
    }
    size_t used = (size_t)snprintf(buf, size, "scene%s", h->region_count > 1 ? "s" : "");
    for (int i = 0; i < h->region_count && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s %s", i ? "," : "",
                                 tt_raster_set_name(set, h->regions[i].scene));
}

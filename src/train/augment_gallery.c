/* The augmentation gallery; see augment_gallery.h. */
#include "train/augment_gallery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"
#include "infer/overlay.h"

tt_status tt_augment_gallery(const tt_sampler_config *config, tt_tilecache *cache, const int *items,
                             int item_count, const char *dir, int count)
{
    int w = config->tile_width, h = config->tile_height;
    const tt_item_source *src = tt_tilecache_source(cache);
    int planes = tt_tilecache_planes(cache), multi = src->mask_kind == TT_MASK_MULTI_LABEL;
    size_t n = (size_t)w * h;
    tt_sampler *s = NULL;
    uint8_t *rgb = tt_malloc(n * 3), *shown = tt_malloc(n * 3), *masks = tt_malloc(n * (size_t)planes);
    tt_status status = NULL;
    if (!rgb || !shown || !masks) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "augmentation gallery: out of host memory");
        goto cleanup;
    }
    TT_CHECK(tt_make_dirs(dir));
    TT_CHECK(tt_sampler_create(config, cache, items, item_count, &s));
    if (count > TT_AUGMENT_GALLERY_MAX) count = TT_AUGMENT_GALLERY_MAX;
    for (int k = 0; k < count; k++) {
        TT_CHECK(tt_sampler_next(s, rgb, masks, NULL));
        memcpy(shown, rgb, n * 3);
        if (multi) /* ignored pixels: no class, the picture dark */
            for (size_t i = 0; i < n; i++)
                if (masks[i] == 255) {
                    for (int p = 0; p < planes; p++) masks[(size_t)p * n + i] = 0;
                    for (int c = 0; c < 3; c++) shown[3 * i + c] = (uint8_t)(shown[3 * i + c] * 2 / 5);
                }
        tt_overlay(shown, n, src->classes, multi ? masks : NULL, multi ? NULL : masks, shown);
        char path[4096];
        snprintf(path, sizeof path, "%s/crop%d.png", dir, k);
        TT_CHECK(tt_overlay_write_pair(path, rgb, shown, w, h, 256));
    }
cleanup:
    tt_sampler_destroy(s);
    free(rgb), free(shown), free(masks);
    return status;
}

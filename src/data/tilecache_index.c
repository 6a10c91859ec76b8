/*
 * The tile cache's foreground index: per class and tile, how many mask
 * pixels are foreground, counted once per item by streaming its mask
 * entry's tiles (the sampler's foreground-biased draws read it).
 */
#include <stdint.h>
#include <stdlib.h>

#include <tiffio.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/status.h"
#include "data/image_probe.h"
#include "data/tilecache_internal.h"

tt_status tc_count_foreground(tt_tilecache *c, tc_item *it)
{
    const tt_item_source *s = c->source;
    const tc_layout *L = &it->mask_layout;
    int tiles = L->tiles_x * L->tiles_y, classes = s->classes;
    int multi = s->mask_kind == TT_MASK_MULTI_LABEL;
    uint32_t *counts = tt_calloc((size_t)classes * tiles, sizeof *counts);
    uint64_t *totals = tt_calloc((size_t)classes, sizeof *totals);
    uint8_t *tile = tt_malloc((size_t)L->tile_w * L->tile_h);
    tt_status status = NULL;
    tt_tiff_errors errors;
    TIFF *tif = tt_tiff_open(it->mask_file, "r", &errors);
    if (!counts || !totals || !tile || !tif) {
        status = tif ? tt_error_new(TT_ERR_OUT_OF_MEMORY, "tile cache: no host memory")
                     : tt_error_new(TT_ERR_IO, "tile cache: cannot open %s (%s)", it->mask_file,
                                    tt_tiff_reason(&errors));
        goto cleanup;
    }
    status = tt_read_fault("the tile cache entry", it->mask_file);
    if (status) goto cleanup;
    for (int p = 0; p < (multi ? classes : 1); p++)
        for (int t = 0; t < tiles; t++) {
            int tx = t % L->tiles_x, ty = t / L->tiles_x;
            uint32_t index = TIFFComputeTile(tif, (uint32_t)(tx * L->tile_w), (uint32_t)(ty * L->tile_h), 0,
                                             (uint16_t)p);
            size_t bytes = (size_t)L->tile_w * L->tile_h;
            if (TIFFReadEncodedTile(tif, index, tile, (tmsize_t)bytes) < 0) {
                status = tt_error_new(TT_ERR_FORMAT, "tile cache: cannot decode tile (%d, %d) of a mask "
                                      "plane of %s (%s)", tx, ty, it->mask_file, tt_tiff_reason(&errors));
                goto cleanup;
            }
            if (L->sums && (index >= L->sum_count || tc_sum(tile, bytes) != L->sums[index])) {
                status = tt_error_new(TT_ERR_FORMAT, "tile cache: tile (%d, %d) of a mask plane of %s "
                                      "decodes to other bytes than were written", tx, ty, it->mask_file);
                goto cleanup;
            }
            c->stats.tile_reads++;
            int vw = it->width - tx * L->tile_w < L->tile_w ? it->width - tx * L->tile_w : L->tile_w;
            int vh = it->height - ty * L->tile_h < L->tile_h ? it->height - ty * L->tile_h : L->tile_h;
            for (int r = 0; r < vh; r++)
                for (int q = 0; q < vw; q++) {
                    uint8_t v = tile[(size_t)r * L->tile_w + q];
                    if (multi) {
                        if (v) counts[(size_t)p * tiles + t]++;
                    } else if (v >= 1 && v < classes) {
                        counts[(size_t)v * tiles + t]++;
                    }
                }
        }
    for (int k = 0; k < classes; k++)
        for (int t = 0; t < tiles; t++) totals[k] += counts[(size_t)k * tiles + t];
    it->fg_tile_counts = counts;
    it->fg_totals = totals;
    counts = NULL;
    totals = NULL;
cleanup:
    if (tif) TIFFClose(tif);
    free(counts);
    free(totals);
    free(tile);
    return status;
}

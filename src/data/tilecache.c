/*
 * The tile cache (see tilecache.h): cache entries as tiled TIFF files,
 * direct reads of tiled TIFF inputs, and a byte-bounded LRU of decoded
 * tiles.  Entry writing lives in tilecache_write.c.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "data/tilecache.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tiffio.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/hash.h"
#include "core/status.h"
#include "data/image.h"
#include "data/image_probe.h"
#include "data/tilecache_internal.h"

/* ---- the LRU of decoded tiles -------------------------------------------- */

/* Linear lookup from the most recent end: the LRU holds a few hundred tiles
 * at most (64 MiB of 256 x 256 x 3), and a crop asks for about four. */
static tc_tile *lru_find(tt_tilecache *c, uint64_t file_id, int plane, uint32_t tile)
{
    for (tc_tile *t = c->mru; t; t = t->next)
        if (t->file_id == file_id && t->plane == plane && t->tile == tile) return t;
    return NULL;
}

static void lru_unlink(tt_tilecache *c, tc_tile *t)
{
    if (t->prev) t->prev->next = t->next; else c->mru = t->next;
    if (t->next) t->next->prev = t->prev; else c->lru = t->prev;
    t->prev = t->next = NULL;
}

static void lru_push_front(tt_tilecache *c, tc_tile *t)
{
    t->prev = NULL;
    t->next = c->mru;
    if (c->mru) c->mru->prev = t; else c->lru = t;
    c->mru = t;
}

/* Evicts least-recently used tiles until the bound holds, never `keep`. */
static void lru_trim(tt_tilecache *c, tc_tile *keep)
{
    while (c->stats.lru_bytes > c->lru_limit && c->lru && c->lru != keep) {
        tc_tile *t = c->lru;
        lru_unlink(c, t);
        c->stats.lru_bytes -= t->bytes;
        free(t);
    }
}

void tt_tilecache_drop_tiles(tt_tilecache *cache)
{
    if (!cache) return;
    while (cache->mru) {
        tc_tile *t = cache->mru;
        lru_unlink(cache, t);
        free(t);
    }
    cache->stats.lru_bytes = 0;
}

/* ---- decoding one tile ---------------------------------------------------- */

/* Decodes tile (tx, ty) of `file` into dst: (th, tw, 3) RGB when plane < 0,
 * else (th, tw) bytes of sample `plane`. */
static tt_status decode_tile(TIFF *tif, const tt_tiff_errors *errors, const char *file, const tc_layout *L,
                             int plane, int tx, int ty, uint8_t *dst, uint8_t *scratch)
{
    uint32_t x = (uint32_t)(tx * L->tile_w), y = (uint32_t)(ty * L->tile_h);
    size_t px = (size_t)L->tile_w * L->tile_h;
    if (plane >= 0) {
        if (TIFFReadEncodedTile(tif, TIFFComputeTile(tif, x, y, 0, (uint16_t)plane), dst, px) < 0)
            goto fail;
        return NULL;
    }
    if (L->rgba) {
        uint32_t *raster = (uint32_t *)scratch;
        if (!TIFFReadRGBATile(tif, x, y, raster)) goto fail;
        /* the RGBA tile interface puts the tile's first row last */
        for (int r = 0; r < L->tile_h; r++) {
            const uint32_t *src = raster + (size_t)(L->tile_h - 1 - r) * L->tile_w;
            uint8_t *out = dst + (size_t)r * L->tile_w * 3;
            for (int i = 0; i < L->tile_w; i++) {
                out[3 * i + 0] = (uint8_t)TIFFGetR(src[i]);
                out[3 * i + 1] = (uint8_t)TIFFGetG(src[i]);
                out[3 * i + 2] = (uint8_t)TIFFGetB(src[i]);
            }
        }
        return NULL;
    }
    if (!L->separate) {
        int spp = L->samples;
        if (TIFFReadEncodedTile(tif, TIFFComputeTile(tif, x, y, 0, 0), scratch, px * spp) < 0) goto fail;
        for (size_t i = 0; i < px; i++) {
            const uint8_t *s = scratch + i * spp;
            dst[3 * i + 0] = s[0];
            dst[3 * i + 1] = spp >= 3 ? s[1] : s[0];
            dst[3 * i + 2] = spp >= 3 ? s[2] : s[0];
        }
        return NULL;
    }
    int take = L->samples >= 3 ? 3 : 1;
    for (int s = 0; s < take; s++) {
        if (TIFFReadEncodedTile(tif, TIFFComputeTile(tif, x, y, 0, (uint16_t)s), scratch, px) < 0) goto fail;
        for (size_t i = 0; i < px; i++)
            for (int k = (take == 1 ? 0 : s); k < (take == 1 ? 3 : s + 1); k++) dst[3 * i + k] = scratch[i];
    }
    return NULL;
fail:
    return tt_error_new(TT_ERR_FORMAT, "tile cache: cannot decode tile (%d, %d) of %s (%s); a "
                        "corrupt or truncated file%s", tx, ty, file, tt_tiff_reason(errors),
                        L->sums ? "" : ": replace it with a whole copy");
}

/* Returns the decoded tile (from the LRU or the file; *tif opened lazily,
 * its errors into *errors, which lives as long as it). */
static tt_status get_tile(tt_tilecache *c, const char *file, uint64_t file_id, const tc_layout *L,
                          int plane, int tx, int ty, TIFF **tif, tt_tiff_errors *errors, tc_tile **out)
{
    uint32_t index = (uint32_t)(ty * L->tiles_x + tx);
    tc_tile *t = lru_find(c, file_id, plane, index);
    if (t) {
        c->stats.tile_hits++;
        lru_unlink(c, t);
        lru_push_front(c, t);
        *out = t;
        return NULL;
    }
    if (!*tif) {
        *tif = tt_tiff_open(file, "r", errors);
        if (!*tif)
            return tt_error_new(TT_ERR_IO, "tile cache: cannot open %s (%s)", file, tt_tiff_reason(errors));
    }
    TT_TRY(tt_read_fault("the tile cache entry", file));
    size_t px = (size_t)L->tile_w * L->tile_h;
    size_t bytes = px * (plane < 0 ? 3 : 1);
    t = tt_malloc(sizeof *t + bytes);
    /* scratch: a raw tile of all samples, or an RGBA raster */
    size_t scratch_bytes = px * (size_t)(L->samples > 4 ? L->samples : 4);
    uint8_t *scratch = plane < 0 ? tt_malloc(scratch_bytes) : NULL;
    if (!t || (plane < 0 && !scratch)) {
        free(t);
        free(scratch);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "tile cache: no host memory for a %d x %d tile of %s",
                            L->tile_w, L->tile_h, file);
    }
    t->data = (uint8_t *)(t + 1);
    tt_status status = decode_tile(*tif, errors, file, L, plane, tx, ty, t->data, scratch);
    free(scratch);
    if (status) {
        free(t);
        return status;
    }
    if (L->sums) {
        uint32_t index = TIFFComputeTile(*tif, (uint32_t)(tx * L->tile_w), (uint32_t)(ty * L->tile_h), 0,
                                         (uint16_t)(plane < 0 ? 0 : plane));
        if (index >= L->sum_count || tc_sum(t->data, bytes) != L->sums[index]) {
            free(t);
            return tt_error_new(TT_ERR_FORMAT, "tile cache: tile (%d, %d)%s of %s decodes to other "
                                "bytes than were written", tx, ty, plane < 0 ? "" : " of a mask plane",
                                file);
        }
    }
    c->stats.tile_reads++;
    t->file_id = file_id;
    t->plane = plane;
    t->tile = index;
    t->bytes = sizeof *t + bytes;
    c->stats.lru_bytes += t->bytes;
    if (c->stats.lru_bytes > c->stats.lru_peak_bytes) c->stats.lru_peak_bytes = c->stats.lru_bytes;
    lru_push_front(c, t);
    lru_trim(c, t);
    *out = t;
    return NULL;
}

/* Copies [x0, x0+w) x [y0, y0+h) of one file (RGB when plane < 0, else one
 * sample plane) into out (row stride w), `pad` outside the image. */
static tt_status read_region(tt_tilecache *c, const char *file, uint64_t file_id, const tc_layout *L,
                             int img_w, int img_h, int plane, int x0, int y0, int w, int h, uint8_t pad,
                             uint8_t *out)
{
    int bpp = plane < 0 ? 3 : 1;
    memset(out, pad, (size_t)w * h * bpp);
    int ax = x0 > 0 ? x0 : 0, ay = y0 > 0 ? y0 : 0;
    int bx = x0 + w < img_w ? x0 + w : img_w, by = y0 + h < img_h ? y0 + h : img_h;
    if (ax >= bx || ay >= by) return NULL;
    TIFF *tif = NULL;
    tt_tiff_errors errors;
    tt_status status = NULL;
    for (int ty = ay / L->tile_h; ty <= (by - 1) / L->tile_h; ty++) {
        for (int tx = ax / L->tile_w; tx <= (bx - 1) / L->tile_w; tx++) {
            tc_tile *t;
            TT_CHECK(get_tile(c, file, file_id, L, plane, tx, ty, &tif, &errors, &t));
            int sx = tx * L->tile_w > ax ? tx * L->tile_w : ax;
            int ex = (tx + 1) * L->tile_w < bx ? (tx + 1) * L->tile_w : bx;
            int sy = ty * L->tile_h > ay ? ty * L->tile_h : ay;
            int ey = (ty + 1) * L->tile_h < by ? (ty + 1) * L->tile_h : by;
            for (int yy = sy; yy < ey; yy++) {
                const uint8_t *src = t->data + ((size_t)(yy - ty * L->tile_h) * L->tile_w +
                                                (size_t)(sx - tx * L->tile_w)) * bpp;
                uint8_t *dst = out + ((size_t)(yy - y0) * w + (size_t)(sx - x0)) * bpp;
                memcpy(dst, src, (size_t)(ex - sx) * bpp);
            }
        }
    }
cleanup:
    if (tif) TIFFClose(tif);
    return status;
}

/* ---- create / destroy ----------------------------------------------------- */

tt_status tt_tilecache_create(const tt_tilecache_config *config, const tt_item_source *source,
                              tt_tilecache **out)
{
    *out = NULL;
    tt_status status = NULL;
    char dir[PATH_MAX];
    tt_status no_folder = NULL;
    if (config && config->dir && *config->dir) snprintf(dir, sizeof dir, "%s", config->dir);
    else if ((no_folder = tt_cache_path("tiles", dir, sizeof dir)))
        snprintf(dir, sizeof dir, "tiletrain-tiles"); /* no cache folder: the working one */
    tt_status_free(no_folder);
    if (source->count < 0 || source->classes < 1)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tile cache: a source of %d items and %d classes",
                            source->count, source->classes);
    tt_status made = tt_make_dirs(dir);
    if (made) return tt_error_prefix(made, "tile cache (choose another cache directory)");
    tt_tilecache *c = tt_calloc(1, sizeof *c);
    if (!c) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "tile cache: no host memory");
    c->dir = tt_strdup(dir);
    c->items = tt_calloc((size_t)source->count + 1, sizeof *c->items);
    if (!c->dir || !c->items) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "tile cache: no host memory for %d items", source->count);
        goto cleanup;
    }
    c->source = source;
    c->lru_limit = config && config->lru_bytes ? config->lru_bytes : TT_TILECACHE_DEFAULT_LRU_BYTES;
    if (config) c->warn = config->warn, c->warn_ctx = config->warn_ctx;
    c->max_pixels = config ? config->max_pixels : 0;
    *out = c;
cleanup:
    if (status) tt_tilecache_destroy(c);
    return status;
}

void tt_tilecache_destroy(tt_tilecache *cache)
{
    if (!cache) return;
    tt_tilecache_drop_tiles(cache);
    if (cache->items)
        for (int i = 0; i < cache->source->count; i++) {
            free(cache->items[i].image_file);
            free(cache->items[i].mask_file);
            free(cache->items[i].image_layout.sums);
            free(cache->items[i].mask_layout.sums);
            free(cache->items[i].fg_tile_counts);
            free(cache->items[i].fg_totals);
        }
    free(cache->items);
    free(cache->dir);
    free(cache);
}

const tt_item_source *tt_tilecache_source(const tt_tilecache *cache) { return cache->source; }

int tt_tilecache_planes(const tt_tilecache *cache) { return tc_planes(cache); }

void tt_tilecache_get_stats(const tt_tilecache *cache, tt_tilecache_stats *stats) { *stats = cache->stats; }

/* ---- items ----------------------------------------------------------------- */

static tt_status check_index(const tt_tilecache *c, int index)
{
    if (index < 0 || index >= c->source->count)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tile cache: item %d out of range (0..%d)", index,
                            c->source->count - 1);
    return NULL;
}

static tt_status item_header(tt_tilecache *c, int index, tc_item **out)
{
    TT_TRY(check_index(c, index));
    tc_item *it = &c->items[index];
    if (!it->have_header) {
        const char *path = c->source->image_path(c->source->ctx, index);
        struct stat st;
        if (stat(path, &st) != 0)
            return tt_error_new(TT_ERR_IO, "image %s: cannot open: %s; check the path", path, strerror(errno));
        TT_TRY(tt_image_info(path, &it->width, &it->height, &it->tiled_input));
        TT_TRY(tt_image_check_size(path, it->width, it->height, c->max_pixels));
        char real[PATH_MAX];
        if (!realpath(path, real)) snprintf(real, sizeof real, "%s", path);
        uint64_t key = tt_hash_bytes(TT_HASH_INIT, real, strlen(real));
        int64_t fields[4] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec,
                             TC_FORMAT_VERSION};
        it->image_key = tt_hash_bytes(key, fields, sizeof fields);
        it->have_header = 1;
    }
    *out = it;
    return NULL;
}

tt_status tt_tilecache_item_size(tt_tilecache *cache, int index, int *width, int *height)
{
    tc_item *it;
    TT_TRY(item_header(cache, index, &it));
    *width = it->width;
    *height = it->height;
    return NULL;
}

static tt_status item_image(tt_tilecache *c, int index, tc_item **out)
{
    tc_item *it;
    TT_TRY(item_header(c, index, &it));
    if (!it->image_file) {
        const char *path = c->source->image_path(c->source->ctx, index);
        if (it->tiled_input) {
            TT_TRY(tc_open_direct(c, path, it));
            c->stats.direct_inputs++;
        } else {
            TT_TRY(tc_ensure_image_entry(c, index, path, it));
        }
    }
    *out = it;
    return NULL;
}

static tt_status item_mask(tt_tilecache *c, int index, tc_item **out)
{
    tc_item *it;
    TT_TRY(item_header(c, index, &it));
    if (!it->mask_file) TT_TRY(tc_ensure_mask_entry(c, index, it));
    *out = it;
    return NULL;
}

tt_status tt_tilecache_entry_paths(tt_tilecache *cache, int index, const char **image_file,
                                   const char **mask_file)
{
    tc_item *it;
    TT_TRY(item_image(cache, index, &it));
    TT_TRY(item_mask(cache, index, &it));
    if (image_file) *image_file = it->image_file;
    if (mask_file) *mask_file = it->mask_file;
    return NULL;
}

/* An entry that failed a read (`failure`, TT_ERR_FORMAT: a tile that does
 * not decode or does not match its checksum) is deleted, its tiles dropped
 * and its name forgotten, so that the next read builds it again from the
 * source; the caller is warned.  Other failures, and tiled TIFF inputs
 * (the source itself), are returned as they are. */
static tt_status spoiled(tt_tilecache *c, tc_item *it, int mask, tt_status failure)
{
    char **file = mask ? &it->mask_file : &it->image_file;
    tc_layout *L = mask ? &it->mask_layout : &it->image_layout;
    if (tt_status_code(failure) != TT_ERR_FORMAT || !L->sums) return failure;
    uint64_t id = mask ? it->mask_key : it->image_key;
    for (tc_tile *t = c->mru, *next; t; t = next) {
        next = t->next;
        if (t->file_id != id) continue;
        lru_unlink(c, t);
        c->stats.lru_bytes -= t->bytes;
        free(t);
    }
    if (c->warn) {
        char message[1536];
        snprintf(message, sizeof message, "%s; the entry is deleted and built again from the source",
                 tt_status_message(failure));
        c->warn(c->warn_ctx, message);
    }
    tt_status_free(failure);
    remove(*file);
    free(*file);
    *file = NULL;
    free(L->sums);
    L->sums = NULL;
    if (mask) { /* counted from what may have been spoiled */
        free(it->fg_tile_counts), free(it->fg_totals);
        it->fg_tile_counts = NULL, it->fg_totals = NULL;
    }
    c->stats.entries_spoiled++;
    return NULL;
}

static tt_status read_image_once(tt_tilecache *cache, int index, int x0, int y0, int w, int h,
                                 uint8_t *rgb, tc_item **it)
{
    TT_TRY(item_image(cache, index, it));
    return read_region(cache, (*it)->image_file, (*it)->image_key, &(*it)->image_layout, (*it)->width,
                       (*it)->height, -1, x0, y0, w, h, 0, rgb);
}

tt_status tt_tilecache_read_image(tt_tilecache *cache, int index, int x0, int y0, int w, int h,
                                  uint8_t *rgb)
{
    tc_item *it = NULL;
    tt_status status = read_image_once(cache, index, x0, y0, w, h, rgb, &it);
    if (status && it && it->image_file && !(status = spoiled(cache, it, 0, status)))
        status = read_image_once(cache, index, x0, y0, w, h, rgb, &it);
    return status;
}

static tt_status read_mask_once(tt_tilecache *cache, int index, int x0, int y0, int w, int h,
                                uint8_t pad, uint8_t *planes, tc_item **it)
{
    TT_TRY(item_mask(cache, index, it));
    int n = tc_planes(cache);
    for (int p = 0; p < n; p++)
        TT_TRY(read_region(cache, (*it)->mask_file, (*it)->mask_key, &(*it)->mask_layout, (*it)->width,
                           (*it)->height, p, x0, y0, w, h, pad, planes + (size_t)p * w * h));
    return NULL;
}

tt_status tt_tilecache_read_mask(tt_tilecache *cache, int index, int x0, int y0, int w, int h,
                                 uint8_t pad, uint8_t *planes)
{
    tc_item *it = NULL;
    tt_status status = read_mask_once(cache, index, x0, y0, w, h, pad, planes, &it);
    if (status && it && it->mask_file && !(status = spoiled(cache, it, 1, status)))
        status = read_mask_once(cache, index, x0, y0, w, h, pad, planes, &it);
    return status;
}

/* ---- foreground ------------------------------------------------------------ */

/* The item's foreground index, counted once; a spoiled mask entry is
 * built again and counted (spoiled()). */
static tt_status item_foreground(tt_tilecache *c, int index, tc_item **it)
{
    TT_TRY(item_mask(c, index, it));
    if ((*it)->fg_totals) return NULL;
    tt_status status = tc_count_foreground(c, *it);
    if (status && !(status = spoiled(c, *it, 1, status))) {
        TT_TRY(item_mask(c, index, it));
        status = tc_count_foreground(c, *it);
    }
    return status;
}

tt_status tt_tilecache_fg_counts(tt_tilecache *cache, int index, uint64_t *present)
{
    tc_item *it;
    TT_TRY(item_foreground(cache, index, &it));
    memcpy(present, it->fg_totals, sizeof *present * (size_t)cache->source->classes);
    return NULL;
}

tt_status tt_tilecache_fg_pixel(tt_tilecache *cache, int index, int cls, uint64_t u, int *x, int *y)
{
    tc_item *it;
    TT_TRY(item_foreground(cache, index, &it));
    const tt_item_source *s = cache->source;
    if (cls < 0 || cls >= s->classes || u >= it->fg_totals[cls])
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tile cache: foreground pixel %llu of class %d "
                            "requested; item %d has %llu", (unsigned long long)u, cls, index,
                            (unsigned long long)(cls >= 0 && cls < s->classes ? it->fg_totals[cls] : 0));
    const tc_layout *L = &it->mask_layout;
    int tiles = L->tiles_x * L->tiles_y;
    const uint32_t *counts = it->fg_tile_counts + (size_t)cls * tiles;
    int t = 0;
    while (u >= counts[t]) u -= counts[t++];
    int tx = t % L->tiles_x, ty = t / L->tiles_x;
    int multi = s->mask_kind == TT_MASK_MULTI_LABEL;
    TIFF *tif = NULL;
    tt_tiff_errors errors;
    tc_tile *tile;
    tt_status status = get_tile(cache, it->mask_file, it->mask_key, L, multi ? cls : 0, tx, ty, &tif, &errors, &tile);
    if (tif) TIFFClose(tif);
    if (status) return status;
    int vw = it->width - tx * L->tile_w < L->tile_w ? it->width - tx * L->tile_w : L->tile_w;
    int vh = it->height - ty * L->tile_h < L->tile_h ? it->height - ty * L->tile_h : L->tile_h;
    for (int r = 0; r < vh; r++)
        for (int q = 0; q < vw; q++) {
            uint8_t v = tile->data[(size_t)r * L->tile_w + q];
            if (multi ? v != 0 : v == cls) {
                if (u == 0) {
                    *x = tx * L->tile_w + q;
                    *y = ty * L->tile_h + r;
                    return NULL;
                }
                u--;
            }
        }
    return tt_error_new(TT_ERR_INTERNAL, "tile cache: mask %s changed under the cache (tile %d has fewer "
                        "foreground pixels than counted)", it->mask_file, t);
}

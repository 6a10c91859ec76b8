/*
 * The tile cache: full-resolution images read a crop at a time.
 *
 * On first use, each item's image is decoded once (image.h) and written as
 * a tiled, deflate-compressed TIFF (256 x 256 tiles, RGB, interleaved) in
 * the cache directory; its mask planes (from the tt_item_source) likewise
 * (one 8-bit sample per plane, planar).  Entries are files named by a hash
 * of the source's real path, size and mtime (and, for masks, the source's
 * mask_key): a changed source gets a new entry, so a stale one is never
 * read.  Entries are written under a temporary name and renamed into place,
 * so processes sharing a cache never see a partial entry; two processes
 * building the same entry both succeed (the last rename wins, both equal).
 * Every tile of an entry carries a checksum of its decoded bytes: a tile
 * that fails to decode or to match it (a flipped bit on disk) spoils the
 * entry, which is deleted and built again from its source, with a warning
 * (config.warn), and the read goes on.
 *
 * A tiled TIFF input (GeoTIFF included) is read directly, tile by tile,
 * with no copy in the cache.  A crop reads only the tiles under it
 * (TIFFReadEncodedTile); decoded tiles are kept in a small LRU bounded in
 * bytes, so memory is bounded by the tiles in flight, not by image size.
 * (Building an entry decodes the whole source image once: that is what a
 * JPEG or PNG decoder needs.)
 *
 * Not thread-safe: one thread (the prefetch producer) uses a cache.  Give
 * each producer (training, validation) its own cache object; they may share
 * one directory.  Entries of changed sources are left behind, not deleted:
 * clear the directory to reclaim the space.
 */
#ifndef TT_DATA_TILECACHE_H
#define TT_DATA_TILECACHE_H

#include <stdint.h>

#include "data/source.h"
#include "tiletrain.h"

#define TT_TILECACHE_TILE 256                         /* cache entries' tile side */
#define TT_TILECACHE_DEFAULT_LRU_BYTES (64ULL << 20)  /* 64 MiB of decoded tiles */

typedef struct tt_tilecache tt_tilecache;

typedef struct tt_tilecache_config {
    const char *dir;      /* cache directory, created if missing; NULL: $TT_DATA_CACHE_DIR,
                           * else $XDG_CACHE_HOME/tiletrain/tiles, else ~/.cache/tiletrain/tiles */
    uint64_t lru_bytes;   /* bound on decoded tiles kept (0: the default above) */
    uint64_t max_pixels;  /* refuse larger images before decoding (0: image.h default) */
    /* Told (may be NULL) when an entry is found spoiled and rebuilt: a
     * tile that no longer decodes, or decodes to other bytes than were
     * written (each entry keeps a checksum of every tile). */
    void (*warn)(void *ctx, const char *message);
    void *warn_ctx;
} tt_tilecache_config;

typedef struct tt_tilecache_stats {
    uint64_t tile_reads;     /* tiles decoded from a file (one per plane for masks) */
    uint64_t tile_hits;      /* tiles served from the LRU */
    uint64_t lru_bytes;      /* bytes of decoded tiles held now */
    uint64_t lru_peak_bytes; /* highest lru_bytes seen */
    uint64_t entries_built;  /* cache entries this process wrote (images + masks) */
    uint64_t direct_inputs;  /* tiled TIFF inputs read in place */
    uint64_t entries_spoiled; /* entries found spoiled, deleted and built again */
} tt_tilecache_stats;

/* Opens a cache over a source (borrowed: it must outlive the cache).
 * Nothing is decoded yet. */
tt_status tt_tilecache_create(const tt_tilecache_config *config, const tt_item_source *source,
                              tt_tilecache **out);
void tt_tilecache_destroy(tt_tilecache *cache);

const tt_item_source *tt_tilecache_source(const tt_tilecache *cache);
/* Mask planes per item: 1 for class-index masks, `classes` for multi-label. */
int tt_tilecache_planes(const tt_tilecache *cache);

/* The item's size, from the image header (no decode, no cache entry). */
tt_status tt_tilecache_item_size(tt_tilecache *cache, int index, int *width, int *height);

/* Copies the region [x0, x0+w) x [y0, y0+h) of the item's image into rgb
 * ((h, w, 3) interleaved).  The region may extend past the image (or lie
 * outside it): those pixels are 0.  Builds the cache entry on first use. */
tt_status tt_tilecache_read_image(tt_tilecache *cache, int index, int x0, int y0, int w, int h,
                                  uint8_t *rgb);

/* Copies the same region of every mask plane into planes ((planes, h, w)).
 * Pixels past the image are `pad` (255 = ignore for class-index masks, 0
 * for multi-label ones: the sampler's convention). */
tt_status tt_tilecache_read_mask(tt_tilecache *cache, int index, int x0, int y0, int w, int h,
                                 uint8_t pad, uint8_t *planes);

/* Foreground classes of an item: multi-label planes 0..classes-1, or
 * class-index values 1..classes-1 (0 is background, 255 ignore).
 * Counts are taken once per item per process by streaming the mask tiles.
 * present[c] (classes entries) is set to the pixel count of class c. */
tt_status tt_tilecache_fg_counts(tt_tilecache *cache, int index, uint64_t *present);

/* A uniformly chosen pixel of foreground class `cls` (as numbered above),
 * given u in [0, count of that class): the u-th such pixel in tile order.
 * Reads only the one mask tile that holds it. */
tt_status tt_tilecache_fg_pixel(tt_tilecache *cache, int index, int cls, uint64_t u, int *x,
                                int *y);

void tt_tilecache_get_stats(const tt_tilecache *cache, tt_tilecache_stats *stats);
/* Drops every decoded tile (stats stay). */
void tt_tilecache_drop_tiles(tt_tilecache *cache);

/* The files holding the item's pixels (its image entry, or the source
 * itself for a tiled TIFF input) and its mask entry; building them if
 * needed.  For tests and diagnostics. */
tt_status tt_tilecache_entry_paths(tt_tilecache *cache, int index, const char **image_file,
                                   const char **mask_file);

#endif

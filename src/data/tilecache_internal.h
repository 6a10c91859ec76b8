/*
 * Shared between tilecache.c (reads, LRU), tilecache_write.c (building
 * and validating entries) and tilecache_index.c (counting foreground).  Not a public header.
 */
#ifndef TT_DATA_TILECACHE_INTERNAL_H
#define TT_DATA_TILECACHE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "data/tilecache.h"

/* Bumped whenever the entry layout changes: part of every key. */
#define TC_FORMAT_VERSION 2

/* How a file's tiles are laid out (a cache entry, or a tiled TIFF input). */
typedef struct tc_layout {
    int tile_w, tile_h;
    int tiles_x, tiles_y;
    int samples;  /* samples per pixel */
    int separate; /* PLANARCONFIG_SEPARATE */
    int rgba;     /* decode through TIFFReadRGBATile (not 8-bit gray/RGB) */
    /* a cache entry: the checksum of each tile's decoded bytes (TIFF tile
     * index order, planes included), checked as the tile is decoded; NULL
     * for a tiled TIFF input read in place (the source itself) */
    uint32_t *sums;
    uint32_t sum_count;
} tc_layout;

typedef struct tc_item {
    int have_header;
    int width, height;
    int tiled_input;          /* the source is a tiled TIFF, read in place */
    uint64_t image_key;       /* real path, size, mtime, format version */
    char *image_file;         /* entry (or the source for tiled inputs); NULL until built */
    tc_layout image_layout;
    uint64_t mask_key;        /* image_key + the source's mask_key + classes */
    char *mask_file;
    tc_layout mask_layout;
    uint32_t *fg_tile_counts; /* (classes, tiles) foreground pixels per class and tile */
    uint64_t *fg_totals;      /* (classes) */
} tc_item;

typedef struct tc_tile {
    uint64_t file_id;
    int plane;       /* -1: RGB */
    uint32_t tile;   /* ty * tiles_x + tx */
    size_t bytes;    /* counted against the bound, header included */
    uint8_t *data;   /* (tile_h, tile_w, 3) or (tile_h, tile_w) */
    struct tc_tile *prev, *next;
} tc_tile;

struct tt_tilecache {
    char *dir;
    const tt_item_source *source;
    uint64_t lru_limit;
    uint64_t max_pixels;
    tc_item *items;          /* (count) */
    tc_tile *mru, *lru;      /* most / least recently used ends */
    void (*warn)(void *ctx, const char *message);
    void *warn_ctx;
    tt_tilecache_stats stats;
};

/* Mask planes per item: 1 class-index plane, or one 0/1 plane per class. */
static inline int tc_planes(const tt_tilecache *c)
{
    return c->source->mask_kind == TT_MASK_CLASS_INDEX ? 1 : c->source->classes;
}

/* The private TIFF tag an entry keeps its tiles' checksums in (LONG x
 * tiles x planes), and the checksum: FNV-1a's low 32 bits. */
#define TC_TAG_SUMS 65111
static inline uint32_t tc_sum(const uint8_t *data, size_t bytes)
{
    return (uint32_t)tt_hash_bytes(TT_HASH_INIT, data, bytes);
}

/* Fills it->image_file and image_layout for a tiled TIFF source. */
tt_status tc_open_direct(tt_tilecache *c, const char *path, tc_item *it);
/* Finds or builds the image entry of an item. */
tt_status tc_ensure_image_entry(tt_tilecache *c, int index, const char *path, tc_item *it);
/* Finds or builds the mask entry of an item. */
tt_status tc_ensure_mask_entry(tt_tilecache *c, int index, tc_item *it);
/* Fills fg_tile_counts and fg_totals by streaming the mask entry's tiles
 * (tilecache_index.c). */
tt_status tc_count_foreground(tt_tilecache *c, tc_item *it);

#endif

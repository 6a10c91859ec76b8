/*
 * Tile cache entries: finding, validating and building them (tiled,
 * deflate-compressed TIFF written under a temporary name, fsynced, then
 * renamed into place) and reading the layout of tiled TIFF inputs.  The
 * foreground index is in tilecache_index.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tiffio.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/hash.h"
#include "core/status.h"
#include "data/image.h"
#include "data/image_probe.h"
#include "data/tilecache_internal.h"

static void layout_for(tc_layout *L, int width, int height, int tile_w, int tile_h)
{
    L->tile_w = tile_w;
    L->tile_h = tile_h;
    L->tiles_x = (width + tile_w - 1) / tile_w;
    L->tiles_y = (height + tile_h - 1) / tile_h;
}

tt_status tc_open_direct(tt_tilecache *c, const char *path, tc_item *it)
{
    (void)c;
    tt_tiff_errors errors;
    TIFF *tif = tt_tiff_open(path, "r", &errors);
    if (!tif) return tt_error_new(TT_ERR_FORMAT, "image %s: not a readable TIFF (%s)", path, tt_tiff_reason(&errors));
    tt_status status = NULL;
    uint32_t tw = 0, th = 0;
    uint16_t bits = 8, spp = 1, planar = PLANARCONFIG_CONTIG, photometric = PHOTOMETRIC_MINISBLACK;
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
    if (tw == 0 || th == 0 || tw > 16384 || th > 16384) {
        status = tt_error_new(TT_ERR_FORMAT, "image %s: tiled TIFF with tiles of %u x %u", path,
                              (unsigned)tw, (unsigned)th);
        goto cleanup;
    }
    tc_layout *L = &it->image_layout;
    layout_for(L, it->width, it->height, (int)tw, (int)th);
    L->samples = spp;
    L->separate = planar == PLANARCONFIG_SEPARATE;
    /* 8-bit gray or RGB samples are copied straight from the tile; anything
     * else (palette, YCbCr, 16-bit, min-is-white) goes through libtiff's RGBA
     * conversion, which wants contiguous samples or handles them itself */
    L->rgba = !(bits == 8 && (photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_RGB) &&
                (photometric != PHOTOMETRIC_RGB || spp >= 3));
    char why[1024] = "";
    if (L->rgba && !TIFFRGBAImageOK(tif, why)) {
        status = tt_error_new(TT_ERR_UNSUPPORTED, "image %s: TIFF layout not supported (%s)", path, why);
        goto cleanup;
    }
    it->image_file = tt_strdup(path);
    if (!it->image_file) status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "tile cache: no host memory");
cleanup:
    TIFFClose(tif);
    return status;
}

/* A complete entry of the expected shape, its tiles' checksums read into
 * L->sums; 0 when missing, damaged in its header, or without them. */
static int entry_valid(const char *file, int width, int height, int samples, int planes,
                       tc_layout *L)
{
    if (access(file, R_OK) != 0) return 0;
    tt_tiff_errors errors;
    TIFF *tif = tt_tiff_open(file, "r", &errors);
    if (!tif) return 0;
    uint32_t w = 0, h = 0, tw = 0, th = 0, n = 0;
    uint16_t spp = 0;
    const uint32_t *sums = NULL;
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    const TIFFField *f = TIFFFieldWithTag(tif, TC_TAG_SUMS);
    int ok = (int)w == width && (int)h == height && tw == TT_TILECACHE_TILE &&
             th == TT_TILECACHE_TILE && spp == samples && f && TIFFFieldPassCount(f) &&
             TIFFFieldReadCount(f) == TIFF_VARIABLE2 && TIFFFieldDataType(f) == TIFF_LONG &&
             TIFFGetField(tif, TC_TAG_SUMS, &n, &sums) && sums &&
             n == (uint32_t)(L->tiles_x * L->tiles_y * planes);
    if (ok) {
        free(L->sums);
        L->sums = tt_malloc((size_t)n * sizeof *L->sums);
        ok = L->sums != NULL;
        if (ok) memcpy(L->sums, sums, (size_t)n * sizeof *L->sums), L->sum_count = n;
    }
    TIFFClose(tif);
    return ok;
}

/* One cache entry to write (see write_entry). */
typedef struct tiff_entry {
    const char *final;
    int width, height, samples, separate;
    const uint8_t *data;
} tiff_entry;

/* The entry as a tiled TIFF into f (libtiff writes through a copy of its
 * descriptor, which TIFFClose closes). */
static tt_status write_tiff(FILE *f, void *ctx)
{
    const tiff_entry *e = ctx;
    const char *temp = e->final; /* what the messages name */
    int width = e->width, height = e->height, samples = e->samples, separate = e->separate;
    const uint8_t *data = e->data;
    int tile = TT_TILECACHE_TILE;
    uint64_t raw = (uint64_t)width * height * samples;
    uint8_t *buf = tt_malloc((size_t)tile * tile * (separate ? 1 : samples));
    uint16_t *extra = NULL;
    uint32_t count = 0, *sums = NULL;
    tt_status status = NULL;
    tt_tiff_errors errors;
    int fd = dup(fileno(f));
    TIFF *tif = fd >= 0 ? tt_tiff_fdopen(fd, temp, raw > (1ULL << 31) ? "w8" : "w", &errors) : NULL;
    if (!tif && fd >= 0) close(fd);
    if (!tif || !buf) {
        status = tt_error_new(TT_ERR_IO, "tile cache: cannot write %s (%s); check the cache directory's "
                              "space and permissions", temp,
                              tif ? "no memory" : fd < 0 ? strerror(errno) : tt_tiff_reason(&errors));
        goto cleanup;
    }
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)width);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)height);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)samples);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, separate ? PHOTOMETRIC_MINISBLACK : PHOTOMETRIC_RGB);
    if (separate && samples > 1) {
        extra = tt_calloc((size_t)samples, sizeof *extra); /* EXTRASAMPLE_UNSPECIFIED = 0 */
        if (extra) TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, (uint16_t)(samples - 1), extra);
    }
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, (uint32_t)tile);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, (uint32_t)tile);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
    TIFFSetField(tif, TIFFTAG_PREDICTOR, PREDICTOR_HORIZONTAL);
    TIFFSetField(tif, TIFFTAG_ZIPQUALITY, 3); /* fast: a local cache, not an archive */
    int planes = separate ? samples : 1, bpp = separate ? 1 : samples;
    count = (uint32_t)TIFFNumberOfTiles(tif);
    sums = tt_calloc(count, sizeof *sums);
    static const TIFFFieldInfo sums_field = {TC_TAG_SUMS, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_LONG,
                                             FIELD_CUSTOM, 1, 1, (char *)"TiletrainTileSums"};
    if (!sums || TIFFMergeFieldInfo(tif, &sums_field, 1) != 0) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "tile cache: no host memory for %s", temp);
        goto cleanup;
    }
    for (int p = 0; p < planes; p++)
        for (int ty = 0; ty * tile < height; ty++)
            for (int tx = 0; tx * tile < width; tx++) {
                memset(buf, 0, (size_t)tile * tile * bpp);
                int vw = width - tx * tile < tile ? width - tx * tile : tile;
                int vh = height - ty * tile < tile ? height - ty * tile : tile;
                const uint8_t *src = data + (size_t)p * width * height;
                for (int r = 0; r < vh; r++)
                    memcpy(buf + (size_t)r * tile * bpp,
                           src + ((size_t)(ty * tile + r) * width + (size_t)tx * tile) * bpp, (size_t)vw * bpp);
                uint32_t index = TIFFComputeTile(tif, (uint32_t)(tx * tile), (uint32_t)(ty * tile), 0, (uint16_t)p);
                if (index < count) sums[index] = tc_sum(buf, (size_t)tile * tile * bpp);
                if (TIFFWriteEncodedTile(tif, index, buf, (tmsize_t)tile * tile * bpp) < 0) {
                    status = tt_error_new(TT_ERR_IO, "tile cache: writing %s failed (%s); check the cache "
                                          "directory's space", temp, tt_tiff_reason(&errors));
                    goto cleanup;
                }
            }
    if (!TIFFSetField(tif, TC_TAG_SUMS, count, sums) || !TIFFFlush(tif)) {
        status = tt_error_new(TT_ERR_IO, "tile cache: flushing %s failed (%s)", temp, tt_tiff_reason(&errors));
        goto cleanup;
    }
cleanup:
    if (tif) TIFFClose(tif);
    free(sums);
    free(extra);
    free(buf);
    return status;
}

/* Writes data as a tiled TIFF at `final`, atomically (tt_file_write_atomic).
 * separate = 0: data is (h, w, samples) RGB; 1: data is (samples, h, w)
 * planes. */
static tt_status write_entry(tt_tilecache *c, const char *final, int width, int height, int samples,
                             int separate, const uint8_t *data)
{
    tiff_entry e = {final, width, height, samples, separate, data};
    tt_status status = tt_file_write_atomic(final, write_tiff, &e);
    if (status) return tt_error_prefix(status, "tile cache");
    c->stats.entries_built++;
    return NULL;
}

tt_status tc_ensure_image_entry(tt_tilecache *c, int index, const char *path, tc_item *it)
{
    (void)index;
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/img-%016llx.tif", c->dir, (unsigned long long)it->image_key);
    tc_layout *L = &it->image_layout;
    layout_for(L, it->width, it->height, TT_TILECACHE_TILE, TT_TILECACHE_TILE);
    L->samples = 3;
    if (!entry_valid(file, it->width, it->height, 3, 1, L)) {
        tt_image image;
        TT_TRY(tt_image_load(path, c->max_pixels, &image));
        tt_status status = NULL;
        if (image.width != it->width || image.height != it->height)
            status = tt_error_new(TT_ERR_FORMAT, "image %s: header says %d x %d, pixels are %d x %d", path,
                                  it->width, it->height, image.width, image.height);
        else
            status = write_entry(c, file, image.width, image.height, 3, 0, image.pixels);
        tt_image_free(&image);
        if (!status && !entry_valid(file, it->width, it->height, 3, 1, L))
            status = tt_error_new(TT_ERR_IO, "%s: written, but it does not read back whole; check "
                                  "the cache directory's disk", file);
        if (status) return tt_error_prefix(status, "caching image %s", path);
    }
    it->image_file = tt_strdup(file);
    return it->image_file ? NULL : tt_error_new(TT_ERR_OUT_OF_MEMORY, "tile cache: no host memory");
}

tt_status tc_ensure_mask_entry(tt_tilecache *c, int index, tc_item *it)
{
    const tt_item_source *s = c->source;
    int planes = tc_planes(c);
    uint64_t key = s->mask_key ? s->mask_key(s->ctx, index) : 0;
    int64_t fields[4] = {(int64_t)key, s->classes, (int64_t)s->mask_kind, planes};
    it->mask_key = tt_hash_bytes(it->image_key ^ 0x6d61736bULL, fields, sizeof fields);
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/mask-%016llx.tif", c->dir, (unsigned long long)it->mask_key);
    tc_layout *L = &it->mask_layout;
    layout_for(L, it->width, it->height, TT_TILECACHE_TILE, TT_TILECACHE_TILE);
    L->samples = planes;
    L->separate = 1;
    if (!entry_valid(file, it->width, it->height, planes, planes, L)) {
        size_t bytes = (size_t)planes * it->width * it->height;
        uint8_t *data = tt_calloc(bytes ? bytes : 1, 1);
        if (!data)
            return tt_error_new(TT_ERR_OUT_OF_MEMORY, "tile cache: no host memory for the %d-plane mask of %s",
                                planes, s->name(s->ctx, index));
        tt_status status = s->mask(s->ctx, index, it->width, it->height, data);
        if (!status) status = write_entry(c, file, it->width, it->height, planes, 1, data);
        free(data);
        if (!status && !entry_valid(file, it->width, it->height, planes, planes, L))
            status = tt_error_new(TT_ERR_IO, "%s: written, but it does not read back whole; check "
                                  "the cache directory's disk", file);
        if (status) return tt_error_prefix(status, "caching the mask of %s", s->name(s->ctx, index));
    }
    it->mask_file = tt_strdup(file);
    return it->mask_file ? NULL : tt_error_new(TT_ERR_OUT_OF_MEMORY, "tile cache: no host memory");
}

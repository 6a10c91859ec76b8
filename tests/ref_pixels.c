/* Test support for the data side's pixel half; see ref_pixels.h. */
#include "ref_pixels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stb_image_write.h>
#include <tiffio.h>

#include "core/status.h"
#include "data/rng.h"

uint8_t *rp_make_rgb(int w, int h, uint64_t seed)
{
    uint8_t *rgb = malloc((size_t)w * h * 3);
    if (!rgb) return NULL;
    tt_rng rng = tt_rng_from(seed, 1, 2);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            int noise = (int)tt_rng_below(&rng, 24);
            p[0] = (uint8_t)((x * 255 / (w > 1 ? w - 1 : 1) + noise) & 255);
            p[1] = (uint8_t)((y * 255 / (h > 1 ? h - 1 : 1) + noise) & 255);
            p[2] = (uint8_t)(((x ^ y) * 7 + (int)(seed % 97) + noise) & 255);
        }
    return rgb;
}

int rp_write_png(const char *path, int w, int h, const uint8_t *rgb)
{
    return stbi_write_png(path, w, h, 3, rgb, w * 3);
}

int rp_write_jpg(const char *path, int w, int h, const uint8_t *rgb, int quality)
{
    return stbi_write_jpg(path, w, h, 3, rgb, quality);
}

int rp_write_bmp(const char *path, int w, int h, const uint8_t *rgb) { return stbi_write_bmp(path, w, h, 3, rgb); }

int rp_write_tiff(const char *path, int w, int h, const uint8_t *rgb, int tile_w, int tile_h, int separate)
{
    TIFF *tif = TIFFOpen(path, "w");
    if (!tif) return 0;
    int ok = 1;
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)h);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 3);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
    if (tile_w) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, (uint32_t)tile_w);
        TIFFSetField(tif, TIFFTAG_TILELENGTH, (uint32_t)tile_h);
        int planes = separate ? 3 : 1, bpp = separate ? 1 : 3;
        uint8_t *buf = malloc((size_t)tile_w * tile_h * bpp);
        for (int p = 0; p < planes && ok; p++)
            for (int ty = 0; ty < h && ok; ty += tile_h)
                for (int tx = 0; tx < w && ok; tx += tile_w) {
                    memset(buf, 0, (size_t)tile_w * tile_h * bpp);
                    for (int r = 0; r < tile_h && ty + r < h; r++)
                        for (int q = 0; q < tile_w && tx + q < w; q++)
                            for (int k = 0; k < bpp; k++)
                                buf[((size_t)r * tile_w + q) * bpp + k] =
                                    rgb[((size_t)(ty + r) * w + tx + q) * 3 + (separate ? p : k)];
                    ok = TIFFWriteTile(tif, buf, (uint32_t)tx, (uint32_t)ty, 0, (uint16_t)p) >= 0;
                }
        free(buf);
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 16);
        uint8_t *row = malloc((size_t)w);
        for (int p = 0; p < (separate ? 3 : 1) && ok; p++)
            for (int y = 0; y < h && ok; y++) {
                if (separate) {
                    for (int x = 0; x < w; x++) row[x] = rgb[((size_t)y * w + x) * 3 + p];
                    ok = TIFFWriteScanline(tif, row, (uint32_t)y, (uint16_t)p) >= 0;
                } else {
                    ok = TIFFWriteScanline(tif, (void *)(rgb + (size_t)y * w * 3), (uint32_t)y, 0) >= 0;
                }
            }
        free(row);
    }
    TIFFClose(tif);
    return ok;
}

/* ---- the in-memory source -------------------------------------------------- */

static int planes_of(const rp_source *s) { return s->kind == TT_MASK_CLASS_INDEX ? 1 : s->classes; }

static const char *src_name(void *ctx, int i) { return ((rp_source *)ctx)->names[i]; }
static const char *src_path(void *ctx, int i) { return ((rp_source *)ctx)->paths[i]; }
static uint64_t src_key(void *ctx, int i) { return ((rp_source *)ctx)->mask_keys[i]; }

static tt_status src_mask(void *ctx, int i, int w, int h, uint8_t *planes)
{
    rp_source *s = ctx;
    s->mask_calls++;
    if (w != s->widths[i] || h != s->heights[i])
        return tt_error_new(TT_ERR_FORMAT, "test source: mask of %s is %d x %d, asked for %d x %d", s->names[i],
                            s->widths[i], s->heights[i], w, h);
    memcpy(planes, s->masks[i], (size_t)planes_of(s) * w * h);
    return NULL;
}

void rp_source_init(rp_source *s, int classes, tt_mask_kind kind)
{
    memset(s, 0, sizeof *s);
    s->classes = classes;
    s->kind = kind;
    s->source.ctx = s;
    s->source.classes = classes;
    s->source.mask_kind = kind;
    s->source.name = src_name;
    s->source.image_path = src_path;
    s->source.mask = src_mask;
    s->source.mask_key = src_key;
}

void rp_source_add(rp_source *s, const char *name, const char *path, int w, int h, const uint8_t *mask)
{
    int i = s->count++;
    snprintf(s->names[i], sizeof s->names[i], "%s", name);
    snprintf(s->paths[i], sizeof s->paths[i], "%s", path);
    s->widths[i] = w;
    s->heights[i] = h;
    size_t bytes = (size_t)planes_of(s) * w * h;
    s->masks[i] = malloc(bytes);
    if (mask) memcpy(s->masks[i], mask, bytes);
    else memset(s->masks[i], 0, bytes);
    s->mask_keys[i] = 1000 + (uint64_t)i;
    s->source.count = s->count;
}

void rp_source_free(rp_source *s)
{
    for (int i = 0; i < s->count; i++) free(s->masks[i]);
    s->count = 0;
}

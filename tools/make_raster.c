/*
 * make_raster: a synthetic RGB scene of any size as a tiled, compressed
 * GeoTIFF (BigTIFF above 2 GiB), made row by row in bounded memory, for
 * tools/bench_raster.sh; optionally the same pixels cut into PNG tiles.
 * A development tool: built with the project, never installed.
 *
 *   make_raster OUT.tif WIDTH HEIGHT [PNG_DIR TILE]
 *   make_raster --pair DIR WIDTH HEIGHT [BANDS]
 *
 * The scene: smooth bright blobs ("clouds") on a darker textured ground,
 * the same pixels whatever the cut; georeferenced in UTM zone 33N with
 * 10 m pixels.  --pair writes a raster data set (data/raster_set.h):
 * DIR/images/scene.tif, BANDS (default 4) bands of 16-bit samples (the
 * scene's colours scaled to 0..10200, as reflectance x 10^4, and a fourth
 * and further bands mixing them), GDAL_NODATA 0 with the leftmost 64
 * columns nodata, and DIR/masks/scene.tif, its labels on the same grid:
 * 1 under a cloud, 0 elsewhere.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image_write.h>

#include "core/fs.h"
#include "core/status.h"
#include "data/raster.h"

static uint8_t pixel(long x, long y, int c)
{
    double cloud = sin(x * 0.0031 + 1.3 * sin(y * 0.0017)) * cos(y * 0.0023 - 0.7 * sin(x * 0.0011));
    double ground = 60 + 25 * sin(x * 0.05 + c) * sin(y * 0.043) + 10 * ((x * 7 + y * 13 + c) % 5);
    double v = cloud > 0.35 ? 200 + 40 * cloud : ground;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static tt_georef utm_georef(void)
{
    static const double scale[3] = {10, 10, 0}, ties[6] = {0, 0, 0, 400000, 5000000, 0};
    static const uint16_t keys[] = {1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32633};
    tt_georef g = {0};
    g.pixel_scale = (double *)scale, g.pixel_scale_count = 3;
    g.tiepoints = (double *)ties, g.tiepoint_count = 6;
    g.keys = (uint16_t *)keys, g.key_count = sizeof keys / sizeof keys[0];
    return g;
}

static int is_cloud(long x, long y) { return pixel(x, y, 0) >= 200; }

/* Sample b of a pixel of the 16-bit scene (0: nodata). */
static uint16_t sample16(long x, long y, int b)
{
    if (x < 64) return 0;
    int v = b < 3 ? pixel(x, y, b) : (pixel(x, y, b % 3) + pixel(x, y, (b + 1) % 3)) / 2;
    return (uint16_t)(1 + v * 40);
}

static tt_status write_pair(const char *dir, int w, int h, int bands)
{
    char images[4096], masks[4096];
    snprintf(images, sizeof images, "%s/images/scene.tif", dir);
    snprintf(masks, sizeof masks, "%s/masks/scene.tif", dir);
    TT_TRY(tt_make_parent_dirs(images));
    TT_TRY(tt_make_parent_dirs(masks));
    tt_georef g = utm_georef();
    tt_raster_writer *image = NULL, *mask = NULL;
    g.nodata = (char *)"0";
    TT_TRY(tt_raster_writer_open(images, w, h, bands, TT_SAMPLE_U16, &g, &image));
    g.nodata = NULL;
    tt_status st = tt_raster_writer_open(masks, w, h, 1, TT_SAMPLE_U8, &g, &mask);
    int rows = 64;
    uint16_t *band = malloc((size_t)rows * w * bands * sizeof *band);
    uint8_t *labels = malloc((size_t)rows * w);
    if (!st && (!band || !labels)) st = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int y0 = 0; !st && y0 < h; y0 += rows) {
        int n = h - y0 < rows ? h - y0 : rows;
        for (int y = 0; y < n; y++)
            for (int x = 0; x < w; x++) {
                for (int b = 0; b < bands; b++)
                    band[((size_t)y * w + x) * bands + b] = sample16(x, y0 + y, b);
                labels[(size_t)y * w + x] = (uint8_t)is_cloud(x, y0 + y);
            }
        st = tt_raster_writer_rows(image, n, band);
        if (!st) st = tt_raster_writer_rows(mask, n, labels);
    }
    free(band);
    free(labels);
    if (!st) st = tt_raster_writer_close(image);
    else tt_raster_writer_abort(image);
    if (!st) st = tt_raster_writer_close(mask);
    else tt_raster_writer_abort(mask);
    return st;
}

int main(int argc, char **argv)
{
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "--pair") == 0) {
        int w = atoi(argv[3]), h = atoi(argv[4]), bands = argc == 6 ? atoi(argv[5]) : 4;
        if (w < 1 || h < 1 || bands < 1 || bands > 64) {
            fprintf(stderr, "make_raster: sizes must be positive, bands 1 to 64\n");
            return 2;
        }
        tt_status st = write_pair(argv[2], w, h, bands);
        if (st) {
            fprintf(stderr, "make_raster: %s\n", tt_status_message(st));
            tt_status_free(st);
            return 1;
        }
        return 0;
    }
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: make_raster OUT.tif WIDTH HEIGHT [PNG_DIR TILE]\n"
                        "       make_raster --pair DIR WIDTH HEIGHT [BANDS]\n");
        return 2;
    }
    int w = atoi(argv[2]), h = atoi(argv[3]), tile = argc == 6 ? atoi(argv[5]) : 0;
    const char *png_dir = argc == 6 ? argv[4] : NULL;
    if (w < 1 || h < 1 || (png_dir && tile < 1)) {
        fprintf(stderr, "make_raster: sizes must be positive\n");
        return 2;
    }
    tt_georef g = utm_georef();
    tt_raster_writer *out = NULL;
    tt_status st = tt_raster_writer_open(argv[1], w, h, 3, TT_SAMPLE_U8, &g, &out);
    int rows = png_dir ? tile : 64;
    uint8_t *band = malloc((size_t)rows * w * 3);
    if (!band) st = st ? st : tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int y0 = 0; !st && y0 < h; y0 += rows) {
        int n = h - y0 < rows ? h - y0 : rows;
        for (int y = 0; y < n; y++)
            for (int x = 0; x < w; x++)
                for (int c = 0; c < 3; c++) band[((size_t)y * w + x) * 3 + c] = pixel(x, y0 + y, c);
        st = tt_raster_writer_rows(out, n, band);
        for (int x0 = 0; !st && png_dir && x0 < w; x0 += tile) {
            char path[4096];
            int tw = w - x0 < tile ? w - x0 : tile;
            snprintf(path, sizeof path, "%s/r%05d_c%05d.png", png_dir, y0, x0);
            if (!stbi_write_png(path, tw, n, 3, band + (size_t)x0 * 3, w * 3))
                st = tt_error_new(TT_ERR_IO, "cannot write %s", path);
        }
    }
    free(band);
    if (!st) st = tt_raster_writer_close(out);
    else tt_raster_writer_abort(out);
    if (st) {
        fprintf(stderr, "make_raster: %s\n", tt_status_message(st));
        tt_status_free(st);
        return 1;
    }
    return 0;
}

/*
 * make_raster: a synthetic RGB scene of any size as a tiled, compressed
 * GeoTIFF (BigTIFF above 2 GiB), made row by row in bounded memory, for
 * tools/bench_raster.sh; optionally the same pixels cut into PNG tiles.
 * A development tool: built with the project, never installed.
 *
 *   make_raster OUT.tif WIDTH HEIGHT [PNG_DIR TILE]
 *
 * The scene: smooth bright blobs ("clouds") on a darker textured ground,
 * the same pixels whatever the cut; georeferenced in UTM zone 33N with
 * 10 m pixels.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image_write.h>

#include "core/status.h"
#include "data/raster.h"

static uint8_t pixel(long x, long y, int c)
{
    double cloud = sin(x * 0.0031 + 1.3 * sin(y * 0.0017)) * cos(y * 0.0023 - 0.7 * sin(x * 0.0011));
    double ground = 60 + 25 * sin(x * 0.05 + c) * sin(y * 0.043) + 10 * ((x * 7 + y * 13 + c) % 5);
    double v = cloud > 0.35 ? 200 + 40 * cloud : ground;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: make_raster OUT.tif WIDTH HEIGHT [PNG_DIR TILE]\n");
        return 2;
    }
    int w = atoi(argv[2]), h = atoi(argv[3]), tile = argc == 6 ? atoi(argv[5]) : 0;
    const char *png_dir = argc == 6 ? argv[4] : NULL;
    if (w < 1 || h < 1 || (png_dir && tile < 1)) {
        fprintf(stderr, "make_raster: sizes must be positive\n");
        return 2;
    }
    static const double scale[3] = {10, 10, 0}, ties[6] = {0, 0, 0, 400000, 5000000, 0};
    static const uint16_t keys[] = {1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32633};
    tt_georef g = {0};
    g.pixel_scale = (double *)scale, g.pixel_scale_count = 3;
    g.tiepoints = (double *)ties, g.tiepoint_count = 6;
    g.keys = (uint16_t *)keys, g.key_count = sizeof keys / sizeof keys[0];
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

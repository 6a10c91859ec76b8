/*
 * Cloud-Optimized GeoTIFF output (tt_raster_writer_open_cog, data/raster.h),
 * checked through libtiff as GDAL's COG validator checks a file: the
 * raster's directory at offset 8 (16 in BigTIFF), the overviews'
 * directories after it in order of size, every directory before every
 * tile, the tiles of each level in row-major order and the levels'
 * tiles smallest first, the full resolution last; overviews marked
 * SUBFILETYPE reduced-image, at factors 2, 4, ... until one fits a tile;
 * the georeference on the main image; overview pixels the mode of 2 x 2
 * class indices (255 left out unless all four are) or the mean of float
 * probabilities, odd edges included; rows missing leave no file.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tiffio.h>

#include "data/raster.h"
#include "harness.h"

static char dir[] = "/tmp/tt-rcog-XXXXXX";

typedef struct level_info {
    int width, height, reduced;
    uint64_t ifd;                    /* its directory's offset */
    uint64_t first_tile, last_tile_end;
    int tiles_in_order;
} level_info;

/* The directories of path, and level `want`'s samples into *pixels
 * (malloc'd; width x height x bands of `bytes` each). */
static int read_levels(const char *path, level_info *levels, int most, int want, int bytes,
                       uint8_t **pixels)
{
    TIFF *tif = TIFFOpen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tif);
    int count = TIFFNumberOfDirectories(tif);
    for (int l = 0; l < count && l < most; l++) {
        CU_ASSERT_FATAL(TIFFSetDirectory(tif, (tdir_t)l));
        level_info *v = &levels[l];
        uint32_t w = 0, h = 0, type = 0, tw = 0, th = 0;
        uint16_t spp = 1;
        TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
        TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
        TIFFGetField(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
        TIFFGetField(tif, TIFFTAG_SUBFILETYPE, &type);
        CU_ASSERT(TIFFIsTiled(tif));
        TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
        TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
        CU_ASSERT(tw == 256 && th == 256);
        v->width = (int)w, v->height = (int)h, v->reduced = type == FILETYPE_REDUCEDIMAGE;
        v->ifd = TIFFCurrentDirOffset(tif);
        uint32_t tiles = TIFFNumberOfTiles(tif);
        v->first_tile = TIFFGetStrileOffset(tif, 0);
        v->tiles_in_order = 1;
        for (uint32_t t = 0; t < tiles; t++) {
            uint64_t at = TIFFGetStrileOffset(tif, t), size = TIFFGetStrileByteCount(tif, t);
            if (at == 0 || size == 0) v->tiles_in_order = 0;
            if (t > 0 && at < v->last_tile_end) v->tiles_in_order = 0;
            v->last_tile_end = at + size;
        }
        if (l != want) continue;
        size_t pixel = (size_t)spp * bytes;
        *pixels = malloc((size_t)w * h * pixel);
        uint8_t *tile = malloc(TIFFTileSize(tif));
        for (uint32_t y = 0; y < h; y += 256)
            for (uint32_t x = 0; x < w; x += 256) {
                CU_ASSERT(TIFFReadTile(tif, tile, x, y, 0, 0) > 0);
                for (uint32_t i = 0; i < 256 && y + i < h; i++) {
                    uint32_t n = w - x < 256 ? w - x : 256;
                    memcpy(*pixels + ((size_t)(y + i) * w + x) * pixel,
                           tile + (size_t)i * 256 * pixel, n * pixel);
                }
            }
        free(tile);
    }
    TIFFClose(tif);
    return count;
}

/* The COG layout: directories first and in order, tiles smallest level first. */
static void check_layout(const level_info *levels, int count, uint64_t first_ifd)
{
    CU_ASSERT_EQUAL(levels[0].ifd, first_ifd);
    CU_ASSERT(!levels[0].reduced);
    uint64_t last_ifd = 0;
    for (int l = 0; l < count; l++) {
        CU_ASSERT(l == 0 || levels[l].reduced);
        CU_ASSERT(levels[l].tiles_in_order);
        CU_ASSERT(l == 0 || levels[l].ifd > levels[l - 1].ifd);
        if (levels[l].ifd > last_ifd) last_ifd = levels[l].ifd;
        if (l > 0) {
            CU_ASSERT(levels[l].width == (levels[l - 1].width + 1) / 2);
            CU_ASSERT(levels[l].height == (levels[l - 1].height + 1) / 2);
            /* the smaller level's tiles all come before the larger's */
            CU_ASSERT(levels[l].last_tile_end <= levels[l - 1].first_tile);
        }
    }
    for (int l = 0; l < count; l++) CU_ASSERT(levels[l].first_tile > last_ifd);
    CU_ASSERT(levels[count - 1].width <= 256 && levels[count - 1].height <= 256);
    CU_ASSERT(count == 1 || levels[count - 2].width > 256 || levels[count - 2].height > 256);
}

/* The expected overview of class indices: each 2 x 2 block's most frequent
 * value other than 255 (ties: the lowest), 255 when all are. */
static uint8_t *mode_reference(const uint8_t *above, int w, int h, int *ow, int *oh)
{
    *ow = (w + 1) / 2, *oh = (h + 1) / 2;
    uint8_t *out = malloc((size_t)*ow * *oh);
    for (int y = 0; y < *oh; y++)
        for (int x = 0; x < *ow; x++) {
            int histogram[256] = {0};
            for (int dy = 0; dy < 2; dy++)
                for (int dx = 0; dx < 2; dx++)
                    if (2 * y + dy < h && 2 * x + dx < w)
                        histogram[above[(size_t)(2 * y + dy) * w + 2 * x + dx]]++;
            int best = 255;
            for (int v = 254; v >= 0; v--)
                if (histogram[v] && (best == 255 || histogram[v] >= histogram[best])) best = v;
            out[(size_t)y * *ow + x] = (uint8_t)best;
        }
    return out;
}

static void test_class_mask(void)
{
    enum { W = 601, H = 529 }; /* levels 601x529, 301x265, 151x133: odd edges */
    char path[256];
    snprintf(path, sizeof path, "%s/mask.tif", dir);
    uint8_t *mask = malloc((size_t)W * H);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint32_t v = (uint32_t)(x * 7 + y * 13) ^ (uint32_t)(x * y);
            uint8_t c = (uint8_t)(v % 4);
            if (x < 40 && y < 30) c = 255;               /* a nodata corner */
            if ((x + y) % 17 == 0) c = 255;              /* scattered nodata */
            mask[(size_t)y * W + x] = c;
        }
    double scale[3] = {10, 10, 0}, tie[6] = {0, 0, 0, 500000, 4000000, 0};
    tt_georef g = {.pixel_scale = scale, .pixel_scale_count = 3, .tiepoints = tie,
                   .tiepoint_count = 6, .nodata = (char *)"255"};
    tt_raster_writer *wr = NULL;
    TH_OK(tt_raster_writer_open_cog(path, W, H, 1, TT_SAMPLE_U8, &g, 255, &wr));
    for (int y = 0; y < H; y += 37) {
        int rows = H - y < 37 ? H - y : 37;
        TH_OK(tt_raster_writer_rows(wr, rows, mask + (size_t)y * W));
    }
    TH_OK(tt_raster_writer_close(wr));

    level_info levels[8] = {{0}};
    uint8_t *got[3] = {NULL, NULL, NULL};
    int count = 0;
    for (int l = 0; l < 3; l++) count = read_levels(path, levels, 8, l, 1, &got[l]);
    CU_ASSERT_EQUAL_FATAL(count, 3);
    check_layout(levels, count, 8);
    CU_ASSERT(levels[0].width == W && levels[0].height == H);
    CU_ASSERT(memcmp(got[0], mask, (size_t)W * H) == 0);
    int w1, h1, w2, h2;
    uint8_t *want1 = mode_reference(mask, W, H, &w1, &h1);
    uint8_t *want2 = mode_reference(want1, w1, h1, &w2, &h2);
    CU_ASSERT(memcmp(got[1], want1, (size_t)w1 * h1) == 0);
    CU_ASSERT(memcmp(got[2], want2, (size_t)w2 * h2) == 0);
    CU_ASSERT_EQUAL(got[1][0], 255); /* the nodata corner stays nodata */

    /* the georeference on the raster, GDAL's nodata on every level */
    TIFF *tif = TIFFOpen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tif);
    TIFFFieldInfo fields[] = {{33550, -3, -3, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, (char *)"Scale"}};
    TIFFMergeFieldInfo(tif, fields, 1);
    uint32_t n = 0;
    double *read_scale = NULL;
    CU_ASSERT(TIFFGetField(tif, 33550, &n, &read_scale) && n == 3 && read_scale[0] == 10);
    TIFFClose(tif);

    char leftover[300];
    struct stat st;
    snprintf(leftover, sizeof leftover, "%s.part", path);
    CU_ASSERT(stat(leftover, &st) != 0);
    snprintf(leftover, sizeof leftover, "%s.part1", path);
    CU_ASSERT(stat(leftover, &st) != 0);
    printf("\n  %dx%d class mask: %d levels, directories at %llu, %llu, %llu", W, H, count,
           (unsigned long long)levels[0].ifd, (unsigned long long)levels[1].ifd,
           (unsigned long long)levels[2].ifd);
    for (int l = 0; l < 3; l++) free(got[l]);
    free(want1);
    free(want2);
    free(mask);
}

static void test_probabilities(void)
{
    enum { W = 515, H = 9, B = 2 }; /* levels 515x9, 258x5, 129x3 */
    char path[256];
    snprintf(path, sizeof path, "%s/prob.tif", dir);
    float *p = malloc(sizeof *p * W * H * B);
    for (int i = 0; i < W * H; i++) p[i * B] = (float)(i % 10) / 10, p[i * B + 1] = 1 - p[i * B];
    tt_raster_writer *wr = NULL;
    TH_OK(tt_raster_writer_open_cog(path, W, H, B, TT_SAMPLE_F32, NULL, -1, &wr));
    TH_OK(tt_raster_writer_rows(wr, H, p));
    TH_OK(tt_raster_writer_close(wr));
    level_info levels[8] = {{0}};
    uint8_t *got = NULL;
    int count = read_levels(path, levels, 8, 1, 4, &got);
    CU_ASSERT_EQUAL_FATAL(count, 3);
    check_layout(levels, count, 8);
    const float *g = (const float *)got;
    int w1 = (W + 1) / 2, h1 = (H + 1) / 2, worst = 0;
    for (int y = 0; y < h1; y++)
        for (int x = 0; x < w1; x++)
            for (int b = 0; b < B; b++) {
                float sum = 0;
                int n = 0;
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++)
                        if (2 * y + dy < H && 2 * x + dx < W)
                            sum += p[((size_t)(2 * y + dy) * W + 2 * x + dx) * B + b], n++;
                float d = g[((size_t)y * w1 + x) * B + b] - sum / (float)n;
                if (d > 1e-6f || d < -1e-6f) worst++;
            }
    CU_ASSERT_EQUAL(worst, 0);
    free(got);
    free(p);
}

static void test_small_and_incomplete(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/small.tif", dir);
    static uint8_t px[300 * 80];
    tt_raster_writer *wr = NULL;
    TH_OK(tt_raster_writer_open_cog(path, 100, 80, 1, TT_SAMPLE_U8, NULL, 255, &wr));
    TH_OK(tt_raster_writer_rows(wr, 80, px));
    TH_OK(tt_raster_writer_close(wr));
    level_info levels[2] = {{0}};
    uint8_t *got = NULL;
    CU_ASSERT_EQUAL(read_levels(path, levels, 2, 0, 1, &got), 1); /* fits a tile: no overview */
    free(got);
    /* rows missing: an error, PATH as it was, nothing left beside it */
    struct stat before, after;
    CU_ASSERT_FATAL(stat(path, &before) == 0);
    TH_OK(tt_raster_writer_open_cog(path, 300, 300, 1, TT_SAMPLE_U8, NULL, 255, &wr));
    TH_OK(tt_raster_writer_rows(wr, 80, px));
    tt_status s = tt_raster_writer_close(wr);
    CU_ASSERT_PTR_NOT_NULL(s);
    tt_status_free(s);
    CU_ASSERT(stat(path, &after) == 0 && after.st_size == before.st_size);
    char leftover[300];
    for (int l = 0; l < 3; l++) {
        snprintf(leftover, sizeof leftover, "%s.part%d", path, l);
        CU_ASSERT(stat(leftover, &after) != 0);
    }
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    TIFFSetWarningHandler(NULL); /* the GeoTIFF tags it does not know */
    CU_TestInfo tests[] = {
        {"a class mask as a COG: layout, overviews by mode, georeference", test_class_mask},
        {"probabilities: overviews by the mean", test_probabilities},
        {"no overview under a tile; rows missing leave nothing", test_small_and_incomplete},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("raster_cog", tests, TH_HOST);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) rc = rc ? rc : 1;
    return rc;
}

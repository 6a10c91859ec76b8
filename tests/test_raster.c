/*
 * Rasters (data/raster.h): crops read from a TIFF's own blocks equal the
 * pixels written, for tiles and strips, grey, grey + alpha, RGB and four
 * bands, white-is-zero, BigTIFF, and block sizes that do not divide the
 * raster; a reader going down a tall raster holds a bounded number of
 * rows of blocks; what it cannot read is refused by name; the writer's
 * tiles read back (8-bit and float32), the GeoTIFF tags survive the trip
 * bit for bit, and a writer that fails or is left short leaves no file.
 * The references are libtiff itself (files written by this test, read
 * back by TIFFReadEncodedTile).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tiffio.h>

#include "data/raster.h"
#include "harness.h"

static char dir[] = "/tmp/tt-raster-XXXXXX";

static void path_of(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

typedef struct layout {
    const char *name;
    int width, height, bands;
    int tiled, block_w, block_h;  /* block_h: rows per strip when not tiled */
    uint16_t photometric;
    int bigtiff;
} layout;

/* Random interleaved samples, written with libtiff as `l` says; returns them. */
static uint8_t *write_tiff(const char *path, const layout *l, uint64_t seed)
{
    size_t n = (size_t)l->width * l->height * l->bands;
    uint8_t *px = malloc(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    for (size_t i = 0; i < n; i++) px[i] = (uint8_t)th_uniform(&seed, 0, 256);
    TIFF *tif = TIFFOpen(path, l->bigtiff ? "w8" : "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tif);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)l->width);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)l->height);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)l->bands);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (uint16_t)8);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, l->photometric);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, (uint16_t)PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, (uint16_t)COMPRESSION_LZW);
    if (l->bands == 2 || l->bands == 4) {
        uint16_t extra = EXTRASAMPLE_UNASSALPHA;
        TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, (uint16_t)1, &extra);
    }
    size_t line = (size_t)l->width * l->bands;
    if (l->tiled) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, (uint32_t)l->block_w);
        TIFFSetField(tif, TIFFTAG_TILELENGTH, (uint32_t)l->block_h);
        size_t tline = (size_t)l->block_w * l->bands;
        uint8_t *tile = calloc((size_t)l->block_h, tline);
        for (int y = 0; y < l->height; y += l->block_h)
            for (int x = 0; x < l->width; x += l->block_w) {
                memset(tile, 0, (size_t)l->block_h * tline);
                for (int i = 0; i < l->block_h && y + i < l->height; i++) {
                    int cols = l->width - x < l->block_w ? l->width - x : l->block_w;
                    memcpy(tile + i * tline, px + (size_t)(y + i) * line + (size_t)x * l->bands,
                           (size_t)cols * l->bands);
                }
                CU_ASSERT(TIFFWriteTile(tif, tile, (uint32_t)x, (uint32_t)y, 0, 0) > 0);
            }
        free(tile);
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, (uint32_t)l->block_h);
        for (int y = 0; y < l->height; y++)
            CU_ASSERT(TIFFWriteScanline(tif, px + (size_t)y * line, (uint32_t)y, 0) == 1);
    }
    TIFFClose(tif);
    return px;
}

/* The RGB a reader should give for pixel p of layout l. */
static void want_rgb(const layout *l, const uint8_t *p, uint8_t *rgb)
{
    if (l->bands < 3) {
        uint8_t v = l->photometric == PHOTOMETRIC_MINISWHITE ? (uint8_t)(255 - p[0]) : p[0];
        rgb[0] = rgb[1] = rgb[2] = v;
    } else {
        memcpy(rgb, p, 3);
    }
}

/* Crops at random places and sizes (1-wide and touching every border
 * included) against the pixels written. */
static int crops_match(tt_raster *r, const layout *l, const uint8_t *px, uint64_t seed)
{
    int bad = 0;
    uint8_t *got = malloc((size_t)l->width * l->height * 3);
    for (int k = 0; k < 40 && !bad; k++) {
        int w = k == 0 ? l->width : k == 1 ? 1 : 1 + (int)th_uniform(&seed, 0, l->width);
        int h = k == 0 ? l->height : k == 2 ? 1 : 1 + (int)th_uniform(&seed, 0, l->height);
        if (w > l->width) w = l->width;
        if (h > l->height) h = l->height;
        int x0 = k == 3 ? l->width - w : (int)th_uniform(&seed, 0, l->width - w + 1);
        int y0 = k == 3 ? l->height - h : (int)th_uniform(&seed, 0, l->height - h + 1);
        if (x0 + w > l->width) x0 = l->width - w;
        if (y0 + h > l->height) y0 = l->height - h;
        TH_OK(tt_raster_read_crop(r, x0, y0, w, h, got));
        for (int y = 0; y < h && !bad; y++)
            for (int x = 0; x < w && !bad; x++) {
                uint8_t want[3];
                want_rgb(l, px + ((size_t)(y0 + y) * l->width + x0 + x) * l->bands, want);
                bad = memcmp(got + ((size_t)y * w + x) * 3, want, 3) != 0;
                if (bad)
                    printf("\n  %s: crop %dx%d at (%d, %d): pixel (%d, %d) differs", l->name, w,
                           h, x0, y0, x0 + x, y0 + y);
            }
    }
    free(got);
    return !bad;
}

static void test_layouts(void)
{
    static const layout layouts[] = {
        {"tiled RGB", 77, 53, 3, 1, 16, 32, PHOTOMETRIC_RGB, 0},
        {"tiled RGBA", 40, 33, 4, 1, 32, 16, PHOTOMETRIC_RGB, 0},
        {"strips of 7 rows, grey", 29, 45, 1, 0, 29, 7, PHOTOMETRIC_MINISBLACK, 0},
        {"strips of 1 row, grey + alpha", 13, 11, 2, 0, 13, 1, PHOTOMETRIC_MINISBLACK, 0},
        {"one strip, white is zero", 9, 6, 1, 0, 9, 6, PHOTOMETRIC_MINISWHITE, 0},
        {"BigTIFF, tiled RGB", 50, 50, 3, 1, 16, 16, PHOTOMETRIC_RGB, 1},
        {"one pixel", 1, 1, 3, 0, 1, 1, PHOTOMETRIC_RGB, 0},
    };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        const layout *l = &layouts[i];
        char path[256];
        path_of(path, sizeof path, "in.tif");
        uint8_t *px = write_tiff(path, l, 100 + i);
        tt_raster *r = NULL;
        TH_OK(tt_raster_open(path, &r));
        tt_raster_info info = tt_raster_get_info(r);
        CU_ASSERT(info.width == l->width && info.height == l->height && info.bands == l->bands);
        CU_ASSERT_EQUAL(info.tiled, l->tiled);
        CU_ASSERT_EQUAL(info.bigtiff, l->bigtiff);
        int ok = crops_match(r, l, px, 7 + i);
        CU_ASSERT(ok);
        printf("\n  %-32s %dx%d, %d band(s), blocks %dx%d: %s", l->name, l->width, l->height,
               l->bands, info.block_w, info.block_h, ok ? "every crop right" : "WRONG");
        tt_raster_close(r);
        free(px);
    }
}

/* Crops down a tall raster as the sliding window takes them (rows of
 * overlapping crops): the reader holds at most the rows of blocks two
 * crops' heights cover, not the raster. */
static void test_held_rows(void)
{
    layout l = {"tall", 64, 2000, 3, 1, 16, 16, PHOTOMETRIC_RGB, 0};
    char path[256];
    path_of(path, sizeof path, "tall.tif");
    uint8_t *px = write_tiff(path, &l, 5);
    tt_raster *r = NULL;
    TH_OK(tt_raster_open(path, &r));
    uint8_t *crop = malloc(48 * 48 * 3);
    size_t most = 0;
    int bad = 0;
    for (int y = 0; y + 48 <= l.height; y += 24)
        for (int x = 0; x + 48 <= l.width; x += 16) {
            TH_OK(tt_raster_read_crop(r, x, y, 48, 48, crop));
            for (int i = 0; i < 48 && !bad; i++)
                bad = memcmp(crop + i * 48 * 3, px + ((size_t)(y + i) * 64 + x) * 3, 48 * 3) != 0;
            size_t held = tt_raster_held_bytes(r);
            if (held > most) most = held;
        }
    size_t row_of_blocks = 16 * 64 * 3, bound = 5 * row_of_blocks; /* 48 rows: 4 block rows, +1 */
    printf("\n  2000 rows read as 48x48 crops every 24 rows: at most %zu bytes held (%zu rows of "
           "blocks; the raster is %zu)", most, most / row_of_blocks, (size_t)64 * 2000 * 3);
    CU_ASSERT(!bad);
    CU_ASSERT(most <= bound);
    free(crop);
    free(px);
    tt_raster_close(r);
}

/* --bands: a four-band raster read as bands 4, 2, 1; an index past its
 * bands is refused naming the file and the count. */
static void test_select_bands(void)
{
    layout l = {"RGBN", 45, 37, 4, 1, 16, 16, PHOTOMETRIC_RGB, 0};
    char path[256];
    path_of(path, sizeof path, "rgbn.tif");
    uint8_t *px = write_tiff(path, &l, 12);
    tt_raster *r = NULL;
    TH_OK(tt_raster_open(path, &r));
    TH_OK(tt_raster_select_bands(r, (const int[3]){4, 2, 1}));
    uint8_t *got = malloc((size_t)l.width * l.height * 3);
    TH_OK(tt_raster_read_crop(r, 0, 0, l.width, l.height, got));
    int bad = 0;
    for (size_t i = 0; i < (size_t)l.width * l.height; i++)
        bad += got[3 * i] != px[4 * i + 3] || got[3 * i + 1] != px[4 * i + 1] ||
               got[3 * i + 2] != px[4 * i];
    CU_ASSERT_EQUAL(bad, 0);
    tt_status st = tt_raster_select_bands(r, (const int[3]){1, 2, 5});
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
    const char *m = st ? tt_status_message(st) : "";
    CU_ASSERT_PTR_NOT_NULL(strstr(m, path));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "band 5 asked for, and it has 4 bands"));
    printf("\n  bands 4,2,1 of RGBN: %d pixels wrong; message: %s", bad, m);
    tt_status_free(st);
    free(got);
    free(px);
    tt_raster_close(r);
}

/* expect_refusal PATH CODE TEXT: tt_raster_open refuses with the code and
 * a message naming the file and containing TEXT. */
static void expect_refusal(const char *path, tt_code code, const char *text)
{
    tt_raster *r = NULL;
    tt_status st = tt_raster_open(path, &r);
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_EQUAL(tt_status_code(st), code);
    const char *m = st ? tt_status_message(st) : "";
    CU_ASSERT_PTR_NOT_NULL(strstr(m, path));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, text));
    printf("\n  message: %s", m);
    tt_status_free(st);
}

static void test_refused(void)
{
    char path[256];
    path_of(path, sizeof path, "bad.tif");
    /* 32-bit integers, 64-bit float, complex, separate planes, a palette:
     * what to do said */
    static const struct {
        uint16_t bits, format, planar, photometric, spp;
        const char *text;
    } bad[] = {
        {32, SAMPLEFORMAT_INT, PLANARCONFIG_CONTIG, PHOTOMETRIC_MINISBLACK, 1, "32-bit signed"},
        {32, SAMPLEFORMAT_UINT, PLANARCONFIG_CONTIG, PHOTOMETRIC_MINISBLACK, 1, "32-bit unsigned"},
        {64, SAMPLEFORMAT_IEEEFP, PLANARCONFIG_CONTIG, PHOTOMETRIC_MINISBLACK, 1, "64-bit float"},
        {32, SAMPLEFORMAT_COMPLEXIEEEFP, PLANARCONFIG_CONTIG, PHOTOMETRIC_MINISBLACK, 1, "complex"},
        {8, SAMPLEFORMAT_UINT, PLANARCONFIG_SEPARATE, PHOTOMETRIC_RGB, 3, "separate planes"},
        {8, SAMPLEFORMAT_UINT, PLANARCONFIG_CONTIG, PHOTOMETRIC_PALETTE, 1, "palette"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        TIFF *tif = TIFFOpen(path, "w");
        TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)4);
        TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)4);
        TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, bad[i].spp);
        TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, bad[i].bits);
        TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, bad[i].format);
        TIFFSetField(tif, TIFFTAG_PLANARCONFIG, bad[i].planar);
        TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, bad[i].photometric);
        if (bad[i].photometric == PHOTOMETRIC_PALETTE) {
            uint16_t map[256] = {0};
            TIFFSetField(tif, TIFFTAG_COLORMAP, map, map, map);
        }
        uint8_t row[4 * 3 * 8] = {0};
        for (uint16_t s = 0; s < (bad[i].planar == PLANARCONFIG_SEPARATE ? 3 : 1); s++)
            for (uint32_t y = 0; y < 4; y++) TIFFWriteScanline(tif, row, y, s);
        TIFFClose(tif);
        expect_refusal(path, TT_ERR_UNSUPPORTED, bad[i].text);
    }
    path_of(path, sizeof path, "not.tif");
    FILE *f = fopen(path, "wb");
    fputs("\x89PNG\r\n\x1a\n not a tiff at all", f);
    fclose(f);
    expect_refusal(path, TT_ERR_FORMAT, "not a readable TIFF");
    path_of(path, sizeof path, "missing.tif");
    expect_refusal(path, TT_ERR_IO, "missing");
}

static const double scale[3] = {0.5, 0.25, 0};
static const double ties[6] = {0, 0, 0, 500000.125, 4649776.5, 0};
static const uint16_t keys[16] = {1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32633};

static tt_georef example_georef(void)
{
    tt_georef g = {0};
    g.pixel_scale = (double *)scale, g.pixel_scale_count = 3;
    g.tiepoints = (double *)ties, g.tiepoint_count = 6;
    g.keys = (uint16_t *)keys, g.key_count = 16;
    g.ascii = (char *)"WGS 84 / UTM zone 33N|";
    g.nodata = (char *)"255";
    return g;
}

/* 8-bit rasters of 1 and 3 bands (a mask, an image) written in rows of
 * uneven counts read back through the reader, with their GeoTIFF tags. */
static void test_write_u8(void)
{
    char path[256];
    path_of(path, sizeof path, "mask.tif");
    for (int bands = 1; bands <= 3; bands += 2) {
        int w = 300, h = 263; /* two tile columns and two tile rows, neither whole */
        size_t n = (size_t)w * h * bands;
        uint8_t *px = malloc(n);
        uint64_t seed = 9;
        for (size_t i = 0; i < n; i++) px[i] = (uint8_t)th_uniform(&seed, 0, 256);
        tt_georef g = example_georef();
        unlink(path);
        tt_raster_writer *wr = NULL;
        TH_OK(tt_raster_writer_open(path, w, h, bands, TT_SAMPLE_U8, &g, &wr));
        CU_ASSERT(!exists(path)); /* written as PATH.part until closed */
        for (int y = 0, step = 1; y < h; y += step, step = step * 3 % 97 + 1) {
            int rows = h - y < step ? h - y : step;
            TH_OK(tt_raster_writer_rows(wr, rows, px + (size_t)y * w * bands));
        }
        TH_OK(tt_raster_writer_close(wr));
        char part[300];
        snprintf(part, sizeof part, "%s.part", path);
        CU_ASSERT(exists(path) && !exists(part));
        tt_raster *r = NULL;
        TH_OK(tt_raster_open(path, &r));
        tt_raster_info info = tt_raster_get_info(r);
        CU_ASSERT(info.tiled && info.block_w == 256 && info.block_h == 256 && !info.bigtiff);
        layout l = {bands == 1 ? "written mask" : "written image", w, h, bands, 1, 256, 256,
                    bands == 1 ? PHOTOMETRIC_MINISBLACK : PHOTOMETRIC_RGB, 0};
        CU_ASSERT(crops_match(r, &l, px, 3));
        tt_georef back;
        TH_OK(tt_raster_georef(r, &back));
        CU_ASSERT(back.pixel_scale_count == 3 && memcmp(back.pixel_scale, scale, sizeof scale) == 0);
        CU_ASSERT(back.tiepoint_count == 6 && memcmp(back.tiepoints, ties, sizeof ties) == 0);
        CU_ASSERT(back.key_count == 16 && memcmp(back.keys, keys, sizeof keys) == 0);
        CU_ASSERT(back.ascii && strcmp(back.ascii, g.ascii) == 0);
        CU_ASSERT(back.nodata && strcmp(back.nodata, "255") == 0);
        CU_ASSERT(back.transformation_count == 0 && back.double_count == 0);
        tt_georef_free(&back);
        tt_raster_close(r);
        free(px);
    }
    printf("\n  1 and 3 bands, 300x263 in uneven rows: read back, GeoTIFF tags bit for bit");
}

/* float32 bands (probabilities) read back with libtiff, tile by tile. */
static void test_write_f32(void)
{
    char path[256];
    path_of(path, sizeof path, "prob.tif");
    int w = 257, h = 3, bands = 2;
    float *px = malloc((size_t)w * h * bands * sizeof *px);
    for (int i = 0; i < w * h * bands; i++) px[i] = (float)i / 7.0f - 3.0f;
    tt_raster_writer *wr = NULL;
    TH_OK(tt_raster_writer_open(path, w, h, bands, TT_SAMPLE_F32, NULL, &wr));
    TH_OK(tt_raster_writer_rows(wr, h, px));
    TH_OK(tt_raster_writer_close(wr));
    TIFF *tif = TIFFOpen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tif);
    uint16_t bits = 0, format = 0;
    TIFFGetField(tif, TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetField(tif, TIFFTAG_SAMPLEFORMAT, &format);
    CU_ASSERT(bits == 32 && format == SAMPLEFORMAT_IEEEFP);
    float *tile = malloc((size_t)TIFFTileSize(tif));
    int bad = 0;
    for (int tx = 0; tx < 2; tx++) {
        CU_ASSERT(TIFFReadTile(tif, tile, (uint32_t)(tx * 256), 0, 0, 0) > 0);
        for (int y = 0; y < h; y++)
            for (int x = tx * 256; x < w && x < tx * 256 + 256; x++)
                for (int b = 0; b < bands; b++)
                    bad += tile[((size_t)y * 256 + x - tx * 256) * bands + b] !=
                           px[((size_t)y * w + x) * bands + b];
    }
    CU_ASSERT_EQUAL(bad, 0);
    printf("\n  float32, 2 bands: %d values differ", bad);
    free(tile);
    TIFFClose(tif);
    free(px);
}

/* A writer left short or aborted leaves no file, and an old file at PATH
 * as it was; a folder that does not exist is named. */
static void test_write_failures(void)
{
    char path[256], part[300];
    path_of(path, sizeof path, "keep.tif");
    snprintf(part, sizeof part, "%s.part", path);
    FILE *f = fopen(path, "wb");
    fputs("an older mask", f);
    fclose(f);
    uint8_t row[10] = {0};
    tt_raster_writer *wr = NULL;
    TH_OK(tt_raster_writer_open(path, 10, 5, 1, TT_SAMPLE_U8, NULL, &wr));
    TH_OK(tt_raster_writer_rows(wr, 1, row));
    tt_status st = tt_raster_writer_close(wr);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(st ? strstr(tt_status_message(st), "1 of its 5 rows") : NULL);
    printf("\n  message: %s", st ? tt_status_message(st) : "(none)");
    tt_status_free(st);
    CU_ASSERT(!exists(part));
    f = fopen(path, "rb");
    char old[32] = {0};
    CU_ASSERT(f && fread(old, 1, sizeof old - 1, f) > 0);
    if (f) fclose(f);
    CU_ASSERT_STRING_EQUAL(old, "an older mask");
    TH_OK(tt_raster_writer_open(path, 10, 5, 1, TT_SAMPLE_U8, NULL, &wr));
    st = tt_raster_writer_rows(wr, 6, row);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(st);
    tt_raster_writer_abort(wr);
    CU_ASSERT(!exists(part));
    path_of(path, sizeof path, "no/such/folder/m.tif");
    st = tt_raster_writer_open(path, 10, 5, 1, TT_SAMPLE_U8, NULL, &wr);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(st ? strstr(tt_status_message(st), "no/such/folder") : NULL);
    printf("\n  message: %s", st ? tt_status_message(st) : "(none)");
    tt_status_free(st);
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    CU_TestInfo tests[] = {
        {"crops from tiles and strips of every kind", test_layouts},
        {"a reader going down holds a few rows of blocks", test_held_rows},
        {"what cannot be read is refused by name", test_refused},
        {"bands chosen as R, G and B", test_select_bands},
        {"8-bit rasters written and read back, GeoTIFF tags kept", test_write_u8},
        {"float32 rasters written", test_write_f32},
        {"a failed write leaves no file", test_write_failures},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("raster", tests, TH_HOST);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) rc = rc ? rc : 1;
    return rc;
}

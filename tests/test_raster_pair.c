/*
 * Raster pairs (data/raster_pair.h, raster_stats.h, raster_set.h): crops of
 * 8-bit, 16-bit and float32 image rasters, in tiles (BigTIFF too) and in
 * strips whose sizes do not divide the raster, equal the samples written,
 * for the bands chosen in the order chosen, crops overhanging the raster
 * included; the image's nodata (GDAL_NODATA, "nan" too) and the mask's
 * nodata value become ignore (255) in the mask and 0 in the image;
 * normalisation is (v - mean) / std in the samples' own scale; the
 * statistics of a grid of crops lie near those of the raster whole (within
 * a tenth of a deviation), in its scale; and bad input (a mask on another
 * grid, a band out of range, 32-bit integers, a mask of 3 bands, an image
 * without a mask) is refused naming the file; training crops are the same
 * from the same sampler state, their flips and turns moving band and mask
 * together, and crops seeking foreground find it.  The rasters are written
 * with libtiff by this test.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tiffio.h>

#include "data/raster_pair.h"
#include "data/raster_sampler.h"
#include "data/raster_set.h"
#include "data/raster_stats.h"
#include "harness.h"

static char dir[] = "/tmp/tt-rpair-XXXXXX";

static void path_of(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

typedef struct spec {
    int width, height, bands;
    tt_raster_sample sample;  /* or TT_SAMPLE_U8 with int32 set */
    int int32;                /* write 32-bit signed integers (refused) */
    int tiled, block_w, block_h;
    const char *nodata;       /* GDAL_NODATA, or NULL */
    double origin_x;          /* the tiepoint's easting; 0: no georeference */
    int bigtiff;
} spec;

static const TIFFFieldInfo geo_fields[] = {
    {33550, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, (char *)"Scale"},
    {33922, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, (char *)"Tie"},
    {42113, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0, (char *)"NoData"},
};

/* Writes values ((h, w, bands) interleaved) as `s` says. */
static void write_raster(const char *path, const spec *s, const float *values)
{
    TIFF *tif = TIFFOpen(path, s->bigtiff ? "w8" : "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tif);
    TIFFMergeFieldInfo(tif, geo_fields, 3);
    int bytes = s->int32 ? 4 : tt_raster_sample_bytes(s->sample);
    uint16_t format = s->int32 ? SAMPLEFORMAT_INT
                      : s->sample == TT_SAMPLE_F32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT;
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)s->width);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)s->height);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)s->bands);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (uint16_t)(8 * bytes));
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, format);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, (uint16_t)PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, (uint16_t)PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, (uint16_t)COMPRESSION_ADOBE_DEFLATE);
    if (s->bands > 1) {
        uint16_t extra[16] = {0};
        TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, (uint16_t)(s->bands - 1), extra);
    }
    if (s->nodata) TIFFSetField(tif, 42113, s->nodata);
    if (s->origin_x) {
        double scale[3] = {10, 10, 0}, tie[6] = {0, 0, 0, s->origin_x, 5000000, 0};
        TIFFSetField(tif, 33550, 3, scale);
        TIFFSetField(tif, 33922, 6, tie);
    }
    size_t pixel = (size_t)s->bands * bytes;
    uint8_t *px = malloc((size_t)s->width * s->height * pixel);
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    for (size_t i = 0; i < (size_t)s->width * s->height * s->bands; i++) {
        float v = values[i];
        if (s->int32) ((int32_t *)(void *)px)[i] = (int32_t)v;
        else if (s->sample == TT_SAMPLE_F32) ((float *)(void *)px)[i] = v;
        else if (s->sample == TT_SAMPLE_U16) ((uint16_t *)(void *)px)[i] = (uint16_t)v;
        else px[i] = (uint8_t)v;
    }
    if (s->tiled) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, (uint32_t)s->block_w);
        TIFFSetField(tif, TIFFTAG_TILELENGTH, (uint32_t)s->block_h);
        uint8_t *tile = calloc((size_t)s->block_w * s->block_h, pixel);
        for (int y = 0; y < s->height; y += s->block_h)
            for (int x = 0; x < s->width; x += s->block_w) {
                memset(tile, 0, (size_t)s->block_w * s->block_h * pixel);
                for (int j = 0; j < s->block_h && y + j < s->height; j++)
                    for (int i = 0; i < s->block_w && x + i < s->width; i++)
                        memcpy(tile + ((size_t)j * s->block_w + i) * pixel,
                               px + ((size_t)(y + j) * s->width + x + i) * pixel, pixel);
                CU_ASSERT(TIFFWriteTile(tif, tile, (uint32_t)x, (uint32_t)y, 0, 0) > 0);
            }
        free(tile);
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, (uint32_t)s->block_h);
        for (int y = 0; y < s->height; y++)
            CU_ASSERT(TIFFWriteScanline(tif, px + (size_t)y * s->width * pixel, (uint32_t)y, 0) == 1);
    }
    free(px);
    TIFFClose(tif);
}

/* Random samples of the sample's range: (h, w, bands). */
static float *random_values(const spec *s, uint64_t seed)
{
    size_t n = (size_t)s->width * s->height * s->bands;
    float *v = malloc(n * sizeof *v);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    double hi = s->sample == TT_SAMPLE_U8 ? 256 : s->sample == TT_SAMPLE_U16 ? 65536 : 0;
    for (size_t i = 0; i < n; i++)
        v[i] = hi ? (float)floor(th_uniform(&seed, 0, hi)) : (float)th_uniform(&seed, -3, 5);
    return v;
}

/* A mask of classes 0..3 on the spec's grid (1 band, 8-bit, strips). */
static uint8_t *write_mask(const char *path, const spec *image, uint64_t seed)
{
    spec m = {image->width, image->height, 1, TT_SAMPLE_U8, 0, 0, 0, 7, NULL, image->origin_x, 0};
    size_t n = (size_t)m.width * m.height;
    float *v = malloc(n * sizeof *v);
    uint8_t *labels = malloc(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v && labels);
    for (size_t i = 0; i < n; i++) labels[i] = (uint8_t)th_uniform(&seed, 0, 4), v[i] = labels[i];
    write_raster(path, &m, v);
    free(v);
    return labels;
}

static tt_raster_pair *open_pair(const char *image, const char *mask, const int *bands, int count,
                                 int mask_nodata)
{
    tt_raster_pair_options o = {bands, count, mask_nodata};
    tt_raster_pair *p = NULL;
    TH_OK(tt_raster_pair_open(image, mask, &o, &p));
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

/* Crops (some overhanging) match the values written, bands as chosen. */
static void test_crops(void)
{
    static const spec specs[] = {
        {37, 29, 4, TT_SAMPLE_U8, 0, 1, 16, 16, NULL, 0, 0},
        {37, 29, 4, TT_SAMPLE_U8, 0, 0, 0, 5, NULL, 0, 0},
        {41, 23, 5, TT_SAMPLE_U16, 0, 1, 32, 16, NULL, 400000, 1}, /* BigTIFF */
        {41, 23, 5, TT_SAMPLE_U16, 0, 0, 0, 3, NULL, 400000, 0},
        {30, 35, 3, TT_SAMPLE_F32, 0, 1, 16, 16, NULL, 0, 1},      /* BigTIFF */
        {30, 35, 3, TT_SAMPLE_F32, 0, 0, 0, 4, NULL, 0, 0},
    };
    char image[256], mask[256];
    path_of(image, sizeof image, "image.tif");
    path_of(mask, sizeof mask, "mask.tif");
    int wrong = 0;
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        const spec *s = &specs[k];
        float *values = random_values(s, 10 + k);
        write_raster(image, s, values);
        uint8_t *labels = write_mask(mask, s, 20 + k);
        int bands[3] = {3, 1, s->bands}; /* out of order, the last one too */
        tt_raster_pair *p = open_pair(image, mask, bands, 3, -1);
        const tt_raster_pair_info *in = tt_raster_pair_get_info(p);
        CU_ASSERT(in->width == s->width && in->height == s->height);
        CU_ASSERT(in->raster_bands == s->bands && in->channels == 3);
        CU_ASSERT_EQUAL(in->sample, s->sample);
        CU_ASSERT_EQUAL(in->tiled, s->tiled);
        CU_ASSERT_EQUAL(in->bigtiff, s->bigtiff);
        uint64_t seed = 30 + k;
        for (int c = 0; c < 12; c++) {
            int w = 1 + (int)th_uniform(&seed, 0, 24), h = 1 + (int)th_uniform(&seed, 0, 24);
            int x0 = (int)th_uniform(&seed, -8, s->width), y0 = (int)th_uniform(&seed, -8, s->height);
            float *got = malloc((size_t)w * h * 3 * sizeof *got);
            uint8_t *got_mask = malloc((size_t)w * h);
            int64_t ignored = -1;
            TH_OK(tt_raster_pair_read(p, x0, y0, w, h, NULL, NULL, got, got_mask, &ignored, NULL));
            int64_t outside = 0;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    int sx = x0 + x, sy = y0 + y, in_it = sx >= 0 && sy >= 0 && sx < s->width &&
                                                          sy < s->height;
                    size_t i = (size_t)y * w + x, src = (size_t)sy * s->width + sx;
                    outside += !in_it;
                    wrong += got_mask[i] != (in_it ? labels[src] : 255);
                    for (int b = 0; b < 3; b++)
                        wrong += got[(size_t)b * w * h + i] !=
                                 (in_it ? values[src * s->bands + bands[b] - 1] : 0.0f);
                }
            CU_ASSERT_EQUAL(ignored, outside);
            free(got);
            free(got_mask);
        }
        tt_raster_pair_close(p);
        free(values);
        free(labels);
    }
    printf("\n  uint8, uint16, float32 in tiles (BigTIFF too) and strips, bands 3,1,last: %d values "
           "wrong", wrong);
    CU_ASSERT_EQUAL(wrong, 0);
}

/* Image nodata (a number, and "nan" for floats) and the mask's nodata
 * value become ignore; normalisation takes the samples' own scale. */
static void test_nodata_and_normalise(void)
{
    char image[256], mask[256];
    path_of(image, sizeof image, "nd.tif");
    path_of(mask, sizeof mask, "nd_mask.tif");
    for (int f = 0; f < 2; f++) {
        spec s = {20, 18, 2, f ? TT_SAMPLE_F32 : TT_SAMPLE_U16, 0, 1, 16, 16,
                  f ? "nan" : "0", 0, 0};
        float *values = random_values(&s, 5);
        for (size_t i = 0; i < (size_t)s.width * s.height * s.bands; i++)
            if (!f && values[i] == 0) values[i] = 1; /* only the planted ones are nodata */
        float nodata = f ? NAN : 0.0f;
        for (int y = 0; y < 6; y++) values[((size_t)y * s.width + 2) * 2 + 1] = nodata; /* band 2 */
        values[((size_t)10 * s.width + 10) * 2] = nodata;                              /* band 1 */
        write_raster(image, &s, values);
        uint8_t *labels = write_mask(mask, &s, 6);
        int band2 = 2;
        /* band 1 alone: only its own nodata pixel; mask value 3 ignored too */
        tt_raster_pair *p = open_pair(image, mask, (int[]){1}, 1, 3);
        CU_ASSERT(tt_raster_pair_get_info(p)->has_nodata);
        size_t n = (size_t)s.width * s.height;
        float *got = malloc(n * 2 * sizeof *got);
        uint8_t *got_mask = malloc(n);
        int64_t ignored = 0, nd = 0;
        const float mean[2] = {1000.0f, 2.0f}, stdv[2] = {250.0f, 0.5f};
        TH_OK(tt_raster_pair_read(p, 0, 0, s.width, s.height, mean, stdv, got, got_mask, &ignored,
                                  &nd));
        int wrong = 0;
        int64_t want_ignored = 0;
        for (size_t i = 0; i < n; i++) {
            int off = i == (size_t)10 * s.width + 10 || labels[i] == 3;
            want_ignored += off;
            wrong += got_mask[i] != (off ? 255 : labels[i]);
            wrong += fabsf(got[i] - (off ? 0.0f : (values[i * 2] - mean[0]) / stdv[0])) > 1e-5f;
        }
        CU_ASSERT_EQUAL(nd, 1);
        CU_ASSERT_EQUAL(ignored, want_ignored);
        tt_raster_pair_close(p);
        /* both bands: band 2's column of nodata too */
        p = open_pair(image, mask, (int[]){band2, 1}, 2, -1);
        TH_OK(tt_raster_pair_read(p, 0, 0, s.width, s.height, NULL, NULL, got, got_mask, &ignored,
                                  &nd));
        CU_ASSERT_EQUAL(nd, 7);
        for (int y = 0; y < 6; y++) wrong += got_mask[(size_t)y * s.width + 2] != 255;
        for (int y = 6; y < s.height; y++)
            wrong += got_mask[(size_t)y * s.width + 2] != labels[(size_t)y * s.width + 2];
        printf("\n  %s nodata \"%s\": %d pixels wrong", f ? "float32" : "uint16", s.nodata, wrong);
        CU_ASSERT_EQUAL(wrong, 0);
        tt_raster_pair_close(p);
        free(got);
        free(got_mask);
        free(values);
        free(labels);
    }
}

/* The statistics of an overlapping grid that covers the raster lie near
 * the exact ones (the overlap counts some pixels twice). */
static void test_stats(void)
{
    char image[256], mask[256];
    path_of(image, sizeof image, "st.tif");
    path_of(mask, sizeof mask, "st_mask.tif");
    spec s = {50, 40, 3, TT_SAMPLE_U16, 0, 1, 16, 16, "0", 0, 0};
    float *values = random_values(&s, 8);
    size_t n = (size_t)s.width * s.height;
    for (size_t i = 0; i < n; i++) { /* band 2 around 1400 +- 100 */
        values[i * 3 + 1] = 1300 + (float)(i % 201);
        if (values[i * 3] == 0) values[i * 3] = 1;
    }
    for (int x = 0; x < s.width; x++) values[(size_t)x * 3] = 0; /* the first row nodata */
    write_raster(image, &s, values);
    uint8_t *labels = write_mask(mask, &s, 9);
    tt_raster_pair *p = open_pair(image, mask, (int[]){2, 1}, 2, -1);
    tt_raster_stats st = {0};
    TH_OK(tt_raster_stats_add(p, 2, 30, &st)); /* two crops of 30 a side each way: all of it */
    tt_raster_stats_finish(&st);
    double sum[2] = {0}, sq[2] = {0};
    int valid = 0;
    uint64_t cls[4] = {0};
    for (size_t i = 0; i < n; i++) {
        if (i < (size_t)s.width) continue;
        valid++;
        cls[labels[i]]++;
        for (int c = 0; c < 2; c++) {
            double v = values[i * 3 + (c ? 0 : 1)];
            sum[c] += v, sq[c] += v * v;
        }
    }
    /* the 2 x 2 grid overlaps: counts scale, means and deviations do not */
    CU_ASSERT_EQUAL(st.pixels, 4 * 30 * 30);
    CU_ASSERT(st.nodata > 0 && st.nodata == st.ignored);
    double worst = 0;
    for (int c = 0; c < 2; c++) {
        double mean = sum[c] / valid, sd = sqrt(sq[c] / valid - mean * mean);
        double e = fabs(st.mean[c] - mean) / sd + fabs(st.std[c] - sd) / sd;
        worst = e > worst ? e : worst;
        printf("\n  band %d: mean %.1f (whole %.1f), std %.1f (whole %.1f)", c ? 1 : 2,
               st.mean[c], mean, st.std[c], sd);
    }
    /* the grid samples: near, not equal, but the scale is the samples' own */
    CU_ASSERT(worst < 0.1);
    CU_ASSERT(st.mean[0] > 1300 && st.mean[0] < 1501);
    CU_ASSERT(st.class_pixels[0] > 0 && st.class_pixels[255] == 0);
    tt_raster_pair_close(p);
    free(values);
    free(labels);
}

static void expect_error(tt_status st, tt_code code, const char *file, const char *text)
{
    CU_ASSERT_EQUAL(tt_status_code(st), code);
    const char *m = st ? tt_status_message(st) : "";
    CU_ASSERT_PTR_NOT_NULL(strstr(m, file));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, text));
    printf("\n  message: %s", m);
    tt_status_free(st);
}

static void test_refused(void)
{
    char image[256], mask[256], other[256];
    path_of(image, sizeof image, "r.tif");
    path_of(mask, sizeof mask, "r_mask.tif");
    path_of(other, sizeof other, "r_other.tif");
    spec s = {20, 16, 4, TT_SAMPLE_U16, 0, 1, 16, 16, NULL, 400000, 0};
    float *values = random_values(&s, 3);
    write_raster(image, &s, values);
    free(write_mask(mask, &s, 4));
    tt_raster_pair *p = NULL;
    tt_raster_pair_options o = {(const int[]){4, 5}, 2, -1};
    expect_error(tt_raster_pair_open(image, mask, &o, &p), TT_ERR_INVALID_ARGUMENT, image,
                 "band 5 asked for, and it has 4 bands");
    spec moved = s;
    moved.origin_x = 400010; /* one pixel east */
    free(write_mask(other, &moved, 4));
    expect_error(tt_raster_pair_open(image, other, NULL, &p), TT_ERR_INVALID_ARGUMENT, other,
                 "georeference");
    spec smaller = s;
    smaller.width = 19;
    free(write_mask(other, &smaller, 4));
    expect_error(tt_raster_pair_open(image, other, NULL, &p), TT_ERR_INVALID_ARGUMENT, other,
                 "19x16");
    expect_error(tt_raster_pair_open(image, image, NULL, &p), TT_ERR_UNSUPPORTED, image,
                 "one band of 8-bit class indices");
    spec ints = s;
    ints.int32 = 1;
    write_raster(other, &ints, values);
    expect_error(tt_raster_pair_open(other, mask, NULL, &p), TT_ERR_UNSUPPORTED, other,
                 "32-bit signed");
    CU_ASSERT_PTR_NULL(p);
    /* a set: an image without its mask */
    char set[256], sub[300], cmd[256];
    path_of(set, sizeof set, "set");
    snprintf(cmd, sizeof cmd, "cd %s && mkdir -p set/images set/masks && cp r.tif "
             "set/images/a.tif && cp r_mask.tif set/masks/a.tif && cp r.tif set/images/b.tif", dir);
    CU_ASSERT_FATAL(system(cmd) == 0);
    CU_ASSERT(tt_raster_set_detect(set));
    tt_raster_set *rs = NULL;
    snprintf(sub, sizeof sub, "%s/images/b.tif", set);
    expect_error(tt_raster_set_open(set, NULL, &rs), TT_ERR_FORMAT, sub, "no mask for it");
    snprintf(cmd, sizeof cmd, "cp %s/r_mask.tif %s/set/masks/b.TIF", dir, dir);
    CU_ASSERT_FATAL(system(cmd) == 0);
    TH_OK(tt_raster_set_open(set, NULL, &rs));
    CU_ASSERT(rs && tt_raster_set_count(rs) == 2);
    if (rs) CU_ASSERT_STRING_EQUAL(tt_raster_set_name(rs, 1), "b.tif");
    tt_raster_set_destroy(rs);
    free(values);
}

/* Training crops: the image band equals the mask (written so), and stays
 * so through flips and turns; the same state gives the same crops. */
static void test_sampler(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/train/images %s/train/masks", dir, dir);
    CU_ASSERT_FATAL(system(cmd) == 0);
    char image[256], mask[256];
    path_of(image, sizeof image, "train/images/s.tif");
    path_of(mask, sizeof mask, "train/masks/s.tif");
    spec s = {70, 50, 1, TT_SAMPLE_U8, 0, 1, 16, 16, NULL, 0, 0};
    uint8_t *labels = write_mask(mask, &s, 12);
    float *values = malloc((size_t)s.width * s.height * sizeof *values);
    CU_ASSERT_PTR_NOT_NULL_FATAL(values);
    for (int i = 0; i < s.width * s.height; i++) values[i] = labels[i];
    write_raster(image, &s, values);
    tt_raster_set *set = NULL;
    char train[256];
    path_of(train, sizeof train, "train");
    TH_OK(tt_raster_set_open(train, NULL, &set));
    tt_raster_sampler_config rc = {.tile_width = 32, .tile_height = 32, .seed = 5,
                                   .augment = tt_augment_defaults()};
    tt_raster_sampler *rs = NULL;
    TH_OK(tt_raster_sampler_create(&rc, set, &rs));
    CU_ASSERT_EQUAL(tt_raster_sampler_epoch_length(rs), 3 * 2);
    enum { N = 6 };
    float img[2][N * 32 * 32];
    uint8_t msk[2][N * 32 * 32];
    int items[N];
    int mismatched = 0, end = 0;
    tt_sampler_state start;
    tt_raster_sampler_get_state(rs, &start);
    for (int pass = 0; pass < 2; pass++) {
        TH_OK(tt_raster_sampler_set_state(rs, &start));
        tt_batch b = {.batch_size = N, .height = 32, .width = 32, .planes = 1, .channels = 1,
                      .image = img[pass], .mask = msk[pass], .items = items};
        TH_OK(tt_raster_sampler_fill(rs, &b, &end));
        CU_ASSERT_EQUAL(b.batch_size, N);
        CU_ASSERT(b.state_after.epoch == 1 && b.state_after.position == 0);
    }
    for (int i = 0; i < N * 32 * 32; i++) mismatched += img[0][i] != (float)msk[0][i];
    CU_ASSERT_EQUAL(mismatched, 0);
    CU_ASSERT(memcmp(img[0], img[1], sizeof img[0]) == 0 && memcmp(msk[0], msk[1], sizeof msk[0]) == 0);
    printf("\n  6 crops of 32x32, flipped and turned: %d pixels where band and mask differ", mismatched);
    tt_raster_sampler_destroy(rs);
    tt_raster_set_destroy(set);
    free(values);
    free(labels);
}

/* Crops seeking foreground find a small labelled square far more often
 * than uniform crops do. */
static void test_seek_foreground(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/fg/images %s/fg/masks", dir, dir);
    CU_ASSERT_FATAL(system(cmd) == 0);
    char image[256], mask[256], set_dir[256];
    path_of(image, sizeof image, "fg/images/s.tif");
    path_of(mask, sizeof mask, "fg/masks/s.tif");
    path_of(set_dir, sizeof set_dir, "fg");
    spec s = {128, 128, 1, TT_SAMPLE_U8, 0, 1, 32, 32, NULL, 0, 0};
    float *values = calloc((size_t)s.width * s.height, sizeof *values);
    CU_ASSERT_PTR_NOT_NULL_FATAL(values);
    for (int y = 70; y < 86; y++)
        for (int x = 40; x < 56; x++) values[y * s.width + x] = 1; /* 16 x 16 of class 1 */
    write_raster(image, &s, values);
    write_raster(mask, &s, values);
    tt_raster_set *set = NULL;
    TH_OK(tt_raster_set_open(set_dir, NULL, &set));
    int with[2] = {0, 0};
    for (int seek = 0; seek < 2; seek++) {
        tt_raster_sampler_config rc = {.tile_width = 32, .tile_height = 32, .seed = 9,
                                       .no_augment = 1, .fg_fraction = seek};
        tt_raster_sampler *rs = NULL;
        TH_OK(tt_raster_sampler_create(&rc, set, &rs));
        enum { N = 64 };
        static float img[N * 32 * 32];
        static uint8_t msk[N * 32 * 32];
        int items[N], end = 0;
        tt_batch b = {.batch_size = N, .height = 32, .width = 32, .planes = 1, .channels = 1,
                      .image = img, .mask = msk, .items = items};
        TH_OK(tt_raster_sampler_fill(rs, &b, &end));
        for (int k = 0; k < N; k++) {
            int fg = 0;
            for (int i = 0; i < 32 * 32; i++) fg |= msk[k * 32 * 32 + i] == 1;
            with[seek] += fg;
        }
        tt_raster_sampler_destroy(rs);
    }
    printf("\n  64 crops of 32x32 over a 16x16 square in 128x128: %d hold it uniformly, %d "
           "seeking it", with[0], with[1]);
    /* a try holds it with p = (47/97)^2 = 0.23: 15 of 64 expected uniformly,
     * 1 - 0.77^8 = 88% (56) seeking with 8 tries */
    CU_ASSERT(with[1] >= 40 && with[1] > with[0] + 20);
    tt_raster_set_destroy(set);
    free(values);
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    CU_TestInfo tests[] = {
        {"crops of 8/16-bit and float rasters in tiles and strips, bands chosen", test_crops},
        {"nodata of the image and of the mask is ignore; normalisation", test_nodata_and_normalise},
        {"band statistics in the samples' own scale", test_stats},
        {"bad input refused naming the file", test_refused},
        {"training crops: the same from a state, image and mask moved together", test_sampler},
        {"training crops seeking foreground find it", test_seek_foreground},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("raster_pair", tests, TH_HOST);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) rc = rc ? rc : 1;
    return rc;
}

/* Image decoding: tt_image_load against stb_image and the source pixels on
 * generated PNG/JPEG/BMP/TIFF files, header-only sizes, the max_pixels
 * refusal before decoding, and clear errors for truncated or garbage files. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image.h>

#include "data/image.h"
#include "harness.h"
#include "ref_pixels.h"

static char dir[512];

static int max_abs_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        if (d > m) m = d;
    }
    return m;
}

static void truncate_copy(const char *from, const char *to, double keep)
{
    FILE *f = fopen(from, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    CU_ASSERT_FATAL(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    FILE *g = fopen(to, "wb");
    fwrite(buf, 1, (size_t)(n * keep), g);
    fclose(g);
    free(buf);
}

static void test_decode_matches_stb(void)
{
    int w = 37, h = 23; /* odd sizes on purpose */
    uint8_t *rgb = rp_make_rgb(w, h, 5);
    const char *ext[] = {"png", "jpg", "bmp"};
    for (int k = 0; k < 3; k++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/a.%s", dir, ext[k]);
        int ok = k == 0 ? rp_write_png(path, w, h, rgb) : k == 1 ? rp_write_jpg(path, w, h, rgb, 95)
                                                                  : rp_write_bmp(path, w, h, rgb);
        CU_ASSERT_FATAL(ok);
        tt_image im;
        TH_OK(tt_image_load(path, 0, &im));
        CU_ASSERT_EQUAL(im.width, w);
        CU_ASSERT_EQUAL(im.height, h);
        int sw, sh, sc;
        uint8_t *ref = stbi_load(path, &sw, &sh, &sc, 3);
        CU_ASSERT_FATAL(ref != NULL);
        int vs_stb = max_abs_diff(im.pixels, ref, (size_t)w * h * 3);
        int vs_source = max_abs_diff(im.pixels, rgb, (size_t)w * h * 3);
        printf("\n  %s: max |decode - stb| = %d, max |decode - source| = %d", ext[k], vs_stb, vs_source);
        CU_ASSERT_EQUAL(vs_stb, 0);
        if (k != 1) {
            CU_ASSERT_EQUAL(vs_source, 0); /* lossless formats */
        } else {
            CU_ASSERT(vs_source < 40); /* JPEG q95 of a noisy image */
        }
        stbi_image_free(ref);
        tt_image_free(&im);
    }
    free(rgb);
}

static void test_decode_tiff(void)
{
    int w = 70, h = 45;
    uint8_t *rgb = rp_make_rgb(w, h, 9);
    struct { int tile, separate; } kinds[] = {{0, 0}, {0, 1}, {32, 0}, {16, 1}};
    for (int k = 0; k < 4; k++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/t%d.tif", dir, k);
        CU_ASSERT_FATAL(rp_write_tiff(path, w, h, rgb, kinds[k].tile, kinds[k].tile, kinds[k].separate));
        int iw, ih, tiled;
        TH_OK(tt_image_info(path, &iw, &ih, &tiled));
        CU_ASSERT_EQUAL(iw, w);
        CU_ASSERT_EQUAL(ih, h);
        CU_ASSERT_EQUAL(tiled, kinds[k].tile != 0);
        tt_image im;
        TH_OK(tt_image_load(path, 0, &im));
        int d = max_abs_diff(im.pixels, rgb, (size_t)w * h * 3);
        printf("\n  tiff tile=%d separate=%d: max |decode - source| = %d", kinds[k].tile, kinds[k].separate, d);
        CU_ASSERT_EQUAL(d, 0);
        tt_image_free(&im);
    }
    free(rgb);
}

static void test_header_only(void)
{
    int w = 19, h = 31;
    uint8_t *rgb = rp_make_rgb(w, h, 1);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/h.png", dir);
    CU_ASSERT_FATAL(rp_write_png(path, w, h, rgb));
    int iw = 0, ih = 0, tiled = 7;
    TH_OK(tt_image_info(path, &iw, &ih, &tiled));
    CU_ASSERT_EQUAL(iw, w);
    CU_ASSERT_EQUAL(ih, h);
    CU_ASSERT_EQUAL(tiled, 0);
    /* a truncated PNG still has its header: the size is known without decoding */
    char cut[PATH_MAX];
    snprintf(cut, sizeof cut, "%s/h-cut.png", dir);
    truncate_copy(path, cut, 0.5);
    TH_OK(tt_image_info(cut, &iw, &ih, NULL));
    CU_ASSERT_EQUAL(iw, w);
    free(rgb);
}

/* A BMP header claiming 60000 x 50000 pixels, with no pixel data at all:
 * refused as too large from the header, never decoded (a decode would fail
 * with a format error or try to allocate 9 GB). */
static void test_max_pixels_refusal(void)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/huge.bmp", dir);
    uint8_t hdr[54] = {'B', 'M'};
    int32_t width = 60000, height = 50000;
    uint32_t offset = 54, info = 40, planes_bpp = 1 | (24u << 16);
    memcpy(hdr + 10, &offset, 4);
    memcpy(hdr + 14, &info, 4);
    memcpy(hdr + 18, &width, 4);
    memcpy(hdr + 22, &height, 4);
    memcpy(hdr + 26, &planes_bpp, 4);
    FILE *f = fopen(path, "wb");
    fwrite(hdr, 1, sizeof hdr, f);
    fclose(f);
    int iw, ih;
    TH_OK(tt_image_info(path, &iw, &ih, NULL));
    CU_ASSERT_EQUAL(iw, 60000);
    CU_ASSERT_EQUAL(ih, 50000);
    tt_image im;
    tt_status s = tt_image_load(path, 0, &im);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_TOO_LARGE);
    CU_ASSERT(strstr(tt_status_message(s), "huge.bmp") != NULL);
    CU_ASSERT(strstr(tt_status_message(s), "max_pixels") != NULL);
    printf("\n  refusal: %s", tt_status_message(s));
    tt_status_free(s);
    CU_ASSERT_PTR_NULL(im.pixels);

    /* a small real image against a small limit */
    uint8_t *rgb = rp_make_rgb(30, 20, 3);
    snprintf(path, sizeof path, "%s/small.png", dir);
    CU_ASSERT_FATAL(rp_write_png(path, 30, 20, rgb));
    s = tt_image_load(path, 599, &im);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_TOO_LARGE);
    tt_status_free(s);
    TH_OK(tt_image_load(path, 600, &im));
    tt_image_free(&im);
    free(rgb);
}

static void expect_format_error(const char *path, const char *name)
{
    tt_image im;
    tt_status s = tt_image_load(path, 0, &im);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    CU_ASSERT(strstr(tt_status_message(s), name) != NULL);
    printf("\n  %s: %s", name, tt_status_message(s));
    tt_status_free(s);
    CU_ASSERT_PTR_NULL(im.pixels);
}

static void test_truncated_and_garbage(void)
{
    int w = 64, h = 48;
    uint8_t *rgb = rp_make_rgb(w, h, 4);
    char full[PATH_MAX], cut[PATH_MAX];
    snprintf(full, sizeof full, "%s/full.png", dir);
    snprintf(cut, sizeof cut, "%s/cut.png", dir);
    CU_ASSERT_FATAL(rp_write_png(full, w, h, rgb));
    truncate_copy(full, cut, 0.6);
    expect_format_error(cut, "cut.png");

    snprintf(full, sizeof full, "%s/full.jpg", dir);
    snprintf(cut, sizeof cut, "%s/cut.jpg", dir);
    CU_ASSERT_FATAL(rp_write_jpg(full, w, h, rgb, 90));
    truncate_copy(full, cut, 0.7);
    expect_format_error(cut, "cut.jpg");

    snprintf(full, sizeof full, "%s/full.tif", dir);
    snprintf(cut, sizeof cut, "%s/cut.tif", dir);
    CU_ASSERT_FATAL(rp_write_tiff(full, w, h, rgb, 0, 0, 0));
    truncate_copy(full, cut, 0.5);
    expect_format_error(cut, "cut.tif");

    char junk[PATH_MAX];
    snprintf(junk, sizeof junk, "%s/junk.png", dir);
    FILE *f = fopen(junk, "wb");
    fputs("this is not an image at all, just text", f);
    fclose(f);
    expect_format_error(junk, "junk.png");

    char missing[PATH_MAX];
    snprintf(missing, sizeof missing, "%s/missing.png", dir);
    tt_image im;
    tt_status s = tt_image_load(missing, 0, &im);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(strstr(tt_status_message(s), "missing.png") != NULL);
    tt_status_free(s);
    free(rgb);
}

int main(void)
{
    if (!rd_tempdir_in(dir, sizeof dir, "pixels")) return 1;
    CU_TestInfo tests[] = {
        {"decode PNG/JPEG/BMP equals stb", test_decode_matches_stb},
        {"decode TIFF strips and tiles", test_decode_tiff},
        {"header-only size", test_header_only},
        {"max_pixels refused before decoding", test_max_pixels_refusal},
        {"truncated and garbage files", test_truncated_and_garbage},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("image", tests, TH_HOST);
    rd_rmtree(dir);
    return rc;
}

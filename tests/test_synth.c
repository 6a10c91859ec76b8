/* The synthetic dataset: the right files in both layouts, train.csv rows
 * whose RLE decodes to the rendered masks (non-empty, every class present),
 * images that decode to the rendered pixels, class colours apart, the same
 * seed giving the same bytes, and the command's option errors. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stb_image.h>

#include "data/image.h"
#include "data/synth.h"
#include "harness.h"
#include "ref_pixels.h"

/* The command and the helpers it shares with the others are compiled in
 * here (the library holds neither). */
#include "../src/cli/cmd_data_synth.c"
#include "../src/cli/common.c"

static char dir[512];

/* Reference Kaggle RLE decoder: 1-based starts, column-major. Returns -1 on
 * a malformed or out-of-range run. */
static int rle_decode(const char *rle, int w, int h, uint8_t *plane)
{
    memset(plane, 0, (size_t)w * h);
    const char *p = rle;
    while (*p) {
        char *end;
        long start = strtol(p, &end, 10);
        if (end == p) break;
        long len = strtol(end, &end, 10);
        if (start < 1 || len < 1 || start - 1 + len > (long)w * h) return -1;
        for (long k = start - 1; k < start - 1 + len; k++) plane[(k % h) * w + k / h] = 1;
        p = end;
    }
    return 0;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

static void test_kaggle_rle(void)
{
    char out[600];
    snprintf(out, sizeof out, "%s/kaggle", dir);
    tt_synth_config cfg = {out, TT_SYNTH_KAGGLE_RLE, 8, 48, 64, 4, 3, 0, 0, 0, 0};
    TH_OK(tt_synth_write(&cfg));
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/train.csv", out);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char line[65536];
    CU_ASSERT_FATAL(fgets(line, sizeof line, f) != NULL);
    CU_ASSERT_STRING_EQUAL(line, "Image_Label,EncodedPixels\n");
    int w = 64, h = 48, rows = 0, mismatched = 0, nonempty_images = 0, class_seen[4] = {0};
    uint8_t *rgb = malloc((size_t)w * h * 3), *labels = malloc((size_t)4 * w * h), *plane = malloc((size_t)w * h);
    double jpeg_err = 0;
    for (int n = 0; n < 8; n++) {
        tt_synth_render(&cfg, n, rgb, labels, NULL);
        snprintf(path, sizeof path, "%s/train_images/synth_%05d.jpg", out, n);
        CU_ASSERT(file_exists(path));
        tt_image im;
        TH_OK(tt_image_load(path, 0, &im));
        CU_ASSERT(im.width == w && im.height == h);
        double sum = 0;
        for (size_t i = 0; i < (size_t)w * h * 3; i++) sum += fabs((double)im.pixels[i] - rgb[i]);
        if (sum / (w * h * 3) > jpeg_err) jpeg_err = sum / (w * h * 3);
        tt_image_free(&im);
        int any = 0;
        for (int k = 0; k < 4; k++) {
            CU_ASSERT_FATAL(fgets(line, sizeof line, f) != NULL);
            rows++;
            char label[32], want[64];
            snprintf(want, sizeof want, "synth_%05d.jpg_%s,", n, tt_synth_label(k, label, sizeof label));
            CU_ASSERT(strncmp(line, want, strlen(want)) == 0);
            CU_ASSERT(rle_decode(line + strlen(want), w, h, plane) == 0);
            mismatched += memcmp(plane, labels + (size_t)k * w * h, (size_t)w * h) != 0;
            int ones = 0;
            for (int i = 0; i < w * h; i++) ones += plane[i];
            any |= ones > 0;
            class_seen[k] += ones > 0;
        }
        nonempty_images += any;
    }
    CU_ASSERT(fgets(line, sizeof line, f) == NULL);
    fclose(f);
    printf("\n  kaggle: %d rows, %d RLE planes differ from the render, images with a label %d/8, class "
           "images %d %d %d %d, mean |jpeg - render| %.2f",
           rows, mismatched, nonempty_images, class_seen[0], class_seen[1], class_seen[2], class_seen[3], jpeg_err);
    CU_ASSERT_EQUAL(rows, 32);
    CU_ASSERT_EQUAL(mismatched, 0);
    CU_ASSERT_EQUAL(nonempty_images, 8);
    for (int k = 0; k < 4; k++) CU_ASSERT(class_seen[k] > 0);
    CU_ASSERT(jpeg_err < 6.0);
    free(rgb), free(labels), free(plane);
}

static void test_folder(void)
{
    char out[600];
    snprintf(out, sizeof out, "%s/folder", dir);
    tt_synth_config cfg = {out, TT_SYNTH_FOLDER, 6, 40, 52, 4, 9, 0, 0, 0, 0};
    TH_OK(tt_synth_write(&cfg));
    int w = 52, h = 40, present[4] = {0}, bad = 0;
    uint8_t *rgb = malloc((size_t)w * h * 3), *labels = malloc((size_t)3 * w * h), *top = malloc((size_t)w * h);
    double mean[4][3] = {{0}};
    double count[4] = {0};
    for (int n = 0; n < 6; n++) {
        tt_synth_render(&cfg, n, rgb, labels, top);
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/images/synth_%05d.png", out, n);
        tt_image im;
        TH_OK(tt_image_load(path, 0, &im));
        CU_ASSERT(im.width == w && im.height == h);
        bad += memcmp(im.pixels, rgb, (size_t)w * h * 3) != 0;
        tt_image_free(&im);
        snprintf(path, sizeof path, "%s/masks/synth_%05d.png", out, n);
        int mw, mh, mc;
        uint8_t *mask = stbi_load(path, &mw, &mh, &mc, 0);
        CU_ASSERT_FATAL(mask != NULL);
        CU_ASSERT(mw == w && mh == h && mc == 1);
        bad += memcmp(mask, top, (size_t)w * h) != 0;
        for (int i = 0; i < w * h; i++) {
            CU_ASSERT_FATAL(mask[i] < 4);
            present[mask[i]]++;
            count[mask[i]]++;
            for (int c = 0; c < 3; c++) mean[mask[i]][c] += rgb[3 * i + c];
        }
        stbi_image_free(mask);
    }
    double min_dist = 1e9;
    for (int a = 0; a < 4; a++)
        for (int b = a + 1; b < 4; b++) {
            double d = 0;
            for (int c = 0; c < 3; c++) {
                double diff = mean[a][c] / count[a] - mean[b][c] / count[b];
                d += diff * diff;
            }
            if (sqrt(d) < min_dist) min_dist = sqrt(d);
        }
    printf("\n  folder: pixels per class %d %d %d %d; closest class mean colours %.1f apart", present[0],
           present[1], present[2], present[3], min_dist);
    CU_ASSERT_EQUAL(bad, 0);
    for (int k = 0; k < 4; k++) CU_ASSERT(present[k] > 0);
    CU_ASSERT(min_dist > 20.0);
    free(rgb), free(labels), free(top);
}

/* --rare-class P: the last class shows in about P of the images, the
 * others as often as without it; out-of-range values are refused. */
static void test_rare_class(void)
{
    enum { W = 32, H = 24, IMAGES = 400, CLASSES = 4 };
    tt_synth_config cfg = {"unused", TT_SYNTH_KAGGLE_RLE, IMAGES, H, W, CLASSES, 7, 0, 0, 0, 0.05};
    TH_OK(tt_synth_validate(&cfg));
    uint8_t rgb[W * H * 3], labels[CLASSES * W * H];
    int shown[CLASSES] = {0};
    for (int n = 0; n < IMAGES; n++) {
        tt_synth_render(&cfg, n, rgb, labels, NULL);
        for (int k = 0; k < CLASSES; k++) {
            int any = 0;
            for (int i = 0; i < W * H; i++) any |= labels[k * W * H + i];
            shown[k] += any;
        }
    }
    printf("\n  --rare-class 0.05: images showing each class of %d: %d %d %d %d", IMAGES, shown[0],
           shown[1], shown[2], shown[3]);
    CU_ASSERT(shown[3] >= 5 && shown[3] <= 40); /* about 20 */
    for (int k = 0; k < 3; k++) CU_ASSERT(shown[k] > 200);
    double bad[] = {-0.1, 1.5};
    for (int i = 0; i < 2; i++) {
        cfg.rare_class = bad[i];
        tt_status st = tt_synth_validate(&cfg);
        CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
        CU_ASSERT(st && strstr(tt_status_message(st), "--rare-class") != NULL);
        tt_status_free(st);
    }
    cfg.rare_class = 0.5, cfg.classes = 1; /* one class cannot be the rare one */
    tt_status st = tt_synth_validate(&cfg);
    CU_ASSERT_EQUAL(tt_status_code(st), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(st);
}

/* The share of labelled pixels of image n: rendered with region_scale. */
static double foreground_share(tt_synth_config cfg, double scale, int n, uint8_t *rgb, uint8_t *labels,
                               uint8_t *top)
{
    cfg.region_scale = scale;
    tt_synth_render(&cfg, n, rgb, labels, top);
    int fg = 0;
    for (int i = 0; i < cfg.width * cfg.height; i++) fg += top[i] != 0;
    return (double)fg / (cfg.width * cfg.height);
}

/* --grey writes one-channel images whose pixels are the luminance render
 * (R = G = B); --ignore-regions marks 255 in the folder masks where the
 * image is what it is without them, and nothing else moves; --region-scale
 * makes the labelled regions smaller or larger; the command takes them and
 * refuses what cannot be. */
static void test_options(void)
{
    char out[600], path[PATH_MAX];
    snprintf(out, sizeof out, "%s/grey", dir);
    int w = 64, h = 48;
    tt_synth_config grey = {out, TT_SYNTH_FOLDER, 3, h, w, 4, 5, 1, 0, 2, 0};
    TH_OK(tt_synth_write(&grey));
    tt_synth_config plain = grey;
    plain.grey = 0, plain.ignore_regions = 0;
    uint8_t *rgb = malloc((size_t)w * h * 3), *labels = malloc((size_t)3 * w * h), *top = malloc((size_t)w * h);
    uint8_t *rgb0 = malloc((size_t)w * h * 3), *labels0 = malloc((size_t)3 * w * h), *top0 = malloc((size_t)w * h);
    int not_grey = 0, not_luma = 0, ignored = 0, moved = 0, mask_differs = 0, channels_ok = 1;
    for (int n = 0; n < 3; n++) {
        tt_synth_render(&grey, n, rgb, labels, top);
        tt_synth_render(&plain, n, rgb0, labels0, top0);
        for (int i = 0; i < w * h; i++) {
            not_grey += rgb[3 * i] != rgb[3 * i + 1] || rgb[3 * i] != rgb[3 * i + 2];
            double luma = 0.299 * rgb0[3 * i] + 0.587 * rgb0[3 * i + 1] + 0.114 * rgb0[3 * i + 2];
            not_luma += fabs(luma - rgb[3 * i]) > 1.01;
            ignored += top[i] == 255;
            moved += top[i] != 255 && top[i] != top0[i];
        }
        moved += memcmp(labels, labels0, (size_t)3 * w * h) != 0;
        snprintf(path, sizeof path, "%s/images/synth_%05d.png", out, n);
        int iw, ih, ic;
        uint8_t *file = stbi_load(path, &iw, &ih, &ic, 0);
        CU_ASSERT_FATAL(file != NULL);
        channels_ok &= ic == 1 && iw == w && ih == h;
        for (int i = 0; channels_ok && i < w * h; i++) not_grey += file[i] != rgb[3 * i];
        stbi_image_free(file);
        snprintf(path, sizeof path, "%s/masks/synth_%05d.png", out, n);
        uint8_t *mask = stbi_load(path, &iw, &ih, &ic, 1);
        CU_ASSERT_FATAL(mask != NULL);
        mask_differs += memcmp(mask, top, (size_t)w * h) != 0;
        stbi_image_free(mask);
    }
    double small = 0, normal = 0, large = 0;
    tt_synth_config sized = plain;
    sized.width = 256, sized.height = 192;
    uint8_t *big_rgb = malloc((size_t)256 * 192 * 3), *big_labels = malloc((size_t)3 * 256 * 192),
            *big_top = malloc((size_t)256 * 192);
    for (int n = 0; n < 8; n++) {
        small += foreground_share(sized, 0.25, n, big_rgb, big_labels, big_top) / 8;
        normal += foreground_share(sized, 0, n, big_rgb, big_labels, big_top) / 8;
        large += foreground_share(sized, 2, n, big_rgb, big_labels, big_top) / 8;
    }
    printf("\n  grey: %d pixels not grey, %d not the luminance, one channel %d; ignore: %d pixels "
           "255, %d other mask pixels moved, %d masks not the render; foreground share at "
           "region scale 0.25 / 1 / 2: %.3f / %.3f / %.3f",
           not_grey, not_luma, channels_ok, ignored, moved, mask_differs, small, normal, large);
    CU_ASSERT(channels_ok);
    CU_ASSERT_EQUAL(not_grey, 0);
    CU_ASSERT_EQUAL(not_luma, 0);
    CU_ASSERT(ignored > 0 && ignored < 3 * w * h / 2);
    CU_ASSERT_EQUAL(moved, 0);
    CU_ASSERT_EQUAL(mask_differs, 0);
    CU_ASSERT(small < 0.5 * normal && large > 1.3 * normal);
    free(rgb), free(labels), free(top), free(rgb0), free(labels0), free(top0);
    free(big_rgb), free(big_labels), free(big_top);

    char *args[] = {"synth", "--out", out, "--format", "folder", "--count", "2", "--size", "30x40",
                    "--grey", "--region-scale", "0.5", "--ignore-regions", "3", NULL};
    CU_ASSERT_EQUAL(tt_cmd_data_synth(14, args), 0);
    char *bad1[] = {"synth", "--out", out, "--ignore-regions", "2", NULL};  /* kaggle-rle has no 255 */
    char *bad2[] = {"synth", "--out", out, "--region-scale", "0", NULL};
    char *bad3[] = {"synth", "--out", out, "--format", "folder", "--ignore-regions", "65", NULL};
    CU_ASSERT_EQUAL(tt_cmd_data_synth(5, bad1), 2);
    CU_ASSERT_EQUAL(tt_cmd_data_synth(5, bad2), 2);
    CU_ASSERT_EQUAL(tt_cmd_data_synth(7, bad3), 2);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc((size_t)n + 1, 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    return buf;
}

static void test_seeded_and_cli(void)
{
    char a[600], b[600], c[600], csv[PATH_MAX];
    snprintf(a, sizeof a, "%s/seed-a", dir);
    snprintf(b, sizeof b, "%s/seed-b", dir);
    snprintf(c, sizeof c, "%s/seed-c", dir);
    char *args_a[] = {"synth", "--out", a, "--format", "kaggle-rle", "--count", "3", "--size", "30x40",
                      "--classes", "4", "--seed", "5", NULL};
    char *args_b[] = {"synth", "--out", b, "--count", "3", "--size", "30x40", "--seed", "5", NULL};
    char *args_c[] = {"synth", "--out", c, "--count", "3", "--size", "30x40", "--seed", "6", NULL};
    CU_ASSERT_EQUAL(tt_cmd_data_synth(13, args_a), 0);
    CU_ASSERT_EQUAL(tt_cmd_data_synth(9, args_b), 0);
    CU_ASSERT_EQUAL(tt_cmd_data_synth(9, args_c), 0);
    snprintf(csv, sizeof csv, "%s/train.csv", a);
    char *ta = slurp(csv);
    snprintf(csv, sizeof csv, "%s/train.csv", b);
    char *tb = slurp(csv);
    snprintf(csv, sizeof csv, "%s/train.csv", c);
    char *tc = slurp(csv);
    CU_ASSERT_FATAL(ta && tb && tc);
    CU_ASSERT_STRING_EQUAL(ta, tb);
    CU_ASSERT(strcmp(ta, tc) != 0);
    free(ta), free(tb), free(tc);

    char *bad1[] = {"synth", "--out", a, "--format", "coco", NULL};
    char *bad2[] = {"synth", "--out", a, "--size", "0x5", NULL};
    char *bad3[] = {"synth", "--out", a, "--classes", "1", "--format", "folder", NULL};
    char *bad4[] = {"synth", "--count", "3", NULL};
    char *bad5[] = {"synth", "--out", a, "--seed", "-1", NULL};
    char *bad6[] = {"synth", "--out", a, "--size", "12xq", NULL};
    CU_ASSERT_EQUAL(tt_cmd_data_synth(5, bad1), 2);
    CU_ASSERT_EQUAL(tt_cmd_data_synth(5, bad2), 2);
    CU_ASSERT_EQUAL(tt_cmd_data_synth(7, bad3), 2);
    CU_ASSERT_EQUAL(tt_cmd_data_synth(3, bad4), 2);
    CU_ASSERT_EQUAL(tt_cmd_data_synth(5, bad5), 2);
    CU_ASSERT_EQUAL(tt_cmd_data_synth(5, bad6), 2);
}

int main(void)
{
    if (!rd_tempdir_in(dir, sizeof dir, "pixels")) return 1;
    CU_TestInfo tests[] = {
        {"kaggle-rle: files, CSV, masks, classes", test_kaggle_rle},
        {"folder: images and class-index masks", test_folder},
        {"seeded output and command options", test_seeded_and_cli},
        {"grey images, ignore regions, region sizes", test_options},
        {"--rare-class: the last class in few images", test_rare_class},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("synth", tests, TH_HOST);
    rd_rmtree(dir);
    return rc;
}

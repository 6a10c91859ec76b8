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
    tt_synth_config cfg = {out, TT_SYNTH_KAGGLE_RLE, 8, 48, 64, 4, 3};
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
    tt_synth_config cfg = {out, TT_SYNTH_FOLDER, 6, 40, 52, 4, 9};
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
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("synth", tests);
    rd_rmtree(dir);
    return rc;
}

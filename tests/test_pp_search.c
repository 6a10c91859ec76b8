/* The per-class post-processing search (infer/pp_search.h) on pictures
 * whose best threshold and minimum size are known, against the
 * competition's Dice computed by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "infer/pp_search.h"

enum { W = 40, H = 30, N = W * H };

static void fill(float *plane, int x0, int y0, int w, int h, float v)
{
    for (int y = y0; y < y0 + h; y++)
        for (int x = x0; x < x0 + w; x++) plane[y * W + x] = v;
}

static void mark(uint8_t *plane, int x0, int y0, int w, int h, uint8_t v)
{
    for (int y = y0; y < y0 + h; y++)
        for (int x = x0; x < x0 + w; x++) plane[y * W + x] = v;
}

/* Multi-label, one class: a true 10x10 square predicted at 0.6, a 3x3
 * speck at 0.9 and a wrong 10x10 region at 0.52.  Only a threshold of 0.55
 * drops the region and keeps the square, only a minimum size from 10 to 100
 * drops the speck: the search must find 0.55 and the first size in range
 * (12 of 0, 1, 2, 6, 12, 24, 60 for a mean area of 1200), Dice 1, where the
 * defaults (0.5, 0) score 2 * 100 / (209 + 100).  A second image with no
 * truth and nothing predicted scores 1 everywhere. */
static void picture(float *probs, uint8_t *truth, uint8_t wrong_ones)
{
    for (int i = 0; i < N; i++) probs[i] = 0.1f;
    memset(truth, 0, N);
    fill(probs, 2, 2, 10, 10, 0.6f);
    mark(truth, 2, 2, 10, 10, 1);
    fill(probs, 30, 20, 3, 3, 0.9f);
    mark(truth, 30, 20, 3, 3, wrong_ones);
    fill(probs, 20, 2, 10, 10, 0.52f);
    mark(truth, 20, 2, 10, 10, wrong_ones);
}

static void test_multi_label(void)
{
    float probs[N];
    uint8_t truth[N];
    picture(probs, truth, 0);
    tt_pp_search *s;
    TH_OK(tt_pp_search_create(1, 1, 0.5f, 0, (double)N, &s));
    TH_OK(tt_pp_search_add(s, probs, truth, W, H));
    tt_pp_choice c;
    double mean, dflt;
    tt_pp_search_result(s, &c, &mean, &dflt);
    printf("\n  one image: threshold %.2f, min size %d, Dice %.4f (defaults %.4f)", c.threshold,
           c.min_size, c.dice, c.default_dice);
    CU_ASSERT(fabsf(c.threshold - 0.55f) < 1e-6f);
    CU_ASSERT_EQUAL(c.min_size, 12);
    CU_ASSERT_DOUBLE_EQUAL(c.dice, 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(c.default_dice, 200.0 / 309.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(mean, c.dice, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(dflt, c.default_dice, 1e-12);
    for (int i = 0; i < N; i++) probs[i] = 0.1f;
    memset(truth, 0, sizeof truth);
    TH_OK(tt_pp_search_add(s, probs, truth, W, H));
    tt_pp_search_result(s, &c, &mean, &dflt);
    CU_ASSERT_DOUBLE_EQUAL(c.dice, 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(c.default_dice, (200.0 / 309.0 + 1.0) / 2, 1e-12);
    /* ignored pixels count on neither side: the region ignored, the speck
     * too, any threshold up to 0.55 and any size is perfect; ties keep the
     * defaults */
    tt_pp_search_destroy(s);
    TH_OK(tt_pp_search_create(1, 1, 0.5f, 0, (double)N, &s));
    picture(probs, truth, 255);
    TH_OK(tt_pp_search_add(s, probs, truth, W, H));
    tt_pp_search_result(s, &c, &mean, &dflt);
    CU_ASSERT(fabsf(c.threshold - 0.5f) < 1e-6f && c.min_size == 0);
    CU_ASSERT_DOUBLE_EQUAL(c.default_dice, 1.0, 1e-12);
    tt_pp_search_destroy(s);
}

/* Class index, three classes: class 1's true square, class 2's true
 * square and a 2x2 speck of class 2 elsewhere; the argmax predicts all
 * three.  Class 1 is perfect at size 0 (kept: the defaults), class 2 needs
 * a size from 5 to 36 (6 of the grid); class 0 is not searched. */
static void test_class_index(void)
{
    float probs[3 * N];
    uint8_t truth[N];
    for (int i = 0; i < N; i++) probs[i] = 0.8f, probs[N + i] = 0.1f, probs[2 * N + i] = 0.1f;
    memset(truth, 0, sizeof truth);
    fill(probs + N, 2, 2, 8, 8, 0.9f);
    mark(truth, 2, 2, 8, 8, 1);
    fill(probs + 2 * N, 20, 10, 6, 6, 0.9f);
    mark(truth, 20, 10, 6, 6, 2);
    fill(probs + 2 * N, 35, 25, 2, 2, 0.9f);
    tt_pp_search *s;
    TH_OK(tt_pp_search_create(3, 0, 0.5f, 0, (double)N, &s));
    TH_OK(tt_pp_search_add(s, probs, truth, W, H));
    tt_pp_choice c[3];
    double mean, dflt;
    tt_pp_search_result(s, c, &mean, &dflt);
    printf("\n  class index: class 1 min size %d (Dice %.4f), class 2 min size %d (Dice %.4f, "
           "defaults %.4f)", c[1].min_size, c[1].dice, c[2].min_size, c[2].dice, c[2].default_dice);
    CU_ASSERT(c[1].min_size == 0 && c[1].dice == 1.0);
    CU_ASSERT_EQUAL(c[2].min_size, 6);
    CU_ASSERT_DOUBLE_EQUAL(c[2].dice, 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(c[2].default_dice, 72.0 / 76.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(mean, 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(dflt, (1.0 + 72.0 / 76.0) / 2, 1e-12);
    tt_pp_search_destroy(s);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"multi-label: the threshold and size that are known best", test_multi_label},
        {"class index: sizes per class, class 0 left", test_class_index},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("pp_search", tests, TH_HOST);
}

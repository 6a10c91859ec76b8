/*
 * Dice and IoU against hand-computed cases: empty vs empty = 1, empty vs
 * non-empty = 0, partial overlaps, the Kaggle mean over (image, class)
 * pairs, ignore pixels of class-index masks, and the JSON report.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "train/metrics.h"

static double worst;

static void near(double got, double want)
{
    double err = fabs(got - want);
    if (err > worst) worst = err;
    CU_ASSERT(err < 1e-12);
}

/* Two classes, three images of 4 pixels each, multi-label. */
static void test_multi_label(void)
{
    tt_metrics *m = NULL;
    TH_OK(tt_metrics_create(2, &m));
    /* image 1: class 0 pred {1,1,0,0} truth {1,0,1,0}: TP1 FP1 FN1 -> dice 2/4, iou 1/3;
     *          class 1 both empty -> 1, 1 */
    const uint8_t p1[8] = {1, 1, 0, 0, 0, 0, 0, 0}, t1[8] = {1, 0, 1, 0, 0, 0, 0, 0};
    tt_metrics_add_multi_label(m, p1, t1, 4);
    near(tt_metrics_dice(m, 0), 0.5);
    near(tt_metrics_iou(m, 0), 1.0 / 3);
    near(tt_metrics_dice(m, 1), 1.0);
    near(tt_metrics_iou(m, 1), 1.0);
    /* image 2: class 0 pred empty, truth not -> 0; class 1 pred {0,0,0,1}, truth empty -> 0 */
    const uint8_t p2[8] = {0, 0, 0, 0, 0, 0, 0, 1}, t2[8] = {0, 1, 1, 0, 0, 0, 0, 0};
    tt_metrics_add_multi_label(m, p2, t2, 4);
    /* image 3: class 0 perfect {1,1,1,1}; class 1 pred {1,1,1,0} truth {0,1,1,1}: 2,1,1 -> 4/6 */
    const uint8_t p3[8] = {1, 1, 1, 1, 1, 1, 1, 0}, t3[8] = {1, 1, 1, 1, 0, 1, 1, 1};
    tt_metrics_add_multi_label(m, p3, t3, 4);
    CU_ASSERT_EQUAL(m->images, 3);
    near(tt_metrics_dice(m, 0), (0.5 + 0 + 1) / 3);
    near(tt_metrics_dice(m, 1), (1 + 0 + 4.0 / 6) / 3);
    near(tt_metrics_iou(m, 1), (1 + 0 + 0.5) / 3);
    near(tt_metrics_mean_dice(m), (0.5 + 0 + 1 + 1 + 0 + 4.0 / 6) / 6);
    near(tt_metrics_mean_iou(m), (1.0 / 3 + 0 + 1 + 1 + 0 + 0.5) / 6);
    /* global class 0: TP 1+0+4 = 5, FP 1, FN 1+2 = 3 -> 10/14 */
    near(tt_metrics_global_dice(m, 0), 10.0 / 14);
    near(tt_metrics_global_iou(m, 0), 5.0 / 9);
    CU_ASSERT_EQUAL(m->tp[1], 2);
    CU_ASSERT_EQUAL(m->fp[1], 2);
    CU_ASSERT_EQUAL(m->fn[1], 1);
    tt_metrics_reset(m);
    CU_ASSERT(isnan(tt_metrics_mean_dice(m)));
    tt_metrics_destroy(m);
}

/* Three classes, class-index masks with ignore pixels. */
static void test_class_index(void)
{
    tt_metrics *m = NULL;
    TH_OK(tt_metrics_create(3, &m));
    /* truth {0,0,1,1,255,255,2}, pred {0,1,1,1,2,0,0}: the two ignored pixels count nowhere.
     * class 0: TP1 (p0) FP1 (p6) FN1 (p1) -> 0.5; class 1: TP2 FP1 FN0 -> 4/5;
     * class 2: TP0 FP0 FN1 -> 0 */
    const uint8_t truth[7] = {0, 0, 1, 1, 255, 255, 2}, pred[7] = {0, 1, 1, 1, 2, 0, 0};
    tt_metrics_add_class_index(m, pred, truth, 7, TT_METRICS_IGNORE);
    near(tt_metrics_dice(m, 0), 0.5);
    near(tt_metrics_dice(m, 1), 0.8);
    near(tt_metrics_iou(m, 1), 2.0 / 3);
    near(tt_metrics_dice(m, 2), 0.0);
    near(tt_metrics_mean_dice(m), (0.5 + 0.8 + 0) / 3);
    CU_ASSERT_EQUAL(m->fp[2], 0); /* the 2 predicted on an ignored pixel is not counted */
    /* without ignore, 255 in the truth is "no class": the predictions there are false positives */
    tt_metrics_reset(m);
    tt_metrics_add_class_index(m, pred, truth, 7, -1);
    CU_ASSERT_EQUAL(m->fp[2], 1);
    CU_ASSERT_EQUAL(m->fp[0], 2);
    /* an image where class 2 is absent from both -> 1 */
    tt_metrics_reset(m);
    const uint8_t t2[3] = {0, 1, 255}, p2[3] = {0, 1, 2};
    tt_metrics_add_class_index(m, p2, t2, 3, TT_METRICS_IGNORE);
    near(tt_metrics_dice(m, 2), 1.0);
    near(tt_metrics_mean_dice(m), 1.0);
    near(tt_metrics_mean_iou(m), 1.0);
    tt_metrics_destroy(m);
}

static void test_json(void)
{
    tt_metrics *m = NULL;
    TH_OK(tt_metrics_create(2, &m));
    const uint8_t p[2] = {1, 0}, t[2] = {1, 1};
    tt_metrics_add_multi_label(m, p, t, 1);
    const char *names[] = {"Fish", "Flower"};
    char *text = tt_metrics_json(m, names);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"Flower\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"mean_dice\":\t0.5"));
    free(text);
    tt_metrics_destroy(m);
    tt_status s = tt_metrics_create(0, &m);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(m);
    tt_status_free(s);
}

static void test_report(void)
{
    printf("\n  largest error against the hand-computed values: %.2e (tol 1e-12)", worst);
    CU_ASSERT(worst < 1e-12);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"multi-label: per image, per class, mean, global", test_multi_label},
        {"class-index with ignore pixels", test_class_index},
        {"JSON report", test_json},
        {"largest error", test_report},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("metrics", tests, TH_HOST);
}

/*
 * The sliding-window plan: every pixel covered with weight > 0 for image
 * sizes 1x1, 255x257 and 1400x2100 with a 256 tile and overlaps 0, 0.25,
 * 0.5; tile origins (first at 0, last at the border, requested overlap);
 * the separable summed weight against a brute-force map; Gaussian weights
 * (peak 1, floor > 0); reflect indices; bad arguments.
 */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "infer/tiling.h"

static const int sizes[][2] = {{1, 1}, {255, 257}, {1400, 2100}};
static const double overlaps[] = {0, 0.25, 0.5};

/* Checks one axis: origins and coverage; returns the smallest summed weight. */
static double check_axis(const tt_tile_axis *a, double overlap)
{
    int L = a->length, T = a->tile;
    if (L <= T) {
        CU_ASSERT_EQUAL(a->count, 1);
        CU_ASSERT_EQUAL(a->origin[0], -((T - L) / 2));
    } else {
        int step = (int)floor(T * (1 - overlap));
        if (step < 1) step = 1;
        CU_ASSERT_EQUAL(a->count, (L - T + step - 1) / step + 1);
        CU_ASSERT_EQUAL(a->origin[0], 0);
        CU_ASSERT_EQUAL(a->origin[a->count - 1], L - T);
        for (int i = 1; i < a->count; i++) {
            CU_ASSERT(a->origin[i] > a->origin[i - 1]);
            CU_ASSERT(a->origin[i] - a->origin[i - 1] <= step); /* at least the overlap */
        }
    }
    double *sum = malloc((size_t)L * sizeof *sum);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sum);
    tt_tile_axis_sums(a, sum);
    double low = INFINITY;
    for (int i = 0; i < L; i++)
        if (sum[i] < low) low = sum[i];
    free(sum);
    return low;
}

static void test_coverage(void)
{
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t o = 0; o < 3; o++)
            for (int blend = 0; blend < 2; blend++) {
                int h = sizes[s][0], w = sizes[s][1];
                tt_tile_plan plan;
                TH_OK(tt_tile_plan_make(h, w, 256, 256, overlaps[o], (tt_blend_kind)blend, &plan));
                double low = check_axis(&plan.y, overlaps[o]) * check_axis(&plan.x, overlaps[o]);
                CU_ASSERT(low > 0);
                if (blend == TT_BLEND_MEAN) CU_ASSERT(low >= 1.0);
                printf("\n  %4dx%-4d overlap %.2f %-8s tiles %3dx%-3d min summed weight %.3g", h,
                       w, overlaps[o], blend ? "mean" : "gaussian", plan.y.count, plan.x.count,
                       low);
                tt_tile_plan_free(&plan);
            }
}

/* The brute-force map equals sum_y[y] * sum_x[x] on the small sizes. */
static void test_weight_map(void)
{
    double worst = 0;
    for (size_t s = 0; s < 2; s++)
        for (size_t o = 0; o < 3; o++) {
            int h = sizes[s][0], w = sizes[s][1];
            tt_tile_plan plan;
            TH_OK(tt_tile_plan_make(h, w, 256, 256, overlaps[o], TT_BLEND_GAUSSIAN, &plan));
            float *map = malloc((size_t)h * w * sizeof *map);
            double *sy = malloc((size_t)h * sizeof *sy), *sx = malloc((size_t)w * sizeof *sx);
            CU_ASSERT_PTR_NOT_NULL_FATAL(map && sy && sx);
            tt_tile_plan_weight_map(&plan, map);
            tt_tile_axis_sums(&plan.y, sy);
            tt_tile_axis_sums(&plan.x, sx);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    double want = sy[y] * sx[x], got = map[(size_t)y * w + x];
                    CU_ASSERT_FATAL(got > 0);
                    double err = fabs(got - want) / want;
                    if (err > worst) worst = err;
                }
            free(map);
            free(sy);
            free(sx);
            tt_tile_plan_free(&plan);
        }
    printf("\n  brute-force map vs separable sums: max rel error %.2e (tol 1e-5)", worst);
    CU_ASSERT(worst < 1e-5);
}

static void test_gaussian(void)
{
    tt_tile_plan plan;
    TH_OK(tt_tile_plan_make(300, 300, 256, 128, 0.5, TT_BLEND_GAUSSIAN, &plan));
    for (int axis = 0; axis < 2; axis++) {
        const tt_tile_axis *a = axis ? &plan.x : &plan.y;
        float top = 0, low = 1;
        for (int i = 0; i < a->tile; i++) {
            if (a->weight[i] > top) top = a->weight[i];
            if (a->weight[i] < low) low = a->weight[i];
            CU_ASSERT(a->weight[i] == a->weight[a->tile - 1 - i]); /* symmetric */
        }
        CU_ASSERT_DOUBLE_EQUAL(top, 1.0, 1e-6);
        CU_ASSERT(low >= TT_TILE_MIN_AXIS_WEIGHT);
        /* sigma = T/8: one sigma from the centre the weight is exp(-1/2) */
        int i = a->tile / 2 + a->tile / 8;
        double d = i + 0.5 - a->tile / 2.0, sigma = a->tile / 8.0;
        CU_ASSERT_DOUBLE_EQUAL(a->weight[i], exp(-d * d / (2 * sigma * sigma)) /
                                                 exp(-0.25 / (2 * sigma * sigma)), 1e-6);
    }
    tt_tile_plan_free(&plan);
    TH_OK(tt_tile_plan_make(10, 10, 8, 8, 0, TT_BLEND_MEAN, &plan));
    for (int i = 0; i < 8; i++) CU_ASSERT_EQUAL(plan.x.weight[i], 1.0f);
    CU_ASSERT_EQUAL(plan.x.count, 2);
    tt_tile_plan_free(&plan);
}

static void test_reflect(void)
{
    /* numpy.pad(mode="reflect") of [0 1 2] */
    static const int want[] = {0, 1, 2, 1, 0, 1, 2, 1, 0, 1}; /* i = -4 .. 5 */
    for (int i = -4; i <= 5; i++) CU_ASSERT_EQUAL(tt_pad_reflect_index(i, 3), want[i + 4]);
    for (int i = -300; i <= 300; i += 7) CU_ASSERT_EQUAL(tt_pad_reflect_index(i, 1), 0);
    CU_ASSERT_EQUAL(tt_pad_reflect_index(-1, 2), 1);
    CU_ASSERT_EQUAL(tt_pad_reflect_index(2, 2), 0);
}

static void test_bad_arguments(void)
{
    tt_tile_plan plan;
    tt_status s = tt_tile_plan_make(10, 10, 8, 8, 1.0, TT_BLEND_MEAN, &plan);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    s = tt_tile_plan_make(10, 10, 0, 8, 0.5, TT_BLEND_MEAN, &plan);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    s = tt_tile_plan_make(0, 10, 8, 8, 0.5, TT_BLEND_MEAN, &plan);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    tt_tile_plan_free(&plan);
    tt_blend_kind b = TT_BLEND_MEAN;
    s = tt_blend_kind_parse("gauss", &b);
    CU_ASSERT_PTR_NOT_NULL(s);
    CU_ASSERT_EQUAL(b, TT_BLEND_MEAN);
    tt_status_free(s);
    TH_OK(tt_blend_kind_parse("gaussian", &b));
    CU_ASSERT_EQUAL(b, TT_BLEND_GAUSSIAN);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"every pixel covered, weight > 0", test_coverage},
        {"separable sums = brute-force map", test_weight_map},
        {"gaussian and mean weights", test_gaussian},
        {"reflect padding indices", test_reflect},
        {"bad arguments", test_bad_arguments},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("tiling", tests, TH_HOST);
}

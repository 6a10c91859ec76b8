/* Device reductions: sum of squares vs a double reference (sizes 1 to tens
 * of millions, offsets, accumulation over several arrays) and the count of
 * non-finite elements (NaN / Inf at the ends, clean arrays clean). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "ops/reduce.h"
#include "ops/util.h"
#include "ref_loss.h"

static float read_f32(tt_buffer *b)
{
    float v;
    TH_OK(tt_read(b->backend, &v, tt_mem_of(b), sizeof v));
    return v;
}

static uint32_t read_u32(tt_buffer *b)
{
    uint32_t v;
    TH_OK(tt_read(b->backend, &v, tt_mem_of(b), sizeof v));
    return v;
}

/* Random arrays placed 3 floats into their buffer; acc starts at 0. */
static void test_sum_squares_sizes(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    static const size_t sizes[] = {1, 2, 16, 255, 257, 1000, 4096, 65537, 1000003};
    double worst = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        float *x = malloc((n + 3) * sizeof(float));
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        uint64_t seed = 11 + k;
        th_fill_uniform(x, n + 3, -2, 2, &seed);
        x[0] = x[1] = x[2] = 1e6f; /* before the offset: must not count */
        tt_buffer *bx = th_upload(x, n + 3, "x"), *acc = th_zeros(1, "acc");
        TH_OK(tt_sum_squares(be, tt_mem_of(acc), tt_mem_f32(tt_mem_of(bx), 3), n));
        double want = ref_sum_squares(x + 3, n);
        double err = fabs(read_f32(acc) - want) / want;
        printf("\n    n=%zu: sum of squares rel err %.2e", n, err);
        CU_ASSERT(err < 1e-5);
        if (err > worst) worst = err;
        tt_buffer_free(bx), tt_buffer_free(acc);
        free(x);
    }
    printf("\n    largest rel error %.2e\n", worst);
}

/* 20,000,003 equal values: the worst case for a plain float running sum,
 * and the size of a real gradient arena.  Made by tt_fill on the device. */
static void test_sum_squares_large(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const size_t n = 20000003;
    tt_buffer *bx = NULL, *acc = th_zeros(1, "acc");
    TH_OK(tt_buffer_alloc(be, n * sizeof(float), TT_MEM_OTHER, "big", &bx));
    TH_OK(tt_fill(be, tt_mem_of(bx), 0.1f, n));
    TH_OK(tt_sum_squares(be, tt_mem_of(acc), tt_mem_of(bx), n));
    double want = (double)n * (double)0.1f * (double)0.1f;
    double err = fabs(read_f32(acc) - want) / want;
    printf("\n    n=%zu equal values: rel err %.2e\n", n, err);
    CU_ASSERT(err < 1e-5);
    tt_buffer_free(bx), tt_buffer_free(acc);
}

/* The accumulator adds: acc = 2.5 + |a|^2 + |b|^2; n = 0 adds nothing. */
static void test_sum_squares_accumulates(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { NA = 1031, NB = 77 };
    float a[NA], b[NB], start = 2.5f;
    uint64_t seed = 5;
    th_fill_uniform(a, NA, -1, 1, &seed);
    th_fill_uniform(b, NB, -3, 3, &seed);
    tt_buffer *ba = th_upload(a, NA, "a"), *bb = th_upload(b, NB, "b");
    tt_buffer *acc = th_upload(&start, 1, "acc");
    TH_OK(tt_sum_squares(be, tt_mem_of(acc), tt_mem_of(ba), NA));
    TH_OK(tt_sum_squares(be, tt_mem_of(acc), tt_mem_of(bb), NB));
    TH_OK(tt_sum_squares(be, tt_mem_of(acc), tt_mem_of(bb), 0));
    double want = 2.5 + ref_sum_squares(a, NA) + ref_sum_squares(b, NB);
    double err = fabs(read_f32(acc) - want) / want;
    printf("\n    two arrays into one accumulator: rel err %.2e\n", err);
    CU_ASSERT(err < 1e-6);
    tt_buffer_free(ba), tt_buffer_free(bb), tt_buffer_free(acc);
}

static void test_nonfinite(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    static const size_t sizes[] = {1, 1000, 4096, 1000003}; /* 4096: no tail */
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        float *x = malloc(n * sizeof(float));
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        uint64_t seed = 3;
        th_fill_uniform(x, n, -1e30f, 1e30f, &seed);
        x[0] = 3.4e38f; /* the largest floats are finite */
        if (n > 1) x[1] = -3.4e38f;
        tt_buffer *bx = th_upload(x, n, "x"), *count = th_zeros(1, "count");
        TH_OK(tt_count_nonfinite(be, tt_mem_of(count), tt_mem_of(bx), n));
        CU_ASSERT_EQUAL(read_u32(count), 0); /* clean */

        static const float bad[] = {NAN, INFINITY, -INFINITY};
        uint32_t expected = 0;
        for (int b = 0; b < 3; b++) {
            float keep = x[n - 1];
            TH_OK(tt_write(be, tt_mem_f32(tt_mem_of(bx), n - 1), &bad[b], sizeof(float)));
            TH_OK(tt_count_nonfinite(be, tt_mem_of(count), tt_mem_of(bx), n));
            expected++; /* adds into the counter */
            CU_ASSERT_EQUAL(read_u32(count), expected);
            TH_OK(tt_write(be, tt_mem_f32(tt_mem_of(bx), n - 1), &keep, sizeof(float)));
        }
        /* NaN first and Inf last: two */
        if (n > 1) {
            float nan = NAN, inf = INFINITY;
            TH_OK(tt_write(be, tt_mem_of(bx), &nan, sizeof nan));
            TH_OK(tt_write(be, tt_mem_f32(tt_mem_of(bx), n - 1), &inf, sizeof inf));
            TH_OK(tt_fill(be, tt_mem_of(count), 0.0f, 1));
            TH_OK(tt_count_nonfinite(be, tt_mem_of(count), tt_mem_of(bx), n));
            CU_ASSERT_EQUAL(read_u32(count), 2);
            /* an offset past the NaN and short of the Inf: clean */
            TH_OK(tt_fill(be, tt_mem_of(count), 0.0f, 1));
            TH_OK(tt_count_nonfinite(be, tt_mem_of(count), tt_mem_f32(tt_mem_of(bx), 1), n - 2));
            CU_ASSERT_EQUAL(read_u32(count), 0);
        }
        printf("\n    n=%zu: clean 0, NaN/Inf/-Inf at the last element found", n);
        tt_buffer_free(bx), tt_buffer_free(count);
        free(x);
    }
    printf("\n");
}

static void test_group_size(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    int g = tt_reduce_group_size(be);
    CU_ASSERT(g >= 1 && g <= 256 && (g & (g - 1)) == 0);
    CU_ASSERT((size_t)g <= be->device.max_work_group_size);
    CU_ASSERT_EQUAL(tt_reduce_groups(be, 1, TT_REDUCE_MAX_GROUPS), 1);
    CU_ASSERT_EQUAL(tt_reduce_groups(be, (size_t)g + 1, TT_REDUCE_MAX_GROUPS), 2);
    CU_ASSERT_EQUAL(tt_reduce_groups(be, (size_t)1 << 40, TT_REDUCE_MAX_GROUPS),
                    TT_REDUCE_MAX_GROUPS);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"sum of squares, sizes 1 to 1000003, offset", test_sum_squares_sizes},
        {"sum of squares, 20 million equal values", test_sum_squares_large},
        {"sum of squares accumulates", test_sum_squares_accumulates},
        {"non-finite count", test_nonfinite},
        {"work-group size", test_group_size},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("reduce", tests, TH_EVERY);
}

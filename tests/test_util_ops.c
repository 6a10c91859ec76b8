/* Utility ops fill / scale / axpy / copy (src/ops/util.c) against a C
 * reference, at byte offsets into larger buffers, with the floats around
 * the range checked untouched; odd sizes; n = 0; too many elements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "ops/util.h"

enum { PAD = 5 }; /* floats before and after the range: must stay as they were */

static const size_t sizes[] = {1, 7, 1000, 65537};

typedef struct util_case {
    size_t n, off_y, off_x; /* offsets in floats */
    float *y0, *x0;         /* host copies: PAD + n + PAD floats */
    tt_buffer *y, *x;
} util_case;

static util_case setup(size_t n, size_t off_y, size_t off_x, uint64_t seed)
{
    util_case c = {n, off_y, off_x, NULL, NULL, NULL, NULL};
    size_t ny = off_y + n + PAD, nx = off_x + n + PAD;
    c.y0 = malloc(ny * sizeof(float));
    c.x0 = malloc(nx * sizeof(float));
    CU_ASSERT_FATAL(c.y0 && c.x0);
    th_fill_uniform(c.y0, ny, -3, 3, &seed);
    th_fill_uniform(c.x0, nx, -3, 3, &seed);
    c.y = th_upload(c.y0, ny, "y");
    c.x = th_upload(c.x0, nx, "x");
    return c;
}

/* Compares y on the device with `want` (the whole buffer); x must be unchanged. */
static int check(const util_case *c, const float *want, const char *op)
{
    size_t ny = c->off_y + c->n + PAD, nx = c->off_x + c->n + PAD;
    float *got = malloc(ny * sizeof(float)), *gx = malloc(nx * sizeof(float));
    CU_ASSERT_FATAL(got && gx);
    th_download(got, c->y, ny);
    th_download(gx, c->x, nx);
    int exact = memcmp(got, want, ny * sizeof(float)) == 0;
    int x_same = memcmp(gx, c->x0, nx * sizeof(float)) == 0;
    if (!exact || !x_same)
        printf("\n    %s n=%zu: %s\n", op, c->n, exact ? "x was modified" : "y differs");
    free(got), free(gx);
    return exact && x_same;
}

static void teardown(util_case *c)
{
    tt_buffer_free(c->y), tt_buffer_free(c->x);
    free(c->y0), free(c->x0);
}

/* Each op is a single float operation per element, so results are exact
 * (bit for bit) against the same float computation on the host. */
static void test_fill(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    for (int variant = 0; variant < 2; variant++) { /* CPUs: fill_w8, then the scalar fill */
        if (variant) be->forced.w8 = TT_VARIANT_OFF;
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            util_case c = setup(sizes[k], PAD, PAD, 10 + k);
            TH_OK(tt_fill(be, tt_mem_f32(tt_mem_of(c.y), c.off_y), -1.25f, c.n));
            float *want = malloc((c.off_y + c.n + PAD) * sizeof(float));
            memcpy(want, c.y0, (c.off_y + c.n + PAD) * sizeof(float));
            for (size_t i = 0; i < c.n; i++) want[c.off_y + i] = -1.25f;
            CU_ASSERT(check(&c, want, "fill"));
            free(want);
            teardown(&c);
        }
    }
    be->forced.w8 = TT_VARIANT_DEVICE;
    printf("\n    fill: exact at offsets for n = 1, 7, 1000, 65537, both kernels\n");
}

static void test_scale(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        util_case c = setup(sizes[k], PAD + k, PAD, 20 + k);
        TH_OK(tt_scale(be, tt_mem_f32(tt_mem_of(c.y), c.off_y), 0.3f, c.n));
        float *want = malloc((c.off_y + c.n + PAD) * sizeof(float));
        memcpy(want, c.y0, (c.off_y + c.n + PAD) * sizeof(float));
        for (size_t i = 0; i < c.n; i++) want[c.off_y + i] *= 0.3f;
        CU_ASSERT(check(&c, want, "scale"));
        free(want);
        teardown(&c);
    }
    printf("\n    scale: exact at offsets\n");
}

static void test_axpy(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    double worst = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        util_case c = setup(sizes[k], PAD + 2, PAD + 1, 30 + k);
        TH_OK(tt_axpy(be, tt_mem_f32(tt_mem_of(c.y), c.off_y), tt_mem_f32(tt_mem_of(c.x), c.off_x),
                      -0.7f, c.n));
        size_t ny = c.off_y + c.n + PAD;
        float *got = malloc(ny * sizeof(float));
        double *want = malloc(ny * sizeof(double));
        CU_ASSERT_FATAL(got && want);
        for (size_t i = 0; i < ny; i++) want[i] = c.y0[i];
        for (size_t i = 0; i < c.n; i++)
            want[c.off_y + i] =
                (double)c.y0[c.off_y + i] + (double)-0.7f * (double)c.x0[c.off_x + i];
        th_download(got, c.y, ny);
        /* the device may fuse the multiply-add: one or two float roundings,
         * measured against the size of the terms (y + a x may cancel) */
        double err = 0;
        for (size_t i = 0; i < c.n; i++) {
            size_t at = c.off_y + i;
            double terms = fabs(c.y0[at]) + fabs(0.7 * c.x0[c.off_x + i]);
            err = fmax(err, fabs(got[at] - want[at]) / terms);
        }
        CU_ASSERT(err < 2.5e-7); /* two roundings of 2^-24 each */
        int untouched = 1;
        for (size_t i = 0; i < c.off_y; i++) untouched &= got[i] == c.y0[i];
        for (size_t i = c.off_y + c.n; i < ny; i++) untouched &= got[i] == c.y0[i];
        CU_ASSERT(untouched);
        if (err > worst) worst = err;
        free(got), free(want);
        teardown(&c);
    }
    printf("\n    axpy: largest error %.2e (relative to |y| + |a x|) vs double\n", worst);
}

static void test_copy(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        util_case c = setup(sizes[k], PAD + 3, PAD + k, 40 + k);
        TH_OK(tt_copy_f32(be, tt_mem_f32(tt_mem_of(c.y), c.off_y),
                          tt_mem_f32(tt_mem_of(c.x), c.off_x), c.n));
        float *want = malloc((c.off_y + c.n + PAD) * sizeof(float));
        memcpy(want, c.y0, (c.off_y + c.n + PAD) * sizeof(float));
        memcpy(want + c.off_y, c.x0 + c.off_x, c.n * sizeof(float));
        CU_ASSERT(check(&c, want, "copy"));
        free(want);
        teardown(&c);
    }
    printf("\n    copy: exact at offsets\n");
}

/* n = 0 changes nothing and is not an error; more than INT_MAX is refused
 * before anything is launched. */
static void test_edges(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    util_case c = setup(4, PAD, PAD, 50);
    tt_mem y = tt_mem_f32(tt_mem_of(c.y), c.off_y), x = tt_mem_f32(tt_mem_of(c.x), c.off_x);
    TH_OK(tt_fill(be, y, 9.0f, 0));
    TH_OK(tt_scale(be, y, 9.0f, 0));
    TH_OK(tt_axpy(be, y, x, 9.0f, 0));
    TH_OK(tt_copy_f32(be, y, x, 0));
    CU_ASSERT(check(&c, c.y0, "n = 0"));
    size_t huge = (size_t)1 << 33;
    tt_status s = tt_fill(be, y, 1.0f, huge);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_UNSUPPORTED);
    CU_ASSERT(strstr(tt_status_message(s), "fill") != NULL);
    tt_status_free(s);
    s = tt_axpy(be, y, x, 1.0f, huge);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_UNSUPPORTED);
    tt_status_free(s);
    teardown(&c);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"fill at offsets", test_fill},
        {"scale at offsets", test_scale},
        {"axpy at offsets", test_axpy},
        {"copy at offsets", test_copy},
        {"n = 0 and too many elements", test_edges},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("util_ops", tests, TH_EVERY);
}

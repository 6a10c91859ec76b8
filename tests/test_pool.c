/* Max and average 2-D pooling: forward (and saved argmax) vs the double
 * reference, finite-difference gradients, backward adds, ties, odd sizes
 * (floor mode drops the trailing row/column), overlapping windows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/avg_pool2d.h"
#include "ops/max_pool2d.h"
#include "ops/util.h"
#include "ref_act.h"

/* Tolerances: max pooling copies floats (exact); average pooling sums at
 * most 9 floats of mixed sign and size up to 5, so near-zero means carry a
 * few float ulps of the summands (relative with a floor of 1e-3: 1e-5).
 * Gradients: dinp0 + numeric gradient in double; that sum of size-1 values
 * can cancel to near zero, where the float error is absolute: relative with
 * a floor of 0.1 (GRAD_FLOOR). */
#define MAX_FORWARD_TOL 0.0
#define AVG_FORWARD_TOL 1e-5
#define GRAD_TOL 1e-5
#define GRAD_FLOOR 0.1
#define GRAD_H 1e-3

typedef struct loss_ctx {
    int is_max;
    const tt_pool2d_desc *desc;
    const double *dy;
    double *y; /* scratch, out_count */
    size_t out_count;
} loss_ctx;

/* L = sum(dy * pool(x)) */
static double loss(const double *x, void *opaque)
{
    loss_ctx *c = opaque;
    if (c->is_max) ref_max_pool2d_forward(c->y, NULL, x, c->desc);
    else ref_avg_pool2d_forward(c->y, x, c->desc);
    double sum = 0;
    for (size_t i = 0; i < c->out_count; i++) sum += c->dy[i] * c->y[i];
    return sum;
}

/* Values 0.015 apart in random order: no ties, and a 1e-3 step cannot
 * change which element of a window is the maximum. */
static void distinct_input(float *x, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(0.015 * ((double)i - n / 2.0));
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)th_uniform(seed, 0, (double)i);
        float t = x[i - 1];
        x[i - 1] = x[j], x[j] = t;
    }
}

static void check_pool(int is_max, tt_pool2d_desc d)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    uint64_t seed = 11 + (uint64_t)d.height * 31 + (uint64_t)d.kernel_h;
    int oh = tt_pool2d_out_h(&d), ow = tt_pool2d_out_w(&d);
    size_t n = (size_t)d.batch * d.channels * d.height * d.width;
    size_t m = (size_t)d.batch * d.channels * oh * ow;
    float *x = malloc(n * sizeof *x), *dx0 = malloc(n * sizeof *dx0);
    float *gotx = malloc(n * sizeof *gotx), *dy = malloc(m * sizeof *dy);
    float *goty = malloc(m * sizeof *goty);
    int *arg = malloc(m * sizeof *arg), *ref_arg = malloc(m * sizeof *ref_arg);
    double *wanty = malloc(m * sizeof *wanty), *wantx = malloc(n * sizeof *wantx);
    double *grad = malloc(n * sizeof *grad), *scratch = malloc(m * sizeof *scratch);
    CU_ASSERT_FATAL(x && dx0 && gotx && dy && goty && arg && ref_arg && wanty && wantx && grad &&
                    scratch);
    distinct_input(x, n, &seed);
    th_fill_uniform(dy, m, -1, 1, &seed);
    th_fill_uniform(dx0, n, -1, 1, &seed);
    double *xd = th_to_double(x, n), *dyd = th_to_double(dy, m);

    tt_buffer *bx = th_upload(x, n, "pool.x"), *by = th_zeros(m, "pool.y");
    tt_buffer *barg = th_zeros(m, "pool.argmax"); /* int32, same size as floats */
    tt_buffer *bdy = th_upload(dy, m, "pool.dy"), *bdx = th_upload(dx0, n, "pool.dx");

    /* forward */
    if (is_max) TH_OK(tt_max_pool2d_forward(be, tt_mem_of(by), tt_mem_of(barg), tt_mem_of(bx), &d));
    else TH_OK(tt_avg_pool2d_forward(be, tt_mem_of(by), tt_mem_of(bx), &d));
    th_download(goty, by, m);
    if (is_max) ref_max_pool2d_forward(wanty, ref_arg, xd, &d);
    else ref_avg_pool2d_forward(wanty, xd, &d);
    double fwd_err = th_max_rel_error(goty, wanty, m, 1e-3);
    int arg_mismatch = 0;
    if (is_max) {
        TH_OK(tt_read(be, arg, tt_mem_of(barg), m * sizeof *arg));
        for (size_t i = 0; i < m; i++) arg_mismatch += arg[i] != ref_arg[i];
    }

    /* backward vs central differences */
    loss_ctx ctx = {is_max, &d, dyd, scratch, m};
    th_numeric_grad(loss, &ctx, xd, n, GRAD_H, grad);
    if (is_max)
        TH_OK(tt_max_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(barg), &d));
    else TH_OK(tt_avg_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d));
    th_download(gotx, bdx, n);
    for (size_t i = 0; i < n; i++) wantx[i] = dx0[i] + grad[i];
    double grad_err = th_max_rel_error(gotx, wantx, n, GRAD_FLOOR);

    /* the analytic reference agrees with the numeric gradient */
    for (size_t i = 0; i < n; i++) wantx[i] = 0;
    if (is_max) ref_max_pool2d_backward(wantx, dyd, ref_arg, &d);
    else ref_avg_pool2d_backward(wantx, dyd, &d);
    double ref_err = 0;
    for (size_t i = 0; i < n; i++)
        ref_err = fmax(ref_err, fabs(wantx[i] - grad[i]) / (fabs(grad[i]) + 1e-3));

    /* twice adds twice */
    if (is_max)
        TH_OK(tt_max_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(barg), &d));
    else TH_OK(tt_avg_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d));
    th_download(gotx, bdx, n);
    for (size_t i = 0; i < n; i++) wantx[i] = dx0[i] + 2 * grad[i];
    double twice_err = th_max_rel_error(gotx, wantx, n, GRAD_FLOOR);

    /* without a kept argmax: the same values, and the backward that finds
     * the winners in the input gives the same bits, twice */
    int values_diff = 0, from_input_diff = 0;
    if (is_max) {
        float *y2 = malloc(m * sizeof *y2), *dx2 = malloc(n * sizeof *dx2);
        CU_ASSERT_FATAL(y2 && dx2);
        tt_buffer *by2 = th_zeros(m, "pool.y2"), *bdx2 = th_upload(dx0, n, "pool.dx2");
        TH_OK(tt_max_pool2d_forward(be, tt_mem_of(by2), (tt_mem){0}, tt_mem_of(bx), &d));
        th_download(y2, by2, m);
        values_diff = memcmp(y2, goty, m * sizeof *y2) != 0;
        for (int k = 0; k < 2; k++)
            TH_OK(tt_max_pool2d_backward_from_input(be, tt_mem_of(bdx2), tt_mem_of(bdy),
                                                    tt_mem_of(bx), &d));
        th_download(dx2, bdx2, n);
        from_input_diff = memcmp(dx2, gotx, n * sizeof *dx2) != 0;
        tt_buffer_free(by2), tt_buffer_free(bdx2);
        free(y2), free(dx2);
    }

    printf("\n  %s (%d,%d,%d,%d) k%dx%d s%dx%d -> %dx%d: forward %.2e, argmax mismatches %d, "
           "grad vs numeric %.2e, ref vs numeric %.2e, twice %.2e",
           is_max ? "max" : "avg", d.batch, d.channels, d.height, d.width, d.kernel_h,
           d.kernel_w, d.stride_h, d.stride_w, oh, ow, fwd_err, arg_mismatch, grad_err, ref_err,
           twice_err);
    CU_ASSERT(fwd_err <= (is_max ? MAX_FORWARD_TOL : AVG_FORWARD_TOL));
    CU_ASSERT_EQUAL(arg_mismatch, 0);
    CU_ASSERT(grad_err < GRAD_TOL);
    CU_ASSERT(ref_err < GRAD_TOL);
    CU_ASSERT(twice_err < GRAD_TOL);
    CU_ASSERT_EQUAL(values_diff, 0);
    CU_ASSERT_EQUAL(from_input_diff, 0);

    tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(barg), tt_buffer_free(bdy);
    tt_buffer_free(bdx);
    free(x), free(dx0), free(gotx), free(dy), free(goty), free(arg), free(ref_arg);
    free(wanty), free(wantx), free(grad), free(scratch), free(xd), free(dyd);
}

static const tt_pool2d_desc cases[] = {
    {1, 3, 7, 9, 2, 2, 2, 2},  /* odd sizes: 3x4, last row and column dropped */
    {2, 5, 5, 3, 2, 2, 2, 2},  /* batch 2, 5 channels: 2x1 */
    {2, 3, 2, 2, 2, 2, 2, 2},  /* one window: 1x1 */
    {2, 3, 7, 9, 3, 3, 2, 2},  /* overlapping windows: 3x4 */
    {1, 5, 5, 3, 3, 2, 1, 2},  /* rectangular kernel and stride: 3x1 */
    {1, 3, 1, 1, 1, 1, 1, 1},  /* 1x1 image, 1x1 window */
    {2, 2, 5, 35, 2, 2, 2, 2}, /* 2x17: two whole 8-wide blocks, a ragged one, odd width */
    {1, 2, 4, 32, 2, 2, 2, 2}, /* 2x16: whole blocks only */
};
enum { CASE_COUNT = sizeof cases / sizeof cases[0] };

static void test_max_pool(void)
{
    for (int i = 0; i < CASE_COUNT; i++) check_pool(1, cases[i]);
    /* the 2x2 stride-2 cases once more through the generic kernels (CPUs
     * run their own 8-wide ones above) */
    th_setenv("TT_CONV_DIRECT_VARIANT", "scalar");
    for (int i = 0; i < CASE_COUNT; i++)
        if (cases[i].kernel_h == 2 && cases[i].stride_h == 2) check_pool(1, cases[i]);
    th_setenv("TT_CONV_DIRECT_VARIANT", NULL);
}

static void test_avg_pool(void)
{
    for (int i = 0; i < CASE_COUNT; i++) check_pool(0, cases[i]);
}

/* Ties keep the first maximum in row-major window order (PyTorch); NaN wins.
 * The 4x6 pattern below three times side by side (a 4x18 plane, 2x9
 * windows), so CPUs meet it in their 8-wide kernels and lane by lane. */
static void test_max_pool_ties(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    /* one 4x6 pattern, three 2x2 windows per row pair */
    const float pattern[24] = {
        1, 1, 0, 2, 5, 4,      /* windows: all ones | 2 at (0,3) vs (1,2) | NaN at (1,5) */
        1, 1, 2, 0, 3, NAN,
        -1, -1, 7, 7, -INFINITY, -INFINITY, /* -1 ties | 7 ties | all -inf */
        -1, -1, 7, 7, -INFINITY, -INFINITY,
    };
    const int pattern_arg[6] = {0, 3, 11, 12, 14, 16};
    enum { REPEAT = 3, W = 6 * REPEAT, IN = 4 * W, OUT = 2 * 3 * REPEAT };
    float x[IN], y[OUT];
    int want_arg[OUT], arg[OUT];
    for (int i = 0; i < IN; i++) x[i] = pattern[(i / W) * 6 + i % 6];
    for (int o = 0; o < OUT; o++) { /* window o = (oy, ox): pattern window oy 3 + ox % 3 */
        int oy = o / (3 * REPEAT), ox = o % (3 * REPEAT), at = pattern_arg[oy * 3 + ox % 3];
        want_arg[o] = at / 6 * W + at % 6 + 6 * (ox / 3);
    }
    tt_pool2d_desc d = tt_pool2d_square(1, 1, 4, W, 2, 2);
    tt_buffer *bx = th_upload(x, IN, "ties.x"), *by = th_zeros(OUT, "ties.y");
    tt_buffer *barg = th_zeros(OUT, "ties.argmax");
    TH_OK(tt_max_pool2d_forward(be, tt_mem_of(by), tt_mem_of(barg), tt_mem_of(bx), &d));
    th_download(y, by, OUT);
    TH_OK(tt_read(be, arg, tt_mem_of(barg), sizeof arg));
    for (int o = 0; o < OUT; o++) {
        CU_ASSERT_EQUAL(arg[o], want_arg[o]);
        float v = x[want_arg[o]];
        CU_ASSERT(isnan(v) ? isnan(y[o]) : y[o] == v);
    }
    /* backward sends each gradient to exactly that element */
    float dy[OUT], dx[IN];
    for (int o = 0; o < OUT; o++) dy[o] = (float)(o + 1);
    tt_buffer *bdy = th_upload(dy, OUT, "ties.dy"), *bdx = th_zeros(IN, "ties.dx");
    TH_OK(tt_max_pool2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(barg), &d));
    th_download(dx, bdx, IN);
    for (int i = 0; i < IN; i++) {
        float want = 0;
        for (int o = 0; o < OUT; o++)
            if (want_arg[o] == i) want = dy[o];
        CU_ASSERT_EQUAL(dx[i], want);
    }
    /* and so does the backward that finds the winners in the input */
    float dx2[IN];
    TH_OK(tt_fill(be, tt_mem_of(bdx), 0.0f, IN));
    TH_OK(tt_max_pool2d_backward_from_input(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(bx), &d));
    th_download(dx2, bdx, IN);
    CU_ASSERT(memcmp(dx, dx2, sizeof dx) == 0);
    tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(barg), tt_buffer_free(bdy);
    tt_buffer_free(bdx);
}

static void expect_error(tt_status s, tt_code code, const char *needle)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(tt_status_code(s), code);
    CU_ASSERT(strstr(tt_status_message(s), needle) != NULL);
    tt_status_free(s);
}

static void test_errors(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *a = th_zeros(64, "perr.a"), *b = th_zeros(64, "perr.b"), *c = th_zeros(64, "perr.c");
    /* a 1x1 image cannot be pooled 2x2 (PyTorch refuses too) */
    tt_pool2d_desc tiny = tt_pool2d_square(1, 3, 1, 1, 2, 2);
    expect_error(tt_max_pool2d_forward(be, tt_mem_of(a), tt_mem_of(b), tt_mem_of(c), &tiny),
                 TT_ERR_INVALID_ARGUMENT, "(1, 3, 1, 1) is smaller than the 2x2 window");
    expect_error(tt_avg_pool2d_forward(be, tt_mem_of(a), tt_mem_of(c), &tiny),
                 TT_ERR_INVALID_ARGUMENT, "avg_pool2d");
    tt_pool2d_desc zero_stride = {1, 1, 4, 4, 2, 2, 0, 2};
    expect_error(tt_avg_pool2d_forward(be, tt_mem_of(a), tt_mem_of(c), &zero_stride),
                 TT_ERR_INVALID_ARGUMENT, "positive");
    /* an input larger than its buffer is refused before any launch */
    tt_pool2d_desc big = tt_pool2d_square(1, 5, 4, 4, 2, 2);
    expect_error(tt_max_pool2d_forward(be, tt_mem_of(a), tt_mem_of(b), tt_mem_of(c), &big),
                 TT_ERR_INVALID_ARGUMENT, "perr.c");
    tt_buffer_free(a), tt_buffer_free(b), tt_buffer_free(c);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"max_pool2d forward, argmax, gradient, twice, without argmax", test_max_pool},
        {"avg_pool2d forward, gradient, twice", test_avg_pool},
        {"max_pool2d ties, NaN and -inf", test_max_pool_ties},
        {"errors name the problem", test_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("pool", tests);
}

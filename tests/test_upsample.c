/* Bilinear upsampling by an integer factor, align_corners False and True:
 * forward vs the double reference (tests/ref_resize.c) and bit for bit vs
 * its float-exact form, finite-difference gradient, backward adds, at byte
 * offsets behind poison, on odd, prime and 1-wide planes with factors 1, 2,
 * 3, 4 and 8 (align_corners = True also 64, the loop limit's worst case);
 * the x2 entry points keep the bits they had (the float reference, the old
 * x2 reference in ref_act.c) and PyTorch's numbers; align_corners = True
 * against numbers PyTorch printed and one case by hand, and its backward's
 * range of outputs per input checked exhaustively against every output.
 * Nearest x2 likewise, at byte offsets behind poison, with batch > 1 and
 * several channels, a launch past one Vulkan dimension of work-groups, and
 * against PyTorch run by /usr/bin/python3 (skipped, saying so, without
 * torch). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/loop_budget.h"
#include "harness.h"
#include "ops/upsample.h"
#include "ops/upsample_nearest.h"
#include "ref_act.h"
#include "ref_resize.h"

/* Tolerances against the double reference (which uses the kernels' float
 * weights, so only the sums' rounding differs): the forward rounds a sum
 * of 4 products, a few ulps of summands of size 1; the backward a sum of
 * up to (2f)^2 products (plus dinp0; align_corners = True: (3f)^2, an
 * input of a 3-wide axis read by all 3f outputs), each rounding up to an
 * ulp of the partial sums, which grow with f: GRAD_TOL per (2f)^2 / 16
 * (f = 2: 16 terms), (3f)^2 / 16 for True.  Results near zero by
 * cancellation keep that absolute error, so errors are relative with a
 * floor of 0.1 (ERR_FLOOR).  Gradients: dinp0 +
 * numeric gradient (exact for a linear op) in double.  The float-exact
 * reference must match bit for bit (no tolerance). */
#define ERR_FLOOR 0.1
#define FORWARD_TOL 1e-5
#define GRAD_TOL 1e-5
#define GRAD_H 1e-3
/* finite differences cost inputs x outputs reference steps: above this
 * the reference's gradient stands alone (it was checked on smaller ones) */
#define NUMERIC_MAX_WORK 4000000.0

/* align_corners False or True: the op and its references. */
typedef struct variant {
    const char *name;
    tt_status (*forward)(tt_backend *, tt_mem, tt_mem, const tt_upsample_desc *, int);
    tt_status (*backward)(tt_backend *, tt_mem, tt_mem, const tt_upsample_desc *, int);
    void (*ref_forward)(double *, const double *, const tt_upsample_desc *, int);
    void (*ref_backward)(double *, const double *, const tt_upsample_desc *, int);
    void (*ref_forward_f32)(float *, const float *, const tt_upsample_desc *, int);
    void (*ref_backward_f32)(float *, const float *, const tt_upsample_desc *, int);
    /* outputs along an axis that read one input, at most, per factor: 2
     * (align_corners = False), 3 (True, inputs 3 a side) */
    int readers_per_factor;
} variant;

static const variant HALF_PIXEL = {
    "bilinear",
    tt_upsample_bilinear_forward,
    tt_upsample_bilinear_backward,
    ref_resize_bilinear_forward,
    ref_resize_bilinear_backward,
    ref_resize_bilinear_forward_f32,
    ref_resize_bilinear_backward_f32,
    2,
};

static const variant ALIGNED = {
    "aligned",
    tt_upsample_bilinear_aligned_forward,
    tt_upsample_bilinear_aligned_backward,
    ref_resize_aligned_forward,
    ref_resize_aligned_backward,
    ref_resize_aligned_forward_f32,
    ref_resize_aligned_backward_f32,
    3,
};

typedef struct loss_ctx {
    const variant *v;
    const tt_upsample_desc *desc;
    int factor;
    const double *dy;
    double *y; /* scratch */
    size_t out_count;
} loss_ctx;

/* L = sum(dy * up(x)) */
static double loss(const double *x, void *opaque)
{
    loss_ctx *c = opaque;
    c->v->ref_forward(c->y, x, c->desc, c->factor);
    double sum = 0;
    for (size_t i = 0; i < c->out_count; i++) sum += c->dy[i] * c->y[i];
    return sum;
}

static size_t count_differ(const float *a, const float *b, size_t n)
{
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) differ += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
    return differ;
}

/* Forward into NaNs and backward into a non-zero dinp, twice, at offsets
 * behind poison, against both references; central differences where
 * they are cheap. */
static void check_upsample(const variant *v, tt_upsample_desc d, int f)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    uint64_t seed = 21 + (uint64_t)d.height * 7 + (uint64_t)d.width + 1000 * (uint64_t)f;
    size_t n = (size_t)d.batch * d.channels * d.height * d.width, m = (size_t)f * f * n;
    float *x = th_random_floats(n, -2, 2, &seed), *dy = th_random_floats(m, -1, 1, &seed);
    float *dx0 = th_random_floats(n, -1, 1, &seed), *nan_out = malloc(m * sizeof *nan_out);
    float *gotx = malloc(n * sizeof *gotx), *goty = malloc(m * sizeof *goty);
    float *y32 = malloc(m * sizeof *y32), *dx32 = malloc(n * sizeof *dx32);
    double *wanty = malloc(m * sizeof *wanty), *wantx = malloc(n * sizeof *wantx);
    double *grad = calloc(n, sizeof *grad);
    CU_ASSERT_FATAL(nan_out && gotx && goty && y32 && dx32 && wanty && wantx && grad);
    for (size_t i = 0; i < m; i++) nan_out[i] = NAN;
    double *xd = th_to_double(x, n), *dyd = th_to_double(dy, m);
    th_pool pool = {.pad = 3};
    tt_mem mx = th_pool_put(&pool, x, n, "up.x"), my = th_pool_put(&pool, nan_out, m, "up.y");
    tt_mem mdy = th_pool_put(&pool, dy, m, "up.dy"), mdx = th_pool_put(&pool, dx0, n, "up.dx");

    TH_OK(v->forward(be, my, mx, &d, f));
    th_get(goty, my, m);
    v->ref_forward(wanty, xd, &d, f);
    double fwd_err = th_max_rel_error(goty, wanty, m, ERR_FLOOR);
    v->ref_forward_f32(y32, x, &d, f);
    size_t fwd_differ = count_differ(goty, y32, m);
    /* factor 1 gives the input's values */
    size_t copy_differ = f == 1 ? count_differ(goty, x, n) : 0;

    v->ref_backward(grad, dyd, &d, f);
    double num_err = -1;
    if ((double)n * m <= NUMERIC_MAX_WORK) {
        double *num = malloc(n * sizeof *num);
        CU_ASSERT_FATAL(num != NULL);
        loss_ctx ctx = {v, &d, f, dyd, wanty, m};
        th_numeric_grad(loss, &ctx, xd, n, GRAD_H, num);
        num_err = 0;
        for (size_t i = 0; i < n; i++)
            num_err = fmax(num_err, fabs(grad[i] - num[i]) / (fabs(num[i]) + ERR_FLOOR));
        free(num);
    }
    memcpy(dx32, dx0, n * sizeof *dx32);
    v->ref_backward_f32(dx32, dy, &d, f);
    double grad_err = 0;
    size_t bwd_differ = 0;
    for (int times = 1; times <= 2; times++) {
        TH_OK(v->backward(be, mdx, mdy, &d, f));
        th_get(gotx, mdx, n);
        for (size_t i = 0; i < n; i++) wantx[i] = dx0[i] + times * grad[i];
        grad_err = fmax(grad_err, th_max_rel_error(gotx, wantx, n, ERR_FLOOR));
        if (times == 1) bwd_differ = count_differ(gotx, dx32, n);
    }

    double readers = (double)v->readers_per_factor * f;
    double grad_tol = GRAD_TOL * fmax(1.0, readers * readers / 16);
    printf("\n  %s x%d (%d,%d,%d,%d): forward %.2e (%zu of %zu differ from float ref), "
           "backward twice %.2e (%zu of %zu differ), ref vs numeric %s%.2e",
           v->name, f, d.batch, d.channels, d.height, d.width, fwd_err, fwd_differ, m, grad_err,
           bwd_differ, n, num_err < 0 ? "(not run) " : "", fmax(num_err, 0));
    CU_ASSERT(fwd_err < FORWARD_TOL);
    CU_ASSERT_EQUAL(fwd_differ, 0);
    CU_ASSERT_EQUAL(copy_differ, 0);
    CU_ASSERT(grad_err < grad_tol);
    CU_ASSERT_EQUAL(bwd_differ, 0);
    CU_ASSERT(num_err < GRAD_TOL);

    th_pool_free(&pool);
    free(x), free(dy), free(dx0), free(nan_out), free(gotx), free(goty), free(y32), free(dx32);
    free(wanty), free(wantx), free(grad), free(xd), free(dyd);
}

/* The x2 callers' shapes, then every factor on 1x1, 1-wide,
 * prime and odd planes, batch 1 to 3, 1 or 3 channels. */
static void test_shapes(void)
{
    const tt_upsample_desc x2[] = {
        {1, 3, 7, 9}, {2, 5, 5, 3}, {1, 3, 1, 1}, {2, 5, 1, 4}, {1, 3, 2, 1},
    };
    for (size_t i = 0; i < sizeof x2 / sizeof x2[0]; i++) check_upsample(&HALF_PIXEL, x2[i], 2);
    const int planes[][2] = {{1, 1}, {1, 5}, {7, 1}, {13, 17}};
    const int factors[] = {1, 2, 3, 4, 8};
    int k = 0;
    for (size_t p = 0; p < sizeof planes / sizeof planes[0]; p++)
        for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++, k++)
            check_upsample(&HALF_PIXEL,
                           (tt_upsample_desc){1 + k % 3, k % 2 ? 3 : 1, planes[p][0], planes[p][1]},
                           factors[f]);
}

/* The new reference at factor 2 is the old x2 one (ref_act.c) in every bit,
 * forward and backward, so the float-exact checks above pin the x2 results
 * that test suites and models had. */
static void test_ref_matches_x2(void)
{
    const tt_upsample_desc cases[] = {{1, 3, 7, 9}, {2, 1, 1, 5}, {3, 1, 7, 1}, {1, 1, 13, 17}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const tt_upsample_desc *d = &cases[c];
        uint64_t seed = 77 + c;
        size_t n = (size_t)d->batch * d->channels * d->height * d->width, m = 4 * n;
        float *x = th_random_floats(n, -2, 2, &seed), *dy = th_random_floats(m, -1, 1, &seed);
        double *xd = th_to_double(x, n), *dyd = th_to_double(dy, m);
        double *y_old = malloc(m * sizeof(double)), *y_new = malloc(m * sizeof(double));
        double *dx_old = calloc(n, sizeof(double)), *dx_new = calloc(n, sizeof(double));
        CU_ASSERT_FATAL(y_old && y_new && dx_old && dx_new);
        ref_upsample_bilinear2x_forward(y_old, xd, d);
        ref_resize_bilinear_forward(y_new, xd, d, 2);
        ref_upsample_bilinear2x_backward(dx_old, dyd, d);
        ref_resize_bilinear_backward(dx_new, dyd, d, 2);
        CU_ASSERT(memcmp(y_old, y_new, m * sizeof(double)) == 0);
        CU_ASSERT(memcmp(dx_old, dx_new, n * sizeof(double)) == 0);
        free(x), free(dy), free(xd), free(dyd), free(y_old), free(y_new), free(dx_old),
            free(dx_new);
    }
}

/* Numbers printed by PyTorch 1.13:
 *   x = [[1, 2, 4], [8, 16, 32]] (1, 1, 2, 3)
 *   F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False)
 *   and x.grad for y.backward(arange(24).reshape(1, 1, 4, 6)). */
static void test_matches_pytorch(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const float x[6] = {1, 2, 4, 8, 16, 32};
    const float want[24] = {1.0f,  1.25f,   1.75f,    2.5f,   3.5f,    4.0f,
                            2.75f, 3.4375f, 4.8125f,  6.875f, 9.625f,  11.0f,
                            6.25f, 7.8125f, 10.9375f, 15.625f, 21.875f, 25.0f,
                            8.0f,  10.0f,   14.0f,    20.0f,  28.0f,   32.0f};
    const float want_grad[6] = {17.5f, 25.0f, 32.5f, 59.5f, 67.0f, 74.5f};
    float ramp[24], y[24], dx[6];
    for (int i = 0; i < 24; i++) ramp[i] = (float)i;
    tt_upsample_desc d = {1, 1, 2, 3};
    tt_buffer *bx = th_upload(x, 6, "pt.x"), *by = th_zeros(24, "pt.y");
    tt_buffer *bdy = th_upload(ramp, 24, "pt.dy"), *bdx = th_zeros(6, "pt.dx");
    TH_OK(tt_upsample_bilinear2x_forward(be, tt_mem_of(by), tt_mem_of(bx), &d));
    TH_OK(tt_upsample_bilinear2x_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d));
    th_download(y, by, 24);
    th_download(dx, bdx, 6);
    for (int i = 0; i < 24; i++) CU_ASSERT_EQUAL(y[i], want[i]); /* exact: dyadic values */
    for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(dx[i], want_grad[i]);
    tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(bdy), tt_buffer_free(bdx);
}

/* x4 of the 1x2 image [0, 8] by PyTorch's formula, by hand: along the row
 * src = (d + 0.5) / 4 - 0.5 is -0.375, -0.125 (both clamped to 0), 0.125,
 * 0.375, 0.625, 0.875, 1.125, 1.375 (both past the last input: its value),
 * so every one of the 4 output rows (all reading the one input row) is
 * [0, 0, 1, 3, 5, 7, 8, 8]; for dy = 1 the gradient is the weights' sums,
 * 16 for each input. */
static void test_x4_by_hand(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const float x[2] = {0, 8}, want[8] = {0, 0, 1, 3, 5, 7, 8, 8};
    float ones[32], y[32], dx[2];
    for (int i = 0; i < 32; i++) ones[i] = 1;
    tt_upsample_desc d = {1, 1, 1, 2};
    tt_buffer *bx = th_upload(x, 2, "x4.x"), *by = th_zeros(32, "x4.y");
    tt_buffer *bdy = th_upload(ones, 32, "x4.dy"), *bdx = th_zeros(2, "x4.dx");
    TH_OK(tt_upsample_bilinear_forward(be, tt_mem_of(by), tt_mem_of(bx), &d, 4));
    TH_OK(tt_upsample_bilinear_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d, 4));
    th_download(y, by, 32);
    th_download(dx, bdx, 2);
    for (int i = 0; i < 32; i++) CU_ASSERT_EQUAL(y[i], want[i % 8]);
    CU_ASSERT_EQUAL(dx[0], 16.0f);
    CU_ASSERT_EQUAL(dx[1], 16.0f);
    tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(bdy), tt_buffer_free(bdx);
}

/* The x2 entry points keep their bits: the device equals the float-exact
 * reference (ref_resize.h, factor 2) bit for bit, forward and backward
 * into a non-zero dinp. */
static void test_x2_bits(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const tt_upsample_desc cases[] = {{1, 3, 7, 9}, {2, 1, 1, 5}, {3, 1, 7, 1}, {1, 3, 13, 17}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tt_upsample_desc d = cases[c];
        uint64_t seed = 5 + c;
        size_t n = (size_t)d.batch * d.channels * d.height * d.width, m = 4 * n;
        float *x = th_random_floats(n, -2, 2, &seed), *dy = th_random_floats(m, -1, 1, &seed);
        float *dx = th_random_floats(n, -1, 1, &seed), *y = malloc(m * sizeof *y);
        float *goty = malloc(m * sizeof *goty), *gotx = malloc(n * sizeof *gotx);
        CU_ASSERT_FATAL(y && goty && gotx);
        tt_buffer *bx = th_upload(x, n, "b2.x"), *by = th_zeros(m, "b2.y");
        tt_buffer *bdy = th_upload(dy, m, "b2.dy"), *bdx = th_upload(dx, n, "b2.dx");
        TH_OK(tt_upsample_bilinear2x_forward(be, tt_mem_of(by), tt_mem_of(bx), &d));
        TH_OK(tt_upsample_bilinear2x_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d));
        th_download(goty, by, m);
        th_download(gotx, bdx, n);
        ref_resize_bilinear_forward_f32(y, x, &d, 2);
        ref_resize_bilinear_backward_f32(dx, dy, &d, 2);
        size_t differ_y = 0, differ_x = 0;
        for (size_t i = 0; i < m; i++) differ_y += memcmp(&y[i], &goty[i], sizeof y[i]) != 0;
        for (size_t i = 0; i < n; i++) differ_x += memcmp(&dx[i], &gotx[i], sizeof dx[i]) != 0;
        printf("\n  bilinear2x (%d,%d,%d,%d) vs float reference: forward %zu of %zu differ, "
               "backward %zu of %zu",
               d.batch, d.channels, d.height, d.width, differ_y, m, differ_x, n);
        CU_ASSERT_EQUAL(differ_y, 0);
        CU_ASSERT_EQUAL(differ_x, 0);
        tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(bdy), tt_buffer_free(bdx);
        free(x), free(dy), free(dx), free(y), free(goty), free(gotx);
    }
}

/* Checks that s is TT_ERR_INVALID_ARGUMENT with `text` in its message,
 * and frees it. */
static void expect_invalid(tt_status s, const char *text)
{
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), text) != NULL);
    if (s && !strstr(tt_status_message(s), text))
        printf("\n  wanted \"%s\" in: %s", text, tt_status_message(s));
    tt_status_free(s);
}

static void test_errors(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *a = th_zeros(16, "uerr.a"), *b = th_zeros(16, "uerr.b");
    tt_upsample_desc d = {1, 1, 2, 3}; /* needs 24 output floats */
    expect_invalid(tt_upsample_bilinear2x_forward(be, tt_mem_of(a), tt_mem_of(b), &d), "uerr.a");
    tt_upsample_desc empty = {1, 0, 2, 3};
    expect_invalid(tt_upsample_bilinear2x_forward(be, tt_mem_of(a), tt_mem_of(b), &empty),
                   "(1, 0, 2, 3)");
    /* x3 of a 1x2 needs 18 output floats, x2 only 8 */
    tt_upsample_desc small = {1, 1, 1, 2};
    TH_OK(tt_upsample_bilinear_forward(be, tt_mem_of(a), tt_mem_of(b), &small, 2));
    expect_invalid(tt_upsample_bilinear_forward(be, tt_mem_of(a), tt_mem_of(b), &small, 3),
                   "uerr.a");
    expect_invalid(tt_upsample_bilinear_backward(be, tt_mem_of(b), tt_mem_of(a), &small, 3),
                   "dout");
    /* factors outside 1 .. TT_UPSAMPLE_MAX_FACTOR, named */
    tt_upsample_desc one = {1, 1, 1, 1};
    expect_invalid(tt_upsample_bilinear_forward(be, tt_mem_of(a), tt_mem_of(b), &one, 0),
                   "upsample_bilinear forward: factor 0");
    expect_invalid(tt_upsample_bilinear_forward(be, tt_mem_of(a), tt_mem_of(b), &one, -1),
                   "factor -1");
    expect_invalid(tt_upsample_bilinear_backward(be, tt_mem_of(a), tt_mem_of(b), &one,
                                                 TT_UPSAMPLE_MAX_FACTOR + 1),
                   "upsample_bilinear backward: factor 65");
    /* 2^31 outputs do not fit one int-indexed launch: refused before any
     * buffer is looked at, naming the op */
    tt_upsample_desc huge = {1, 2, 4096, 4096};
    tt_status s = tt_upsample_bilinear_forward(be, tt_mem_of(a), tt_mem_of(b), &huge, 8);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_UNSUPPORTED);
    CU_ASSERT(s && strstr(tt_status_message(s), "upsample_bilinear forward") != NULL);
    tt_status_free(s);
    /* a gradient not wanted: nothing is done */
    TH_OK(tt_upsample_bilinear2x_backward(be, (tt_mem){0}, tt_mem_of(a), &one));
    TH_OK(tt_upsample_bilinear_backward(be, (tt_mem){0}, tt_mem_of(a), &one, 3));
    tt_buffer_free(a), tt_buffer_free(b);
}

/* ---- align_corners = True ----------------------------------------------- */

/* Every factor on 1x1, 1-wide, prime and odd planes and on 2x2 and 3x3 (2
 * or 3 inputs a side: the most outputs per input), batch 1 to 3, 1 to 3
 * channels; then factor 64 on 3-wide axes, the backward's most loop steps
 * (about 18.6K on Vulkan, docs/backend.md), which a loop cut short by
 * lavapipe's limit would show as bits differing from the float reference. */
static void test_aligned_shapes(void)
{
    const int planes[][2] = {{1, 1}, {1, 5}, {7, 1}, {13, 17}, {2, 2}, {3, 3}};
    const int factors[] = {1, 2, 3, 4, 8};
    int k = 0;
    for (size_t p = 0; p < sizeof planes / sizeof planes[0]; p++)
        for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++, k++)
            check_upsample(&ALIGNED,
                           (tt_upsample_desc){1 + k % 3, 1 + (k / 3) % 3, planes[p][0],
                                              planes[p][1]},
                           factors[f]);
    check_upsample(&ALIGNED, (tt_upsample_desc){1, 1, 3, 3}, 64);
    check_upsample(&ALIGNED, (tt_upsample_desc){2, 1, 3, 1}, 64);
    check_upsample(&ALIGNED, (tt_upsample_desc){1, 2, 4, 5}, 64);
}

/* The outputs lo .. hi that may read input i along an axis, as the aligned
 * backward computes them (bilinear_readers in opencl/upsample.cl and in
 * shaders/upsample/bilinear.glsl). */
static void aligned_readers(int i, int in_size, int factor, int *lo, int *hi)
{
    int out_size = factor * in_size;
    if (in_size == 1) {
        *lo = 0;
        *hi = out_size - 1;
        return;
    }
    int n = in_size - 1, extra = factor - 1;
    *lo = i == 0 ? 0 : (i - 1) * factor + (i - 1) * extra / n - 1;
    if (*lo < 0) *lo = 0;
    *hi = (i + 1) * factor + ((i + 1) * extra + n - 1) / n + 1;
    if (*hi > out_size - 1) *hi = out_size - 1;
}

/* The backward's range against every output: for factors 1 to 8 (and 16,
 * 32, 64) and axes of 1 to 64 inputs, some larger ones and the longest
 * allowed (TT_UPSAMPLE_ALIGNED_MAX_SIDE outputs), each output's taps of
 * non-zero weight (ref_resize_aligned_taps, the kernels' arithmetic) must
 * lie in the range of the input they read; the unguarded floor(src) never
 * passes the last input; and at factor 64 the shader's loop steps (rows
 * plus, per row that reads, half the columns plus entries) stay within
 * TT_LOOP_BUDGET. */
static void test_aligned_readers(void)
{
    const int factors[] = {1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64};
    int sizes[64 + 6];
    int count = 0;
    for (int s = 1; s <= 64; s++) sizes[count++] = s;
    const int more[] = {100, 257, 1000, 4099, 65537};
    for (size_t s = 0; s < sizeof more / sizeof more[0]; s++) sizes[count++] = more[s];
    sizes[count++] = 0; /* the longest: TT_UPSAMPLE_ALIGNED_MAX_SIDE / f */
    size_t missed = 0, past_last = 0, axes = 0, reads = 0;
    long long worst_steps = 0;
    for (size_t fi = 0; fi < sizeof factors / sizeof factors[0]; fi++) {
        int f = factors[fi], widest = 0;
        for (int si = 0; si < count; si++) {
            int in = sizes[si] ? sizes[si] : TT_UPSAMPLE_ALIGNED_MAX_SIDE / f;
            long long out = (long long)f * in;
            if (out > TT_UPSAMPLE_ALIGNED_MAX_SIDE) continue;
            int *first = malloc((size_t)in * sizeof *first);
            int *last = malloc((size_t)in * sizeof *last);
            int *nreaders = calloc((size_t)in, sizeof *nreaders);
            CU_ASSERT_FATAL(first && last && nreaders);
            for (int i = 0; i < in; i++) first[i] = INT_MAX, last[i] = -1;
            float scale = out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
            for (int dst = 0; dst < (int)out; dst++) {
                float src = scale * (float)dst;
                past_last += (int)src > in - 1;
                int i0, i1;
                float w0, w1;
                ref_resize_aligned_taps(dst, in, f, &i0, &i1, &w0, &w1);
                int tap[2] = {i0, i1};
                float w[2] = {i0 == i1 ? w0 + w1 : w0, i0 == i1 ? 0.0f : w1};
                for (int t = 0; t < 2; t++) {
                    if (w[t] == 0.0f) continue;
                    int i = tap[t];
                    if (dst < first[i]) first[i] = dst;
                    last[i] = dst;
                    nreaders[i]++;
                    reads++;
                }
            }
            for (int i = 0; i < in; i++) {
                int lo, hi;
                aligned_readers(i, in, f, &lo, &hi);
                if (last[i] >= 0 && (first[i] < lo || last[i] > hi)) {
                    if (missed++ < 5)
                        printf("\n  x%d, %d inputs: input %d read by %d .. %d, range %d .. %d", f,
                               in, i, first[i], last[i], lo, hi);
                }
                if (hi - lo + 1 > widest) widest = hi - lo + 1;
                if (f == 64) {
                    /* one input in both axes of an in x in plane */
                    long long steps =
                        (hi - lo + 2) + (long long)nreaders[i] * ((hi - lo + 2) / 2 + 1);
                    if (steps > worst_steps) worst_steps = steps;
                }
            }
            axes++;
            free(first), free(last), free(nreaders);
        }
        printf("\n  x%d: widest range of outputs per input %d", f, widest);
        CU_ASSERT(widest <= 3 * f + 4);
    }
    printf("\n  %zu axes, %zu reads: %zu outside the range, %zu past the last input; x64 "
           "shader loop steps at most %lld (budget %d)",
           axes, reads, missed, past_last, worst_steps, TT_LOOP_BUDGET);
    CU_ASSERT_EQUAL(missed, 0);
    CU_ASSERT_EQUAL(past_last, 0);
    CU_ASSERT(worst_steps <= TT_LOOP_BUDGET);
}

/* Runs the aligned op on x (shape d, factor f) forward, and backward into
 * zeros with dout = 0, 1, 2, ... (PyTorch's y.backward(arange)); checks
 * both against want_y and want_dx within `tol` (relative, floor
 * ERR_FLOOR), or bit for bit with tol 0; prints how many differ in bits. */
static void check_aligned_numbers(tt_upsample_desc d, int f, const float *x, const float *want_y,
                                  const float *want_dx, double tol, const char *what)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    size_t n = (size_t)d.batch * d.channels * d.height * d.width, m = (size_t)f * f * n;
    float *ramp = malloc(m * sizeof *ramp), *y = malloc(m * sizeof *y);
    float *dx = malloc(n * sizeof *dx);
    CU_ASSERT_FATAL(ramp && y && dx);
    for (size_t i = 0; i < m; i++) ramp[i] = (float)i;
    tt_buffer *bx = th_upload(x, n, "ac.x"), *by = th_zeros(m, "ac.y");
    tt_buffer *bdy = th_upload(ramp, m, "ac.dy"), *bdx = th_zeros(n, "ac.dx");
    TH_OK(tt_upsample_bilinear_aligned_forward(be, tt_mem_of(by), tt_mem_of(bx), &d, f));
    TH_OK(tt_upsample_bilinear_aligned_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d, f));
    th_download(y, by, m);
    th_download(dx, bdx, n);
    double ey = th_max_rel_error_f(y, want_y, m, ERR_FLOOR);
    double ex = th_max_rel_error_f(dx, want_dx, n, ERR_FLOOR);
    size_t by_bits = count_differ(y, want_y, m), bx_bits = count_differ(dx, want_dx, n);
    printf("\n  aligned x%d (%d,%d,%d,%d) vs %s: forward %.2e (%zu of %zu differ in bits), "
           "backward %.2e (%zu of %zu)",
           f, d.batch, d.channels, d.height, d.width, what, ey, by_bits, m, ex, bx_bits, n);
    if (tol > 0) {
        CU_ASSERT(ey < tol);
        CU_ASSERT(ex < tol);
    } else {
        CU_ASSERT_EQUAL(by_bits, 0);
        CU_ASSERT_EQUAL(bx_bits, 0);
    }
    tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(bdy), tt_buffer_free(bdx);
    free(ramp), free(y), free(dx);
}

/* Numbers printed by PyTorch 1.13 (float32, CPU): for each x,
 *   y = F.interpolate(x, scale_factor=f, mode='bilinear', align_corners=True)
 *   (y * torch.arange(y.numel()).reshape(y.shape)).sum().backward()
 * and x.grad.  PyTorch sums the same weights in another order, so a few
 * ulps apart (32.000004 for 32 below): relative 1e-6 (PT_TOL), floor
 * ERR_FLOOR (7.1e-15 for 0). */
#define PT_TOL 1e-6
static void test_aligned_matches_pytorch(void)
{
    /* x = [[1, 2, 4], [8, 16, 32]], x2: scale 1/3 down, 2/5 across */
    const float xa[6] = {1, 2, 4, 8, 16, 32};
    const float ya[24] = {
        1.0f,        1.4000000953674316f, 1.7999999523162842f, 2.4000000953674316f,
        3.200000047683716f,  4.0f,        3.3333334922790527f, 4.6666669845581055f,
        6.0f,        8.0f,        10.666666984558105f, 13.333333969116211f,
        5.6666669845581055f, 7.933333873748779f, 10.200000762939453f, 13.600000381469727f,
        18.13333511352539f,  22.666667938232422f, 8.0f,        11.200000762939453f,
        14.40000057220459f,  19.200000762939453f, 25.600000381469727f, 32.000003814697266f};
    const float dxa[6] = {16.399999618530273f, 31.199996948242188f, 30.399999618530273f,
                          52.400001525878906f, 79.19999694824219f,  66.4000015258789f};
    check_aligned_numbers((tt_upsample_desc){1, 1, 2, 3}, 2, xa, ya, dxa, PT_TOL, "PyTorch");

    /* x = [[1, -2], [3, 5]], x4: scale 1/7 both ways */
    const float xb[4] = {1, -2, 3, 5};
    const float yb[64] = {
        1.0f, 0.5714285373687744f, 0.1428571343421936f, -0.28571438789367676f,
        -0.7142857909202576f, -1.1428571939468384f, -1.5714287757873535f, -2.0f,
        1.2857142686843872f, 0.9591836929321289f, 0.6326530575752258f, 0.30612239241600037f,
        -0.020408228039741516f, -0.3469387888908386f, -0.6734695434570312f, -1.0f,
        1.571428656578064f, 1.3469388484954834f, 1.1224490404129028f, 0.8979591727256775f,
        0.6734694242477417f, 0.44897961616516113f, 0.2244897186756134f, 7.105427357601002e-15f,
        1.8571429252624512f, 1.734694004058838f, 1.6122450828552246f, 1.4897960424423218f,
        1.3673471212387085f, 1.2448980808258057f, 1.1224491596221924f, 1.000000238418579f,
        2.142857074737549f, 2.1224491596221924f, 2.102041006088257f, 2.0816328525543213f,
        2.0612244606018066f, 2.040816307067871f, 2.0204083919525146f, 2.0f,
        2.4285714626312256f, 2.5102040767669678f, 2.59183669090271f, 2.6734695434570312f,
        2.7551021575927734f, 2.8367347717285156f, 2.918367385864258f, 3.0f,
        2.7142858505249023f, 2.8979594707489014f, 3.0816330909729004f, 3.2653064727783203f,
        3.4489798545837402f, 3.6326534748077393f, 3.8163270950317383f, 4.000000476837158f,
        3.0f, 3.2857141494750977f, 3.5714285373687744f, 3.857142686843872f,
        4.142857074737549f, 4.4285712242126465f, 4.714285850524902f, 5.0f};
    const float dxb[4] = {288.0000305175781f, 336.0000305175781f, 672.0f, 720.0f};
    check_aligned_numbers((tt_upsample_desc){1, 1, 2, 2}, 4, xb, yb, dxb, PT_TOL, "PyTorch");

    /* x = [1, 2, 4] as a column (3, 1), x4: 12 x 4, each row constant
     * (scale 2/11 down, 0 across) */
    const float xc[3] = {1, 2, 4};
    const float rows[12] = {1.0f, 1.1818182468414307f, 1.3636363744735718f, 1.545454502105713f,
                            1.7272727489471436f, 1.9090909957885742f, 2.1818182468414307f,
                            2.545454502105713f, 2.909090995788574f, 3.2727274894714355f,
                            3.6363637447357178f, 4.0f};
    float yc[48];
    for (int i = 0; i < 48; i++) yc[i] = rows[i / 4];
    const float dxc[3] = {99.63636016845703f, 512.7272338867188f, 515.6364135742188f};
    check_aligned_numbers((tt_upsample_desc){1, 1, 3, 1}, 4, xc, yc, dxc, PT_TOL, "PyTorch");
}

/* x3 of the 1x3 row [0, 4, 16] by hand: along the row scale = 2 / 8 =
 * 0.25 exactly, src = dst / 4 = 0, 0.25, ..., 2, so every one of the 3
 * output rows (scale 0 down: all read the one input row) is
 * [0, 1, 2, 3, 4, 7, 10, 13, 16].  With dout = 0 .. 26 (row r, column c:
 * 9 r + c) input 0 has the weights 1, 3/4, 1/2, 1/4 at columns 0 to 3:
 * 3 (0 + 3/4 + 1 + 3/4) + 9 (0 + 1 + 2) 5/2 = 75; input 1 the weights 1/4,
 * 1/2, 3/4, 1, 3/4, 1/2, 1/4 at columns 1 to 7: 3 (16) + 9 (3) 4 = 156;
 * input 2 the weights 1/4, 1/2, 3/4, 1 at columns 5 to 8:
 * 3 (5/4 + 3 + 21/4 + 8) + 9 (3) 5/2 = 120.  Exact, so bit for bit
 * (PyTorch printed the same numbers). */
static void test_aligned_by_hand(void)
{
    const float x[3] = {0, 4, 16}, row[9] = {0, 1, 2, 3, 4, 7, 10, 13, 16};
    const float dx[3] = {75, 156, 120};
    float y[27];
    for (int i = 0; i < 27; i++) y[i] = row[i % 9];
    check_aligned_numbers((tt_upsample_desc){1, 1, 1, 3}, 3, x, y, dx, 0, "by hand");
}

static void test_aligned_errors(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *a = th_zeros(16, "aerr.a"), *b = th_zeros(16, "aerr.b");
    /* x3 of a 1x2 needs 18 output floats */
    tt_upsample_desc small = {1, 1, 1, 2};
    TH_OK(tt_upsample_bilinear_aligned_forward(be, tt_mem_of(a), tt_mem_of(b), &small, 2));
    expect_invalid(tt_upsample_bilinear_aligned_forward(be, tt_mem_of(a), tt_mem_of(b), &small, 3),
                   "aerr.a");
    expect_invalid(tt_upsample_bilinear_aligned_backward(be, tt_mem_of(b), tt_mem_of(a), &small, 3),
                   "dout");
    tt_upsample_desc empty = {1, 1, 0, 3};
    expect_invalid(tt_upsample_bilinear_aligned_forward(be, tt_mem_of(a), tt_mem_of(b), &empty, 2),
                   "(1, 1, 0, 3)");
    tt_upsample_desc one = {1, 1, 1, 1};
    expect_invalid(tt_upsample_bilinear_aligned_forward(be, tt_mem_of(a), tt_mem_of(b), &one, 0),
                   "upsample_bilinear_aligned forward: factor 0");
    expect_invalid(tt_upsample_bilinear_aligned_backward(be, tt_mem_of(a), tt_mem_of(b), &one,
                                                         TT_UPSAMPLE_MAX_FACTOR + 1),
                   "upsample_bilinear_aligned backward: factor 65");
    /* a side past TT_UPSAMPLE_ALIGNED_MAX_SIDE (4.8M outputs in all, one
     * launch would take them): refused before the buffers, naming it */
    tt_upsample_desc wide = {1, 1, 1, 600000};
    tt_status s = tt_upsample_bilinear_aligned_backward(be, tt_mem_of(a), tt_mem_of(b), &wide, 8);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_UNSUPPORTED);
    CU_ASSERT(s && strstr(tt_status_message(s), "upsample_bilinear_aligned backward: output 8 x "
                                                "4800000") != NULL);
    if (s) printf("\n  %s", tt_status_message(s));
    tt_status_free(s);
    /* the longest side allowed passes that check (then the buffers are
     * too small) */
    tt_upsample_desc longest = {1, 1, TT_UPSAMPLE_ALIGNED_MAX_SIDE / 4, 1};
    expect_invalid(tt_upsample_bilinear_aligned_forward(be, tt_mem_of(a), tt_mem_of(b), &longest,
                                                        4),
                   "aerr.b");
    /* 2^31 outputs do not fit one int-indexed launch */
    tt_upsample_desc huge = {1, 2, 4096, 4096};
    s = tt_upsample_bilinear_aligned_forward(be, tt_mem_of(a), tt_mem_of(b), &huge, 8);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_UNSUPPORTED);
    CU_ASSERT(s && strstr(tt_status_message(s), "upsample_bilinear_aligned forward") != NULL);
    tt_status_free(s);
    /* a gradient not wanted: nothing is done */
    TH_OK(tt_upsample_bilinear_aligned_backward(be, (tt_mem){0}, tt_mem_of(a), &one, 3));
    tt_buffer_free(a), tt_buffer_free(b);
}

/* ---- nearest x2 ----------------------------------------------------------
 * Tolerances: the forward is a copy, so it must be exact.  The backward
 * rounds (a + b) + (c + d) and dinp0 + that, summands below 1 in size: at
 * most 3 roundings of values up to 5, under 1e-6 absolute, so relative
 * with floor ERR_FLOOR it stays under GRAD_TOL (1e-5). */

typedef struct nearest_loss_ctx {
    const tt_upsample_desc *desc;
    const double *dy;
    double *y; /* scratch */
    size_t out_count;
} nearest_loss_ctx;

/* L = sum(dy * nearest(x)) */
static double nearest_loss(const double *x, void *opaque)
{
    nearest_loss_ctx *c = opaque;
    ref_upsample_nearest2x_forward(c->y, x, c->desc);
    double sum = 0;
    for (size_t i = 0; i < c->out_count; i++) sum += c->dy[i] * c->y[i];
    return sum;
}

/* Forward into NaNs (every output written) must equal the reference
 * exactly; backward into a non-zero dinp, twice, must add the reference's
 * gradient each time; with `numeric`, the reference's gradient must equal
 * central differences of L.  Every array sits 3 floats into its buffer
 * behind poison (th_pool), so the offsets are used and nothing outside is
 * read.  Returns the largest backward error. */
static double check_nearest(tt_upsample_desc d, int numeric)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(th_backend());
    uint64_t seed = 57 + (uint64_t)d.batch * 131 + (uint64_t)d.height * 7 + (uint64_t)d.width;
    size_t n = (size_t)d.batch * d.channels * d.height * d.width, m = 4 * n;
    float *x = th_random_floats(n, -2, 2, &seed), *dy = th_random_floats(m, -1, 1, &seed);
    float *dx0 = th_random_floats(n, -1, 1, &seed), *nan_out = malloc(m * sizeof *nan_out);
    float *goty = malloc(m * sizeof *goty), *gotx = malloc(n * sizeof *gotx);
    double *wanty = malloc(m * sizeof *wanty), *grad = calloc(n, sizeof *grad);
    double *wantx = malloc(n * sizeof *wantx);
    CU_ASSERT_FATAL(nan_out && goty && gotx && wanty && grad && wantx);
    for (size_t i = 0; i < m; i++) nan_out[i] = NAN;
    double *xd = th_to_double(x, n), *dyd = th_to_double(dy, m);
    th_pool pool = {.pad = 3};
    tt_mem mx = th_pool_put(&pool, x, n, "near.x"), my = th_pool_put(&pool, nan_out, m, "near.y");
    tt_mem mdy = th_pool_put(&pool, dy, m, "near.dy"), mdx = th_pool_put(&pool, dx0, n, "near.dx");

    TH_OK(tt_upsample_nearest2x_forward(th_backend(), my, mx, &d));
    th_get(goty, my, m);
    ref_upsample_nearest2x_forward(wanty, xd, &d);
    size_t inexact = 0;
    for (size_t i = 0; i < m; i++) inexact += (double)goty[i] != wanty[i];
    CU_ASSERT_EQUAL(inexact, 0);

    ref_upsample_nearest2x_backward(grad, dyd, &d);
    double num_err = 0;
    if (numeric) {
        double *num = malloc(n * sizeof *num);
        CU_ASSERT_FATAL(num != NULL);
        nearest_loss_ctx ctx = {&d, dyd, wanty, m};
        th_numeric_grad(nearest_loss, &ctx, xd, n, GRAD_H, num);
        for (size_t i = 0; i < n; i++)
            num_err = fmax(num_err, fabs(grad[i] - num[i]) / (fabs(num[i]) + ERR_FLOOR));
        CU_ASSERT(num_err < GRAD_TOL);
        free(num);
    }
    double grad_err = 0;
    for (int times = 1; times <= 2; times++) {
        TH_OK(tt_upsample_nearest2x_backward(th_backend(), mdx, mdy, &d));
        th_get(gotx, mdx, n);
        for (size_t i = 0; i < n; i++) wantx[i] = dx0[i] + times * grad[i];
        grad_err = fmax(grad_err, th_max_rel_error(gotx, wantx, n, ERR_FLOOR));
    }
    CU_ASSERT(grad_err < GRAD_TOL);
    printf("\n  nearest2x (%d,%d,%d,%d): forward %zu of %zu inexact, backward (twice) %.2e, "
           "ref vs numeric %s%.2e",
           d.batch, d.channels, d.height, d.width, inexact, m, grad_err,
           numeric ? "" : "(not run) ", num_err);

    th_pool_free(&pool);
    free(x), free(dy), free(dx0), free(nan_out), free(goty), free(gotx);
    free(wanty), free(grad), free(wantx), free(xd), free(dyd);
    return grad_err;
}

static void test_nearest_shapes(void)
{
    /* odd and even sizes, batch 1 to 3, 1 to 5 channels, 1-pixel rows and
     * columns */
    const tt_upsample_desc cases[] = {
        {1, 3, 7, 9}, {2, 5, 6, 4}, {3, 2, 5, 8}, {2, 4, 8, 5},
        {1, 3, 1, 1}, {2, 5, 1, 4}, {2, 3, 3, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_nearest(cases[i], 1);
}

/* 4.4M outputs: more work-groups of 64 than one dimension of a Vulkan
 * launch takes on lavapipe (65535), so the backend folds the forward into
 * rows (tt_global_id); OpenCL takes it in one.  No finite differences at
 * this size (the reference's gradient was checked against them above). */
static void test_nearest_large(void)
{
    check_nearest((tt_upsample_desc){2, 1, 550, 1001}, 0);
}

/* Reads x then dy (float32, shapes "N,C,H,W" of x) from argv[1]; writes
 * y then dx (float32) to argv[2], from float64 autograd; exits 3 without
 * torch. */
static const char *nearest_torch_script =
    "import sys\n"
    "try:\n"
    "    import numpy as np, torch\n"
    "    import torch.nn.functional as F\n"
    "except Exception:\n"
    "    sys.exit(3)\n"
    "src, dst = sys.argv[1], sys.argv[2]\n"
    "n, c, h, w = (int(v) for v in sys.argv[3].split(','))\n"
    "d = np.fromfile(src, dtype=np.float32).astype(np.float64)\n"
    "k = n * c * h * w\n"
    "x = torch.tensor(d[:k]).reshape(n, c, h, w).requires_grad_()\n"
    "dy = torch.tensor(d[k:]).reshape(n, c, 2 * h, 2 * w)\n"
    "y = F.interpolate(x, scale_factor=2, mode='nearest')\n"
    "assert tuple(y.shape) == (n, c, 2 * h, 2 * w), tuple(y.shape)\n"
    "(y * dy).sum().backward()\n"
    "np.concatenate([y.detach().numpy().ravel(), x.grad.numpy().ravel()])"
    ".astype(np.float32).tofile(dst)\n";

/* Runs PyTorch on x, dy of shape d into torch_out (4n + n floats).
 * Returns 1 when it ran, 0 (printed) when python3 or torch is missing. */
static int run_torch_nearest(const tt_upsample_desc *d, const float *x, const float *dy,
                             float *torch_out)
{
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("\n  nearest2x vs torch skipped: no /usr/bin/python3");
        return 0;
    }
    size_t n = (size_t)d->batch * d->channels * d->height * d->width;
    char src[] = "/tmp/tt_up_torch_in_XXXXXX", dst[] = "/tmp/tt_up_torch_out_XXXXXX";
    char script[] = "/tmp/tt_up_torch_py_XXXXXX";
    int fd_src = mkstemp(src), fd_dst = mkstemp(dst), fd_py = mkstemp(script);
    CU_ASSERT_FATAL(fd_src >= 0 && fd_dst >= 0 && fd_py >= 0);
    close(fd_dst);
    size_t len = strlen(nearest_torch_script);
    CU_ASSERT_FATAL(write(fd_py, nearest_torch_script, len) == (ssize_t)len);
    close(fd_py);
    FILE *f = fdopen(fd_src, "wb");
    CU_ASSERT_FATAL(f != NULL);
    fwrite(x, sizeof(float), n, f);
    fwrite(dy, sizeof(float), 4 * n, f);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, TH_PYTHON " %s %s %s %d,%d,%d,%d", script, src, dst,
             d->batch, d->channels, d->height, d->width);
    int rc = system(cmd);
    size_t got = 0;
    if (rc == 0) {
        f = fopen(dst, "rb");
        CU_ASSERT_FATAL(f != NULL);
        got = fread(torch_out, sizeof(float), 5 * n, f);
        fclose(f);
    }
    unlink(src), unlink(dst), unlink(script);
    if (rc != 0 && WIFEXITED(rc) && WEXITSTATUS(rc) == 3) {
        printf("\n  nearest2x vs torch skipped: /usr/bin/python3 has no torch");
        return 0;
    }
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(got, 5 * n);
    return 1;
}

/* F.interpolate(x, scale_factor=2, mode='nearest') and its x.grad in
 * float64, against the device's forward (exact: a copy) and backward into
 * zeros (GRAD_TOL, floor ERR_FLOOR). */
static void test_nearest_matches_torch(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const tt_upsample_desc cases[] = {{2, 3, 5, 4}, {1, 2, 7, 3}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const tt_upsample_desc *d = &cases[c];
        uint64_t seed = 91 + c;
        size_t n = (size_t)d->batch * d->channels * d->height * d->width, m = 4 * n;
        float *x = th_random_floats(n, -2, 2, &seed), *dy = th_random_floats(m, -1, 1, &seed);
        float *torch_out = malloc(5 * n * sizeof(float)), *y = malloc(m * sizeof(float));
        float *dx = malloc(n * sizeof(float));
        CU_ASSERT_FATAL(torch_out && y && dx);
        if (run_torch_nearest(d, x, dy, torch_out)) {
            tt_buffer *bx = th_upload(x, n, "nt.x"), *by = th_zeros(m, "nt.y");
            tt_buffer *bdy = th_upload(dy, m, "nt.dy"), *bdx = th_zeros(n, "nt.dx");
            TH_OK(tt_upsample_nearest2x_forward(be, tt_mem_of(by), tt_mem_of(bx), d));
            TH_OK(tt_upsample_nearest2x_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), d));
            th_download(y, by, m);
            th_download(dx, bdx, n);
            size_t differ = 0;
            for (size_t i = 0; i < m; i++) differ += y[i] != torch_out[i];
            double e = th_max_rel_error_f(dx, torch_out + m, n, ERR_FLOOR);
            printf("\n  nearest2x (%d,%d,%d,%d) vs torch: forward %zu of %zu differ, "
                   "backward %.2e",
                   d->batch, d->channels, d->height, d->width, differ, m, e);
            CU_ASSERT_EQUAL(differ, 0);
            CU_ASSERT(e < GRAD_TOL);
            tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(bdy), tt_buffer_free(bdx);
        }
        free(x), free(dy), free(torch_out), free(y), free(dx);
    }
}

static void test_nearest_errors(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *a = th_zeros(16, "nerr.a"), *b = th_zeros(16, "nerr.b");
    tt_upsample_desc d = {1, 1, 2, 3}; /* needs 24 output floats */
    tt_status s = tt_upsample_nearest2x_forward(be, tt_mem_of(a), tt_mem_of(b), &d);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "nerr.a") != NULL);
    tt_status_free(s);
    /* a dout too small for the input's 2x2 blocks */
    tt_upsample_desc four = {1, 1, 2, 2}; /* dinp 4 floats, dout 16 */
    s = tt_upsample_nearest2x_backward(be, tt_mem_of(a), tt_mem_f32(tt_mem_of(b), 1), &four);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "dout") != NULL);
    tt_status_free(s);
    tt_upsample_desc empty = {1, 0, 2, 3};
    s = tt_upsample_nearest2x_backward(be, tt_mem_of(a), tt_mem_of(b), &empty);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "(1, 0, 2, 3)") != NULL);
    tt_status_free(s);
    /* 2^32 outputs do not fit one int-indexed launch: refused before any
     * buffer is looked at, naming the op */
    tt_upsample_desc huge = {1, 4, 16384, 16384};
    s = tt_upsample_nearest2x_forward(be, tt_mem_of(a), tt_mem_of(b), &huge);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_UNSUPPORTED);
    CU_ASSERT(s && strstr(tt_status_message(s), "upsample_nearest2x forward") != NULL);
    tt_status_free(s);
    /* a gradient not wanted: nothing is done */
    tt_upsample_desc one = {1, 1, 1, 1};
    TH_OK(tt_upsample_nearest2x_backward(be, (tt_mem){0}, tt_mem_of(a), &one));
    tt_buffer_free(a), tt_buffer_free(b);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"factors 1 to 8: forward, bits, gradient, twice, odd sizes", test_shapes},
        {"x2: the reference is the old x2 one", test_ref_matches_x2},
        {"matches PyTorch's numbers", test_matches_pytorch},
        {"x4 by PyTorch's formula, by hand", test_x4_by_hand},
        {"x2: bits of the float reference", test_x2_bits},
        {"errors name the problem", test_errors},
        {"aligned: factors 1 to 8 and 64: forward, bits, gradient, twice", test_aligned_shapes},
        {"aligned: backward's outputs per input, exhaustively", test_aligned_readers},
        {"aligned: matches PyTorch's numbers", test_aligned_matches_pytorch},
        {"aligned: x3 by hand", test_aligned_by_hand},
        {"aligned: errors name the problem", test_aligned_errors},
        {"nearest: forward exact, gradient, twice, odd and even sizes", test_nearest_shapes},
        {"nearest: a launch past one dimension of work-groups", test_nearest_large},
        {"nearest: matches PyTorch (F.interpolate)", test_nearest_matches_torch},
        {"nearest: errors name the problem", test_nearest_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("upsample", tests, TH_EVERY);
}

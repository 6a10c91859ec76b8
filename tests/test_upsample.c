/* Bilinear x2 upsampling (align_corners = False): forward vs the double
 * reference and vs numbers from PyTorch, finite-difference gradient,
 * backward adds, odd sizes and 1x1 images. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/upsample.h"
#include "ref_act.h"

/* Tolerances: the weights are exact in float (multiples of 1/16), so the
 * forward rounds a sum of 4 products and the backward a sum of at most 16
 * (plus dinp0): a few ulps of the summands, which are of size 1.  Results
 * near zero by cancellation keep that absolute error, so errors are relative
 * with a floor of 0.1 (ERR_FLOOR).  Gradients: dinp0 + numeric gradient
 * (exact for a linear op) in double. */
#define ERR_FLOOR 0.1
#define FORWARD_TOL 1e-5
#define GRAD_TOL 1e-5
#define GRAD_H 1e-3

typedef struct loss_ctx {
    const tt_upsample_desc *desc;
    const double *dy;
    double *y; /* scratch */
    size_t out_count;
} loss_ctx;

/* L = sum(dy * up(x)) */
static double loss(const double *x, void *opaque)
{
    loss_ctx *c = opaque;
    ref_upsample_bilinear2x_forward(c->y, x, c->desc);
    double sum = 0;
    for (size_t i = 0; i < c->out_count; i++) sum += c->dy[i] * c->y[i];
    return sum;
}

static void check_upsample(tt_upsample_desc d)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    uint64_t seed = 21 + (uint64_t)d.height * 7 + (uint64_t)d.width;
    size_t n = (size_t)d.batch * d.channels * d.height * d.width, m = 4 * n;
    float *x = malloc(n * sizeof *x), *dx0 = malloc(n * sizeof *dx0);
    float *gotx = malloc(n * sizeof *gotx), *dy = malloc(m * sizeof *dy);
    float *goty = malloc(m * sizeof *goty);
    double *wanty = malloc(m * sizeof *wanty), *wantx = malloc(n * sizeof *wantx);
    double *grad = malloc(n * sizeof *grad);
    CU_ASSERT_FATAL(x && dx0 && gotx && dy && goty && wanty && wantx && grad);
    th_fill_uniform(x, n, -2, 2, &seed);
    th_fill_uniform(dy, m, -1, 1, &seed);
    th_fill_uniform(dx0, n, -1, 1, &seed);
    double *xd = th_to_double(x, n), *dyd = th_to_double(dy, m);
    tt_buffer *bx = th_upload(x, n, "up.x"), *by = th_zeros(m, "up.y");
    tt_buffer *bdy = th_upload(dy, m, "up.dy"), *bdx = th_upload(dx0, n, "up.dx");

    TH_OK(tt_upsample_bilinear2x_forward(be, tt_mem_of(by), tt_mem_of(bx), &d));
    th_download(goty, by, m);
    ref_upsample_bilinear2x_forward(wanty, xd, &d);
    double fwd_err = th_max_rel_error(goty, wanty, m, ERR_FLOOR);

    loss_ctx ctx = {&d, dyd, wanty, m};
    th_numeric_grad(loss, &ctx, xd, n, GRAD_H, grad);
    TH_OK(tt_upsample_bilinear2x_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d));
    th_download(gotx, bdx, n);
    for (size_t i = 0; i < n; i++) wantx[i] = dx0[i] + grad[i];
    double grad_err = th_max_rel_error(gotx, wantx, n, ERR_FLOOR);

    for (size_t i = 0; i < n; i++) wantx[i] = 0;
    ref_upsample_bilinear2x_backward(wantx, dyd, &d);
    double ref_err = 0;
    for (size_t i = 0; i < n; i++)
        ref_err = fmax(ref_err, fabs(wantx[i] - grad[i]) / (fabs(grad[i]) + 1e-3));

    TH_OK(tt_upsample_bilinear2x_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), &d));
    th_download(gotx, bdx, n);
    for (size_t i = 0; i < n; i++) wantx[i] = dx0[i] + 2 * grad[i];
    double twice_err = th_max_rel_error(gotx, wantx, n, ERR_FLOOR);

    printf("\n  up2x (%d,%d,%d,%d): forward %.2e, grad vs numeric %.2e, ref vs numeric %.2e, "
           "twice %.2e",
           d.batch, d.channels, d.height, d.width, fwd_err, grad_err, ref_err, twice_err);
    CU_ASSERT(fwd_err < FORWARD_TOL);
    CU_ASSERT(grad_err < GRAD_TOL);
    CU_ASSERT(ref_err < GRAD_TOL);
    CU_ASSERT(twice_err < GRAD_TOL);

    tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(bdy), tt_buffer_free(bdx);
    free(x), free(dx0), free(gotx), free(dy), free(goty), free(wanty), free(wantx), free(grad);
    free(xd), free(dyd);
}

static void test_shapes(void)
{
    const tt_upsample_desc cases[] = {
        {1, 3, 7, 9}, {2, 5, 5, 3}, {1, 3, 1, 1}, {2, 5, 1, 4}, {1, 3, 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_upsample(cases[i]);
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

static void test_errors(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *a = th_zeros(16, "uerr.a"), *b = th_zeros(16, "uerr.b");
    tt_upsample_desc d = {1, 1, 2, 3}; /* needs 24 output floats */
    tt_status s = tt_upsample_bilinear2x_forward(be, tt_mem_of(a), tt_mem_of(b), &d);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "uerr.a") != NULL);
    tt_status_free(s);
    tt_upsample_desc empty = {1, 0, 2, 3};
    s = tt_upsample_bilinear2x_forward(be, tt_mem_of(a), tt_mem_of(b), &empty);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    /* a gradient not wanted: nothing is done */
    tt_upsample_desc one = {1, 1, 1, 1};
    TH_OK(tt_upsample_bilinear2x_backward(be, (tt_mem){0}, tt_mem_of(a), &one));
    tt_buffer_free(a), tt_buffer_free(b);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"forward, gradient, twice on odd sizes", test_shapes},
        {"matches PyTorch's numbers", test_matches_pytorch},
        {"errors name the problem", test_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("upsample", tests);
}

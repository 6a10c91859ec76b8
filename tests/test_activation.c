/* Activations (ReLU, leaky ReLU, sigmoid, SiLU): forward vs the double
 * reference, finite-difference gradients, backward adds, in-place forward,
 * SiLU's extreme inputs. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/activation.h"
#include "ref_act.h"

/* Tolerances: ReLU and leaky ReLU are exact up to one float rounding;
 * sigmoid uses the device's exp (a few ulp); forward errors are relative
 * with a floor of 1e-3.  Gradients are compared with dinp0 + numeric
 * gradient in double; that sum of size-1 values can cancel to near zero,
 * where the float error is absolute, hence a floor of 0.1 (GRAD_FLOOR).
 * Sigmoid's 1 - y loses bits when y is near 1: 1e-4. */
#define FORWARD_TOL 1e-5
#define GRAD_TOL 1e-4
#define GRAD_FLOOR 0.1
#define GRAD_H 1e-3

static const int shapes[][4] = {{1, 3, 7, 9}, {2, 5, 5, 3}, {1, 3, 1, 1}, {2, 5, 1, 1}};
enum { SHAPE_COUNT = sizeof shapes / sizeof shapes[0] };

static void ref_forward(double *y, const double *x, tt_activation act, size_t n)
{
    switch (act.kind) {
    case TT_ACT_RELU: ref_relu_forward(y, x, n); break;
    case TT_ACT_LEAKY_RELU: ref_leaky_relu_forward(y, x, act.negative_slope, n); break;
    case TT_ACT_SILU: ref_silu_forward(y, x, n); break;
    default: ref_sigmoid_forward(y, x, n); break;
    }
}

typedef struct loss_ctx {
    tt_activation act;
    const double *dy;
    double *y; /* scratch */
    size_t n;
} loss_ctx;

/* L = sum(dy * f(x)) */
static double loss(const double *x, void *opaque)
{
    loss_ctx *c = opaque;
    ref_forward(c->y, x, c->act, c->n);
    double sum = 0;
    for (size_t i = 0; i < c->n; i++) sum += c->dy[i] * c->y[i];
    return sum;
}

/* Inputs away from the kink at 0 for the piecewise-linear kinds. */
static void make_input(float *x, size_t n, tt_activation act, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        if (act.kind == TT_ACT_SIGMOID) {
            x[i] = (float)th_uniform(seed, -5, 5);
        } else {
            double m = th_uniform(seed, 0.02, 2.0);
            x[i] = (float)(th_uniform(seed, 0, 1) < 0.5 ? -m : m);
        }
    }
}

static void check_kind(tt_activation act)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    uint64_t seed = 100 + (uint64_t)act.kind;
    for (int s = 0; s < SHAPE_COUNT; s++) {
        size_t n = (size_t)shapes[s][0] * shapes[s][1] * shapes[s][2] * shapes[s][3];
        float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy);
        float *dx0 = malloc(n * sizeof *dx0), *got = malloc(n * sizeof *got);
        double *want = malloc(n * sizeof *want), *grad = malloc(n * sizeof *grad);
        double *scratch = malloc(n * sizeof *scratch);
        CU_ASSERT_FATAL(x && dy && dx0 && got && want && grad && scratch);
        make_input(x, n, act, &seed);
        th_fill_uniform(dy, n, -1, 1, &seed);
        th_fill_uniform(dx0, n, -1, 1, &seed);
        double *xd = th_to_double(x, n), *dyd = th_to_double(dy, n);

        tt_buffer *bx = th_upload(x, n, "act.x"), *by = th_zeros(n, "act.y");
        tt_buffer *bdy = th_upload(dy, n, "act.dy"), *bdx = th_upload(dx0, n, "act.dx");

        /* forward */
        TH_OK(tt_activation_forward(be, tt_mem_of(by), tt_mem_of(bx), act, n));
        th_download(got, by, n);
        ref_forward(want, xd, act, n);
        double fwd_err = th_max_rel_error(got, want, n, 1e-3);

        /* backward vs central differences of L = sum(dy * f(x)) */
        loss_ctx ctx = {act, dyd, scratch, n};
        th_numeric_grad(loss, &ctx, xd, n, GRAD_H, grad);
        TH_OK(tt_activation_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(by), act, n));
        th_download(got, bdx, n);
        for (size_t i = 0; i < n; i++) want[i] = dx0[i] + grad[i];
        double grad_err = th_max_rel_error(got, want, n, GRAD_FLOOR);

        /* the analytic reference (from the input) agrees with the numeric one */
        for (size_t i = 0; i < n; i++) scratch[i] = 0;
        if (act.kind == TT_ACT_RELU) ref_relu_backward(scratch, dyd, xd, n);
        else if (act.kind == TT_ACT_LEAKY_RELU)
            ref_leaky_relu_backward(scratch, dyd, xd, act.negative_slope, n);
        else ref_sigmoid_backward(scratch, dyd, xd, n);
        double ref_err = 0;
        for (size_t i = 0; i < n; i++)
            ref_err = fmax(ref_err, fabs(scratch[i] - grad[i]) / (fabs(grad[i]) + 1e-3));

        /* backward again adds the same gradient once more */
        TH_OK(tt_activation_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(by), act, n));
        th_download(got, bdx, n);
        for (size_t i = 0; i < n; i++) want[i] = dx0[i] + 2 * grad[i];
        double twice_err = th_max_rel_error(got, want, n, GRAD_FLOOR);

        printf("\n  %s (%d,%d,%d,%d): forward %.2e, grad vs numeric %.2e, ref vs numeric %.2e, "
               "twice %.2e",
               tt_activation_name(act.kind), shapes[s][0], shapes[s][1], shapes[s][2],
               shapes[s][3], fwd_err, grad_err, ref_err, twice_err);
        CU_ASSERT(fwd_err < FORWARD_TOL);
        CU_ASSERT(grad_err < GRAD_TOL);
        CU_ASSERT(ref_err < GRAD_TOL);
        CU_ASSERT(twice_err < GRAD_TOL);

        tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(bdy), tt_buffer_free(bdx);
        free(x), free(dy), free(dx0), free(got), free(want), free(grad), free(scratch);
        free(xd), free(dyd);
    }
}

static void test_relu(void) { check_kind((tt_activation){TT_ACT_RELU, 0}); }
static void test_leaky_relu(void)
{
    check_kind((tt_activation){TT_ACT_LEAKY_RELU, TT_LEAKY_RELU_DEFAULT_SLOPE});
    check_kind((tt_activation){TT_ACT_LEAKY_RELU, 0.2f});
}
static void test_sigmoid(void) { check_kind((tt_activation){TT_ACT_SIGMOID, 0}); }

/* SiLU's shapes: those above and odd, prime and 1-wide ones */
static const int silu_shapes[][4] = {{1, 3, 7, 9}, {2, 5, 5, 3}, {1, 1, 1, 1}, {3, 17, 1, 7},
                                     {2, 3, 13, 1}, {1, 3, 37, 41}};
/* Inputs where sigmoid saturates or exp(-x) would overflow a float, and 0. */
static const float silu_extremes[] = {-100.0f, 100.0f, 0.0f, -0.0f, -88.5f, 88.5f, -20.0f,
                                      20.0f, -1e30f, 1e30f, -FLT_MAX, FLT_MAX};
enum { SILU_EXTREMES = sizeof silu_extremes / sizeof silu_extremes[0] };

/* L = sum(dy * silu(x)) */
static double silu_loss(const double *x, void *opaque)
{
    loss_ctx *c = opaque;
    ref_silu_forward(c->y, x, c->n);
    double sum = 0;
    for (size_t i = 0; i < c->n; i++) sum += c->dy[i] * c->y[i];
    return sum;
}

/* SiLU against the reference and central differences, its backward from
 * the INPUT; the first elements of every tensor large enough are the
 * extremes (finite differences skip the ones past +-1e30, whose x +- h is
 * x again). */
static void test_silu(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    uint64_t seed = 300;
    for (size_t k = 0; k < sizeof silu_shapes / sizeof silu_shapes[0]; k++) {
        const int *sh = silu_shapes[k];
        size_t n = (size_t)sh[0] * sh[1] * sh[2] * sh[3];
        float *x = th_random_floats(n, -6, 6, &seed), *dy = th_random_floats(n, -1, 1, &seed);
        float *dx0 = th_random_floats(n, -1, 1, &seed), *got = malloc(n * sizeof *got);
        double *want = malloc(n * sizeof *want), *grad = malloc(n * sizeof *grad);
        double *scratch = malloc(n * sizeof *scratch);
        CU_ASSERT_FATAL(got && want && grad && scratch);
        size_t extremes = n < SILU_EXTREMES ? n : SILU_EXTREMES;
        for (size_t i = 0; i < extremes; i++) x[i] = silu_extremes[i];
        double *xd = th_to_double(x, n), *dyd = th_to_double(dy, n);

        th_pool pool = {.pad = 3};
        tt_mem mx = th_pool_put(&pool, x, n, "silu.x"), my = th_pool_put(&pool, NULL, n, "silu.y");
        tt_mem mdy = th_pool_put(&pool, dy, n, "silu.dy");
        tt_mem mdx = th_pool_put(&pool, dx0, n, "silu.dx");

        TH_OK(tt_silu_forward(be, my, mx, n));
        th_get(got, my, n);
        ref_silu_forward(want, xd, n);
        double fwd_err = th_max_rel_error(got, want, n, 1e-3);
        int finite = 1;
        for (size_t i = 0; i < n; i++) finite &= isfinite(got[i]) != 0;

        /* backward adds; analytic reference, then central differences away
         * from the huge inputs */
        TH_OK(tt_silu_backward(be, mdx, mdy, mx, n));
        th_get(got, mdx, n);
        for (size_t i = 0; i < n; i++) finite &= isfinite(got[i]) != 0;
        for (size_t i = 0; i < n; i++) want[i] = dx0[i];
        ref_silu_backward(want, dyd, xd, n);
        double ref_err = th_max_rel_error(got, want, n, GRAD_FLOOR);
        /* the huge inputs (dy 0 there) would swamp the loss's doubles */
        double *dy_fd = th_to_double(dy, n);
        for (size_t i = 0; i < n; i++)
            if (fabs(xd[i]) > 1e3) dy_fd[i] = 0;
        loss_ctx ctx = {{TT_ACT_SILU, 0}, dy_fd, scratch, n};
        th_numeric_grad(silu_loss, &ctx, xd, n, GRAD_H, grad);
        double num_err = 0;
        for (size_t i = 0; i < n; i++) {
            if (fabs(xd[i]) > 1e3) continue;
            double e = fabs(got[i] - (dx0[i] + grad[i])) / (fabs(dx0[i] + grad[i]) + GRAD_FLOOR);
            num_err = fmax(num_err, e);
        }

        /* again: adds the same gradient once more */
        TH_OK(tt_silu_backward(be, mdx, mdy, mx, n));
        th_get(got, mdx, n);
        for (size_t i = 0; i < n; i++) want[i] = 2 * want[i] - dx0[i];
        double twice_err = th_max_rel_error(got, want, n, GRAD_FLOOR);

        printf("\n  silu (%d,%d,%d,%d): forward %.2e, grad vs ref %.2e, vs numeric %.2e, twice "
               "%.2e%s",
               sh[0], sh[1], sh[2], sh[3], fwd_err, ref_err, num_err, twice_err,
               finite ? "" : ", NOT FINITE");
        CU_ASSERT(finite);
        CU_ASSERT(fwd_err < FORWARD_TOL);
        CU_ASSERT(ref_err < GRAD_TOL);
        CU_ASSERT(num_err < GRAD_TOL);
        CU_ASSERT(twice_err < GRAD_TOL);
        th_pool_free(&pool);
        free(x), free(dy), free(dx0), free(got), free(want), free(grad), free(scratch);
        free(xd), free(dyd), free(dy_fd);
    }
}

/* SiLU in place (out == inp, at an offset), through the generic forward
 * too; its backward then takes the input kept elsewhere.  The extremes:
 * silu(0) = 0, silu(100) = 100, silu(-100) = -3.7e-42 (a denormal, or 0
 * where they are flushed); gradients 0.5, 1 and about 0. */
static void test_silu_in_place(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { N = 2 * 3 * 7 * 9 };
    static float x[N], got[N];
    static double want[N], xd[N];
    uint64_t seed = 17;
    th_fill_uniform(x, N, -8, 8, &seed);
    x[0] = 0.0f, x[1] = 100.0f, x[2] = -100.0f;
    for (int i = 0; i < N; i++) xd[i] = x[i];
    ref_silu_forward(want, xd, N);
    double err[2];
    for (int pass = 0; pass < 2; pass++) {
        tt_buffer *bx = th_zeros(N + 5, "silu_inplace.x");
        tt_mem xm = tt_mem_f32(tt_mem_of(bx), 5);
        TH_OK(tt_write(be, xm, x, sizeof x));
        if (pass == 0) TH_OK(tt_silu_forward(be, xm, xm, N));
        else TH_OK(tt_activation_forward(be, xm, xm, (tt_activation){TT_ACT_SILU, 0}, N));
        TH_OK(tt_read(be, got, xm, sizeof got));
        err[pass] = th_max_rel_error(got, want, N, 1e-3);
        CU_ASSERT(got[0] == 0.0f && got[1] == 100.0f && fabsf(got[2]) < 1e-30f);
        float head[5];
        TH_OK(tt_read(be, head, tt_mem_of(bx), sizeof head));
        for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(head[i], 0.0f); /* untouched */
        tt_buffer_free(bx);
    }
    float ones[3] = {1, 1, 1}, dx[3];
    tt_buffer *bx = th_upload(x, 3, "silu_edge.x"), *bdy = th_upload(ones, 3, "silu_edge.dy");
    tt_buffer *bdx = th_zeros(3, "silu_edge.dx");
    TH_OK(tt_silu_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(bx), 3));
    th_download(dx, bdx, 3);
    printf("\n  silu in place: %.2e, through tt_activation_forward %.2e; gradient at 0, 100, "
           "-100: %g %g %g",
           err[0], err[1], dx[0], dx[1], dx[2]);
    CU_ASSERT(err[0] < FORWARD_TOL && err[1] < FORWARD_TOL);
    CU_ASSERT(dx[0] == 0.5f && dx[1] == 1.0f && fabsf(dx[2]) < 1e-30f);
    /* dinp not wanted: nothing happens, no error */
    TH_OK(tt_silu_backward(be, (tt_mem){0}, tt_mem_of(bdy), tt_mem_of(bx), 3));
    tt_buffer_free(bx), tt_buffer_free(bdy), tt_buffer_free(bdx);
}

/* out == inp: the forward overwrites x, and the backward, reading only the
 * output, still gives the gradient of the original x. */
static void test_in_place(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { N = 2 * 3 * 7 * 9 };
    static float x[N], dy[N], got[N];
    static double want[N], xd[N], dyd[N];
    uint64_t seed = 7;
    const tt_activation kinds[] = {{TT_ACT_RELU, 0}, {TT_ACT_LEAKY_RELU, 0.01f},
                                   {TT_ACT_SIGMOID, 0}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        tt_activation act = kinds[k];
        make_input(x, N, act, &seed);
        th_fill_uniform(dy, N, -1, 1, &seed);
        for (int i = 0; i < N; i++) xd[i] = x[i], dyd[i] = dy[i];
        /* the tensor sits 5 floats into its buffer: offsets must hold too */
        tt_buffer *bx = th_zeros(N + 5, "inplace.x");
        tt_mem xm = tt_mem_f32(tt_mem_of(bx), 5);
        TH_OK(tt_write(be, xm, x, sizeof x));
        tt_buffer *bdy = th_upload(dy, N, "inplace.dy"), *bdx = th_zeros(N, "inplace.dx");
        TH_OK(tt_activation_forward(be, xm, xm, act, N));
        TH_OK(tt_read(be, got, xm, sizeof got));
        ref_forward(want, xd, act, N);
        double fwd_err = th_max_rel_error(got, want, N, 1e-3);
        TH_OK(tt_activation_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), xm, act, N));
        th_download(got, bdx, N);
        for (int i = 0; i < N; i++) want[i] = 0;
        if (act.kind == TT_ACT_RELU) ref_relu_backward(want, dyd, xd, N);
        else if (act.kind == TT_ACT_LEAKY_RELU) ref_leaky_relu_backward(want, dyd, xd, 0.01, N);
        else ref_sigmoid_backward(want, dyd, xd, N);
        double grad_err = th_max_rel_error(got, want, N, 1e-3);
        float head[5];
        TH_OK(tt_read(be, head, tt_mem_of(bx), sizeof head));
        printf("\n  in-place %s: forward %.2e, backward %.2e", tt_activation_name(act.kind),
               fwd_err, grad_err);
        CU_ASSERT(fwd_err < FORWARD_TOL);
        CU_ASSERT(grad_err < GRAD_TOL);
        for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(head[i], 0.0f); /* untouched */
        tt_buffer_free(bx), tt_buffer_free(bdy), tt_buffer_free(bdx);
    }
}

/* The in-place ReLU gradient: d = out > 0 ? d : 0 against the reference
 * (which adds into zeros), at an offset, with the edges (0, NaN). */
static void test_relu_backward_inplace(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { N = 1003 };
    static float x[N], y[N], dy[N], got[N];
    static double xd[N], dyd[N], want[N];
    uint64_t seed = 71;
    th_fill_uniform(x, N, -1, 1, &seed);
    th_fill_uniform(dy, N, -1, 1, &seed);
    x[0] = 0.0f, x[1] = NAN;
    for (int i = 0; i < N; i++) y[i] = x[i] > 0 ? x[i] : (isnan(x[i]) ? x[i] : 0.0f);
    for (int i = 0; i < N; i++) xd[i] = y[i], dyd[i] = dy[i], want[i] = 0;
    ref_relu_backward(want, dyd, xd, N);
    want[1] = 0; /* NaN output: no gradient, as relu_backward */
    tt_buffer *by = th_upload(y, N, "inplace.y"), *bd = th_zeros(N + 3, "inplace.d");
    tt_mem d = tt_mem_f32(tt_mem_of(bd), 3);
    TH_OK(tt_write(be, d, dy, sizeof dy));
    TH_OK(tt_relu_backward_inplace(be, d, tt_mem_of(by), N));
    TH_OK(tt_read(be, got, d, sizeof got));
    double e = th_max_rel_error(got, want, N, 1e-3);
    printf("\n  relu backward in place: %.2e", e);
    CU_ASSERT(e == 0);
    CU_ASSERT(got[0] == 0.0f && got[1] == 0.0f);
    tt_buffer_free(by), tt_buffer_free(bd);
}

/* PyTorch's conventions at the edges: relu(NaN) = NaN, gradient 0 at 0. */
static void test_edges(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    float x[4] = {0.0f, NAN, -3.0f, 1e30f}, y[4], dx[4];
    float ones[4] = {1, 1, 1, 1};
    tt_buffer *bx = th_upload(x, 4, "edge.x"), *by = th_zeros(4, "edge.y");
    tt_buffer *bdy = th_upload(ones, 4, "edge.dy"), *bdx = th_zeros(4, "edge.dx");
    TH_OK(tt_relu_forward(be, tt_mem_of(by), tt_mem_of(bx), 4));
    th_download(y, by, 4);
    CU_ASSERT(y[0] == 0.0f && isnan(y[1]) && y[2] == 0.0f && y[3] == 1e30f);
    TH_OK(tt_relu_backward(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(by), 4));
    th_download(dx, bdx, 4);
    CU_ASSERT(dx[0] == 0.0f && dx[2] == 0.0f && dx[3] == 1.0f);
    TH_OK(tt_sigmoid_forward(be, tt_mem_of(by), tt_mem_of(bx), 4));
    th_download(y, by, 4);
    CU_ASSERT(y[0] == 0.5f && isnan(y[1]) && y[3] == 1.0f);
    /* dinp not wanted: nothing happens, no error */
    TH_OK(tt_relu_backward(be, (tt_mem){0}, tt_mem_of(bdy), tt_mem_of(by), 4));
    tt_buffer_free(bx), tt_buffer_free(by), tt_buffer_free(bdy), tt_buffer_free(bdx);
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
    tt_buffer *a = th_zeros(8, "err.a"), *b = th_zeros(8, "err.b");
    expect_error(tt_leaky_relu_forward(be, tt_mem_of(a), tt_mem_of(b), -0.5f, 8),
                 TT_ERR_UNSUPPORTED, "negative_slope");
    expect_error(tt_relu_forward(be, tt_mem_of(a), tt_mem_of(b), 9), TT_ERR_INVALID_ARGUMENT,
                 "err.a");
    expect_error(tt_relu_backward(be, tt_mem_of(a), tt_mem_of(a), tt_mem_of(b), 8),
                 TT_ERR_INVALID_ARGUMENT, "same memory");
    tt_activation_kind kind = TT_ACT_RELU;
    TH_OK(tt_activation_parse("sigmoid", &kind));
    CU_ASSERT_EQUAL(kind, TT_ACT_SIGMOID);
    expect_error(tt_activation_parse("gelu", &kind), TT_ERR_INVALID_ARGUMENT, "gelu");
    /* SiLU: a name users give; its gradient needs the input, so the
     * output-reading backward refuses it and names the one to call */
    TH_OK(tt_activation_parse("silu", &kind));
    CU_ASSERT_EQUAL(kind, TT_ACT_SILU);
    CU_ASSERT_STRING_EQUAL(tt_activation_name(TT_ACT_SILU), "silu");
    CU_ASSERT(tt_activation_backward_reads_input(TT_ACT_SILU));
    CU_ASSERT(!tt_activation_backward_reads_input(TT_ACT_SIGMOID));
    expect_error(tt_activation_backward(be, tt_mem_of(a), tt_mem_of(b), tt_mem_of(b),
                                        (tt_activation){TT_ACT_SILU, 0}, 8),
                 TT_ERR_UNSUPPORTED, "tt_silu_backward");
    expect_error(tt_silu_backward(be, tt_mem_of(a), tt_mem_of(a), tt_mem_of(b), 8),
                 TT_ERR_INVALID_ARGUMENT, "same memory");
    expect_error(tt_silu_forward(be, tt_mem_of(a), tt_mem_of(b), 9), TT_ERR_INVALID_ARGUMENT,
                 "silu");
    expect_error(tt_silu_backward(be, tt_mem_of(a), tt_mem_of(b), tt_mem_f32(tt_mem_of(b), 1), 8),
                 TT_ERR_INVALID_ARGUMENT, "inp");
    tt_buffer_free(a), tt_buffer_free(b);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"relu forward, gradient, twice", test_relu},
        {"leaky_relu forward, gradient, twice", test_leaky_relu},
        {"sigmoid forward, gradient, twice", test_sigmoid},
        {"silu forward, gradient from the input, extremes", test_silu},
        {"silu in place, exact edges", test_silu_in_place},
        {"in place (out == inp)", test_in_place},
        {"NaN, zero, saturation", test_edges},
        {"relu gradient in place", test_relu_backward_inplace},
        {"errors name the problem", test_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("activation", tests, TH_EVERY);
}

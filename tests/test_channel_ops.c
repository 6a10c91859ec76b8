/* The squeeze-and-excitation ops: global average pooling and the channel
 * multiply against the double references (tests/ref_channel.h), on shapes
 * that break kernels (1-wide and prime planes, planes of one chunk and of
 * several), finite-difference gradients, backward adds, in-place forward,
 * the chained SE block's gradient, and one large plane for the
 * reductions' accuracy and determinism. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/activation.h"
#include "ops/channel_mul.h"
#include "ops/global_avg_pool.h"
#include "ref_channel.h"

/* Tolerances.  Element-wise results are one or two float roundings from
 * the double reference: relative 1e-6 with a floor of 1e-3 (1 where a
 * backward adds into size-1 values, ADD_FLOOR).  Plane sums
 * round at every addition: their error is measured against the sum of the
 * magnitudes (cond_error), which bounds it whatever cancels, and must stay
 * below 1e-5.  Finite differences of these (bi)linear maps in double are
 * exact up to h^2 terms: gradients within 1e-4 with a floor of 0.1 (a
 * float sum of size-1 terms can cancel to near zero). */
#define ELEM_TOL 1e-6
#define SUM_TOL 1e-5
#define GRAD_TOL 1e-4
#define GRAD_FLOOR 0.1
#define GRAD_H 1e-3
/* a gradient added into size-1 values can cancel to near zero, where the
 * float error is absolute: the floor of those comparisons */
#define ADD_FLOOR 1.0
/* finite differences cost elements^2: only below this many elements */
#define FD_MAX 5000

/* (N, C, H, W): 1x1, 1-wide and prime planes; N 1..3, C 1, 3, 17; two
 * planes over one work-group's chunk (several chunks a plane); and more
 * planes than a dimension of work-groups reaches on Vulkan (65535: the
 * launch is folded into rows) */
static const int shapes[][4] = {
    {1, 1, 1, 1}, {2, 3, 1, 1},     {1, 3, 1, 7},       {3, 1, 13, 1},
    {2, 17, 5, 3}, {1, 3, 37, 41},  {3, 17, 7, 7},      {2, 1, 8, 8},
    {1, 3, 131, 127}, {2, 1, 263, 127}, {2, 40000, 1, 3},
};
enum { SHAPE_COUNT = sizeof shapes / sizeof shapes[0] };

/* max over planes of |got - want| / (sum of |terms| / scale + tiny): a
 * sum's error relative to what the sum could lose. */
static double cond_error(const float *got, const double *want, const double *magnitude,
                         int planes)
{
    double e = 0;
    for (int p = 0; p < planes; p++) {
        double d = fabs((double)got[p] - want[p]) / (magnitude[p] + 1e-30);
        if (isnan(got[p])) return INFINITY;
        e = fmax(e, d);
    }
    return e;
}

typedef struct fd_ctx {
    int planes, plane;
    const double *w;   /* the weights of the scalar loss, one per output */
    const double *s;   /* channel multiply: the scales (when x varies) */
    const double *x;   /* channel multiply: the input (when s varies) */
    double *scratch;
} fd_ctx;

/* L = sum(w * pool(x)) */
static double pool_loss(const double *x, void *opaque)
{
    fd_ctx *c = opaque;
    ref_global_avg_pool_forward(c->scratch, x, c->planes, c->plane);
    double sum = 0;
    for (int p = 0; p < c->planes; p++) sum += c->w[p] * c->scratch[p];
    return sum;
}

/* L = sum(w * (x * s)) as a function of x, then of s */
static double mul_loss_x(const double *x, void *opaque)
{
    fd_ctx *c = opaque;
    size_t n = (size_t)c->planes * c->plane;
    ref_channel_mul_forward(c->scratch, x, c->s, c->planes, c->plane);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += c->w[i] * c->scratch[i];
    return sum;
}
static double mul_loss_s(const double *s, void *opaque)
{
    fd_ctx *c = opaque;
    size_t n = (size_t)c->planes * c->plane;
    ref_channel_mul_forward(c->scratch, c->x, s, c->planes, c->plane);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += c->w[i] * c->scratch[i];
    return sum;
}

static void test_global_avg_pool(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    uint64_t seed = 11;
    for (int k = 0; k < SHAPE_COUNT; k++) {
        tt_global_avg_pool_desc d = {shapes[k][0], shapes[k][1], shapes[k][2], shapes[k][3]};
        int planes = d.batch * d.channels, plane = d.height * d.width;
        size_t n = (size_t)planes * plane;
        float *x = th_random_floats(n, -1, 1, &seed), *dx0 = th_random_floats(n, -1, 1, &seed);
        float *dy = th_random_floats((size_t)planes, -1, 1, &seed);
        float *got = malloc(n * sizeof *got);
        double *xd = th_to_double(x, n), *dyd = th_to_double(dy, (size_t)planes);
        double *want = malloc(n * sizeof *want), *mag = malloc((size_t)planes * sizeof *mag);
        CU_ASSERT_FATAL(got && want && mag);

        th_pool pool = {.pad = 3};
        tt_mem mx = th_pool_put(&pool, x, n, "gap.x");
        tt_mem my = th_pool_put(&pool, dy, planes, "gap.y"); /* to be overwritten */
        tt_mem mdy = th_pool_put(&pool, dy, planes, "gap.dy");
        tt_mem mdx = th_pool_put(&pool, dx0, n, "gap.dx");

        /* forward: overwrites y; error against what the sum could lose */
        TH_OK(tt_global_avg_pool_forward(be, my, mx, &d));
        th_get(got, my, (size_t)planes);
        ref_global_avg_pool_forward(want, xd, planes, plane);
        for (int p = 0; p < planes; p++) {
            mag[p] = 0;
            for (int i = 0; i < plane; i++) mag[p] += fabs(xd[(size_t)p * plane + i]);
            mag[p] /= plane;
        }
        double fwd_err = cond_error(got, want, mag, planes);

        /* backward adds dy / plane into dx0 */
        TH_OK(tt_global_avg_pool_backward(be, mdx, mdy, &d));
        th_get(got, mdx, n);
        for (size_t i = 0; i < n; i++) want[i] = dx0[i];
        ref_global_avg_pool_backward(want, dyd, planes, plane);
        double bwd_err = th_max_rel_error(got, want, n, ADD_FLOOR);

        /* the analytic gradient against central differences */
        double grad_err = NAN; /* NaN: not computed, too large */
        if (n <= FD_MAX) {
            double *grad = malloc(n * sizeof *grad), *scratch = malloc(planes * sizeof *scratch);
            CU_ASSERT_FATAL(grad && scratch);
            fd_ctx ctx = {planes, plane, dyd, NULL, NULL, scratch};
            th_numeric_grad(pool_loss, &ctx, xd, n, GRAD_H, grad);
            for (size_t i = 0; i < n; i++) want[i] = dx0[i] + grad[i];
            grad_err = th_max_rel_error(got, want, n, GRAD_FLOOR);
            free(grad), free(scratch);
        }
        printf("\n  global_avg_pool (%d,%d,%d,%d): forward %.2e, backward %.2e, vs numeric %.2e",
               d.batch, d.channels, d.height, d.width, fwd_err, bwd_err, grad_err);
        CU_ASSERT(fwd_err < SUM_TOL);
        CU_ASSERT(bwd_err < ELEM_TOL);
        CU_ASSERT(n > FD_MAX || grad_err < GRAD_TOL);
        th_pool_free(&pool);
        free(x), free(dx0), free(dy), free(got), free(xd), free(dyd), free(want), free(mag);
    }
}

static void test_channel_mul(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    uint64_t seed = 23;
    for (int k = 0; k < SHAPE_COUNT; k++) {
        tt_channel_mul_desc d = {shapes[k][0], shapes[k][1], shapes[k][2], shapes[k][3]};
        int planes = d.batch * d.channels, plane = d.height * d.width;
        size_t n = (size_t)planes * plane;
        float *x = th_random_floats(n, -1, 1, &seed), *dy = th_random_floats(n, -1, 1, &seed);
        float *s = th_random_floats((size_t)planes, -2, 2, &seed);
        float *dx0 = th_random_floats(n, -1, 1, &seed);
        float *ds0 = th_random_floats((size_t)planes, -1, 1, &seed);
        float *got = malloc(n * sizeof *got);
        double *xd = th_to_double(x, n), *dyd = th_to_double(dy, n);
        double *sd = th_to_double(s, (size_t)planes);
        double *want = malloc(n * sizeof *want), *ds_want = malloc(planes * sizeof *ds_want);
        double *mag = malloc(planes * sizeof *mag);
        CU_ASSERT_FATAL(got && want && ds_want && mag);

        th_pool pool = {.pad = 5};
        tt_mem mx = th_pool_put(&pool, x, n, "cmul.x");
        tt_mem ms = th_pool_put(&pool, s, planes, "cmul.s");
        tt_mem my = th_pool_put(&pool, dy, n, "cmul.y"); /* to be overwritten */
        tt_mem mdy = th_pool_put(&pool, dy, n, "cmul.dy");
        tt_mem mdx = th_pool_put(&pool, dx0, n, "cmul.dx");
        tt_mem mds = th_pool_put(&pool, ds0, planes, "cmul.ds");
        tt_mem mxi = th_pool_put(&pool, x, n, "cmul.x_inplace");

        /* forward, then in place (y == x) gives the same bits */
        TH_OK(tt_channel_mul_forward(be, my, mx, ms, &d));
        th_get(got, my, n);
        ref_channel_mul_forward(want, xd, sd, planes, plane);
        double fwd_err = th_max_rel_error(got, want, n, 1e-3);
        TH_OK(tt_channel_mul_forward(be, mxi, mxi, ms, &d));
        int in_place_same = th_same_bits(mxi, my, n);

        /* backward: dx += dy s, ds += sum(dy x), both adding */
        TH_OK(tt_channel_mul_backward(be, mdx, mds, mdy, mx, ms, &d));
        th_get(got, mdx, n);
        for (size_t i = 0; i < n; i++) want[i] = dx0[i];
        for (int p = 0; p < planes; p++) ds_want[p] = ds0[p];
        ref_channel_mul_backward(want, ds_want, dyd, xd, sd, planes, plane);
        double dx_err = th_max_rel_error(got, want, n, ADD_FLOOR);
        float *dx_after = malloc(n * sizeof *dx_after);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dx_after);
        memcpy(dx_after, got, n * sizeof *got);
        float *ds_got = malloc(planes * sizeof *ds_got);
        float *ds_twice = malloc(planes * sizeof *ds_twice);
        CU_ASSERT_FATAL(ds_got && ds_twice);
        th_get(ds_got, mds, (size_t)planes);
        for (int p = 0; p < planes; p++) {
            mag[p] = fabs(ds0[p]);
            for (int i = 0; i < plane; i++)
                mag[p] += fabs(dyd[(size_t)p * plane + i] * xd[(size_t)p * plane + i]);
        }
        double ds_err = cond_error(ds_got, ds_want, mag, planes);

        /* against central differences of L = sum(dy * y) */
        double gx_err = NAN, gs_err = NAN; /* NaN: not computed, too large */
        if (n <= FD_MAX) {
            double *grad = malloc(n * sizeof *grad), *scratch = malloc(n * sizeof *scratch);
            CU_ASSERT_FATAL(grad && scratch);
            fd_ctx ctx = {planes, plane, dyd, sd, xd, scratch};
            th_numeric_grad(mul_loss_x, &ctx, xd, n, GRAD_H, grad);
            for (size_t i = 0; i < n; i++) want[i] = dx0[i] + grad[i];
            gx_err = th_max_rel_error(got, want, n, GRAD_FLOOR);
            th_numeric_grad(mul_loss_s, &ctx, sd, (size_t)planes, GRAD_H, grad);
            for (int p = 0; p < planes; p++) want[p] = ds0[p] + grad[p];
            gs_err = th_max_rel_error(ds_got, want, (size_t)planes, GRAD_FLOOR);
            free(grad), free(scratch);
        }

        /* gradients not wanted: nothing changes; ds alone leaves dx as it was */
        TH_OK(tt_channel_mul_backward(be, (tt_mem){0}, (tt_mem){0}, mdy, mx, ms, &d));
        TH_OK(tt_channel_mul_backward(be, (tt_mem){0}, mds, mdy, mx, ms, &d));
        th_get(got, mdx, n);
        int dx_kept = memcmp(got, dx_after, n * sizeof *got) == 0;
        th_get(ds_twice, mds, (size_t)planes);
        for (int p = 0; p < planes; p++) ds_want[p] += ds_want[p] - ds0[p];
        double twice_err = cond_error(ds_twice, ds_want, mag, planes);

        printf("\n  channel_mul (%d,%d,%d,%d): forward %.2e%s, dx %.2e, ds %.2e, vs numeric "
               "%.2e %.2e, ds twice %.2e",
               d.batch, d.channels, d.height, d.width, fwd_err,
               in_place_same ? "" : " (in place DIFFERS)", dx_err, ds_err, gx_err, gs_err,
               twice_err);
        CU_ASSERT(fwd_err < ELEM_TOL);
        CU_ASSERT(in_place_same);
        CU_ASSERT(dx_err < ELEM_TOL);
        CU_ASSERT(ds_err < SUM_TOL);
        CU_ASSERT(n > FD_MAX || (gx_err < GRAD_TOL && gs_err < GRAD_TOL));
        CU_ASSERT(dx_kept);
        CU_ASSERT(twice_err < 2 * SUM_TOL);
        th_pool_free(&pool);
        free(x), free(dy), free(s), free(dx0), free(ds0), free(got), free(xd), free(dyd);
        free(sd), free(want), free(ds_want), free(mag), free(dx_after);
        free(ds_got), free(ds_twice);
    }
}

/* One large plane (1 x 2 x 300 x 700, many chunks): the mean and the scale
 * gradient against double sums, positive data (nothing cancels: the error
 * relative to the result) and mixed signs; and the same bits when run
 * again (a fixed order of additions). */
static void test_large_plane(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const int planes = 2, plane = 300 * 700;
    size_t n = (size_t)planes * plane;
    uint64_t seed = 5;
    float *x = th_random_floats(n, 0, 1, &seed), *dy = th_random_floats(n, -1, 1, &seed);
    double *xd = th_to_double(x, n), *dyd = th_to_double(dy, n);
    th_pool pool = {.pad = 1};
    tt_mem mx = th_pool_put(&pool, x, n, "large.x"), mdy = th_pool_put(&pool, dy, n, "large.dy");
    tt_mem my = th_pool_put(&pool, NULL, planes, "large.y");
    tt_mem my2 = th_pool_put(&pool, NULL, planes, "large.y2");
    tt_mem mds = th_pool_put(&pool, NULL, planes, "large.ds");
    tt_mem mds2 = th_pool_put(&pool, NULL, planes, "large.ds2");
    tt_mem ms = th_pool_put(&pool, NULL, planes, "large.s");

    tt_global_avg_pool_desc pd = {1, 2, 300, 700};
    TH_OK(tt_global_avg_pool_forward(be, my, mx, &pd));
    TH_OK(tt_global_avg_pool_forward(be, my2, mx, &pd));
    tt_channel_mul_desc md = {1, 2, 300, 700};
    TH_OK(tt_channel_mul_backward(be, (tt_mem){0}, mds, mdy, mx, ms, &md));
    TH_OK(tt_channel_mul_backward(be, (tt_mem){0}, mds2, mdy, mx, ms, &md));
    float mean[2], ds[2];
    th_get(mean, my, 2), th_get(ds, mds, 2);
    double want[2], ds_want[2] = {0, 0}, mag[2];
    ref_global_avg_pool_forward(want, xd, planes, plane);
    ref_channel_mul_backward(NULL, ds_want, dyd, xd, NULL, planes, plane);
    double mean_err = th_max_rel_error(mean, want, 2, 0);
    for (int p = 0; p < planes; p++) {
        mag[p] = 0;
        for (int i = 0; i < plane; i++)
            mag[p] += fabs(dyd[(size_t)p * plane + i] * xd[(size_t)p * plane + i]);
    }
    double ds_err = cond_error(ds, ds_want, mag, planes);
    int same = th_same_bits(my, my2, 2) && th_same_bits(mds, mds2, 2);
    printf("\n  1 x 2 x 300 x 700: mean rel %.2e, ds %.2e (of sum |dy x|), again same bits %d",
           mean_err, ds_err, same);
    CU_ASSERT(mean_err < SUM_TOL);
    CU_ASSERT(ds_err < SUM_TOL);
    CU_ASSERT(same);
    th_pool_free(&pool);
    free(x), free(dy), free(xd), free(dyd);
}

typedef struct se_ctx {
    int planes, plane;
    const double *w;
    double *z, *y;
} se_ctx;

/* The SE block: s = sigmoid(pool(x)), y = x * s, L = sum(w * y) */
static double se_loss(const double *x, void *opaque)
{
    se_ctx *c = opaque;
    ref_global_avg_pool_forward(c->z, x, c->planes, c->plane);
    for (int p = 0; p < c->planes; p++) c->z[p] = 1 / (1 + exp(-c->z[p]));
    ref_channel_mul_forward(c->y, x, c->z, c->planes, c->plane);
    double sum = 0;
    for (size_t i = 0; i < (size_t)c->planes * c->plane; i++) sum += c->w[i] * c->y[i];
    return sum;
}

/* The chain on the device, x reaching y twice (through the scale and
 * directly): dx = dy s + pool' (sigmoid' (sum(dy x))), against central
 * differences of the whole block. */
static void test_se_chain(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    static const int se_shapes[][4] = {{2, 3, 5, 7}, {1, 17, 1, 1}, {3, 1, 13, 1}};
    uint64_t seed = 41;
    for (int k = 0; k < 3; k++) {
        int nb = se_shapes[k][0], c = se_shapes[k][1], h = se_shapes[k][2], w = se_shapes[k][3];
        int planes = nb * c, plane = h * w;
        size_t n = (size_t)planes * plane;
        float *x = th_random_floats(n, -2, 2, &seed), *dy = th_random_floats(n, -1, 1, &seed);
        float *got = malloc(n * sizeof *got);
        double *xd = th_to_double(x, n), *dyd = th_to_double(dy, n);
        double *grad = malloc(n * sizeof *grad), *z = malloc(planes * sizeof *z);
        double *y = malloc(n * sizeof *y);
        CU_ASSERT_FATAL(got && grad && z && y);
        th_pool pool = {.pad = 2};
        tt_mem mx = th_pool_put(&pool, x, n, "se.x"), mdy = th_pool_put(&pool, dy, n, "se.dy");
        tt_mem mz = th_pool_put(&pool, NULL, planes, "se.z");
        tt_mem ms = th_pool_put(&pool, NULL, planes, "se.s");
        tt_mem my = th_pool_put(&pool, NULL, n, "se.y");
        tt_mem mds = th_pool_put(&pool, NULL, planes, "se.ds");
        tt_mem mdz = th_pool_put(&pool, NULL, planes, "se.dz");
        tt_mem mdx = th_pool_put(&pool, NULL, n, "se.dx");

        tt_global_avg_pool_desc pd = {nb, c, h, w};
        tt_channel_mul_desc md = {nb, c, h, w};
        TH_OK(tt_global_avg_pool_forward(be, mz, mx, &pd));
        TH_OK(tt_sigmoid_forward(be, ms, mz, (size_t)planes));
        TH_OK(tt_channel_mul_forward(be, my, mx, ms, &md));
        TH_OK(tt_channel_mul_backward(be, mdx, mds, mdy, mx, ms, &md));
        TH_OK(tt_sigmoid_backward(be, mdz, mds, ms, (size_t)planes));
        TH_OK(tt_global_avg_pool_backward(be, mdx, mdz, &pd));
        th_get(got, mdx, n);

        se_ctx ctx = {planes, plane, dyd, z, y};
        th_numeric_grad(se_loss, &ctx, xd, n, GRAD_H, grad);
        double err = th_max_rel_error(got, grad, n, GRAD_FLOOR);
        printf("\n  SE chain (%d,%d,%d,%d): dx vs numeric %.2e", nb, c, h, w, err);
        CU_ASSERT(err < GRAD_TOL);
        th_pool_free(&pool);
        free(x), free(dy), free(got), free(xd), free(dyd), free(grad), free(z), free(y);
    }
}

static void expect_error(tt_status s, tt_code code, const char *needle)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(tt_status_code(s), code);
    int found = strstr(tt_status_message(s), needle) != NULL;
    if (!found) printf("\n  '%s' lacks '%s'", tt_status_message(s), needle);
    CU_ASSERT(found);
    tt_status_free(s);
}

static void test_errors(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *a = th_zeros(24, "err.a"), *b = th_zeros(24, "err.b"), *v = th_zeros(2, "err.v");
    tt_global_avg_pool_desc pd = {1, 2, 3, 4};
    tt_channel_mul_desc md = {1, 2, 3, 4};
    tt_global_avg_pool_desc bad = {1, 0, 3, 4};
    expect_error(tt_global_avg_pool_forward(be, tt_mem_of(v), tt_mem_of(a), &bad),
                 TT_ERR_INVALID_ARGUMENT, "global_avg_pool forward");
    /* a tensor one float short names the op and the argument */
    expect_error(tt_global_avg_pool_forward(be, tt_mem_of(v), tt_mem_f32(tt_mem_of(a), 1), &pd),
                 TT_ERR_INVALID_ARGUMENT, "err.a");
    expect_error(tt_global_avg_pool_backward(be, tt_mem_of(a), tt_mem_f32(tt_mem_of(v), 1), &pd),
                 TT_ERR_INVALID_ARGUMENT, "dout");
    expect_error(tt_channel_mul_forward(be, tt_mem_of(b), tt_mem_of(a), tt_mem_f32(tt_mem_of(v), 1),
                                        &md),
                 TT_ERR_INVALID_ARGUMENT, "channel_mul forward: s");
    expect_error(tt_channel_mul_backward(be, tt_mem_of(a), tt_mem_of(v), tt_mem_of(a),
                                         tt_mem_of(b), tt_mem_of(v), &md),
                 TT_ERR_INVALID_ARGUMENT, "same memory");
    expect_error(tt_channel_mul_backward(be, (tt_mem){0}, tt_mem_f32(tt_mem_of(v), 1),
                                         tt_mem_of(a), tt_mem_of(b), tt_mem_of(v), &md),
                 TT_ERR_INVALID_ARGUMENT, "ds");
    /* not wanted: nothing is done, no error */
    TH_OK(tt_global_avg_pool_backward(be, (tt_mem){0}, tt_mem_of(v), &pd));
    tt_buffer_free(a), tt_buffer_free(b), tt_buffer_free(v);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"global_avg_pool forward, backward, gradient", test_global_avg_pool},
        {"channel_mul forward, in place, backward, gradients", test_channel_mul},
        {"large plane: accuracy and determinism", test_large_plane},
        {"SE chain gradient (pool, sigmoid, channel_mul)", test_se_chain},
        {"errors name the op and the argument", test_errors},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("channel_ops", tests, TH_EVERY);
}

/* Batch norm on the device vs the double reference (tests/ref_norm.c):
 * training forward on odd shapes, running statistics after two forwards
 * (momentum 0.1 and cumulative), eval forward, finite-difference gradients
 * in training and eval mode, backward adding, absent gradients and affine,
 * refused descriptors, frozen batch norm (eval mode with weight and bias
 * trained, as a ResNet encoder's: forward, dinp, dweight, dbias with and
 * without the fused ReLU against a reference, finite differences and torch;
 * running statistics untouched), and cross-checks against
 * torch.nn.BatchNorm2d when torch is there.  Every tensor sits PAD floats into its buffer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "ops/batch_norm.h"
#include "ref_norm.h"

enum { PAD = 3, MAX_C = 16 };

typedef struct bn_case {
    int n, c, h, w;
} bn_case;

static size_t numel(const bn_case *k) { return (size_t)k->n * k->c * k->h * k->w; }


static void test_train_forward(void)
{
    static const bn_case cases[] = {
        {1, 6, 5, 7}, {3, 6, 5, 7}, {3, 5, 1, 1}, {2, 3, 17, 19}, {4, 7, 8, 8}, {2, 6, 40, 40},
        {2, 3, 33, 65}, /* several shares a plane, tails */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bn_case *k = &cases[ci];
        tt_batch_norm_desc d = tt_batch_norm_desc_make(k->n, k->c, k->h, k->w);
        size_t n = numel(k), nc = (size_t)k->c;
        uint64_t seed = 500 + ci;
        float *x = th_random_floats(n, -0.5f, 3.5f, &seed), *y = malloc(n * sizeof *y);
        float w[MAX_C], b[MAX_C], saved[2 * MAX_C];
        th_fill_uniform(w, nc, 0.5f, 1.5f, &seed);
        th_fill_uniform(b, nc, -0.5f, 0.5f, &seed);
        th_pool pool = {.pad = PAD};
        tt_batch_norm_state st = {.weight = th_pool_put(&pool, w, nc, "bn.weight"),
                                  .bias = th_pool_put(&pool, b, nc, "bn.bias")};
        tt_mem mx = th_pool_put(&pool, x, n, "bn.x"), my = th_pool_put(&pool, NULL, n, "bn.y");
        tt_mem ms = th_pool_put(&pool, NULL, tt_batch_norm_saved_floats(&d), "bn.saved");
        TH_OK(tt_batch_norm_forward(th_backend(), my, ms, mx, &st, &d, 1));
        CU_ASSERT_EQUAL(st.num_batches_tracked, 0); /* no running statistics given */
        th_get(y, my, n), th_get(saved, ms, 2 * nc);
        double *xd = th_to_double(x, n), *want = malloc(n * sizeof *want);
        double *wd = th_to_double(w, nc), *bd = th_to_double(b, nc), stats[2 * MAX_C];
        ref_batch_norm_forward_train(want, stats, stats + nc, xd, wd, bd, k->n, k->c, k->h, k->w,
                                     d.eps);
        for (size_t c = 0; c < nc; c++) stats[nc + c] = 1 / sqrt(stats[nc + c] + d.eps);
        double err_y = th_max_rel_error(y, want, n, 1.0);
        double err_s = th_max_rel_error(saved, stats, 2 * nc, 1e-3);
        printf("\n  batch_norm train forward N=%d C=%d H=%d W=%d: max err y %.2e, mean/rstd %.2e",
               k->n, k->c, k->h, k->w, err_y, err_s);
        CU_ASSERT(err_y < 1e-4); /* float32 sums of up to 3200 values */
        CU_ASSERT(err_s < 1e-4);
        th_pool_free(&pool);
        free(x), free(y), free(xd), free(want), free(wd), free(bd);
    }
}

/* Two training forwards update running_mean/var like PyTorch. */
static void check_running(const bn_case *k, float momentum, const char *label)
{
    tt_batch_norm_desc d = tt_batch_norm_desc_make(k->n, k->c, k->h, k->w);
    d.momentum = momentum;
    size_t n = numel(k), nc = (size_t)k->c;
    uint64_t seed = 900 + (uint64_t)k->n * 31 + (uint64_t)k->h;
    float *x1 = th_random_floats(n, -1, 2, &seed), *x2 = th_random_floats(n, 0, 4, &seed);
    float rm[MAX_C], rv[MAX_C];
    th_fill_uniform(rm, nc, -1, 1, &seed);
    th_fill_uniform(rv, nc, 0.5f, 2, &seed);
    double want_m[MAX_C], want_v[MAX_C], mean[MAX_C], var[MAX_C];
    for (size_t c = 0; c < nc; c++) want_m[c] = rm[c], want_v[c] = rv[c];
    th_pool pool = {.pad = PAD};
    tt_batch_norm_state st = {.running_mean = th_pool_put(&pool, rm, nc, "bn.running_mean"),
                              .running_var = th_pool_put(&pool, rv, nc, "bn.running_var")};
    tt_mem mx1 = th_pool_put(&pool, x1, n, "bn.x1"), mx2 = th_pool_put(&pool, x2, n, "bn.x2");
    tt_mem my = th_pool_put(&pool, NULL, n, "bn.y"), ms = th_pool_put(&pool, NULL, tt_batch_norm_saved_floats(&d), "bn.saved");
    TH_OK(tt_batch_norm_forward(th_backend(), my, ms, mx1, &st, &d, 1));
    TH_OK(tt_batch_norm_forward(th_backend(), my, ms, mx2, &st, &d, 1));
    CU_ASSERT_EQUAL(st.num_batches_tracked, 2);
    double *y = malloc(n * sizeof *y);
    const float *xs[2] = {x1, x2};
    for (int step = 0; step < 2; step++) {
        double *xd = th_to_double(xs[step], n);
        ref_batch_norm_forward_train(y, mean, var, xd, NULL, NULL, k->n, k->c, k->h, k->w, d.eps);
        double m = momentum == TT_BATCH_NORM_CUMULATIVE_AVERAGE ? 1.0 / (step + 1) : momentum;
        ref_batch_norm_update_running(want_m, want_v, mean, var, k->c, k->n * k->h * k->w, m);
        free(xd);
    }
    th_get(rm, st.running_mean, nc), th_get(rv, st.running_var, nc);
    double em = th_max_rel_error(rm, want_m, nc, 1e-2), ev = th_max_rel_error(rv, want_v, nc, 1e-2);
    printf("\n  batch_norm running stats (%s) N=%d C=%d H=%d W=%d: max err mean %.2e var %.2e",
           label, k->n, k->c, k->h, k->w, em, ev);
    CU_ASSERT(em < 1e-5);
    CU_ASSERT(ev < 1e-5);
    th_pool_free(&pool);
    free(x1), free(x2), free(y);
}

static void test_running_statistics(void)
{
    const bn_case a = {3, 6, 5, 7}, b = {3, 5, 1, 1}, c = {1, 4, 3, 2};
    check_running(&a, 0.1f, "momentum 0.1");
    check_running(&b, 0.1f, "momentum 0.1");
    check_running(&c, 0.1f, "momentum 0.1");
    check_running(&a, TT_BATCH_NORM_CUMULATIVE_AVERAGE, "cumulative");
}

static void test_eval_forward(void)
{
    static const bn_case cases[] = {{1, 6, 5, 7}, {1, 5, 1, 1}, {3, 7, 4, 3}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bn_case *k = &cases[ci];
        tt_batch_norm_desc d = tt_batch_norm_desc_make(k->n, k->c, k->h, k->w);
        size_t n = numel(k), nc = (size_t)k->c;
        uint64_t seed = 1200 + ci;
        float *x = th_random_floats(n, -2, 2, &seed), *y = malloc(n * sizeof *y);
        float w[MAX_C], b[MAX_C], rm[MAX_C], rv[MAX_C];
        th_fill_uniform(w, nc, 0.5f, 1.5f, &seed), th_fill_uniform(b, nc, -0.5f, 0.5f, &seed);
        th_fill_uniform(rm, nc, -1, 1, &seed), th_fill_uniform(rv, nc, 0.2f, 3, &seed);
        th_pool pool = {.pad = PAD};
        tt_batch_norm_state st = {th_pool_put(&pool, w, nc, "bn.w"), th_pool_put(&pool, b, nc, "bn.b"),
                                  th_pool_put(&pool, rm, nc, "bn.rm"), th_pool_put(&pool, rv, nc, "bn.rv"), 5};
        tt_mem mx = th_pool_put(&pool, x, n, "bn.x"), my = th_pool_put(&pool, NULL, n, "bn.y");
        TH_OK(tt_batch_norm_forward(th_backend(), my, (tt_mem){0}, mx, &st, &d, 0));
        CU_ASSERT_EQUAL(st.num_batches_tracked, 5); /* eval does not count */
        float rm_after[MAX_C];
        th_get(rm_after, st.running_mean, nc);
        CU_ASSERT(memcmp(rm_after, rm, nc * sizeof *rm) == 0); /* nor update */
        th_get(y, my, n);
        double *xd = th_to_double(x, n), *want = malloc(n * sizeof *want);
        double *wd = th_to_double(w, nc), *bd = th_to_double(b, nc);
        double *rmd = th_to_double(rm, nc), *rvd = th_to_double(rv, nc);
        ref_batch_norm_forward_eval(want, xd, rmd, rvd, wd, bd, k->n, k->c, k->h, k->w, d.eps);
        double err = th_max_rel_error(y, want, n, 1.0);
        printf("\n  batch_norm eval forward N=%d C=%d H=%d W=%d: max err %.2e", k->n, k->c, k->h,
               k->w, err);
        CU_ASSERT(err < 1e-5);
        th_pool_free(&pool);
        free(x), free(y), free(xd), free(want), free(wd), free(bd), free(rmd), free(rvd);
    }
}

/* L = sum(dy * y) in double, training or eval, for finite differences. */
typedef struct bn_loss {
    const bn_case *k;
    const double *x, *w, *b, *dy, *rm, *rv;
    double *y;
    double eps;
    int training;
} bn_loss;

static double bn_loss_fn(const double *unused, void *ctx)
{
    (void)unused; /* th_numeric_grad perturbs one of ctx's arrays in place */
    bn_loss *l = ctx;
    const bn_case *k = l->k;
    if (l->training)
        ref_batch_norm_forward_train(l->y, NULL, NULL, l->x, l->w, l->b, k->n, k->c, k->h, k->w,
                                     l->eps);
    else
        ref_batch_norm_forward_eval(l->y, l->x, l->rm, l->rv, l->w, l->b, k->n, k->c, k->h, k->w,
                                    l->eps);
    double sum = 0;
    for (size_t i = 0; i < numel(k); i++) sum += l->dy[i] * l->y[i];
    return sum;
}

/* Relative to the largest |want|: entries near zero are differences. */
static double grad_error(const float *got, const double *want, size_t n)
{
    double scale = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    return th_max_rel_error(got, want, n, 0.01 * scale + 1e-12);
}

/* Runs backward twice into non-zero gradient buffers; checks the first
 * increment against finite differences and the second against the first.
 * affine = 0 runs without weight and bias and checks dinp only. */
static void check_backward(const bn_case *k, int training, int affine, const tt_norm_sync *sync)
{
    tt_batch_norm_desc d = tt_batch_norm_desc_make(k->n, k->c, k->h, k->w);
    d.sync = sync;
    size_t n = numel(k), nc = (size_t)k->c;
    uint64_t seed = 1500 + (uint64_t)training * 17 + (uint64_t)k->n * 5 + (uint64_t)k->h;
    float *x = th_random_floats(n, -2, 2, &seed), *dy = th_random_floats(n, -1, 1, &seed);
    float *g0x = th_random_floats(n, -1, 1, &seed), *gx = malloc(n * sizeof *gx);
    float *gx2 = malloc(n * sizeof *gx2), *once_x = malloc(n * sizeof *once_x);
    float w[MAX_C], b[MAX_C], rm[MAX_C], rv[MAX_C], g0w[MAX_C], g0b[MAX_C];
    float gw[MAX_C], gb[MAX_C], gw2[MAX_C], gb2[MAX_C], once_w[MAX_C], once_b[MAX_C];
    th_fill_uniform(w, nc, 0.5f, 1.5f, &seed), th_fill_uniform(b, nc, -0.5f, 0.5f, &seed);
    th_fill_uniform(rm, nc, -1, 1, &seed), th_fill_uniform(rv, nc, 0.2f, 3, &seed);
    th_fill_uniform(g0w, nc, -1, 1, &seed), th_fill_uniform(g0b, nc, -1, 1, &seed);
    th_pool pool = {.pad = PAD};
    tt_batch_norm_state st = {.running_mean = th_pool_put(&pool, rm, nc, "bn.rm"),
                              .running_var = th_pool_put(&pool, rv, nc, "bn.rv")};
    if (affine) st.weight = th_pool_put(&pool, w, nc, "bn.w"), st.bias = th_pool_put(&pool, b, nc, "bn.b");
    tt_mem mx = th_pool_put(&pool, x, n, "bn.x"), mdy = th_pool_put(&pool, dy, n, "bn.dy");
    tt_mem my = th_pool_put(&pool, NULL, n, "bn.y"), ms = th_pool_put(&pool, NULL, tt_batch_norm_saved_floats(&d), "bn.saved");
    tt_mem mgx = th_pool_put(&pool, g0x, n, "bn.dx"), mgw = {0}, mgb = {0};
    if (affine) mgw = th_pool_put(&pool, g0w, nc, "bn.dw"), mgb = th_pool_put(&pool, g0b, nc, "bn.db");
    tt_backend *be = th_backend();
    TH_OK(tt_batch_norm_forward(be, my, ms, mx, &st, &d, training));
    /* the forward's running-statistics update must not reach the eval FD */
    if (training) th_get(rm, st.running_mean, nc), th_get(rv, st.running_var, nc);
    TH_OK(tt_batch_norm_backward(be, mgx, mgw, mgb, mdy, mx, ms, &st, &d, training));
    th_get(gx, mgx, n);
    if (affine) th_get(gw, mgw, nc), th_get(gb, mgb, nc);
    TH_OK(tt_batch_norm_backward(be, mgx, mgw, mgb, mdy, mx, ms, &st, &d, training));
    th_get(gx2, mgx, n);
    if (affine) th_get(gw2, mgw, nc), th_get(gb2, mgb, nc);

    double *xd = th_to_double(x, n), *dyd = th_to_double(dy, n), *yd = malloc(n * sizeof *yd);
    double *wd = th_to_double(w, nc), *bd = th_to_double(b, nc);
    double *rmd = th_to_double(rm, nc), *rvd = th_to_double(rv, nc);
    double *num_x = malloc(n * sizeof *num_x), num_w[MAX_C], num_b[MAX_C];
    bn_loss l = {k, xd, affine ? wd : NULL, affine ? bd : NULL, dyd, rmd, rvd, yd, d.eps, training};
    th_numeric_grad(bn_loss_fn, &l, xd, n, 1e-5, num_x);
    if (affine) {
        th_numeric_grad(bn_loss_fn, &l, wd, nc, 1e-5, num_w);
        th_numeric_grad(bn_loss_fn, &l, bd, nc, 1e-5, num_b);
    }
    double twice_x = 0, twice_wb = 0;
    for (size_t i = 0; i < n; i++) {
        once_x[i] = gx[i] - g0x[i];
        twice_x = fmax(twice_x, fabs((gx2[i] - g0x[i]) - 2.0 * once_x[i]));
    }
    for (size_t i = 0; affine && i < nc; i++) {
        once_w[i] = gw[i] - g0w[i], once_b[i] = gb[i] - g0b[i];
        twice_wb = fmax(twice_wb, fabs((gw2[i] - g0w[i]) - 2.0 * once_w[i]));
        twice_wb = fmax(twice_wb, fabs((gb2[i] - g0b[i]) - 2.0 * once_b[i]));
    }
    double ex = grad_error(once_x, num_x, n);
    double ew = affine ? grad_error(once_w, num_w, nc) : 0;
    double eb = affine ? grad_error(once_b, num_b, nc) : 0;
    printf("\n  batch_norm %s backward%s%s N=%d C=%d H=%d W=%d: max err dinp %.2e",
           training ? "train" : "eval", sync ? " (sync of one)" : "",
           affine ? "" : " (no affine: dinp only)", k->n, k->c, k->h, k->w, ex);
    if (affine) printf(" dweight %.2e dbias %.2e", ew, eb);
    printf("; twice-adds deviation %.2e / %.2e", twice_x, twice_wb);
    CU_ASSERT(ex < 1e-3); /* 1e-3 relative to the largest entry */
    CU_ASSERT(ew < 1e-3);
    CU_ASSERT(eb < 1e-3);
    CU_ASSERT(twice_x < 1e-5); /* float rounding of one addition */
    CU_ASSERT(twice_wb < 1e-4);

    /* in place: dout's own room ends up holding the input gradient, the same
     * bits as one written into zeros, and the parameter gradients still
     * read dout as it was */
    tt_mem zx = th_pool_put(&pool, NULL, n, "bn.zx"), ix = th_pool_put(&pool, dy, n, "bn.ix");
    tt_mem zw = {0}, zb = {0}, iw = {0}, ib = {0};
    if (affine) {
        zw = th_pool_put(&pool, NULL, nc, "bn.zw"), zb = th_pool_put(&pool, NULL, nc, "bn.zb");
        iw = th_pool_put(&pool, NULL, nc, "bn.iw"), ib = th_pool_put(&pool, NULL, nc, "bn.ib");
    }
    TH_OK(tt_batch_norm_backward(be, zx, zw, zb, mdy, mx, ms, &st, &d, training));
    TH_OK(tt_batch_norm_backward(be, ix, iw, ib, ix, mx, ms, &st, &d, training));
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    CU_ASSERT_FATAL(want && got);
    th_get(want, zx, n), th_get(got, ix, n);
    CU_ASSERT(memcmp(want, got, n * sizeof *got) == 0);
    if (affine) {
        th_get(want, zw, nc), th_get(got, iw, nc);
        CU_ASSERT(memcmp(want, got, nc * sizeof *got) == 0);
        th_get(want, zb, nc), th_get(got, ib, nc);
        CU_ASSERT(memcmp(want, got, nc * sizeof *got) == 0);
    }
    free(want), free(got);
    th_pool_free(&pool);
    free(x), free(dy), free(g0x), free(gx), free(gx2), free(once_x);
    free(xd), free(dyd), free(yd), free(wd), free(bd), free(rmd), free(rvd), free(num_x);
}

/* A fused ReLU: the forward writes relu of the plain forward and apply_saved
 * those bits again; the backward (training and eval) gives the bits of the
 * plain backward of dy masked where that output is 0, with and without
 * affine. */
static void test_fused_relu(void)
{
    bn_case k = {2, 5, 9, 13};
    tt_batch_norm_desc d = tt_batch_norm_desc_make(k.n, k.c, k.h, k.w), dr = d;
    dr.relu = 1;
    size_t n = numel(&k), nc = (size_t)k.c, ns = tt_batch_norm_saved_floats(&d);
    uint64_t seed = 78;
    float *x = th_random_floats(n, -2, 2, &seed), *dy = th_random_floats(n, -1, 1, &seed);
    float w[MAX_C], b[MAX_C], rm[MAX_C], rv[MAX_C], wantp[2 * MAX_C], gotp[2 * MAX_C];
    th_fill_uniform(w, nc, -1.5f, 1.5f, &seed), th_fill_uniform(b, nc, -0.5f, 0.5f, &seed);
    th_fill_uniform(rm, nc, -1, 1, &seed), th_fill_uniform(rv, nc, 0.2f, 3, &seed);
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    float *masked = malloc(n * sizeof *masked);
    CU_ASSERT_FATAL(want && got && masked);
    tt_backend *be = th_backend();
    for (int mode = 0; mode < 3; mode++) { /* training, training affine, eval affine */
        int affine = mode > 0, training = mode < 2;
        th_pool pool = {.pad = PAD};
        tt_batch_norm_state st = {0};
        if (affine) st.weight = th_pool_put(&pool, w, nc, "bn.w"), st.bias = th_pool_put(&pool, b, nc, "bn.b");
        if (!training)
            st.running_mean = th_pool_put(&pool, rm, nc, "bn.rm"), st.running_var = th_pool_put(&pool, rv, nc, "bn.rv");
        tt_mem mx = th_pool_put(&pool, x, n, "bn.x"), ms = th_pool_put(&pool, NULL, ns, "bn.saved");
        tt_mem plain = th_pool_put(&pool, NULL, n, "bn.plain"), act = th_pool_put(&pool, NULL, n, "bn.act");
        TH_OK(tt_batch_norm_forward(be, plain, ms, mx, &st, &d, training));
        TH_OK(tt_batch_norm_forward(be, act, ms, mx, &st, &dr, training));
        th_get(want, plain, n), th_get(got, act, n);
        size_t zeros, same = ref_norm_relu_check(want, got, dy, masked, n, &zeros);
        CU_ASSERT(zeros > 0 && zeros < n); /* the ReLU both keeps and drops */
        CU_ASSERT_EQUAL(same, n);
        if (training) {
            tt_mem again = th_pool_put(&pool, NULL, n, "bn.again");
            TH_OK(tt_batch_norm_apply_saved(be, again, mx, ms, &st, &dr));
            th_get(want, again, n);
            CU_ASSERT(memcmp(want, got, n * sizeof *got) == 0);
        }
        tt_mem g1 = th_pool_put(&pool, masked, n, "bn.g1"), g2 = th_pool_put(&pool, dy, n, "bn.g2");
        tt_mem p1 = th_pool_put(&pool, NULL, 2 * nc, "bn.p1"), p2 = th_pool_put(&pool, NULL, 2 * nc, "bn.p2");
        TH_OK(tt_batch_norm_backward(be, g1, p1, tt_mem_f32(p1, nc), g1, mx, ms, &st, &d, training));
        TH_OK(tt_batch_norm_backward(be, g2, p2, tt_mem_f32(p2, nc), g2, mx, ms, &st, &dr, training));
        th_get(want, g1, n), th_get(got, g2, n);
        CU_ASSERT(memcmp(want, got, n * sizeof *got) == 0);
        th_get(wantp, p1, 2 * nc), th_get(gotp, p2, 2 * nc);
        CU_ASSERT(memcmp(wantp, gotp, 2 * nc * sizeof *gotp) == 0);
        th_pool_free(&pool);
    }
    free(x), free(dy), free(want), free(got), free(masked);
}

static void test_train_backward(void)
{
    const bn_case cases[] = {{2, 4, 5, 7}, {1, 6, 5, 7}, {3, 5, 1, 1}, {2, 3, 17, 19}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_backward(&cases[i], 1, 1, NULL);
    check_backward(&cases[0], 1, 0, NULL);
}

static void test_eval_backward(void)
{
    const bn_case cases[] = {{2, 4, 5, 7}, {1, 5, 1, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_backward(&cases[i], 0, 1, NULL);
    check_backward(&cases[0], 0, 0, NULL);
}

/* ---- frozen batch norm: eval mode as a training op ------------------------ */

/* PyTorch's FrozenBatchNorm2d with a trained affine (a ResNet encoder's
 * batch norm): y = [relu]((x - running_mean) / sqrt(running_var + eps) *
 * weight + bias), running statistics fixed, dinp = g weight / sqrt(var +
 * eps), dweight = sum g xhat, dbias = sum g (g = dy, masked by the ReLU).
 * That is batch norm's eval mode (training = 0). */

/* x with the pre-ReLU value 1e-3 or more from 0 (in double), so no float
 * rounding flips the mask between the device, the reference and the
 * finite differences. */
static void frozen_input(float *x, const bn_case *k, const float *w, const float *b,
                         const float *rm, const float *rv, float eps, uint64_t *seed)
{
    size_t hw = (size_t)k->h * k->w;
    for (size_t i = 0; i < numel(k); i++) {
        int c = (int)(i / hw % (size_t)k->c);
        double r = 1.0 / sqrt((double)rv[c] + eps), z;
        do {
            x[i] = (float)th_uniform(seed, -2, 2);
            z = ((double)x[i] - rm[c]) * r * w[c] + b[c];
        } while (fabs(z) < 1e-3);
    }
}

typedef struct frozen_loss {
    const bn_case *k;
    const double *x, *w, *b, *dy, *rm, *rv;
    double *y;
    double eps;
    int relu;
} frozen_loss;

/* L = sum(dy * [relu](bn_eval(x))) in double. */
static double frozen_loss_fn(const double *unused, void *ctx)
{
    (void)unused; /* th_numeric_grad perturbs one of ctx's arrays in place */
    frozen_loss *l = ctx;
    const bn_case *k = l->k;
    ref_batch_norm_forward_eval(l->y, l->x, l->rm, l->rv, l->w, l->b, k->n, k->c, k->h, k->w,
                                l->eps);
    double sum = 0;
    for (size_t i = 0; i < numel(k); i++)
        sum += l->dy[i] * (l->relu && !(l->y[i] > 0) ? 0.0 : l->y[i]);
    return sum;
}

/* Forward and backward (into non-zero gradients) in eval mode vs the
 * reference and finite differences; the running statistics keep their
 * bits and num_batches_tracked its count through both; a dinp-only
 * backward needs no saved buffer and gives the same bits. */
static void check_frozen(const bn_case *k, int relu)
{
    tt_batch_norm_desc d = tt_batch_norm_desc_make(k->n, k->c, k->h, k->w);
    d.relu = relu;
    size_t n = numel(k), nc = (size_t)k->c;
    uint64_t seed = 3100 + (uint64_t)relu * 7 + (uint64_t)k->n * 3 + (uint64_t)k->h;
    float w[MAX_C], b[MAX_C], rm[MAX_C], rv[MAX_C], g0w[MAX_C], g0b[MAX_C];
    float gw[MAX_C], gb[MAX_C], after[2 * MAX_C];
    th_fill_uniform(w, nc, -1.5f, 1.5f, &seed), th_fill_uniform(b, nc, -0.5f, 0.5f, &seed);
    th_fill_uniform(rm, nc, -1, 1, &seed), th_fill_uniform(rv, nc, 0.2f, 3, &seed);
    th_fill_uniform(g0w, nc, -1, 1, &seed), th_fill_uniform(g0b, nc, -1, 1, &seed);
    float *x = malloc(n * sizeof *x), *dy = th_random_floats(n, -1, 1, &seed);
    float *g0x = th_random_floats(n, -1, 1, &seed), *y = malloc(n * sizeof *y);
    float *gx = malloc(n * sizeof *gx), *once_x = malloc(n * sizeof *once_x);
    float *full = malloc(n * sizeof *full), *alone = malloc(n * sizeof *alone);
    CU_ASSERT_FATAL(x && y && gx && once_x && full && alone);
    frozen_input(x, k, w, b, rm, rv, d.eps, &seed);
    th_pool pool = {.pad = PAD};
    tt_batch_norm_state st = {th_pool_put(&pool, w, nc, "bn.w"), th_pool_put(&pool, b, nc, "bn.b"),
                              th_pool_put(&pool, rm, nc, "bn.rm"), th_pool_put(&pool, rv, nc, "bn.rv"), 7};
    tt_mem mx = th_pool_put(&pool, x, n, "bn.x"), mdy = th_pool_put(&pool, dy, n, "bn.dy");
    tt_mem my = th_pool_put(&pool, NULL, n, "bn.y"), ms = th_pool_put(&pool, NULL, tt_batch_norm_saved_floats(&d), "bn.saved");
    tt_mem mgx = th_pool_put(&pool, g0x, n, "bn.dx"), mgw = th_pool_put(&pool, g0w, nc, "bn.dw");
    tt_mem mgb = th_pool_put(&pool, g0b, nc, "bn.db");
    tt_backend *be = th_backend();
    TH_OK(tt_batch_norm_forward(be, my, ms, mx, &st, &d, 0));
    TH_OK(tt_batch_norm_backward(be, mgx, mgw, mgb, mdy, mx, ms, &st, &d, 0));
    th_get(y, my, n), th_get(gx, mgx, n), th_get(gw, mgw, nc), th_get(gb, mgb, nc);
    /* dinp alone: no saved buffer, the same bits as with the parameters */
    tt_mem zx = th_pool_put(&pool, NULL, n, "bn.zx"), zx2 = th_pool_put(&pool, NULL, n, "bn.zx2");
    tt_mem zp = th_pool_put(&pool, NULL, 2 * nc, "bn.zp");
    TH_OK(tt_batch_norm_backward(be, zx, zp, tt_mem_f32(zp, nc), mdy, mx, ms, &st, &d, 0));
    TH_OK(tt_batch_norm_backward(be, zx2, (tt_mem){0}, (tt_mem){0}, mdy, mx, (tt_mem){0}, &st, &d, 0));
    th_get(full, zx, n), th_get(alone, zx2, n);
    CU_ASSERT(memcmp(full, alone, n * sizeof *full) == 0);
    /* frozen: the running statistics and the counter untouched */
    CU_ASSERT_EQUAL(st.num_batches_tracked, 7);
    th_get(after, st.running_mean, nc), th_get(after + nc, st.running_var, nc);
    CU_ASSERT(memcmp(after, rm, nc * sizeof *rm) == 0);
    CU_ASSERT(memcmp(after + nc, rv, nc * sizeof *rv) == 0);

    double *xd = th_to_double(x, n), *dyd = th_to_double(dy, n), *yd = malloc(n * sizeof *yd);
    double *wd = th_to_double(w, nc), *bd = th_to_double(b, nc);
    double *rmd = th_to_double(rm, nc), *rvd = th_to_double(rv, nc);
    double *ref_x = malloc(n * sizeof *ref_x), *num_x = malloc(n * sizeof *num_x);
    double ref_w[MAX_C], ref_b[MAX_C], num_w[MAX_C], num_b[MAX_C];
    float once_w[MAX_C], once_b[MAX_C];
    CU_ASSERT_FATAL(yd && ref_x && num_x);
    ref_batch_norm_forward_eval(yd, xd, rmd, rvd, wd, bd, k->n, k->c, k->h, k->w, d.eps);
    size_t masked = 0;
    for (size_t i = 0; relu && i < n; i++)
        if (!(yd[i] > 0)) yd[i] = 0, masked++;
    double ey = th_max_rel_error(y, yd, n, 1.0);
    ref_batch_norm_backward_eval(ref_x, ref_w, ref_b, dyd, xd, rmd, rvd, wd, bd, k->n, k->c, k->h,
                                 k->w, d.eps, relu);
    frozen_loss l = {k, xd, wd, bd, dyd, rmd, rvd, yd, d.eps, relu};
    th_numeric_grad(frozen_loss_fn, &l, xd, n, 1e-5, num_x);
    th_numeric_grad(frozen_loss_fn, &l, wd, nc, 1e-5, num_w);
    th_numeric_grad(frozen_loss_fn, &l, bd, nc, 1e-5, num_b);
    for (size_t i = 0; i < n; i++) once_x[i] = gx[i] - g0x[i];
    for (size_t c = 0; c < nc; c++) once_w[c] = gw[c] - g0w[c], once_b[c] = gb[c] - g0b[c];
    double ex = grad_error(once_x, ref_x, n), ew = grad_error(once_w, ref_w, nc);
    double eb = grad_error(once_b, ref_b, nc);
    double fx = grad_error(once_x, num_x, n), fw = grad_error(once_w, num_w, nc);
    double fb = grad_error(once_b, num_b, nc);
    printf("\n  frozen batch_norm%s N=%d C=%d H=%d W=%d (%zu masked): max err y %.2e; vs "
           "reference dinp %.2e dweight %.2e dbias %.2e; vs finite differences %.2e %.2e %.2e",
           relu ? "+relu" : "", k->n, k->c, k->h, k->w, masked, ey, ex, ew, eb, fx, fw, fb);
    /* the increments carry the rounding of the addition to a gradient of
     * size 1 (2^-24 of 1 + |dinp|), against 1% of the largest entry: up
     * to 4e-6 seen */
    CU_ASSERT(ey < 1e-5);
    CU_ASSERT(ex < 1e-4);
    CU_ASSERT(ew < 1e-4);
    CU_ASSERT(eb < 1e-4);
    CU_ASSERT(fx < 1e-3);
    CU_ASSERT(fw < 1e-3);
    CU_ASSERT(fb < 1e-3);
    if (relu && n >= 16) CU_ASSERT(masked > 0 && masked < n); /* the ReLU both keeps and drops */
    th_pool_free(&pool);
    free(x), free(dy), free(g0x), free(y), free(gx), free(once_x), free(full), free(alone);
    free(xd), free(dyd), free(yd), free(wd), free(bd), free(rmd), free(rvd), free(ref_x), free(num_x);
}

static void test_frozen(void)
{
    const bn_case cases[] = {{2, 5, 9, 13}, {1, 3, 33, 65}, {1, 4, 1, 1}, {3, 16, 4, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int relu = 0; relu < 2; relu++) check_frozen(&cases[i], relu);
    /* one value per channel: frozen needs no batch variance, training does */
    tt_batch_norm_desc d = tt_batch_norm_desc_make(1, 4, 1, 1);
    TH_OK(tt_batch_norm_check(&d, 0));
    tt_status s = tt_batch_norm_check(&d, 1);
    CU_ASSERT_PTR_NOT_NULL(s);
    tt_status_free(s);
}

/* torch.nn.BatchNorm2d in eval mode with weight and bias trained (the
 * explicit FrozenBatchNorm2d formula checked equal to it in the script),
 * with and without a ReLU after it, in float64. */
static void test_frozen_torch(void)
{
    bn_case k = {2, 4, 7, 9};
    size_t n = numel(&k), nc = (size_t)k.c;
    size_t n_in = 2 * n + 4 * nc, per_relu = 2 * n + 2 * nc, n_out = 2 * per_relu + 2 * nc + 1;
    uint64_t seed = 2027;
    float *in = th_random_floats(n_in, -2, 2, &seed), *ref = malloc(n_out * sizeof *ref);
    float *got = malloc(per_relu * sizeof *got);
    CU_ASSERT_FATAL(ref && got);
    float *x = in, *dy = in + n, *w = in + 2 * n, *b = w + nc, *rm = b + nc, *rv = rm + nc;
    for (size_t c = 0; c < nc; c++) rv[c] = 0.3f + fabsf(rv[c]);
    char body[1600], why[256];
    snprintf(body, sizeof body,
             "N, C, H, W = %d, %d, %d, %d\n"
             "n = N * C * H * W\n"
             "t = torch.from_numpy(inp.astype(np.float64))\n"
             "p = t[2 * n:]\n"
             "rm, rv = p[2 * C:3 * C].clone(), p[3 * C:].clone()\n"
             "bn = torch.nn.BatchNorm2d(C).double()\n"
             "with torch.no_grad():\n"
             "    bn.weight.copy_(p[:C]); bn.bias.copy_(p[C:2 * C])\n"
             "    bn.running_mean.copy_(rm); bn.running_var.copy_(rv)\n"
             "bn.eval()\n"
             "out = []\n"
             "for relu in (0, 1):\n"
             "    bn.zero_grad(set_to_none=True)\n"
             "    x = t[:n].reshape(N, C, H, W).clone().requires_grad_()\n"
             "    dy = t[n:2 * n].reshape(N, C, H, W)\n"
             "    y = bn(x)\n"
             "    frozen = (x - rm.view(1, C, 1, 1)) / torch.sqrt(rv.view(1, C, 1, 1) + bn.eps) \\\n"
             "        * bn.weight.view(1, C, 1, 1) + bn.bias.view(1, C, 1, 1)\n"
             "    assert torch.allclose(y, frozen, rtol=1e-12, atol=1e-12)\n"
             "    if relu: y = torch.relu(y)\n"
             "    (y * dy).sum().backward()\n"
             "    out += [y.detach(), x.grad, bn.weight.grad, bn.bias.grad]\n"
             "assert int(bn.num_batches_tracked) == 0\n"
             "emit(*out, bn.running_mean, bn.running_var, bn.num_batches_tracked.double())\n",
             k.n, k.c, k.h, k.w);
    if (ref_norm_torch_run(body, in, n_in, ref, n_out, why, sizeof why)) {
        printf("\n  frozen batch_norm torch cross-check skipped: %s", why);
        free(in), free(ref), free(got);
        return;
    }
    /* torch's running statistics kept their bits too */
    CU_ASSERT(memcmp(ref + 2 * per_relu, rm, 2 * nc * sizeof *rm) == 0);
    CU_ASSERT_EQUAL(ref[n_out - 1], 0.0f);
    tt_backend *be = th_backend();
    for (int relu = 0; relu < 2; relu++) {
        tt_batch_norm_desc d = tt_batch_norm_desc_make(k.n, k.c, k.h, k.w);
        d.relu = relu;
        th_pool pool = {.pad = PAD};
        tt_batch_norm_state st = {th_pool_put(&pool, w, nc, "bn.w"), th_pool_put(&pool, b, nc, "bn.b"),
                                  th_pool_put(&pool, rm, nc, "bn.rm"), th_pool_put(&pool, rv, nc, "bn.rv"), 0};
        tt_mem mx = th_pool_put(&pool, x, n, "bn.x"), mdy = th_pool_put(&pool, dy, n, "bn.dy");
        tt_mem my = th_pool_put(&pool, NULL, n, "bn.y"), ms = th_pool_put(&pool, NULL, tt_batch_norm_saved_floats(&d), "bn.saved");
        tt_mem mgx = th_pool_put(&pool, NULL, n, "bn.dx"), mgp = th_pool_put(&pool, NULL, 2 * nc, "bn.dp");
        TH_OK(tt_batch_norm_forward(be, my, ms, mx, &st, &d, 0));
        TH_OK(tt_batch_norm_backward(be, mgx, mgp, tt_mem_f32(mgp, nc), mdy, mx, ms, &st, &d, 0));
        th_get(got, my, n), th_get(got + n, mgx, n), th_get(got + 2 * n, mgp, 2 * nc);
        double *want = th_to_double(ref + relu * per_relu, per_relu);
        size_t masked = 0;
        for (size_t i = 0; relu && i < n; i++) masked += want[i] == 0.0;
        double ey = th_max_rel_error(got, want, n, 1.0), ex = grad_error(got + n, want + n, n);
        double ew = grad_error(got + 2 * n, want + 2 * n, nc);
        double eb = grad_error(got + 2 * n + nc, want + 2 * n + nc, nc);
        printf("\n  frozen batch_norm%s vs torch (%zu masked): max err y %.2e dinp %.2e dweight "
               "%.2e dbias %.2e",
               relu ? "+relu" : "", masked, ey, ex, ew, eb);
        CU_ASSERT(ey < 1e-5);
        CU_ASSERT(ex < 1e-4);
        CU_ASSERT(ew < 1e-4);
        CU_ASSERT(eb < 1e-4);
        if (relu) CU_ASSERT(masked > 0 && masked < n);
        float after[2 * MAX_C];
        th_get(after, st.running_mean, nc), th_get(after + nc, st.running_var, nc);
        CU_ASSERT(memcmp(after, rm, 2 * nc * sizeof *rm) == 0);
        CU_ASSERT_EQUAL(st.num_batches_tracked, 0);
        th_pool_free(&pool);
        free(want);
    }
    free(in), free(ref), free(got);
}

/* ---- sync: ranks simulated in one process -------------------------------- */

/* One simulated rank's allreduce_sum: it keeps the values it brought to its
 * latest call and adds `add` (another rank's, from its own latest call), or
 * nothing (a world of one). */
typedef struct sim_rank {
    double own[2 * MAX_C + 1];
    size_t count;       /* values of the latest call */
    const double *add;  /* NULL: identity */
    int calls;
} sim_rank;

static tt_status sim_allreduce(void *ctx, double *values, size_t n)
{
    sim_rank *r = ctx;
    CU_ASSERT_FATAL(n <= 2 * MAX_C + 1);
    for (size_t i = 0; i < n; i++) r->own[i] = values[i];
    r->count = n;
    for (size_t i = 0; r->add && i < n; i++) values[i] += r->add[i];
    r->calls++;
    return NULL;
}

/* max |got - want| over max |want|: entries near zero are differences. */
static double err_of_largest(const float *got, const float *want, size_t n)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i])) return INFINITY;
        worst = fmax(worst, fabs((double)got[i] - want[i]));
        scale = fmax(scale, fabs((double)want[i]));
    }
    return worst / (scale + 1e-30);
}

/* One layer's buffers on the device for a batch of `n` samples. */
typedef struct sim_layer {
    tt_batch_norm_desc d;
    tt_batch_norm_state st;
    tt_mem x, y, saved, dy, dx, dw, db;
} sim_layer;

static sim_layer sim_layer_make(th_pool *pool, const bn_case *k, int n, const float *x,
                                const float *dy, const float *params, int relu, float momentum,
                                const tt_norm_sync *sync)
{
    size_t nc = (size_t)k->c, count = (size_t)n * k->c * k->h * k->w;
    sim_layer s = {.d = tt_batch_norm_desc_make(n, k->c, k->h, k->w)};
    s.d.relu = relu, s.d.momentum = momentum, s.d.sync = sync;
    s.st.weight = th_pool_put(pool, params, nc, "bn.w");
    s.st.bias = th_pool_put(pool, params + nc, nc, "bn.b");
    s.st.running_mean = th_pool_put(pool, params + 2 * nc, nc, "bn.rm");
    s.st.running_var = th_pool_put(pool, params + 3 * nc, nc, "bn.rv");
    s.x = th_pool_put(pool, x, count, "bn.x"), s.y = th_pool_put(pool, NULL, count, "bn.y");
    s.saved = th_pool_put(pool, NULL, tt_batch_norm_saved_floats(&s.d), "bn.saved");
    s.dy = th_pool_put(pool, dy, count, "bn.dy"), s.dx = th_pool_put(pool, NULL, count, "bn.dx");
    s.dw = th_pool_put(pool, NULL, nc, "bn.dw"), s.db = th_pool_put(pool, NULL, nc, "bn.db");
    return s;
}

static void sim_forward(sim_layer *s)
{
    TH_OK(tt_batch_norm_forward(th_backend(), s->y, s->saved, s->x, &s->st, &s->d, 1));
}

static void sim_backward(sim_layer *s)
{
    TH_OK(tt_batch_norm_backward(th_backend(), s->dx, s->dw, s->db, s->dy, s->x, s->saved, &s->st,
                                 &s->d, 1));
}

/* Random x, dy (N, C, H, W) and weight, bias, running mean and var (C each). */
static void sim_data(const bn_case *k, uint64_t seed, float **x, float **dy, float *params)
{
    size_t n = numel(k), nc = (size_t)k->c;
    *x = th_random_floats(n, -1.0f, 3.0f, &seed), *dy = th_random_floats(n, -1, 1, &seed);
    th_fill_uniform(params, nc, 0.5f, 1.5f, &seed);
    th_fill_uniform(params + nc, nc, -0.5f, 0.5f, &seed);
    th_fill_uniform(params + 2 * nc, nc, -1, 1, &seed);
    th_fill_uniform(params + 3 * nc, nc, 0.5f, 2, &seed);
}

/* A world of one: the sync's sums are this process's, so the forward
 * (output, mean and rstd, running statistics) and the backward equal the
 * unsynced ones but for the rounding of the host's double route; eval mode
 * never calls the sync. */
static void test_sync_world_of_one(void)
{
    static const bn_case cases[] = {{2, 5, 9, 13}, {3, 4, 1, 1}, {2, 3, 40, 60}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int relu = 0; relu < 2; relu++) {
            const bn_case *k = &cases[ci];
            size_t n = numel(k), nc = (size_t)k->c;
            float *x, *dy, params[4 * MAX_C];
            sim_data(k, 3100 + ci, &x, &dy, params);
            sim_rank rank = {0};
            tt_norm_sync sync = {sim_allreduce, &rank};
            th_pool pool = {.pad = PAD};
            sim_layer plain = sim_layer_make(&pool, k, k->n, x, dy, params, relu, 0.1f, NULL);
            sim_layer one = sim_layer_make(&pool, k, k->n, x, dy, params, relu, 0.1f, &sync);
            sim_forward(&plain), sim_forward(&one);
            CU_ASSERT_EQUAL(rank.calls, 1);
            CU_ASSERT_EQUAL(rank.count, 2 * nc + 1);
            CU_ASSERT_EQUAL(one.st.num_batches_tracked, 1);
            sim_backward(&plain), sim_backward(&one);
            CU_ASSERT_EQUAL(rank.calls, 2);
            float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
            float wantp[4 * MAX_C], gotp[4 * MAX_C];
            CU_ASSERT_FATAL(want && got);
            th_get(want, plain.y, n), th_get(got, one.y, n);
            double ey = err_of_largest(got, want, n);
            th_get(want, plain.dx, n), th_get(got, one.dx, n);
            double ex = err_of_largest(got, want, n);
            th_get(wantp, plain.saved, 2 * nc), th_get(gotp, one.saved, 2 * nc);
            double es = th_max_rel_error_f(gotp, wantp, 2 * nc, 1e-3);
            th_get(wantp, plain.st.running_mean, nc), th_get(wantp + nc, plain.st.running_var, nc);
            th_get(gotp, one.st.running_mean, nc), th_get(gotp + nc, one.st.running_var, nc);
            double er = th_max_rel_error_f(gotp, wantp, 2 * nc, 1e-3);
            th_get(wantp, plain.dw, nc), th_get(wantp + nc, plain.db, nc);
            th_get(gotp, one.dw, nc), th_get(gotp + nc, one.db, nc);
            double ep = err_of_largest(gotp, wantp, 2 * nc);
            /* eval: the running statistics alone, no call */
            TH_OK(tt_batch_norm_forward(th_backend(), one.y, one.saved, one.x, &one.st, &one.d, 0));
            TH_OK(tt_batch_norm_backward(th_backend(), one.dx, one.dw, one.db, one.dy, one.x,
                                         one.saved, &one.st, &one.d, 0));
            CU_ASSERT_EQUAL(rank.calls, 2);
            printf("\n  batch_norm sync of one%s N=%d C=%d H=%d W=%d vs unsynced: y %.2e, "
                   "mean/rstd %.2e, running %.2e, dinp %.2e, dweight/dbias %.2e",
                   relu ? " + relu" : "", k->n, k->c, k->h, k->w, ey, es, er, ex, ep);
            CU_ASSERT(ey < 1e-5);
            CU_ASSERT(es < 1e-5);
            CU_ASSERT(er < 1e-6);
            CU_ASSERT(ex < 1e-5);
            CU_ASSERT(ep < 1e-5); /* differ only through mean and rstd */
            th_pool_free(&pool);
            free(x), free(dy), free(want), free(got);
        }
}

/* Two ranks in one process: a batch of 4 split into A (samples 0, 1) and
 * B (2, 3).  A first brings its sums to a world of one (recorded), B adds
 * them to its own, then A adds B's: both see the global sums, as from one
 * allreduce.  Outputs and input gradients side by side, the running
 * statistics of either, and dweight_A + dweight_B must be those of the
 * unsynced batch of 4. */
static void check_two_ranks(const bn_case *k, int relu, float momentum)
{
    size_t n = numel(k), half = n / 2, nc = (size_t)k->c;
    float *x, *dy, params[4 * MAX_C];
    sim_data(k, 4200 + (uint64_t)k->h + (uint64_t)relu, &x, &dy, params);
    sim_rank rank_a = {0}, rank_b = {0};
    tt_norm_sync sync_a = {sim_allreduce, &rank_a}, sync_b = {sim_allreduce, &rank_b};
    th_pool pool = {.pad = PAD}, pool_a = {.pad = PAD}, pool_b = {.pad = PAD};
    sim_layer whole = sim_layer_make(&pool, k, k->n, x, dy, params, relu, momentum, NULL);
    sim_layer a = sim_layer_make(&pool_a, k, k->n / 2, x, dy, params, relu, momentum, &sync_a);
    sim_layer b = sim_layer_make(&pool_b, k, k->n / 2, x + half, dy + half, params, relu, momentum,
                                 &sync_b);
    sim_layer probe = a; /* A's first call, into buffers of its own */
    probe.st.running_mean = probe.st.running_var = (tt_mem){0};
    probe.y = th_pool_put(&pool_a, NULL, half, "bn.probe.y");
    probe.saved = th_pool_put(&pool_a, NULL, tt_batch_norm_saved_floats(&a.d), "bn.probe.saved");
    sim_forward(&whole);
    sim_forward(&probe);
    rank_b.add = rank_a.own, sim_forward(&b);
    rank_a.add = rank_b.own, sim_forward(&a);
    sim_backward(&whole);
    rank_a.add = NULL;
    TH_OK(tt_batch_norm_backward(th_backend(), (tt_mem){0}, (tt_mem){0}, (tt_mem){0}, a.dy, a.x,
                                 a.saved, &a.st, &a.d, 1)); /* nothing asked: still one call */
    rank_b.add = rank_a.own, sim_backward(&b);
    rank_a.add = rank_b.own, sim_backward(&a);
    CU_ASSERT_EQUAL(rank_a.calls, 4);
    CU_ASSERT_EQUAL(rank_b.calls, 2);
    CU_ASSERT_EQUAL(rank_a.count, 2 * nc + 1);

    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    float want_s[4 * MAX_C], got_s[4 * MAX_C], b_s[4 * MAX_C];
    CU_ASSERT_FATAL(want && got);
    th_get(want, whole.y, n), th_get(got, a.y, half), th_get(got + half, b.y, half);
    double ey = err_of_largest(got, want, n);
    th_get(want, whole.dx, n), th_get(got, a.dx, half), th_get(got + half, b.dx, half);
    double ex = err_of_largest(got, want, n);
    th_get(want_s, whole.saved, 2 * nc), th_get(got_s, a.saved, 2 * nc);
    th_get(b_s, b.saved, 2 * nc);
    double es = fmax(th_max_rel_error_f(got_s, want_s, 2 * nc, 1e-3),
                     th_max_rel_error_f(b_s, want_s, 2 * nc, 1e-3));
    th_get(want_s, whole.st.running_mean, nc), th_get(want_s + nc, whole.st.running_var, nc);
    th_get(got_s, a.st.running_mean, nc), th_get(got_s + nc, a.st.running_var, nc);
    th_get(b_s, b.st.running_mean, nc), th_get(b_s + nc, b.st.running_var, nc);
    double er = th_max_rel_error_f(got_s, want_s, 2 * nc, 1e-3);
    int same_running = memcmp(got_s, b_s, 2 * nc * sizeof *b_s) == 0;
    th_get(want_s, whole.dw, nc), th_get(want_s + nc, whole.db, nc);
    th_get(got_s, a.dw, nc), th_get(got_s + nc, a.db, nc);
    th_get(b_s, b.dw, nc), th_get(b_s + nc, b.db, nc);
    for (size_t c = 0; c < 2 * nc; c++) got_s[c] += b_s[c];
    double ep = err_of_largest(got_s, want_s, 2 * nc);
    printf("\n  batch_norm two ranks%s momentum %s N=%d C=%d H=%d W=%d vs one batch: y %.2e, "
           "mean/rstd %.2e, running %.2e (ranks %s), dinp %.2e, dweight/dbias summed %.2e",
           relu ? " + relu" : "", momentum < 0 ? "cumulative" : "0.1", k->n, k->c, k->h, k->w,
           ey, es, er, same_running ? "equal" : "DIFFER", ex, ep);
    CU_ASSERT(ey < 1e-5);
    CU_ASSERT(es < 1e-5);
    CU_ASSERT(er < 1e-5);
    CU_ASSERT(same_running); /* every rank the same bits */
    CU_ASSERT(ex < 1e-5);
    CU_ASSERT(ep < 1e-5);
    th_pool_free(&pool), th_pool_free(&pool_a), th_pool_free(&pool_b);
    free(x), free(dy), free(want), free(got);
}

static void test_sync_two_ranks(void)
{
    const bn_case a = {4, 5, 9, 13}, b = {4, 3, 40, 60}, c = {4, 6, 1, 1};
    check_two_ranks(&a, 0, 0.1f);
    check_two_ranks(&a, 1, 0.1f);
    check_two_ranks(&b, 1, 0.1f);
    check_two_ranks(&c, 0, TT_BATCH_NORM_CUMULATIVE_AVERAGE);
}

/* A backend that runs nothing (memory estimates) goes through the synced
 * layer without calling the sync: one rank's estimate must not wait for
 * the others. */
static void test_sync_dry_backend_makes_no_call(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_backend *dry = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = &be->device,
                                                  .stands_for = be->kernels_of},
                            &dry));
    sim_rank rank = {0};
    tt_norm_sync sync = {sim_allreduce, &rank};
    tt_batch_norm_desc d = tt_batch_norm_desc_make(2, 4, 5, 7);
    d.sync = &sync;
    size_t n = 2 * 4 * 5 * 7, bytes[] = {n, n, tt_batch_norm_saved_floats(&d), 4, 4};
    tt_buffer *b[5] = {0};
    for (int i = 0; i < 5; i++)
        TH_OK(tt_buffer_alloc(dry, bytes[i] * sizeof(float), TT_MEM_ACTIVATIONS, "dry.bn", &b[i]));
    tt_batch_norm_state st = {.running_mean = tt_mem_of(b[3]), .running_var = tt_mem_of(b[4])};
    TH_OK(tt_batch_norm_forward(dry, tt_mem_of(b[1]), tt_mem_of(b[2]), tt_mem_of(b[0]), &st, &d,
                                1));
    TH_OK(tt_batch_norm_backward(dry, tt_mem_of(b[0]), (tt_mem){0}, (tt_mem){0}, tt_mem_of(b[1]),
                                 tt_mem_of(b[0]), tt_mem_of(b[2]), &st, &d, 1));
    CU_ASSERT_EQUAL(rank.calls, 0);
    for (int i = 0; i < 5; i++) tt_buffer_free(b[i]);
    tt_backend_destroy(dry);
}

/* Finite differences through a sync of one (training; eval ignores it). */
static void test_sync_backward_fd(void)
{
    const bn_case cases[] = {{2, 4, 5, 7}, {3, 5, 1, 1}};
    sim_rank rank = {0};
    tt_norm_sync sync = {sim_allreduce, &rank};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_backward(&cases[i], 1, 1, &sync);
    check_backward(&cases[0], 1, 0, &sync);
    CU_ASSERT(rank.calls > 0);
}

static tt_status failing_allreduce(void *ctx, double *values, size_t n)
{
    (void)ctx, (void)values, (void)n;
    return tt_error_new(TT_ERR_IO, "rank 3 hung up");
}

static tt_status zeroing_allreduce(void *ctx, double *values, size_t n)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++) values[i] = 0;
    return NULL;
}

static void test_bad_arguments(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    th_pool pool = {.pad = PAD};
    tt_mem m = th_pool_put(&pool, NULL, 64, "bn.any");
    tt_batch_norm_state st = {m, m, m, m, 0};
    tt_batch_norm_desc d = tt_batch_norm_desc_make(1, 4, 1, 1); /* one value per channel */
    tt_status s = tt_batch_norm_forward(be, m, m, m, &st, &d, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(s), "one value per channel") != NULL);
    tt_status_free(s);
    CU_ASSERT_EQUAL(st.num_batches_tracked, 0);
    TH_OK(tt_batch_norm_forward(be, m, (tt_mem){0}, m, &st, &d, 0)); /* eval is fine */
    d = tt_batch_norm_desc_make(2, 4, 1, 1);
    d.momentum = 1.5f;
    s = tt_batch_norm_forward(be, m, m, m, &st, &d, 1);
    CU_ASSERT(strstr(tt_status_message(s), "momentum 1.5") != NULL);
    tt_status_free(s);
    d.momentum = 0.1f;
    tt_batch_norm_state half = {.running_mean = m};
    s = tt_batch_norm_forward(be, m, m, m, &half, &d, 1);
    CU_ASSERT(strstr(tt_status_message(s), "running_var") != NULL);
    tt_status_free(s);
    tt_batch_norm_state none = {0};
    s = tt_batch_norm_forward(be, m, m, m, &none, &d, 0);
    CU_ASSERT(strstr(tt_status_message(s), "eval mode") != NULL);
    tt_status_free(s);
    s = tt_batch_norm_backward(be, m, (tt_mem){0}, (tt_mem){0}, m, m, (tt_mem){0}, &st, &d, 1);
    CU_ASSERT(strstr(tt_status_message(s), "saved") != NULL);
    tt_status_free(s);
    /* a sync without a function; a transport's failure, named; one that
     * does not sum */
    tt_mem saved = th_pool_put(&pool, NULL, tt_batch_norm_saved_floats(&d), "bn.saved");
    tt_norm_sync no_fn = {NULL, NULL}, fails = {failing_allreduce, NULL};
    tt_norm_sync zeroes = {zeroing_allreduce, NULL};
    d.sync = &no_fn;
    s = tt_batch_norm_forward(be, m, saved, m, &st, &d, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(strstr(tt_status_message(s), "no allreduce_sum") != NULL);
    tt_status_free(s);
    d.sync = &fails;
    s = tt_batch_norm_forward(be, m, saved, m, &st, &d, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_IO);
    CU_ASSERT(strstr(tt_status_message(s), "summing the batch statistics") != NULL);
    CU_ASSERT(strstr(tt_status_message(s), "rank 3 hung up") != NULL);
    tt_status_free(s);
    s = tt_batch_norm_backward(be, m, (tt_mem){0}, (tt_mem){0}, m, m, saved, &st, &d, 1);
    CU_ASSERT(strstr(tt_status_message(s), "summing the input gradient's sums") != NULL);
    tt_status_free(s);
    d.sync = &zeroes;
    s = tt_batch_norm_forward(be, m, saved, m, &st, &d, 1);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INTERNAL);
    CU_ASSERT(strstr(tt_status_message(s), "must add in place") != NULL);
    tt_status_free(s);
    d.sync = NULL;
    th_pool_free(&pool);
}

/* torch.nn.BatchNorm2d in float64: two training steps (the second with
 * backward), then eval on the first input. */
/* 16-bit input (input_precision fp16 or bf16), training and eval: every
 * pass reads x as stored, so on the values it stores the results (output,
 * statistics, running statistics, output again, gradients) are the fp32
 * path's bit for bit, from either half of a 32-bit word.  With the
 * gradients in 16 bits too (grad_precision) dx is the fp32 one rounded,
 * added or in place, and the halves around the tensor keep their bits. */
static void test_stored_16(void)
{
    static const bn_case cases[] = {{3, 6, 5, 7}, {2, 3, 33, 65}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int mode = 0; mode < 4; mode++) { /* training or eval x fp16 or bf16 */
            const bn_case *k = &cases[ci];
            int training = mode < 2, odd = (int)ci;
            tt_precision kind = mode % 2 ? TT_PRECISION_BF16 : TT_PRECISION_FP16;
            tt_batch_norm_desc d = tt_batch_norm_desc_make(k->n, k->c, k->h, k->w);
            d.relu = 1;
            tt_batch_norm_desc d16 = d;
            d16.input_precision = kind;
            size_t n = numel(k), nc = (size_t)k->c, ns = tt_batch_norm_saved_floats(&d);
            uint64_t seed = 1700 + 4 * ci + (size_t)mode;
            float *x = th_random_floats(n, -2, 2, &seed), *dy = th_random_floats(n, -1, 1, &seed);
            float w[MAX_C], b[MAX_C], rv[MAX_C], rm[MAX_C];
            th_fill_uniform(w, nc, 0.5f, 1.5f, &seed);
            th_fill_uniform(b, nc, -0.5f, 0.5f, &seed);
            th_fill_uniform(rm, nc, -0.5f, 0.5f, &seed);
            th_fill_uniform(rv, nc, 0.5f, 2.0f, &seed);
            th_pool pool = {.pad = PAD};
            tt_mem mx16 = th_pool_put_16(&pool, x, n, kind, odd, "bn.x16"); /* rounds x */
            tt_mem mdy16 = th_pool_put_16(&pool, dy, n, kind, odd, "bn.dy16"); /* rounds dy */
            tt_mem mdy16b = th_pool_put_16(&pool, dy, n, kind, odd, "bn.dy16b");
            float *zeros = calloc(n, sizeof *zeros);
            tt_mem mdx16 = th_pool_put_16(&pool, zeros, n, kind, odd, "bn.dx16");
            tt_mem mx = th_pool_put(&pool, x, n, "bn.x"), mdy = th_pool_put(&pool, dy, n, "bn.dy");
            tt_mem out[3][8]; /* y, saved, again, dx, dw, db, running mean, running var */
            size_t sizes[8] = {n, ns, n, n, nc, nc, nc, nc};
            tt_backend *be = th_backend();
            /* 2: x and the gradients in 16 bits, dx added to zeros and in place */
            tt_batch_norm_desc dg = d16;
            dg.grad_precision = kind;
            for (int s = 0; s < 3; s++) {
                for (int t = 0; t < 6; t++) out[s][t] = th_pool_put(&pool, NULL, sizes[t], "bn.out");
                out[s][6] = th_pool_put(&pool, rm, nc, "bn.rm");
                out[s][7] = th_pool_put(&pool, rv, nc, "bn.rv");
                tt_batch_norm_state st = {th_pool_put(&pool, w, nc, "bn.w"),
                                          th_pool_put(&pool, b, nc, "bn.b"), out[s][6], out[s][7], 0};
                const tt_batch_norm_desc *dd = s == 2 ? &dg : s ? &d16 : &d;
                tt_mem in = s ? mx16 : mx;
                TH_OK(tt_batch_norm_forward(be, out[s][0], out[s][1], in, &st, dd, training));
                if (training) TH_OK(tt_batch_norm_apply_saved(be, out[s][2], in, out[s][1], &st, dd));
                TH_OK(tt_batch_norm_backward(be, s == 2 ? mdx16 : out[s][3], out[s][4], out[s][5],
                                             s == 2 ? mdy16 : mdy, in, out[s][1], &st, dd, training));
                if (s == 2)
                    TH_OK(tt_batch_norm_backward(be, mdy16b, (tt_mem){0}, (tt_mem){0}, mdy16b, in,
                                                 out[s][1], &st, dd, training));
            }
            sizes[1] = training ? 2 * nc : 0; /* of saved, the statistics (then scratch) */
            for (int t = 0; t < 8; t++) CU_ASSERT(th_same_bits(out[0][t], out[1][t], sizes[t]));
            for (int t = 0; t < 8; t++)
                if (t != 3) CU_ASSERT(th_same_bits(out[0][t], out[2][t], sizes[t]));
            CU_ASSERT_EQUAL(th_differ_from_16(mdx16, out[0][3], n, kind), 0);
            CU_ASSERT_EQUAL(th_differ_from_16(mdy16b, out[0][3], n, kind), 0);
            CU_ASSERT_EQUAL(th_outside_16(mdx16, n) + th_outside_16(mdy16b, n), 0);
            th_pool_free(&pool);
            free(x), free(dy), free(zeros);
        }
}

static void test_torch_cross_check(void)
{
    bn_case k = {3, 5, 4, 6};
    tt_batch_norm_desc d = tt_batch_norm_desc_make(k.n, k.c, k.h, k.w);
    size_t n = numel(&k), nc = (size_t)k.c;
    size_t n_in = 3 * n + 4 * nc, n_out = 3 * n + 4 * nc;
    uint64_t seed = 2024;
    float *in = th_random_floats(n_in, -2, 2, &seed), *ref = malloc(n_out * sizeof *ref);
    float *x1 = in, *x2 = in + n, *dy = in + 2 * n, *w = in + 3 * n, *b = w + nc;
    float *rm = b + nc, *rv = rm + nc;
    for (size_t c = 0; c < nc; c++) rv[c] = 0.5f + fabsf(rv[c]);
    char body[1400], why[256];
    snprintf(body, sizeof body,
             "N, C, H, W = %d, %d, %d, %d\n"
             "n = N * C * H * W\n"
             "t = torch.from_numpy(inp.astype(np.float64))\n"
             "x1 = t[:n].reshape(N, C, H, W)\n"
             "x2 = t[n:2 * n].reshape(N, C, H, W).clone().requires_grad_()\n"
             "dy = t[2 * n:3 * n].reshape(N, C, H, W)\n"
             "p = t[3 * n:]\n"
             "bn = torch.nn.BatchNorm2d(C).double()\n"
             "with torch.no_grad():\n"
             "    bn.weight.copy_(p[:C]); bn.bias.copy_(p[C:2 * C])\n"
             "    bn.running_mean.copy_(p[2 * C:3 * C]); bn.running_var.copy_(p[3 * C:])\n"
             "bn.train()\n"
             "bn(x1)\n"
             "y2 = bn(x2)\n"
             "(y2 * dy).sum().backward()\n"
             "assert int(bn.num_batches_tracked) == 2\n"
             "bn.eval()\n"
             "with torch.no_grad():\n"
             "    y3 = bn(x1)\n"
             "emit(y2.detach(), x2.grad, y3, bn.weight.grad, bn.bias.grad, bn.running_mean, "
             "bn.running_var)\n",
             k.n, k.c, k.h, k.w);
    if (ref_norm_torch_run(body, in, n_in, ref, n_out, why, sizeof why)) {
        printf("\n  batch_norm torch cross-check skipped: %s", why);
        free(in), free(ref);
        return;
    }
    th_pool pool = {.pad = PAD};
    tt_batch_norm_state st = {th_pool_put(&pool, w, nc, "bn.w"), th_pool_put(&pool, b, nc, "bn.b"),
                              th_pool_put(&pool, rm, nc, "bn.rm"), th_pool_put(&pool, rv, nc, "bn.rv"), 0};
    tt_mem mx1 = th_pool_put(&pool, x1, n, "bn.x1"), mx2 = th_pool_put(&pool, x2, n, "bn.x2");
    tt_mem mdy = th_pool_put(&pool, dy, n, "bn.dy"), my = th_pool_put(&pool, NULL, n, "bn.y");
    tt_mem ms = th_pool_put(&pool, NULL, tt_batch_norm_saved_floats(&d), "bn.saved"), mgx = th_pool_put(&pool, NULL, n, "bn.dx");
    tt_mem mgw = th_pool_put(&pool, NULL, nc, "bn.dw"), mgb = th_pool_put(&pool, NULL, nc, "bn.db");
    tt_mem my3 = th_pool_put(&pool, NULL, n, "bn.y3");
    tt_backend *be = th_backend();
    TH_OK(tt_batch_norm_forward(be, my, ms, mx1, &st, &d, 1));
    TH_OK(tt_batch_norm_forward(be, my, ms, mx2, &st, &d, 1));
    TH_OK(tt_batch_norm_backward(be, mgx, mgw, mgb, mdy, mx2, ms, &st, &d, 1));
    TH_OK(tt_batch_norm_forward(be, my3, (tt_mem){0}, mx1, &st, &d, 0));
    CU_ASSERT_EQUAL(st.num_batches_tracked, 2);
    float *got = malloc(n_out * sizeof *got);
    th_get(got, my, n), th_get(got + n, mgx, n), th_get(got + 2 * n, my3, n);
    th_get(got + 3 * n, mgw, nc), th_get(got + 3 * n + nc, mgb, nc);
    th_get(got + 3 * n + 2 * nc, st.running_mean, nc), th_get(got + 3 * n + 3 * nc, st.running_var, nc);
    double *want = th_to_double(ref, n_out);
    double ey = th_max_rel_error(got, want, n, 1.0), ex = grad_error(got + n, want + n, n);
    double ee = th_max_rel_error(got + 2 * n, want + 2 * n, n, 1.0);
    double ew = grad_error(got + 3 * n, want + 3 * n, nc);
    double eb = grad_error(got + 3 * n + nc, want + 3 * n + nc, nc);
    double er = th_max_rel_error(got + 3 * n + 2 * nc, want + 3 * n + 2 * nc, 2 * nc, 1e-2);
    printf("\n  batch_norm vs torch: max err train y %.2e dinp %.2e dweight %.2e dbias %.2e "
           "running %.2e eval y %.2e",
           ey, ex, ew, eb, er, ee);
    CU_ASSERT(ey < 1e-4);
    CU_ASSERT(ex < 1e-3);
    CU_ASSERT(ew < 1e-3);
    CU_ASSERT(eb < 1e-3);
    CU_ASSERT(er < 1e-5);
    CU_ASSERT(ee < 1e-4);
    th_pool_free(&pool);
    free(in), free(ref), free(got), free(want);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"training forward vs reference, odd shapes", test_train_forward},
        {"running statistics after two forwards", test_running_statistics},
        {"eval forward uses running statistics", test_eval_forward},
        {"training backward: finite differences, adds twice, in place", test_train_backward},
        {"fused ReLU: forward, output again, backward (train, eval)", test_fused_relu},
        {"eval backward: finite differences, adds twice, in place", test_eval_backward},
        {"frozen (eval) with trained affine, ReLU or not: reference, differences", test_frozen},
        {"frozen (eval) with trained affine, ReLU or not: torch", test_frozen_torch},
        {"sync of one rank equals no sync", test_sync_world_of_one},
        {"sync of two simulated ranks equals one batch", test_sync_two_ranks},
        {"sync: finite differences through a sync of one", test_sync_backward_fd},
        {"sync: a dry backend makes no call", test_sync_dry_backend_makes_no_call},
        {"bad arguments are refused", test_bad_arguments},
        {"16-bit input and gradients: the fp32 results on their values, bit for bit", test_stored_16},
        {"cross-check with torch", test_torch_cross_check},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("batch_norm", tests, TH_EVERY);
}

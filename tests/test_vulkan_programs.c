/* The ops whose shaders are ported from the OpenCL programs (optim, reduce,
 * activation, concat, upsample, upsample_nearest; the losses and
 * pooling are in test_vulkan_ops_loss_pool.c), run on the OpenCL backend
 * (th_backend()) and on the Vulkan backend (lavapipe, validation on, no
 * validation message allowed) from the same inputs at odd offsets in
 * buffers guarded by poison (vk_compare.h), and compared: element-wise ops
 * bit for bit, reductions within a stated bound (and, where the summation
 * tree is the same, bit for bit too); each also against its plain-C
 * reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/activation.h"
#include "ops/concat.h"
#include "ops/reduce.h"
#include "ops/upsample.h"
#include "ops/upsample_nearest.h"
#include "optim/adamw.h"
#include "optim/sgd.h"
#include "ref_act.h"
#include "ref_optim.h"
#include "vk_compare.h"

/* ---- optim: AdamW and SGD ----------------------------------------------- */

static const size_t sizes[] = {1, 63, 64, 65, 1000, 4097};
enum { SIZE_COUNT = sizeof sizes / sizeof sizes[0], STEPS = 3 };
static const double rates[STEPS] = {1e-2, 3e-3, 5e-3};

typedef struct optim_case {
    size_t n;
    int sgd; /* 0: AdamW */
    tt_adamw_config adamw;
    tt_sgd_config sgd_config;
} optim_case;

/* STEPS updates; arrays: param, grad, state (AdamW: exp_avg, exp_avg_sq). */
static void optim_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const optim_case *c = ctx;
    for (int t = 0; t < STEPS; t++) {
        if (c->sgd)
            TH_OK(tt_sgd_update(be, m[0], m[1], c->sgd_config.momentum != 0 ? m[2] : (tt_mem){0},
                                c->n, &c->sgd_config, rates[t], t + 1));
        else
            TH_OK(tt_adamw_update(be, m[0], m[1], m[2], m[3], c->n, &c->adamw, rates[t], t + 1));
    }
}

static void test_optim(void)
{
    uint64_t seed = 11;
    int cases = 0;
    double worst = 0;
    for (int kind = 0; kind < 5; kind++) /* AdamW, SGD plain, decay, momentum, nesterov */
        for (int s = 0; s < SIZE_COUNT; s++) {
            optim_case c = {.n = sizes[s], .sgd = kind > 0, .adamw = tt_adamw_config_default()};
            c.adamw.weight_decay = 0.05;
            c.sgd_config = (tt_sgd_config){.weight_decay = kind >= 2 ? 1e-2 : 0,
                                           .momentum = kind >= 3 ? 0.9 : 0,
                                           .dampening = kind == 3 ? 0.1 : 0,
                                           .nesterov = kind == 4};
            size_t n = c.n;
            float *host = malloc(4 * n * 4);
            CU_ASSERT_FATAL(host != NULL);
            th_fill_uniform(host, 2 * n, -2, 2, &seed);     /* param, grad */
            th_fill_uniform(host + 2 * n, n, -0.1f, 0.1f, &seed); /* exp_avg */
            th_fill_uniform(host + 3 * n, n, 0, 0.01f, &seed);    /* exp_avg_sq >= 0 */
            if (n > 10) host[n + 7] = 0.0f;                       /* a zero gradient */
            op_io cl = {.count = kind == 0 ? 4 : kind >= 3 ? 3 : 2}, vk;
            for (int k = 0; k < cl.count; k++) cl.n[k] = n, cl.in[k] = host + (size_t)k * n;
            run_both(&cl, &vk, optim_op, &c);
            for (int k = 0; k < cl.count; k++) {
                size_t d = differing(&cl, &vk, k);
                if (d) printf("\n    optim kind %d n=%zu array %d: %zu differ\n", kind, n, k, d);
                CU_ASSERT_EQUAL(d, 0);
            }
            /* the double-precision reference: the same STEPS updates */
            double *p = doubles(host, n), *g = doubles(host + n, n);
            double *s1 = doubles(host + 2 * n, n), *s2 = doubles(host + 3 * n, n);
            for (int t = 0; t < STEPS; t++) {
                if (c.sgd)
                    ref_sgd_step(p, g, s1, n, rates[t], c.sgd_config.momentum,
                                 c.sgd_config.dampening, c.sgd_config.weight_decay,
                                 c.sgd_config.nesterov, t + 1);
                else
                    ref_adamw_step(p, g, s1, s2, n, rates[t], c.adamw.beta1, c.adamw.beta2,
                                   c.adamw.eps, c.adamw.weight_decay, t + 1);
            }
            double e = rel_error(&vk, 0, p, 1e-3);
            if (cl.count > 2 && kind > 0) e = fmax(e, rel_error(&vk, 2, s1, 1e-3));
            if (kind == 0)
                e = fmax(e, fmax(rel_error(&vk, 2, s1, 1e-3), rel_error(&vk, 3, s2, 1e-6)));
            worst = fmax(worst, e);
            CU_ASSERT(e < 1e-5);
            free(p), free(g), free(s1), free(s2), free(host);
            io_free(&cl), io_free(&vk);
            cases++;
        }
    printf("\n    AdamW, SGD (plain, decay, momentum, nesterov): %d cases of %d steps bitwise "
           "equal to OpenCL; max relative error against double %.2g\n",
           cases, STEPS, worst);
    no_messages();
}

/* ---- reduce: sum of squares, non-finite count, the loss block -------------- */

static const size_t reduce_sizes[] = {1, 255, 256, 257, 5000, 70001, 200003};
enum { REDUCE_SIZES = sizeof reduce_sizes / sizeof reduce_sizes[0] };

/* arrays: acc (1 float), x (n), y (n/3 + 1): acc += |x|^2 + |y|^2 */
static void sum_squares_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const size_t *n = ctx;
    TH_OK(tt_sum_squares(be, m[0], m[1], n[0]));
    TH_OK(tt_sum_squares(be, m[0], m[2], n[1]));
}

static void count_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const size_t *n = ctx;
    TH_OK(tt_count_nonfinite(be, m[0], m[1], n[0]));
}

static void test_reduce(void)
{
    uint64_t seed = 5;
    int bitwise = 0;
    double worst_cl = 0, worst_ref = 0;
    for (int s = 0; s < REDUCE_SIZES; s++) {
        size_t n[2] = {reduce_sizes[s], reduce_sizes[s] / 3 + 1};
        float *x = malloc((n[0] + n[1]) * 4), acc = 0.75f;
        CU_ASSERT_FATAL(x != NULL);
        th_fill_uniform(x, n[0] + n[1], -3, 3, &seed);
        op_io cl = {.count = 3, .n = {1, n[0], n[1]}, .in = {&acc, x, x + n[0]}}, vk;
        run_both(&cl, &vk, sum_squares_op, n);
        double want = acc;
        for (size_t i = 0; i < n[0] + n[1]; i++) want += (double)x[i] * x[i];
        double got = vk.out[0][0], got_cl = cl.out[0][0];
        worst_cl = fmax(worst_cl, fabs(got - got_cl) / want);
        worst_ref = fmax(worst_ref, fabs(got - want) / want);
        bitwise += memcmp(&got, &got_cl, sizeof got) == 0;
        CU_ASSERT(fabs(got - want) <= 2e-6 * want);
        CU_ASSERT(fabs(got - got_cl) <= 2e-6 * want);
        /* inputs only read */
        CU_ASSERT(differing(&cl, &vk, 1) == 0 && differing(&cl, &vk, 2) == 0);
        CU_ASSERT(memcmp(vk.out[1], x, n[0] * 4) == 0);
        io_free(&cl), io_free(&vk);

        /* non-finite count, added to a count already there */
        for (size_t i = 0; i < n[0]; i += 1 + (i * 7919) % 97)
            x[i] = (i % 3 == 0) ? NAN : (i % 3 == 1) ? INFINITY : -INFINITY;
        if (n[0] > 2) x[n[0] - 1] = 3.4e38f, x[1] = -0.0f; /* finite extremes */
        size_t real_bad = 0;
        for (size_t i = 0; i < n[0]; i++) real_bad += !isfinite(x[i]);
        CU_ASSERT(real_bad > 0 || n[0] < 3);
        uint32_t start = 7;
        float start_f;
        memcpy(&start_f, &start, 4);
        op_io ccl = {.count = 2, .n = {1, n[0]}, .in = {&start_f, x}}, cvk;
        run_both(&ccl, &cvk, count_op, n);
        uint32_t count_vk, count_cl;
        memcpy(&count_vk, cvk.out[0], 4);
        memcpy(&count_cl, ccl.out[0], 4);
        if (count_vk != start + real_bad)
            printf("\n    count_nonfinite n=%zu: %u, want %zu\n", n[0], count_vk, start + real_bad);
        CU_ASSERT_EQUAL(count_vk, start + real_bad);
        CU_ASSERT_EQUAL(count_cl, count_vk);
        io_free(&ccl), io_free(&cvk);
        free(x);
    }
    printf("\n    sum_squares: %d of %d sizes bitwise equal to OpenCL, max relative difference "
           "%.2g (to double: %.2g); count_nonfinite exact\n",
           bitwise, REDUCE_SIZES, worst_cl, worst_ref);
    no_messages();
}

/* The loss block is written and read by transfers: clear, read, refuse invalid. */
static void test_loss_block(void)
{
    tt_backend *be = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_buffer *b = NULL;
    TH_OK(tt_buffer_alloc(be, 64, TT_MEM_OTHER, "loss", &b));
    tt_mem at = tt_mem_at(tt_mem_of(b), 20);
    uint32_t junk[16];
    memset(junk, 0xab, sizeof junk);
    TH_OK(tt_write(be, tt_mem_of(b), junk, sizeof junk));
    TH_OK(tt_loss_clear(be, at));
    tt_loss_value v;
    TH_OK(tt_loss_read(be, at, "test", &v));
    CU_ASSERT(v.sum == 0 && v.count == 0 && v.invalid == 0);
    tt_loss_value w = {.sum = 2.5f, .count = 9, .invalid = 3};
    TH_OK(tt_write(be, at, &w, sizeof w));
    tt_status s = tt_loss_read(be, at, "test", &v);
    CU_ASSERT(s && tt_status_code(s) == TT_ERR_FORMAT && strstr(tt_status_message(s), "3 label"));
    tt_status_free(s);
    CU_ASSERT(v.sum == 2.5f && v.count == 9);
    uint32_t back[16];
    TH_OK(tt_read(be, back, tt_mem_of(b), sizeof back));
    CU_ASSERT(back[4] == 0xabababab && back[9] == 0xabababab); /* only the 16 bytes */
    tt_buffer_free(b);
    no_messages();
}

/* ---- activations ---------------------------------------------------------- */

typedef struct act_case {
    int op; /* 0..6: relu f/b/inplace, leaky f/b, sigmoid f/b; 7: relu forward in place */
    size_t n;
} act_case;

static const float slope = 0.01f;

/* arrays: 0 x (or dinp / d), 1 dout (or out), 2 out */
static void act_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const act_case *c = ctx;
    size_t n = c->n;
    switch (c->op) {
    case 0: TH_OK(tt_relu_forward(be, m[1], m[0], n)); break;
    case 1: TH_OK(tt_relu_backward(be, m[0], m[1], m[2], n)); break;
    case 2: TH_OK(tt_relu_backward_inplace(be, m[0], m[1], n)); break;
    case 3: TH_OK(tt_leaky_relu_forward(be, m[1], m[0], slope, n)); break;
    case 4: TH_OK(tt_leaky_relu_backward(be, m[0], m[1], m[2], slope, n)); break;
    case 5: TH_OK(tt_sigmoid_forward(be, m[1], m[0], n)); break;
    case 6: TH_OK(tt_sigmoid_backward(be, m[0], m[1], m[2], n)); break;
    default: TH_OK(tt_relu_forward(be, m[0], m[0], n)); break;
    }
}

static void test_activation(void)
{
    static const char *const names[] = {"relu_forward", "relu_backward", "relu_backward_inplace",
                                        "leaky_relu_forward", "leaky_relu_backward",
                                        "sigmoid_forward", "sigmoid_backward",
                                        "relu_forward in place"};
    uint64_t seed = 3;
    for (int op = 0; op < 8; op++) {
        int forward = op == 0 || op == 3 || op == 5 || op == 7;
        size_t differ = 0, total = 0;
        double worst = 0;
        for (int s = 0; s < SIZE_COUNT; s++) {
            act_case c = {op, sizes[s]};
            size_t n = c.n;
            float *h = malloc(4 * n * 4);
            double *want = malloc(n * sizeof *want);
            CU_ASSERT_FATAL(h && want);
            float *x = h, *dy = h + n, *d0 = h + 2 * n, *y = h + 3 * n;
            th_fill_uniform(h, 3 * n, -6, 6, &seed);
            if (n > 4) x[1] = 0.0f, x[2] = -0.0f, x[3] = forward ? NAN : 0.5f;
            for (size_t i = 0; i < n; i++) /* the forward's output, as a backward finds it */
                y[i] = op == 6 ? 1.0f / (1.0f + expf(-x[i]))
                               : x[i] > 0 ? x[i] : op == 4 ? x[i] * slope : 0.0f;
            /* arrays: forward (inp, out); backward (dinp, dout, out); in place (d, out) */
            op_io cl = {.count = forward ? 2 : op == 2 ? 2 : 3, .n = {n, n, n}}, vk;
            cl.in[0] = forward ? x : d0;
            cl.in[1] = forward ? dy : op == 2 ? y : dy;
            cl.in[2] = y;
            if (op == 7) cl.count = 1;
            run_both(&cl, &vk, act_op, &c);
            int written = op == 0 || op == 3 || op == 5 ? 1 : 0;
            for (int k = 0; k < cl.count; k++) {
                size_t d = differing(&cl, &vk, k);
                if (k == written) differ += d, total += n;
                else CU_ASSERT(memcmp(vk.out[k], cl.in[k], n * 4) == 0); /* only read */
            }
            double *xd = doubles(x, n), *dyd = doubles(dy, n);
            if (op == 0 || op == 7) ref_relu_forward(want, xd, n);
            else if (op == 3) ref_leaky_relu_forward(want, xd, slope, n);
            else if (op == 5) ref_sigmoid_forward(want, xd, n);
            else {
                for (size_t i = 0; i < n; i++) want[i] = op == 2 ? 0 : d0[i];
                if (op == 1) ref_relu_backward(want, dyd, xd, n);
                else if (op == 2) { /* d = out > 0 ? d : 0: the backward of d into zeros */
                    double *dd = doubles(d0, n);
                    ref_relu_backward(want, dd, xd, n);
                    free(dd);
                } else if (op == 4) ref_leaky_relu_backward(want, dyd, xd, slope, n);
                else ref_sigmoid_backward(want, dyd, xd, n);
            }
            if (n > 4 && forward) { /* NaN passes through */
                CU_ASSERT(isnan(vk.out[written][3]));
                vk.out[written][3] = 0.0f, want[3] = 0;
            }
            double e = rel_error(&vk, written, want, 1e-2);
            worst = fmax(worst, e);
            /* one rounding; sigmoid: exp's few ulps, and the backward's reference
             * recomputes s(x) in double where the op reads the float output */
            CU_ASSERT(e < (op == 5 ? 1e-6 : op == 6 ? 5e-5 : 1.2e-7));
            free(xd), free(dyd), free(want), free(h);
            io_free(&cl), io_free(&vk);
        }
        printf("\n    %-22s %zu of %zu elements differ from OpenCL; max relative error to C %.2g",
               names[op], differ, total, worst);
        if (op != 5) CU_ASSERT_EQUAL(differ, 0);
    }
    printf("\n");
    no_messages();
}

/* ---- concat and upsample ------------------------------------------------ */

/* arrays: concat (a, b, out) forward, (da, db, dout) backward */
static void concat_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const tt_concat_desc *d = ctx;
    TH_OK(tt_concat_forward(be, m[2], m[0], m[1], d));
    TH_OK(tt_concat_backward(be, m[3], m[4], m[5], d));
}

/* arrays: inp, out (forward), dinp, dout (backward) */
static void upsample_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const tt_upsample_desc *d = ctx;
    TH_OK(tt_upsample_bilinear2x_forward(be, m[1], m[0], d));
    TH_OK(tt_upsample_bilinear2x_backward(be, m[2], m[3], d));
}

static void upsample_nearest_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const tt_upsample_desc *d = ctx;
    TH_OK(tt_upsample_nearest2x_forward(be, m[1], m[0], d));
    TH_OK(tt_upsample_nearest2x_backward(be, m[2], m[3], d));
}


static void test_concat(void)
{
    static const tt_concat_desc shapes[] = {{1, 1, 2, 1, 1}, {2, 3, 5, 7, 9}, {3, 4, 2, 13, 11}};
    uint64_t seed = 17;
    size_t differ = 0;
    double worst = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const tt_concat_desc *d = &shapes[s];
        size_t plane = (size_t)d->height * d->width, na = d->batch * d->channels_a * plane,
               nb = d->batch * d->channels_b * plane, nw = na + nb;
        float *h[6];
        size_t n[6] = {na, nb, nw, na, nb, nw};
        op_io cl = {.count = 6}, vk;
        for (int k = 0; k < 6; k++)
            h[k] = random_floats(n[k], &seed), cl.n[k] = n[k], cl.in[k] = h[k];
        run_both(&cl, &vk, concat_op, d);
        for (int k = 0; k < 6; k++) differ += differing(&cl, &vk, k);
        double *want_out = malloc(nw * sizeof(double)), *da = doubles(h[3], na),
               *db = doubles(h[4], nb), *a = doubles(h[0], na), *b = doubles(h[1], nb),
               *dy = doubles(h[5], nw);
        CU_ASSERT_FATAL(want_out != NULL);
        ref_concat_forward(want_out, a, b, d);
        ref_concat_backward(da, db, dy, d);
        double e = fmax(rel_error(&vk, 2, want_out, 1e-2),
                        fmax(rel_error(&vk, 3, da, 1e-2), rel_error(&vk, 4, db, 1e-2)));
        worst = fmax(worst, e);
        CU_ASSERT(rel_error(&vk, 2, want_out, 1e-30) == 0); /* a copy is exact */
        CU_ASSERT(e < 1.2e-7);
        free(want_out), free(da), free(db), free(a), free(b), free(dy);
        for (int k = 0; k < 6; k++) free(h[k]);
        io_free(&cl), io_free(&vk);
    }
    printf("\n    concat forward and backward: %zu elements differ from OpenCL; max relative "
           "error to C %.2g\n", differ, worst);
    CU_ASSERT_EQUAL(differ, 0);
    no_messages();
}

/* Bilinear (nearest 0) or nearest x2, forward and backward. */
static void check_upsample(int nearest)
{
    static const tt_upsample_desc shapes[] = {{1, 1, 1, 1}, {2, 3, 5, 7}, {1, 2, 16, 17},
                                              {2, 1, 9, 1}};
    uint64_t seed = 23;
    size_t differ = 0;
    double worst = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const tt_upsample_desc *d = &shapes[s];
        size_t ni = (size_t)d->batch * d->channels * d->height * d->width, no = 4 * ni;
        size_t n[4] = {ni, no, ni, no};
        float *h[4];
        op_io cl = {.count = 4}, vk;
        for (int k = 0; k < 4; k++)
            h[k] = random_floats(n[k], &seed), cl.n[k] = n[k], cl.in[k] = h[k];
        run_both(&cl, &vk, nearest ? upsample_nearest_op : upsample_op, d);
        for (int k = 0; k < 4; k++) differ += differing(&cl, &vk, k);
        double *y = malloc(no * sizeof(double)), *x = doubles(h[0], ni), *dx = doubles(h[2], ni),
               *dy = doubles(h[3], no);
        CU_ASSERT_FATAL(y != NULL);
        if (nearest) {
            ref_upsample_nearest2x_forward(y, x, d);
            ref_upsample_nearest2x_backward(dx, dy, d);
            CU_ASSERT(rel_error(&vk, 1, y, 1e-30) == 0); /* a copy is exact */
        } else {
            ref_upsample_bilinear2x_forward(y, x, d);
            ref_upsample_bilinear2x_backward(dx, dy, d);
        }
        double e = fmax(rel_error(&vk, 1, y, 0.1), rel_error(&vk, 2, dx, 0.1));
        worst = fmax(worst, e);
        CU_ASSERT(e < 1e-5); /* the bound of test_upsample.c (floor 0.1) */
        free(y), free(x), free(dx), free(dy);
        for (int k = 0; k < 4; k++) free(h[k]);
        io_free(&cl), io_free(&vk);
    }
    printf("\n    upsample_%s2x forward and backward: %zu elements differ from OpenCL; max "
           "relative error to C %.2g\n", nearest ? "nearest" : "bilinear", differ, worst);
    CU_ASSERT_EQUAL(differ, 0);
    no_messages();
}

static void test_upsample(void) { check_upsample(0); }
static void test_upsample_nearest(void) { check_upsample(1); }

int main(void)
{
    CU_TestInfo tests[] = {
        {"optim: AdamW and SGD, bitwise", test_optim},
        {"reduce: sum of squares and non-finite count", test_reduce},
        {"loss block: clear and read", test_loss_block},
        {"activations forward and backward", test_activation},
        {"concat forward and backward", test_concat},
        {"upsample bilinear x2 forward and backward", test_upsample},
        {"upsample nearest x2 forward and backward", test_upsample_nearest},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_programs", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    th_backend_release();
    return rc;
}

/* The ops whose shaders are ported from the OpenCL programs, run on the OpenCL
 * backend (th_backend()) and on the Vulkan backend (lavapipe, validation on,
 * no validation message allowed) from the same inputs at odd offsets in
 * buffers guarded by poison, and compared: element-wise ops bit for bit,
 * reductions within a stated bound (and, where the summation tree is the
 * same, bit for bit too); each also against its plain-C reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/status.h"
#include "harness.h"
#include "ops/activation.h"
#include "ops/bce.h"
#include "ops/avg_pool2d.h"
#include "ops/concat.h"
#include "ops/dice.h"
#include "ops/max_pool2d.h"
#include "ops/reduce.h"
#include "ops/softmax_ce.h"
#include "ops/upsample.h"
#include "optim/adamw.h"
#include "optim/sgd.h"
#include "ref_act.h"
#include "ref_loss.h"
#include "ref_optim.h"

static tt_backend *vk_be;

static tt_backend *vulkan(void)
{
    if (vk_be) return vk_be;
    th_setenv("TT_VULKAN_VALIDATION", "1");
    tt_status s = tt_backend_create(
        &(tt_backend_request){.kind = TT_BACKEND_VULKAN, .device = "llvmpipe"}, &vk_be);
    if (s) th_report_status("creating the Vulkan backend on lavapipe", s, __FILE__, __LINE__);
    return vk_be;
}

/* Every test ends here: the queue runs clean and validation said nothing. */
static void no_messages(void)
{
    TH_OK(tt_finish(vulkan()));
    tt_vk_messages *m = &((tt_vk_backend *)vulkan()->impl)->messages;
    CU_ASSERT(m->enabled);
    CU_ASSERT_EQUAL(m->count, 0);
}

/* ---- one op on one backend, its arrays behind and before poison ---------- */

enum { MAX_ARRAYS = 9, PAD = 5 };
static const uint32_t POISON = 0x7fbadbadu; /* a NaN no op writes */

typedef struct op_io {
    int count;
    size_t n[MAX_ARRAYS];        /* 32-bit words of each array */
    const float *in[MAX_ARRAYS]; /* their contents before the op */
    float *out[MAX_ARRAYS];      /* after the op (run_on fills them, malloc'd) */
} op_io;

/* Runs the op on the arrays m[0 .. count) (array k at 3 + 2k words into its buffer). */
typedef void (*op_fn)(tt_backend *be, const tt_mem *m, const void *ctx);

static void run_on(tt_backend *be, op_io *io, op_fn fn, const void *ctx)
{
    tt_buffer *buf[MAX_ARRAYS];
    tt_mem m[MAX_ARRAYS];
    for (int k = 0; k < io->count; k++) {
        size_t off = 3 + 2 * (size_t)k, words = off + io->n[k] + PAD;
        uint32_t *host = malloc(words * 4);
        CU_ASSERT_FATAL(host != NULL);
        for (size_t i = 0; i < words; i++) host[i] = POISON;
        memcpy(host + off, io->in[k], io->n[k] * 4);
        TH_OK(tt_buffer_alloc(be, words * 4, TT_MEM_OTHER, "op array", &buf[k]));
        TH_OK(tt_write(be, tt_mem_of(buf[k]), host, words * 4));
        m[k] = tt_mem_f32(tt_mem_of(buf[k]), off);
        free(host);
    }
    fn(be, m, ctx);
    for (int k = 0; k < io->count; k++) {
        size_t off = 3 + 2 * (size_t)k, words = off + io->n[k] + PAD;
        uint32_t *host = malloc(words * 4);
        io->out[k] = malloc(io->n[k] * 4 + 4);
        CU_ASSERT_FATAL(host && io->out[k]);
        TH_OK(tt_read(be, host, tt_mem_of(buf[k]), words * 4));
        int guarded = 1;
        for (size_t i = 0; i < words; i++)
            if (i < off || i >= off + io->n[k]) guarded &= host[i] == POISON;
        CU_ASSERT(guarded); /* nothing written outside the tensor */
        memcpy(io->out[k], host + off, io->n[k] * 4);
        free(host);
        tt_buffer_free(buf[k]);
    }
}

static void io_free(op_io *io)
{
    for (int k = 0; k < io->count; k++) free(io->out[k]), io->out[k] = NULL;
}

/* Runs the op on OpenCL (into cl) and on Vulkan (into vk). */
static void run_both(op_io *cl, op_io *vk, op_fn fn, const void *ctx)
{
    tt_backend *c = th_backend(), *v = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    *vk = *cl;
    run_on(c, cl, fn, ctx);
    run_on(v, vk, fn, ctx);
}

/* Words of array k that differ between the two runs (bits). */
static size_t differing(const op_io *a, const op_io *b, int k)
{
    size_t d = 0;
    for (size_t i = 0; i < a->n[k]; i++) d += memcmp(&a->out[k][i], &b->out[k][i], 4) != 0;
    return d;
}

/* max_i |got - want| / (|want| + floor) over array k's floats against doubles. */
static double rel_error(const op_io *io, int k, const double *want, double floor)
{
    return th_max_rel_error(io->out[k], want, io->n[k], floor);
}

static double *doubles(const float *x, size_t n) { return th_to_double(x, n); }

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
        size_t bad = 0;
        for (size_t i = 0; i < n[0]; i += 1 + (i * 7919) % 97) {
            x[i] = (i % 3 == 0) ? NAN : (i % 3 == 1) ? INFINITY : -INFINITY;
            bad++;
        }
        if (n[0] > 2) x[n[0] - 1] = 3.4e38f, x[1] = -0.0f; /* finite extremes */
        if (n[0] > 2 && !(x[1] == 0 && x[n[0] - 1] > 0)) bad--; /* overwritten a non-finite */
        size_t real_bad = 0;
        for (size_t i = 0; i < n[0]; i++) real_bad += !isfinite(x[i]);
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

/* Fills n floats in [-2, 2) (malloc'd). */
static float *random_floats(size_t n, uint64_t *seed)
{
    float *x = malloc(n * 4 + 4);
    CU_ASSERT_FATAL(x != NULL);
    th_fill_uniform(x, n, -2, 2, seed);
    return x;
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

static void test_upsample(void)
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
        run_both(&cl, &vk, upsample_op, d);
        for (int k = 0; k < 4; k++) differ += differing(&cl, &vk, k);
        double *y = malloc(no * sizeof(double)), *x = doubles(h[0], ni), *dx = doubles(h[2], ni),
               *dy = doubles(h[3], no);
        CU_ASSERT_FATAL(y != NULL);
        ref_upsample_bilinear2x_forward(y, x, d);
        ref_upsample_bilinear2x_backward(dx, dy, d);
        double e = fmax(rel_error(&vk, 1, y, 0.1), rel_error(&vk, 2, dx, 0.1));
        worst = fmax(worst, e);
        CU_ASSERT(e < 1e-5); /* the bound of test_upsample.c (floor 0.1) */
        free(y), free(x), free(dx), free(dy);
        for (int k = 0; k < 4; k++) free(h[k]);
        io_free(&cl), io_free(&vk);
    }
    printf("\n    upsample_bilinear2x forward and backward: %zu elements differ from OpenCL; max "
           "relative error to C %.2g\n", differ, worst);
    CU_ASSERT_EQUAL(differ, 0);
    no_messages();
}

/* ---- losses: softmax cross-entropy, BCE, Dice ------------------------------ */

typedef struct loss_case {
    int which; /* 0 softmax CE, 1 BCE, 2 Dice */
    tt_loss_desc d;
    float scale, smooth;
} loss_case;

/* arrays: 0 the loss block (4 words), 1 logits, 2 labels (bytes from byte 1
 * of the array: an odd offset), 3 dlogits; forward, then backward */
static void loss_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const loss_case *c = ctx;
    tt_mem labels = tt_mem_at(m[2], 1);
    if (c->which == 0) {
        TH_OK(tt_softmax_ce_forward(be, m[0], m[1], labels, &c->d));
        TH_OK(tt_softmax_ce_backward(be, m[3], m[1], labels, &c->d, c->scale));
    } else if (c->which == 1) {
        TH_OK(tt_bce_forward(be, m[0], m[1], labels, &c->d));
        TH_OK(tt_bce_backward(be, m[3], m[1], labels, &c->d, c->scale));
    } else {
        TH_OK(tt_dice_forward(be, m[0], m[1], labels, &c->d, c->smooth));
        TH_OK(tt_dice_backward(be, m[3], m[1], labels, &c->d, c->smooth, c->scale));
    }
}

static void test_losses(void)
{
    static const char *const names[] = {"softmax_ce", "bce", "dice"};
    static const int shapes[][4] = {{2, 3, 5, 7}, {1, 4, 17, 19}, {3, 2, 1, 1}, {2, 1, 40, 41}};
    uint64_t seed = 29;
    for (int which = 0; which < 3; which++) {
        double sum_cl = 0, sum_ref = 0, grad_cl = 0, grad_ref = 0;
        size_t grad_differ = 0, grads = 0, sums_equal = 0, cases = 0;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            loss_case c = {which, {shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], 255},
                           0.37f, 1.0f};
            if (s == 2) c.d.ignore = TT_LOSS_NO_IGNORE;
            size_t hw = (size_t)c.d.h * c.d.w, total = (size_t)c.d.n * c.d.c * hw;
            size_t nlab = which == 0 ? (size_t)c.d.n * hw : total, words = (nlab + 1 + 3) / 4;
            float *logits = random_floats(total, &seed), *dlogits = random_floats(total, &seed);
            uint8_t *bytes = calloc(words * 4, 1);
            CU_ASSERT_FATAL(bytes != NULL);
            uint8_t *lab = bytes + 1;
            for (size_t i = 0; i < nlab; i++) {
                int r = (int)th_uniform(&seed, 0, 100);
                lab[i] = (uint8_t)(which == 0 ? r % c.d.c : r % 2);
                if (r < 8) lab[i] = 255;                            /* ignored (or invalid) */
                if (r == 8) lab[i] = (uint8_t)(which == 0 ? c.d.c + 2 : 7); /* invalid */
            }
            float block[4] = {0.5f, 0, 0, 0};
            uint32_t three = 3;
            memcpy(&block[1], &three, 4);
            op_io cl = {.count = 4, .n = {4, total, words, total},
                        .in = {block, logits, (const float *)bytes, dlogits}}, vk;
            run_both(&cl, &vk, loss_op, &c);
            /* the reference */
            double *x = doubles(logits, total), *grad = calloc(total, sizeof(double));
            CU_ASSERT_FATAL(grad != NULL);
            long count = 0;
            size_t invalid = 0;
            for (size_t i = 0; i < nlab; i++)
                invalid += lab[i] != c.d.ignore && lab[i] >= (which == 0 ? c.d.c : 2);
            double want;
            if (which == 0) want = ref_softmax_ce(x, lab, c.d.n, c.d.c, (int)hw, c.d.ignore,
                                                  &count, grad);
            else if (which == 1) want = ref_bce(x, lab, total, c.d.ignore, &count, grad);
            else want = ref_dice(x, lab, c.d.n, c.d.c, (int)hw, c.d.ignore, c.smooth, grad),
                 count = c.d.n;
            want += 0.5;
            uint32_t w_vk[4], w_cl[4];
            memcpy(w_vk, vk.out[0], 16), memcpy(w_cl, cl.out[0], 16);
            CU_ASSERT(w_vk[1] == 3 + (uint32_t)count && w_vk[1] == w_cl[1]);
            CU_ASSERT(w_vk[2] == invalid && w_vk[2] == w_cl[2] && w_vk[3] == 0);
            double got = vk.out[0][0], got_cl = cl.out[0][0];
            sums_equal += got == got_cl;
            sum_cl = fmax(sum_cl, fabs(got - got_cl) / fabs(want));
            sum_ref = fmax(sum_ref, fabs(got - want) / fabs(want));
            for (size_t i = 0; i < total; i++) grad[i] = dlogits[i] + (double)c.scale * grad[i];
            grad_cl = fmax(grad_cl, th_max_rel_error_f(vk.out[3], cl.out[3], total, 0.1));
            grad_ref = fmax(grad_ref, rel_error(&vk, 3, grad, 0.1));
            grad_differ += differing(&cl, &vk, 3), grads += total;
            CU_ASSERT(differing(&cl, &vk, 1) == 0 && differing(&cl, &vk, 2) == 0); /* only read */
            free(x), free(grad), free(logits), free(dlogits), free(bytes);
            io_free(&cl), io_free(&vk);
            cases++;
        }
        printf("\n    %-10s loss: %zu of %zu sums bitwise equal to OpenCL, max relative "
               "difference %.2g (to double %.2g); dlogits: %zu of %zu differ from OpenCL, max "
               "%.2g (to double %.2g)", names[which], sums_equal, cases, sum_cl, sum_ref,
               grad_differ, grads, grad_cl, grad_ref);
        CU_ASSERT(sum_cl < 1e-5 && sum_ref < 1e-5);
        CU_ASSERT(grad_cl < 1e-6 && grad_ref < 1e-5);
    }
    printf("\n");
    no_messages();
}

/* ---- pooling --------------------------------------------------------------- */

/* arrays: 0 inp, 1 out, 2 argmax, 3 dout, 4 dinp (through argmax), 5 dinp
 * (from the input), 6 out without argmax; 7 avg out, 8 avg dinp */
static void pool_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const tt_pool2d_desc *d = ctx;
    TH_OK(tt_max_pool2d_forward(be, m[1], m[2], m[0], d));
    TH_OK(tt_max_pool2d_forward(be, m[6], (tt_mem){0}, m[0], d));
    TH_OK(tt_max_pool2d_backward(be, m[4], m[3], m[2], d));
    TH_OK(tt_max_pool2d_backward_from_input(be, m[5], m[3], m[0], d));
    TH_OK(tt_avg_pool2d_forward(be, m[7], m[0], d));
    TH_OK(tt_avg_pool2d_backward(be, m[8], m[3], d));
}

static void test_pool(void)
{
    static const tt_pool2d_desc shapes[] = {
        {2, 3, 8, 19, 2, 2, 2, 2}, {1, 2, 16, 40, 2, 2, 2, 2}, {2, 2, 9, 11, 3, 3, 2, 2},
        {1, 3, 9, 12, 3, 3, 3, 3}, {1, 1, 5, 7, 2, 3, 1, 2}};
    uint64_t seed = 31;
    size_t differ = 0, cases = 0;
    double worst = 0;
    for (int variant = 0; variant < 2; variant++) { /* CPUs: the 2x2 w8 kernels, then not */
        th_setenv("TT_CONV_DIRECT_VARIANT", variant ? "scalar" : NULL);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const tt_pool2d_desc *d = &shapes[s];
            size_t planes = (size_t)d->batch * d->channels;
            size_t ni = planes * d->height * d->width;
            size_t no = planes * tt_pool2d_out_h(d) * tt_pool2d_out_w(d);
            size_t n[9] = {ni, no, no, no, ni, ni, no, no, ni};
            float *h[9];
            op_io cl = {.count = 9}, vk;
            for (int k = 0; k < 9; k++) {
                h[k] = random_floats(n[k], &seed);
                cl.n[k] = n[k], cl.in[k] = h[k];
            }
            for (size_t i = 0; i < ni; i++) h[0][i] = roundf(h[0][i] * 4) / 4; /* ties */
            run_both(&cl, &vk, pool_op, d);
            for (int k = 0; k < 9; k++) differ += differing(&cl, &vk, k);
            /* the references */
            double *x = doubles(h[0], ni), *dy = doubles(h[3], no), *y = malloc(no * 8),
                   *dx = doubles(h[4], ni), *dx2 = doubles(h[5], ni), *ya = malloc(no * 8),
                   *dxa = doubles(h[8], ni);
            int *am = malloc(no * sizeof(int));
            CU_ASSERT_FATAL(y && ya && am);
            ref_max_pool2d_forward(y, am, x, d);
            ref_max_pool2d_backward(dx, dy, am, d);
            ref_max_pool2d_backward(dx2, dy, am, d);
            ref_avg_pool2d_forward(ya, x, d);
            ref_avg_pool2d_backward(dxa, dy, d);
            CU_ASSERT(rel_error(&vk, 1, y, 1e-30) == 0 && rel_error(&vk, 6, y, 1e-30) == 0);
            CU_ASSERT(memcmp(vk.out[2], am, no * sizeof(int)) == 0);
            double e = fmax(rel_error(&vk, 4, dx, 0.1), rel_error(&vk, 5, dx2, 0.1));
            e = fmax(e, fmax(rel_error(&vk, 7, ya, 0.1), rel_error(&vk, 8, dxa, 0.1)));
            worst = fmax(worst, e);
            CU_ASSERT(e < 1e-6);
            free(x), free(dy), free(y), free(dx), free(dx2), free(ya), free(dxa), free(am);
            for (int k = 0; k < 9; k++) free(h[k]);
            io_free(&cl), io_free(&vk);
            cases++;
        }
    }
    th_setenv("TT_CONV_DIRECT_VARIANT", NULL);
    printf("\n    max (2x2 w8, tiles, general; argmax and from input) and avg pooling: %zu "
           "cases, %zu elements differ from OpenCL; max relative error to C %.2g\n",
           cases, differ, worst);
    CU_ASSERT_EQUAL(differ, 0);
    no_messages();
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"optim: AdamW and SGD, bitwise", test_optim},
        {"reduce: sum of squares and non-finite count", test_reduce},
        {"loss block: clear and read", test_loss_block},
        {"activations forward and backward", test_activation},
        {"concat forward and backward", test_concat},
        {"upsample bilinear x2 forward and backward", test_upsample},
        {"losses: softmax CE, BCE, Dice", test_losses},
        {"max and average pooling", test_pool},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_ops", tests);
    tt_backend_destroy(vk_be);
    th_backend_release();
    return rc;
}

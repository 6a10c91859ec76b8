/* The convolution kernels ported from convt_tiles.cl (conv_transpose2d's
 * DIRECT on a kernel that tiles its output: the UNet's 2x2 stride-2
 * up-convolution) and conv_winograd.cl (conv2d's WINOGRAD, F(2x2, 3x3)),
 * on the Vulkan backend (lavapipe, validation on, no validation message
 * allowed) and on the OpenCL backend from the same inputs at odd offsets
 * between poison words (vk_compare.h).  Each result is checked on both
 * backends against the double-precision reference: the forward against
 * tests/ref_conv.c, each gradient against the finite differences of that
 * reference (exact up to rounding: the loss sum(dout * out) is linear in
 * each argument); and Vulkan against OpenCL.  The bounds are in units of
 * 2^-24 times the sum of the |terms| of each result (the same reference on
 * |inputs|) times the terms T a result sums: a float sum of T terms is
 * within T 2^-24 sum|terms| of the exact one whatever its order, and GLSL's
 * fma() may round twice on Vulkan (docs/backend.md), hence 2 units. */
#include <math.h>
#include <stdlib.h>

#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"
#include "ref_conv.h"
#include "vk_compare.h"

/* ---- references: forward, gradients by finite differences, magnitudes ---- */

typedef void (*forward_fn)(double *out, const double *inp, const double *weight,
                           const double *bias, const void *desc);

static void convt_ref(double *out, const double *inp, const double *weight, const double *bias,
                      const void *desc)
{
    ref_conv_transpose2d_forward(out, inp, weight, bias, desc);
}

static void conv_ref(double *out, const double *inp, const double *weight, const double *bias,
                     const void *desc)
{
    ref_conv2d_forward(out, inp, weight, bias, desc);
}

/* sum(dout * forward(inp, weight)) on the current arrays (no bias: its
 * gradient is the plain sum of dout) */
typedef struct loss_ctx {
    forward_fn forward;
    const void *desc;
    double *inp, *weight, *out;
    const double *dout;
    size_t n_out;
} loss_ctx;

static double loss(const double *x, void *p)
{
    (void)x; /* th_numeric_grad perturbs inp or weight in place */
    loss_ctx *c = p;
    c->forward(c->out, c->inp, c->weight, NULL, c->desc);
    double sum = 0;
    for (size_t i = 0; i < c->n_out; i++) sum += c->dout[i] * c->out[i];
    return sum;
}

/* The sizes and host inputs of one case (inp, weight, bias, dout). */
typedef struct conv_io {
    forward_fn forward;
    const void *desc;
    size_t n_inp, n_weight, n_bias, n_out, plane_out; /* floats; plane_out = OH OW */
    int with_bias;
    float *inp, *weight, *bias, *dout;
} conv_io;

/* What a result should be and the sum of the |terms| it sums. */
typedef struct expected {
    double *want, *mag;
} expected;

static double *abs_doubles(const float *x, size_t n)
{
    double *d = doubles(x, n);
    for (size_t i = 0; i < n; i++) d[i] = fabs(d[i]);
    return d;
}

/* The forward (and its magnitudes) of io's inputs. */
static expected forward_expected(const conv_io *io)
{
    expected e = {malloc(io->n_out * sizeof(double)), malloc(io->n_out * sizeof(double))};
    CU_ASSERT_FATAL(e.want && e.mag);
    double *x = doubles(io->inp, io->n_inp), *w = doubles(io->weight, io->n_weight);
    double *b = doubles(io->bias, io->n_bias);
    io->forward(e.want, x, w, io->with_bias ? b : NULL, io->desc);
    for (size_t i = 0; i < io->n_inp; i++) x[i] = fabs(x[i]);
    for (size_t i = 0; i < io->n_weight; i++) w[i] = fabs(w[i]);
    for (size_t i = 0; i < io->n_bias; i++) b[i] = fabs(b[i]);
    io->forward(e.mag, x, w, io->with_bias ? b : NULL, io->desc);
    free(x), free(w), free(b);
    return e;
}

/* base + the gradient of sum(dout * out) with respect to inp (which 0) or
 * weight (which 1), by central differences; mag likewise from |inputs|,
 * |dout| and |base|. */
static expected grad_expected(const conv_io *io, int which, const float *base)
{
    size_t n = which ? io->n_weight : io->n_inp;
    expected e = {malloc(n * sizeof(double)), malloc(n * sizeof(double))};
    double *out = malloc(io->n_out * sizeof(double));
    CU_ASSERT_FATAL(e.want && e.mag && out);
    for (int absolute = 0; absolute < 2; absolute++) {
        double *x = absolute ? abs_doubles(io->inp, io->n_inp) : doubles(io->inp, io->n_inp);
        double *w = absolute ? abs_doubles(io->weight, io->n_weight)
                             : doubles(io->weight, io->n_weight);
        double *d = absolute ? abs_doubles(io->dout, io->n_out) : doubles(io->dout, io->n_out);
        loss_ctx c = {io->forward, io->desc, x, w, out, d, io->n_out};
        double *g = absolute ? e.mag : e.want;
        th_numeric_grad(loss, &c, which ? w : x, n, 1.0, g);
        for (size_t i = 0; i < n; i++) g[i] += absolute ? fabs((double)base[i]) : base[i];
        free(x), free(w), free(d);
    }
    free(out);
    return e;
}

/* base + the sum of dout over each channel's planes. */
static expected dbias_expected(const conv_io *io, const float *base)
{
    size_t channels = io->n_bias, planes = io->n_out / io->plane_out;
    expected e = {calloc(channels, sizeof(double)), calloc(channels, sizeof(double))};
    CU_ASSERT_FATAL(e.want && e.mag);
    for (size_t p = 0; p < planes; p++)
        for (size_t i = 0; i < io->plane_out; i++) {
            double v = io->dout[p * io->plane_out + i];
            e.want[p % channels] += v;
            e.mag[p % channels] += fabs(v);
        }
    for (size_t c = 0; c < channels; c++) e.want[c] += base[c], e.mag[c] += fabs((double)base[c]);
    return e;
}

static void expected_free(expected *e) { free(e->want), free(e->mag); }

/* The largest |got - want| / (terms 2^-24 mag) over n results. */
static double worst_of(const float *got, const double *want, const double *mag, size_t n,
                       size_t terms)
{
    double worst = 0, unit = (double)terms * ldexp(1.0, -24);
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]) / (unit * mag[i] + 1e-30);
        if (isnan(e) || isnan((double)got[i])) return INFINITY;
        if (e > worst) worst = e;
    }
    return worst;
}

/* What one test measured: the largest error of each result kind (in
 * units), and how many results differ from OpenCL's bits. */
typedef struct tally {
    double worst[4];
    size_t results, differ;
} tally;

/* Array k of both runs against e (each within `bound` units) and Vulkan
 * against OpenCL (within 2 bound units), as result kind `kind` of t;
 * prints a failure. */
static void check_array(tally *t, int kind, const char *name, const char *array,
                        const op_io *cl, const op_io *vk, int k, const expected *e, size_t terms,
                        double bound)
{
    size_t n = cl->n[k];
    double *cl_d = doubles(cl->out[k], n);
    double w_cl = worst_of(cl->out[k], e->want, e->mag, n, terms);
    double w_vk = worst_of(vk->out[k], e->want, e->mag, n, terms);
    double w_both = worst_of(vk->out[k], cl_d, e->mag, n, terms) / 2;
    free(cl_d);
    int ok = w_cl <= bound && w_vk <= bound && w_both <= bound;
    if (!ok)
        printf("\n    %s %s: OpenCL %.3g, Vulkan %.3g, between %.3g units (bound %.3g)\n", name,
               array, w_cl, w_vk, w_both, bound);
    CU_ASSERT(ok);
    t->worst[kind] = fmax(t->worst[kind], fmax(w_cl, fmax(w_vk, w_both)));
    t->results += n;
    t->differ += differing(cl, vk, k);
}

/* The Vulkan backend, which must have every kernel of `program`. */
static tt_backend *vulkan_having(const char *program)
{
    tt_backend *vk = vulkan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(vk);
    CU_ASSERT(tt_backend_has_program(vk, program));
    return vk;
}

/* Random inputs for io's sizes from `seed`. */
static void io_fill(conv_io *io, uint64_t *seed)
{
    io->inp = random_floats(io->n_inp, seed);
    io->weight = random_floats(io->n_weight, seed);
    io->bias = random_floats(io->n_bias, seed);
    io->dout = random_floats(io->n_out, seed);
}

static void io_release(conv_io *io) { free(io->inp), free(io->weight), free(io->bias), free(io->dout); }

/* ---- conv_transpose2d, DIRECT on tiling kernels (convt_tiles) ------------ */

/* the bound of a plain sum's error, in the units of the top comment */
enum { PLAIN_UNITS = 2 };

typedef struct convt_case {
    const char *name;
    tt_conv_transpose2d_desc desc;
    int with_bias;
} convt_case;

/* N, Cin, H, W, Cout, kH, kW (= the stride): no padding, DIRECT */
#define TILES(n, ci, h, w, co, kh, kw) \
    {n, ci, h, w, co, kh, kw, kh, kw, 0, 0, 0, 0, 1, 1, 1, TT_CONV_ALGO_DIRECT, {0}, 0}

/* Widths past 8 and not a multiple of it (the w8 kernels' edge), channel
 * counts that leave partial blocks of every kernel's channel blocking, and
 * an input plane larger than the scalar backward weight's work-group (256
 * on lavapipe and PoCL), whose invocations then take two positions. */
static const convt_case convt_cases[] = {
    {"k2 s2 (UNet) 3x11 5->3", TILES(2, 5, 3, 11, 3, 2, 2), 1},
    {"k2 s2 2x7 9->6", TILES(1, 9, 2, 7, 6, 2, 2), 0},
    {"k1x2 s1x2 2x9 3->4", TILES(2, 3, 2, 9, 4, 1, 2), 1},
    {"k3 s3 3x4 4->5", TILES(1, 4, 3, 4, 5, 3, 3), 0},
    {"k2 s2 12x24 2->2", TILES(1, 2, 12, 24, 2, 2, 2), 1},
};

/* arrays: inp weight bias dout | out dinp dweight dbias */
static void convt_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const tt_conv_transpose2d_desc *d = ctx;
    tt_mem bias = m[2], dbias = m[7];
    TH_OK(tt_conv_transpose2d_forward(be, m[4], m[0], m[1], bias, d, (tt_mem){0}));
    TH_OK(tt_conv_transpose2d_backward(be, m[5], m[6], dbias, m[3], m[0], m[1], d, (tt_mem){0}));
}

static void convt_op_no_bias(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const tt_conv_transpose2d_desc *d = ctx;
    TH_OK(tt_conv_transpose2d_forward(be, m[4], m[0], m[1], (tt_mem){0}, d, (tt_mem){0}));
    TH_OK(tt_conv_transpose2d_backward(be, m[5], m[6], (tt_mem){0}, m[3], m[0], m[1], d,
                                       (tt_mem){0}));
}

static void test_convt_tiles(void)
{
    vulkan_having("convt_tiles");
    uint64_t seed = 41;
    tally t = {{0}, 0, 0};
    static const char *const names[] = {"out", "dinp", "dweight", "dbias"};
    for (size_t i = 0; i < sizeof convt_cases / sizeof convt_cases[0]; i++) {
        const convt_case *c = &convt_cases[i];
        const tt_conv_transpose2d_desc *d = &c->desc;
        TH_OK(tt_conv_transpose2d_check(d));
        size_t oh = (size_t)tt_conv_transpose2d_out_h(d), ow = (size_t)tt_conv_transpose2d_out_w(d);
        CU_ASSERT_EQUAL(oh, (size_t)d->in_h * d->kernel_h); /* a tiling: DIRECT is convt_tiles */
        conv_io io = {.forward = convt_ref, .desc = d,
                      .n_inp = (size_t)d->batch * d->in_channels * d->in_h * d->in_w,
                      .n_weight = (size_t)d->in_channels * d->out_channels * d->kernel_h * d->kernel_w,
                      .n_bias = (size_t)d->out_channels,
                      .n_out = (size_t)d->batch * d->out_channels * oh * ow, .plane_out = oh * ow,
                      .with_bias = c->with_bias};
        io_fill(&io, &seed);
        float *base_inp = random_floats(io.n_inp, &seed), *base_w = random_floats(io.n_weight, &seed);
        float *base_b = random_floats(io.n_bias, &seed);
        expected e[4] = {forward_expected(&io), grad_expected(&io, 0, base_inp),
                         grad_expected(&io, 1, base_w), dbias_expected(&io, base_b)};
        size_t terms[4] = {(size_t)d->in_channels + 1,
                           (size_t)d->out_channels * d->kernel_h * d->kernel_w + 1,
                           (size_t)d->batch * d->in_h * d->in_w + 1, io.n_out / d->out_channels + 1};
        /* OpenCL's direct_w8 8-wide tiles where the kernel is 2 wide (a
         * program Vulkan lacks), then direct's scalar ones, against Vulkan's
         * scalar tiles: the same sums */
        for (int variant = 0; variant < 2; variant++) {
            tt_conv_transpose2d_desc as = c->desc, as_vk = c->desc;
            as.algo = !variant && d->kernel_w == 2 ? TT_CONV_ALGO_DIRECT_W8 : TT_CONV_ALGO_DIRECT;
            for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) /* the tiles run every direction */
                CU_ASSERT_EQUAL(tt_conv_transpose2d_algo_for(&as, (tt_conv_dir)dir), as.algo);
            CU_ASSERT_EQUAL(tt_conv_transpose2d_runs_on(vulkan(), &as),
                            as.algo == TT_CONV_ALGO_DIRECT);
            op_io cl = {.count = 8,
                        .n = {io.n_inp, io.n_weight, io.n_bias, io.n_out, io.n_out, io.n_inp,
                              io.n_weight, io.n_bias},
                        .in = {io.inp, io.weight, io.bias, io.dout, io.dout, base_inp, base_w,
                               base_b}},
                  vkio;
            vkio = cl;
            run_on(th_backend(), &cl, c->with_bias ? convt_op : convt_op_no_bias, &as);
            run_on(vulkan(), &vkio, c->with_bias ? convt_op : convt_op_no_bias, &as_vk);
            char name[96];
            snprintf(name, sizeof name, "convT %s (%s)", c->name, tt_conv_algo_name(as.algo));
            for (int k = 0; k < (c->with_bias ? 4 : 3); k++)
                check_array(&t, k, name, names[k], &cl, &vkio, 4 + k, &e[k], terms[k],
                            PLAIN_UNITS);
            io_free(&cl), io_free(&vkio);
        }
        for (int k = 0; k < 4; k++) expected_free(&e[k]);
        free(base_inp), free(base_w), free(base_b);
        io_release(&io);
    }
    printf("\n    conv_transpose2d tiles, OpenCL's direct and direct_w8 against Vulkan's "
           "direct, %zu shapes x 2 rows: worst out %.3f, dinp %.3f, dweight %.3f, dbias %.3f of T 2^-24 sum|terms| (bound %d); %zu of %zu results "
           "differ from OpenCL's bits\n",
           sizeof convt_cases / sizeof convt_cases[0], t.worst[0], t.worst[1], t.worst[2],
           t.worst[3], PLAIN_UNITS, t.differ, t.results);
    no_messages();
}

/* ---- conv2d, WINOGRAD (conv_winograd) --------------------------------------- */

typedef struct wino_case {
    const char *name;
    tt_conv2d_desc desc;
    int with_bias;
} wino_case;

/* N, Cin, H, W, Cout, padding: 3x3, stride 1, WINOGRAD */
#define WINO(n, ci, h, w, co, p) \
    {n, ci, h, w, co, 3, 3, 1, 1, p, p, 1, 1, 1, TT_CONV_ALGO_WINOGRAD, 0, {0}, 0}

/* odd sizes: tiles cut by the image's edge */
static const wino_case wino_cases[] = {
    {"p1 7x9 3->5", WINO(2, 3, 7, 9, 5, 1), 1},
    {"p1 5x5 4->3", WINO(1, 4, 5, 5, 3, 1), 0},
    {"p0 6x5 2->3", WINO(1, 2, 6, 5, 3, 0), 1},
};

/* arrays: inp weight bias dout | out out_add dinp (out_add, dinp start as given) */
static void wino_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const wino_case *c = ctx;
    tt_mem bias = c->with_bias ? m[2] : (tt_mem){0};
    TH_OK(tt_conv2d_forward(be, m[4], m[0], m[1], bias, &c->desc, (tt_mem){0}));
    TH_OK(tt_conv2d_forward_add(be, m[5], m[0], m[1], &c->desc, (tt_mem){0}));
    TH_OK(tt_conv2d_backward(be, m[6], (tt_mem){0}, (tt_mem){0}, m[3], m[0], m[1], &c->desc,
                             (tt_mem){0}));
}

/* Winograd's transforms sum up to 4 x 4 values with factors of 1 and 1/2
 * before and after the products, so its error is not a plain sum's: twice
 * that bound (about twenty times what these shapes measure). */
enum { WINOGRAD_UNITS = 2 * PLAIN_UNITS };

static void test_winograd(void)
{
    vulkan_having("conv_winograd");
    uint64_t seed = 43;
    tally t = {{0}, 0, 0};
    static const char *const names[] = {"out", "out (adding)", "dinp"};
    for (size_t i = 0; i < sizeof wino_cases / sizeof wino_cases[0]; i++) {
        const wino_case *c = &wino_cases[i];
        const tt_conv2d_desc *d = &c->desc;
        TH_OK(tt_conv2d_check(d));
        CU_ASSERT_EQUAL(tt_conv2d_algo_for(d, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_WINOGRAD);
        CU_ASSERT_EQUAL(tt_conv2d_algo_for(d, TT_CONV_DIR_BACKWARD_DATA), TT_CONV_ALGO_WINOGRAD);
        size_t oh = (size_t)tt_conv2d_out_h(d), ow = (size_t)tt_conv2d_out_w(d);
        conv_io io = {.forward = conv_ref, .desc = d,
                      .n_inp = (size_t)d->batch * d->in_channels * d->in_h * d->in_w,
                      .n_weight = (size_t)d->out_channels * d->in_channels * 9,
                      .n_bias = (size_t)d->out_channels,
                      .n_out = (size_t)d->batch * d->out_channels * oh * ow, .plane_out = oh * ow,
                      .with_bias = c->with_bias};
        io_fill(&io, &seed);
        float *base_out = random_floats(io.n_out, &seed), *base_inp = random_floats(io.n_inp, &seed);
        expected e[3] = {forward_expected(&io), {0}, grad_expected(&io, 0, base_inp)};
        /* out += conv, no bias */
        int with_bias = io.with_bias;
        io.with_bias = 0;
        e[1] = forward_expected(&io);
        io.with_bias = with_bias;
        for (size_t k = 0; k < io.n_out; k++)
            e[1].want[k] += base_out[k], e[1].mag[k] += fabs((double)base_out[k]);
        size_t terms[3] = {(size_t)d->in_channels * 9 + 1, (size_t)d->in_channels * 9 + 1,
                           (size_t)d->out_channels * 9 + 1};
        op_io cl = {.count = 7,
                    .n = {io.n_inp, io.n_weight, io.n_bias, io.n_out, io.n_out, io.n_out, io.n_inp},
                    .in = {io.inp, io.weight, io.bias, io.dout, io.dout, base_out, base_inp}},
              vkio;
        run_both(&cl, &vkio, wino_op, c);
        char name[96];
        snprintf(name, sizeof name, "winograd %s%s", c->name, c->with_bias ? " bias" : "");
        for (int k = 0; k < 3; k++)
            check_array(&t, k, name, names[k], &cl, &vkio, 4 + k, &e[k], terms[k],
                        WINOGRAD_UNITS);
        io_free(&cl), io_free(&vkio);
        for (int k = 0; k < 3; k++) expected_free(&e[k]);
        free(base_out), free(base_inp);
        io_release(&io);
    }
    printf("\n    conv2d WINOGRAD, %zu shapes: worst out %.3f, adding %.3f, dinp %.3f of T 2^-24 "
           "sum|terms| (bound %d); %zu of %zu results differ from OpenCL's bits\n",
           sizeof wino_cases / sizeof wino_cases[0], t.worst[0], t.worst[1], t.worst[2],
           WINOGRAD_UNITS, t.differ, t.results);
    no_messages();
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"conv_transpose2d DIRECT tiles: Vulkan, OpenCL, reference", test_convt_tiles},
        {"conv2d WINOGRAD: Vulkan, OpenCL, reference", test_winograd},
        CU_TEST_INFO_NULL,
    };
    int rc = th_run_suite("vulkan_conv_tiles", tests, TH_VULKAN);
    tt_backend_destroy(vk_be);
    th_backend_release();
    return rc;
}

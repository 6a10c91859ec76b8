/* The implicit-GEMM convolution's shaders (shaders/conv_igemm/) on
 * lavapipe with validation on (no message allowed), against its OpenCL
 * kernels (opencl/conv_igemm.cl) run from the same inputs, each array at an
 * odd offset between poison words (vk_compare.h): conv2d forward and
 * backward with stride, padding, dilation, groups, a strided 1x1 (input
 * phases no tap reaches), several tiles of rows and columns, and the weight
 * gradient in slices (through a given workspace and an own one);
 * conv_transpose2d through the same kernels; with lavapipe's tiles, PoCL's,
 * a GPU's, and a work-group smaller than a chunk.  Both backends sum in the
 * same order, so they agree within 2 T 2^-24 sum|terms| (T the most terms
 * of a sum; fused multiply-adds may differ); the forward also against the
 * double reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"
#include "ref_conv.h"
#include "vk_compare.h"

/* The arrays of one case: inp weight bias dout (inputs), out dinp dweight
 * dbias (dinp, dweight and dbias start non-zero: backward adds), then the
 * workspace when the case passes one. */
enum { INP, WEIGHT, BIAS, DOUT, OUT, DINP, DWEIGHT, DBIAS, WORKSPACE };
static const char *const names[] = {"out", "dinp", "dweight", "dbias"};

typedef struct igemm_case {
    const char *name;
    int transpose;                   /* 0: conv2d (d), 1: conv_transpose2d (t) */
    tt_conv2d_desc d;
    tt_conv_transpose2d_desc t;
    int slice;                       /* blocks.igemm_slice: pixels a slice (0: its own) */
    int pass_workspace;
} igemm_case;

#define IG TT_CONV_ALGO_IMPLICIT_GEMM
static const igemm_case cases[] = {
    {"k3 p1 6x7 3->5", 0, {2, 3, 6, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, IG, 0, {0}, 0}, {0}, 0, 0},
    {"k3 s2 p1 g2 7x7 4->6", 0, {1, 4, 7, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2, IG, 0, {0}, 0}, {0}, 0, 0},
    {"k1 s2 5x6 4->3", 0, {1, 4, 5, 6, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1, IG, 0, {0}, 0}, {0}, 0, 0},
    {"k3 s(2,1) p2 d2 8x7 2->3", 0, {1, 2, 8, 7, 3, 3, 3, 2, 1, 2, 2, 2, 2, 1, IG, 0, {0}, 0}, {0}, 0, 0},
    {"depthwise k3 p1 6x6 3->3", 0, {1, 3, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3, IG, 0, {0}, 0}, {0}, 0, 0},
    {"k3 p1 4x5 17->18", 0, {1, 17, 4, 5, 18, 3, 3, 1, 1, 1, 1, 1, 1, 1, IG, 0, {0}, 0}, {0}, 0, 0},
    {"slices of 5, workspace given", 0, {2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, IG, 0, {0}, 0}, {0}, 5, 1},
    {"slices of 5, own workspace", 0, {1, 2, 7, 6, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, IG, 0, {0}, 0}, {0}, 5, 0},
    /* long reductions, which lavapipe (65535 loop iterations an
     * invocation) runs in several launches: K = 2970 (forward; its input
     * gradient 27), and 3600 pixels a slice (the weight gradient) */
    {"k3 p1 4x4 330->2", 0, {1, 330, 4, 4, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, IG, 0, {0}, 0}, {0}, 0, 0},
    {"k3 p1 60x60 2->3", 0, {1, 2, 60, 60, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, IG, 0, {0}, 0}, {0}, 0, 0},
    {"convT k2 s2 3x4 5->3", 1, {0}, {2, 5, 3, 4, 3, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, IG, {0}, 0}, 0, 0},
    {"convT k3 s2 p1 op1 3x4 3->4", 1, {0}, {1, 3, 3, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, IG, {0}, 0},
     0, 0},
};
enum { CASES = sizeof cases / sizeof cases[0] };

/* Floats of each array of case c, and the most terms any of its sums has.
 * The two descs start alike: N, Cin, H, W, Cout, kH, kW, then groups
 * further on; the weight is (Cout, Cin/G, kH, kW) or (Cin, Cout/G, kH, kW). */
static void sizes_of(const igemm_case *c, size_t n[WORKSPACE + 1], size_t *terms)
{
    const tt_conv2d_desc *d = &c->d;
    const tt_conv_transpose2d_desc *t = &c->t;
    size_t batch = (size_t)(c->transpose ? t->batch : d->batch);
    size_t cin = (size_t)(c->transpose ? t->in_channels : d->in_channels);
    size_t cout = (size_t)(c->transpose ? t->out_channels : d->out_channels);
    size_t h = (size_t)(c->transpose ? t->in_h : d->in_h), w = (size_t)(c->transpose ? t->in_w : d->in_w);
    size_t kh = (size_t)(c->transpose ? t->kernel_h : d->kernel_h);
    size_t kw = (size_t)(c->transpose ? t->kernel_w : d->kernel_w);
    size_t groups = (size_t)(c->transpose ? t->groups : d->groups);
    size_t oh = (size_t)(c->transpose ? tt_conv_transpose2d_out_h(t) : tt_conv2d_out_h(d));
    size_t ow = (size_t)(c->transpose ? tt_conv_transpose2d_out_w(t) : tt_conv2d_out_w(d));
    size_t ws = c->transpose ? tt_conv_transpose2d_workspace_bytes(t) : tt_conv2d_workspace_bytes(d);
    n[INP] = n[DINP] = batch * cin * h * w;
    n[DOUT] = n[OUT] = batch * cout * oh * ow;
    n[BIAS] = n[DBIAS] = cout;
    n[WEIGHT] = n[DWEIGHT] = cin * cout / groups * kh * kw;
    n[WORKSPACE] = c->pass_workspace ? ws / 4 : 0;
    size_t most = (cin > cout ? cin : cout) * kh * kw + 1;
    size_t pixels = batch * (oh > h ? oh : h) * (ow > w ? ow : w) + 1;
    *terms = most > pixels ? most : pixels;
}

/* Forward, then backward into the gradients (arrays as above). */
static void igemm_op(tt_backend *be, const tt_mem *m, const void *ctx)
{
    const igemm_case *c = ctx;
    tt_mem ws = c->pass_workspace ? m[WORKSPACE] : (tt_mem){0};
    if (c->transpose) {
        TH_OK(tt_conv_transpose2d_forward(be, m[OUT], m[INP], m[WEIGHT], m[BIAS], &c->t, ws));
        TH_OK(tt_conv_transpose2d_backward(be, m[DINP], m[DWEIGHT], m[DBIAS], m[DOUT], m[INP],
                                           m[WEIGHT], &c->t, ws));
    } else {
        TH_OK(tt_conv2d_forward(be, m[OUT], m[INP], m[WEIGHT], m[BIAS], &c->d, ws));
        TH_OK(tt_conv2d_backward(be, m[DINP], m[DWEIGHT], m[DBIAS], m[DOUT], m[INP], m[WEIGHT],
                                 &c->d, ws));
    }
}

/* Case `from` with `tile` (and its own slices): Vulkan and OpenCL agree;
 * returns the worst |difference| / bound. */
static double check_case(const igemm_case *from, tt_conv_blocks tile, uint64_t *seed,
                         int *failures)
{
    igemm_case run = *from;
    const igemm_case *c = &run;
    tile.igemm_slice = from->slice;
    run.d.blocks = run.t.blocks = tile;
    size_t n[WORKSPACE + 1], terms;
    sizes_of(c, n, &terms);
    op_io cl = {.count = c->pass_workspace ? WORKSPACE + 1 : WORKSPACE}, vk, mag;
    float *in[WORKSPACE + 1], *absolute[WORKSPACE + 1];
    for (int k = 0; k < cl.count; k++) {
        in[k] = random_floats(n[k], seed);
        absolute[k] = malloc(n[k] * 4 + 4);
        CU_ASSERT_FATAL(absolute[k] != NULL);
        for (size_t i = 0; i < n[k]; i++) absolute[k][i] = fabsf(in[k][i]);
        cl.n[k] = n[k], cl.in[k] = in[k];
    }
    run_both(&cl, &vk, igemm_op, c);
    mag = cl;
    for (int k = 0; k < cl.count; k++) mag.in[k] = absolute[k];
    run_on(th_backend(), &mag, igemm_op, c); /* the sums of |terms| */
    const double eps = ldexp(1.0, -24);
    double worst = 0;
    for (int k = OUT; k <= DBIAS; k++) {
        int same = 1;
        for (size_t i = 0; i < n[k]; i++) {
            double err = fabs((double)vk.out[k][i] - cl.out[k][i]);
            double bound = 2.0 * (double)terms * eps * mag.out[k][i] + 1e-30;
            same &= err <= bound;
            if (err / bound > worst) worst = err / bound;
        }
        if (!same) printf("\n    %s: %s differs from OpenCL", c->name, names[k - OUT]);
        *failures += !same;
    }
    /* the forward against the double reference, within the same bound */
    double *want = malloc(n[OUT] * sizeof *want);
    double *x = doubles(in[INP], n[INP]), *wt = doubles(in[WEIGHT], n[WEIGHT]);
    double *b = doubles(in[BIAS], n[BIAS]);
    CU_ASSERT_FATAL(want != NULL);
    if (c->transpose) ref_conv_transpose2d_forward(want, x, wt, b, &c->t);
    else ref_conv2d_forward(want, x, wt, b, &c->d);
    int near = 1;
    for (size_t i = 0; i < n[OUT]; i++)
        near &= fabs(vk.out[OUT][i] - want[i]) <= 2.0 * (double)terms * eps * mag.out[OUT][i] + 1e-30;
    if (!near) printf("\n    %s: forward off the reference", c->name);
    CU_ASSERT(near);
    free(want), free(x), free(wt), free(b);
    io_free(&cl), io_free(&vk), io_free(&mag);
    for (int k = 0; k < cl.count; k++) free(in[k]), free(absolute[k]);
    return worst;
}

static void test_igemm(void)
{
    /* lavapipe's own tiles, PoCL's (float16 columns), a GPU's, and a
     * work-group of two items for chunks of eight */
    static const tt_conv_blocks tiles[] = {{0}, TT_CONV_IGEMM_TILE(8, 16, 32, 4, 16),
                                           TT_CONV_IGEMM_TILE(4, 4, 16, 16, 16),
                                           TT_CONV_IGEMM_TILE(3, 4, 8, 2, 1)};
    uint64_t seed = 23;
    int failures = 0;
    double worst = 0;
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
        for (int i = 0; i < CASES; i++) {
            const igemm_case *c = &cases[i];
            TH_OK(c->transpose ? tt_conv_transpose2d_check(&c->t) : tt_conv2d_check(&c->d));
            double w = check_case(c, tiles[t], &seed, &failures);
            if (w > worst) worst = w;
        }
    }
    CU_ASSERT_EQUAL(failures, 0);
    printf("\n    implicit GEMM forward and backward: %d cases x %zu tiles within 2 T 2^-24 "
           "sum|terms| of OpenCL, worst %.3f of it\n",
           CASES, sizeof tiles / sizeof tiles[0], worst);
    no_messages();
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"implicit GEMM convolution against OpenCL", test_igemm},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("vulkan_conv_igemm", tests, TH_VULKAN);
}

/*
 * Implicit GEMM against the double reference: every direction of every
 * shape (strides, dilations, groups, depthwise, 1x1 images, several tiles
 * and chunks), with this device's tiles, a GPU's and odd ones, the weight
 * gradient in slices that end inside chunks and images, every reduction in
 * launches of one chunk, and a micro-batch too large for one launch.
 * Apart from test_conv_algos.c, so that the two suites' program
 * compilations run side by side; PyTorch and ResNet's shapes check it
 * there.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "ops/conv2d.h"
#include "ref_conv_cases.h"
#include "ref_conv_check.h"

/* N, Cin, H, W, Cout, kH, kW, sH, sW, pH, pW, dH, dW, groups */
#define IG(n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, g) \
    {n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, g, TT_CONV_ALGO_IMPLICIT_GEMM, 0, {0}, 0}

static const conv2d_case igemm_cases[] = {
    {"igemm k3 s1 p1 7x9 3->5", IG(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1), 1},
    {"igemm k3 s2 p1 9x7 6->9", IG(1, 6, 9, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1), 0},
    {"igemm k1 7x9 5->3", IG(2, 5, 7, 9, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1), 1},
    /* stride 2 of a 1x1: three of the four input phases get no gradient */
    {"igemm k1 s2 7x8 4->3", IG(1, 4, 7, 8, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1), 1},
    {"igemm k5 s2 p0 7x9 3->5", IG(1, 3, 7, 9, 5, 5, 5, 2, 2, 0, 0, 1, 1, 1), 1},
    {"igemm k3 d2 p2 7x9 3->4", IG(1, 3, 7, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2, 1), 1},
    /* stride 2 and dilation 2: every tap of a row lands on one phase */
    {"igemm k3 s2 d2 p1 9x8 2->3", IG(1, 2, 9, 8, 3, 3, 3, 2, 2, 1, 1, 2, 2, 1), 0},
    /* strides and dilations coprime: each phase its own first tap */
    {"igemm k3x2 s(3,2) d(2,3) p(2,1)", IG(2, 2, 10, 11, 3, 3, 2, 3, 2, 2, 1, 2, 3, 1), 1},
    {"igemm groups 2 k3 p1 6x7 4->6", IG(2, 4, 6, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2), 1},
    {"igemm depthwise k3 s2 p1 7x7 3->6", IG(1, 3, 7, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 3), 1},
    {"igemm 1x1 image k3 p1 3->5", IG(2, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1), 1},
    /* several tiles of rows and of columns, K over several chunks */
    {"igemm k3 p1 5x7 17->18", IG(1, 17, 5, 7, 18, 3, 3, 1, 1, 1, 1, 1, 1, 1), 1},
};

/* Implicit GEMM runs every direction of every shape: with this device's
 * tiles, a GPU's (16 x 16 work-groups of 4 x 4), rows not a power of two
 * and a work-group smaller than a chunk, chunks smaller than a work-group;
 * and the weight gradient in slices of 7 pixels, so that slices end inside
 * chunks and images; and every reduction in launches of one chunk, as a
 * device with a loop limit splits long ones. */
static void check_with(const char *label, const conv2d_case *from, size_t n, tt_conv_blocks b)
{
    conv2d_case cases[COUNT(igemm_cases)];
    CU_ASSERT_FATAL(n <= COUNT(cases));
    for (size_t i = 0; i < n; i++) cases[i] = from[i], cases[i].desc.blocks = b;
    ref_conv2d_check_cases(label, cases, n, ALL_DIRS);
}

static void test_igemm(void)
{
    const size_t last = COUNT(igemm_cases) - 4; /* the other tiles: strides, groups, sizes */
    ref_conv2d_check_cases("implicit_gemm", igemm_cases, COUNT(igemm_cases), ALL_DIRS);
    static const struct {
        const char *name;
        tt_conv_blocks blocks;
    } tiles[] = {
        {"4,4,16,16,16", TT_CONV_IGEMM_TILE(4, 4, 16, 16, 16)},
        {"3,4,8,2,1", TT_CONV_IGEMM_TILE(3, 4, 8, 2, 1)},
        {"2,8,8,8,2", TT_CONV_IGEMM_TILE(2, 8, 8, 8, 2)},
    };
    for (size_t t = 0; t < COUNT(tiles); t++) {
        char label[64];
        snprintf(label, sizeof label, "implicit_gemm (tiles %s)", tiles[t].name);
        check_with(label, igemm_cases + last, 4, tiles[t].blocks);
        check_with(label, igemm_cases + 1, 1, tiles[t].blocks);
    }
    check_with("implicit_gemm (slices of 7 pixels)", igemm_cases, COUNT(igemm_cases),
               (tt_conv_blocks){.igemm_slice = 7});
    /* a loop limit (lavapipe's is 65535) of one chunk a launch: every
     * reduction in launches of BK that add up */
    th_setenv("TT_LOOP_LIMIT", "1");
    ref_conv2d_check_cases("implicit_gemm (a launch per chunk)",
                           igemm_cases, COUNT(igemm_cases), ALL_DIRS);
    th_setenv("TT_LOOP_LIMIT", NULL);
}

/* A GPU's cap on one launch's work (device_traits.h dispatch_flops) of one
 * operation: every direction in launches of one image and one chunk of
 * its reduction, against the reference; and the forward of a 3-image
 * micro-batch in 3 launches where it was one. */
static void test_igemm_capped(void)
{
    th_setenv("TT_DISPATCH_FLOPS", "1");
    ref_conv2d_check_cases("implicit_gemm (a launch an image and a chunk)", igemm_cases,
                           COUNT(igemm_cases), ALL_DIRS);
    uint64_t launches[2] = {0};
    tt_conv2d_desc d = IG(3, 2, 5, 6, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1);
    for (int capped = 0; capped < 2; capped++) {
        th_setenv("TT_DISPATCH_FLOPS", capped ? "1" : "0");
        tt_backend *be = th_profiling_backend();
        CU_ASSERT_PTR_NOT_NULL_FATAL(be);
        tt_buffer *x = NULL, *w = NULL, *y = NULL;
        TH_OK(tt_buffer_alloc(be, 3 * 2 * 30 * 4, TT_MEM_OTHER, "x", &x));
        TH_OK(tt_buffer_alloc(be, 3 * 2 * 4, TT_MEM_OTHER, "w", &w));
        TH_OK(tt_buffer_alloc(be, 3 * 3 * 30 * 4, TT_MEM_OTHER, "y", &y));
        TH_OK(tt_conv2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w), (tt_mem){0}, &d,
                                (tt_mem){0}));
        TH_OK(tt_finish(be));
        launches[capped] = th_launches(be, "conv_igemm_forward");
        tt_buffer_free(x), tt_buffer_free(w), tt_buffer_free(y);
        tt_backend_destroy(be);
    }
    th_setenv("TT_DISPATCH_FLOPS", NULL);
    printf("\n    the forward of 3 images: %llu launch(es), %llu under the cap",
           (unsigned long long)launches[0], (unsigned long long)launches[1]);
    CU_ASSERT(launches[0] == 1 && launches[1] == 3);
}

/* A micro-batch whose pixel tiles pass 65535 work-groups (the least a
 * Vulkan device allows along dimension 0) runs in launches of fewer
 * images: with 4-pixel tiles, 5 images of 256x256 go as 4 + 1; forward and
 * input gradient as im2col + GEMM's.  The weight gradient (sums of 327680
 * terms, not split by images) against a double sum, within what float
 * sums of that length lose (im2col + GEMM's error printed beside it). */
static void test_igemm_split_batch(void)
{
    tt_conv2d_desc d = IG(5, 1, 256, 256, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1);
    d.blocks = TT_CONV_IGEMM_TILE(1, 4, 4, 1, 1);
    size_t n_in = 5 * 256 * 256, n_w = 2 * 9, n_out = 2 * n_in;
    float *got = ref_conv2d_run_three(&d, n_in, n_w, n_out);
    d.algo = TT_CONV_ALGO_IM2COL_GEMM;
    d.blocks = (tt_conv_blocks){0};
    float *want = ref_conv2d_run_three(&d, n_in, n_w, n_out);
    double e = th_max_rel_error_f(got, want, n_out + n_in, 1.0);
    /* dweight[co, ky, kx] = sum over n, y, x of dy[n, co, y, x] x[n, 0, y + ky - 1, x + kx - 1] */
    uint64_t seed = 77;
    float *x = th_random_floats(n_in, -1, 1, &seed), *w = th_random_floats(n_w, -1, 1, &seed);
    float *dy = th_random_floats(n_out, -1, 1, &seed);
    double dw[18] = {0};
    for (size_t n = 0; n < 5; n++)
        for (int co = 0; co < 2; co++)
            for (int y = 0; y < 256; y++)
                for (int xx = 0; xx < 256; xx++)
                    for (int t = 0; t < 9; t++) {
                        int iy = y + t / 3 - 1, ix = xx + t % 3 - 1;
                        if (iy < 0 || iy >= 256 || ix < 0 || ix >= 256) continue;
                        dw[co * 9 + t] += (double)dy[((n * 2 + co) * 256 + y) * 256 + xx] *
                                          x[(n * 256 + iy) * 256 + ix];
                    }
    double e_w = th_max_rel_error(got + n_out + n_in, dw, n_w, 1.0);
    double e_ref = th_max_rel_error(want + n_out + n_in, dw, n_w, 1.0);
    printf("\n    5 x 256x256 in two launches: forward and input gradient within %.2e of "
           "im2col_gemm; weight gradient off a double sum by %.2e (im2col_gemm %.2e)",
           e, e_w, e_ref);
    CU_ASSERT(e < 1e-5);
    CU_ASSERT(e_w < 1e-4);
    free(x), free(w), free(dy);
    free(got), free(want);
}

/* A kernel held below the device's work-group size (CL_KERNEL_WORK_GROUP_SIZE,
 * as registers hold implicit GEMM on Mali, Adreno or Intel GPUs; the test
 * knob makes this device report 64): a GPU's 16 x 16 work-groups narrow to
 * fit, every direction against the reference. */
static void test_igemm_kernel_limit(void)
{
    th_setenv("TT_KERNEL_WG_LIMIT", "64");
    check_with("implicit_gemm (a GPU's tile, kernels held to 64 work-items)", igemm_cases,
               COUNT(igemm_cases), TT_CONV_IGEMM_TILE(4, 4, 16, 16, 16));
    th_setenv("TT_KERNEL_WG_LIMIT", NULL);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"implicit_gemm: forward and gradients, every tile", test_igemm},
        {"implicit_gemm: a large micro-batch in several launches", test_igemm_split_batch},
        {"implicit_gemm: launches under a GPU's cap on their work", test_igemm_capped},
        {"implicit_gemm: work-groups within the kernel's own limit", test_igemm_kernel_limit},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_igemm", tests, TH_EVERY);
}

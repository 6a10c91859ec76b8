/*
 * Every convolution algorithm against the double reference, on the shapes
 * it supports: DIRECT (untiled, with 8 and 16 columns a work-item, and
 * local-memory tiled), FFT and IMPLICIT_GEMM (with each device type's
 * tiles and odd ones, and the weight gradient's reduction in slices), with
 * odd sizes, 1x1 images, batch 1 and 2, channel counts not multiples of 4;
 * finite-difference gradients of input, weight and bias, backward adds
 * (ref_conv_check_case).  Then every algorithm, the Winograds included
 * (whose own cases are test_conv_winograd.c's): the dispatch's fallbacks,
 * the input gradient that overwrites, ResNet's strided shapes,
 * conv_transpose2d through conv2d's rows, and PyTorch on one case each.
 * With TT_BENCH_CONV=1 it also times each algorithm on the
 * UNet's 16->16 3x3 conv on 4x256x256 and a 7x7 one (not run by default;
 * TT_BENCH_REPS=N: best of N - 1 runs after a warm-up, default 3).
 * The autotuner is tested in test_conv_autotune.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "harness.h"
#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"
#include "ops/device_traits.h"
#include "ref_conv.h"
#include "ref_conv_cases.h"
#include "ref_conv_check.h"

/* ---- conv2d cases -------------------------------------------------------- */

static const conv2d_case direct_cases[] = {
    {"direct k3 s1 p1 7x9 3->5", D(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 s2 p1 9x7 6->9", D(1, 6, 9, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 0},
    {"direct k1 s1 7x9 5->3", D(2, 5, 7, 9, 3, 1, 1, 1, 1, 0, 0, 1, 1, DIRECT), 1},
    {"direct k5 s2 p0 7x9 3->5", D(1, 3, 7, 9, 5, 5, 5, 2, 2, 0, 0, 1, 1, DIRECT), 1},
    {"direct k7 s1 p3 5x6 2->3", D(1, 2, 5, 6, 3, 7, 7, 1, 1, 3, 3, 1, 1, DIRECT), 1},
    {"direct k3x1 s(1,2) p(1,0)", D(1, 3, 7, 9, 5, 3, 1, 1, 2, 1, 0, 1, 1, DIRECT), 1},
    {"direct k3 dilation 2 p2", D(1, 3, 7, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2, DIRECT), 1},
    {"direct 1x1 image k3 p1", D(2, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    /* the 3x3 kernels' channel blocks: several, the last one short */
    {"direct k3 p1 11x17 10->9", D(2, 10, 11, 17, 9, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    /* whole vectors: the left and right edge columns from shifted middles */
    {"direct k3 p1 7x24 5->6", D(2, 5, 7, 24, 6, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    /* the staged tile: two chunks of input channels (16 + 1), a second
     * work-group of columns mostly past the edge */
    {"direct k3 p1 3x33 17->2", D(1, 17, 3, 33, 2, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    /* the padded copies (W % 8 == 0): the weight gradient's at one row of
     * one vector; the forward's (also H even) with two row blocks */
    {"direct k3 p1 1x8 4->3", D(2, 4, 1, 8, 3, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 p1 4x16 9->5", D(2, 9, 4, 16, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
};

/* The 16-wide 3x3 kernels (planes a multiple of 16 wide): one vector a
 * row, two, three, and more than a work-group's columns; rows not a
 * multiple of the forward's row block (5, 6, 3, 1, 9); channel counts not
 * multiples of the channel blocks; batch 1 and 2, bias or not; planes
 * 8 wide (two rows a vector), an even and an odd number of rows; planes
 * W % 16 == 8 wide (a half vector ends each row: 24 and 40 wide); and a
 * plane wider than 256, which took the 8-wide kernels before; stride 2
 * (the forward's own kernel, even and odd columns apart): outputs 16, 8
 * (an odd input width, its last column padding) and 24 wide; widths
 * that end in part of a vector other than a half (17, 30, 21: 1, 14 and
 * 5 columns). */
static const conv2d_case w16_cases[] = {
    {"direct k3 p1 5x16 9->5", D(2, 9, 5, 16, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 p1 6x32 3->6", D(1, 3, 6, 32, 6, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 0},
    {"direct k3 p1 8x8 6->7", D(2, 6, 8, 8, 7, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 p1 3x48 17->7", D(2, 17, 3, 48, 7, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 p1 1x16 4->3", D(2, 4, 1, 16, 3, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 0},
    {"direct k3 p1 9x80 5->10", D(1, 5, 9, 80, 10, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 p1 5x8 9->5", D(2, 9, 5, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 0},
    {"direct k3 p1 1x8 3->2", D(1, 3, 1, 8, 2, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 p1 5x24 6->5", D(2, 6, 5, 24, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 p1 3x40 3->9", D(1, 3, 3, 40, 9, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 0},
    {"direct k3 p1 2x272 2->3", D(2, 2, 2, 272, 3, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 s2 p1 8x32 5->6", D(2, 5, 8, 32, 6, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 s2 p1 7x15 4->5", D(1, 4, 7, 15, 5, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 0},
    {"direct k3 s2 p1 5x48 3->9", D(2, 3, 5, 48, 9, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 p1 5x17 4->5", D(2, 4, 5, 17, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 p1 6x30 3->6", D(1, 3, 6, 30, 6, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 0},
    {"direct k3 p1 9x21 6->5", D(2, 6, 9, 21, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    /* two of the weight gradient's 6-row steps and a row left */
    {"direct k3 p1 13x24 4->5", D(1, 4, 13, 24, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 0},
};

static const conv2d_case tiled_cases[] = {
    {"direct tiled k3 p1 19x21 3->5", D(2, 3, 19, 21, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct tiled k5 s2 p2 9x7", D(1, 3, 9, 7, 6, 5, 5, 2, 2, 2, 2, 1, 1, DIRECT), 0},
    {"direct tiled dilation 2 1x1", D(1, 2, 1, 1, 3, 3, 3, 1, 1, 2, 2, 2, 2, DIRECT), 1},
};

/* most cases share the 12x14 plane (and so their clFFT plans, which PoCL
 * builds in seconds each) */
static const conv2d_case fft_cases[] = {
    {"fft k5 p2 7x9 3->4", D(1, 3, 7, 9, 4, 5, 5, 1, 1, 2, 2, 1, 1, FFT), 1},
    {"fft k7 p3 5x7 3->4", D(2, 3, 5, 7, 4, 7, 7, 1, 1, 3, 3, 1, 1, FFT), 1},
    {"fft k5 p0 12x14 3->4", D(1, 3, 12, 14, 4, 5, 5, 1, 1, 0, 0, 1, 1, FFT), 0},
    {"fft k7x5 p(1,2) 10x10 3->4", D(1, 3, 10, 10, 4, 7, 5, 1, 1, 1, 2, 1, 1, FFT), 1},
    {"fft 1x1 image k5 p2 3->4", D(1, 3, 1, 1, 4, 5, 5, 1, 1, 2, 2, 1, 1, FFT), 1},
};

/* N, Cin, H, W, Cout, kH, kW, sH, sW, pH, pW, dH, dW, groups */
#define IG(n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, g) \
    {n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, g, TT_CONV_ALGO_IMPLICIT_GEMM, 0}

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

static void test_direct(void)
{
    th_setenv("TT_CONV_DIRECT_VARIANT", "scalar");
    ref_conv2d_check_cases("direct (scalar)", direct_cases, COUNT(direct_cases), ALL_DIRS);
    th_setenv("TT_CONV_DIRECT_VARIANT", "w8"); /* stride-2 columns fall back to scalar */
    th_setenv("TT_CONV_DIRECT_W16", "0");        /* 16-wide: test_direct_w16 */
    ref_conv2d_check_cases("direct (8-wide)", direct_cases, COUNT(direct_cases), ALL_DIRS);
    ref_conv2d_check_cases("direct (8-wide, tile cases)", tiled_cases, COUNT(tiled_cases), ALL_DIRS);
    /* the 3x3 weight gradient's bands over the last four cases (3x3,
     * stride 1): a row or two each, then several images to a band */
    const conv2d_case *k3 = direct_cases + COUNT(direct_cases) - 4;
    th_setenv("TT_CONV_K3W_BANDS", "2000,1");
    ref_conv2d_check_cases("direct (8-wide, bands of rows)", k3, 4, ALL_DIRS);
    th_setenv("TT_CONV_K3W_BANDS", "1000000,1");
    ref_conv2d_check_cases("direct (8-wide, images to a band)", k3, 4, ALL_DIRS);
    th_setenv("TT_CONV_K3W_BANDS", NULL);
    /* the forward and input gradient through the staged tile, which only
     * planes of 512x512 and up take by themselves */
    th_setenv("TT_K3_STAGED", "1");
    ref_conv2d_check_cases("direct (8-wide, staged tile)", k3, 4, ALL_DIRS);
    th_setenv("TT_K3_STAGED", NULL);
    /* planes a multiple of 8 wide without the padded copies, as planes
     * over 128 wide run (with them: the passes above) */
    th_setenv("TT_K3W_PADDED", "0");
    th_setenv("TT_K3_PADDED", "0");
    ref_conv2d_check_cases("direct (8-wide, unpadded)", k3, 4, ALL_DIRS);
    th_setenv("TT_K3W_PADDED", NULL);
    th_setenv("TT_K3_PADDED", NULL);
    th_setenv("TT_CONV_DIRECT_W16", NULL);
    th_setenv("TT_CONV_DIRECT_VARIANT", NULL);
}

/* The 3x3 kernels with 16 columns a work-item (forced on: any OpenCL
 * device compiles float16; this device's own choice says whether they run
 * by default), over bands of rows and images, then the same shapes with
 * the 8-wide kernels forced. */
static void test_direct_w16(void)
{
    th_setenv("TT_CONV_DIRECT_VARIANT", "w8");
    int by_default = tt_device_traits_of(th_backend()).direct_w16;
    printf("\n    this device runs the 16-wide kernels by default: %s", by_default ? "yes" : "no");
    th_setenv("TT_CONV_DIRECT_W16", "1");
    if (!tt_device_traits_of(th_backend()).direct_w16) {
        th_left_out("direct (16-wide)", "the backend has no conv_direct_w16 program");
    } else {
        ref_conv2d_check_cases("direct (16-wide)", w16_cases, COUNT(w16_cases), ALL_DIRS);
        th_setenv("TT_CONV_K3W_BANDS", "2000,1");
        ref_conv2d_check_cases("direct (16-wide, bands of rows)", w16_cases, COUNT(w16_cases), ALL_DIRS);
        th_setenv("TT_CONV_K3W_BANDS", "1000000,1");
        ref_conv2d_check_cases("direct (16-wide, images to a band)", w16_cases, COUNT(w16_cases), ALL_DIRS);
        th_setenv("TT_CONV_K3W_BANDS", NULL);
        /* images padded in bands of rows (planes too large for a whole
         * copy): bands of a row block, and of 3 rows (the last band and
         * the row blocks ragged), the latter with several weight-gradient
         * bands to a band */
        th_setenv("TT_CONV_W16_BAND_ROWS", "4");
        ref_conv2d_check_cases("direct (16-wide, images in bands of 4 rows)", w16_cases, COUNT(w16_cases),
                    ALL_DIRS);
        th_setenv("TT_CONV_W16_BAND_ROWS", "3");
        th_setenv("TT_CONV_K3W_BANDS", "2000,1");
        ref_conv2d_check_cases("direct (16-wide, images in bands of 3 rows)", w16_cases, COUNT(w16_cases),
                    ALL_DIRS);
        th_setenv("TT_CONV_K3W_BANDS", NULL);
        th_setenv("TT_CONV_W16_BAND_ROWS", NULL);
    }
    th_setenv("TT_CONV_DIRECT_W16", "0");
    CU_ASSERT_FALSE(tt_device_traits_of(th_backend()).direct_w16);
    ref_conv2d_check_cases("direct (8-wide, the 16-wide shapes)", w16_cases, COUNT(w16_cases), ALL_DIRS);
    th_setenv("TT_CONV_DIRECT_W16", NULL);
    th_setenv("TT_CONV_DIRECT_VARIANT", NULL);
}

static void test_direct_tiled(void)
{
    th_setenv("TT_CONV_DIRECT_VARIANT", "tiled");
    ref_conv2d_check_cases("direct (local-memory tiles)", tiled_cases, COUNT(tiled_cases), ALL_DIRS);
    th_setenv("TT_CONV_DIRECT_VARIANT", NULL);
}

static void test_fft(void)
{
    ref_conv2d_check_cases("fft", fft_cases, COUNT(fft_cases), ALL_DIRS);
    tt_conv2d_desc k3 = D(1, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, FFT);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&k3, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_IM2COL_GEMM);
}

/* Implicit GEMM runs every direction of every shape: with this device's
 * tiles, a GPU's (16 x 16 work-groups of 4 x 4), rows not a power of two
 * and a work-group smaller than a chunk, chunks smaller than a work-group;
 * and the weight gradient in slices of 7 pixels, so that slices end inside
 * chunks and images; and every reduction in launches of one chunk, as a
 * device with a loop limit splits long ones. */
static void test_igemm(void)
{
    const size_t last = COUNT(igemm_cases) - 4; /* the other tiles: strides, groups, sizes */
    ref_conv2d_check_cases("implicit_gemm", igemm_cases, COUNT(igemm_cases), ALL_DIRS);
    static const char *const tiles[] = {"4,4,16,16,16", "3,4,8,2,1", "2,8,8,8,2"};
    for (size_t t = 0; t < COUNT(tiles); t++) {
        th_setenv("TT_CONV_IGEMM_TILES", tiles[t]);
        char label[64];
        snprintf(label, sizeof label, "implicit_gemm (tiles %s)", tiles[t]);
        ref_conv2d_check_cases(label, igemm_cases + last, 4, ALL_DIRS);
        ref_conv2d_check_cases(label, igemm_cases + 1, 1, ALL_DIRS);
    }
    th_setenv("TT_CONV_IGEMM_TILES", NULL);
    th_setenv("TT_CONV_IGEMM_SLICE", "7");
    ref_conv2d_check_cases("implicit_gemm (slices of 7 pixels)", igemm_cases, COUNT(igemm_cases), ALL_DIRS);
    th_setenv("TT_CONV_IGEMM_SLICE", NULL);
    /* a loop limit (lavapipe's is 65535) of one chunk a launch: every
     * reduction in launches of BK that add up */
    th_setenv("TT_LOOP_LIMIT", "1");
    ref_conv2d_check_cases("implicit_gemm (a launch per chunk)", igemm_cases, COUNT(igemm_cases), ALL_DIRS);
    th_setenv("TT_LOOP_LIMIT", NULL);
}

/* Forward, input and weight gradient of `d` with its algorithm, from the
 * same random data (seed); returns them concatenated (malloc'd). */
static float *run_three(const tt_conv2d_desc *d, size_t n_in, size_t n_w, size_t n_out)
{
    tt_backend *be = th_backend();
    uint64_t seed = 77;
    float *x = th_random_floats(n_in, -1, 1, &seed), *w = th_random_floats(n_w, -1, 1, &seed);
    float *dy = th_random_floats(n_out, -1, 1, &seed), *got = malloc((n_out + n_in + n_w) * 4);
    CU_ASSERT_FATAL(got != NULL);
    tt_buffer *bx = th_upload(x, n_in, "split.x"), *bw = th_upload(w, n_w, "split.w");
    tt_buffer *bdy = th_upload(dy, n_out, "split.dy"), *by = th_zeros(n_out, "split.y");
    tt_buffer *bdx = th_zeros(n_in, "split.dx"), *bdw = th_zeros(n_w, "split.dw");
    TH_OK(tt_conv2d_forward(be, tt_mem_of(by), tt_mem_of(bx), tt_mem_of(bw), (tt_mem){0}, d,
                            (tt_mem){0}));
    TH_OK(tt_conv2d_backward(be, tt_mem_of(bdx), tt_mem_of(bdw), (tt_mem){0}, tt_mem_of(bdy),
                             tt_mem_of(bx), tt_mem_of(bw), d, (tt_mem){0}));
    th_download(got, by, n_out);
    th_download(got + n_out, bdx, n_in);
    th_download(got + n_out + n_in, bdw, n_w);
    tt_buffer_free(bx), tt_buffer_free(bw), tt_buffer_free(bdy), tt_buffer_free(by);
    tt_buffer_free(bdx), tt_buffer_free(bdw);
    free(x), free(w), free(dy);
    return got;
}

/* A micro-batch whose pixel tiles pass 65535 work-groups (the least a
 * Vulkan device allows along dimension 0) runs in launches of fewer
 * images: with 4-pixel tiles, 5 images of 256x256 go as 4 + 1; forward and
 * input gradient as im2col + GEMM's.  The weight gradient (sums of 327680
 * terms, not split by images) against a double sum, within what float
 * sums of that length lose (im2col + GEMM's error printed beside it). */
static void test_igemm_split_batch(void)
{
    th_setenv("TT_CONV_IGEMM_TILES", "1,4,4,1,1");
    tt_conv2d_desc d = IG(5, 1, 256, 256, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1);
    size_t n_in = 5 * 256 * 256, n_w = 2 * 9, n_out = 2 * n_in;
    float *got = run_three(&d, n_in, n_w, n_out);
    d.algo = TT_CONV_ALGO_IM2COL_GEMM;
    float *want = run_three(&d, n_in, n_w, n_out);
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
    th_setenv("TT_CONV_IGEMM_TILES", NULL);
}

/* Forced algorithms that do not run a shape at all fall back everywhere. */
static void test_fallback_runs(void)
{
    static const conv2d_case fallback[] = {
        {"winograd on k3 s2 -> im2col", D(1, 3, 7, 9, 4, 3, 3, 2, 2, 1, 1, 1, 1, WINOGRAD), 1},
        {"fft on k3 -> im2col", D(1, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, FFT), 1},
    };
    ref_conv2d_check_cases("fallback", fallback, COUNT(fallback), 0);
    tt_conv2d_desc grouped = D(1, 4, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT);
    grouped.groups = 2;
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&grouped, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_IM2COL_GEMM);
}

/* tt_conv2d_input_gradient overwrites: into a NaN-filled dinp, every
 * algorithm (those that add only, after zeros; direct's 3x3 and both
 * winograd4x4 without reading it) equals the double reference's input
 * gradient; a missing dinp is an error. */
static void test_input_gradient_overwrites(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_conv2d_desc d = D(1, 16, 5, 70, 16, 3, 3, 1, 1, 1, 1, 1, 1, AUTO);
    size_t n_in = 16 * 5 * 70, n_w = 16 * 16 * 9, n_out = n_in;
    float *w = malloc(n_w * sizeof *w), *dout = malloc(n_out * sizeof *dout);
    float *got = malloc(n_in * sizeof *got);
    double *want = calloc(n_in, sizeof *want);
    CU_ASSERT_FATAL(w && dout && got && want);
    uint64_t seed = 78;
    th_fill_uniform(w, n_w, -1, 1, &seed);
    th_fill_uniform(dout, n_out, -1, 1, &seed);
    double *wd = th_to_double(w, n_w), *doutd = th_to_double(dout, n_out);
    ref_conv2d_backward(want, NULL, NULL, wd, doutd, &d);
    tt_buffer *bw = th_upload(w, n_w, "overwrite.weight");
    tt_buffer *bdout = th_upload(dout, n_out, "overwrite.dout");
    for (int a = TT_CONV_ALGO_AUTO; a < TT_CONV_ALGO_COUNT; a++) {
        d.algo = (tt_conv_algo)a;
        if (!tt_conv2d_runs_on(be, &d)) {
            th_left_out(tt_conv_algo_name(d.algo), "the backend lacks it");
            continue;
        }
        for (size_t i = 0; i < n_in; i++) got[i] = NAN;
        tt_buffer *dinp = th_upload(got, n_in, "overwrite.dinp");
        TH_OK(tt_conv2d_input_gradient(be, tt_mem_of(dinp), tt_mem_of(bdout), tt_mem_of(bw), &d,
                                       (tt_mem){0}));
        th_download(got, dinp, n_in);
        double e = th_max_rel_error(got, want, n_in, REF_CONV_GRAD_FLOOR);
        printf("\n    %-18s (%s) %.2e", tt_conv_algo_name(d.algo),
               tt_conv_algo_name(tt_conv2d_algo_for(&d, TT_CONV_DIR_BACKWARD_DATA)), e);
        CU_ASSERT(e < REF_CONV_GRAD_TOL);
        tt_buffer_free(dinp);
    }
    tt_status s = tt_conv2d_input_gradient(be, (tt_mem){0}, tt_mem_of(bdout), tt_mem_of(bw), &d,
                                           (tt_mem){0});
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
    tt_buffer_free(bw), tt_buffer_free(bdout);
    free(w), free(dout), free(got), free(want), free(wd), free(doutd);
}

/* A forced algorithm the backend lacks is refused by name, before any
 * launch, pointing to auto; OpenCL has every one. */
static void test_missing_refused(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const tt_conv2d_desc descs[] = {D(1, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT),
                                    D(1, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD),
                                    D(1, 3, 7, 9, 4, 5, 5, 1, 1, 2, 2, 1, 1, FFT),
                                    D(1, 16, 7, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4),
                                    D(1, 16, 7, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED)};
    tt_buffer *x = th_zeros(16 * 7 * 9, "refused.inp");
    tt_buffer *w = th_zeros(16 * 16 * 3 * 3, "refused.weight");
    tt_buffer *y = th_zeros(16 * 7 * 9, "refused.out");
    for (size_t i = 0; i < COUNT(descs); i++) {
        int runs = tt_conv2d_runs_on(be, &descs[i]);
        printf("\n    %-9s %s on %s", tt_conv_algo_name(descs[i].algo), runs ? "runs" : "refused",
               th_backend_name());
        if (th_backend_kind() == TT_BACKEND_OPENCL) CU_ASSERT(runs);
        if (runs) continue;
        tt_status s = tt_conv2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w), (tt_mem){0},
                                        &descs[i], (tt_mem){0});
        const char *m = s ? tt_status_message(s) : "";
        CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_UNSUPPORTED);
        CU_ASSERT(strstr(m, tt_conv_algo_name(descs[i].algo)) && strstr(m, "auto"));
        if (s) printf(": %s", m);
        tt_status_free(s);
    }
    /* AUTO always runs: im2col + GEMM is everywhere */
    tt_conv2d_desc any = descs[0];
    any.algo = TT_CONV_ALGO_AUTO;
    CU_ASSERT(tt_conv2d_runs_on(be, &any));
    tt_buffer_free(x), tt_buffer_free(w), tt_buffer_free(y);
}

/* Each new algorithm against PyTorch (float64 autograd) on one case. */
static void test_torch(void)
{
    static const conv2d_case torch_cases[] = {
        {"torch direct k3 s2 p1 2x3x7x9", D(2, 3, 7, 9, 5, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 1},
        {"torch winograd k3 p1 2x3x7x9", D(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD), 1},
        {"torch fft k5 p2 2x3x7x9", D(2, 3, 7, 9, 5, 5, 5, 1, 1, 2, 2, 1, 1, FFT), 1},
        {"torch winograd4x4 k3 p1 2x16x7x9", D(2, 16, 7, 9, 32, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4),
         1},
        {"torch winograd4x4_fused k3 p1 2x16x5x70",
         D(2, 16, 5, 70, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 1},
    };
    const char *exprs[] = {"F.conv2d(x, w, b, stride=2, padding=1)", "F.conv2d(x, w, b, padding=1)",
                           "F.conv2d(x, w, b, padding=2)", "F.conv2d(x, w, b, padding=1)",
                           "F.conv2d(x, w, b, padding=1)"};
    for (size_t i = 0; i < COUNT(torch_cases); i++) {
        const tt_conv2d_desc *d = &torch_cases[i].desc;
        if (!ref_conv2d_runs_here(torch_cases[i].name, d)) continue;
        ref_conv_op op = ref_conv2d_case_op(&torch_cases[i], 0);
        int oh = tt_conv2d_out_h(d), ow = tt_conv2d_out_w(d);
        int inp[4] = {d->batch, d->in_channels, d->in_h, d->in_w};
        int weight[4] = {d->out_channels, d->in_channels, d->kernel_h, d->kernel_w};
        if (!ref_conv_check_torch(&op, exprs[i], inp, weight,
                                  (int[]){d->batch, d->out_channels, oh, ow}, 90 + i))
            break; /* no torch: said once */
    }
}

/* ---- ResNet's strided convolutions ------------------------------------------ */

/* The convolutions of a ResNet encoder (torchvision): the stem's 7x7
 * stride 2 pad 3 (3 -> 8 here, no bias), a block's first 3x3 stride 2 pad
 * 1, and the shortcut's 1x1 stride 2 (no bias), on odd and even sizes
 * (the last row and column of an even image with a 1x1 stride 2 get no
 * gradient; a 7x7 on an odd one ends in padding).  Algorithm in each is
 * replaced per run. */
static const conv2d_case resnet_cases[] = {
    {"resnet stem k7 s2 p3 11x13 3->8", D(2, 3, 11, 13, 8, 7, 7, 2, 2, 3, 3, 1, 1, AUTO), 0},
    {"resnet stem k7 s2 p3 12x10 3->8", D(2, 3, 12, 10, 8, 7, 7, 2, 2, 3, 3, 1, 1, AUTO), 0},
    {"resnet k3 s2 p1 9x7 4->6", D(2, 4, 9, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, AUTO), 1},
    {"resnet k3 s2 p1 8x10 4->6", D(1, 4, 8, 10, 6, 3, 3, 2, 2, 1, 1, 1, 1, AUTO), 0},
    {"resnet shortcut k1 s2 9x11 4->6", D(2, 4, 9, 11, 6, 1, 1, 2, 2, 0, 0, 1, 1, AUTO), 0},
    {"resnet shortcut k1 s2 8x6 4->6", D(1, 4, 8, 6, 6, 1, 1, 2, 2, 0, 0, 1, 1, AUTO), 0},
};

/* Every algorithm on the ResNet shapes: the ones whose supports() take a
 * stride (im2col_gemm, direct in its scalar and tiled variants,
 * implicit_gemm with this device's tiles and a GPU's) run every direction
 * themselves; winograd and winograd4x4 (3x3 stride 1) and fft (stride 1,
 * 5x5 and up) say they cannot (tt_conv_algo_runs 0 in every direction)
 * and, forced, fall back to im2col_gemm; auto runs and its results are checked the same way.
 * Forward, input and weight gradient against the double reference and
 * finite differences (ref_conv_check_case). */
static void test_resnet_strided(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    enum { CASES = COUNT(resnet_cases) };
    conv2d_case cases[CASES];
    /* who says they run the shapes */
    int refusals = 0;
    for (int a = TT_CONV_ALGO_IM2COL_GEMM; a < TT_CONV_ALGO_COUNT; a++) {
        int strided = a != TT_CONV_ALGO_WINOGRAD && a != TT_CONV_ALGO_FFT &&
                      a != TT_CONV_ALGO_WINOGRAD4 && a != TT_CONV_ALGO_WINOGRAD4_FUSED;
        for (size_t i = 0; i < CASES; i++) {
            tt_conv_shape shape;
            TH_OK(tt_conv2d_shape(&resnet_cases[i].desc, &shape));
            for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
                int runs = tt_conv_algo_runs(tt_conv2d_algo_impl((tt_conv_algo)a), &shape,
                                             (tt_conv_dir)dir);
                CU_ASSERT_EQUAL(runs, strided);
                refusals += !runs;
            }
        }
    }
    printf("\n    winograd, fft and both winograd4x4 refuse all %d direction-shapes of the %d "
           "ResNet cases; im2col_gemm, direct and implicit_gemm take them",
           refusals, (int)CASES);
    CU_ASSERT_EQUAL(refusals, 4 * CASES * TT_CONV_DIR_COUNT);

    static const struct {
        tt_conv_algo algo;
        const char *variant, *igemm_tiles;
        int runs; /* directions it runs itself (check_cases) */
    } runs[] = {
        {TT_CONV_ALGO_IM2COL_GEMM, NULL, NULL, ALL_DIRS},
        {TT_CONV_ALGO_DIRECT, "scalar", NULL, ALL_DIRS},
        {TT_CONV_ALGO_DIRECT, "tiled", NULL, ALL_DIRS},
        {TT_CONV_ALGO_IMPLICIT_GEMM, NULL, NULL, ALL_DIRS},
        {TT_CONV_ALGO_IMPLICIT_GEMM, NULL, "4,4,16,16,16", ALL_DIRS},
        {TT_CONV_ALGO_WINOGRAD, NULL, NULL, 0},
        {TT_CONV_ALGO_FFT, NULL, NULL, 0},
        {TT_CONV_ALGO_WINOGRAD4, NULL, NULL, 0},
    };
    for (size_t r = 0; r < COUNT(runs); r++) {
        char label[96];
        snprintf(label, sizeof label, "resnet %s%s%s%s%s", tt_conv_algo_name(runs[r].algo),
                 runs[r].variant ? " " : "", runs[r].variant ? runs[r].variant : "",
                 runs[r].igemm_tiles ? " tiles " : "",
                 runs[r].igemm_tiles ? runs[r].igemm_tiles : "");
        th_setenv("TT_CONV_DIRECT_VARIANT", runs[r].variant);
        th_setenv("TT_CONV_IGEMM_TILES", runs[r].igemm_tiles);
        for (size_t i = 0; i < CASES; i++) {
            cases[i] = resnet_cases[i];
            cases[i].desc.algo = runs[r].algo;
        }
        ref_conv2d_check_cases(label, cases, CASES, runs[r].runs);
    }
    th_setenv("TT_CONV_DIRECT_VARIANT", NULL);
    th_setenv("TT_CONV_IGEMM_TILES", NULL);

    /* auto: some candidate runs each shape on every backend, and whatever
     * the autotuner picks gives the reference's results.  A first call
     * times the candidates (allocating their scratch); after it, a
     * workspace of tt_conv2d_workspace_bytes_on serves every direction
     * without an allocation (ref_conv_check_case checks that). */
    ref_conv_errors worst = {0};
    for (size_t i = 0; i < CASES; i++) {
        const tt_conv2d_desc *d = &resnet_cases[i].desc;
        CU_ASSERT(tt_conv2d_runs_on(be, d));
        size_t n_in = (size_t)d->batch * d->in_channels * d->in_h * d->in_w;
        size_t n_w = (size_t)d->out_channels * d->in_channels * d->kernel_h * d->kernel_w;
        size_t n_out = (size_t)d->batch * d->out_channels * tt_conv2d_out_h(d) * tt_conv2d_out_w(d);
        free(run_three(d, n_in, n_w, n_out)); /* the autotuner's first call */
        ref_conv_op op = ref_conv2d_case_op(&resnet_cases[i], 1);
        op.workspace_bytes = tt_conv2d_workspace_bytes_on(be, d);
        op.pass_workspace = op.workspace_bytes > 0;
        ref_conv_errors e = ref_conv_check_case(&op, 3000 + i);
        worst.forward = fmax(worst.forward, e.forward);
        worst.dinp = fmax(worst.dinp, e.dinp);
        worst.dweight = fmax(worst.dweight, e.dweight);
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            tt_conv_algo picked = tt_conv2d_algo_on(be, &resnet_cases[i].desc, (tt_conv_dir)dir);
            printf("%s%s", dir ? ", " : "\n      auto picked ", tt_conv_algo_name(picked));
            CU_ASSERT(picked != TT_CONV_ALGO_WINOGRAD && picked != TT_CONV_ALGO_FFT);
        }
    }
    printf("\n    resnet auto largest: forward %.2e  dinp %.2e  dweight %.2e\n", worst.forward,
           worst.dinp, worst.dweight);

    /* the stem against PyTorch */
    const conv2d_case *stem = &resnet_cases[0];
    if (ref_conv2d_runs_here(stem->name, &stem->desc)) {
        ref_conv_op op = ref_conv2d_case_op(stem, 0);
        const tt_conv2d_desc *d = &stem->desc;
        ref_conv_check_torch(&op, "F.conv2d(x, w, None, stride=2, padding=3)",
                             (int[]){d->batch, d->in_channels, d->in_h, d->in_w},
                             (int[]){d->out_channels, d->in_channels, 7, 7},
                             (int[]){d->batch, d->out_channels, tt_conv2d_out_h(d),
                                     tt_conv2d_out_w(d)},
                             95);
    }
}

/* The same convolutions at sizes where every algorithm's work spans
 * several tiles, channel blocks and work-groups (the stem's 16 output
 * channels, 16 -> 24 after it), too large for finite differences: forward,
 * input and weight gradient of each algorithm (run_three's data) against
 * the double references (ref_conv2d_forward, ref_conv2d_backward).  Float
 * sums of up to 874 products of values in [-1, 1] (the stem's weight
 * gradient: 2 x 19 x 23 pixels), relative with a floor of 1: measured up to
 * 8e-6 on PoCL and lavapipe, a misplaced tap or tile costs O(1). */
#define RESNET_LARGE_TOL 5e-5

static void test_resnet_strided_large(void)
{
    static const conv2d_case shapes[] = {
        {"stem k7 s2 p3 37x45 3->16", D(2, 3, 37, 45, 16, 7, 7, 2, 2, 3, 3, 1, 1, AUTO), 0},
        /* 72 output channels: a CPU's implicit-GEMM work-group of 64 rows, then 8 */
        {"stem k7 s2 p3 21x19 3->72", D(2, 3, 21, 19, 72, 7, 7, 2, 2, 3, 3, 1, 1, AUTO), 0},
        {"k3 s2 p1 29x34 16->24", D(1, 16, 29, 34, 24, 3, 3, 2, 2, 1, 1, 1, 1, AUTO), 0},
        {"shortcut k1 s2 29x34 16->24", D(1, 16, 29, 34, 24, 1, 1, 2, 2, 0, 0, 1, 1, AUTO), 0},
    };
    static const struct {
        tt_conv_algo algo;
        const char *variant, *igemm_tiles;
    } runs[] = {
        {TT_CONV_ALGO_IM2COL_GEMM, NULL, NULL},
        {TT_CONV_ALGO_DIRECT, "scalar", NULL},
        {TT_CONV_ALGO_DIRECT, "tiled", NULL},
        {TT_CONV_ALGO_IMPLICIT_GEMM, NULL, NULL},
        {TT_CONV_ALGO_IMPLICIT_GEMM, NULL, "4,4,16,16,16"},
        {TT_CONV_ALGO_AUTO, NULL, NULL},
    };
    for (size_t i = 0; i < COUNT(shapes); i++) {
        tt_conv2d_desc d = shapes[i].desc;
        size_t n_in = (size_t)d.batch * d.in_channels * d.in_h * d.in_w;
        size_t n_w = (size_t)d.out_channels * d.in_channels * d.kernel_h * d.kernel_w;
        size_t n_out =
            (size_t)d.batch * d.out_channels * tt_conv2d_out_h(&d) * tt_conv2d_out_w(&d);
        /* run_three's data */
        uint64_t seed = 77;
        float *x = th_random_floats(n_in, -1, 1, &seed), *w = th_random_floats(n_w, -1, 1, &seed);
        float *dy = th_random_floats(n_out, -1, 1, &seed);
        double *xd = th_to_double(x, n_in), *wd = th_to_double(w, n_w), *dyd = th_to_double(dy, n_out);
        double *want = calloc(n_out + n_in + n_w, sizeof *want);
        CU_ASSERT_FATAL(want != NULL);
        ref_conv2d_forward(want, xd, wd, NULL, &d);
        ref_conv2d_backward(want + n_out, want + n_out + n_in, xd, wd, dyd, &d);
        printf("\n    %s -> %dx%d:", shapes[i].name, tt_conv2d_out_h(&d), tt_conv2d_out_w(&d));
        for (size_t r = 0; r < COUNT(runs); r++) {
            th_setenv("TT_CONV_DIRECT_VARIANT", runs[r].variant);
            th_setenv("TT_CONV_IGEMM_TILES", runs[r].igemm_tiles);
            d.algo = runs[r].algo;
            float *got = run_three(&d, n_in, n_w, n_out);
            double e[3] = {th_max_rel_error(got, want, n_out, 1.0),
                           th_max_rel_error(got + n_out, want + n_out, n_in, 1.0),
                           th_max_rel_error(got + n_out + n_in, want + n_out + n_in, n_w, 1.0)};
            printf("\n      %-13s%-7s forward %.2e  dinp %.2e  dweight %.2e",
                   tt_conv_algo_name(runs[r].algo),
                   runs[r].variant ? runs[r].variant : runs[r].igemm_tiles ? "gpu" : "", e[0],
                   e[1], e[2]);
            for (int k = 0; k < 3; k++) CU_ASSERT(e[k] < RESNET_LARGE_TOL);
            free(got);
        }
        th_setenv("TT_CONV_DIRECT_VARIANT", NULL);
        th_setenv("TT_CONV_IGEMM_TILES", NULL);
        free(x), free(w), free(dy), free(xd), free(wd), free(dyd), free(want);
    }
    printf("\n");
}

/* ---- conv_transpose2d through conv2d's rows -------------------------------- */

typedef struct convt_case {
    const char *name;
    tt_conv_transpose2d_desc desc;
    int with_bias;
} convt_case;

/* N, Cin, H, W, Cout, kH, kW, sH, sW, pH, pW, opH, opW, algorithm */
#define T(n, ci, h, w, co, kh, kw, sh, sw, ph, pw, oph, opw, a) \
    {n, ci, h, w, co, kh, kw, sh, sw, ph, pw, oph, opw, 1, 1, 1, TT_CONV_ALGO_##a}

static const convt_case convt_cases[] = {
    {"convT direct k2 s2 (UNet) 4x3 5->3", T(2, 5, 4, 3, 3, 2, 2, 2, 2, 0, 0, 0, 0, DIRECT), 1},
    /* tiling kernels (kernel = stride): ragged channel blocks, 3x3, 2x3, no bias */
    {"convT direct tiles k2 s2 5x7 9->6", T(2, 9, 5, 7, 6, 2, 2, 2, 2, 0, 0, 0, 0, DIRECT), 1},
    {"convT direct tiles k2 s2 3x19 5->3", T(2, 5, 3, 19, 3, 2, 2, 2, 2, 0, 0, 0, 0, DIRECT), 1},
    {"convT direct tiles k3 s3 3x4 5->7", T(1, 5, 3, 4, 7, 3, 3, 3, 3, 0, 0, 0, 0, DIRECT), 0},
    {"convT direct tiles k2x3 s2x3 1x1 3->5", T(3, 3, 1, 1, 5, 2, 3, 2, 3, 0, 0, 0, 0, DIRECT), 1},
    /* rows of 16 and more (the 16-lane forward where the device has it):
     * one vector, a work-item and a part (70 = 64 + 6), kernel 3x2 */
    {"convT direct tiles k2 s2 2x16 4->3", T(2, 4, 2, 16, 3, 2, 2, 2, 2, 0, 0, 0, 0, DIRECT), 1},
    {"convT direct tiles k2 s2 3x70 6->9", T(1, 6, 3, 70, 9, 2, 2, 2, 2, 0, 0, 0, 0, DIRECT), 0},
    {"convT direct tiles k3x2 s3x2 2x21 3->2",
     T(2, 3, 2, 21, 2, 3, 2, 3, 2, 0, 0, 0, 0, DIRECT), 1},
    /* output padding: not a tiling, through conv2d's rows */
    {"convT direct k2 s2 op1 3x4 3->4", T(1, 3, 3, 4, 4, 2, 2, 2, 2, 0, 0, 1, 1, DIRECT), 1},
    {"convT direct k3 s2 p1 op1 4x5", T(1, 3, 4, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 0},
    {"convT winograd k3 s1 p1 5x7 3->4", T(1, 3, 5, 7, 4, 3, 3, 1, 1, 1, 1, 0, 0, WINOGRAD), 1},
    {"convT fft k5 s1 p2 5x6 3->2", T(2, 3, 5, 6, 2, 5, 5, 1, 1, 2, 2, 0, 0, FFT), 1},
    {"convT igemm k2 s2 (UNet) 4x3 5->3", T(2, 5, 4, 3, 3, 2, 2, 2, 2, 0, 0, 0, 0, IMPLICIT_GEMM), 1},
    {"convT igemm k3 s2 p1 op1 4x5", T(1, 3, 4, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, IMPLICIT_GEMM), 0},
    {"convT igemm k3 s2 d2 g2 op1 3x4",
     {1, 4, 3, 4, 6, 3, 3, 2, 2, 1, 1, 1, 0, 2, 2, 2, TT_CONV_ALGO_IMPLICIT_GEMM}, 1},
};

static void ref_convt_forward(double *out, const double *inp, const double *weight,
                              const double *bias, const void *desc)
{
    ref_conv_transpose2d_forward(out, inp, weight, bias, desc);
}

static tt_status dev_convt_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight,
                                   tt_mem bias, const void *desc, tt_mem ws)
{
    return tt_conv_transpose2d_forward(be, out, inp, weight, bias, desc, ws);
}

static tt_status dev_convt_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                                    tt_mem dout, tt_mem inp, tt_mem weight, const void *desc,
                                    tt_mem ws)
{
    return tt_conv_transpose2d_backward(be, dinp, dweight, dbias, dout, inp, weight, desc, ws);
}

/* Every case, with DIRECT's kernels for this device (8-wide on a CPU, the
 * 16-lane forward on AVX-512), with the 8-wide ones alone, then with the
 * scalar ones. */
static void test_conv_transpose(void)
{
    ref_conv_errors worst = {0};
    for (size_t k = 0; k < 3 * COUNT(convt_cases); k++) {
        size_t i = k % COUNT(convt_cases);
        if (k == COUNT(convt_cases)) th_setenv("TT_CONV_DIRECT_W16", "0");
        if (k == 2 * COUNT(convt_cases)) th_setenv("TT_CONV_DIRECT_VARIANT", "scalar");
        const tt_conv_transpose2d_desc *d = &convt_cases[i].desc;
        TH_OK(tt_conv_transpose2d_check(d));
        int oh = tt_conv_transpose2d_out_h(d), ow = tt_conv_transpose2d_out_w(d);
        CU_ASSERT_EQUAL(oh, ref_conv_transpose2d_out_size(d->in_h, d->kernel_h, d->stride_h,
                                                          d->pad_h, d->output_pad_h,
                                                          d->dilation_h ? d->dilation_h : 1));
        if (!ref_convt_runs_here(convt_cases[i].name, d)) continue;
        size_t ws = tt_conv_transpose2d_workspace_bytes(d);
        ref_conv_op op = {
            .name = convt_cases[i].name, .desc = d,
            .inp_count = (size_t)d->batch * d->in_channels * d->in_h * d->in_w,
            .weight_count = (size_t)d->in_channels * d->out_channels * d->kernel_h * d->kernel_w,
            .bias_count = (size_t)d->out_channels,
            .out_count = (size_t)d->batch * d->out_channels * oh * ow,
            .with_bias = convt_cases[i].with_bias, .pass_workspace = (int)(i % 2) && ws > 0,
            .workspace_bytes = ws, .ref_forward = ref_convt_forward,
            .forward = dev_convt_forward, .backward = dev_convt_backward};
        ref_conv_errors e = ref_conv_check_case(&op, 3000 + i);
        worst.forward = fmax(worst.forward, e.forward);
        worst.dinp = fmax(worst.dinp, e.dinp);
        worst.dweight = fmax(worst.dweight, e.dweight);
    }
    th_setenv("TT_CONV_DIRECT_VARIANT", NULL);
    th_setenv("TT_CONV_DIRECT_W16", NULL);
    printf("\n    conv_transpose2d largest: forward %.2e  dinp %.2e  dweight %.2e\n",
           worst.forward, worst.dinp, worst.dweight);
}

/* ---- timing of the UNet's 16->16 3x3 conv (TT_BENCH_CONV=1) ------------- */

/* Times forward, backward-data and backward-weight of `d` with every
 * algorithm (TT_BENCH_CONV_ALGOS="direct,fft" picks some). */
static void bench_shape(tt_backend *be, tt_conv2d_desc d)
{
    size_t in_n = (size_t)d.batch * d.in_channels * d.in_h * d.in_w;
    size_t out_n = (size_t)d.batch * d.out_channels * tt_conv2d_out_h(&d) * tt_conv2d_out_w(&d);
    size_t w_n = (size_t)d.out_channels * d.in_channels * d.kernel_h * d.kernel_w;
    tt_buffer *x = th_zeros(in_n, "bench.x"), *y = th_zeros(out_n, "bench.y");
    tt_buffer *dx = th_zeros(in_n, "bench.dx"), *w = th_zeros(w_n, "bench.w");
    tt_buffer *dw = th_zeros(w_n, "bench.dw"), *b = th_zeros((size_t)d.out_channels, "bench.b");
    const char *reps_env = getenv("TT_BENCH_REPS");
    int reps = reps_env && atoi(reps_env) > 1 ? atoi(reps_env) : 3;
    printf("\n    %s, N=%d %d->%d %dx%d p%d %dx%d (ms, best of %d after a warm-up; the algorithm "
           "that ran in brackets)",
           be->device.name, d.batch, d.in_channels, d.out_channels, d.kernel_h, d.kernel_w,
           d.pad_h, d.in_h, d.in_w, reps - 1);
    const char *only = getenv("TT_BENCH_CONV_ALGOS");
    for (int a = TT_CONV_ALGO_IM2COL_GEMM; a < TT_CONV_ALGO_COUNT; a++) {
        d.algo = (tt_conv_algo)a;
        if (only && !strstr(only, tt_conv_algo_name(d.algo))) continue;
        if (!ref_conv2d_runs_here(tt_conv_algo_name(d.algo), &d)) continue;
        tt_buffer *ws = NULL;
        if (tt_conv2d_workspace_bytes(&d))
            TH_OK(tt_buffer_alloc(be, tt_conv2d_workspace_bytes(&d), TT_MEM_OTHER, "bench.ws", &ws));
        tt_mem wsm = ws ? tt_mem_of(ws) : (tt_mem){0};
        double best[3] = {1e30, 1e30, 1e30};
        for (int rep = 0; rep < reps; rep++) {
            for (int dir = 0; dir < 3; dir++) {
                double t0 = ref_conv_now_ms();
                if (dir == 0)
                    TH_OK(tt_conv2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w),
                                            tt_mem_of(b), &d, wsm));
                else
                    TH_OK(tt_conv2d_backward(be, dir == 1 ? tt_mem_of(dx) : (tt_mem){0},
                                             dir == 2 ? tt_mem_of(dw) : (tt_mem){0}, (tt_mem){0},
                                             tt_mem_of(y), tt_mem_of(x), tt_mem_of(w), &d, wsm));
                TH_OK(tt_finish(be));
                double t = ref_conv_now_ms() - t0;
                if (rep > 0 && t < best[dir]) best[dir] = t;
            }
        }
        printf("\n    %-12s forward %8.1f (%s)  backward-data %8.1f (%s)  backward-weight %8.1f (%s)",
               tt_conv_algo_name(d.algo), best[0],
               tt_conv_algo_name(tt_conv2d_algo_for(&d, TT_CONV_DIR_FORWARD)), best[1],
               tt_conv_algo_name(tt_conv2d_algo_for(&d, TT_CONV_DIR_BACKWARD_DATA)), best[2],
               tt_conv_algo_name(tt_conv2d_algo_for(&d, TT_CONV_DIR_BACKWARD_WEIGHT)));
        tt_buffer_free(ws);
    }
    printf("\n");
    tt_buffer_free(x), tt_buffer_free(y), tt_buffer_free(dx), tt_buffer_free(w);
    tt_buffer_free(dw), tt_buffer_free(b);
}

static void test_bench(void)
{
    const char *env = getenv("TT_BENCH_CONV");
    if (!env || atoi(env) <= 0) {
        printf("\n    skipped: set TT_BENCH_CONV=1 (or =N for micro-batch N) to time each "
               "algorithm on the UNet's 16->16 3x3 conv at 256x256, and a 7x7 one");
        return;
    }
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    int batch = atoi(env) > 1 ? atoi(env) : 4;
    /* TT_BENCH_CONV_HW=S and TT_BENCH_CONV_C=C: C -> C channels at S x S
     * instead (the UNet's deeper levels: 32 at 128, 64 at 64, 128 at 32) */
    const char *hw_env = getenv("TT_BENCH_CONV_HW"), *c_env = getenv("TT_BENCH_CONV_C");
    int hw = hw_env && atoi(hw_env) > 0 ? atoi(hw_env) : 256;
    int c = c_env && atoi(c_env) > 0 ? atoi(c_env) : 16;
    bench_shape(be, (tt_conv2d_desc)D(batch, c, hw, hw, c, 3, 3, 1, 1, 1, 1, 1, 1, AUTO));
    bench_shape(be, (tt_conv2d_desc)D(1, 16, 256, 256, 16, 7, 7, 1, 1, 3, 3, 1, 1, AUTO));
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"direct: forward and gradients", test_direct},
        {"direct 3x3 with 16 columns a work-item, and 8", test_direct_w16},
        {"direct with local-memory tiles", test_direct_tiled},
        {"fft: forward and gradients", test_fft},
        {"implicit_gemm: forward and gradients, every tile", test_igemm},
        {"implicit_gemm: a large micro-batch in several launches", test_igemm_split_batch},
        {"forced algorithms fall back on shapes they do not run", test_fallback_runs},
        {"the input gradient overwrites, through every algorithm",
         test_input_gradient_overwrites},
        {"an algorithm the backend lacks is refused by name", test_missing_refused},
        {"cross-check against PyTorch", test_torch},
        {"ResNet's strided convolutions through every algorithm", test_resnet_strided},
        {"the same at sizes of several tiles and blocks", test_resnet_strided_large},
        {"conv_transpose2d through every algorithm", test_conv_transpose},
        {"timing per algorithm (TT_BENCH_CONV=1)", test_bench},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_algos", tests);
}

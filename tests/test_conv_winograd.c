/*
 * The Winograd convolutions against the double reference: F(2x2, 3x3)
 * (`winograd`), F(4x4, 3x3) with its transforms apart (`winograd4x4`, in
 * chunks of tiles, its weight gradient stored and folded) and in one
 * kernel (`winograd4x4_fused`, with its adding forward); finite-difference
 * gradients, backward adds (ref_conv_check_case), and the shapes each one
 * refuses.  Apart from test_conv_algos.c, so that the two suites' program
 * compilations run side by side; PyTorch checks one case of each there.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "ops/conv2d.h"
#include "ref_conv.h"
#include "ref_conv_cases.h"
#include "ref_conv_check.h"

static const conv2d_case winograd_cases[] = {
    {"winograd p1 7x9 3->5", D(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD), 1},
    {"winograd p0 8x5 5->6", D(1, 5, 8, 5, 6, 3, 3, 1, 1, 0, 0, 1, 1, WINOGRAD), 0},
    {"winograd p2 5x4 3->2", D(1, 3, 5, 4, 2, 3, 3, 1, 1, 2, 2, 1, 1, WINOGRAD), 1},
    {"winograd p(1,0) 6x7 4->3", D(2, 4, 6, 7, 3, 3, 3, 1, 1, 1, 0, 1, 1, WINOGRAD), 1},
    {"winograd 1x1 image p1", D(1, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD), 1},
};

static void test_winograd(void)
{
    ref_conv2d_check_cases("winograd", winograd_cases, COUNT(winograd_cases), FWD_AND_DATA);
    /* pad 3 > 2: backward data cannot be the flipped forward */
    tt_conv2d_desc p3 = D(1, 3, 5, 5, 2, 3, 3, 1, 1, 3, 3, 1, 1, WINOGRAD);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&p3, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_WINOGRAD);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&p3, TT_CONV_DIR_BACKWARD_DATA), TT_CONV_ALGO_IM2COL_GEMM);
    tt_conv2d_desc s2 = D(1, 3, 5, 5, 2, 3, 3, 2, 2, 1, 1, 1, 1, WINOGRAD);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&s2, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_IM2COL_GEMM);
}

/* F(4x4, 3x3): tiles past the plane's edge (7x9, 8x5 -> 6x3), padding 0,
 * 1, 2 and (1, 0), a 1x1 image; channels in 16 lanes and in 32; rows of 1,
 * 3 and 5 tiles (the output's groups of 4 tiles: part of one, one and a
 * part, columns past 16), the weight gradient stored and folded; then in
 * chunks of 8 tiles' rows (several a batch, the last one short), and every
 * case's weight gradient in one pass (winograd4x4_sum), in chunks of one
 * row too. */
static const conv2d_case winograd4_cases[] = {
    {"winograd4x4 p1 7x9 16->32", D(2, 16, 7, 9, 32, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4), 1},
    {"winograd4x4 p0 8x5 32->16", D(1, 32, 8, 5, 16, 3, 3, 1, 1, 0, 0, 1, 1, WINOGRAD4), 0},
    {"winograd4x4 p2 5x4 16->16", D(1, 16, 5, 4, 16, 3, 3, 1, 1, 2, 2, 1, 1, WINOGRAD4), 1},
    {"winograd4x4 p(1,0) 6x11 32->32", D(2, 32, 6, 11, 32, 3, 3, 1, 1, 1, 0, 1, 1, WINOGRAD4), 1},
    {"winograd4x4 1x1 image p1", D(1, 16, 1, 1, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4), 1},
    {"winograd4x4 p1 13x17 16->16", D(2, 16, 13, 17, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4), 0},
};

static void test_winograd4(void)
{
    ref_conv2d_check_cases("winograd4x4", winograd4_cases, COUNT(winograd4_cases), ALL_DIRS);
    conv2d_case chunked[3]; /* the last three: several rows a batch */
    for (size_t i = 0; i < COUNT(chunked); i++) {
        chunked[i] = winograd4_cases[3 + i];
        chunked[i].desc.blocks.w4_chunk_tiles = 8;
    }
    ref_conv2d_check_cases("winograd4x4 (chunks of 8 tiles' rows)", chunked, COUNT(chunked),
                           ALL_DIRS);
    /* the weight gradient in one pass: the row winograd4x4_sum */
    conv2d_case sums[COUNT(winograd4_cases)];
    for (size_t i = 0; i < COUNT(sums); i++) {
        sums[i] = winograd4_cases[i];
        sums[i].desc.algo = TT_CONV_ALGO_WINOGRAD4_SUM;
    }
    conv2d_case one_row = sums[5];
    one_row.desc.blocks.w4_chunk_tiles = 1;
    ref_conv2d_check_cases("winograd4x4_sum (chunks of one row)", &one_row, 1,
                           1 << TT_CONV_DIR_BACKWARD_WEIGHT);
    ref_conv2d_check_cases("winograd4x4_sum", sums, COUNT(sums), 1 << TT_CONV_DIR_BACKWARD_WEIGHT);
    /* pad 3 > 2: backward data cannot be the flipped forward; channels
     * not a multiple of 16; stride 2 */
    tt_conv2d_desc p3 = D(1, 16, 5, 5, 16, 3, 3, 1, 1, 3, 3, 1, 1, WINOGRAD4);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&p3, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_WINOGRAD4);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&p3, TT_CONV_DIR_BACKWARD_DATA), TT_CONV_ALGO_IM2COL_GEMM);
    tt_conv2d_desc c8 = D(1, 16, 5, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&c8, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_IM2COL_GEMM);
    tt_conv2d_desc s2 = D(1, 16, 5, 5, 16, 3, 3, 2, 2, 1, 1, 1, 1, WINOGRAD4);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&s2, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_IM2COL_GEMM);
}

/* F(4x4, 3x3) fused, tiles in the lanes: a plane smaller than one
 * work-item's 16 tiles and a last row of tiles past it (5x7); a row of
 * one whole work-item and a part one (66 wide, the column past the first
 * 64 entering on the left of the second); 32 output channels (two blocks
 * of M) and, in the input gradient, 48 (three); in the weight gradient,
 * work-items whose tile rows run from one image into the next and a last
 * one with fewer (34x9, two images: 18 rows, 2 a work-item), and the
 * largest dU a work-item holds (32->32); forward only where the input
 * gradient's output channels, 3, are not a multiple of 16. */
static const conv2d_case winograd4_fused_cases[] = {
    {"fused p1 5x7 16->16", D(2, 16, 5, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 1},
    {"fused p1 3x66 16->16", D(1, 16, 3, 66, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 1},
    {"fused p1 5x5 16->32", D(1, 16, 5, 5, 32, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 1},
    {"fused p1 6x5 48->16", D(1, 48, 6, 5, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 0},
    {"fused p1 34x9 16->16", D(2, 16, 34, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 0},
    {"fused p1 6x6 32->32", D(1, 32, 6, 6, 32, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 0},
};
static const conv2d_case winograd4_fused_forward_cases[] = {
    {"fused p1 6x9 3->16", D(2, 3, 6, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 1},
};

/* out += conv: the concatenation's second half (tt_conv2d_forward_add)
 * against what was there plus the double reference. */
static void check_fused_forward_add(void)
{
    tt_conv2d_desc d = D(1, 16, 5, 70, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED);
    if (!ref_conv2d_runs_here("fused forward_add", &d)) return;
    size_t n_in = 16 * 5 * 70, n_w = 16 * 16 * 9, n_out = n_in;
    float *x = malloc(n_in * sizeof *x), *w = malloc(n_w * sizeof *w);
    float *base = malloc(n_out * sizeof *base), *got = malloc(n_out * sizeof *got);
    double *want = malloc(n_out * sizeof *want);
    CU_ASSERT_FATAL(x && w && base && got && want);
    uint64_t seed = 77;
    th_fill_uniform(x, n_in, -1, 1, &seed);
    th_fill_uniform(w, n_w, -1, 1, &seed);
    th_fill_uniform(base, n_out, -1, 1, &seed);
    double *xd = th_to_double(x, n_in), *wd = th_to_double(w, n_w);
    ref_conv2d_forward(want, xd, wd, NULL, &d);
    for (size_t i = 0; i < n_out; i++) want[i] += base[i];
    tt_buffer *bx = th_upload(x, n_in, "fused.inp"), *bw = th_upload(w, n_w, "fused.weight");
    tt_buffer *by = th_upload(base, n_out, "fused.out");
    TH_OK(tt_conv2d_forward_add(th_backend(), tt_mem_of(by), tt_mem_of(bx), tt_mem_of(bw), &d,
                                (tt_mem){0}));
    th_download(got, by, n_out);
    double e = th_max_rel_error(got, want, n_out, REF_CONV_FWD_FLOOR);
    printf("\n    fused forward_add (5x70 16->16)  %.2e", e);
    CU_ASSERT(e < REF_CONV_FWD_TOL);
    tt_buffer_free(bx), tt_buffer_free(bw), tt_buffer_free(by);
    free(x), free(w), free(base), free(got), free(want), free(xd), free(wd);
}

static void test_winograd4_fused(void)
{
    ref_conv2d_check_cases("winograd4x4_fused",
                           winograd4_fused_cases, COUNT(winograd4_fused_cases), ALL_DIRS);
    ref_conv2d_check_cases("winograd4x4_fused (forward only)", winograd4_fused_forward_cases,
                COUNT(winograd4_fused_forward_cases), 1);
    check_fused_forward_add();
    /* padding 0 or 2; input channels past 64 (forward) and output channels
     * past 64 (input gradient); output channels not a multiple of 16 */
    static const struct {
        tt_conv2d_desc d;
        int fwd, data;
    } refused[] = {
        {D(1, 16, 8, 8, 16, 3, 3, 1, 1, 0, 0, 1, 1, WINOGRAD4_FUSED), 0, 0},
        {D(1, 16, 8, 8, 16, 3, 3, 1, 1, 2, 2, 1, 1, WINOGRAD4_FUSED), 0, 0},
        {D(1, 80, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 0, 1},
        {D(1, 16, 8, 8, 80, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 1, 0},
        {D(1, 16, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 0, 1},
        {D(1, 16, 8, 8, 16, 3, 3, 2, 2, 1, 1, 1, 1, WINOGRAD4_FUSED), 0, 0},
    };
    for (size_t i = 0; i < COUNT(refused); i++) {
        tt_conv_algo f = tt_conv2d_algo_for(&refused[i].d, TT_CONV_DIR_FORWARD);
        tt_conv_algo b = tt_conv2d_algo_for(&refused[i].d, TT_CONV_DIR_BACKWARD_DATA);
        tt_conv_algo w = tt_conv2d_algo_for(&refused[i].d, TT_CONV_DIR_BACKWARD_WEIGHT);
        CU_ASSERT_EQUAL(f == TT_CONV_ALGO_WINOGRAD4_FUSED, refused[i].fwd);
        CU_ASSERT_EQUAL(b == TT_CONV_ALGO_WINOGRAD4_FUSED, refused[i].data);
        CU_ASSERT_EQUAL(w, TT_CONV_ALGO_IM2COL_GEMM);
    }
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"winograd: forward, backward data; weight falls back", test_winograd},
        {"winograd4x4: F(4x4, 3x3), every direction, in chunks of tiles", test_winograd4},
        {"winograd4x4_fused: F(4x4, 3x3) in one kernel, tiles in lanes", test_winograd4_fused},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_winograd", tests, TH_EVERY);
}

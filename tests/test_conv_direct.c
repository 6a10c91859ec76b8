/*
 * The direct convolutions against the double reference on every shape they
 * run: DIRECT (one column a work-item), DIRECT_W8 (8 columns), DIRECT_TILED
 * (local-memory tiles); DIRECT_W16's 16 columns over bands of rows and of
 * images; odd sizes, 1x1 images, batch 1 and 2,
 * channel counts not multiples of 4; finite-difference gradients of input,
 * weight and bias, backward adds (ref_conv_check_case); each in bands of
 * rows, as a GPU's cap on one launch's work cuts them.  Apart from
 * test_conv_algos.c, so that the suites' program compilations run side by
 * side; PyTorch and ResNet's shapes check it there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/conv2d.h"
#include "ref_conv_cases.h"

static const conv2d_case direct_cases[] = {
    {"direct k3 s1 p1 7x9 3->5", D(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 s2 p1 9x7 6->9", D(1, 6, 9, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 0},
    {"direct k1 s1 7x9 5->3", D(2, 5, 7, 9, 3, 1, 1, 1, 1, 0, 0, 1, 1, DIRECT), 1},
    {"direct k5 s2 p0 7x9 3->5", D(1, 3, 7, 9, 5, 5, 5, 2, 2, 0, 0, 1, 1, DIRECT), 1},
    {"direct k7 s1 p3 5x6 2->3", D(1, 2, 5, 6, 3, 7, 7, 1, 1, 3, 3, 1, 1, DIRECT), 1},
    {"direct k3x1 s(1,2) p(1,0)", D(1, 3, 7, 9, 5, 3, 1, 1, 2, 1, 0, 1, 1, DIRECT), 1},
    {"direct k3 dilation 2 p2", D(1, 3, 7, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2, DIRECT), 1},
    {"direct 1x1 image k3 p1", D(2, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    /* channel blocks: several, the last one short */
    {"direct k3 p1 11x17 10->9", D(2, 10, 11, 17, 9, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    /* whole vectors of 8 columns */
    {"direct k3 p1 7x24 5->6", D(2, 5, 7, 24, 6, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    /* a block of 16 input channels and one more, a last vector mostly
     * past the edge */
    {"direct k3 p1 3x33 17->2", D(1, 17, 3, 33, 2, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    /* one row of one vector; two rows of two */
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
 * 5 columns); the stride-2 input gradient's kernel (even planes); the
 * 7x7 stride-2 forward. */
static const conv2d_case w16_all[] = {
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
    {"direct k3 p1 5x17 4->5", D(2, 4, 5, 17, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 p1 6x30 3->6", D(1, 3, 6, 30, 6, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 0},
    {"direct k3 p1 9x21 6->5", D(2, 6, 9, 21, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    /* two of the weight gradient's 6-row steps and a row left */
    {"direct k3 p1 13x24 4->5", D(1, 4, 13, 24, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 0},
    /* the stride-2 input gradient's own kernel (even planes; 8x32 above),
     * outputs 8 wide; input channels past the last block of 4 */
    {"direct k3 s2 p1 16x16 9->2", D(2, 9, 16, 16, 2, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 1},
};
/* stride 2, odd planes: the forward and weight gradient (the input
 * gradient's kernel takes even planes), outputs 8 (an odd input width,
 * its last column padding) and 24 wide */
static const conv2d_case w16_s2_odd[] = {
    {"direct k3 s2 p1 7x15 4->5", D(1, 4, 7, 15, 5, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 0},
    {"direct k3 s2 p1 5x48 3->9", D(2, 3, 5, 48, 9, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 1},
};
/* stride 2, outputs not a multiple of 8 wide: the input gradient only,
 * 10 wide (one part vector) and 25 (a vector and a part); input channels
 * past the last block of 4 (5, 6) */
static const conv2d_case w16_s2_data[] = {
    {"direct k3 s2 p1 6x20 5->3", D(2, 5, 6, 20, 3, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 s2 p1 4x50 6->4", D(1, 6, 4, 50, 4, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 0},
};
/* the 7x7 stride-2 forward (ResNet's stem): outputs 10 wide (part of a
 * vector) over 5 rows (a row block cut short), 16 wide (one vector), 20
 * (a vector and a part); output channels past the last block of 4 */
static const conv2d_case w16_stem[] = {
    {"direct k7 s2 p3 9x20 3->5", D(2, 3, 9, 20, 5, 7, 7, 2, 2, 3, 3, 1, 1, DIRECT), 1},
    {"direct k7 s2 p3 8x32 2->4", D(1, 2, 8, 32, 4, 7, 7, 2, 2, 3, 3, 1, 1, DIRECT), 0},
    {"direct k7 s2 p3 11x39 3->6", D(2, 3, 11, 39, 6, 7, 7, 2, 2, 3, 3, 1, 1, DIRECT), 1},
};
#define DIR(d) (1 << TT_CONV_DIR_##d)
/* The 16-wide shapes and the directions DIRECT_W16 runs of each. */
static const struct {
    const conv2d_case *cases;
    size_t count;
    int runs;
} w16_tables[] = {
    {w16_all, COUNT(w16_all), ALL_DIRS},
    {w16_s2_odd, COUNT(w16_s2_odd), DIR(FORWARD) | DIR(BACKWARD_WEIGHT)},
    {w16_s2_data, COUNT(w16_s2_data), DIR(BACKWARD_DATA)},
    {w16_stem, COUNT(w16_stem), DIR(FORWARD)},
};

static const conv2d_case tiled_cases[] = {
    {"direct tiled k3 p1 19x21 3->5", D(2, 3, 19, 21, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct tiled k5 s2 p2 9x7", D(1, 3, 9, 7, 6, 5, 5, 2, 2, 2, 2, 1, 1, DIRECT), 0},
    {"direct tiled dilation 2 1x1", D(1, 2, 1, 1, 3, 3, 3, 1, 1, 2, 2, 2, 2, DIRECT), 1},
};

/* `cases` run as `algo`, a DIRECT row: each takes every groups-1 shape
 * whole, every direction. */
static void check_as(const char *label, const conv2d_case *cases, size_t count, tt_conv_algo algo)
{
    conv2d_case as[32];
    CU_ASSERT_FATAL(count <= COUNT(as));
    for (size_t i = 0; i < count; i++) {
        as[i] = cases[i];
        as[i].desc.algo = algo;
    }
    ref_conv2d_check_cases(label, as, count, ALL_DIRS);
}

static void test_direct(void)
{
    check_as("direct", direct_cases, COUNT(direct_cases), TT_CONV_ALGO_DIRECT);
    /* stride 2 along W: direct's kernels */
    check_as("direct_w8", direct_cases, COUNT(direct_cases), TT_CONV_ALGO_DIRECT_W8);
    check_as("direct_w8 (tile cases)", tiled_cases, COUNT(tiled_cases), TT_CONV_ALGO_DIRECT_W8);
}

/* Every 16-wide shape checked under `label` as `algo`: DIRECT_W16 (the
 * same cases, so the same data, with `blocks`), or another that runs
 * them all. */
static void w16_pass(const char *label, tt_conv_algo algo, tt_conv_blocks blocks)
{
    int w16 = algo == TT_CONV_ALGO_DIRECT_W16;
    for (size_t t = 0; t < COUNT(w16_tables); t++) {
        conv2d_case cases[COUNT(w16_all)];
        size_t n = w16_tables[t].count;
        CU_ASSERT_FATAL(n <= COUNT(cases)); /* w16_all is the longest table */
        for (size_t i = 0; i < n; i++) {
            cases[i] = w16_tables[t].cases[i];
            cases[i].desc.algo = algo;
            cases[i].desc.blocks = blocks;
        }
        if (w16)
            ref_conv2d_check_cases(label, cases, n, w16_tables[t].runs);
        else
            check_as(label, cases, n, algo);
    }
}

/* The blockings of DIRECT_W16 each 16-wide shape runs with: its own; the
 * weight gradient in bands of a few rows (2000 bytes of rows) and with
 * every image to one band (partial sums capped at one float); images
 * padded in bands of rows (as planes too large for a whole copy are): of
 * a row block, and of 3 rows (the last band and the row blocks ragged),
 * the latter with several weight-gradient bands to a band. */
static const struct {
    const char *label;
    tt_conv_blocks blocks;
} w16_blockings[] = {
    {"direct_w16", {0}},
    {"direct_w16 (bands of rows)", {.w16_weight_band_bytes = 2000, .w16_partial_floats = 1}},
    {"direct_w16 (images to a band)",
     {.w16_weight_band_bytes = 1000000, .w16_partial_floats = 1}},
    {"direct_w16 (images in bands of 4 rows)", {.w16_band_rows = 4}},
    {"direct_w16 (images in bands of 3 rows)",
     {.w16_band_rows = 3, .w16_weight_band_bytes = 2000, .w16_partial_floats = 1}},
};

/* The 16-wide kernels (DIRECT_W16, where the backend has them) with each
 * blocking; then the same shapes through DIRECT_W8's kernels. */
static void test_direct_w16(void)
{
    tt_conv2d_desc probe = w16_all[0].desc;
    probe.algo = TT_CONV_ALGO_DIRECT_W16;
    if (!tt_conv2d_runs_on(th_backend(), &probe))
        th_left_out("direct_w16", "the backend has no conv_direct_w16 program");
    else
        for (size_t b = 0; b < COUNT(w16_blockings); b++)
            w16_pass(w16_blockings[b].label, TT_CONV_ALGO_DIRECT_W16, w16_blockings[b].blocks);
    w16_pass("direct_w8 (the 16-wide shapes)", TT_CONV_ALGO_DIRECT_W8, (tt_conv_blocks){0});
}

static void test_direct_tiled(void)
{
    check_as("direct_tiled", tiled_cases, COUNT(tiled_cases), TT_CONV_ALGO_DIRECT_TILED);
}

/* A GPU's cap on one launch's work (device_traits.h dispatch_flops): every
 * direction of every DIRECT row in launches of one row, against the
 * reference; then a cap of two rows' work cuts each direction of a
 * 10-row shape into 5 launches, the forward and input gradient the same
 * bits as in one. */
static void test_direct_bands(void)
{
    th_setenv("TT_DISPATCH_FLOPS", "1");
    check_as("direct (a launch a row)", direct_cases, COUNT(direct_cases), TT_CONV_ALGO_DIRECT);
    check_as("direct_w8 (a launch a row)", direct_cases, COUNT(direct_cases),
             TT_CONV_ALGO_DIRECT_W8);
    check_as("direct_tiled (a launch a row of tiles)", tiled_cases, COUNT(tiled_cases),
             TT_CONV_ALGO_DIRECT_TILED);
    th_setenv("TT_DISPATCH_FLOPS", NULL);

    const tt_conv_algo algos[] = {TT_CONV_ALGO_DIRECT, TT_CONV_ALGO_DIRECT_W8};
    for (size_t a = 0; a < COUNT(algos); a++) {
        tt_conv2d_desc d = {2, 3, 10, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, algos[a], 0, {0}, 0};
        if (!tt_conv2d_runs_on(th_backend(), &d)) continue; /* w8: OpenCL's */
        uint64_t seed = 7;
        size_t ni = 2 * 3 * 10 * 9, nw = 5 * 3 * 9, no = 2 * 5 * 10 * 9;
        float *x = th_random_floats(ni, -1, 1, &seed), *w = th_random_floats(nw, -1, 1, &seed);
        float *dy = th_random_floats(no, -1, 1, &seed), zeros[5 * 3 * 9] = {0};
        float got[2][2 * 5 * 10 * 9], gotd[2][2 * 3 * 10 * 9], gotw[2][5 * 3 * 9];
        uint64_t counts[2][3] = {{0}};
        const char *names[3] = {"conv_direct_forward", "conv_direct_backward_data",
                                algos[a] == TT_CONV_ALGO_DIRECT_W8 ? "conv_direct_backward_weight_w8"
                                                                   : "conv_direct_backward_weight"};
        for (int capped = 0; capped < 2; capped++) {
            /* one row of the forward: 2 kH kW Cin Cout W N = 4860 */
            th_setenv("TT_DISPATCH_FLOPS", capped ? "9720" : "0");
            tt_backend *be = th_profiling_backend();
            CU_ASSERT_PTR_NOT_NULL_FATAL(be);
            tt_buffer *bx, *bw, *bdy, *by, *bdx, *bdw;
            TH_OK(tt_buffer_alloc(be, ni * 4, TT_MEM_OTHER, "x", &bx));
            TH_OK(tt_buffer_alloc(be, nw * 4, TT_MEM_OTHER, "w", &bw));
            TH_OK(tt_buffer_alloc(be, no * 4, TT_MEM_OTHER, "dy", &bdy));
            TH_OK(tt_buffer_alloc(be, no * 4, TT_MEM_OTHER, "y", &by));
            TH_OK(tt_buffer_alloc(be, ni * 4, TT_MEM_OTHER, "dx", &bdx));
            TH_OK(tt_buffer_alloc(be, nw * 4, TT_MEM_OTHER, "dw", &bdw));
            TH_OK(tt_write(be, tt_mem_of(bx), x, ni * 4));
            TH_OK(tt_write(be, tt_mem_of(bw), w, nw * 4));
            TH_OK(tt_write(be, tt_mem_of(bdy), dy, no * 4));
            TH_OK(tt_write(be, tt_mem_of(bdw), zeros, nw * 4));
            TH_OK(tt_conv2d_forward(be, tt_mem_of(by), tt_mem_of(bx), tt_mem_of(bw),
                                    (tt_mem){0}, &d, (tt_mem){0}));
            TH_OK(tt_conv2d_input_gradient(be, tt_mem_of(bdx), tt_mem_of(bdy), tt_mem_of(bw), &d,
                                           (tt_mem){0}));
            TH_OK(tt_conv2d_backward(be, (tt_mem){0}, tt_mem_of(bdw), (tt_mem){0},
                                     tt_mem_of(bdy), tt_mem_of(bx), tt_mem_of(bw), &d,
                                     (tt_mem){0}));
            TH_OK(tt_read(be, got[capped], tt_mem_of(by), no * 4));
            TH_OK(tt_read(be, gotd[capped], tt_mem_of(bdx), ni * 4));
            TH_OK(tt_read(be, gotw[capped], tt_mem_of(bdw), nw * 4));
            TH_OK(tt_finish(be));
            for (int k = 0; k < 3; k++) counts[capped][k] = th_launches(be, names[k]);
            tt_buffer *all[] = {bx, bw, bdy, by, bdx, bdw};
            for (size_t i = 0; i < COUNT(all); i++) tt_buffer_free(all[i]);
            tt_backend_destroy(be);
        }
        th_setenv("TT_DISPATCH_FLOPS", NULL);
        for (int k = 0; k < 3; k++) {
            if (counts[0][k] != 1 || counts[1][k] != 5)
                printf("\n    %s: %llu launches, %llu under the cap (want 1 and 5)", names[k],
                       (unsigned long long)counts[0][k], (unsigned long long)counts[1][k]);
            CU_ASSERT(counts[0][k] == 1 && counts[1][k] == 5);
        }
        CU_ASSERT(memcmp(got[0], got[1], sizeof got[0]) == 0);
        CU_ASSERT(memcmp(gotd[0], gotd[1], sizeof gotd[0]) == 0);
        CU_ASSERT(th_max_rel_error_f(gotw[1], gotw[0], nw, 1e-3) < 1e-5);
        free(x), free(w), free(dy);
    }
}

/* Kernels held below the device's work-group size (CL_KERNEL_WORK_GROUP_SIZE,
 * as registers hold kernels on Mali, Adreno or Intel GPUs; the test knob
 * makes this device report 8 work-items): the untiled kernels, whose
 * groups are free, narrow to fit; the tiled forward's tile and the weight
 * gradient's group, defines, build again smaller; every direction against
 * the reference.  A launch past it is refused, naming the kernel. */
static void test_direct_kernel_limit(void)
{
    th_setenv("TT_KERNEL_WG_LIMIT", "8");
    check_as("direct (kernels held to 8 work-items)", direct_cases, COUNT(direct_cases),
             TT_CONV_ALGO_DIRECT);
    check_as("direct_tiled (kernels held to 8 work-items)", tiled_cases, COUNT(tiled_cases),
             TT_CONV_ALGO_DIRECT_TILED);
    /* a launch past the limit is refused before the driver sees it, with
     * an error naming the kernel and the limit */
    tt_buffer *x = th_zeros(64, "x");
    tt_status s = tt_launch_kernel(th_backend(), "util", "fill", NULL, 1, (size_t[]){64},
                                   (size_t[]){16},
                                   TT_ARGS(tt_arg_mem(tt_mem_of(x)), tt_arg_f32(1.0f),
                                           tt_arg_i32(64)));
    th_setenv("TT_KERNEL_WG_LIMIT", NULL);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_UNSUPPORTED);
    CU_ASSERT(strstr(tt_status_message(s), "util/fill: a work-group of 16") != NULL);
    CU_ASSERT(strstr(tt_status_message(s), "at most 8") != NULL);
    printf("\n    a group of 16 under the limit: %s", tt_status_message(s));
    tt_status_free(s);
    tt_buffer_free(x);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"direct: forward and gradients", test_direct},
        {"direct_w16: 3x3 and 7x7 with 16 columns a work-item, and direct_w8's 8", test_direct_w16},
        {"direct with local-memory tiles", test_direct_tiled},
        {"direct in bands of rows under a GPU's cap on a launch's work", test_direct_bands},
        {"direct's work-groups within the kernel's own limit", test_direct_kernel_limit},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_direct", tests, TH_EVERY);
}

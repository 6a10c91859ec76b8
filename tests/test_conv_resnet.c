/*
 * A ResNet encoder's strided convolutions (the stem's 7x7, a block's 3x3
 * stride 2, the shortcut's 1x1 stride 2) through every algorithm: those
 * that run strides against the double reference and finite differences,
 * the others refusing them, auto's choices, PyTorch on the stem; then the
 * same at sizes of several tiles and blocks.  Apart from
 * test_conv_algos.c, so that the suites' program compilations run side by
 * side.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "ops/conv2d.h"
#include "ref_conv.h"
#include "ref_conv_cases.h"
#include "ref_conv_check.h"

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
 * stride (im2col_gemm, direct, direct_tiled, implicit_gemm with this
 * device's tiles and a GPU's; direct_w8 runs direct's kernels on them)
 * run every direction themselves; winograd and the winograd4x4 rows (3x3
 * stride 1) say they cannot (tt_conv_algo_runs 0 in every direction) and,
 * forced, fall back to im2col_gemm; auto runs and its results are checked
 * the same way.
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
        if (a == TT_CONV_ALGO_DIRECT_W16) continue; /* shape by shape: test_conv_direct */
        if (a == TT_CONV_ALGO_DEPTHWISE || a == TT_CONV_ALGO_DEPTHWISE_W8)
            continue; /* groups = channels only */
        int strided = a != TT_CONV_ALGO_WINOGRAD && a != TT_CONV_ALGO_WINOGRAD4 &&
                      a != TT_CONV_ALGO_WINOGRAD4_FUSED && a != TT_CONV_ALGO_WINOGRAD4_SUM;
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
    printf("\n    winograd and the three winograd4x4 rows refuse all %d direction-shapes of "
           "the %d ResNet cases; im2col_gemm, the DIRECT rows and implicit_gemm take them",
           refusals, (int)CASES);
    CU_ASSERT_EQUAL(refusals, 4 * CASES * TT_CONV_DIR_COUNT);

    static const struct {
        tt_conv_algo algo;
        int gpu_tile; /* implicit_gemm with a GPU's tile (16 x 16 work-groups of 4 x 4) */
        int runs;     /* directions it runs itself (check_cases) */
    } runs[] = {
        {TT_CONV_ALGO_IM2COL_GEMM, 0, ALL_DIRS},
        {TT_CONV_ALGO_DIRECT, 0, ALL_DIRS},
        {TT_CONV_ALGO_DIRECT_TILED, 0, ALL_DIRS},
        {TT_CONV_ALGO_IMPLICIT_GEMM, 0, ALL_DIRS},
        {TT_CONV_ALGO_IMPLICIT_GEMM, 1, ALL_DIRS},
        {TT_CONV_ALGO_WINOGRAD, 0, 0},
        {TT_CONV_ALGO_WINOGRAD4, 0, 0},
    };
    for (size_t r = 0; r < COUNT(runs); r++) {
        char label[96];
        snprintf(label, sizeof label, "resnet %s%s", tt_conv_algo_name(runs[r].algo),
                 runs[r].gpu_tile ? " tiles 4,4,16,16,16" : "");
        for (size_t i = 0; i < CASES; i++) {
            cases[i] = resnet_cases[i];
            cases[i].desc.algo = runs[r].algo;
            if (runs[r].gpu_tile) cases[i].desc.blocks = TT_CONV_IGEMM_TILE(4, 4, 16, 16, 16);
        }
        ref_conv2d_check_cases(label, cases, CASES, runs[r].runs);
    }

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
        free(ref_conv2d_run_three(d, n_in, n_w, n_out)); /* the autotuner's first call */
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
            CU_ASSERT(picked != TT_CONV_ALGO_WINOGRAD);
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
        int gpu_tile; /* implicit_gemm with a GPU's tile */
    } runs[] = {
        {TT_CONV_ALGO_IM2COL_GEMM, 0},  {TT_CONV_ALGO_DIRECT, 0},
        {TT_CONV_ALGO_DIRECT_TILED, 0}, {TT_CONV_ALGO_IMPLICIT_GEMM, 0},
        {TT_CONV_ALGO_IMPLICIT_GEMM, 1}, {TT_CONV_ALGO_AUTO, 0},
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
            d.algo = runs[r].algo;
            d.blocks = runs[r].gpu_tile ? TT_CONV_IGEMM_TILE(4, 4, 16, 16, 16) : (tt_conv_blocks){0};
            float *got = ref_conv2d_run_three(&d, n_in, n_w, n_out);
            double e[3] = {th_max_rel_error(got, want, n_out, 1.0),
                           th_max_rel_error(got + n_out, want + n_out, n_in, 1.0),
                           th_max_rel_error(got + n_out + n_in, want + n_out + n_in, n_w, 1.0)};
            printf("\n      %-13s%-7s forward %.2e  dinp %.2e  dweight %.2e",
                   tt_conv_algo_name(runs[r].algo),
                   runs[r].gpu_tile ? "gpu" : "", e[0],
                   e[1], e[2]);
            for (int k = 0; k < 3; k++) CU_ASSERT(e[k] < RESNET_LARGE_TOL);
            free(got);
        }
        free(x), free(w), free(dy), free(xd), free(wd), free(dyd), free(want);
    }
    printf("\n");
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"ResNet's strided convolutions through every algorithm", test_resnet_strided},
        {"the same at sizes of several tiles and blocks", test_resnet_strided_large},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_resnet", tests, TH_EVERY);
}

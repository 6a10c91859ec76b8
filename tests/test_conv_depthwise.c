/*
 * The DEPTHWISE convolution (groups = Cin = Cout, src/ops/conv_depthwise.c)
 * against the double reference on shapes that break kernels: odd and prime
 * planes, planes one pixel wide or high, batch 1, 2 and 3, channels 1, 3
 * and 32, kernels 3 and 5 (and 3x5), strides 1 and 2, padding 0..2,
 * dilation 1, 2, 6 and 12 (taps mostly in the padding); forward, input and
 * weight gradient, each gradient alone and twice adding twice
 * (ref_conv_check_case), with finite differences of every element on the
 * small shapes and of a sample checking the reference backward on the
 * large.  Then: the weight gradient split into many launches, the same
 * bits on every run; the autotuner's verification of the row; AUTO on a
 * depthwise shape and on ResNeXt's grouped (not depthwise) 3x3; a
 * transposed depthwise convolution through the row.  With TT_BENCH_CONV=1
 * it also times depthwise against im2col_gemm per direction on an
 * EfficientNet-sized layer (printed, not asserted; TT_BENCH_REPS=N).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "harness.h"
#include "ops/conv2d.h"
#include "ops/conv_autotune.h"
#include "ops/conv_transpose2d.h"
#include "ref_conv.h"
#include "ref_conv_cases.h"
#include "ref_conv_check.h"

/* N, C, H, W, kH, kW, sH, sW, pH, pW, dH, dW: groups = Cin = Cout = C */
#define DW(n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw) \
    {n, c, h, w, c, kh, kw, sh, sw, ph, pw, dh, dw, c, TT_CONV_ALGO_DEPTHWISE, 0, {0}, 0}

static const conv2d_case dw_cases[] = {
    {"dw k3 s1 p1 7x13 c3 n2", DW(2, 3, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1), 1},
    {"dw k3 s2 p1 7x13 c3 n1", DW(1, 3, 7, 13, 3, 3, 2, 2, 1, 1, 1, 1), 0},
    {"dw k3 s1 p0 7x13 c1 n2", DW(2, 1, 7, 13, 3, 3, 1, 1, 0, 0, 1, 1), 1},
    {"dw k5 s1 p2 7x13 c32 n1", DW(1, 32, 7, 13, 5, 5, 1, 1, 2, 2, 1, 1), 1},
    {"dw k5 s2 p2 13x7 c3 n3", DW(3, 3, 13, 7, 5, 5, 2, 2, 2, 2, 1, 1), 0},
    {"dw k5 s2 p1 9x9 c1 n2", DW(2, 1, 9, 9, 5, 5, 2, 2, 1, 1, 1, 1), 1},
    /* planes one pixel high and one wide */
    {"dw k3 s1 p1 1x9 c3 n2", DW(2, 3, 1, 9, 3, 3, 1, 1, 1, 1, 1, 1), 1},
    {"dw k3 s1 p1 17x1 c3 n3", DW(3, 3, 17, 1, 3, 3, 1, 1, 1, 1, 1, 1), 0},
    {"dw k3 s2 p1 17x1 c1 n1", DW(1, 1, 17, 1, 3, 3, 2, 2, 1, 1, 1, 1), 1},
    /* atrous: 'same' 3x3 (pad = dilation), and DeepLabV3+'s large rates on
     * small planes, where most taps fall in the padding */
    {"dw k3 d2 p2 7x13 c32 n2", DW(2, 32, 7, 13, 3, 3, 1, 1, 2, 2, 2, 2), 1},
    {"dw k3 d6 p6 7x13 c3 n2", DW(2, 3, 7, 13, 3, 3, 1, 1, 6, 6, 6, 6), 0},
    {"dw k3 d12 p12 5x7 c3 n1", DW(1, 3, 5, 7, 3, 3, 1, 1, 12, 12, 12, 12), 1},
    {"dw k3 s2 d2 p2 11x17 c5 n1", DW(1, 5, 11, 17, 3, 3, 2, 2, 2, 2, 2, 2), 1},
    /* stride 2 without padding on an even plane: inputs no output reads */
    {"dw k3 s2 p0 8x8 c32 n1", DW(1, 32, 8, 8, 3, 3, 2, 2, 0, 0, 1, 1), 0},
    /* a kernel neither square nor odd-centred, strides and dilations apart */
    {"dw k3x5 s(2,1) p(1,2) d(1,2)", DW(2, 3, 9, 11, 3, 5, 2, 1, 1, 2, 1, 2), 1},
    /* the weight gradient's run over several work-groups' worth of pixels */
    {"dw k3 s1 p1 33x29 c8 n2", DW(2, 8, 33, 29, 3, 3, 1, 1, 1, 1, 1, 1), 1},
};

/* ref_conv2d_backward behind the check's signature. */
static void ref_grouped_backward(double *dinp, double *dweight, const double *inp,
                                 const double *weight, const double *dout, const void *desc)
{
    ref_conv2d_backward(dinp, dweight, inp, weight, dout, desc);
}

/* The case as ref_conv_check_case takes it: ref_conv2d_case_op's, with the
 * grouped weight (Cout, Cin / groups, kH, kW) and the reference backward
 * above (checked against finite differences where it stands in for them). */
static ref_conv_op grouped_op(const conv2d_case *c, int pass_workspace)
{
    ref_conv_op op = ref_conv2d_case_op(c, pass_workspace);
    const tt_conv2d_desc *d = &c->desc;
    int groups = d->groups ? d->groups : 1;
    op.weight_count = (size_t)d->out_channels * (d->in_channels / groups) * d->kernel_h *
                      d->kernel_w;
    op.ref_backward = ref_grouped_backward;
    return op;
}

static uint64_t seed_of(const char *name)
{
    return 3000 + tt_hash_bytes(TT_HASH_INIT, name, strlen(name)) % 1000003;
}

/* Every case: its algorithm runs every direction itself (no fallback),
 * then the whole check; the largest errors printed under `label`. */
static void check_cases(const char *label, const conv2d_case *cases, size_t count, int runs)
{
    double start = ref_conv_now_ms();
    ref_conv_errors worst = {0};
    for (size_t i = 0; i < count; i++) {
        const tt_conv2d_desc *d = &cases[i].desc;
        TH_OK(tt_conv2d_check(d));
        for (int dir = 0; dir < TT_CONV_DIR_COUNT && runs; dir++)
            CU_ASSERT_EQUAL(tt_conv2d_algo_for(d, (tt_conv_dir)dir), d->algo);
        if (!ref_conv2d_runs_here(cases[i].name, d)) continue;
        ref_conv_op op = grouped_op(&cases[i], (int)(i % 2));
        if (d->algo == TT_CONV_ALGO_AUTO) {
            /* a first call times the candidates (allocating their
             * scratch); after it a workspace of what the picks take serves
             * every direction without an allocation */
            free(ref_conv2d_run_three(d, op.inp_count, op.weight_count, op.out_count));
            op.workspace_bytes = tt_conv2d_workspace_bytes_on(th_backend(), d);
            op.pass_workspace = op.workspace_bytes > 0;
        }
        ref_conv_errors e = ref_conv_check_case(&op, seed_of(cases[i].name));
        worst.forward = fmax(worst.forward, e.forward);
        worst.dinp = fmax(worst.dinp, e.dinp);
        worst.dweight = fmax(worst.dweight, e.dweight);
        worst.dbias = fmax(worst.dbias, e.dbias);
    }
    printf("\n    %s largest: forward %.2e  dinp %.2e  dweight %.2e  dbias %.2e; %.1f s\n", label,
           worst.forward, worst.dinp, worst.dweight, worst.dbias,
           (ref_conv_now_ms() - start) / 1e3);
}

/* The row takes exactly the depthwise shapes, every direction. */
static void test_supports(void)
{
    const tt_conv_algo_impl *impl = tt_conv2d_algo_impl(TT_CONV_ALGO_DEPTHWISE);
    CU_ASSERT_PTR_NOT_NULL_FATAL(impl);
    CU_ASSERT_STRING_EQUAL(tt_conv_algo_name(TT_CONV_ALGO_DEPTHWISE), "depthwise");
    tt_conv_algo parsed = TT_CONV_ALGO_AUTO;
    TH_OK(tt_conv_algo_parse("depthwise", &parsed));
    CU_ASSERT_EQUAL(parsed, TT_CONV_ALGO_DEPTHWISE);
    const tt_conv2d_desc yes = DW(1, 8, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1);
    tt_conv2d_desc grouped = yes, multiplier = yes, dense = yes;
    grouped.groups = 4;                            /* 2 channels a group */
    multiplier.out_channels = 16;                  /* a channel multiplier of 2 */
    dense.groups = 1;
    const tt_conv2d_desc *no[] = {&grouped, &multiplier, &dense};
    tt_conv_shape s;
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
        TH_OK(tt_conv2d_shape(&yes, &s));
        CU_ASSERT(tt_conv_algo_runs(impl, &s, (tt_conv_dir)dir));
        CU_ASSERT_EQUAL(tt_conv2d_algo_for(&yes, (tt_conv_dir)dir), TT_CONV_ALGO_DEPTHWISE);
        for (size_t i = 0; i < COUNT(no); i++) {
            TH_OK(tt_conv2d_shape(no[i], &s));
            CU_ASSERT(!tt_conv_algo_runs(impl, &s, (tt_conv_dir)dir));
            CU_ASSERT_EQUAL(tt_conv2d_algo_for(no[i], (tt_conv_dir)dir),
                            TT_CONV_ALGO_IM2COL_GEMM);
        }
    }
}

static void test_depthwise(void)
{
    check_cases("depthwise", dw_cases, COUNT(dw_cases), 1);
}

/* DEPTHWISE_W8 (OpenCL's alone): every case above, then the shapes that
 * break 8-column vectors: planes of 8, 16 and 17 columns (a whole vector,
 * two, a one-lane tail), stride 2 over 16-column steps with odd outputs,
 * stride 3 (the scalar kernels), dilation, a plane wide enough that most
 * steps take the vector loads, and the weight gradient split into launches
 * of a few rows (a loop limit of 24). */
static void test_depthwise_w8(void)
{
    if (th_backend_kind() == TT_BACKEND_VULKAN) {
        printf("\n    (the row is OpenCL's alone: Vulkan refuses it by name)");
        return;
    }
    static const conv2d_case edges[] = {
        {"w8 k3 s1 p1 9x8 c3 n2", DW(2, 3, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1), 1},
        {"w8 k3 s1 p1 7x17 c2 n3", DW(3, 2, 7, 17, 3, 3, 1, 1, 1, 1, 1, 1), 0},
        {"w8 k3 s2 p1 6x16 c4 n1", DW(1, 4, 6, 16, 3, 3, 2, 2, 1, 1, 1, 1), 1},
        {"w8 k5 s2 p2 9x33 c3 n2", DW(2, 3, 9, 33, 5, 5, 2, 2, 2, 2, 1, 1), 1},
        {"w8 k3 s2 p0 7x35 c2 n1", DW(1, 2, 7, 35, 3, 3, 2, 2, 0, 0, 1, 1), 0},
        {"w8 k3 s3 p1 11x25 c2 n2", DW(2, 2, 11, 25, 3, 3, 3, 3, 1, 1, 1, 1), 1},
        {"w8 k3 d2 p2 13x40 c5 n2", DW(2, 5, 13, 40, 3, 3, 1, 1, 2, 2, 2, 2), 0},
        {"w8 k5 s1 p2 20x45 c8 n2", DW(2, 8, 20, 45, 5, 5, 1, 1, 2, 2, 1, 1), 1},
    };
    conv2d_case cases[COUNT(dw_cases) + COUNT(edges)];
    size_t n = 0;
    for (size_t i = 0; i < COUNT(dw_cases); i++) cases[n++] = dw_cases[i];
    for (size_t i = 0; i < COUNT(edges); i++) cases[n++] = edges[i];
    for (size_t i = 0; i < n; i++) cases[i].desc.algo = TT_CONV_ALGO_DEPTHWISE_W8;
    check_cases("depthwise_w8", cases, n, 1);
    conv2d_case split = {"w8 k3 s1 p1 33x29 c8 n2 (split)", DW(2, 8, 33, 29, 3, 3, 1, 1, 1, 1, 1, 1), 1};
    split.desc.algo = TT_CONV_ALGO_DEPTHWISE_W8;
    th_setenv("TT_LOOP_LIMIT", "24");
    ref_conv_op op = grouped_op(&split, 0);
    ref_conv_errors e = ref_conv_check_case(&op, seed_of(split.name));
    th_setenv("TT_LOOP_LIMIT", NULL);
    printf("    split into launches of a few rows: dweight %.2e", e.dweight);
    CU_ASSERT(e.dweight < REF_CONV_GRAD_TOL);
}

/* The weight gradient in launches of one work-group's pixels each (a loop
 * limit of 24 steps: what lavapipe's limit does to a large plane), against
 * the reference; the forward and input gradient in launches of some of the
 * images (many channels); and the weight gradient's same bits on every run
 * (a fixed-order reduction, no atomics), split or not. */
static void test_weight_split_deterministic(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const conv2d_case c = {"dw k3 s1 p1 33x29 c8 n2 (split)",
                           DW(2, 8, 33, 29, 3, 3, 1, 1, 1, 1, 1, 1), 1};
    th_setenv("TT_LOOP_LIMIT", "24");
    ref_conv_op op = grouped_op(&c, 0);
    ref_conv_errors e = ref_conv_check_case(&op, seed_of(c.name));
    CU_ASSERT(e.dweight < REF_CONV_GRAD_TOL);
    th_setenv("TT_LOOP_LIMIT", NULL);

    /* channels enough that a launch takes two images of the three (65535
     * work-groups along images x channels); no bias, whose finite
     * differences would take a reference forward a channel */
    const conv2d_case wide = {"dw k3 s1 p1 1x2 c30000 n3",
                              DW(3, 30000, 1, 2, 3, 3, 1, 1, 1, 1, 1, 1), 0};
    op = grouped_op(&wide, 0);
    e = ref_conv_check_case(&op, seed_of(wide.name));
    CU_ASSERT(e.forward < REF_CONV_FWD_TOL && e.dinp < REF_CONV_GRAD_TOL);

    const tt_conv2d_desc d = DW(3, 32, 31, 37, 5, 5, 1, 1, 2, 2, 1, 1);
    size_t n_in = 3 * 32 * 31 * 37, n_w = 32 * 25;
    uint64_t seed = 91;
    float *x = th_random_floats(n_in, -1, 1, &seed), *dy = th_random_floats(n_in, -1, 1, &seed);
    tt_buffer *bx = th_upload(x, n_in, "dw.x"), *bdy = th_upload(dy, n_in, "dw.dy");
    tt_buffer *dw[3];
    for (int run = 0; run < 3; run++) {
        dw[run] = th_zeros(n_w, "dw.dweight");
        if (run == 2) th_setenv("TT_LOOP_LIMIT", "100");
        TH_OK(tt_conv2d_backward(be, (tt_mem){0}, tt_mem_of(dw[run]), (tt_mem){0},
                                 tt_mem_of(bdy), tt_mem_of(bx), (tt_mem){0}, &d, (tt_mem){0}));
        th_setenv("TT_LOOP_LIMIT", NULL);
    }
    CU_ASSERT(th_same_bits(tt_mem_of(dw[0]), tt_mem_of(dw[1]), n_w));
    /* split: another order of the sums, within rounding of the whole */
    float a[32 * 25], b[32 * 25];
    th_download(a, dw[0], n_w);
    th_download(b, dw[2], n_w);
    CU_ASSERT(th_max_rel_error_f(b, a, n_w, 1.0) < 1e-4);
    for (int run = 0; run < 3; run++) tt_buffer_free(dw[run]);
    tt_buffer_free(bx), tt_buffer_free(bdy);
    free(x), free(dy);
}

/* The autotuner's check of every row that runs each direction of a
 * depthwise shape (tt_conv2d_verify): depthwise is among them and passes. */
static void test_verified(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_conv2d_desc d = DW(2, 16, 15, 19, 3, 3, 2, 2, 1, 1, 1, 1);
    d.algo = TT_CONV_ALGO_AUTO;
    int oh = tt_conv2d_out_h(&d), ow = tt_conv2d_out_w(&d);
    size_t n_in = 2 * 16 * 15 * 19, n_w = 16 * 9, n_out = (size_t)2 * 16 * oh * ow;
    uint64_t seed = 17;
    float *x = th_random_floats(n_in, -1, 1, &seed), *w = th_random_floats(n_w, -1, 1, &seed);
    float *dy = th_random_floats(n_out, -1, 1, &seed), *b = th_random_floats(16, -1, 1, &seed);
    tt_buffer *bx = th_upload(x, n_in, "verify.x"), *bw = th_upload(w, n_w, "verify.w");
    tt_buffer *bdy = th_upload(dy, n_out, "verify.dy"), *bb = th_upload(b, 16, "verify.b");
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
        tt_conv_verdict verdicts[TT_CONV_ALGO_COUNT];
        int checked[TT_CONV_ALGO_COUNT];
        TH_OK(tt_conv2d_verify(be, &d, (tt_conv_dir)dir, tt_mem_of(bx), tt_mem_of(bw),
                               tt_mem_of(bb), tt_mem_of(bdy), verdicts, checked));
        CU_ASSERT(checked[TT_CONV_ALGO_DEPTHWISE]);
        if (!checked[TT_CONV_ALGO_DEPTHWISE]) continue;
        const tt_conv_verdict *v = &verdicts[TT_CONV_ALGO_DEPTHWISE];
        printf("\n    verify %-15s depthwise error %.2e (bound %.2e, against %s)",
               tt_conv_dir_name((tt_conv_dir)dir), v->error, v->bound,
               tt_conv_algo_name(v->reference));
        CU_ASSERT(v->error <= v->bound);
        CU_ASSERT(!v->undecided);
    }
    tt_buffer_free(bx), tt_buffer_free(bw), tt_buffer_free(bdy), tt_buffer_free(bb);
    free(x), free(w), free(dy), free(b);
}

/* AUTO on a depthwise shape (the autotuner picks among the rows that run
 * it, depthwise one of them) and on ResNeXt's grouped 3x3 (groups 32, 4
 * channels a group: not depthwise, im2col_gemm or implicit_gemm run it),
 * stride 1 and 2, against the reference. */
static void test_auto(void)
{
    static const conv2d_case auto_cases[] = {
        {"auto dw k3 s1 p1 9x11 c24 n2", DW(2, 24, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1), 1},
        {"auto dw k5 s2 p2 10x9 c16 n1", DW(1, 16, 10, 9, 5, 5, 2, 2, 2, 2, 1, 1), 0},
        {"auto resnext g32 k3 s1 64ch",
         {1, 64, 7, 9, 64, 3, 3, 1, 1, 1, 1, 1, 1, 32, TT_CONV_ALGO_AUTO, 0, {0}, 0}, 1},
        {"auto resnext g32 k3 s2 128ch",
         {1, 128, 8, 7, 128, 3, 3, 2, 2, 1, 1, 1, 1, 32, TT_CONV_ALGO_AUTO, 0, {0}, 0}, 0},
    };
    conv2d_case cases[COUNT(auto_cases)];
    for (size_t i = 0; i < COUNT(auto_cases); i++) {
        cases[i] = auto_cases[i];
        cases[i].desc.algo = TT_CONV_ALGO_AUTO;
    }
    check_cases("auto", cases, COUNT(cases), 0);
    tt_backend *be = th_backend();
    for (size_t i = 0; i < COUNT(cases); i++) {
        printf("    %-30s", cases[i].name);
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            tt_conv_algo a = tt_conv2d_algo_on(be, &cases[i].desc, (tt_conv_dir)dir);
            printf(" %s %s", tt_conv_dir_name((tt_conv_dir)dir), tt_conv_algo_name(a));
            /* the grouped shapes are no depthwise row's */
            if (i >= 2) CU_ASSERT_NOT_EQUAL(a, TT_CONV_ALGO_DEPTHWISE);
        }
        printf("\n");
    }
}

/* conv_transpose2d runs through conv2d's rows: a depthwise transposed
 * convolution (stride 2, output padding 1) forced to the row, its forward
 * (the row's input gradient, a gather over outputs of rows past the input)
 * against the double reference. */
static void test_transposed(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_conv_transpose2d_desc d = {.batch = 2, .in_channels = 5, .in_h = 7, .in_w = 6,
                                  .out_channels = 5, .kernel_h = 3, .kernel_w = 3,
                                  .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1,
                                  .output_pad_h = 1, .output_pad_w = 1, .groups = 5,
                                  .algo = TT_CONV_ALGO_DEPTHWISE};
    TH_OK(tt_conv_transpose2d_check(&d));
    int oh = ref_conv_transpose2d_out_size(7, 3, 2, 1, 1, 1);
    int ow = ref_conv_transpose2d_out_size(6, 3, 2, 1, 1, 1);
    size_t n_in = 2 * 5 * 7 * 6, n_w = 5 * 9, n_out = (size_t)2 * 5 * oh * ow;
    uint64_t seed = 5;
    float *x = th_random_floats(n_in, -1, 1, &seed), *w = th_random_floats(n_w, -1, 1, &seed);
    float *b = th_random_floats(5, -1, 1, &seed), *got = malloc(n_out * sizeof *got);
    double *want = malloc(n_out * sizeof *want);
    CU_ASSERT_FATAL(got && want);
    double *xd = th_to_double(x, n_in), *wd = th_to_double(w, n_w), *bd = th_to_double(b, 5);
    ref_conv_transpose2d_forward(want, xd, wd, bd, &d);
    tt_buffer *bx = th_upload(x, n_in, "convt.x"), *bw = th_upload(w, n_w, "convt.w");
    tt_buffer *bb = th_upload(b, 5, "convt.b"), *by = th_zeros(n_out, "convt.y");
    TH_OK(tt_conv_transpose2d_forward(be, tt_mem_of(by), tt_mem_of(bx), tt_mem_of(bw),
                                      tt_mem_of(bb), &d, (tt_mem){0}));
    th_download(got, by, n_out);
    double e = th_max_rel_error(got, want, n_out, REF_CONV_FWD_FLOOR);
    printf("\n    transposed depthwise s2 op1 forward %.2e", e);
    CU_ASSERT(e < REF_CONV_FWD_TOL);
    tt_buffer_free(bx), tt_buffer_free(bw), tt_buffer_free(bb), tt_buffer_free(by);
    free(x), free(w), free(b), free(got), free(want), free(xd), free(wd), free(bd);
}

/* ---- timing (TT_BENCH_CONV=1) -------------------------------------------- */

/* The best of `reps` runs (after a warm-up) of `dir` of `d`, in ms. */
static double time_dir(tt_backend *be, const tt_conv2d_desc *d, tt_conv_dir dir, tt_mem x,
                       tt_mem w, tt_mem y, tt_mem dy, tt_mem dx, tt_mem dw, tt_mem ws, int reps)
{
    double best = 1e300;
    for (int r = 0; r <= reps; r++) {
        double t0 = ref_conv_now_ms();
        if (dir == TT_CONV_DIR_FORWARD)
            TH_OK(tt_conv2d_forward(be, y, x, w, (tt_mem){0}, d, ws));
        else if (dir == TT_CONV_DIR_BACKWARD_DATA)
            TH_OK(tt_conv2d_backward(be, dx, (tt_mem){0}, (tt_mem){0}, dy, x, w, d, ws));
        else
            TH_OK(tt_conv2d_backward(be, (tt_mem){0}, dw, (tt_mem){0}, dy, x, w, d, ws));
        TH_OK(tt_finish(be));
        double ms = ref_conv_now_ms() - t0;
        if (r > 0 && ms < best) best = ms;
    }
    return best;
}

static void bench_shape(tt_backend *be, tt_conv2d_desc d, int reps)
{
    int oh = tt_conv2d_out_h(&d), ow = tt_conv2d_out_w(&d);
    size_t n_in = (size_t)d.batch * d.in_channels * d.in_h * d.in_w;
    size_t n_out = (size_t)d.batch * d.out_channels * oh * ow;
    size_t n_w = (size_t)d.out_channels * d.kernel_h * d.kernel_w;
    uint64_t seed = 3;
    float *h = th_random_floats(n_in > n_out ? n_in : n_out, -1, 1, &seed);
    tt_buffer *x = th_upload(h, n_in, "bench.x"), *w = th_upload(h, n_w, "bench.w");
    tt_buffer *dy = th_upload(h, n_out, "bench.dy"), *y = th_zeros(n_out, "bench.y");
    tt_buffer *dx = th_zeros(n_in, "bench.dx"), *dw = th_zeros(n_w, "bench.dw"), *ws = NULL;
    static const tt_conv_algo algos[] = {TT_CONV_ALGO_DEPTHWISE, TT_CONV_ALGO_IM2COL_GEMM};
    printf("\n    %s: N %d C %d %dx%d k%dx%d s%d p%d d%d", th_backend_name(), d.batch,
           d.in_channels, d.in_h, d.in_w, d.kernel_h, d.kernel_w, d.stride_h, d.pad_h,
           d.dilation_h);
    for (size_t a = 0; a < COUNT(algos); a++) {
        d.algo = algos[a];
        size_t bytes = tt_conv2d_workspace_bytes(&d);
        if (bytes) TH_OK(tt_buffer_alloc(be, bytes, TT_MEM_OTHER, "bench.ws", &ws));
        tt_mem wsm = ws ? tt_mem_of(ws) : (tt_mem){0};
        printf("\n      %-12s", tt_conv_algo_name(d.algo));
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++)
            printf("  %s %8.2f ms", tt_conv_dir_name((tt_conv_dir)dir),
                   time_dir(be, &d, (tt_conv_dir)dir, tt_mem_of(x), tt_mem_of(w), tt_mem_of(y),
                            tt_mem_of(dy), tt_mem_of(dx), tt_mem_of(dw), wsm, reps));
        tt_buffer_free(ws);
        ws = NULL;
    }
    tt_buffer_free(x), tt_buffer_free(w), tt_buffer_free(dy), tt_buffer_free(y);
    tt_buffer_free(dx), tt_buffer_free(dw);
    free(h);
}

static void test_bench(void)
{
    const char *on = getenv("TT_BENCH_CONV");
    if (!on || strcmp(on, "1") != 0) {
        printf("\n    not timed (TT_BENCH_CONV=1 times depthwise against im2col_gemm)");
        CU_PASS("timing is opt-in");
        return;
    }
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const char *reps_env = getenv("TT_BENCH_REPS");
    int reps = reps_env ? atoi(reps_env) : 3;
    if (reps < 1) reps = 1;
    /* EfficientNet-B0's stage 2 (96 channels at 56x56 after the stem's
     * stride) and DeepLabV3+'s atrous 3x3 at rate 12 on its 1/16 plane */
    bench_shape(be, (tt_conv2d_desc)DW(2, 96, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1), reps);
    bench_shape(be, (tt_conv2d_desc)DW(2, 144, 56, 56, 5, 5, 2, 2, 2, 2, 1, 1), reps);
    bench_shape(be, (tt_conv2d_desc)DW(2, 256, 32, 32, 3, 3, 1, 1, 12, 12, 12, 12), reps);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"depthwise: the shapes the row takes", test_supports},
        {"depthwise: forward and gradients", test_depthwise},
        {"depthwise_w8: the same cases and 8-column edges (OpenCL)", test_depthwise_w8},
        {"depthwise: weight gradient split and deterministic", test_weight_split_deterministic},
        {"depthwise: the autotuner's verification", test_verified},
        {"auto: depthwise and grouped shapes", test_auto},
        {"depthwise: transposed convolution", test_transposed},
        {"depthwise: timing against im2col_gemm", test_bench},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_depthwise", tests, TH_EVERY);
}

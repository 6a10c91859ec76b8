/*
 * Every convolution algorithm against the double reference (each one's
 * own cases, with odd sizes, a 1x1 image, finite-difference gradients and
 * backward adds, are test_conv_direct.c's, test_conv_winograd.c's and
 * test_conv_igemm.c's) on what they share: the fallbacks, the input
 * gradient that overwrites, conv_transpose2d through conv2d's rows, and
 * PyTorch on one case each (ResNet's strided shapes: test_conv_resnet.c).
 * With TT_BENCH_CONV=1 it also times each algorithm on the
 * UNet's 16->16 3x3 conv on 4x256x256 and a 7x7 one (not run by default;
 * TT_BENCH_REPS=N: best of N - 1 runs after a warm-up, default 3).
 * The autotuner is tested in test_conv_autotune.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "ops/conv2d.h"
#include "ops/conv_transpose2d.h"
#include "ref_conv.h"
#include "ref_conv_cases.h"
#include "ref_conv_check.h"

/* ---- conv2d cases -------------------------------------------------------- */

/* Forced algorithms that do not run a shape at all fall back everywhere. */
static void test_fallback_runs(void)
{
    static const conv2d_case fallback[] = {
        {"winograd on k3 s2 -> im2col", D(1, 3, 7, 9, 4, 3, 3, 2, 2, 1, 1, 1, 1, WINOGRAD), 1},
    };
    ref_conv2d_check_cases("fallback", fallback, COUNT(fallback), 0);
    /* a grouped 3x3 (ResNeXt's) forced on every algorithm: those that
     * run no groups fall back (direct_w16 once claimed it and was off by
     * orders of magnitude) */
#define G4(a) {1, 8, 6, 16, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2, TT_CONV_ALGO_##a, 0, {0}, 0}
    static const conv2d_case grouped[] = {
        {"grouped, direct", G4(DIRECT), 1},         {"grouped, direct_w16", G4(DIRECT_W16), 1},
        {"grouped, winograd", G4(WINOGRAD), 1},     {"grouped, winograd4", G4(WINOGRAD4), 1},
        {"grouped, w4 fused", G4(WINOGRAD4_FUSED), 1}, {"grouped, w4 sum", G4(WINOGRAD4_SUM), 1},
        {"grouped, tiled", G4(DIRECT_TILED), 1},    {"grouped, direct_w8", G4(DIRECT_W8), 1},
    };
    static const conv2d_case grouped_runs[] = {{"grouped, implicit", G4(IMPLICIT_GEMM), 1}};
#undef G4
    ref_conv2d_check_cases("grouped", grouped, COUNT(grouped), 0);
    ref_conv2d_check_cases("grouped", grouped_runs, COUNT(grouped_runs), ALL_DIRS);
    tt_conv2d_desc one = D(1, 4, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT);
    one.groups = 2;
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&one, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_IM2COL_GEMM);
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
    /* each case with PyTorch's expression of it */
    static const struct {
        conv2d_case c;
        const char *expr;
    } torch_cases[] = {
        {{"torch direct k3 s2 p1 2x3x7x9", D(2, 3, 7, 9, 5, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 1},
         "F.conv2d(x, w, b, stride=2, padding=1)"},
        {{"torch winograd k3 p1 2x3x7x9", D(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD), 1},
         "F.conv2d(x, w, b, padding=1)"},
        {{"torch winograd4x4 k3 p1 2x16x7x9",
          D(2, 16, 7, 9, 32, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4), 1},
         "F.conv2d(x, w, b, padding=1)"},
        {{"torch winograd4x4_fused k3 p1 2x16x5x70",
          D(2, 16, 5, 70, 16, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD4_FUSED), 1},
         "F.conv2d(x, w, b, padding=1)"},
    };
    for (size_t i = 0; i < COUNT(torch_cases); i++) {
        const conv2d_case *c = &torch_cases[i].c;
        const tt_conv2d_desc *d = &c->desc;
        if (!ref_conv2d_runs_here(c->name, d)) continue;
        ref_conv_op op = ref_conv2d_case_op(c, 0);
        int oh = tt_conv2d_out_h(d), ow = tt_conv2d_out_w(d);
        int inp[4] = {d->batch, d->in_channels, d->in_h, d->in_w};
        int weight[4] = {d->out_channels, d->in_channels, d->kernel_h, d->kernel_w};
        if (!ref_conv_check_torch(&op, torch_cases[i].expr, inp, weight,
                                  (int[]){d->batch, d->out_channels, oh, ow}, 90 + i))
            break; /* no torch: said once */
    }
}

/* ---- conv_transpose2d through conv2d's rows -------------------------------- */

typedef struct convt_case {
    const char *name;
    tt_conv_transpose2d_desc desc;
    int with_bias;
} convt_case;

/* N, Cin, H, W, Cout, kH, kW, sH, sW, pH, pW, opH, opW, algorithm */
#define T(n, ci, h, w, co, kh, kw, sh, sw, ph, pw, oph, opw, a) \
    {n, ci, h, w, co, kh, kw, sh, sw, ph, pw, oph, opw, 1, 1, 1, TT_CONV_ALGO_##a, {0}, 0}

static const convt_case convt_cases[] = {
    {"convT direct k2 s2 (UNet) 4x3 5->3", T(2, 5, 4, 3, 3, 2, 2, 2, 2, 0, 0, 0, 0, DIRECT), 1},
    /* tiling kernels (kernel = stride): ragged channel blocks, 3x3, 2x3, no bias */
    {"convT direct tiles k2 s2 5x7 9->6", T(2, 9, 5, 7, 6, 2, 2, 2, 2, 0, 0, 0, 0, DIRECT), 1},
    {"convT direct tiles k2 s2 3x19 5->3", T(2, 5, 3, 19, 3, 2, 2, 2, 2, 0, 0, 0, 0, DIRECT), 1},
    {"convT direct tiles k3 s3 3x4 5->7", T(1, 5, 3, 4, 7, 3, 3, 3, 3, 0, 0, 0, 0, DIRECT), 0},
    {"convT direct tiles k2x3 s2x3 1x1 3->5", T(3, 3, 1, 1, 5, 2, 3, 2, 3, 0, 0, 0, 0, DIRECT), 1},
    /* rows of 16 and more (DIRECT_W16's 16-lane forward):
     * one vector, a work-item and a part (70 = 64 + 6), kernel 3x2 */
    {"convT direct tiles k2 s2 2x16 4->3", T(2, 4, 2, 16, 3, 2, 2, 2, 2, 0, 0, 0, 0, DIRECT), 1},
    {"convT direct tiles k2 s2 3x70 6->9", T(1, 6, 3, 70, 9, 2, 2, 2, 2, 0, 0, 0, 0, DIRECT), 0},
    {"convT direct tiles k3x2 s3x2 2x21 3->2",
     T(2, 3, 2, 21, 2, 3, 2, 3, 2, 0, 0, 0, 0, DIRECT), 1},
    /* output padding: not a tiling, through conv2d's rows */
    {"convT direct k2 s2 op1 3x4 3->4", T(1, 3, 3, 4, 4, 2, 2, 2, 2, 0, 0, 1, 1, DIRECT), 1},
    {"convT direct k3 s2 p1 op1 4x5", T(1, 3, 4, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 0},
    {"convT winograd k3 s1 p1 5x7 3->4", T(1, 3, 5, 7, 4, 3, 3, 1, 1, 1, 1, 0, 0, WINOGRAD), 1},
    {"convT igemm k2 s2 (UNet) 4x3 5->3", T(2, 5, 4, 3, 3, 2, 2, 2, 2, 0, 0, 0, 0, IMPLICIT_GEMM), 1},
    {"convT igemm k3 s2 p1 op1 4x5", T(1, 3, 4, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, IMPLICIT_GEMM), 0},
    {"convT igemm k3 s2 d2 g2 op1 3x4",
     {1, 4, 3, 4, 6, 3, 3, 2, 2, 1, 1, 1, 0, 2, 2, 2, TT_CONV_ALGO_IMPLICIT_GEMM, {0}, 0}, 1},
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

/* Every case as it is (DIRECT: the scalar kernels), then the DIRECT cases
 * as DIRECT_W16 (the 16-lane forward of a tiling 2-wide kernel, conv2d's
 * 16-wide rows elsewhere, im2col_gemm for what neither runs), then as
 * DIRECT_W8 (the 8-wide tiles of a 2-wide kernel, conv2d's 8-wide rows
 * elsewhere). */
static void test_conv_transpose(void)
{
    ref_conv_errors worst = {0};
    for (size_t k = 0; k < 3 * COUNT(convt_cases); k++) {
        size_t i = k % COUNT(convt_cases);
        tt_conv_transpose2d_desc as_wide = convt_cases[i].desc;
        int w16 = k / COUNT(convt_cases) == 1, w8 = k / COUNT(convt_cases) == 2;
        if ((w16 || w8) && as_wide.algo != TT_CONV_ALGO_DIRECT) continue;
        if (w16 || w8) as_wide.algo = w16 ? TT_CONV_ALGO_DIRECT_W16 : TT_CONV_ALGO_DIRECT_W8;
        const tt_conv_transpose2d_desc *d = w16 || w8 ? &as_wide : &convt_cases[i].desc;
        TH_OK(tt_conv_transpose2d_check(d));
        int oh = tt_conv_transpose2d_out_h(d), ow = tt_conv_transpose2d_out_w(d);
        CU_ASSERT_EQUAL(oh, ref_conv_transpose2d_out_size(d->in_h, d->kernel_h, d->stride_h,
                                                          d->pad_h, d->output_pad_h,
                                                          d->dilation_h ? d->dilation_h : 1));
        if (w16 && d->kernel_w == 2 && d->in_w >= 16 && d->stride_w == 2 && !d->output_pad_w) {
            /* the 16-lane forward itself; the backward falls back */
            CU_ASSERT_EQUAL(tt_conv_transpose2d_algo_for(d, TT_CONV_DIR_FORWARD),
                            TT_CONV_ALGO_DIRECT_W16);
            CU_ASSERT_EQUAL(tt_conv_transpose2d_algo_for(d, TT_CONV_DIR_BACKWARD_DATA),
                            TT_CONV_ALGO_IM2COL_GEMM);
        }
        if (!ref_convt_runs_here(convt_cases[i].name, d)) continue;
        size_t ws = tt_conv_transpose2d_workspace_bytes(d);
        ref_conv_op op = {
            .name = convt_cases[i].name, .desc = d,
            .inp_count = (size_t)d->batch * d->in_channels * d->in_h * d->in_w,
            .weight_count = (size_t)d->in_channels * d->out_channels * d->kernel_h * d->kernel_w,
            .bias_count = (size_t)d->out_channels,
            .out_count = (size_t)d->batch * d->out_channels * oh * ow,
            /* DIRECT_W16 forwards take none of the workspace its fallbacks size */
            .with_bias = convt_cases[i].with_bias, .pass_workspace = (w16 || i % 2) && ws > 0,
            .workspace_bytes = ws, .ref_forward = ref_convt_forward,
            .forward = dev_convt_forward, .backward = dev_convt_backward};
        ref_conv_errors e = ref_conv_check_case(&op, 3000 + i);
        worst.forward = fmax(worst.forward, e.forward);
        worst.dinp = fmax(worst.dinp, e.dinp);
        worst.dweight = fmax(worst.dweight, e.dweight);
    }
    printf("\n    conv_transpose2d largest: forward %.2e  dinp %.2e  dweight %.2e\n",
           worst.forward, worst.dinp, worst.dweight);
}

/* ---- timing of the UNet's 16->16 3x3 conv (TT_BENCH_CONV=1) ------------- */

/* Times forward, backward-data and backward-weight of `d` with every
 * algorithm (TT_BENCH_CONV_ALGOS="direct,winograd" picks some). */
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
        {"forced algorithms fall back on shapes they do not run", test_fallback_runs},
        {"the input gradient overwrites, through every algorithm",
         test_input_gradient_overwrites},
        {"an algorithm the backend lacks is refused by name", test_missing_refused},
        {"cross-check against PyTorch", test_torch},
        {"conv_transpose2d through every algorithm", test_conv_transpose},
        {"timing per algorithm (TT_BENCH_CONV=1)", test_bench},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_algos", tests, TH_EVERY);
}

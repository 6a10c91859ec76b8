/*
 * conv2d (im2col + CLBlast GEMM) against the double reference: kernels 1, 3,
 * 5, 7, strides 1 and 2, odd and 1x1 images, batch 1 and 2, channel counts
 * not multiples of 4, groups and depthwise, dilation, with and without bias;
 * finite-difference gradients of input, weight and bias; backward adds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "harness.h"
#include "ops/conv2d.h"
#include "ops/conv_verify.h"
#include "ref_conv.h"
#include "ref_conv_check.h"

typedef struct conv2d_case {
    const char *name;
    tt_conv2d_desc desc;
    int with_bias;
} conv2d_case;

/* N, Cin, H, W, Cout, kH, kW, sH, sW, pH, pW, dH, dW, groups */
#define D(n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, g) \
    {n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, g, TT_CONV_ALGO_IM2COL_GEMM, 0, {0}, 0}

static const conv2d_case cases[] = {
    {"k1 s1 7x9 3->5", D(2, 3, 7, 9, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1), 1},
    {"k1 s2 7x9 5->3", D(1, 5, 7, 9, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1), 0},
    {"k3 s1 p1 7x9 3->5", D(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1), 1},
    {"k3 s2 p1 9x7 5->3", D(1, 5, 9, 7, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1), 0},
    {"k3 s1 p0 7x9 3->5", D(1, 3, 7, 9, 5, 3, 3, 1, 1, 0, 0, 1, 1, 1), 1},
    {"k5 s1 p2 7x9 3->4", D(1, 3, 7, 9, 4, 5, 5, 1, 1, 2, 2, 1, 1, 1), 1},
    {"k5 s2 p0 7x9 3->5", D(2, 3, 7, 9, 5, 5, 5, 2, 2, 0, 0, 1, 1, 1), 0},
    {"k7 s1 p3 7x9 3->5", D(1, 3, 7, 9, 5, 7, 7, 1, 1, 3, 3, 1, 1, 1), 1},
    {"k7 s2 p3 9x7 3->2", D(2, 3, 9, 7, 2, 7, 7, 2, 2, 3, 3, 1, 1, 1), 1},
    {"1x1 image k1 3->5", D(1, 3, 1, 1, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1), 1},
    {"1x1 image k3 p1 3->5", D(2, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1), 1},
    {"k3x1 s(1,2) p(1,0) 7x9", D(1, 3, 7, 9, 5, 3, 1, 1, 2, 1, 0, 1, 1, 1), 1},
    {"k3 dilation 2 p2 7x9", D(1, 3, 7, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2, 1), 1},
    {"k3 p1 groups 2 4->6", D(1, 4, 7, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2), 1},
    {"depthwise k3 p1 5->5", D(2, 5, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 5), 1},
    {"depthwise x2 k3 s2 p1 3->6", D(1, 3, 7, 9, 6, 3, 3, 2, 2, 1, 1, 1, 1, 3), 0},
    {"k1 groups 3 6->3 (no cols)", D(1, 6, 5, 3, 3, 1, 1, 1, 1, 0, 0, 1, 1, 3), 1},
    /* planes over 8192 positions: the weight gradient sums them in runs */
    {"k3 p1 91x97 1->2 (runs)", D(1, 1, 91, 97, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1), 1},
    {"k1 89x101 1->2 (runs, no cols)", D(1, 1, 89, 101, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1), 0},
};

static void ref_forward(double *out, const double *inp, const double *weight,
                        const double *bias, const void *desc)
{
    ref_conv2d_forward(out, inp, weight, bias, desc);
}

static tt_status dev_forward(tt_backend *be, tt_mem out, tt_mem inp, tt_mem weight, tt_mem bias,
                             const void *desc, tt_mem ws)
{
    return tt_conv2d_forward(be, out, inp, weight, bias, desc, ws);
}

static tt_status dev_backward(tt_backend *be, tt_mem dinp, tt_mem dweight, tt_mem dbias,
                              tt_mem dout, tt_mem inp, tt_mem weight, const void *desc,
                              tt_mem ws)
{
    return tt_conv2d_backward(be, dinp, dweight, dbias, dout, inp, weight, desc, ws);
}

static ref_conv_op op_of(const conv2d_case *c, int pass_workspace)
{
    const tt_conv2d_desc *d = &c->desc;
    int oh = ref_conv2d_out_size(d->in_h, d->kernel_h, d->stride_h, d->pad_h, d->dilation_h);
    int ow = ref_conv2d_out_size(d->in_w, d->kernel_w, d->stride_w, d->pad_w, d->dilation_w);
    CU_ASSERT_EQUAL(tt_conv2d_out_h(d), oh);
    CU_ASSERT_EQUAL(tt_conv2d_out_w(d), ow);
    return (ref_conv_op){
        .name = c->name, .desc = d,
        .inp_count = (size_t)d->batch * d->in_channels * d->in_h * d->in_w,
        .weight_count = (size_t)d->out_channels * (d->in_channels / d->groups) * d->kernel_h *
                        d->kernel_w,
        .bias_count = (size_t)d->out_channels,
        .out_count = (size_t)d->batch * d->out_channels * oh * ow,
        .with_bias = c->with_bias, .pass_workspace = pass_workspace,
        .workspace_bytes = tt_conv2d_workspace_bytes(d),
        .ref_forward = ref_forward, .forward = dev_forward, .backward = dev_backward};
}

static void test_cases(void)
{
    ref_conv_errors worst = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TH_OK(tt_conv2d_check(&cases[i].desc));
        ref_conv_op op = op_of(&cases[i], (int)(i % 2));
        ref_conv_errors e = ref_conv_check_case(&op, 1000 + i);
        if (e.forward > worst.forward) worst.forward = e.forward;
        if (e.dinp > worst.dinp) worst.dinp = e.dinp;
        if (e.dweight > worst.dweight) worst.dweight = e.dweight;
        if (e.dbias > worst.dbias) worst.dbias = e.dbias;
    }
    printf("\n    conv2d largest: forward %.2e (tol %.0e)  dinp %.2e  dweight %.2e  dbias %.2e "
           "(tol %.0e)\n",
           worst.forward, REF_CONV_FWD_TOL, worst.dinp, worst.dweight, worst.dbias,
           REF_CONV_GRAD_TOL);
}

/* A GPU's cap on one launch's work (device_traits.h dispatch_flops): every
 * small case with 5 output positions a GEMM (2 Cout K operations each),
 * against the reference; and on OpenCL, the forward of 63 positions at 270
 * operations each, under a cap of 2700, in 7 GEMMs where it was one. */
static void test_capped_runs(void)
{
    for (size_t i = 0; i < 17; i++) {
        const tt_conv2d_desc *c = &cases[i].desc;
        char cap[32];
        snprintf(cap, sizeof cap, "%d", 2 * c->out_channels * c->in_channels / c->groups *
                                            c->kernel_h * c->kernel_w * 5);
        th_setenv("TT_DISPATCH_FLOPS", cap);
        ref_conv_op op = op_of(&cases[i], (int)(i % 2));
        ref_conv_check_case(&op, 2000 + i);
    }
    uint64_t gemms[2] = {0};
    tt_conv2d_desc d = cases[2].desc; /* k3 s1 p1 7x9 3->5, 2 images */
    d.batch = 1;
    for (int capped = 0; capped < 2 && th_backend_kind() == TT_BACKEND_OPENCL; capped++) {
        th_setenv("TT_DISPATCH_FLOPS", capped ? "2700" : "0");
        tt_backend *be = th_profiling_backend();
        CU_ASSERT_PTR_NOT_NULL_FATAL(be);
        size_t ws_bytes = tt_conv2d_workspace_bytes(&d);
        tt_buffer *x = NULL, *w = NULL, *y = NULL, *ws = NULL;
        TH_OK(tt_buffer_alloc(be, 3 * 63 * 4, TT_MEM_OTHER, "x", &x));
        TH_OK(tt_buffer_alloc(be, 5 * 27 * 4, TT_MEM_OTHER, "w", &w));
        TH_OK(tt_buffer_alloc(be, 5 * 63 * 4, TT_MEM_OTHER, "y", &y));
        TH_OK(tt_buffer_alloc(be, ws_bytes, TT_MEM_WORKSPACE, "ws", &ws));
        TH_OK(tt_conv2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w), (tt_mem){0}, &d,
                                tt_mem_of(ws)));
        TH_OK(tt_finish(be));
        gemms[capped] = th_launches(be, "gemm");
        tt_buffer_free(x), tt_buffer_free(w), tt_buffer_free(y), tt_buffer_free(ws);
        tt_backend_destroy(be);
    }
    th_setenv("TT_DISPATCH_FLOPS", NULL);
    if (th_backend_kind() != TT_BACKEND_OPENCL) return; /* Vulkan's GEMM splits by itself */
    printf("\n    63 positions: %llu GEMM(s), %llu under the cap", (unsigned long long)gemms[0],
           (unsigned long long)gemms[1]);
    CU_ASSERT(gemms[0] == 1 && gemms[1] == 7);
}

/* The columns of one image are the whole workspace; 1x1 stride 1 needs none. */
static void test_workspace_size(void)
{
    tt_conv2d_desc d = D(4, 3, 7, 9, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1);
    CU_ASSERT_EQUAL(tt_conv2d_workspace_bytes(&d), (size_t)3 * 9 * 4 * 5 * sizeof(float));
    tt_conv2d_desc one = D(4, 3, 7, 9, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1);
    CU_ASSERT_EQUAL(tt_conv2d_workspace_bytes(&one), 0);
    d.groups = 2; /* does not divide 3 */
    CU_ASSERT_EQUAL(tt_conv2d_workspace_bytes(&d), 0);
    /* forced blocks reach the row: implicit_gemm's 126 pixels in slices of
     * 7 need partial sums (one slice needs none); winograd4x4's 40 tiles
     * in chunks of one row of 5 need less room than in one chunk */
    tt_conv2d_desc ig = D(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1);
    ig.algo = TT_CONV_ALGO_IMPLICIT_GEMM;
    size_t own = tt_conv2d_workspace_bytes(&ig);
    ig.blocks.igemm_slice = 7;
    CU_ASSERT(tt_conv2d_workspace_bytes(&ig) > own);
    tt_conv2d_desc w4 = D(2, 16, 13, 17, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1);
    w4.algo = TT_CONV_ALGO_WINOGRAD4;
    own = tt_conv2d_workspace_bytes(&w4);
    w4.blocks.w4_chunk_tiles = 1;
    CU_ASSERT(tt_conv2d_workspace_bytes(&w4) < own);
}

static void expect_error(tt_status s, tt_code code, const char *mention)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(tt_status_code(s), code);
    if (mention && !strstr(tt_status_message(s), mention)) {
        printf("\n    message lacks '%s': %s", mention, tt_status_message(s));
        CU_FAIL("error message does not name the problem");
    }
    tt_status_free(s);
}

static void test_bad_arguments(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_conv2d_desc d = D(1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1);
    tt_buffer *x = th_zeros(3 * 7 * 9, "bad.inp");
    tt_buffer *w = th_zeros(5 * 3 * 9 - 1, "bad.weight"); /* one float short */
    tt_buffer *y = th_zeros(5 * 7 * 9, "bad.out");
    expect_error(tt_conv2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w), (tt_mem){0}, &d,
                                   (tt_mem){0}),
                 TT_ERR_INVALID_ARGUMENT, "weight");
    tt_conv2d_desc g = d;
    g.groups = 2;
    expect_error(tt_conv2d_check(&g), TT_ERR_INVALID_ARGUMENT, "groups");
    tt_conv2d_desc big = d;
    big.kernel_h = 11; /* 7 + 2 < 11 */
    expect_error(tt_conv2d_check(&big), TT_ERR_INVALID_ARGUMENT, "kernel");
    tt_conv2d_desc algo = d;
    algo.algo = TT_CONV_ALGO_COUNT;
    expect_error(tt_conv2d_check(&algo), TT_ERR_INVALID_ARGUMENT, "algorithm");
    /* forced blockings: a named algorithm's own, whole and in range */
    static const struct {
        tt_conv_algo algo;
        tt_conv_blocks blocks;
        const char *says; /* NULL: accepted */
    } blockings[] = {
        {TT_CONV_ALGO_IMPLICIT_GEMM, TT_CONV_IGEMM_TILE(4, 4, 16, 16, 16), NULL},
        {TT_CONV_ALGO_IMPLICIT_GEMM, {.igemm_slice = 7}, NULL},
        {TT_CONV_ALGO_DIRECT_W16, {.w16_band_rows = 3, .w16_partial_floats = 1}, NULL},
        {TT_CONV_ALGO_WINOGRAD4_SUM, {.w4_chunk_tiles = 1}, NULL},
        {TT_CONV_ALGO_AUTO, {.igemm_slice = 7}, "auto"},
        {TT_CONV_ALGO_DIRECT, {.igemm_slice = 7}, "implicit_gemm's"},
        {TT_CONV_ALGO_IMPLICIT_GEMM, {.w16_band_rows = 4}, "direct_w16's"},
        {TT_CONV_ALGO_DIRECT_W16, {.w4_chunk_tiles = 8}, "winograd4x4"},
        {TT_CONV_ALGO_IMPLICIT_GEMM, {.igemm_rm = 4, .igemm_rn = 4}, "all five"},
        {TT_CONV_ALGO_IMPLICIT_GEMM, TT_CONV_IGEMM_TILE(4, 5, 16, 16, 16), "rn 4, 8 or 16"},
        {TT_CONV_ALGO_IMPLICIT_GEMM, TT_CONV_IGEMM_TILE(4, 8, 4, 16, 16), "bk"},
        {TT_CONV_ALGO_IMPLICIT_GEMM, TT_CONV_IGEMM_TILE(9, 4, 16, 16, 16), "rm 1..8"},
        {TT_CONV_ALGO_IMPLICIT_GEMM, TT_CONV_IGEMM_TILE(4, 4, 16, 3, 16), "powers of two"},
        {TT_CONV_ALGO_IMPLICIT_GEMM, {.igemm_slice = -1}, ">= 0"},
    };
    for (size_t i = 0; i < sizeof blockings / sizeof blockings[0]; i++) {
        tt_conv2d_desc b = d;
        b.algo = blockings[i].algo, b.blocks = blockings[i].blocks;
        if (blockings[i].says)
            expect_error(tt_conv2d_check(&b), TT_ERR_INVALID_ARGUMENT, blockings[i].says);
        else
            TH_OK(tt_conv2d_check(&b));
    }
    /* a caller's workspace too small for the algorithm that runs (sized for
     * other picks) is not an error: the op takes a temporary one and the
     * caller's stays untouched */
    tt_buffer *small_ws = th_zeros(4, "small.workspace");
    tt_buffer *w_ok = th_zeros(5 * 3 * 9, "ok.weight");
    tt_conv2d_desc im2col = d;
    im2col.algo = TT_CONV_ALGO_IM2COL_GEMM;
    tt_memstats_reset_peaks(&be->mem);
    uint64_t before = be->mem.current[TT_MEM_WORKSPACE];
    TH_OK(tt_conv2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w_ok), (tt_mem){0}, &im2col,
                            tt_mem_of(small_ws)));
    /* the temporary held one image's columns (Cin 3 x 9 taps x 7 x 9), accounted, then freed */
    CU_ASSERT(be->mem.peak[TT_MEM_WORKSPACE] >= before + 3 * 9 * 7 * 9 * sizeof(float));
    CU_ASSERT_EQUAL(be->mem.current[TT_MEM_WORKSPACE], before);
    float ws_after[4];
    th_download(ws_after, small_ws, 4);
    CU_ASSERT(ws_after[0] == 0 && ws_after[1] == 0 && ws_after[2] == 0 && ws_after[3] == 0);
    CU_ASSERT_STRING_EQUAL(tt_conv_algo_name(TT_CONV_ALGO_IM2COL_GEMM), "im2col_gemm");
    tt_buffer_free(x), tt_buffer_free(w), tt_buffer_free(y), tt_buffer_free(small_ws);
    tt_buffer_free(w_ok);
}

/* out += conv(inp, weight) for every algorithm that runs the shape:
 * random out before, reference after. */
static void test_forward_add(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    const tt_conv_algo algos[] = {TT_CONV_ALGO_IM2COL_GEMM, TT_CONV_ALGO_DIRECT,
                                  TT_CONV_ALGO_DIRECT_TILED, TT_CONV_ALGO_DIRECT_W8,
                                  TT_CONV_ALGO_WINOGRAD, TT_CONV_ALGO_IMPLICIT_GEMM};
    /* the last: DIRECT_W16 on a plane 32 wide (where the backend has it) */
    for (size_t a = 0; a <= sizeof algos / sizeof algos[0]; a++) {
        int wide = a == sizeof algos / sizeof algos[0];
        tt_conv_algo algo = wide ? TT_CONV_ALGO_DIRECT_W16 : algos[a];
        tt_conv2d_desc d = D(2, 3, 9, wide ? 32 : 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1);
        d.algo = algo;
        if (!ref_conv2d_runs_here(tt_conv_algo_name(d.algo), &d)) continue;
        int oh = tt_conv2d_out_h(&d), ow = tt_conv2d_out_w(&d);
        size_t ni = (size_t)2 * 3 * 9 * d.in_w, nw = (size_t)4 * 3 * d.kernel_h * d.kernel_w, no = (size_t)2 * 4 * oh * ow;
        uint64_t seed = 61 + a;
        float *x = malloc(ni * sizeof(float)), *w = malloc(nw * sizeof(float)), *o = malloc(no * sizeof(float));
        float *got = malloc(no * sizeof(float));
        double *want = malloc(no * sizeof(double));
        CU_ASSERT_FATAL(x && w && o && got && want);
        th_fill_uniform(x, ni, -1, 1, &seed);
        th_fill_uniform(w, nw, -1, 1, &seed);
        th_fill_uniform(o, no, -1, 1, &seed);
        tt_buffer *xb = th_upload(x, ni, "add.inp"), *wb = th_upload(w, nw, "add.weight");
        tt_buffer *ob = th_upload(o, no, "add.out");
        TH_OK(tt_conv2d_forward_add(be, tt_mem_of(ob), tt_mem_of(xb), tt_mem_of(wb), &d, (tt_mem){0}));
        th_download(got, ob, no);
        double *xd = th_to_double(x, ni), *wd = th_to_double(w, nw);
        ref_conv2d_forward(want, xd, wd, NULL, &d);
        for (size_t i = 0; i < no; i++) want[i] += o[i];
        double e = th_max_rel_error(got, want, no, REF_CONV_FWD_FLOOR);
        printf("\n    forward_add %-12s %2dx%d %.2e", tt_conv_algo_name(algo), d.in_h, d.in_w, e);
        CU_ASSERT(e < REF_CONV_FWD_TOL);
        tt_buffer_free(xb), tt_buffer_free(wb), tt_buffer_free(ob);
        free(x), free(w), free(o), free(got), free(want), free(xd), free(wd);
    }
}

static void ref_backward(double *dinp, double *dweight, const double *inp, const double *weight,
                         const double *dout, const void *desc)
{
    ref_conv2d_backward(dinp, dweight, inp, weight, dout, desc);
}

/* The reference backward with its last tap's weight gradient lost. */
static void ref_backward_planted(double *dinp, double *dweight, const double *inp,
                                 const double *weight, const double *dout, const void *desc)
{
    const tt_conv2d_desc *d = desc;
    ref_conv2d_backward(dinp, dweight, inp, weight, dout, d);
    size_t taps = (size_t)d->kernel_h * d->kernel_w;
    for (size_t i = taps - 1; i < (size_t)d->out_channels * d->in_channels * taps; i += taps)
        dweight[i] = 0;
}

/* Large cases check the device's gradients against the reference backward
 * once a sample of finite differences agrees with it (ref_conv_check.c):
 * the reference agrees to rounding, and one that lost a tap is caught. */
/* A head's 1x1 weight gradient at full resolution (352x528 positions,
 * as FPN's head at 1408x2112) over a region where its input and the
 * loss's gradient are even: equal terms, whose roundings in one long run
 * go the same way.  im2col_gemm keeps within the verifier's bound of
 * their sum on every backend (one GEMM over all 185,856 was 2.5e-3 off on
 * PoCL, six times the bound). */
static void test_long_weight_reduction(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_conv2d_desc d = D(1, 2, 352, 528, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1);
    size_t plane = 352 * 528, ni = 2 * plane, no = 4 * plane, nw = 8;
    float *x = malloc(ni * sizeof(float)), *dy = malloc(no * sizeof(float)), got[8];
    CU_ASSERT_FATAL(x && dy);
    for (size_t i = 0; i < ni; i++) x[i] = 0.7f;
    for (size_t i = 0; i < no; i++) dy[i] = 0.3f;
    tt_buffer *xb = th_upload(x, ni, "long.inp"), *dyb = th_upload(dy, no, "long.dout");
    tt_buffer *wb = th_zeros(nw, "long.weight"), *dwb = th_zeros(nw, "long.dweight");
    TH_OK(tt_conv2d_backward(be, (tt_mem){0}, tt_mem_of(dwb), (tt_mem){0}, tt_mem_of(dyb),
                             tt_mem_of(xb), tt_mem_of(wb), &d, (tt_mem){0}));
    th_download(got, dwb, nw);
    double worst = 0;
    for (size_t o = 0; o < 4; o++)
        for (size_t c = 0; c < 2; c++) {
            double want = 0, mag = 0;
            for (size_t p = 0; p < plane; p++) {
                double t = (double)dy[o * plane + p] * x[c * plane + p];
                want += t, mag += fabs(t);
            }
            double e = fabs(got[o * 2 + c] - want) / mag;
            if (e > worst) worst = e;
        }
    double bound = tt_conv_verify_bound(plane);
    printf("\n    im2col_gemm weight gradient over %zu equal terms: %.2e of their sum (bound %.2e)",
           plane, worst, bound);
    CU_ASSERT(worst <= bound);
    tt_buffer_free(xb), tt_buffer_free(dyb), tt_buffer_free(wb), tt_buffer_free(dwb);
    free(x), free(dy);
}

static void test_reference_backward(void)
{
    static const conv2d_case c = {"reference k3 s2 p1 2x3x7x9", D(2, 3, 7, 9, 5, 3, 3, 2, 2, 1, 1,
                                                                  1, 1, 1), 1};
    ref_conv_op op = op_of(&c, 0);
    op.ref_backward = ref_backward;
    double good = ref_conv_backward_gap(&op, 5);
    op.ref_backward = ref_backward_planted;
    double planted = ref_conv_backward_gap(&op, 5);
    printf("\n    sampled finite differences: the reference %.1e off, one without its last "
           "tap %.1e off",
           good, planted);
    CU_ASSERT(good <= REF_CONV_REF_GAP);
    CU_ASSERT(planted > 1e-2);
}

static void test_torch(void)
{
    static const conv2d_case c = {"torch k3 s2 p1 g1 2x3x7x9", D(2, 3, 7, 9, 5, 3, 3, 2, 2, 1, 1,
                                                                  1, 1, 1), 1};
    ref_conv_op op = op_of(&c, 0);
    int oh = tt_conv2d_out_h(&c.desc), ow = tt_conv2d_out_w(&c.desc);
    ref_conv_check_torch(&op, "F.conv2d(x, w, b, stride=2, padding=1)",
                         (int[]){2, 3, 7, 9}, (int[]){5, 3, 3, 3}, (int[]){2, 5, oh, ow}, 77);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"forward and gradients, all cases", test_cases},
        {"the reference backward against sampled finite differences", test_reference_backward},
        {"workspace size", test_workspace_size},
        {"im2col_gemm in runs under a GPU's cap on a launch's work", test_capped_runs},
        {"a long weight-gradient reduction within the verifier's bound", test_long_weight_reduction},
        {"forward adding into out, every algorithm", test_forward_add},
        {"bad arguments are reported", test_bad_arguments},
        {"cross-check against PyTorch", test_torch},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv2d", tests, TH_EVERY);
}

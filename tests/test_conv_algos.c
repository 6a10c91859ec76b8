/*
 * Every convolution algorithm against the double reference, on the shapes
 * it supports: DIRECT (untiled and local-memory tiled), WINOGRAD and FFT,
 * for conv2d and conv_transpose2d (which runs through conv2d's rows), with
 * odd sizes, 1x1 images, batch 1 and 2, channel counts not multiples of 4;
 * finite-difference gradients of input, weight and bias, backward adds
 * (ref_conv_check_case).  Then the dispatch (fallbacks), the autotuner and
 * its find-db, forcing, and a corrupt find-db.  With TT_BENCH_CONV=1 it also
 * times each algorithm on the UNet's 16->16 3x3 conv on 4x256x256.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "harness.h"
#include "ops/conv2d.h"
#include "ops/conv_autotune.h"
#include "ops/conv_transpose2d.h"
#include "ref_conv.h"
#include "ref_conv_check.h"

/* ---- conv2d cases -------------------------------------------------------- */

typedef struct conv2d_case {
    const char *name;
    tt_conv2d_desc desc;
    int with_bias;
} conv2d_case;

/* N, Cin, H, W, Cout, kH, kW, sH, sW, pH, pW, dH, dW, algorithm */
#define D(n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, a) \
    {n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, 1, TT_CONV_ALGO_##a}

static const conv2d_case direct_cases[] = {
    {"direct k3 s1 p1 7x9 3->5", D(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct k3 s2 p1 9x7 6->9", D(1, 6, 9, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 0},
    {"direct k1 s1 7x9 5->3", D(2, 5, 7, 9, 3, 1, 1, 1, 1, 0, 0, 1, 1, DIRECT), 1},
    {"direct k5 s2 p0 7x9 3->5", D(1, 3, 7, 9, 5, 5, 5, 2, 2, 0, 0, 1, 1, DIRECT), 1},
    {"direct k7 s1 p3 5x6 2->3", D(1, 2, 5, 6, 3, 7, 7, 1, 1, 3, 3, 1, 1, DIRECT), 1},
    {"direct k3x1 s(1,2) p(1,0)", D(1, 3, 7, 9, 5, 3, 1, 1, 2, 1, 0, 1, 1, DIRECT), 1},
    {"direct k3 dilation 2 p2", D(1, 3, 7, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2, DIRECT), 1},
    {"direct 1x1 image k3 p1", D(2, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
};

static const conv2d_case tiled_cases[] = {
    {"direct tiled k3 p1 19x21 3->5", D(2, 3, 19, 21, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT), 1},
    {"direct tiled k5 s2 p2 9x7", D(1, 3, 9, 7, 6, 5, 5, 2, 2, 2, 2, 1, 1, DIRECT), 0},
    {"direct tiled dilation 2 1x1", D(1, 2, 1, 1, 3, 3, 3, 1, 1, 2, 2, 2, 2, DIRECT), 1},
};

static const conv2d_case winograd_cases[] = {
    {"winograd p1 7x9 3->5", D(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD), 1},
    {"winograd p0 8x5 5->6", D(1, 5, 8, 5, 6, 3, 3, 1, 1, 0, 0, 1, 1, WINOGRAD), 0},
    {"winograd p2 5x4 3->2", D(1, 3, 5, 4, 2, 3, 3, 1, 1, 2, 2, 1, 1, WINOGRAD), 1},
    {"winograd p(1,0) 6x7 4->3", D(2, 4, 6, 7, 3, 3, 3, 1, 1, 1, 0, 1, 1, WINOGRAD), 1},
    {"winograd 1x1 image p1", D(1, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, WINOGRAD), 1},
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
    size_t ws = tt_conv2d_workspace_bytes(d);
    return (ref_conv_op){
        .name = c->name, .desc = d,
        .inp_count = (size_t)d->batch * d->in_channels * d->in_h * d->in_w,
        .weight_count = (size_t)d->out_channels * d->in_channels * d->kernel_h * d->kernel_w,
        .bias_count = (size_t)d->out_channels,
        .out_count = (size_t)d->batch * d->out_channels * oh * ow,
        .with_bias = c->with_bias, .pass_workspace = pass_workspace && ws > 0,
        .workspace_bytes = ws,
        .ref_forward = ref_forward, .forward = dev_forward, .backward = dev_backward};
}

/* Checks every case with its algorithm, which must run `runs` directions
 * itself (bit d set: direction d) and fall back to IM2COL_GEMM for the rest. */
static double now_ms(void);

static void check_cases(const char *label, const conv2d_case *cases, size_t count, int runs)
{
    double start = now_ms();
    ref_conv_errors worst = {0};
    for (size_t i = 0; i < count; i++) {
        const tt_conv2d_desc *d = &cases[i].desc;
        TH_OK(tt_conv2d_check(d));
        for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
            tt_conv_algo want = runs & (1 << dir) ? d->algo : TT_CONV_ALGO_IM2COL_GEMM;
            CU_ASSERT_EQUAL(tt_conv2d_algo_for(d, (tt_conv_dir)dir), want);
        }
        ref_conv_op op = op_of(&cases[i], (int)(i % 2));
        ref_conv_errors e = ref_conv_check_case(&op, 2000 + i);
        worst.forward = fmax(worst.forward, e.forward);
        worst.dinp = fmax(worst.dinp, e.dinp);
        worst.dweight = fmax(worst.dweight, e.dweight);
        worst.dbias = fmax(worst.dbias, e.dbias);
    }
    printf("\n    %s largest: forward %.2e (tol %.0e)  dinp %.2e  dweight %.2e  dbias %.2e "
           "(tol %.0e); %.1f s\n",
           label, worst.forward, REF_CONV_FWD_TOL, worst.dinp, worst.dweight, worst.dbias,
           REF_CONV_GRAD_TOL, (now_ms() - start) / 1e3);
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define ALL_DIRS 7
#define FWD_AND_DATA 3

static void test_direct(void)
{
    setenv("TT_CONV_DIRECT_VARIANT", "scalar", 1);
    check_cases("direct (scalar)", direct_cases, COUNT(direct_cases), ALL_DIRS);
    setenv("TT_CONV_DIRECT_VARIANT", "w8", 1); /* stride-2 columns fall back to scalar */
    check_cases("direct (8-wide)", direct_cases, COUNT(direct_cases), ALL_DIRS);
    check_cases("direct (8-wide)", tiled_cases, COUNT(tiled_cases), ALL_DIRS);
    unsetenv("TT_CONV_DIRECT_VARIANT");
}

static void test_direct_tiled(void)
{
    setenv("TT_CONV_DIRECT_VARIANT", "tiled", 1);
    check_cases("direct (local-memory tiles)", tiled_cases, COUNT(tiled_cases), ALL_DIRS);
    unsetenv("TT_CONV_DIRECT_VARIANT");
}

static void test_winograd(void)
{
    check_cases("winograd", winograd_cases, COUNT(winograd_cases), FWD_AND_DATA);
    /* pad 3 > 2: backward data cannot be the flipped forward */
    tt_conv2d_desc p3 = D(1, 3, 5, 5, 2, 3, 3, 1, 1, 3, 3, 1, 1, WINOGRAD);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&p3, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_WINOGRAD);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&p3, TT_CONV_DIR_BACKWARD_DATA), TT_CONV_ALGO_IM2COL_GEMM);
    tt_conv2d_desc s2 = D(1, 3, 5, 5, 2, 3, 3, 2, 2, 1, 1, 1, 1, WINOGRAD);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&s2, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_IM2COL_GEMM);
}

static void test_fft(void)
{
    check_cases("fft", fft_cases, COUNT(fft_cases), ALL_DIRS);
    tt_conv2d_desc k3 = D(1, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, FFT);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&k3, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_IM2COL_GEMM);
}

/* Forced algorithms that do not run a shape at all fall back everywhere. */
static void test_fallback_runs(void)
{
    static const conv2d_case fallback[] = {
        {"winograd on k3 s2 -> im2col", D(1, 3, 7, 9, 4, 3, 3, 2, 2, 1, 1, 1, 1, WINOGRAD), 1},
        {"fft on k3 -> im2col", D(1, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, FFT), 1},
    };
    check_cases("fallback", fallback, COUNT(fallback), 0);
    tt_conv2d_desc grouped = D(1, 4, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT);
    grouped.groups = 2;
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&grouped, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_IM2COL_GEMM);
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
    {"convT direct k3 s2 p1 op1 4x5", T(1, 3, 4, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, DIRECT), 0},
    {"convT winograd k3 s1 p1 5x7 3->4", T(1, 3, 5, 7, 4, 3, 3, 1, 1, 1, 1, 0, 0, WINOGRAD), 1},
    {"convT fft k5 s1 p2 5x6 3->2", T(2, 3, 5, 6, 2, 5, 5, 1, 1, 2, 2, 0, 0, FFT), 1},
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

static void test_conv_transpose(void)
{
    ref_conv_errors worst = {0};
    for (size_t i = 0; i < COUNT(convt_cases); i++) {
        const tt_conv_transpose2d_desc *d = &convt_cases[i].desc;
        TH_OK(tt_conv_transpose2d_check(d));
        int oh = tt_conv_transpose2d_out_h(d), ow = tt_conv_transpose2d_out_w(d);
        CU_ASSERT_EQUAL(oh, ref_conv_transpose2d_out_size(d->in_h, d->kernel_h, d->stride_h,
                                                          d->pad_h, d->output_pad_h, 1));
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
    printf("\n    conv_transpose2d largest: forward %.2e  dinp %.2e  dweight %.2e\n",
           worst.forward, worst.dinp, worst.dweight);
}

/* ---- autotuner and find-db ----------------------------------------------- */

static char cache_dir[256];

static void fresh_cache_dir(void)
{
    snprintf(cache_dir, sizeof cache_dir, "/tmp/tt_conv_algos_XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(cache_dir));
    setenv("TT_CACHE_DIR", cache_dir, 1);
    unsetenv("TT_CONV_ALGO");
    tt_conv_algo_force(TT_CONV_ALGO_AUTO);
    tt_conv_autotune_reset();
}

static void remove_cache_dir(tt_backend *be)
{
    char path[1024];
    if (!tt_conv_find_db_path(be, path, sizeof path)) unlink(path);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/find-db", cache_dir);
    rmdir(dir);
    rmdir(cache_dir);
}

/* The parsed find-db of the test device; NULL when missing or corrupt. */
static cJSON *read_db(tt_backend *be)
{
    char path[1024];
    TH_OK(tt_conv_find_db_path(be, path, sizeof path));
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return cJSON_Parse(text);
}

/* Buffers for one conv2d on random data. */
typedef struct conv_run {
    tt_conv2d_desc desc;
    size_t inp_n, weight_n, out_n;
    float *inp, *weight, *dout;
    tt_buffer *inp_b, *weight_b, *bias_b, *out_b, *dout_b;
} conv_run;

static void run_init(conv_run *r, tt_conv2d_desc desc, uint64_t seed)
{
    r->desc = desc;
    int oh = tt_conv2d_out_h(&desc), ow = tt_conv2d_out_w(&desc);
    r->inp_n = (size_t)desc.batch * desc.in_channels * desc.in_h * desc.in_w;
    r->weight_n = (size_t)desc.out_channels * desc.in_channels * desc.kernel_h * desc.kernel_w;
    r->out_n = (size_t)desc.batch * desc.out_channels * oh * ow;
    r->inp = malloc(r->inp_n * sizeof(float));
    r->weight = malloc(r->weight_n * sizeof(float));
    r->dout = malloc(r->out_n * sizeof(float));
    CU_ASSERT_FATAL(r->inp && r->weight && r->dout);
    th_fill_uniform(r->inp, r->inp_n, -1, 1, &seed);
    th_fill_uniform(r->weight, r->weight_n, -1, 1, &seed);
    th_fill_uniform(r->dout, r->out_n, -1, 1, &seed);
    r->inp_b = th_upload(r->inp, r->inp_n, "tune.inp");
    r->weight_b = th_upload(r->weight, r->weight_n, "tune.weight");
    r->bias_b = th_zeros((size_t)desc.out_channels, "tune.bias");
    r->out_b = th_zeros(r->out_n, "tune.out");
    r->dout_b = th_upload(r->dout, r->out_n, "tune.dout");
}

static void run_free(conv_run *r)
{
    free(r->inp), free(r->weight), free(r->dout);
    tt_buffer_free(r->inp_b), tt_buffer_free(r->weight_b), tt_buffer_free(r->bias_b);
    tt_buffer_free(r->out_b), tt_buffer_free(r->dout_b);
}

/* Forward with r->desc; returns the error against the double reference. */
static double run_forward(tt_backend *be, conv_run *r)
{
    TH_OK(tt_conv2d_forward(be, tt_mem_of(r->out_b), tt_mem_of(r->inp_b),
                            tt_mem_of(r->weight_b), tt_mem_of(r->bias_b), &r->desc,
                            (tt_mem){0}));
    float *got = malloc(r->out_n * sizeof(float));
    double *want = malloc(r->out_n * sizeof(double));
    double *inp = th_to_double(r->inp, r->inp_n), *weight = th_to_double(r->weight, r->weight_n);
    CU_ASSERT_FATAL(got && want);
    th_download(got, r->out_b, r->out_n);
    ref_conv2d_forward(want, inp, weight, NULL, &r->desc);
    double e = th_max_rel_error(got, want, r->out_n, REF_CONV_FWD_FLOOR);
    free(got), free(want), free(inp), free(weight);
    return e;
}

/* Backward (dinp and dweight into zeros) with `algo`; downloads both. */
static void run_backward(tt_backend *be, conv_run *r, tt_conv_algo algo, float *dinp,
                         float *dweight)
{
    tt_conv2d_desc d = r->desc;
    d.algo = algo;
    tt_buffer *gi = th_zeros(r->inp_n, "tune.dinp"), *gw = th_zeros(r->weight_n, "tune.dweight");
    TH_OK(tt_conv2d_backward(be, tt_mem_of(gi), tt_mem_of(gw), (tt_mem){0}, tt_mem_of(r->dout_b),
                             tt_mem_of(r->inp_b), tt_mem_of(r->weight_b), &d, (tt_mem){0}));
    th_download(dinp, gi, r->inp_n);
    th_download(dweight, gw, r->weight_n);
    tt_buffer_free(gi), tt_buffer_free(gw);
}

static void test_autotune(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    fresh_cache_dir();
    conv_run r;
    run_init(&r, (tt_conv2d_desc)D(2, 4, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 41);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&r.desc, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_AUTO);
    /* AUTO's workspace fits every candidate (a shared workspace fits any pick) */
    size_t auto_ws = tt_conv2d_workspace_bytes(&r.desc), largest = 0;
    for (int a = TT_CONV_ALGO_IM2COL_GEMM; a < TT_CONV_ALGO_COUNT; a++) {
        tt_conv2d_desc one = r.desc;
        one.algo = (tt_conv_algo)a;
        size_t b = tt_conv2d_workspace_bytes(&one);
        CU_ASSERT(b <= auto_ws);
        if (b > largest) largest = b;
    }
    CU_ASSERT_EQUAL(auto_ws, largest);

    /* first call: im2col_gemm, direct, winograd timed (3 runs each), db written */
    double e = run_forward(be, &r);
    CU_ASSERT(e < REF_CONV_FWD_TOL);
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.timed, 1);
    CU_ASSERT_EQUAL(s.runs, 9);
    CU_ASSERT_EQUAL(s.db_writes, 1);
    CU_ASSERT_EQUAL(be->mem.current[TT_MEM_WORKSPACE], 0);
    cJSON *db = read_db(be);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    cJSON *entries = cJSON_GetObjectItemCaseSensitive(db, "entries");
    CU_ASSERT_EQUAL(cJSON_GetArraySize(entries), 1);
    cJSON *algo = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(entries, 0), "algo");
    tt_conv_algo picked = TT_CONV_ALGO_AUTO;
    CU_ASSERT_FATAL(cJSON_IsString(algo));
    TH_OK(tt_conv_algo_parse(algo->valuestring, &picked));
    printf("\n    autotune forward picked %s (forward error %.2e)", tt_conv_algo_name(picked), e);
    cJSON_Delete(db);

    /* same process, same shape: from memory */
    run_forward(be, &r);
    s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.timed, 1);
    CU_ASSERT_EQUAL(s.memory_hits, 1);

    /* a new process (reset): from the file, no timing at all */
    tt_conv_autotune_reset();
    e = run_forward(be, &r);
    CU_ASSERT(e < REF_CONV_FWD_TOL);
    s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.timed, 0);
    CU_ASSERT_EQUAL(s.runs, 0);
    CU_ASSERT_EQUAL(s.db_loads, 1);
    CU_ASSERT_EQUAL(s.db_hits, 1);

    /* another process adds a key meanwhile: our next write keeps it */
    db = read_db(be);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    cJSON *other = cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(db, "entries"),
                                           "conv2d forward (written by another process)");
    cJSON_AddStringToObject(other, "algo", "direct");
    char path[1024], *text = cJSON_Print(db);
    TH_OK(tt_conv_find_db_path(be, path, sizeof path));
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f && text);
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(db);

    /* backward: timing must not add into the caller's gradients */
    float *gi = malloc(r.inp_n * sizeof(float)), *gw = malloc(r.weight_n * sizeof(float));
    float *ri = malloc(r.inp_n * sizeof(float)), *rw = malloc(r.weight_n * sizeof(float));
    CU_ASSERT_FATAL(gi && gw && ri && rw);
    run_backward(be, &r, TT_CONV_ALGO_AUTO, gi, gw);
    run_backward(be, &r, TT_CONV_ALGO_IM2COL_GEMM, ri, rw);
    double ei = th_max_rel_error_f(gi, ri, r.inp_n, REF_CONV_GRAD_FLOOR);
    double ew = th_max_rel_error_f(gw, rw, r.weight_n, REF_CONV_GRAD_FLOOR);
    CU_ASSERT(ei < REF_CONV_GRAD_TOL);
    CU_ASSERT(ew < REF_CONV_GRAD_TOL);
    s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.timed, 2); /* backward data (3 candidates), weight (2) */
    CU_ASSERT_EQUAL(s.runs, 15);
    printf("\n    autotune backward vs im2col_gemm: dinp %.2e  dweight %.2e", ei, ew);
    free(gi), free(gw), free(ri), free(rw);
    db = read_db(be);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(db, "entries")), 4);
    cJSON_Delete(db);
    CU_ASSERT_EQUAL(be->mem.current[TT_MEM_WORKSPACE], 0);
    run_free(&r);
    remove_cache_dir(be);
}

/* conv_transpose2d's AUTO: timed once per direction, result right. */
static void test_autotune_transpose(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    fresh_cache_dir();
    tt_conv_transpose2d_desc d = T(2, 5, 4, 3, 3, 2, 2, 2, 2, 0, 0, 0, 0, AUTO);
    int oh = tt_conv_transpose2d_out_h(&d), ow = tt_conv_transpose2d_out_w(&d);
    size_t inp_n = 2 * 5 * 4 * 3, weight_n = 5 * 3 * 2 * 2, out_n = (size_t)2 * 3 * oh * ow;
    float inp[120], weight[60], got[2 * 3 * 8 * 6];
    double inp_d[120], weight_d[60], want[2 * 3 * 8 * 6];
    uint64_t seed = 53;
    th_fill_uniform(inp, inp_n, -1, 1, &seed);
    th_fill_uniform(weight, weight_n, -1, 1, &seed);
    for (size_t i = 0; i < inp_n; i++) inp_d[i] = inp[i];
    for (size_t i = 0; i < weight_n; i++) weight_d[i] = weight[i];
    tt_buffer *x = th_upload(inp, inp_n, "tuneT.inp"), *w = th_upload(weight, weight_n, "tuneT.w");
    tt_buffer *y = th_zeros(out_n, "tuneT.out");
    TH_OK(tt_conv_transpose2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w), (tt_mem){0},
                                      &d, (tt_mem){0}));
    th_download(got, y, out_n);
    ref_conv_transpose2d_forward(want, inp_d, weight_d, NULL, &d);
    double e = th_max_rel_error(got, want, out_n, REF_CONV_FWD_FLOOR);
    CU_ASSERT(e < REF_CONV_FWD_TOL);
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.timed, 1); /* im2col_gemm and direct; k2 s2 runs neither winograd nor fft */
    CU_ASSERT_EQUAL(s.runs, 6);
    printf("\n    conv_transpose2d autotune forward error %.2e", e);
    tt_buffer_free(x), tt_buffer_free(w), tt_buffer_free(y);
    remove_cache_dir(be);
}

static void test_force(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    fresh_cache_dir();
    conv_run r;
    run_init(&r, (tt_conv2d_desc)D(1, 3, 6, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 43);

    tt_conv_algo_force(TT_CONV_ALGO_DIRECT);
    CU_ASSERT_EQUAL(tt_conv_algo_forced(), TT_CONV_ALGO_DIRECT);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&r.desc, TT_CONV_DIR_BACKWARD_WEIGHT), TT_CONV_ALGO_DIRECT);
    CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
    /* a desc that names its algorithm wins over the forced one */
    tt_conv2d_desc named = r.desc;
    named.algo = TT_CONV_ALGO_WINOGRAD;
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&named, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_WINOGRAD);
    tt_conv_algo_force(TT_CONV_ALGO_AUTO);

    setenv("TT_CONV_ALGO", "Winograd", 1);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&r.desc, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_WINOGRAD);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&r.desc, TT_CONV_DIR_BACKWARD_WEIGHT),
                    TT_CONV_ALGO_IM2COL_GEMM);
    CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
    setenv("TT_CONV_ALGO", "no-such-algorithm", 1); /* warned about, then tuned */
    CU_ASSERT_EQUAL(tt_conv_algo_forced(), TT_CONV_ALGO_AUTO);
    unsetenv("TT_CONV_ALGO");

    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.runs, 0); /* forcing never times */
    CU_ASSERT_EQUAL(s.db_writes, 0);

    tt_conv_algo a;
    for (int i = 0; i < TT_CONV_ALGO_COUNT; i++) {
        TH_OK(tt_conv_algo_parse(tt_conv_algo_name((tt_conv_algo)i), &a));
        CU_ASSERT_EQUAL(a, i);
    }
    tt_status bad = tt_conv_algo_parse("gemm", &a);
    CU_ASSERT_PTR_NOT_NULL(bad);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_status_message(bad), "direct"));
    tt_status_free(bad);
    run_free(&r);
    remove_cache_dir(be);
}

static void test_corrupt_db(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    fresh_cache_dir();
    char path[1024], dir[300];
    TH_OK(tt_conv_find_db_path(be, path, sizeof path));
    snprintf(dir, sizeof dir, "%s/find-db", cache_dir);
    mkdir(dir, 0755);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("{\"version\": 1, \"entries\": {\"conv2d forward N1", f); /* cut off */
    fclose(f);

    conv_run r;
    run_init(&r, (tt_conv2d_desc)D(1, 3, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 47);
    CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.db_ignored, 1);
    CU_ASSERT_EQUAL(s.timed, 1);
    CU_ASSERT_EQUAL(s.db_writes, 1);
    cJSON *db = read_db(be); /* rewritten whole */
    CU_ASSERT_PTR_NOT_NULL(db);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(db, "entries")), 1);
    cJSON_Delete(db);

    /* an entry naming an unknown algorithm is dropped, the rest kept */
    f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("{\"version\": 1, \"entries\": {\"x\": {\"algo\": \"magic\"}}}", f);
    fclose(f);
    tt_conv_autotune_reset();
    CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
    s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.db_ignored, 1);
    CU_ASSERT_EQUAL(s.timed, 1);
    run_free(&r);
    remove_cache_dir(be);
}

/* ---- timing of the UNet's 16->16 3x3 conv (TT_BENCH_CONV=1) ------------- */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

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
    printf("\n    %s, N=%d %d->%d %dx%d p%d %dx%d (ms, best of 2 after a warm-up; the algorithm "
           "that ran in brackets)",
           be->device.name, d.batch, d.in_channels, d.out_channels, d.kernel_h, d.kernel_w,
           d.pad_h, d.in_h, d.in_w);
    const char *only = getenv("TT_BENCH_CONV_ALGOS");
    for (int a = TT_CONV_ALGO_IM2COL_GEMM; a < TT_CONV_ALGO_COUNT; a++) {
        d.algo = (tt_conv_algo)a;
        if (only && !strstr(only, tt_conv_algo_name(d.algo))) continue;
        tt_buffer *ws = NULL;
        if (tt_conv2d_workspace_bytes(&d))
            TH_OK(tt_buffer_alloc(be, tt_conv2d_workspace_bytes(&d), TT_MEM_OTHER, "bench.ws", &ws));
        tt_mem wsm = ws ? tt_mem_of(ws) : (tt_mem){0};
        double best[3] = {1e30, 1e30, 1e30};
        for (int rep = 0; rep < 3; rep++) {
            for (int dir = 0; dir < 3; dir++) {
                double t0 = now_ms();
                if (dir == 0)
                    TH_OK(tt_conv2d_forward(be, tt_mem_of(y), tt_mem_of(x), tt_mem_of(w),
                                            tt_mem_of(b), &d, wsm));
                else
                    TH_OK(tt_conv2d_backward(be, dir == 1 ? tt_mem_of(dx) : (tt_mem){0},
                                             dir == 2 ? tt_mem_of(dw) : (tt_mem){0}, (tt_mem){0},
                                             tt_mem_of(y), tt_mem_of(x), tt_mem_of(w), &d, wsm));
                TH_OK(tt_finish(be));
                double t = now_ms() - t0;
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
    bench_shape(be, (tt_conv2d_desc)D(batch, 16, 256, 256, 16, 3, 3, 1, 1, 1, 1, 1, 1, AUTO));
    bench_shape(be, (tt_conv2d_desc)D(1, 16, 256, 256, 16, 7, 7, 1, 1, 3, 3, 1, 1, AUTO));
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"direct: forward and gradients", test_direct},
        {"direct with local-memory tiles", test_direct_tiled},
        {"winograd: forward, backward data; weight falls back", test_winograd},
        {"fft: forward and gradients", test_fft},
        {"forced algorithms fall back on shapes they do not run", test_fallback_runs},
        {"conv_transpose2d through every algorithm", test_conv_transpose},
        {"autotuner: timed once, find-db written and reused", test_autotune},
        {"autotuner on conv_transpose2d", test_autotune_transpose},
        {"forcing an algorithm (function, TT_CONV_ALGO)", test_force},
        {"a corrupt find-db is ignored with a warning", test_corrupt_db},
        {"timing per algorithm (TT_BENCH_CONV=1)", test_bench},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_algos", tests);
}

/*
 * The convolution autotuner and its find-db (src/ops/conv_autotune.c): an
 * AUTO conv2d is timed once per shape and direction, the pick is written to
 * $TT_CACHE_DIR/find-db/<backend>-<device>.json and reused without timing by
 * the next process (simulated by tt_conv_autotune_reset), a pick of one
 * backend is never another's on the same device, concurrent writers keep
 * each other's keys, timing never touches the caller's gradients, AUTO's
 * workspace fits every candidate (implicit_gemm among them, picked from a
 * find-db like the others), conv_transpose2d tunes too, forcing (the
 * function, $TT_CONV_ALGO) never times, and a corrupt find-db is ignored
 * with a warning, and the candidates are timed in alternating rounds.
 * Every candidate is checked before it is timed: one the check refuses
 * (a stand-in check, and a wrong kernel planted with $TT_CONV_PERTURB,
 * the reference itself among them) is never timed nor picked, and stays
 * refused in the find-db for later processes.
 * Each test runs in a fresh temporary cache directory.
 *
 * The counts follow the candidates the test backend offers (OpenCL: every
 * algorithm; Vulkan: those it has shaders for); a check that needs two
 * candidates to time is left out, saying so, where the backend has one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/hash.h"
#include "core/knobs.h"
#include "core/status.h"
#include "harness.h"
#include "ops/conv2d.h"
#include "ops/conv_autotune.h"
#include "ops/conv_transpose2d.h"
#include "ops/device_traits.h"
#include "ref_conv.h"
#include "ref_conv_check.h"

/* N, Cin, H, W, Cout, kH, kW, sH, sW, pH, pW, dH, dW, algorithm */
#define D(n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, a) \
    {n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, 1, TT_CONV_ALGO_##a, 0, {0}, 0}
/* N, Cin, H, W, Cout, kH, kW, sH, sW, pH, pW, opH, opW, algorithm */
#define T(n, ci, h, w, co, kh, kw, sh, sw, ph, pw, oph, opw, a) \
    {n, ci, h, w, co, kh, kw, sh, sw, ph, pw, oph, opw, 1, 1, 1, TT_CONV_ALGO_##a, {0}, 0}

/* ---- autotuner and find-db ----------------------------------------------- */

/* Whether AUTO weighs `a` for `dir` of `d` on `be`: it runs the direction
 * itself, the backend has it, AUTO times it on this kind of device, and
 * its row's can_win says it may win (im2col_gemm counts where it cannot:
 * it is checked as the reference). */
static int is_candidate(tt_backend *be, const tt_conv2d_desc *d, tt_conv_algo a, tt_conv_dir dir)
{
    tt_conv2d_desc one = *d;
    one.algo = a;
    if (tt_conv2d_algo_for(&one, dir) != a || !tt_conv2d_runs_on(be, &one) ||
        !tt_conv_algo_tuned_on(be, a))
        return 0;
    const tt_conv_algo_impl *impl = tt_conv2d_algo_impl(a);
    tt_conv_shape shape;
    TH_OK(tt_conv2d_shape(&one, &shape));
    return a == TT_CONV_ALGO_IM2COL_GEMM || !impl->can_win || impl->can_win(be, &shape, dir);
}

/* The algorithms the autotuner weighs for `dir` of `d` on `be`: each that
 * runs the direction itself and that `be` has. */
static int candidates(tt_backend *be, const tt_conv2d_desc *d, tt_conv_dir dir)
{
    int count = 0;
    for (int a = TT_CONV_ALGO_IM2COL_GEMM; a < TT_CONV_ALGO_COUNT; a++)
        count += is_candidate(be, d, (tt_conv_algo)a, dir);
    return count;
}

/* The DIRECT row AUTO weighs for `dir` of `d` on `be`: direct_w8 on an
 * OpenCL CPU (where direct cannot win), direct elsewhere. */
static tt_conv_algo direct_row(tt_backend *be, const tt_conv2d_desc *d, tt_conv_dir dir)
{
    return is_candidate(be, d, TT_CONV_ALGO_DIRECT_W8, dir) ? TT_CONV_ALGO_DIRECT_W8
                                                             : TT_CONV_ALGO_DIRECT;
}

/* Of those, the ones timed: im2col_gemm, where it cannot win (OpenCL
 * CPUs), is checked as the reference only (tt_conv_im2col_can_win). */
static int timed_of(tt_backend *be, int candidates)
{
    return candidates - !tt_conv_im2col_can_win(be);
}

/* The largest workspace among the algorithms AUTO times for `d` on `be`. */
static size_t candidates_workspace(tt_backend *be, const tt_conv2d_desc *d)
{
    size_t largest = 0;
    for (int a = TT_CONV_ALGO_IM2COL_GEMM; a < TT_CONV_ALGO_COUNT; a++) {
        tt_conv2d_desc one = *d;
        one.algo = (tt_conv_algo)a;
        size_t b = tt_conv2d_workspace_bytes(&one);
        if (tt_conv2d_runs_on(be, &one) && tt_conv_algo_tuned_on(be, one.algo) && b > largest)
            largest = b;
    }
    return largest;
}

/* Whether the autotuner times `dir` of `d` on `be` (two candidates or
 * more); else says that `what` is left out. */
static int timed_here(tt_backend *be, const tt_conv2d_desc *d, tt_conv_dir dir, const char *what)
{
    if (candidates(be, d, dir) >= 2) return 1;
    char why[96];
    snprintf(why, sizeof why, "one candidate for %s: nothing to time", tt_conv_dir_name(dir));
    th_left_out(what, why);
    return 0;
}

static char cache_dir[256];

static void fresh_cache_dir(void)
{
    snprintf(cache_dir, sizeof cache_dir, "/tmp/tt_conv_autotune_XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(cache_dir));
    th_setenv("TT_CACHE_DIR", cache_dir);
    th_setenv("TT_CONV_ALGO", NULL);
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

/* The test device's find-db, opened for writing by hand (path: its name). */
static FILE *write_db_by_hand(tt_backend *be, char *path, size_t size)
{
    char dir[300];
    TH_OK(tt_conv_find_db_path(be, path, size));
    snprintf(dir, sizeof dir, "%s/find-db", cache_dir);
    mkdir(dir, 0755);
    return fopen(path, "wb");
}

/* Find-db keys of the tests that write picks by hand: the three
 * directions of D(2, 4, 9, 11, 5, k3 p1), then the two of its first-layer
 * twin with 3 input channels (no backward_data). */
static const char *const picked_keys[] = {
    "conv2d forward N2 C4 9x11 -> C5 k3x3 s1x1 p1x1 d1x1 g1",
    "conv2d backward_data N2 C4 9x11 -> C5 k3x3 s1x1 p1x1 d1x1 g1",
    "conv2d backward_weight N2 C4 9x11 -> C5 k3x3 s1x1 p1x1 d1x1 g1",
    "conv2d forward N2 C3 9x11 -> C5 k3x3 s1x1 p1x1 d1x1 g1",
    "conv2d backward_weight N2 C3 9x11 -> C5 k3x3 s1x1 p1x1 d1x1 g1"};

/* The test device's find-db holding `count` picks: key `keys[i]` (an op,
 * direction and shape) -> `algos[i]`, each timed at 1 ms. */
static void write_picks(tt_backend *be, const char *const *keys, const char *const *algos,
                        int count)
{
    char path[1024];
    FILE *f = write_db_by_hand(be, path, sizeof path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "{\"version\": %d, \"backend\": \"%s\", \"code\": \"%s\", \"entries\": {",
            TT_FIND_DB_VERSION, tt_backend_kind_name((tt_backend_kind)be->kernels_of),
            tt_conv_find_db_code(be));
    for (int i = 0; i < count; i++)
        fprintf(f, "%s\"%s\": {\"algo\": \"%s\", \"ms\": 1}", i ? "," : "", keys[i], algos[i]);
    fprintf(f, "}}");
    fclose(f);
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

/* AUTO's backward of `r` (its first run times the candidates) gives
 * im2col_gemm's gradients; *auto_peak (may be NULL): the device's peak of
 * TT_MEM_WORKSPACE after AUTO's run. */
static void backward_matches_im2col(tt_backend *be, conv_run *r, uint64_t *auto_peak)
{
    float *gi = malloc(r->inp_n * sizeof(float)), *gw = malloc(r->weight_n * sizeof(float));
    float *ri = malloc(r->inp_n * sizeof(float)), *rw = malloc(r->weight_n * sizeof(float));
    CU_ASSERT_FATAL(gi && gw && ri && rw);
    run_backward(be, r, TT_CONV_ALGO_AUTO, gi, gw);
    if (auto_peak) *auto_peak = be->mem.peak[TT_MEM_WORKSPACE];
    run_backward(be, r, TT_CONV_ALGO_IM2COL_GEMM, ri, rw);
    CU_ASSERT(th_max_rel_error_f(gi, ri, r->inp_n, REF_CONV_GRAD_FLOOR) < REF_CONV_GRAD_TOL);
    CU_ASSERT(th_max_rel_error_f(gw, rw, r->weight_n, REF_CONV_GRAD_FLOOR) < REF_CONV_GRAD_TOL);
    free(gi), free(gw), free(ri), free(rw);
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
    /* nothing known yet: sized for every candidate this device times */
    CU_ASSERT_EQUAL(tt_conv2d_workspace_bytes_on(be, &r.desc), candidates_workspace(be, &r.desc));
    int forward = candidates(be, &r.desc, TT_CONV_DIR_FORWARD);
    int data = candidates(be, &r.desc, TT_CONV_DIR_BACKWARD_DATA);
    int weight = candidates(be, &r.desc, TT_CONV_DIR_BACKWARD_WEIGHT);
    if (!timed_here(be, &r.desc, TT_CONV_DIR_FORWARD, "timing and the find-db") ||
        !timed_here(be, &r.desc, TT_CONV_DIR_BACKWARD_DATA, "timing and the find-db") ||
        !timed_here(be, &r.desc, TT_CONV_DIR_BACKWARD_WEIGHT, "timing and the find-db")) {
        run_free(&r);
        remove_cache_dir(be);
        return;
    }

    /* first call: every forward candidate verified (once each) and timed
     * (OpenCL: direct, implicit_gemm and the rest; 2 runs each; on a CPU
     * im2col_gemm only checked), db written */
    double e = run_forward(be, &r);
    CU_ASSERT(e < REF_CONV_FWD_TOL);
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.timed, 1);
    CU_ASSERT_EQUAL(s.runs + s.pruned, 2 * timed_of(be, forward));
    CU_ASSERT_EQUAL(s.verified, forward);
    CU_ASSERT_EQUAL(s.refused, 0);
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
    CU_ASSERT_EQUAL(s.timed, 2); /* backward data (OpenCL: 4 candidates), weight (3) */
    CU_ASSERT_EQUAL(s.runs + s.pruned, 2 * (timed_of(be, data) + timed_of(be, weight)));
    CU_ASSERT_EQUAL(s.verified, data + weight);
    CU_ASSERT_EQUAL(s.refused, 0);
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
    tt_conv_transpose2d_desc direct = d;
    direct.algo = TT_CONV_ALGO_DIRECT;
    if (!ref_convt_runs_here("timing conv_transpose2d (im2col_gemm against direct)", &direct)) {
        remove_cache_dir(be);
        return;
    }
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
    /* im2col_gemm (on a CPU checked only), direct and implicit_gemm; k2 s2
     * runs no winograd; direct_w16 (the 16-lane forward) where it is */
    CU_ASSERT_EQUAL(s.timed, 1);
    CU_ASSERT_EQUAL(s.runs + s.pruned, 2 * (s.verified - !tt_conv_im2col_can_win(be)));
    CU_ASSERT_EQUAL(s.verified, 3);
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

    /* a desc that names its algorithm runs it, untimed */
    tt_conv2d_desc named = r.desc;
    named.algo = TT_CONV_ALGO_DIRECT;
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&named, TT_CONV_DIR_BACKWARD_WEIGHT), TT_CONV_ALGO_DIRECT);
    r.desc = named;
    if (ref_conv2d_runs_here("a named direct convolution", &named))
        CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
    named.algo = TT_CONV_ALGO_WINOGRAD;
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&named, TT_CONV_DIR_FORWARD), TT_CONV_ALGO_WINOGRAD);
    CU_ASSERT_EQUAL(tt_conv2d_algo_for(&named, TT_CONV_DIR_BACKWARD_WEIGHT),
                    TT_CONV_ALGO_IM2COL_GEMM);

    /* a run's setting: --algo, else $TT_CONV_ALGO, else AUTO */
    tt_conv_algo want;
    TH_OK(tt_conv_algo_setting(NULL, &want));
    CU_ASSERT_EQUAL(want, TT_CONV_ALGO_AUTO);
    TH_OK(tt_conv_algo_setting("direct", &want));
    CU_ASSERT_EQUAL(want, TT_CONV_ALGO_DIRECT);
    th_setenv("TT_CONV_ALGO", "Winograd");
    TH_OK(tt_conv_algo_setting("auto", &want));
    CU_ASSERT_EQUAL(want, TT_CONV_ALGO_WINOGRAD);
    TH_OK(tt_conv_algo_setting("implicit_gemm", &want)); /* the flag wins */
    CU_ASSERT_EQUAL(want, TT_CONV_ALGO_IMPLICIT_GEMM);
    th_setenv("TT_CONV_ALGO", "no-such-algorithm");
    tt_status bad_env = tt_conv_algo_setting("", &want);
    CU_ASSERT(bad_env && strstr(tt_status_message(bad_env), "TT_CONV_ALGO") != NULL);
    tt_status_free(bad_env);
    th_setenv("TT_CONV_ALGO", NULL);
    tt_status bad_flag = tt_conv_algo_setting("gemm", &want);
    CU_ASSERT(bad_flag && strstr(tt_status_message(bad_flag), "--algo") != NULL);
    tt_status_free(bad_flag);

    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.runs, 0); /* a named algorithm is never timed */
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
    char path[1024];
    FILE *f = write_db_by_hand(be, path, sizeof path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "{\"version\": %d, \"entries\": {\"conv2d forward N1", TT_FIND_DB_VERSION); /* cut off */
    fclose(f);

    conv_run r;
    run_init(&r, (tt_conv2d_desc)D(1, 3, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 47);
    if (!timed_here(be, &r.desc, TT_CONV_DIR_FORWARD, "a corrupt find-db, rewritten by timing")) {
        run_free(&r);
        remove_cache_dir(be);
        return;
    }
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
    fprintf(f, "{\"version\": %d, \"code\": \"%s\", \"entries\": {\"x\": {\"algo\": \"magic\"}}}",
            TT_FIND_DB_VERSION, tt_conv_find_db_code(be));
    fclose(f);
    tt_conv_autotune_reset();
    CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
    s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.db_ignored, 1);
    CU_ASSERT_EQUAL(s.timed, 1);
    run_free(&r);
    remove_cache_dir(be);
}

/* A find-db that cannot be read (EIO: TT_FAULT=read:1, the first file read
 * since) is as a missing one: a warning, the shape timed again to a right
 * result, and the file written whole again, the picks it holds kept. */
static void test_unreadable_db(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    fresh_cache_dir();
    conv_run r;
    run_init(&r, (tt_conv2d_desc)D(2, 4, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 53);
    if (!timed_here(be, &r.desc, TT_CONV_DIR_FORWARD, "an unreadable find-db, timed again")) {
        run_free(&r);
        remove_cache_dir(be);
        return;
    }
    const char *const algos[] = {"direct", "direct"};
    write_picks(be, picked_keys, algos, 2); /* forward and backward_data of this shape */
    th_setenv("TT_FAULT", "read:1");
    double error = run_forward(be, &r);
    th_setenv("TT_FAULT", NULL);
    CU_ASSERT(error < REF_CONV_FWD_TOL);
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.db_loads, 1);
    CU_ASSERT_EQUAL(s.db_ignored, 1);
    CU_ASSERT_EQUAL(s.timed, 1); /* not the file's pick */
    CU_ASSERT_EQUAL(s.db_writes, 1);
    cJSON *db = read_db(be);
    CU_ASSERT_PTR_NOT_NULL(db);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(db, "entries")), 2);
    cJSON_Delete(db);
    run_free(&r);
    remove_cache_dir(be);
}

/* The dry backend (memory estimates) runs nothing, so it must neither time
 * nor record: it once wrote 0 ms picks of im2col_gemm for every shape it
 * saw, which real runs then trusted.  Such entries are now timed again. */
static void test_dry_backend_never_tunes(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    fresh_cache_dir();
    tt_backend *dry = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = &be->device,
                                                  .stands_for = be->kernels_of},
                            &dry));
    tt_conv2d_desc desc = D(1, 3, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, AUTO);
    size_t out_n = (size_t)2 * tt_conv2d_out_h(&desc) * tt_conv2d_out_w(&desc);
    tt_buffer *inp = NULL, *weight = NULL, *out = NULL;
    TH_OK(tt_buffer_alloc(dry, 3 * 5 * 6 * sizeof(float), TT_MEM_ACTIVATIONS, "dry.inp", &inp));
    TH_OK(tt_buffer_alloc(dry, 2 * 3 * 9 * sizeof(float), TT_MEM_PARAMETERS, "dry.weight", &weight));
    TH_OK(tt_buffer_alloc(dry, out_n * sizeof(float), TT_MEM_ACTIVATIONS, "dry.out", &out));
    TH_OK(tt_conv2d_forward(dry, tt_mem_of(out), tt_mem_of(inp), tt_mem_of(weight), (tt_mem){0},
                            &desc, (tt_mem){0}));
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.timed, 0);
    CU_ASSERT_EQUAL(s.db_writes, 0);
    CU_ASSERT_PTR_NULL(read_db(be));
    /* but the scratch a device would time with (an output of its own) is
     * accounted, so that an estimate's peak is the first run's */
    CU_ASSERT(dry->mem.peak[TT_MEM_WORKSPACE] >= out_n * sizeof(float));
    CU_ASSERT_EQUAL(dry->mem.current[TT_MEM_WORKSPACE], 0);
    tt_buffer_free(inp), tt_buffer_free(weight), tt_buffer_free(out);
    tt_backend_destroy(dry);

    /* a 0.00004 ms entry (what that bug wrote) is not trusted: timed again */
    if (!timed_here(be, &desc, TT_CONV_DIR_FORWARD, "a 0 ms entry timed again")) {
        remove_cache_dir(be);
        return;
    }
    conv_run r;
    run_init(&r, desc, 53);
    CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL); /* the real key, timed and written */
    cJSON *db = read_db(be);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    cJSON *entry = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(db, "entries"), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(entry);
    cJSON_ReplaceItemInObject(entry, "ms", cJSON_CreateNumber(4e-5));
    char path[1024];
    TH_OK(tt_conv_find_db_path(be, path, sizeof path));
    char *text = cJSON_Print(db);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
    cJSON_free(text);
    cJSON_Delete(db);
    tt_conv_autotune_reset();
    CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
    s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.db_hits, 0);
    CU_ASSERT_EQUAL(s.timed, 1);
    db = read_db(be);
    entry = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(db, "entries"), 0);
    CU_ASSERT(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(entry, "ms")) > 0);
    cJSON_Delete(db);
    run_free(&r);
    remove_cache_dir(be);
}

/* Writes `text` to `path` (in the test's find-db folder). */
static void write_text(const char *path, const char *text)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/find-db", cache_dir);
    mkdir(dir, 0755);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

/* The backend is part of the find-db's key: a pick timed through one API
 * is never used through the other for the same device (a dry backend
 * standing in for the other API, with the test device's very facts, is
 * the same device through the other API); and so is the code: a file
 * timed with other kernels, or written in an older layout, is timed again. */
static void test_backend_in_key(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    fresh_cache_dir();
    int on_opencl = th_backend_kind() == TT_BACKEND_OPENCL;
    tt_backend_kind other_kind = on_opencl ? TT_BACKEND_VULKAN : TT_BACKEND_OPENCL;
    tt_backend *other = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = &be->device,
                                                  .stands_for = other_kind},
                            &other));
    tt_backend *opencl = on_opencl ? be : other, *vulkan = on_opencl ? other : be;
    char path[1024], other_path[1024], want[64], text[1024];
    TH_OK(tt_conv_find_db_path(be, path, sizeof path));
    TH_OK(tt_conv_find_db_path(other, other_path, sizeof other_path));
    snprintf(want, sizeof want, "/find-db/%s-", tt_backend_kind_name(th_backend_kind()));
    CU_ASSERT(strstr(path, want) != NULL);
    snprintf(want, sizeof want, "/find-db/%s-", tt_backend_kind_name(other_kind));
    CU_ASSERT(strstr(other_path, want) != NULL);
    CU_ASSERT(strcmp(strrchr(path, '-'), strrchr(other_path, '-')) == 0); /* one device */

    const char *key = "conv2d forward N1 C2 5x5 -> C3 k3x3 s1x1 p1x1 d1x1 g1";
    tt_conv_algo both[] = {TT_CONV_ALGO_IM2COL_GEMM, TT_CONV_ALGO_DIRECT}, got;
    snprintf(text, sizeof text,
             "{\"version\": %d, \"backend\": \"%s\", \"code\": \"%s\", \"entries\": {\"%s\": "
             "{\"algo\": \"direct\", \"ms\": 1}}}",
             TT_FIND_DB_VERSION, tt_backend_kind_name(other_kind), tt_conv_find_db_code(other),
             key);
    write_text(other_path, text);
    got = TT_CONV_ALGO_AUTO;
    CU_ASSERT(tt_conv_autotune_known(other, key, both, 2, &got));
    CU_ASSERT_EQUAL(got, TT_CONV_ALGO_DIRECT);
    CU_ASSERT(!tt_conv_autotune_known(be, key, both, 2, &got));

    /* the other API's file under this one's name: refused, with a warning */
    write_text(path, text);
    tt_conv_autotune_reset();
    CU_ASSERT(!tt_conv_autotune_known(be, key, both, 2, &got));
    CU_ASSERT_EQUAL(tt_conv_autotune_stats_get().db_ignored, 1);
    unlink(path);
    unlink(other_path);

    /* each API's code has its own hash; a file of this API timed with
     * other code (or in an older layout) is timed again: noted, not a
     * corrupt file, and none of its picks is used or kept */
    CU_ASSERT(strcmp(tt_conv_find_db_code(opencl), tt_conv_find_db_code(vulkan)) != 0);
    CU_ASSERT_EQUAL(strlen(tt_conv_find_db_code(be)), 16);
    snprintf(text, sizeof text,
             "{\"version\": %d, \"backend\": \"%s\", \"code\": \"0123456789abcdef\", "
             "\"entries\": {\"%s\": {\"algo\": \"direct\", \"ms\": 1}}}",
             TT_FIND_DB_VERSION, tt_backend_kind_name(th_backend_kind()), key);
    write_text(path, text);
    tt_conv_autotune_reset();
    CU_ASSERT(!tt_conv_autotune_known(be, key, both, 2, &got));
    CU_ASSERT_EQUAL(tt_conv_autotune_stats_get().db_stale, 1);
    CU_ASSERT_EQUAL(tt_conv_autotune_stats_get().db_ignored, 0);
    snprintf(text, sizeof text,
             "{\"version\": 14, \"backend\": \"%s\", \"entries\": {\"%s\": "
             "{\"algo\": \"direct\", \"ms\": 1}}}",
             tt_backend_kind_name(th_backend_kind()), key);
    write_text(path, text);
    tt_conv_autotune_reset();
    CU_ASSERT(!tt_conv_autotune_known(be, key, both, 2, &got));
    CU_ASSERT_EQUAL(tt_conv_autotune_stats_get().db_stale, 1);

    /* a shape timed here goes to this API's file, which names it and its
     * code (the stale file's pick dropped); the other API knows none of
     * its picks */
    conv_run r;
    run_init(&r, (tt_conv2d_desc)D(1, 3, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 61);
    if (timed_here(be, &r.desc, TT_CONV_DIR_FORWARD, "a pick timed here kept from the other API")) {
        CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
        CU_ASSERT_EQUAL(tt_conv_autotune_stats_get().timed, 1);
        cJSON *db = read_db(be);
        CU_ASSERT_PTR_NOT_NULL_FATAL(db);
        CU_ASSERT_STRING_EQUAL(
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(db, "backend")),
            tt_backend_kind_name(th_backend_kind()));
        cJSON *entries = cJSON_GetObjectItemCaseSensitive(db, "entries");
        CU_ASSERT_STRING_EQUAL(
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(db, "code")),
            tt_conv_find_db_code(be));
        CU_ASSERT_EQUAL(cJSON_GetArraySize(entries), 1);
        CU_ASSERT_PTR_NULL(cJSON_GetObjectItemCaseSensitive(entries, key));
        const cJSON *entry;
        cJSON_ArrayForEach(entry, entries)
        {
            tt_conv_algo algo;
            TH_OK(tt_conv_algo_parse(
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "algo")), &algo));
            CU_ASSERT(!tt_conv_autotune_known(other, entry->string, &algo, 1, &got));
        }
        cJSON_Delete(db);
    }
    run_free(&r);
    tt_backend_destroy(other);
    remove_cache_dir(be);
}

/* With every direction's pick known (here: direct, which needs no
 * columns), the workspace a model allocates is the picks', not every
 * candidate's; the ops still run when a later pick needs more. */
static void test_workspace_of_known_picks(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    fresh_cache_dir();
    tt_conv2d_desc picks = D(2, 4, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, DIRECT);
    if (!ref_conv2d_runs_here("picks of direct in the find-db", &picks)) {
        remove_cache_dir(be);
        return;
    }
    tt_conv_algo row = direct_row(be, &picks, TT_CONV_DIR_FORWARD);
    const char *name = tt_conv_algo_name(row);
    const char *const all_direct[] = {name, name, name, name, name};
    write_picks(be, picked_keys, all_direct, 5);
    conv_run r;
    run_init(&r, (tt_conv2d_desc)D(2, 4, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 59);
    /* every candidate: im2col's columns; the picks: direct's band sums */
    tt_conv2d_desc direct = r.desc;
    direct.algo = row;
    size_t direct_ws = tt_conv2d_workspace_bytes(&direct);
    CU_ASSERT(direct_ws < tt_conv2d_workspace_bytes(&r.desc));
    CU_ASSERT_EQUAL(tt_conv2d_workspace_bytes_on(be, &r.desc), direct_ws);
    /* and a shape nobody timed is still sized for every candidate */
    tt_conv2d_desc other = r.desc;
    other.in_h = 10;
    CU_ASSERT_EQUAL(tt_conv2d_workspace_bytes_on(be, &other), candidates_workspace(be, &other));
    /* a first layer (`first`): the picks of forward and backward_weight
     * known, the input gradient never asked for and never timed.  Counted,
     * its untimed candidates size the workspace; left out, the picks do. */
    tt_conv2d_desc image = r.desc;
    image.in_channels = 3;
    tt_conv2d_desc image_direct = image;
    image_direct.algo = row;
    CU_ASSERT(tt_conv2d_workspace_bytes_on(be, &image) > tt_conv2d_workspace_bytes(&image_direct));
    image.no_input_grad = 1;
    CU_ASSERT_EQUAL(tt_conv2d_workspace_bytes_on(be, &image),
                    tt_conv2d_workspace_bytes(&image_direct));
    CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
    CU_ASSERT_EQUAL(tt_conv_autotune_stats_get().timed, 0);
    run_free(&r);
    remove_cache_dir(be);
}

/* Over the directions, the most of the least workspace among the
 * algorithms AUTO times for that direction of `d` on `be`. */
static size_t least_candidate_workspace(tt_backend *be, const tt_conv2d_desc *d)
{
    size_t most = 0;
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
        size_t least = SIZE_MAX;
        for (int a = TT_CONV_ALGO_IM2COL_GEMM; a < TT_CONV_ALGO_COUNT; a++) {
            tt_conv2d_desc one = *d;
            one.algo = (tt_conv_algo)a;
            one.workspace_limit = 0;
            size_t b = tt_conv2d_workspace_bytes(&one);
            if (is_candidate(be, &one, one.algo, (tt_conv_dir)dir) && b < least) least = b;
        }
        if (least != SIZE_MAX && least > most) most = least;
    }
    return most;
}

/* AUTO runs `r` (forward and backward) within its desc's workspace
 * limit: the workspace it sizes, the one it takes while timing (the
 * device's peak of TT_MEM_WORKSPACE, less the timing's scratch output, as
 * large as the largest of out, inp and weight) and each direction's pick's
 * own stay within `bound`, and the results are right. */
static void check_within(tt_backend *be, conv_run *r, size_t bound)
{
    CU_ASSERT(tt_conv2d_workspace_bytes_on(be, &r->desc) <= bound);
    tt_memstats_reset_peaks(&be->mem);
    CU_ASSERT(run_forward(be, r) < REF_CONV_FWD_TOL);
    uint64_t peak = 0;
    backward_matches_im2col(be, r, &peak);
    size_t scratch = r->out_n > r->inp_n ? r->out_n : r->inp_n;
    if (r->weight_n > scratch) scratch = r->weight_n;
    CU_ASSERT(peak <= bound + scratch * sizeof(float));
    /* each pick's own workspace (a desc naming it would also count the
     * im2col_gemm that stands in for the directions it does not run) */
    tt_conv_shape shape;
    TH_OK(tt_conv2d_shape(&r->desc, &shape));
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++) {
        tt_conv_algo pick = tt_conv2d_algo_on(be, &r->desc, (tt_conv_dir)dir);
        CU_ASSERT(tt_conv_algo_workspace(tt_conv2d_algo_impl(pick), &shape) <= bound);
    }
}

/* A desc's workspace limit (a model's, at full-resolution tiles): AUTO
 * weighs no algorithm whose workspace is larger, im2col's columns among
 * them, sizes and takes no more, and still picks and verifies; with a
 * limit nothing meets, the candidate with the least workspace runs. */
static void test_workspace_limit(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    fresh_cache_dir();
    conv_run r;
    run_init(&r, (tt_conv2d_desc)D(2, 8, 17, 13, 6, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 67);
    tt_conv2d_desc columns = r.desc;
    columns.algo = TT_CONV_ALGO_IM2COL_GEMM;
    size_t im2col = tt_conv2d_workspace_bytes(&columns);
    size_t all = tt_conv2d_workspace_bytes_on(be, &r.desc);
    CU_ASSERT(im2col > 0 && all >= im2col);
    r.desc.workspace_limit = im2col - 1;
    check_within(be, &r, im2col - 1);
    CU_ASSERT(tt_conv2d_workspace_bytes_on(be, &r.desc) < all);
    /* nothing within one byte: the least one's */
    remove_cache_dir(be);
    fresh_cache_dir();
    r.desc.workspace_limit = 1;
    size_t least = least_candidate_workspace(be, &r.desc);
    check_within(be, &r, least > 1 ? least : 1);
    run_free(&r);
    remove_cache_dir(be);
}

/* A pick of implicit_gemm (as the timing makes where it is the fastest)
 * is a candidate like the others: taken from the find-db for every
 * direction, untimed, sizing the workspace (none for this shape), and its
 * results right. */
static void test_implicit_gemm_pick(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    fresh_cache_dir();
    static const char *const igemm[] = {"implicit_gemm", "implicit_gemm", "implicit_gemm"};
    write_picks(be, picked_keys, igemm, 3); /* the three directions of D(2, 4, 9, 11, 5, ...) */
    conv_run r;
    run_init(&r, (tt_conv2d_desc)D(2, 4, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 61);
    for (int dir = 0; dir < TT_CONV_DIR_COUNT; dir++)
        CU_ASSERT_EQUAL(tt_conv2d_algo_on(be, &r.desc, (tt_conv_dir)dir),
                        TT_CONV_ALGO_IMPLICIT_GEMM);
    CU_ASSERT_EQUAL(tt_conv2d_workspace_bytes_on(be, &r.desc), 0);
    CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
    backward_matches_im2col(be, &r, NULL);
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.timed, 0);
    CU_ASSERT_EQUAL(s.runs, 0);
    run_free(&r);
    remove_cache_dir(be);
}

/* The candidates of the stand-in keys below. */
static const tt_conv_algo three[] = {TT_CONV_ALGO_IM2COL_GEMM, TT_CONV_ALGO_DIRECT,
                                     TT_CONV_ALGO_WINOGRAD};

/* A stand-in for a convolution: records the candidates in the order they
 * run, and fails for those marked.  The autotuner's first pass, with the
 * backend preparing (its kernels built ahead, nothing run), is counted
 * apart. */
typedef struct order_log {
    tt_conv_algo ran[32];
    int count;
    int prepared;
    int fails[TT_CONV_ALGO_COUNT];
} order_log;

static tt_status log_run(void *ctx, tt_conv_algo algo)
{
    order_log *log = ctx;
    if (th_backend()->preparing) log->prepared++;
    else if (log->count < 32) log->ran[log->count++] = algo;
    return log->fails[algo] ? tt_error_new(TT_ERR_INVALID_ARGUMENT, "stand-in failure") : NULL;
}

/* The candidates are timed in rounds, each in turn (a slow spell of the
 * host falls on all alike): every one once untimed, then two rounds; one
 * that fails is left out of the later rounds and never picked. */
static void test_rounds_alternate(void)
{
    fresh_cache_dir();
    tt_backend *be = th_backend();
    order_log log = {0};
    tt_conv_algo best = TT_CONV_ALGO_AUTO;
    TH_OK(tt_conv_autotune_pick(be, "stand-in A", three, 3, 3, log_run, NULL, &log, &best));
    CU_ASSERT_EQUAL(log.prepared, 3); /* each candidate's kernels built ahead, once */
    CU_ASSERT_EQUAL(log.count, 9);
    for (int i = 0; i < log.count; i++) CU_ASSERT_EQUAL(log.ran[i], three[i % 3]);
    CU_ASSERT(best == three[0] || best == three[1] || best == three[2]);
    order_log failing = {.fails = {[TT_CONV_ALGO_IM2COL_GEMM] = 1, [TT_CONV_ALGO_WINOGRAD] = 1}};
    /* two warnings on stderr, "timing ... leaving it out" */
    TH_OK(tt_conv_autotune_pick(be, "stand-in B", three, 3, 3, log_run, NULL, &failing, &best));
    const tt_conv_algo want[] = {three[0], three[1], three[2], three[1], three[1]};
    CU_ASSERT_EQUAL(failing.count, 5);
    for (int i = 0; i < failing.count && i < 5; i++) CU_ASSERT_EQUAL(failing.ran[i], want[i]);
    CU_ASSERT_EQUAL(best, TT_CONV_ALGO_DIRECT);
    remove_cache_dir(be);
}

/* A stand-in whose candidates sleep: direct 400 ms a run, the others 6
 * ms. */
static tt_status sleepy_run(void *ctx, tt_conv_algo algo)
{
    TT_TRY(log_run(ctx, algo));
    if (th_backend()->preparing) return NULL;
    struct timespec t = {0, algo == TT_CONV_ALGO_DIRECT ? 400000000L : 6000000L};
    nanosleep(&t, NULL);
    return NULL;
}

/* A candidate over twice the best after the first timed round sits out
 * the second (its time could not come near the best's); the others run
 * both rounds, and the best is one of them. */
static void test_slow_candidate_pruned(void)
{
    fresh_cache_dir();
    tt_backend *be = th_backend();
    order_log log = {0};
    tt_conv_algo best = TT_CONV_ALGO_AUTO;
    TH_OK(tt_conv_autotune_pick(be, "stand-in P", three, 3, 3, sleepy_run, NULL, &log, &best));
    /* the untimed round, then round 1 of all three, then round 2 without direct */
    const tt_conv_algo want[] = {three[0], three[1], three[2], three[0], three[1],
                                 three[2], three[0], three[2]};
    CU_ASSERT_EQUAL(log.count, 8);
    for (int i = 0; i < log.count && i < 8; i++) CU_ASSERT_EQUAL(log.ran[i], want[i]);
    CU_ASSERT_EQUAL(tt_conv_autotune_stats_get().pruned, 1);
    CU_ASSERT(best == three[0] || best == three[2]);
    remove_cache_dir(be);
}

/* A stand-in check: refuses the algorithms marked, passes the others;
 * records what it checked. */
typedef struct verify_log {
    order_log runs;
    tt_conv_algo checked[32];
    int count;
    int wrong[TT_CONV_ALGO_COUNT];
} verify_log;

static tt_status log_run_v(void *ctx, tt_conv_algo algo) { return log_run(&((verify_log *)ctx)->runs, algo); }

static tt_status log_verify(void *ctx, tt_conv_algo algo, tt_conv_verdict *v)
{
    verify_log *log = ctx;
    if (log->count < 32) log->checked[log->count++] = algo;
    *v = (tt_conv_verdict){.error = log->wrong[algo] ? 0.5 : 1e-7, .bound = 1e-5,
                           .reference = TT_CONV_ALGO_IM2COL_GEMM};
    return NULL;
}

/* A stand-in check that passes every candidate, each run for it taking
 * the time in checked_ms (in the log's slot of the algorithm). */
typedef struct timed_check {
    order_log runs;
    double checked_ms[TT_CONV_ALGO_COUNT];
} timed_check;

static tt_status timed_check_run(void *ctx, tt_conv_algo algo)
{
    return log_run(&((timed_check *)ctx)->runs, algo);
}

static tt_status timed_check_verify(void *ctx, tt_conv_algo algo, tt_conv_verdict *v)
{
    *v = (tt_conv_verdict){.error = 1e-7, .bound = 1e-5, .reference = algo,
                           .ms = ((timed_check *)ctx)->checked_ms[algo]};
    return NULL;
}

/* A candidate over twice the best in the runs that verified them is never
 * timed (on a slow device its runs are most of the tuning); one within
 * twice, or whose run took under 5 ms (noise), is timed in both rounds. */
static void test_slow_check_not_timed(void)
{
    fresh_cache_dir();
    tt_backend *be = th_backend();
    tt_conv_algo best = TT_CONV_ALGO_AUTO;
    timed_check slow = {.checked_ms = {[TT_CONV_ALGO_IM2COL_GEMM] = 10,
                                       [TT_CONV_ALGO_DIRECT] = 100,
                                       [TT_CONV_ALGO_WINOGRAD] = 19}};
    TH_OK(tt_conv_autotune_pick(be, "stand-in S", three, 3, 3, timed_check_run,
                                timed_check_verify, &slow, &best));
    const tt_conv_algo want[] = {three[0], three[2], three[0], three[2]};
    CU_ASSERT_EQUAL(slow.runs.count, 4);
    for (int i = 0; i < slow.runs.count && i < 4; i++) CU_ASSERT_EQUAL(slow.runs.ran[i], want[i]);
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.pruned, 2); /* direct's two timed runs */
    CU_ASSERT_EQUAL(s.runs + s.pruned, 2 * 3);
    CU_ASSERT_NOT_EQUAL(best, TT_CONV_ALGO_DIRECT);
    timed_check quick = {.checked_ms = {[TT_CONV_ALGO_IM2COL_GEMM] = 0.5,
                                        [TT_CONV_ALGO_DIRECT] = 4.5,
                                        [TT_CONV_ALGO_WINOGRAD] = 1}};
    TH_OK(tt_conv_autotune_pick(be, "stand-in Q", three, 3, 3, timed_check_run,
                                timed_check_verify, &quick, &best));
    CU_ASSERT_EQUAL(quick.runs.count, 6);
    CU_ASSERT_EQUAL(tt_conv_autotune_stats_get().pruned, s.pruned);
    remove_cache_dir(be);
}

/* direct's weight gradient by its cost model: the share of its work that
 * is products kept, and AUTO leaves it out under an eighth (a deep layer's
 * small planes, a 1x1 kernel), on a device where it is timed at all. */
static void test_direct_weight_share(void)
{
    tt_conv_shape plane = {.batch = 2, .oh = 64, .ow = 96, .kh = 3, .kw = 3};
    tt_conv_shape deep = {.batch = 2, .oh = 4, .ow = 6, .kh = 3, .kw = 3};
    tt_conv_shape one = {.batch = 2, .oh = 2, .ow = 3, .kh = 1, .kw = 1};
    tt_conv_shape stem = {.batch = 1, .oh = 16, .ow = 16, .kh = 7, .kw = 7};
    /* 12288 pixels in 192 steps of 64, 6 steps of reduction */
    CU_ASSERT_DOUBLE_EQUAL(tt_conv_direct_weight_share(&plane, 64), 192.0 / 198, 1e-12);
    /* 48 of 64 work-items, 1 step and 6 of reduction */
    CU_ASSERT_DOUBLE_EQUAL(tt_conv_direct_weight_share(&deep, 64), 0.75 / 7, 1e-12);
    /* 12 of 64, 1 of 9 taps */
    CU_ASSERT_DOUBLE_EQUAL(tt_conv_direct_weight_share(&one, 64), 12.0 / 64 / 7 / 9, 1e-12);
    /* 49 taps in 6 chunks of 9, 256 pixels in 2 steps of 128 and 7 of reduction */
    CU_ASSERT_DOUBLE_EQUAL(tt_conv_direct_weight_share(&stem, 128), 2.0 / 9 * 49 / 54, 1e-12);
    tt_backend *be = th_backend();
    const tt_conv_algo_impl *direct = tt_conv2d_algo_impl(TT_CONV_ALGO_DIRECT);
    tt_conv2d_desc big = D(2, 32, 64, 96, 16, 3, 3, 1, 1, 1, 1, 1, 1, AUTO);
    tt_conv2d_desc small = D(2, 1152, 2, 3, 320, 1, 1, 1, 1, 0, 0, 1, 1, AUTO);
    tt_conv_shape sb, ss;
    TH_OK(tt_conv2d_shape(&big, &sb));
    TH_OK(tt_conv2d_shape(&small, &ss));
    CU_ASSERT(!is_candidate(be, &small, TT_CONV_ALGO_DIRECT, TT_CONV_DIR_BACKWARD_WEIGHT));
    if (tt_device_traits_of(be).opencl_cpu) { /* direct_w8 runs there: never the scalar */
        CU_ASSERT(!direct->can_win(be, &sb, TT_CONV_DIR_BACKWARD_WEIGHT));
        printf("\n    an OpenCL CPU: direct's scalar kernels are never timed");
        return;
    }
    CU_ASSERT(direct->can_win(be, &sb, TT_CONV_DIR_BACKWARD_WEIGHT));
    CU_ASSERT(!direct->can_win(be, &ss, TT_CONV_DIR_BACKWARD_WEIGHT));
    CU_ASSERT(direct->can_win(be, &ss, TT_CONV_DIR_FORWARD));
}

/* A candidate the check refuses is never timed nor picked, is written to
 * the find-db as refused (with its error, bound and reference), and a
 * later process (tt_conv_autotune_reset) that times the key again never
 * runs it: the refusal outlives the process and a rebuild. */
static void test_refused_kept(void)
{
    fresh_cache_dir();
    tt_backend *be = th_backend();
    verify_log log = {.wrong = {[TT_CONV_ALGO_DIRECT] = 1}};
    tt_conv_algo best = TT_CONV_ALGO_AUTO;
    /* one warning on stderr: "direct is off im2col_gemm by 0.5 ..." */
    TH_OK(tt_conv_autotune_pick(be, "stand-in C", three, 3, 3, log_run_v, log_verify, &log, &best));
    CU_ASSERT_EQUAL(log.count, 3);
    CU_ASSERT_NOT_EQUAL(best, TT_CONV_ALGO_DIRECT);
    CU_ASSERT_EQUAL(log.runs.prepared, 3); /* built ahead before the check */
    CU_ASSERT_EQUAL(log.runs.count, 4); /* two rounds of the two left, no warm-up */
    for (int i = 0; i < log.runs.count; i++) CU_ASSERT_NOT_EQUAL(log.runs.ran[i], TT_CONV_ALGO_DIRECT);
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.verified, 3);
    CU_ASSERT_EQUAL(s.refused, 1);
    cJSON *db = read_db(be);
    cJSON *entry = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(db, "entries"), "stand-in C");
    cJSON *refused = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(entry, "refused"), "direct");
    CU_ASSERT_FATAL(cJSON_IsObject(refused));
    CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItemCaseSensitive(refused, "error")->valuedouble, 0.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItemCaseSensitive(refused, "bound")->valuedouble, 1e-5, 1e-12);
    CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItemCaseSensitive(refused, "reference")->valuestring,
                           "im2col_gemm");
    cJSON_Delete(db);

    /* a new process: the refusal comes from the file */
    tt_conv_autotune_reset();
    tt_conv_verdict v = {0};
    CU_ASSERT(tt_conv_autotune_refused(be, "stand-in C", TT_CONV_ALGO_DIRECT, &v));
    CU_ASSERT_DOUBLE_EQUAL(v.error, 0.5, 1e-12);
    CU_ASSERT(!tt_conv_autotune_refused(be, "stand-in C", TT_CONV_ALGO_WINOGRAD, NULL));
    /* its pick no candidate now (a rebuild that lost it): timed again
     * without the refused one, which is neither checked nor run */
    const tt_conv_algo others[] = {TT_CONV_ALGO_DIRECT, TT_CONV_ALGO_WINOGRAD4,
                                   TT_CONV_ALGO_IMPLICIT_GEMM};
    verify_log again = {0};
    TH_OK(tt_conv_autotune_pick(be, "stand-in C", others, 3, 3, log_run_v, log_verify, &again, &best));
    CU_ASSERT_EQUAL(again.count, 2);
    CU_ASSERT_EQUAL(again.runs.prepared, 2); /* a refused candidate's kernels are not built */
    for (int i = 0; i < again.count; i++) CU_ASSERT_NOT_EQUAL(again.checked[i], TT_CONV_ALGO_DIRECT);
    for (int i = 0; i < again.runs.count; i++) CU_ASSERT_NOT_EQUAL(again.runs.ran[i], TT_CONV_ALGO_DIRECT);
    CU_ASSERT_NOT_EQUAL(best, TT_CONV_ALGO_DIRECT);

    /* every candidate refused: an error naming the key, the refusals kept */
    verify_log all = {.wrong = {[TT_CONV_ALGO_IM2COL_GEMM] = 1, [TT_CONV_ALGO_WINOGRAD] = 1}};
    const tt_conv_algo two[] = {TT_CONV_ALGO_IM2COL_GEMM, TT_CONV_ALGO_WINOGRAD};
    tt_status st = tt_conv_autotune_pick(be, "stand-in D", two, 2, 2, log_run_v, log_verify, &all, &best);
    CU_ASSERT_PTR_NOT_NULL(st);
    if (st) CU_ASSERT_PTR_NOT_NULL(strstr(tt_status_message(st), "stand-in D"));
    tt_status_free(st);
    CU_ASSERT_EQUAL(all.runs.count, 0);
    tt_conv_autotune_reset();
    CU_ASSERT(tt_conv_autotune_refused(be, "stand-in D", TT_CONV_ALGO_WINOGRAD, NULL));
    remove_cache_dir(be);
}

/* The candidates past `timed` (im2col_gemm where it cannot win: a
 * reference) are checked but not timed while a timed one is left; where
 * every timed one is refused they are timed and picked. */
static void test_checked_only(void)
{
    fresh_cache_dir();
    tt_backend *be = th_backend();
    const tt_conv_algo three[] = {TT_CONV_ALGO_DIRECT, TT_CONV_ALGO_WINOGRAD,
                                  TT_CONV_ALGO_IM2COL_GEMM};
    verify_log log = {0};
    tt_conv_algo best = TT_CONV_ALGO_AUTO;
    TH_OK(tt_conv_autotune_pick(be, "stand-in E", three, 3, 2, log_run_v, log_verify, &log, &best));
    CU_ASSERT_EQUAL(log.count, 3); /* all three checked */
    CU_ASSERT_EQUAL(log.runs.count, 4); /* two rounds of the two timed */
    for (int i = 0; i < log.runs.count; i++) CU_ASSERT_NOT_EQUAL(log.runs.ran[i], three[2]);
    CU_ASSERT(best == three[0] || best == three[1]);
    /* the timed ones refused: the reference is timed and picked */
    verify_log wrong = {.wrong = {[TT_CONV_ALGO_DIRECT] = 1, [TT_CONV_ALGO_WINOGRAD] = 1}};
    TH_OK(tt_conv_autotune_pick(be, "stand-in F", three, 3, 2, log_run_v, log_verify, &wrong,
                                &best));
    CU_ASSERT_EQUAL(best, TT_CONV_ALGO_IM2COL_GEMM);
    CU_ASSERT_EQUAL(wrong.runs.count, 2);
    /* the timed ones fail to run: the reference is timed and picked */
    verify_log failing = {.runs = {.fails = {[TT_CONV_ALGO_DIRECT] = 1, [TT_CONV_ALGO_WINOGRAD] = 1}}};
    /* two warnings on stderr, "timing ... leaving it out" */
    TH_OK(tt_conv_autotune_pick(be, "stand-in G", three, 3, 2, log_run_v, NULL, &failing, &best));
    CU_ASSERT_EQUAL(best, TT_CONV_ALGO_IM2COL_GEMM);
    remove_cache_dir(be);
}

/* max |got - want| / max |want| (a NaN in got counts as the largest). */
static double scaled_off(const float *got, const double *want, size_t n)
{
    double top = 0, err = 0;
    for (size_t i = 0; i < n; i++) top = fabs(want[i]) > top ? fabs(want[i]) : top;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(got[i] - want[i]);
        err = e > err || e != e ? e : err;
    }
    return top > 0 ? err / top : err;
}

/* How many entries of the find-db refuse `algo`. */
static int refusals_of(tt_backend *be, tt_conv_algo algo)
{
    cJSON *db = read_db(be);
    int count = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(db, "entries"))
        count += cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "refused"),
                                                  tt_conv_algo_name(algo)) != NULL;
    cJSON_Delete(db);
    return count;
}

/* A planted wrong kernel ($TT_CONV_PERTURB): run by name it is wrong (the
 * knob works); under AUTO the check refuses it in every direction it runs
 * and the op's results are right, taken from another algorithm.  Planted
 * in im2col_gemm, the reference itself: the host's double refuses it and
 * the next reference takes its place. */
static void test_planted_wrong_refused(void)
{
    tt_backend *be = th_backend();
    const tt_conv2d_desc shape = D(3, 16, 9, 11, 16, 3, 3, 1, 1, 1, 1, 1, 1, AUTO);
    const tt_conv_algo planted[] = {direct_row(be, &shape, TT_CONV_DIR_FORWARD),
                                    TT_CONV_ALGO_IM2COL_GEMM};
    for (int p = 0; p < 2; p++) {
        fresh_cache_dir();
        th_setenv("TT_CONV_PERTURB", tt_conv_algo_name(planted[p]));
        tt_knobs_reload();
        conv_run r;
        run_init(&r, (tt_conv2d_desc)D(3, 16, 9, 11, 16, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 77);
        r.desc.algo = planted[p];
        CU_ASSERT(run_forward(be, &r) > 0.5); /* the knob plants a wrong element */
        r.desc.algo = TT_CONV_ALGO_AUTO;
        CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
        float *gi = malloc(r.inp_n * sizeof(float)), *gw = malloc(r.weight_n * sizeof(float));
        double *want_i = calloc(r.inp_n, sizeof(double)), *want_w = calloc(r.weight_n, sizeof(double));
        CU_ASSERT_FATAL(gi && gw && want_i && want_w);
        run_backward(be, &r, TT_CONV_ALGO_AUTO, gi, gw);
        double *x = th_to_double(r.inp, r.inp_n), *w = th_to_double(r.weight, r.weight_n);
        double *dy = th_to_double(r.dout, r.out_n);
        ref_conv2d_backward(want_i, want_w, x, w, dy, &r.desc);
        double ei = scaled_off(gi, want_i, r.inp_n), ew = scaled_off(gw, want_w, r.weight_n);
        CU_ASSERT(ei < 1e-5);
        CU_ASSERT(ew < 1e-5);
        tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
        tt_conv2d_desc direct = shape;
        direct.algo = planted[0];
        int runs_all = tt_conv2d_runs_on(be, &direct);
        if (runs_all) {
            CU_ASSERT_EQUAL(s.refused, 3);
            CU_ASSERT_EQUAL(refusals_of(be, planted[p]), 3);
        }
        printf("\n    %s planted: refused in %d directions, AUTO off the double by "
               "dinp %.1e dweight %.1e", tt_conv_algo_name(planted[p]),
               refusals_of(be, planted[p]), ei, ew);
        free(gi), free(gw), free(want_i), free(want_w), free(x), free(w), free(dy);
        run_free(&r);
        remove_cache_dir(be);
    }
    th_setenv("TT_CONV_PERTURB", NULL);
    tt_knobs_reload();
}

/* A call whose input holds an infinity (a loss-scaled fp16 step that
 * overflowed), or whose result comes near fp32's overflow, is no test of a
 * kernel: an infinity spreads through a Winograd tile's transform where
 * the direct sum keeps it to its own outputs, and sums that large
 * overflow in one order and not another.  Nothing is refused, timed or
 * kept; the next call with ordinary inputs decides. */
static void test_overflow_undecided(void)
{
    fresh_cache_dir();
    tt_backend *be = th_backend();
    conv_run r;
    run_init(&r, (tt_conv2d_desc)D(2, 16, 8, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, AUTO), 91);
    if (!timed_here(be, &r.desc, TT_CONV_DIR_FORWARD, "an overflowed call left undecided")) {
        run_free(&r);
        remove_cache_dir(be);
        return;
    }
    float inf = INFINITY;
    TH_OK(tt_write(be, tt_mem_f32(tt_mem_of(r.inp_b), 37), &inf, sizeof inf));
    TH_OK(tt_conv2d_forward(be, tt_mem_of(r.out_b), tt_mem_of(r.inp_b), tt_mem_of(r.weight_b),
                            tt_mem_of(r.bias_b), &r.desc, (tt_mem){0}));
    tt_conv_autotune_stats s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.undecided, 1);
    CU_ASSERT_EQUAL(s.refused, 0);
    CU_ASSERT_EQUAL(s.timed, 0);
    CU_ASSERT_PTR_NULL(read_db(be));
    /* finite, but a result near fp32's overflow (a loss scale too large):
     * some algorithm's order of sums may overflow where another's does not */
    float huge = 1e36f;
    TH_OK(tt_write(be, tt_mem_f32(tt_mem_of(r.inp_b), 37), &huge, sizeof huge));
    TH_OK(tt_conv2d_forward(be, tt_mem_of(r.out_b), tt_mem_of(r.inp_b), tt_mem_of(r.weight_b),
                            tt_mem_of(r.bias_b), &r.desc, (tt_mem){0}));
    s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.undecided, 2);
    CU_ASSERT_EQUAL(s.refused, 0);
    CU_ASSERT_EQUAL(s.timed, 0);
    TH_OK(tt_write(be, tt_mem_of(r.inp_b), r.inp, r.inp_n * sizeof(float)));
    CU_ASSERT(run_forward(be, &r) < REF_CONV_FWD_TOL);
    s = tt_conv_autotune_stats_get();
    CU_ASSERT_EQUAL(s.timed, 1);
    CU_ASSERT_EQUAL(s.refused, 0);
    run_free(&r);
    remove_cache_dir(be);
}

/* Weight gradients that cancel, as one after a training batch norm does
 * (its input gradients sum to 0 over each channel), each a sum of a few
 * terms whose result is far below them; 1x1 convolutions as ResNet-50's
 * and DeepLabV3+'s (N, Cin, H, W, Cout, stride):
 * - layer4's downsample at a 32x64 tile, N2 C1024 2x4 -> C2048 stride 2,
 *   4 terms (256 -> 512 channels here);
 * - layer4's conv1 at that tile, N2 C1024 2x4 -> C256, 16 terms;
 * - the image pooling's convolution, N3 C512 1x1 -> C256, 3 terms.
 * Every algorithm's rounding is of the terms, not of the result: none is
 * refused (each once was: against the host's double by up to 1.7x the
 * bound, the step failing as "the device computes this layer wrong"; then
 * against the reference algorithm by up to 7.6x, warned about in every
 * such run), and the result is right. */
static void test_cancelling_sums_kept(void)
{
    const int shapes[][6] = {{2, 256, 2, 4, 512, 2}, {2, 1024, 2, 4, 256, 1}, {3, 512, 1, 1, 256, 1}};
    for (int k = 0; k < 3; k++) {
        fresh_cache_dir();
        tt_backend *be = th_backend();
        const int *sh = shapes[k];
        int n = sh[0], ci = sh[1], h = sh[2], w = sh[3], co = sh[4], st = sh[5];
        int oh = (h - 1) / st + 1, ow = (w - 1) / st + 1, plane = oh * ow;
        tt_conv2d_desc d = D(n, ci, h, w, co, 1, 1, st, st, 0, 0, 1, 1, AUTO);
        size_t in_n = (size_t)n * ci * h * w, out_n = (size_t)n * co * plane, w_n = (size_t)co * ci;
        float *x = malloc(in_n * sizeof *x), *dy = malloc(out_n * sizeof *dy);
        float *got = malloc(w_n * sizeof *got);
        double *want = calloc(w_n, sizeof *want);
        uint64_t seed = 17;
        th_fill_uniform(x, in_n, 0.99, 1.01, &seed); /* ReLU outputs near one value */
        th_fill_uniform(dy, out_n, -1, 1, &seed);
        for (int c = 0; c < co; c++) { /* each channel's gradients sum to 0 */
            double mean = 0;
            for (int b = 0; b < n; b++)
                for (int o = 0; o < plane; o++) mean += dy[((size_t)b * co + c) * plane + o];
            mean /= n * plane;
            for (int b = 0; b < n; b++)
                for (int o = 0; o < plane; o++) dy[((size_t)b * co + c) * plane + o] -= (float)mean;
        }
        double *xd = th_to_double(x, in_n), *dyd = th_to_double(dy, out_n);
        ref_conv2d_backward(NULL, want, xd, NULL, dyd, &d);
        tt_buffer *bx = th_upload(x, in_n, "cancel.x"), *bdy = th_upload(dy, out_n, "cancel.dy");
        float *zeros = calloc(w_n, sizeof *zeros);
        tt_buffer *bdw = th_upload(zeros, w_n, "cancel.dw");
        uint64_t refused = tt_conv_autotune_stats_get().refused;
        TH_OK(tt_conv2d_backward(be, (tt_mem){0}, tt_mem_of(bdw), (tt_mem){0}, tt_mem_of(bdy),
                                 tt_mem_of(bx), (tt_mem){0}, &d, (tt_mem){0}));
        th_download(got, bdw, w_n);
        /* against the terms' scale: |dy| x |x| summed over the N x plane of them */
        double terms = 0, worst = 0;
        for (size_t i = 0; i < w_n; i++) {
            size_t o_c = i / (size_t)ci, i_c = i % (size_t)ci;
            double mag = 0;
            for (int b = 0; b < n; b++)
                for (int oy = 0; oy < oh; oy++)
                    for (int ox = 0; ox < ow; ox++)
                        mag += fabs(dyd[(((size_t)b * co + o_c) * oh + oy) * ow + ox] *
                                    xd[(((size_t)b * ci + i_c) * h + oy * st) * w + ox * st]);
            terms = fmax(terms, mag);
        }
        for (size_t i = 0; i < w_n; i++) worst = fmax(worst, fabs(got[i] - want[i]) / terms);
        uint64_t now = tt_conv_autotune_stats_get().refused;
        printf("\n    N%d C%d %dx%d -> C%d stride %d (%d terms): refused %llu; largest error %.2e of "
               "the terms' largest sum", n, ci, h, w, co, st, n * plane,
               (unsigned long long)(now - refused), worst);
        CU_ASSERT_EQUAL(now - refused, 0);
        CU_ASSERT(worst < 1e-5);
        tt_buffer_free(bx), tt_buffer_free(bdy), tt_buffer_free(bdw);
        free(x), free(dy), free(got), free(want), free(xd), free(dyd), free(zeros);
        remove_cache_dir(be);
    }
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"autotuner: timed once, find-db written and reused", test_autotune},
        {"autotuner on conv_transpose2d", test_autotune_transpose},
        {"a named algorithm, and a run's setting (--algo, TT_CONV_ALGO)", test_force},
        {"a corrupt find-db is ignored with a warning", test_corrupt_db},
        {"an unreadable find-db is timed again, then written whole", test_unreadable_db},
        {"the dry backend never tunes; its 0 ms entries are timed again", test_dry_backend_never_tunes},
        {"the backend and the code are part of the key", test_backend_in_key},
        {"workspace sized for the known picks; a first layer leaves out its input gradient", test_workspace_of_known_picks},
        {"a find-db pick of implicit_gemm runs every direction", test_implicit_gemm_pick},
        {"AUTO keeps within a desc's workspace limit", test_workspace_limit},
        {"candidates timed in alternating rounds; a failing one left out", test_rounds_alternate},
        {"a candidate past twice the best sits out the second round", test_slow_candidate_pruned},
        {"a candidate past twice the best while checked is never timed", test_slow_check_not_timed},
        {"direct's weight gradient by its cost model", test_direct_weight_share},
        {"a refused candidate is never timed, and stays refused in the find-db", test_refused_kept},
        {"a checked-only candidate is timed only where no timed one is left", test_checked_only},
        {"a planted wrong kernel is refused; AUTO's results stay right", test_planted_wrong_refused},
        {"a call with an infinity in its input, or near overflow, decides nothing", test_overflow_undecided},
        {"a weight gradient whose sum cancels is refused by no algorithm", test_cancelling_sums_kept},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("conv_autotune", tests, TH_EVERY);
}

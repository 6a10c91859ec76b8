/*
 * CLBlast tuning: the per-device file (round trip, corrupt and foreign
 * files ignored with a warning, TT_NO_TUNING), overrides that leave GEMM
 * results unchanged, and a search with a tiny budget that still yields a
 * valid file.  Runs in a private cache folder so that no other test program
 * picks up what this one writes.
 *
 * CLBlast's overrides are process-wide, so the order of the tests matters:
 * the first one computes GEMMs with CLBlast's own parameters.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tune/tune.h"
#include "core/status.h"
#include "harness.h"

static char cache_dir[1024];

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

/* The warning tt_cl_tuning_apply_cached prints (empty if none) and its result. */
static int apply_cached_capture(char *warning, size_t size)
{
    FILE *f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    int applied = tt_cl_tuning_apply_cached(th_backend(), f);
    rewind(f);
    size_t n = fread(warning, 1, size - 1, f);
    warning[n] = '\0';
    fclose(f);
    return applied;
}

/* C = op(A) op(B) for a few odd shapes, in double on the host and on the
 * device; returns the largest relative error. */
static double gemm_error(int trans_a, int trans_b, size_t m, size_t n, size_t k, float *out)
{
    uint64_t rng = 42 + m;
    float *a = malloc(m * k * sizeof(float)), *b = malloc(k * n * sizeof(float));
    double *want = malloc(m * n * sizeof(double));
    CU_ASSERT_FATAL(a && b && want);
    th_fill_uniform(a, m * k, -1, 1, &rng);
    th_fill_uniform(b, k * n, -1, 1, &rng);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t p = 0; p < k; p++)
                s += (double)(trans_a ? a[p * m + i] : a[i * k + p]) *
                     (double)(trans_b ? b[j * k + p] : b[p * n + j]);
            want[i * n + j] = s;
        }
    tt_buffer *da = th_upload(a, m * k, "tune.a"), *db = th_upload(b, k * n, "tune.b");
    tt_buffer *dc = th_zeros(m * n, "tune.c");
    tt_gemm g = {.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k, .alpha = 1.0f,
                 .a = tt_mem_of(da), .lda = trans_a ? m : k, .b = tt_mem_of(db),
                 .ldb = trans_b ? k : n, .c = tt_mem_of(dc), .ldc = n};
    TH_OK(tt_gemm_run(th_backend(), &g));
    th_download(out, dc, m * n);
    double err = th_max_rel_error(out, want, m * n, 1.0);
    tt_buffer_free(da), tt_buffer_free(db), tt_buffer_free(dc);
    free(a), free(b), free(want);
    return err;
}

static void test_overrides_change_no_numbers(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    static const size_t shapes[][5] = {{0, 0, 67, 45, 33}, {0, 1, 19, 70, 131}, {1, 0, 70, 37, 9}};
    enum { SHAPES = 3 };
    float *before[SHAPES], *after[SHAPES];
    double worst_before = 0, worst_after = 0, worst_diff = 0;
    for (int s = 0; s < SHAPES; s++) {
        size_t mn = shapes[s][2] * shapes[s][3];
        before[s] = malloc(mn * sizeof(float));
        after[s] = malloc(mn * sizeof(float));
        double e = gemm_error((int)shapes[s][0], (int)shapes[s][1], shapes[s][2], shapes[s][3],
                              shapes[s][4], before[s]);
        worst_before = fmax(worst_before, e);
    }
    tt_cl_tuning t;
    tt_cl_tuning_seed(&be->device, &t);
    TH_OK(tt_cl_tuning_apply(be, &t));
    for (int s = 0; s < SHAPES; s++) {
        size_t mn = shapes[s][2] * shapes[s][3];
        double e = gemm_error((int)shapes[s][0], (int)shapes[s][1], shapes[s][2], shapes[s][3],
                              shapes[s][4], after[s]);
        worst_after = fmax(worst_after, e);
        worst_diff = fmax(worst_diff, th_max_rel_error_f(after[s], before[s], mn, 1.0));
        free(before[s]), free(after[s]);
    }
    printf("\n  GEMM vs double reference: CLBlast defaults %.2e, tuned seed %.2e; "
           "tuned vs defaults %.2e\n", worst_before, worst_after, worst_diff);
    CU_ASSERT(worst_before < 1e-5);
    CU_ASSERT(worst_after < 1e-5);
    CU_ASSERT(worst_diff < 1e-5);

    /* a combination that breaks CLBlast's constraints is refused, not applied */
    tt_cl_tuning bad = t;
    bad.values[TT_CLBLAST_XGEMM][tt_clblast_param_index(TT_CLBLAST_XGEMM, "MWG")] = 48;
    tt_status s = tt_cl_tuning_apply(be, &bad);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    CU_ASSERT(s && strstr(tt_status_message(s), "MWG") != NULL);
    tt_status_free(s);
}

static void test_round_trip(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    tt_cl_tuning t, back;
    tt_cl_tuning_seed(&be->device, &t);
    t.values[TT_CLBLAST_GEMM_ROUTINE][0] = 77;
    t.values[TT_CLBLAST_XGEMM_DIRECT][tt_clblast_param_index(TT_CLBLAST_XGEMM_DIRECT, "PADA")] = 0;
    t.gflops_before = 8.5, t.gflops_after = 42.25;
    char path[1200];
    snprintf(path, sizeof path, "%s/sub/dir/round-trip.json", cache_dir);
    TH_OK(tt_cl_tuning_save(path, &t));
    memset(&back, 0xab, sizeof back);
    TH_OK(tt_cl_tuning_load(path, &be->device, &back));
    CU_ASSERT_STRING_EQUAL(back.device, be->device.name);
    CU_ASSERT_STRING_EQUAL(back.driver_version, be->device.driver_version);
    CU_ASSERT_STRING_EQUAL(back.platform_version, be->device.platform_version);
    for (int k = 0; k < TT_CLBLAST_KERNEL_COUNT; k++)
        CU_ASSERT(memcmp(back.values[k], t.values[k],
                         sizeof(size_t) * (size_t)tt_clblast_kernels[k].count) == 0);
    CU_ASSERT_DOUBLE_EQUAL(back.gflops_after, 42.25, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(back.gflops_before, 8.5, 1e-12);
    /* no temporary file is left behind */
    char folder[1200];
    snprintf(folder, sizeof folder, "%s/sub/dir", cache_dir);
    DIR *d = opendir(folder);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    int temporary = 0;
    for (struct dirent *e; (e = readdir(d));) temporary += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    CU_ASSERT_EQUAL(temporary, 0);
    remove(path);

    /* the cache path depends on the device and lies in the cache folder */
    char cached[1200];
    CU_ASSERT_FATAL(tt_cl_tuning_path(&be->device, cached, sizeof cached));
    CU_ASSERT(strncmp(cached, cache_dir, strlen(cache_dir)) == 0);
    CU_ASSERT(strstr(cached, "/clblast-") != NULL);
    tt_device_info other = be->device;
    other.driver_version[0] ^= 1; /* another driver version */
    char other_path[1200];
    tt_cl_tuning_path(&other, other_path, sizeof other_path);
    CU_ASSERT(strcmp(cached, other_path) != 0);
}

static void test_bad_files_are_ignored_with_a_warning(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    char path[1200], warning[4096];
    tt_cl_tuning_path(&be->device, path, sizeof path);
    remove(path);
    CU_ASSERT_EQUAL(apply_cached_capture(warning, sizeof warning), 0); /* no file: silent */
    CU_ASSERT_STRING_EQUAL(warning, "");

    tt_cl_tuning good;
    tt_cl_tuning_seed(&be->device, &good);
    TH_OK(tt_cl_tuning_save(path, &good));
    char *text = NULL;
    {
        FILE *f = fopen(path, "r");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        rewind(f);
        text = calloc((size_t)len + 1, 1);
        CU_ASSERT_FATAL(text && fread(text, 1, (size_t)len, f) == (size_t)len);
        fclose(f);
    }
    struct { const char *what, *content, *expect; } cases[] = {
        {"garbage", "\x01\x02 not json at all", "not valid JSON"},
        {"truncated", NULL, "not valid JSON"},
        {"wrong format", "{\"format\": \"something-else\", \"version\": 1}", "not a tiletrain"},
        {"wrong version", "{\"format\": \"tiletrain-clblast-tuning\", \"version\": 99}", "version"},
        {"missing kernels", "{\"format\": \"tiletrain-clblast-tuning\", \"version\": 1, \"device\": "
                            "\"x\", \"driver_version\": \"y\", \"platform_version\": \"z\"}", "kernels"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (cases[c].content) {
            write_text(path, cases[c].content);
        } else {
            char *half = strndup(text, strlen(text) / 2);
            write_text(path, half);
            free(half);
        }
        int applied = apply_cached_capture(warning, sizeof warning);
        printf("\n  %-16s -> %s", cases[c].what, warning);
        CU_ASSERT_EQUAL(applied, 0);
        CU_ASSERT(strstr(warning, "warning") != NULL);
        CU_ASSERT(strstr(warning, path) != NULL);
        CU_ASSERT(strstr(warning, cases[c].expect) != NULL);
    }

    /* a parameter that breaks a constraint, and one that is missing */
    char *broken = strdup(text);
    char *mwg = strstr(broken, "\"MWG\":");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mwg);
    char *digits = mwg + 6;
    while (*digits == ' ' || *digits == '\t') digits++;
    memcpy(digits, "63", 2); /* "64" -> "63" */
    write_text(path, broken);
    CU_ASSERT_EQUAL(apply_cached_capture(warning, sizeof warning), 0);
    CU_ASSERT(strstr(warning, "MWG") != NULL);
    free(broken);
    broken = strdup(text);
    char *kreg = strstr(broken, "\"KREG\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(kreg);
    memcpy(kreg, "\"KRAG\"", 6);
    write_text(path, broken);
    CU_ASSERT_EQUAL(apply_cached_capture(warning, sizeof warning), 0);
    CU_ASSERT(strstr(warning, "KREG") != NULL);
    free(broken);

    /* a file for another device, under this device's name */
    tt_cl_tuning foreign = good;
    snprintf(foreign.device, sizeof foreign.device, "Some Other GPU");
    TH_OK(tt_cl_tuning_save(path, &foreign));
    CU_ASSERT_EQUAL(apply_cached_capture(warning, sizeof warning), 0);
    printf("\n  %-16s -> %s", "foreign device", warning);
    CU_ASSERT(strstr(warning, "Some Other GPU") != NULL);
    CU_ASSERT(strstr(warning, "run `tiletrain tune`") != NULL);

    /* the good file applies, unless TT_NO_TUNING says no */
    TH_OK(tt_cl_tuning_save(path, &good));
    th_setenv("TT_NO_TUNING", "1");
    CU_ASSERT_EQUAL(apply_cached_capture(warning, sizeof warning), 0);
    CU_ASSERT_STRING_EQUAL(warning, "");
    th_setenv("TT_NO_TUNING", NULL);
    CU_ASSERT_EQUAL(apply_cached_capture(warning, sizeof warning), 1);
    CU_ASSERT_STRING_EQUAL(warning, "");
    free(text);
    remove(path);
}

/* GEMMK=1 configurations with more rows than columns per work-item
 * computed wrong results on PoCL 3.1 (and the process crashed soon after):
 * refused, with the rule named; the square one the search starts from
 * passes.  The three are the ones that failed. */
static void test_gemmk1_rows_equal_columns(void)
{
    /* GEMMK KREG KWG KWI MDIMA MDIMC MWG NDIMB NDIMC NWG SA SB STRM STRN VWM VWN */
    const size_t square[16] = {1, 8, 1, 1, 4, 4, 32, 4, 4, 32, 0, 0, 0, 0, 8, 8};
    const size_t tall[3][16] = {
        {1, 8, 1, 1, 4, 4, 64, 4, 4, 32, 0, 0, 0, 0, 8, 8},
        {1, 8, 1, 1, 2, 2, 32, 2, 2, 8, 0, 0, 0, 0, 1, 4},
        {1, 4, 1, 1, 4, 4, 32, 4, 4, 8, 0, 0, 0, 0, 1, 1},
    };
    tt_status s = tt_cl_tuning_check_kernel(TT_CLBLAST_XGEMM, square, NULL);
    CU_ASSERT_PTR_NULL(s);
    tt_status_free(s);
    for (int i = 0; i < 3; i++) {
        s = tt_cl_tuning_check_kernel(TT_CLBLAST_XGEMM, tall[i], NULL);
        CU_ASSERT_PTR_NOT_NULL(s);
        if (s) {
            printf("\n    %s", tt_status_message(s));
            CU_ASSERT(strstr(tt_status_message(s), "MWI = NWI") != NULL);
        }
        tt_status_free(s);
    }
    printf("\n");
}

static void test_unet_shapes(void)
{
    tt_gemm_shape *shapes = NULL;
    int count = 0;
    TH_OK(tt_gemm_shapes_unet(3, 4, 16, 3, 256, 256, &shapes, &count));
    int calls = 0, found = 0;
    for (int s = 0; s < count; s++) {
        calls += shapes[s].count;
        /* enc.0.conv2 forward: M = 16, N = 256*256, K = 16*9 */
        if (!shapes[s].trans_a && !shapes[s].trans_b && shapes[s].m == 16 &&
            shapes[s].n == 65536 && shapes[s].k == 144)
            found = shapes[s].count;
    }
    /* 14 3x3 convs, 3 up-convs and the head, 3 GEMMs each, less the input
     * gradient of the first conv */
    CU_ASSERT_EQUAL(calls, 18 * 3 - 1);
    CU_ASSERT_EQUAL(found, 2); /* enc.0.conv2 and dec.0.conv2 */
    free(shapes);
    tt_status s = tt_gemm_shapes_unet(3, 4, 16, 3, 100, 256, &shapes, &count);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_INVALID_ARGUMENT);
    tt_status_free(s);
}

static void test_tiny_budget_gives_a_valid_file(void)
{
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    char list[1200];
    snprintf(list, sizeof list, "%s/shapes.txt", cache_dir);
    write_text(list, "# a conv's three GEMMs, small\nN N 16 1024 72 2\nN T 16 72 1024\n"
                     "T N 72 1024 16 # input gradient\n");
    tt_gemm_shape *shapes = NULL;
    int count = 0;
    TH_OK(tt_gemm_shapes_load(list, &shapes, &count));
    CU_ASSERT_EQUAL_FATAL(count, 3);
    CU_ASSERT_EQUAL(shapes[0].count, 2);
    CU_ASSERT(shapes[2].trans_a == 1 && shapes[2].m == 72 && shapes[2].k == 16);

    /* starting from the configuration the first test built, and trying only
     * that one (a new one costs a rebuild, 10 s or more on PoCL), keeps
     * this fast */
    tt_cl_tuning start;
    tt_cl_tuning_seed(&be->device, &start);
    tt_cl_tune_options opt = {.budget_s = 1.5, .measure_baseline = 1, .previous = &start, .seed = 7,
                              .max_xgemm = 1, .max_direct = -1};
    tt_cl_tune_result r;
    TH_OK(tt_cl_tune(be, shapes, count, &opt, &r));
    printf("\n  %d configuration(s) in %.1f s; %.2f -> %.2f GFLOP/s\n", r.candidates, r.elapsed_s,
           r.best.gflops_before, r.best.gflops_after);
    CU_ASSERT(r.candidates == 1);
    CU_ASSERT(r.elapsed_s < 300);
    CU_ASSERT(r.best.gflops_after > 0 && r.best.gflops_before > 0);
    for (int s = 0; s < count; s++) CU_ASSERT(r.after_s[s] > 0 && r.before_s[s] > 0);
    char path[1200];
    tt_cl_tuning_path(&be->device, path, sizeof path);
    TH_OK(tt_cl_tuning_save(path, &r.best));
    tt_cl_tuning back;
    TH_OK(tt_cl_tuning_load(path, &be->device, &back));
    CU_ASSERT(memcmp(back.values, r.best.values, sizeof back.values) == 0);
    char warning[1024];
    CU_ASSERT_EQUAL(apply_cached_capture(warning, sizeof warning), 1);
    tt_cl_tune_result_free(&r);
    remove(path);
    remove(list);
    free(shapes);

    /* a malformed shape line names the file and the line */
    write_text(list, "N N 4 4 4\nN X 4 4 4\n");
    tt_status s = tt_gemm_shapes_load(list, &shapes, &count);
    CU_ASSERT_EQUAL(tt_status_code(s), TT_ERR_FORMAT);
    CU_ASSERT(s && strstr(tt_status_message(s), ":2:") != NULL);
    tt_status_free(s);
    remove(list);
}

int main(void)
{
    /* A private cache folder: other test programs must not see these files. */
    const char *base = getenv("TT_CACHE_DIR");
    snprintf(cache_dir, sizeof cache_dir, "%s/tune-test", base && *base ? base : "/tmp");
    mkdir(base && *base ? base : "/tmp", 0755);
    mkdir(cache_dir, 0755);
    th_setenv("TT_CACHE_DIR", cache_dir);
    tt_device_info *devices = NULL;
    int n = 0, index = 0;
    tt_status s = tt_device_select(NULL, &index);
    if (!s) s = tt_devices_list(&devices, &n);
    if (!s && index < n) { /* a file left by an interrupted run would change the first test */
        char path[1200];
        if (tt_cl_tuning_path(&devices[index], path, sizeof path)) remove(path);
    }
    tt_status_free(s);
    free(devices);
    CU_TestInfo tests[] = {
        {"overrides change no GEMM result", test_overrides_change_no_numbers},
        {"tuning file round trip", test_round_trip},
        {"corrupt and foreign files ignored with a warning", test_bad_files_are_ignored_with_a_warning},
        {"UNet GEMM shapes", test_unet_shapes},
        {"GEMMK=1 needs as many rows as columns per work-item", test_gemmk1_rows_equal_columns},
        {"a 1.5 s budget yields a valid file", test_tiny_budget_gives_a_valid_file},
        CU_TEST_INFO_NULL,
    };
    return th_run_suite("tune", tests, TH_OPENCL);
}

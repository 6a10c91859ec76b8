/* Shared test helpers; see harness.h. */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "core/clock.h"
#include "core/knobs.h"
#include "core/status.h"
#include "harness_vulkan.h"

static tt_backend *backend;
static int backend_failed;
static uint64_t backend_messages_seen; /* validation messages of `backend` already failed on */

void th_report_status(const char *what, tt_status status, const char *file, int line)
{
    fprintf(stderr, "\n%s:%d: %s\n  -> %s [%s]\n", file, line, what, tt_status_message(status),
            tt_code_name(tt_status_code(status)));
    if (*tt_status_detail(status)) fprintf(stderr, "%s\n", tt_status_detail(status));
    tt_status_free(status);
}

/* $TH_BACKEND, a test-only variable: the library never reads it, so it is
 * no TT_* knob (core/knobs.h lists what the library reads); -1 when it
 * names no backend the tests run on. */
static int requested_kind(void)
{
    const char *name = getenv("TH_BACKEND");
    if (!name || !*name) return TT_BACKEND_OPENCL;
    tt_backend_kind kind = TT_BACKEND_OPENCL;
    tt_status s = tt_backend_kind_parse(name, &kind);
    if (s || kind == TT_BACKEND_DRY) {
        fprintf(stderr, "TH_BACKEND=%s: the tests run on opencl or vulkan\n", name);
        tt_status_free(s);
        return -1;
    }
    return (int)kind;
}

tt_backend_kind th_backend_kind(void)
{
    int kind = requested_kind();
    return kind < 0 ? TT_BACKEND_OPENCL : (tt_backend_kind)kind;
}

const char *th_backend_name(void) { return tt_backend_kind_name(th_backend_kind()); }

const char *th_backend_device(void)
{
    /* Vulkan: lavapipe unless TT_DEVICE names a device (a picker skips CPUs) */
    const char *device = tt_knob_str(TT_KNOB_DEVICE);
    if (th_backend_kind() == TT_BACKEND_VULKAN) return device && *device ? device : "llvmpipe";
    return device;
}

tt_backend *th_profiling_backend(void)
{
    tt_backend *be = NULL;
    TH_OK(tt_backend_create(&(tt_backend_request){.kind = th_backend_kind(),
                                                  .device = th_backend_device(),
                                                  .profiling = 1},
                            &be));
    if (be && be->profile) be->profile->by_kernel = 1;
    return be;
}

uint64_t th_launches(const tt_backend *be, const char *kernel)
{
    char kind[64];
    snprintf(kind, sizeof kind, "other/%s", kernel);
    for (int k = 0; be->profile && k < be->profile->count; k++)
        if (strcmp(be->profile->kind[k], kind) == 0) return be->profile->launches[k];
    return 0;
}

/* The suite's th_run_suite declaration (TH_OPENCL until it runs). */
static th_runs_on runs_on = TH_OPENCL;

tt_backend *th_backend(void)
{
    if (backend || backend_failed) return backend;
    if (runs_on == TH_HOST) {
        fprintf(stderr, "\n  a TH_HOST suite opens a device: declare it TH_OPENCL or TH_EVERY "
                        "in its th_run_suite call\n");
        CU_FAIL("a TH_HOST suite opened a device");
        backend_failed = 1;
        return NULL;
    }
    int kind = requested_kind();
    /* every Vulkan backend of the process validates, a trainer's too */
    if (kind == TT_BACKEND_VULKAN) th_setenv("TT_VULKAN_VALIDATION", "1");
    tt_backend_request request = {.kind = kind < 0 ? TT_BACKEND_OPENCL : (tt_backend_kind)kind,
                                  .device = th_backend_device()};
    tt_status s = kind < 0 ? tt_error_new(TT_ERR_INVALID_ARGUMENT, "TH_BACKEND names no backend")
                           : tt_backend_create(&request, &backend);
    if (s) {
        th_report_status("creating the test backend", s, __FILE__, __LINE__);
        backend_failed = 1;
        return NULL;
    }
    backend_messages_seen = 0;
    printf("\n  [backend %s: %s]", th_backend_name(), backend->device.name);
    return backend;
}

void th_backend_release(void)
{
    tt_backend_destroy(backend);
    backend = NULL;
}

void th_left_out(const char *what, const char *why)
{
    printf("\n    left out on %s: %s (%s)", th_backend_name(), what, why);
    if (th_backend_kind() == TT_BACKEND_OPENCL)
        CU_FAIL("OpenCL has every kernel: nothing may be left out there");
}

int th_has_program(const char *program, const char *what)
{
    tt_backend *be = th_backend();
    if (!be || tt_backend_has_program(be, program)) return 1;
    char why[96];
    snprintf(why, sizeof why, "it has no %s kernels", program);
    th_left_out(what, why);
    return 0;
}

void th_check_validation(tt_backend *be)
{
    uint64_t count = 0;
    const char *first = "";
    if (!be || th_vulkan_messages(be, &count, &first) < 0) return;
    tt_status s = tt_finish(be);
    if (s) {
        th_report_status("finishing the queue after the test", s, __FILE__, __LINE__);
        CU_FAIL("the queue did not finish cleanly");
    }
    if (!th_vulkan_messages(be, &count, &first))
        CU_FAIL("a Vulkan backend of the tests runs without the validation layer");
    uint64_t seen = be == backend ? backend_messages_seen : 0;
    if (count > seen) {
        printf("\n    Vulkan validation: %llu message%s, the first: %s", (unsigned long long)(count - seen),
               count - seen == 1 ? "" : "s", first);
        CU_FAIL("the Vulkan validation layer reported messages");
    }
    if (be == backend) backend_messages_seen = count;
}

double th_uniform(uint64_t *state, double lo, double hi)
{
    /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo + (hi - lo) * ((double)(z >> 11) * (1.0 / 9007199254740992.0));
}

void th_fill_uniform(float *x, size_t n, float lo, float hi, uint64_t *state)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)th_uniform(state, lo, hi);
}

tt_buffer *th_upload(const float *host, size_t n, const char *name)
{
    tt_buffer *buf = NULL;
    tt_backend *be = th_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    TH_OK(tt_buffer_alloc(be, n * sizeof(float), TT_MEM_OTHER, name, &buf));
    TH_OK(tt_write(be, tt_mem_of(buf), host, n * sizeof(float)));
    return buf;
}

tt_buffer *th_zeros(size_t n, const char *name)
{
    float *zeros = calloc(n, sizeof *zeros);
    CU_ASSERT_PTR_NOT_NULL_FATAL(zeros);
    tt_buffer *buf = th_upload(zeros, n, name);
    free(zeros);
    return buf;
}

void th_download(float *host, tt_buffer *buffer, size_t n)
{
    TH_OK(tt_read(buffer->backend, host, tt_mem_of(buffer), n * sizeof(float)));
}

double th_max_rel_error(const float *got, const double *want, size_t n, double floor)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]) / (fabs(want[i]) + floor);
        if (isnan(e) || isnan((double)got[i])) return INFINITY;
        if (e > worst) worst = e;
    }
    return worst;
}

double th_max_rel_error_f(const float *got, const float *want, size_t n, double floor)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - (double)want[i]) / (fabs((double)want[i]) + floor);
        if (isnan(e)) return INFINITY;
        if (e > worst) worst = e;
    }
    return worst;
}

void th_numeric_grad(th_scalar_fn f, void *ctx, double *x, size_t n, double h, double *grad)
{
    for (size_t i = 0; i < n; i++) {
        double keep = x[i];
        x[i] = keep + h;
        double up = f(x, ctx);
        x[i] = keep - h;
        double down = f(x, ctx);
        x[i] = keep;
        grad[i] = (up - down) / (2 * h);
    }
}

double *th_to_double(const float *x, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

/* Before and after every test: its seconds on the test's line (where a
 * suite's time goes, in every CI log), and the shared backend's validation
 * messages. */
static double test_started;

static void before_test(void) { test_started = tt_seconds(); }

static void after_test(void)
{
    th_check_validation(backend);
    printf(" (%.1f s) ", tt_seconds() - test_started);
}

/* $TH_ONLY=TEXT (a test-only variable, for running one test by hand): the
 * suite keeps only the tests whose names contain TEXT, moved to its front. */
static void keep_only(CU_TestInfo *tests)
{
    const char *only = getenv("TH_ONLY");
    if (!only || !*only) return;
    size_t kept = 0;
    for (size_t i = 0; tests[i].pName; i++)
        if (strstr(tests[i].pName, only)) tests[kept++] = tests[i];
    tests[kept] = (CU_TestInfo)CU_TEST_INFO_NULL;
}

int th_run_suite(const char *suite_name, CU_TestInfo *tests, th_runs_on on)
{
    int kind = requested_kind();
    if (kind < 0) return 1;
    runs_on = on;
    if (kind != TT_BACKEND_OPENCL && on != TH_EVERY) {
        fprintf(stderr, "suite %s runs on one backend (its th_run_suite call); TH_BACKEND=%s is "
                        "for TH_EVERY suites\n", suite_name, getenv("TH_BACKEND"));
        return 1;
    }
    keep_only(tests);
    /* before any backend is made: a trainer's Vulkan backend validates too */
    if (kind == TT_BACKEND_VULKAN) th_setenv("TT_VULKAN_VALIDATION", "1");
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    char name[128];
    snprintf(name, sizeof name, "%s (%s)", suite_name, th_backend_name());
    CU_SuiteInfo suites[] = {{name, NULL, NULL, before_test, after_test, tests}, CU_SUITE_INFO_NULL};
    if (CU_register_suites(suites) != CUE_SUCCESS) {
        fprintf(stderr, "cannot register suite %s: %s\n", suite_name, CU_get_error_msg());
        CU_cleanup_registry();
        return 1;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_tests_failed() + CU_get_number_of_failures();
    unsigned ran = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    th_backend_release();
    return (failed || ran == 0) ? 1 : 0;
}

void th_setenv(const char *name, const char *value)
{
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    tt_knobs_reload();
}

tt_mem th_pool_put(th_pool *pool, const float *host, size_t n, const char *name)
{
    CU_ASSERT_FATAL(pool->count < TH_POOL_MAX);
    size_t pad = (size_t)pool->pad;
    float *padded = calloc(n + pad + 1, sizeof *padded);
    CU_ASSERT_PTR_NOT_NULL_FATAL(padded);
    for (size_t i = 0; i < pad; i++) padded[i] = 1e30f; /* poison: must never be read */
    if (host) memcpy(padded + pad, host, n * sizeof *host);
    tt_buffer *b = th_upload(padded, n + pad, name);
    free(padded);
    pool->buffers[pool->count++] = b;
    return tt_mem_f32(tt_mem_of(b), pad);
}

tt_mem th_pool_put_16(th_pool *pool, float *x, size_t n, tt_precision precision, int odd,
                      const char *name)
{
    size_t words = (n + (size_t)odd + 1) / 2;
    uint32_t *packed = calloc(words, sizeof *packed);
    CU_ASSERT_PTR_NOT_NULL_FATAL(packed);
    for (size_t i = 0; i < n; i++) {
        int fp16 = precision == TT_PRECISION_FP16;
        uint16_t bits = fp16 ? tt_f32_to_f16(x[i]) : tt_f32_to_bf16(x[i]);
        x[i] = fp16 ? tt_f16_to_f32(bits) : tt_bf16_to_f32(bits);
        size_t h = i + (size_t)odd;
        packed[h / 2] |= (uint32_t)bits << (16 * (h % 2));
    }
    if (odd) packed[0] |= TH_POISON_16;
    if ((n + (size_t)odd) % 2) packed[words - 1] |= TH_POISON_16 << 16;
    float *words_as_floats = malloc(words * sizeof *words_as_floats);
    CU_ASSERT_PTR_NOT_NULL_FATAL(words_as_floats);
    memcpy(words_as_floats, packed, words * sizeof *packed);
    tt_mem m = th_pool_put(pool, words_as_floats, words, name);
    free(packed), free(words_as_floats);
    return tt_mem_at(m, 2 * (size_t)odd);
}

void th_pool_free(th_pool *pool)
{
    for (int i = 0; i < pool->count; i++) tt_buffer_free(pool->buffers[i]);
    pool->count = 0;
}

void th_get(float *host, tt_mem m, size_t n)
{
    TH_OK(tt_read(th_backend(), host, m, n * sizeof *host));
}

int th_same_bits(tt_mem a, tt_mem b, size_t n)
{
    float *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
    CU_ASSERT_FATAL(x && y);
    th_get(x, a, n), th_get(y, b, n);
    int same = memcmp(x, y, n * sizeof *x) == 0;
    free(x), free(y);
    return same;
}

/* The 16-bit halves of the words holding the n values at m16 (the first
 * at *start), malloc'd. */
static uint16_t *get_halves_16(tt_mem m16, size_t n, size_t *start, size_t *count)
{
    *start = m16.offset % 4 / 2;
    size_t words = (*start + n + 1) / 2;
    uint16_t *halves = malloc(words * sizeof(float));
    CU_ASSERT_PTR_NOT_NULL_FATAL(halves);
    tt_mem first_word = {m16.buffer, m16.offset - 2 * *start};
    TH_OK(tt_read(th_backend(), halves, first_word, words * sizeof(float)));
    *count = 2 * words;
    return halves;
}

int th_differ_from_16(tt_mem m16, tt_mem m32, size_t n, tt_precision precision)
{
    size_t start, count;
    uint16_t *halves = get_halves_16(m16, n, &start, &count);
    float *wide = malloc((n + 1) * sizeof *wide);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wide);
    th_get(wide, m32, n);
    int differ = 0, fp16 = precision == TT_PRECISION_FP16;
    for (size_t i = 0; i < n; i++)
        differ += halves[start + i] != (fp16 ? tt_f32_to_f16(wide[i]) : tt_f32_to_bf16(wide[i]));
    free(wide), free(halves);
    return differ;
}

int th_outside_16(tt_mem m16, size_t n)
{
    size_t start, count;
    uint16_t *halves = get_halves_16(m16, n, &start, &count);
    int changed = 0;
    for (size_t h = 0; h < count; h++)
        if (h < start || h >= start + n) changed += halves[h] != TH_POISON_16;
    free(halves);
    return changed;
}

float *th_random_floats(size_t n, float lo, float hi, uint64_t *seed)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    th_fill_uniform(x, n, lo, hi, seed);
    return x;
}

/* Shared test helpers; see harness.h. */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "core/knobs.h"

static tt_backend *backend;
static int backend_failed;

void th_report_status(const char *what, tt_status status, const char *file, int line)
{
    fprintf(stderr, "\n%s:%d: %s\n  -> %s [%s]\n", file, line, what, tt_status_message(status),
            tt_code_name(tt_status_code(status)));
    if (*tt_status_detail(status)) fprintf(stderr, "%s\n", tt_status_detail(status));
    tt_status_free(status);
}

tt_backend *th_backend(void)
{
    if (backend || backend_failed) return backend;
    tt_status s = tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_OPENCL}, &backend);
    if (s) {
        th_report_status("creating the test backend", s, __FILE__, __LINE__);
        backend_failed = 1;
        return NULL;
    }
    return backend;
}

void th_backend_release(void)
{
    tt_backend_destroy(backend);
    backend = NULL;
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

int th_run_suite(const char *suite_name, CU_TestInfo *tests)
{
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    CU_SuiteInfo suites[] = {{suite_name, NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
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

void th_pool_free(th_pool *pool)
{
    for (int i = 0; i < pool->count; i++) tt_buffer_free(pool->buffers[i]);
    pool->count = 0;
}

void th_get(float *host, tt_mem m, size_t n)
{
    TH_OK(tt_read(th_backend(), host, m, n * sizeof *host));
}

float *th_random_floats(size_t n, float lo, float hi, uint64_t *seed)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    th_fill_uniform(x, n, lo, hi, seed);
    return x;
}

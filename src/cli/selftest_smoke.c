/* The smoke kernels; see selftest_smoke.h. */
#include "cli/selftest_smoke.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/status.h"
#include "ops/util.h"

/* got against want (relative to 1 + |want|) as a check named `what`. */
static void report(tt_checks *checks, const char *what, const float *got, const float *want,
                   size_t n, double tol, double secs)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - (double)want[i]) / (1.0 + fabs((double)want[i]));
        if (!(err <= worst)) worst = err; /* NaN counts as worst */
    }
    tt_check c = {.error = worst, .bound = tol, .seconds = secs, .failed = !(worst <= tol)};
    snprintf(c.what, sizeof c.what, "%s", what);
    tt_checks_add(checks, &c);
}

static tt_status run(tt_backend *be, tt_checks *checks)
{
    enum { N = 1000, M = 37, K = 29, P = 41 };
    tt_status status = NULL;
    tt_buffer *x = NULL, *y = NULL, *a = NULL, *b = NULL, *c = NULL;
    float *hx = tt_malloc(N * sizeof *hx), *hy = tt_malloc(N * sizeof *hy), *want = tt_malloc(N * sizeof *want);
    float *ha = tt_malloc(M * K * sizeof *ha), *hb = tt_malloc(K * P * sizeof *hb);
    float *hc = tt_malloc(M * P * sizeof *hc), *wc = tt_malloc(M * P * sizeof *wc);
    if (!hx || !hy || !want || !ha || !hb || !hc || !wc) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "selftest: out of host memory");
        goto cleanup;
    }
    TT_CHECK(tt_buffer_alloc(be, N * sizeof(float), TT_MEM_WORKSPACE, "selftest.x", &x));
    TT_CHECK(tt_buffer_alloc(be, N * sizeof(float), TT_MEM_WORKSPACE, "selftest.y", &y));
    TT_CHECK(tt_buffer_alloc(be, M * K * sizeof(float), TT_MEM_PARAMETERS, "selftest.a", &a));
    TT_CHECK(tt_buffer_alloc(be, K * P * sizeof(float), TT_MEM_ACTIVATIONS, "selftest.b", &b));
    TT_CHECK(tt_buffer_alloc(be, M * P * sizeof(float), TT_MEM_ACTIVATIONS, "selftest.c", &c));

    double t0 = tt_seconds();
    for (int i = 0; i < N; i++) hx[i] = (float)i * 0.5f;
    TT_CHECK(tt_write(be, tt_mem_of(x), hx, N * sizeof(float)));
    TT_CHECK(tt_fill(be, tt_mem_of(y), 2.0f, N));
    TT_CHECK(tt_axpy(be, tt_mem_of(y), tt_mem_of(x), 3.0f, N));
    TT_CHECK(tt_read(be, hy, tt_mem_of(y), N * sizeof(float)));
    for (int i = 0; i < N; i++) want[i] = 2.0f + 3.0f * hx[i];
    report(checks, "fill + axpy (util)", hy, want, N, 1e-6, tt_seconds() - t0);

    t0 = tt_seconds();
    for (int i = 0; i < M * K; i++) ha[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (int i = 0; i < K * P; i++) hb[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    for (int i = 0; i < M * P; i++) hc[i] = 1.0f;
    TT_CHECK(tt_write(be, tt_mem_of(a), ha, M * K * sizeof(float)));
    TT_CHECK(tt_write(be, tt_mem_of(b), hb, K * P * sizeof(float)));
    TT_CHECK(tt_write(be, tt_mem_of(c), hc, M * P * sizeof(float)));
    tt_gemm g = {.m = M, .n = P, .k = K, .alpha = 1.0f, .beta = 1.0f, .a = tt_mem_of(a),
                 .lda = K, .b = tt_mem_of(b), .ldb = P, .c = tt_mem_of(c), .ldc = P};
    TT_CHECK(tt_gemm_run(be, &g));
    TT_CHECK(tt_read(be, hc, tt_mem_of(c), M * P * sizeof(float)));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < P; j++) {
            double s = 1.0;
            for (int k = 0; k < K; k++) s += (double)ha[i * K + k] * hb[k * P + j];
            wc[i * P + j] = (float)s;
        }
    report(checks, be->kernels_of == TT_BACKEND_OPENCL ? "GEMM 37x41x29 (CLBlast)"
                                                       : "GEMM 37x41x29 (blas/gemm)",
           hc, wc, M * P, 1e-5, tt_seconds() - t0);
cleanup:
    tt_buffer_free(x);
    tt_buffer_free(y);
    tt_buffer_free(a);
    tt_buffer_free(b);
    tt_buffer_free(c);
    free(hx), free(hy), free(want), free(ha), free(hb), free(hc), free(wc);
    return status;
}

/* The device's timers (what bench and profiling read): every launch of the
 * checks above was timed, each time finite and not negative, and not all
 * of them zero. */
static void check_timers(const tt_backend *be, tt_checks *checks)
{
    const tt_profile *p = be->profile;
    uint64_t launches = 0;
    double total = 0;
    int finite = 1;
    for (int k = 0; k < p->count; k++) {
        launches += p->launches[k];
        total += p->seconds[k];
        if (!isfinite(p->seconds[k]) || p->seconds[k] < 0) finite = 0;
    }
    tt_check c = {.failed = !(launches >= 3 && finite && total > 0)};
    snprintf(c.what, sizeof c.what, "device timers (profiling)");
    snprintf(c.note, sizeof c.note, "%llu launches in %d kinds, %.3f ms",
             (unsigned long long)launches, p->count, 1e3 * total);
    tt_checks_add(checks, &c);
}

tt_status tt_selftest_open(tt_backend_request request, tt_backend **be, tt_status *no_timers)
{
    request.profiling = 1;
    *no_timers = tt_backend_create(&request, be);
    if (!*no_timers) return NULL;
    if (tt_status_code(*no_timers) != TT_ERR_UNSUPPORTED) {
        tt_status failed = *no_timers;
        *no_timers = NULL;
        return failed;
    }
    request.profiling = 0;
    tt_status failed = tt_backend_create(&request, be);
    if (failed) { /* not a matter of timers */
        tt_status_free(*no_timers);
        *no_timers = NULL;
    }
    return failed;
}

tt_status tt_selftest_smoke(tt_backend *be, tt_status no_timers, tt_checks *checks)
{
    TT_TRY(run(be, checks));
    TT_TRY(tt_finish(be)); /* collects the profile */
    if (be->profile) {
        check_timers(be, checks);
    } else if (checks->out) {
        fprintf(checks->out, "  %-44s none: %s\n", "device timers (profiling)",
                no_timers ? tt_status_message(no_timers) : "not asked for");
    }
    return NULL;
}

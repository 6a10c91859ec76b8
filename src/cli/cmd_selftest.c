/*
 * tiletrain selftest: smoke kernels on one device, each checked on the host:
 * fill and axpy from opencl/util.cl, and a GEMM through CLBlast.  Ends with
 * the memory report, so a user sees the accounting at work.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "core/status.h"
#include "ops/util.h"

typedef struct selftest_options {
    char device[TT_OPT_STRING_MAX];
    int json;
} selftest_options;

static const tt_opt option_table[] = {
    {"device", TT_OPT_STRING, offsetof(selftest_options, device), "SPEC",
     "index or part of a device name (see `tiletrain devices`)", 1, 0, NULL},
    {"json", TT_OPT_FLAG, offsetof(selftest_options, json), NULL, "print the memory report as JSON", 1, 0, NULL},
};
#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

static void help(void)
{
    printf("usage: tiletrain selftest [--device SPEC] [--json]\n"
           "\n"
           "Runs smoke kernels (fill, axpy, a CLBlast GEMM) on the device, checks\n"
           "them against the host, and prints the device memory report.\n"
           "\n"
           "example:\n"
           "  tiletrain selftest --device 0\n"
           "\n"
           "options:\n");
    tt_opt_print_help(option_table, OPTION_COUNT, stdout);
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Checks got against want; prints one line; returns 1 on a mismatch. */
static int report(const char *what, const float *got, const float *want, size_t n, double tol,
                  double secs)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - (double)want[i]) / (1.0 + fabs((double)want[i]));
        if (!(err <= worst)) worst = err; /* NaN counts as worst */
    }
    int bad = !(worst <= tol);
    printf("  %-28s max rel error %.2e  %s  (%.2f s)\n", what, worst, bad ? "FAILED" : "ok", secs);
    return bad;
}

static tt_status run(tt_backend *be, int *failures)
{
    enum { N = 1000, M = 37, K = 29, P = 41 };
    tt_status status = NULL;
    tt_buffer *x = NULL, *y = NULL, *a = NULL, *b = NULL, *c = NULL;
    float *hx = malloc(N * sizeof *hx), *hy = malloc(N * sizeof *hy), *want = malloc(N * sizeof *want);
    float *ha = malloc(M * K * sizeof *ha), *hb = malloc(K * P * sizeof *hb);
    float *hc = malloc(M * P * sizeof *hc), *wc = malloc(M * P * sizeof *wc);
    if (!hx || !hy || !want || !ha || !hb || !hc || !wc) {
        status = tt_error_new(TT_ERR_OUT_OF_MEMORY, "selftest: out of host memory");
        goto cleanup;
    }
    TT_CHECK(tt_buffer_alloc(be, N * sizeof(float), TT_MEM_WORKSPACE, "selftest.x", &x));
    TT_CHECK(tt_buffer_alloc(be, N * sizeof(float), TT_MEM_WORKSPACE, "selftest.y", &y));
    TT_CHECK(tt_buffer_alloc(be, M * K * sizeof(float), TT_MEM_PARAMETERS, "selftest.a", &a));
    TT_CHECK(tt_buffer_alloc(be, K * P * sizeof(float), TT_MEM_ACTIVATIONS, "selftest.b", &b));
    TT_CHECK(tt_buffer_alloc(be, M * P * sizeof(float), TT_MEM_ACTIVATIONS, "selftest.c", &c));

    double t0 = seconds();
    for (int i = 0; i < N; i++) hx[i] = (float)i * 0.5f;
    TT_CHECK(tt_write(be, tt_mem_of(x), hx, N * sizeof(float)));
    TT_CHECK(tt_fill(be, tt_mem_of(y), 2.0f, N));
    TT_CHECK(tt_axpy(be, tt_mem_of(y), tt_mem_of(x), 3.0f, N));
    TT_CHECK(tt_read(be, hy, tt_mem_of(y), N * sizeof(float)));
    for (int i = 0; i < N; i++) want[i] = 2.0f + 3.0f * hx[i];
    *failures += report("fill + axpy (util.cl)", hy, want, N, 1e-6, seconds() - t0);

    t0 = seconds();
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
    *failures += report("GEMM 37x41x29 (CLBlast)", hc, wc, M * P, 1e-5, seconds() - t0);
cleanup:
    tt_buffer_free(x);
    tt_buffer_free(y);
    tt_buffer_free(a);
    tt_buffer_free(b);
    tt_buffer_free(c);
    free(hx), free(hy), free(want), free(ha), free(hb), free(hc), free(wc);
    return status;
}

int tt_cmd_selftest(int argc, char **argv)
{
    selftest_options o = {0};
    int rc = tt_cli_parse("selftest", option_table, OPTION_COUNT, &o, argc, argv, help);
    if (rc >= 0) return rc;
    const char *selector = o.device[0] ? o.device : NULL;
    int json = o.json;

    tt_backend *be = NULL;
    tt_status status = tt_backend_create(
        &(tt_backend_request){.kind = TT_BACKEND_OPENCL, .device = selector}, &be);
    if (status) return tt_cli_fail(status);
    printf("selftest on [%d] %s (%s)\n", be->device.index, be->device.name, be->device.platform);
    int failures = 0;
    status = run(be, &failures);
    if (!status) {
        printf("  programs: %llu built from source, %llu loaded from the disk cache\n",
               (unsigned long long)be->programs.built_from_source,
               (unsigned long long)be->programs.loaded_from_disk);
        printf("memory (peak over the selftest):\n");
        if (json) {
            char *text = tt_memory_report_json(be, 8);
            printf("%s\n", text);
            free(text);
        } else {
            tt_memory_report_text(be, stdout, 8);
        }
    }
    tt_backend_destroy(be);
    if (status) return tt_cli_fail(status);
    if (failures) {
        fprintf(stderr, "tiletrain: selftest: %d check(s) failed on this device\n", failures);
        return 1;
    }
    printf("selftest passed\n");
    return 0;
}

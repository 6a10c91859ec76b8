/*
 * tiletrain selftest: smoke kernels on one device of either API, each
 * checked on the host: fill and axpy (opencl/util.cl, shaders/util/), a
 * GEMM (CLBlast on OpenCL, shaders/blas/gemm on Vulkan), and the device's
 * timers that bench and profiling read (OpenCL profiling events, Vulkan
 * timestamp queries); with --algos every convolution algorithm on the
 * layers of a recipe (selftest_algos.c).  Ends with the memory report, so
 * a user sees the accounting at work.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "cli/selftest_algos.h"
#include "core/clock.h"
#include "train/train_options.h"
#include "core/status.h"
#include "ops/util.h"

typedef struct selftest_options {
    tt_train_options train; /* --backend, --device; with --algos the recipe */
    int json;
    int algos;
} selftest_options;

static const tt_opt own_options[] = {
    {"json", TT_OPT_FLAG, offsetof(selftest_options, json), NULL, "print the memory report as JSON", 1, 0, NULL},
    {"algos", TT_OPT_FLAG, offsetof(selftest_options, algos), NULL,
     "also check every convolution algorithm on every layer shape of the model that train's "
     "options describe (--model, --tile, --micro-batch, ...), as the autotuner checks one "
     "before it trusts it",
     1, 0, NULL},
};
static tt_opt *table; /* train's options, then own_options */
static size_t table_count;

static void help(void)
{
    printf("usage: tiletrain selftest [--backend NAME] [--device SPEC] [--json]\n"
           "                          [--algos [--model NAME --tile HxW --micro-batch N ...]]\n"
           "\n"
           "Runs smoke kernels (fill, axpy, a GEMM: CLBlast on OpenCL, our shader on\n"
           "Vulkan) on the device, checks them against the host, checks that the\n"
           "device's timers (what bench reads) time them, and prints the device memory\n"
           "report.  With --algos it also runs every convolution algorithm on every\n"
           "layer shape of the model train's options describe, in each direction, on\n"
           "random inputs, and checks each against the reference algorithm everywhere\n"
           "and against double precision on the host at sampled elements: does every\n"
           "kernel on this device compute the right thing.  Exits 1 when one does not.\n"
           "\n"
           "example:\n"
           "  tiletrain selftest --device 0\n"
           "  tiletrain selftest --backend vulkan\n"
           "  tiletrain selftest --algos --model unet-resnet34 --tile 256x256 --micro-batch 4\n"
           "\n"
           "options (with --algos any of train's; these are the selftest's own):\n");
    tt_opt_print_help(own_options, sizeof own_options / sizeof own_options[0], stdout);
    printf("  --backend, --device        as train's (see `tiletrain train --help`)\n");
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

    double t0 = tt_seconds();
    for (int i = 0; i < N; i++) hx[i] = (float)i * 0.5f;
    TT_CHECK(tt_write(be, tt_mem_of(x), hx, N * sizeof(float)));
    TT_CHECK(tt_fill(be, tt_mem_of(y), 2.0f, N));
    TT_CHECK(tt_axpy(be, tt_mem_of(y), tt_mem_of(x), 3.0f, N));
    TT_CHECK(tt_read(be, hy, tt_mem_of(y), N * sizeof(float)));
    for (int i = 0; i < N; i++) want[i] = 2.0f + 3.0f * hx[i];
    *failures += report("fill + axpy (util)", hy, want, N, 1e-6, tt_seconds() - t0);

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
    *failures += report(be->kernels_of == TT_BACKEND_OPENCL ? "GEMM 37x41x29 (CLBlast)"
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
 * of them zero.  Returns 1 on a failure. */
static int check_timers(const tt_backend *be)
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
    int bad = !(launches >= 3 && finite && total > 0);
    printf("  %-28s %llu launches in %d kinds, %.3f ms  %s\n", "device timers (profiling)",
           (unsigned long long)launches, p->count, 1e3 * total, bad ? "FAILED" : "ok");
    return bad;
}

/* The backend `o` asks for, with profiling when the device can time; a
 * device without timers is tested without them (*no_timers says why). */
static tt_status open_backend(const selftest_options *o, tt_backend **be, tt_status *no_timers)
{
    tt_backend_request request = {0};
    TT_TRY(tt_error_prefix(tt_backend_choose(tt_backend_choice_name(o->train.backend), o->train.device, &request),
                           "--backend"));
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

int tt_cmd_selftest(int argc, char **argv)
{
    if (!table)
        table = tt_opt_table_concat(tt_train_option_table, tt_train_option_count,
                                    offsetof(selftest_options, train), own_options,
                                    sizeof own_options / sizeof own_options[0], &table_count);
    if (!table) return tt_cli_fail(tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"));
    selftest_options o = {0};
    tt_train_options_default(&o.train);
    int rc = tt_cli_parse("selftest", table, table_count, &o, argc, argv, help);
    if (rc >= 0) return rc;
    tt_train_options plain;
    memset(&plain, 0, sizeof plain);
    tt_train_options_default(&plain);
    plain.backend = o.train.backend;
    memcpy(plain.device, o.train.device, sizeof plain.device);
    if (!o.algos && memcmp(&plain, &o.train, sizeof plain) != 0)
        return tt_cli_usage_error("selftest", "train's options (--model, --tile, --micro-batch, "
                                              "...) describe the layers --algos checks: add "
                                              "--algos, or leave them out");
    int json = o.json;

    tt_backend *be = NULL;
    tt_status no_timers = NULL;
    tt_status status = open_backend(&o, &be, &no_timers);
    if (status) return tt_cli_fail(status);
    printf("selftest on %s device [%d] %s (%s)\n", be->ops->name, be->device.index,
           be->device.name, be->device.platform);
    tt_backend_phase(be, "selftest");
    int failures = 0;
    status = run(be, &failures);
    if (!status) status = tt_finish(be); /* collects the profile */
    if (!status && be->profile) failures += check_timers(be);
    else if (!status)
        printf("  %-28s none: %s\n", "device timers (profiling)", tt_status_message(no_timers));
    tt_status_free(no_timers);
    if (!status && o.algos) status = tt_selftest_algos(be, &o.train, &failures);
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

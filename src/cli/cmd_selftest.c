/*
 * tiletrain selftest: smoke kernels on one device of either API, each
 * checked on the host: fill and axpy (opencl/util.cl, shaders/util/), a
 * GEMM (CLBlast on OpenCL, shaders/blas/gemm on Vulkan), and the device's
 * timers that bench and profiling read (OpenCL profiling events, Vulkan
 * timestamp queries); with --algos every convolution algorithm on the
 * layers of a recipe (selftest_algos.c).  Ends with the memory report, so
 * a user sees the accounting at work.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "cli/selftest_algos.h"
#include "cli/selftest_smoke.h"
#include "train/train_options.h"
#include "core/status.h"

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

/* The backend `o` asks for, with profiling when the device can time. */
static tt_status open_backend(const selftest_options *o, tt_backend **be, tt_status *no_timers)
{
    tt_backend_request request = {0};
    *no_timers = NULL;
    TT_TRY(tt_error_prefix(tt_backend_choose(tt_backend_choice_name(o->train.backend), o->train.device, &request),
                           "--backend"));
    return tt_selftest_open(request, be, no_timers);
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
    tt_checks checks = {.out = stdout};
    status = tt_selftest_smoke(be, no_timers, &checks);
    tt_status_free(no_timers);
    if (!status && o.algos) status = tt_selftest_algos(be, &o.train, &checks);
    int failures = checks.failures;
    tt_checks_free(&checks);
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

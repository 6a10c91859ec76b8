/*
 * tiletrain tune: finds CLBlast GEMM parameters for this device on the GEMM
 * shapes the model runs, within a time budget, prints GFLOP/s per shape
 * before and after (and OpenBLAS on the host for comparison), and stores
 * the winner in the cache folder, where every later run picks it up.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/commands.h"
#include "core/alloc.h"
#include "core/options.h"
#include "core/knobs.h"
#include "core/status.h"
#include "tune/host_blas.h"
#include "tune/report.h"
#include "tune/rounds.h"
#include "tune/tune.h"

typedef struct tune_options {
    char device[TT_OPT_STRING_MAX];
    double budget;
    char shapes[TT_OPT_STRING_MAX];
    int base_channels, depth, tile[2], in_channels, classes;
    int json, compare_openblas, no_save, max_xgemm, max_direct, one_round;
    char output[TT_OPT_STRING_MAX];
    uint64_t seed;
} tune_options;

#define OPT(name, kind, field, meta, help, lo, hi) \
    {name, kind, offsetof(tune_options, field), meta, help, lo, hi, NULL}
static const tt_opt option_table[] = {
    OPT("device", TT_OPT_STRING, device, "SPEC", "device index or part of its name", 1, 0),
    OPT("budget", TT_OPT_DOUBLE, budget, "SECONDS", "wall-clock time for the search (default 120)",
        1, 1e6),
    OPT("shapes", TT_OPT_STRING, shapes, "unet|FILE",
        "the UNet's GEMMs (default), or a file of \"TA TB M N K [COUNT]\" lines", 1, 0),
    OPT("base-channels", TT_OPT_INT, base_channels, "C", "UNet: channels of the top level (16)",
        1, 1024),
    OPT("depth", TT_OPT_INT, depth, "D", "UNet: levels below the top (3)", 0, 8),
    OPT("tile", TT_OPT_SIZE2, tile, "HxW", "UNet: crop size trained on (256x256)", 1, 0),
    OPT("in-channels", TT_OPT_INT, in_channels, "C", "UNet: image channels (3)", 1, 64),
    OPT("classes", TT_OPT_INT, classes, "C", "UNet: classes (4)", 1, 1024),
    OPT("compare-openblas", TT_OPT_FLAG, compare_openblas, NULL,
        "also time OpenBLAS SGEMM on the host (libopenblas.so.0, if installed)", 1, 0),
    OPT("json", TT_OPT_FLAG, json, NULL, "print the results as JSON (progress goes to stderr)", 1, 0),
    OPT("output", TT_OPT_STRING, output, "FILE", "write the parameters here instead of the cache",
        1, 0),
    OPT("no-save", TT_OPT_FLAG, no_save, NULL, "measure only; write no file", 1, 0),
    OPT("seed", TT_OPT_U64, seed, "K", "seed of the random search (default: the clock)", 1, 0),
    OPT("max-xgemm", TT_OPT_INT, max_xgemm, "N",
        "try at most N Xgemm configurations (the stored one first), then XgemmDirect", 1, 1e6),
    OPT("max-direct", TT_OPT_INT, max_direct, "N",
        "try at most N XgemmDirect configurations (0: none)", 0, 1e6),
    OPT("one-round", TT_OPT_FLAG, one_round, NULL,
        "search in this process only (at most 10 configurations): what tune runs its rounds as",
        1, 0),
};
#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

static void help(void)
{
    printf("usage: tiletrain tune [options]\n"
           "\n"
           "Tunes CLBlast's GEMM kernels (Xgemm, XgemmDirect and the size at which\n"
           "CLBlast switches between them) for this device on the GEMMs the model\n"
           "runs, and stores them in the cache folder ($TT_CACHE_DIR, else\n"
           "$XDG_CACHE_HOME/tiletrain), where the OpenCL backend applies them from\n"
           "then on (TT_NO_TUNING=1 turns that off).  On PoCL each configuration\n"
           "costs a rebuild of CLBlast's GEMM program (10 s or more); a larger budget\n"
           "tries more, and a rerun starts from the stored winner.  The search runs in\n"
           "rounds of at most 10 configurations, each in a new process (CLBlast on PoCL\n"
           "crashed after a dozen rebuilds in one); a crashed round loses only its\n"
           "unsaved rest.\n"
           "\n"
           "example:\n"
           "  tiletrain tune --budget 600\n"
           "\n");
    tt_opt_print_help(option_table, OPTION_COUNT, stdout);
}

/* ---- reporting ----------------------------------------------------------- */

static void print_table(const tt_gemm_shape *shapes, int count, const tt_cl_tune_result *r,
                        const double *blas)
{
    printf("\n%-26s %2s %2s %6s %6s %6s %5s %8s %8s %8s  %s\n", "GEMM (per image and step)",
           "TA", "TB", "M", "N", "K", "count", "before", "after", blas ? "OpenBLAS" : "", "kernel");
    for (int s = 0; s < count; s++) {
        const tt_gemm_shape *g = &shapes[s];
        printf("%-26.26s %2c %2c %6zu %6zu %6zu %5d %8.1f %8.1f", g->label, g->trans_a ? 'T' : 'N',
               g->trans_b ? 'T' : 'N', g->m, g->n, g->k, g->count,
               tt_tune_gflops(g, r->before_s[s]), tt_tune_gflops(g, r->after_s[s]));
        if (blas) printf(" %8.1f", tt_tune_gflops(g, blas[s]));
        else printf(" %8s", "");
        printf("  %s\n", r->direct[s] ? "direct" : "indirect");
    }
    printf("%-26s %33s %8.1f %8.1f", "one training step", "",
           tt_tune_step_gflops(shapes, count, r->before_s),
           tt_tune_step_gflops(shapes, count, r->after_s));
    if (blas) printf(" %8.1f", tt_tune_step_gflops(shapes, count, blas));
    printf("   GFLOP/s\n");
}

/* The table (or with json the JSON report, with "rounds" when rounds >= 0). */
static void print_result(int json, const tt_backend *be, const tt_gemm_shape *shapes, int count,
                         const tt_cl_tune_result *r, const double *blas, const char *saved,
                         int rounds)
{
    if (json) {
        cJSON *j = tt_tune_report_json(&be->device, shapes, count, r, blas, saved);
        if (rounds >= 0) cJSON_AddNumberToObject(j, "rounds", rounds);
        char *text = cJSON_Print(j);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(j);
    } else {
        print_table(shapes, count, r, blas);
        if (saved) printf("saved to %s (applied by every later run on this device)\n", saved);
    }
}

/* ---- the search in rounds (tune/rounds.h) --------------------------------- */

/* The search as rounds in new processes; prints the last round's figures
 * (before: CLBlast's defaults, after: the best of all rounds).  Returns the
 * exit status. */
static int run_rounds(const tune_options *o, const tt_backend *be, const tt_gemm_shape *shapes,
                      int count, const char *path, const double *blas, FILE *log)
{
    /* the rounds keep their best in the cache file, or with --no-save (or
     * no cache folder) in a temporary copy of it */
    char temp[1200] = "";
    const char *output = path;
    if (o->no_save || !path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(temp, sizeof temp, "%s/tiletrain-tune-XXXXXX", dir && *dir ? dir : "/tmp");
        int fd = mkstemp(temp);
        if (fd < 0)
            return tt_cli_fail(tt_error_new(TT_ERR_IO, "tune: cannot make a temporary file %s: %s",
                                            temp, strerror(errno)));
        FILE *src = path[0] ? fopen(path, "rb") : NULL; /* round 1 starts from the stored one */
        char buf[4096];
        for (size_t got; src && (got = fread(buf, 1, sizeof buf, src)) > 0;)
            if (write(fd, buf, got) != (ssize_t)got) break;
        if (src) fclose(src);
        close(fd);
        if (!src) unlink(temp); /* no stored one: no file rather than an empty one */
        output = temp;
    }
    char tile[32], base[16], depth[16], in[16], classes[16];
    snprintf(tile, sizeof tile, "%dx%d", o->tile[0], o->tile[1]);
    snprintf(base, sizeof base, "%d", o->base_channels);
    snprintf(depth, sizeof depth, "%d", o->depth);
    snprintf(in, sizeof in, "%d", o->in_channels);
    snprintf(classes, sizeof classes, "%d", o->classes);
    const char *args[16];
    int n = 0;
    if (o->device[0]) args[n++] = "--device", args[n++] = o->device;
    args[n++] = "--shapes", args[n++] = o->shapes;
    args[n++] = "--tile", args[n++] = tile;
    args[n++] = "--base-channels", args[n++] = base;
    args[n++] = "--depth", args[n++] = depth;
    args[n++] = "--in-channels", args[n++] = in;
    args[n++] = "--classes", args[n++] = classes;
    tt_tune_rounds rounds = {.args = args, .arg_count = n, .budget_s = o->budget, .seed = o->seed,
                             .max_xgemm = o->max_xgemm, .max_direct = o->max_direct,
                             .output = output, .log_to_stdout = !o->json, .log = log};
    cJSON *last = NULL;
    int done = 0, candidates = 0, rejected = 0, rc = 0;
    tt_status status = tt_tune_run_rounds(&rounds, &last, &done, &candidates, &rejected);
    tt_cl_tune_result result = {0};
    if (!status && !last)
        status = tt_error_new(TT_ERR_IO, "tune: no search round finished (%d crashed); see the "
                              "messages above and docs/tune.md", done);
    if (!status) status = tt_tune_report_read(last, shapes, count, &result);
    if (status) {
        rc = tt_cli_fail(status);
    } else {
        result.candidates = candidates;
        result.rejected = rejected;
        const cJSON *saved_item = cJSON_GetObjectItemCaseSensitive(last, "saved");
        const char *saved = output == path && cJSON_IsString(saved_item) ? path : NULL;
        fprintf(log, "%d round%s, %d configurations timed\n", done, done == 1 ? "" : "s", candidates);
        print_result(o->json, be, shapes, count, &result, blas, saved, done);
    }
    tt_cl_tune_result_free(&result);
    cJSON_Delete(last);
    if (temp[0]) unlink(temp);
    return rc;
}

/* ---- the command ----------------------------------------------------------- */

static tt_status create_untuned_backend(const char *selector, tt_backend **be)
{
    /* "before" means CLBlast's own parameters, not a previous run's */
    const char *old = tt_knob_str(TT_KNOB_NO_TUNING);
    char *saved = old ? tt_strdup(old) : NULL;
    if (old && !saved) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "tune: out of host memory");
    setenv("TT_NO_TUNING", "1", 1);
    tt_knobs_reload(); /* the knobs are read once: read them again, before and after */
    tt_status status = tt_backend_create(
        &(tt_backend_request){.kind = TT_BACKEND_OPENCL, .device = selector}, be);
    if (saved) setenv("TT_NO_TUNING", saved, 1);
    else unsetenv("TT_NO_TUNING");
    tt_knobs_reload();
    free(saved);
    return status;
}

int tt_cmd_tune(int argc, char **argv)
{
    tune_options o;
    memset(&o, 0, sizeof o);
    o.budget = 120;
    snprintf(o.shapes, sizeof o.shapes, "unet");
    o.base_channels = 16, o.depth = 3, o.tile[0] = o.tile[1] = 256, o.in_channels = 3, o.classes = 4;
    o.max_direct = -1; /* no limit */
    int want_help = 0;
    tt_status status = tt_opt_parse_args(option_table, OPTION_COUNT, &o, argc, argv, 1, &want_help);
    if (status) {
        int rc = tt_cli_usage_error("tune", "%s", tt_status_message(status));
        tt_status_free(status);
        return rc;
    }
    if (want_help) {
        help();
        return 0;
    }
    FILE *log = o.json ? stderr : stdout;
    tt_gemm_shape *shapes = NULL;
    int count = 0;
    if (strcmp(o.shapes, "unet") == 0)
        status = tt_gemm_shapes_unet(o.in_channels, o.classes, o.base_channels, o.depth, o.tile[0],
                                     o.tile[1], &shapes, &count);
    else
        status = tt_gemm_shapes_load(o.shapes, &shapes, &count);
    if (status) return tt_cli_fail(status);

    tt_backend *be = NULL;
    status = create_untuned_backend(o.device[0] ? o.device : NULL, &be);
    if (status) {
        free(shapes);
        return tt_cli_fail(status);
    }
    char path[1200] = "";
    if (o.output[0]) snprintf(path, sizeof path, "%s", o.output);
    else tt_cl_tuning_path(&be->device, path, sizeof path);

    tt_cl_tuning previous;
    int have_previous = 0;
    if (path[0] && access(path, F_OK) == 0) {
        tt_status s = tt_cl_tuning_load(path, &be->device, &previous);
        if (s) fprintf(stderr, "tiletrain tune: warning: not starting from %s\n", tt_status_message(s));
        have_previous = s == NULL;
        tt_status_free(s);
    }
    double gflop = 0;
    for (int s = 0; s < count; s++) gflop += shapes[s].count * tt_gemm_shape_gflop(&shapes[s]);
    fprintf(log, "tuning CLBlast GEMM on [%d] %s (%s), budget %.0f s: %d shapes, %.2f GFLOP per "
            "image and step%s\n", be->device.index, be->device.name, be->device.platform_version,
            o.budget, count, gflop, have_previous ? "; starting from the stored parameters" : "");
    fflush(log);

    double *blas = NULL;
    if (o.compare_openblas) {
        blas = tt_calloc((size_t)count, sizeof *blas);
        if (blas && !tt_host_sgemm_time("tune", shapes, count, blas, log)) {
            free(blas);
            blas = NULL;
        }
    }
    if (!o.seed) o.seed = (uint64_t)time(NULL); /* a rerun tries new candidates */
    if (!o.one_round) {
        int rc = run_rounds(&o, be, shapes, count, path, blas, log);
        free(blas);
        free(shapes);
        tt_backend_destroy(be);
        return rc;
    }
    tt_cl_tune_options topt = {.budget_s = o.budget, .measure_baseline = 1,
                               .previous = have_previous ? &previous : NULL, .seed = o.seed,
                               .log = log, .max_xgemm = o.max_xgemm,
                               .save_path = o.no_save || !path[0] ? NULL : path,
                               .max_direct = o.max_direct < 0    ? 0
                                             : o.max_direct == 0 ? -1
                                                                 : o.max_direct};
    tt_cl_tune_result result;
    status = tt_cl_tune(be, shapes, count, &topt, &result);
    int rc = 0;
    if (status) {
        rc = tt_cli_fail(status);
        goto cleanup;
    }
    const char *saved = NULL;
    double before = result.best.gflops_before, after = result.best.gflops_after;
    if (o.no_save || !path[0]) {
        if (!o.no_save)
            fprintf(stderr, "tiletrain tune: no cache folder (set TT_CACHE_DIR); nothing saved\n");
    } else if (before > 0 && after <= before) {
        fprintf(log, "CLBlast's own parameters are as fast on these shapes (%.1f vs %.1f GFLOP/s); "
                "nothing saved (try a larger --budget)\n", before, after);
    } else {
        status = tt_cl_tuning_save(path, &result.best);
        if (status) {
            rc = tt_cli_fail(status);
            status = NULL;
        } else {
            saved = path;
        }
    }
    print_result(o.json, be, shapes, count, &result, blas, saved, -1);
    tt_cl_tune_result_free(&result);
cleanup:
    free(blas);
    free(shapes);
    tt_backend_destroy(be);
    return rc;
}

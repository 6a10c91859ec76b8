/*
 * tiletrain doctor: does this device train this recipe?  On the device the
 * options choose, with the recipe the flags (or --plan FILE) give:
 *   1. the smoke kernels and the device's timers (selftest_smoke.h);
 *   2. every convolution algorithm on every layer shape of the recipe, in
 *      each direction, against the reference algorithm and the host's
 *      double (selftest_algos.h, the autotuner's own check);
 *   3. with 16-bit storage, the gradients of one micro-batch against
 *      fp32's (precision_auto.h's parity check);
 *   4. an overfit: the recipe's model trained on one fixed micro-batch for
 *      --overfit-steps steps must cut its loss by half (probe.h); the
 *      autotuner times the layers' algorithms there, and one more than
 *      SLOW_FACTOR times the best on its layer is reported slow;
 *   5. the memory estimate (the dry backend) against the measurement;
 *   6. the throughput of the overfit's steps;
 * then one line: "this device trains this recipe: yes" or "no, because ...".
 * --json prints all of it as one object, the device's driver, the
 * autotuner's refusals and the kernels whose work-groups the device holds
 * below its largest (OpenCL's CL_KERNEL_WORK_GROUP_SIZE) included, for an
 * issue report.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/checks.h"
#include "cli/commands.h"
#include "cli/selftest_algos.h"
#include "cli/selftest_smoke.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/status.h"
#include "ops/conv_algo.h"
#include "ops/conv_autotune.h"
#include "train/precision_auto.h"
#include "train/probe.h"
#include "train/recipe.h"
#include "train/run_plan.h"

/* An algorithm this many times the best on its layer, and at least
 * SLOW_MIN_MS, is reported slow. */
#define SLOW_FACTOR 10.0
#define SLOW_MIN_MS 5.0

typedef struct doctor_options {
    tt_train_options train;
    int json;
    int overfit_steps;
} doctor_options;

static const tt_opt own_options[] = {
    {"json", TT_OPT_FLAG, offsetof(doctor_options, json), NULL,
     "print one JSON object: the device, every check with its verdict, the verdict", 1, 0, NULL},
    {"overfit-steps", TT_OPT_INT, offsetof(doctor_options, overfit_steps), "N",
     "steps of the overfit check, which must halve the loss (default 20)", 2, 10000, NULL},
};
static tt_opt *table; /* train's options, then own_options */
static size_t table_count;

static void help(void)
{
    printf("usage: tiletrain doctor [--backend B] [--device D] [--plan FILE | --data DIR]\n"
           "                        [train's options] [--json] [--overfit-steps N]\n"
           "\n"
           "Says whether the device trains the recipe (train's flags over --plan FILE's\n"
           "args, or the plan train makes of --data DIR, or the defaults), and why not:\n"
           "the smoke kernels and timers; every convolution algorithm on every layer\n"
           "shape of the recipe, each direction, against the reference and double\n"
           "precision on the host; with --precision fp16 or bf16, the gradients against\n"
           "fp32's; an overfit of one micro-batch that must halve the loss in 20 steps\n"
           "(the autotuner times the layers there: an algorithm ten times the best is\n"
           "reported slow); the memory estimate against the measurement; the\n"
           "throughput; the autotuner's refusals; the kernels whose work-groups the\n"
           "device holds below its largest. Ends with one line, and exits 1 when\n"
           "the answer is no. --json is the report to paste into an issue.\n"
           "\n"
           "example:\n"
           "  tiletrain doctor --backend vulkan --device 0\n"
           "  tiletrain doctor --plan runs/quickstart/run/plan.json --json > doctor.json\n"
           "  tiletrain doctor --data runs/quickstart/data\n"
           "\n"
           "options (any of train's describe the recipe: `tiletrain train --help`; these are\n"
           "doctor's own):\n");
    tt_opt_print_help(own_options, sizeof own_options / sizeof own_options[0], stdout);
}

/* The slow algorithms the autotuner timed, as checks (observer context). */
typedef struct slow_watch {
    tt_checks *checks;
    int timed;
} slow_watch;

static void on_tuned(void *ctx, const tt_conv_tune_event *e)
{
    slow_watch *w = ctx;
    if (e->phase != TT_CONV_TUNE_DONE || !e->candidate_ms) return;
    w->timed++;
    for (int i = 0; i < e->count; i++) {
        double ms = e->candidate_ms[i];
        if (!(ms >= SLOW_MIN_MS && ms < 1e299) || !(ms > SLOW_FACTOR * e->ms) || e->ms <= 0)
            continue;
        tt_check c = {.slow = 1};
        snprintf(c.what, sizeof c.what, "%s %s", e->key, tt_conv_algo_name(e->candidates[i]));
        snprintf(c.note, sizeof c.note, "%.0f times %s (%.3g ms against %.3g)",
                 ms / e->ms, tt_conv_algo_name(e->algo), ms, e->ms);
        tt_checks_add(w->checks, &c);
    }
}

/* The autotuner's refusals on the device, as JSON objects in `ctx` (an
 * array) and, when `out` is set, lines. */
typedef struct refusals {
    cJSON *list;
    FILE *out;
} refusals;

static void on_refusal(void *ctx, const char *key, tt_conv_algo algo, const tt_conv_verdict *v)
{
    refusals *r = ctx;
    const char *reference = v->reference == algo ? "the host's double"
                                                 : tt_conv_algo_name(v->reference);
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "key", key);
        cJSON_AddStringToObject(o, "algo", tt_conv_algo_name(algo));
        cJSON_AddNumberToObject(o, "error", v->error < 1e30 ? v->error : 1e30);
        cJSON_AddNumberToObject(o, "bound", v->bound);
        cJSON_AddStringToObject(o, "reference", reference);
        cJSON_AddItemToArray(r->list, o);
    }
    if (r->out)
        fprintf(r->out, "  refused: %s: %s, %.2g off %s (bound %.2g)\n", key,
                tt_conv_algo_name(algo), v->error, reference, v->bound);
}

/* Whether the option `name` was given (given[] by row of the table). */
/* The kernels the checks built whose work-groups the device holds below
 * its largest (their registers, or the test knob), as JSON objects in
 * `list`; the least of them in `least`. */
typedef struct held_lower {
    cJSON *list;
    size_t device, least;
    char least_kernel[160];
} held_lower;

static void on_kernel_limit(void *ctx, const char *program, const char *kernel, size_t most)
{
    held_lower *h = ctx;
    if (most >= h->device) return;
    char name[160];
    snprintf(name, sizeof name, "%s/%s", program, kernel);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kernel", name);
    cJSON_AddNumberToObject(o, "most", (double)most);
    cJSON_AddItemToArray(h->list, o);
    if (!h->least || most < h->least) {
        h->least = most;
        snprintf(h->least_kernel, sizeof h->least_kernel, "%s", name);
    }
}

static int was_given(const unsigned char *given, const char *name)
{
    for (size_t i = 0; i < table_count; i++)
        if (strcmp(table[i].name, name) == 0) return given[i];
    return 0;
}

/* The recipe: the flags over what --plan FILE's args, or with --data the
 * plan train would make of that data set (as train, unless --plan off is
 * given), choose; else over the defaults. */
static tt_status recipe_of(doctor_options *o, const unsigned char *given, tt_model_spec *model)
{
    tt_train_options *t = &o->train;
    int planned = strcmp(t->plan, "auto") == 0 || !was_given(given, "plan");
    if (planned && t->data[0]) {
        tt_run_plan *plan = tt_calloc(1, sizeof *plan);
        if (!plan) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
        tt_status status = tt_run_plan_for(t, given, 0, plan);
        free(plan);
        TT_TRY(tt_error_prefix(status, "planning the recipe for %s", t->data));
    } else if (!planned && strcmp(t->plan, "off") != 0) {
        TT_TRY(tt_error_prefix(tt_run_plan_apply_file(t->plan, t, given), "--plan"));
    }
    if (t->micro_batch == 0)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--micro-batch auto is fitted when a run "
                                                     "starts: give doctor a number");
    TT_TRY(tt_recipe_model(t, 0, model));
    if (model->precision == TT_PRECISION_AUTO)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "--precision auto is chosen by timing when "
                                                     "a run starts: give fp32, fp16 or bf16");
    return NULL;
}

/* 3: the chosen storage's gradients against fp32's. */
static tt_status check_storage(tt_backend *be, const tt_step_config *engine, tt_checks *checks)
{
    if (engine->model.precision == TT_PRECISION_FP32) return NULL;
    double error = 0;
    TT_TRY(tt_precision_parity(be, engine, engine->model.precision, &error));
    tt_check c = {.error = error, .bound = TT_PRECISION_PARITY,
                  .failed = !(error <= TT_PRECISION_PARITY)};
    snprintf(c.what, sizeof c.what, "%s storage: gradients against fp32's",
             tt_precision_name(engine->model.precision));
    snprintf(c.note, sizeof c.note, "relative L2 of one micro-batch's gradients");
    tt_checks_add(checks, &c);
    return NULL;
}

/* 4 and 6: the overfit, and its steps' throughput. */
static tt_status check_overfit(tt_backend *be, const tt_step_config *engine, int steps,
                               tt_checks *checks, double *images_per_s)
{
    tt_overfit_result r;
    double t0 = tt_seconds();
    TT_TRY(tt_probe_overfit(be, engine, steps, &r));
    tt_check c = {.seconds = tt_seconds() - t0, .failed = !(r.last_loss <= 0.5 * r.first_loss)};
    snprintf(c.what, sizeof c.what, "overfit of one micro-batch, %d steps", r.steps);
    snprintf(c.note, sizeof c.note, "loss %.4g -> %.4g (must halve)", r.first_loss, r.last_loss);
    tt_checks_add(checks, &c);
    *images_per_s = r.seconds > 0 ? r.images / r.seconds : 0;
    return NULL;
}

/* 5: the estimate on the dry backend against the measurement on `be`. */
static tt_status check_memory(tt_backend *be, const tt_step_config *engine, int accum,
                              tt_checks *checks, tt_memstats *estimate, tt_memstats *measured)
{
    tt_backend *dry = NULL;
    TT_TRY(tt_backend_create(&(tt_backend_request){.kind = TT_BACKEND_DRY, .like = &be->device,
                                                   .stands_for = be->kernels_of},
                             &dry));
    tt_status status = tt_probe_memory(dry, engine, accum, estimate);
    tt_backend_destroy(dry);
    TT_TRY(status);
    TT_TRY(tt_probe_memory(be, engine, accum, measured));
    char a[32], b[32];
    tt_check c = {.failed = measured->peak_total > estimate->peak_total};
    snprintf(c.what, sizeof c.what, "memory: mem's estimate against the device");
    snprintf(c.note, sizeof c.note, "estimate %s, measured %s",
             tt_format_bytes(estimate->peak_total, a, sizeof a),
             tt_format_bytes(measured->peak_total, b, sizeof b));
    tt_checks_add(checks, &c);
    return NULL;
}

/* The first wrong check, as the verdict's reason. */
static void verdict(const tt_checks *checks, char *why, size_t size)
{
    for (int i = 0; i < checks->count; i++) {
        const tt_check *k = &checks->items[i];
        if (!k->failed) continue;
        if (k->bound > 0)
            snprintf(why, size, "%s is wrong (error %.2e, bound %.1e%s%s)", k->what, k->error,
                     k->bound, k->note[0] ? "; " : "", k->note);
        else
            snprintf(why, size, "%s failed (%s)", k->what, k->note);
        return;
    }
    snprintf(why, size, "%d checks right", checks->count);
}

static tt_status run(doctor_options *o, const unsigned char *given, int *yes)
{
    tt_model_spec model;
    TT_TRY(recipe_of(o, given, &model));
    const tt_train_options *t = &o->train;
    tt_backend_request request;
    TT_TRY(tt_recipe_backend(t, &request));
    tt_backend *be = NULL;
    tt_status no_timers = NULL;
    TT_TRY(tt_selftest_open(request, &be, &no_timers));
    tt_checks checks = {.out = o->json ? NULL : stdout};
    slow_watch watch = {&checks, 0};
    tt_memstats estimate = {0}, measured = {0};
    double images_per_s = 0;
    tt_conv_autotune_stats before = tt_conv_autotune_stats_get();
    tt_status status = NULL;
    tt_mask_kind kind = t->format == TT_DATASET_KAGGLE_RLE ? TT_MASK_MULTI_LABEL
                                                           : TT_MASK_CLASS_INDEX;
    int planes = kind == TT_MASK_MULTI_LABEL ? model.classes : 1;
    tt_step_config engine = tt_recipe_step(t, &model, kind, planes);
    if (!o->json) {
        char described[96];
        tt_model_spec_describe(&model, described, sizeof described);
        printf("doctor on %s device [%d] %s (%s, driver %s)\n", be->ops->name, be->device.index,
               be->device.name, be->device.platform, be->device.driver_version);
        printf("recipe: %s, tile %dx%d, micro-batch %d\n", described, t->tile[0], t->tile[1],
               t->micro_batch);
    }
    tt_backend_phase(be, "doctor");
    TT_CHECK(tt_selftest_smoke(be, no_timers, &checks));
    TT_CHECK(tt_selftest_algos(be, t, &checks));
    TT_CHECK(check_storage(be, &engine, &checks));
    tt_conv_autotune_observe(on_tuned, &watch);
    status = check_overfit(be, &engine, o->overfit_steps, &checks, &images_per_s);
    tt_conv_autotune_observe(NULL, NULL);
    TT_CHECK(status);
    TT_CHECK(check_memory(be, &engine, t->accum, &checks, &estimate, &measured));
    tt_conv_autotune_stats after = tt_conv_autotune_stats_get();
    uint64_t refused = after.refused - before.refused;
    refusals known = {cJSON_CreateArray(), o->json ? NULL : stdout};
    held_lower held = {cJSON_CreateArray(), be->device.max_work_group_size, 0, ""};
    if (held.list) tt_backend_each_kernel_limit(be, on_kernel_limit, &held);
    char why[400], path[1024] = "";
    verdict(&checks, why, sizeof why);
    *yes = checks.failures == 0 && !checks.oom;
    tt_conv_find_db_path(be, path, sizeof path);
    if (o->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON *dj = tt_device_info_json(&be->device);
        cJSON_AddStringToObject(dj, "backend", be->ops->name);
        cJSON_AddItemToObject(root, "device", dj);
        cJSON_AddItemToObject(root, "config", tt_recipe_json(t, &model));
        cJSON_AddItemToObject(root, "checks", tt_checks_json(&checks));
        cJSON_AddNumberToObject(root, "images_per_s", images_per_s);
        cJSON_AddNumberToObject(root, "memory_estimate_bytes", (double)estimate.peak_total);
        cJSON_AddNumberToObject(root, "memory_measured_bytes", (double)measured.peak_total);
        cJSON *tj = cJSON_AddObjectToObject(root, "autotuner");
        cJSON_AddNumberToObject(tj, "layers_timed", watch.timed);
        cJSON_AddNumberToObject(tj, "refused", (double)refused);
        cJSON_AddStringToObject(tj, "find_db", path);
        if (known.list) tt_conv_autotune_each_refusal(be, on_refusal, &known);
        cJSON_AddItemToObject(tj, "refusals", known.list); /* every one the find-db keeps */
        known.list = NULL;
        cJSON *wj = cJSON_AddObjectToObject(root, "work_groups");
        cJSON_AddNumberToObject(wj, "device", (double)held.device);
        cJSON_AddItemToObject(wj, "held_lower", held.list); /* the checks' kernels */
        held.list = NULL;
        cJSON_AddBoolToObject(root, "trains", *yes);
        cJSON_AddStringToObject(root, "because", why);
        char *text = cJSON_Print(root);
        printf("%s\n", text ? text : "null");
        cJSON_free(text);
        cJSON_Delete(root);
    } else {
        printf("throughput: %.3g images/s over the overfit's steps (micro-batch %d)\n",
               images_per_s, t->micro_batch);
        printf("autotuner: %d layer directions timed, %llu algorithms refused", watch.timed,
               (unsigned long long)refused);
        printf("; kept in %s:\n", path);
        if (known.list) tt_conv_autotune_each_refusal(be, on_refusal, &known);
        if (known.list && cJSON_GetArraySize(known.list) == 0) printf("  no refusal\n");
        int lower = held.list ? cJSON_GetArraySize(held.list) : 0;
        printf("work-groups: up to %zu work-items on this device; ", held.device);
        if (lower)
            printf("%d of the kernels run held lower, the least to %zu (%s)\n", lower,
                   held.least, held.least_kernel);
        else
            printf("no kernel run is held lower\n");
        printf("this device trains this recipe: %s, %s\n", *yes ? "yes" : "no", why);
    }
    cJSON_Delete(known.list);
    cJSON_Delete(held.list);
cleanup:
    tt_conv_autotune_observe(NULL, NULL);
    tt_status_free(no_timers);
    tt_checks_free(&checks);
    tt_backend_destroy(be);
    return status;
}

int tt_cmd_doctor(int argc, char **argv)
{
    if (!table)
        table = tt_opt_table_concat(tt_train_option_table, tt_train_option_count,
                                    offsetof(doctor_options, train), own_options,
                                    sizeof own_options / sizeof own_options[0], &table_count);
    if (!table) return tt_cli_fail(tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"));
    doctor_options o = {.overfit_steps = 20};
    tt_train_options_default(&o.train);
    unsigned char *given = tt_calloc(table_count, 1); /* by row of the table: train's first */
    if (!given) return tt_cli_fail(tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"));
    int rc = tt_cli_parse_given("doctor", table, table_count, &o, given, argc, argv, help);
    int yes = 0;
    tt_status status = rc >= 0 ? NULL : run(&o, given, &yes);
    free(given);
    if (rc >= 0) return rc;
    if (status) return tt_cli_fail(status);
    return yes ? 0 : 1;
}
